// Package alloc selects node sets for jobs on a torus (seed 001 ch. 4): the
// machine state, maximal free sub-rectangles and the fragmentation score φ,
// and the improved and baseline node-selection algorithms.
package alloc
