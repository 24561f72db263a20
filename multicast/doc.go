// Package multicast owns multicast routing for large switched fabrics
// (seed 004): the MINHOP-MC, SSSP-MC and FULB-MC engines with root and link
// rotation, tree verification and per-link EFI, the group workloads of the
// seed's experiments with their process-to-node mappings, a cycle-level
// replay of multicast messages over the trees (delivery latency), and the
// HPC join/leave protocol state machine with its lossy-network simulation.
package multicast
