// Package collective owns the communication cost models of seed 002 §3:
// point-to-point and collective operations (broadcast, all-gather,
// reduction, prefix sum, scatter, gather, total exchange, circular shift)
// on rings, square 2D tori and hypercubes under store-and-forward and
// cut-through switching, together with the message-step plans of the same
// algorithms so that they can be run in the simulator.
package collective
