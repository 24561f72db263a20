package sched

import (
	"math"
	"sort"
)

// RunningJob is a running job as a reservation sees it: its id and
// nodes on the machine, and the time it ends by (its start plus its
// requested time; +Inf without a time limit).
type RunningJob struct {
	ID    int
	Nodes []int
	End   float64
}

// Reserve returns the reservation of job head on machine m, whose
// occupancy includes the running jobs' nodes: the earliest of now and
// the running jobs' ends at which head has a placement once the jobs
// ending by then have gone (+Inf if it has none even when all have
// gone). It is the time the simulator's EASY and window rules reserve
// (Policy), for callers that keep their own machine: icn slurm agent.
func Reserve(m Machine, head Job, running []RunningJob, now float64) (float64, error) {
	if ok, _, err := placeableNow(m, head); err != nil || ok {
		return now, err
	}
	rels := append([]RunningJob(nil), running...)
	sort.SliceStable(rels, func(a, b int) bool { return rels[a].End < rels[b].End })
	// Placeability only grows as jobs end: bisect over the release
	// order, releasing whole groups of equal ends.
	var cuts []int
	for k := 1; k <= len(rels); k++ {
		if k == len(rels) || rels[k].End != rels[k-1].End {
			cuts = append(cuts, k)
		}
	}
	shadow := math.Inf(1)
	lo, hi := 0, len(cuts)-1
	for lo <= hi {
		mid := (lo + hi) / 2
		c := m.Clone()
		for _, r := range rels[:cuts[mid]] {
			c.Release(r.ID, r.Nodes)
		}
		ok, _, err := placeableNow(c, head)
		if err != nil {
			return 0, err
		}
		if ok {
			shadow, hi = math.Max(now, rels[cuts[mid]-1].End), mid-1
		} else {
			lo = mid + 1
		}
	}
	return shadow, nil
}
