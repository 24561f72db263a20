package sched

import "math"

// TransitLimit is the transit allowance of a job of m nodes given as a
// fraction of its nodes: ⌈frac·m⌉ (a product that is an integer but for
// floating-point error, such as 0.6·5, counts as that integer), and 0
// for a fraction of 0 (or one that is negative or not a number). Every
// entry point rounds it this way: icn sched simulate and icn sched
// experiment --transit-frac (NewMachine, ExperimentOptions.TransitFrac)
// and icn slurm agent --transit (slurmagent.Config.Transit).
func TransitLimit(frac float64, m int) int {
	if !(frac > 0) || m <= 0 {
		return 0
	}
	return int(math.Ceil(frac*float64(m) - 1e-9))
}
