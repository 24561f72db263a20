// Package multicast owns multicast routing for large switched fabrics
// (seed 004): the MINHOP-MC, SSSP-MC and FULB-MC engines with root and link
// rotation, tree verification and per-link EFI, the group workloads of the
// seed's experiments, and the HPC join/leave protocol state machine.
package multicast
