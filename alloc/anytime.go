package alloc

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/par"
)

// A decision with a budget works in the anytime order: rectangle sizes
// are examined in groups of ascending volume (a rectangle of volume v
// holds at most v−m transit nodes before reduction, so the sets with the
// fewest transit nodes come first), and after each group the decision
// stops when no placement left can beat the best set on criteria 1 and 2:
// a set without transit nodes (criterion 1 can do no better) whose φ
// after allocation reaches phiTop, the largest φ any set of m or more
// nodes can leave (criterion 2 can do no better). Sets that would only
// tie are then not looked for: criteria 3 and 4 rank the tied sets found
// so far (Result.Settled, Complete = CompletePhi). Groups end at whole
// volumes and hold at least anytimeGroup sizes, whatever the number of
// workers, so where the decision stops, and so its answer, does not
// depend on timing or cores.

// anytimeAfter is how many placements a decision examines before the
// stopping rule is first checked: decisions that examine fewer take
// milliseconds and are made in full, as without a budget, so that
// replays on machines of up to a few thousand nodes decide exactly as
// exhaustive ones (ties broken among fewer sets change schedules). It
// counts placements, not time, so where a decision stops does not
// depend on timing.
const anytimeAfter = 1 << 19

// settleAfter is anytimeAfter unless a test set its own.
func (sel *Selector) settleAfter() int {
	if sel.tune.checkSettledAfter > 0 {
		return sel.tune.checkSettledAfter
	}
	return anytimeAfter
}

// anytimeGroup is the fewest rectangle sizes examined between two
// checks of the stopping rule (fewer sizes per group leave cores idle at
// the group's end).
const anytimeGroup = 4

// anytime reports whether the decision may stop once criteria 1 and 2
// are settled: a budgeted improved-algorithm decision that chooses a set
// (without a budget every placement is examined and ranked, as the
// seed's experiments need, and counting requests need every placement).
func (d *decision) anytime() bool {
	return d.req.Budget > 0 && d.req.Algo == Improved && !d.req.CountOnly && !d.req.Exists
}

// volumeGroups splits the sizes, in ascending order of volume, into the
// groups the anytime order examines between two checks.
func volumeGroups(sizes [][]int, order []int) [][]int {
	var groups [][]int
	for lo := 0; lo < len(order); {
		hi := lo
		for hi < len(order) && (hi-lo < anytimeGroup || vol(sizes[order[hi]]) == vol(sizes[order[hi-1]])) {
			hi++
		}
		groups = append(groups, order[lo:hi])
		lo = hi
	}
	return groups
}

// sizeOrder lists the size indices by ascending volume (stable).
func (d *decision) sizeOrder() []int {
	order := make([]int, len(d.sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(vol(d.sizes[a]), vol(d.sizes[b])) })
	return order
}

// levelsNow returns the decision's free-rectangle levels (computed on
// demand, shared by the stopping rule and the φ ranking).
func (d *decision) levelsNow() *levelCache {
	if d.levels == nil {
		d.levels = newLevelCache(d.sel, d.s)
		d.sel.inheritNoFit(d.s, d.levels.fit)
		if d.clock != nil {
			d.levels.stop = d.clock.hard.Load
			d.levels.fit.stop = d.clock.hard.Load
		}
	}
	return d.levels
}

// maxLevelsForTop bounds the levels with free rectangles phiTop lists;
// when more would be needed the bound is not known and the decision does
// not stop early.
const maxLevelsForTop = 8

// phiTop returns the largest φ after allocation that a set of at least m
// nodes can leave, or ok false when it would take more than
// maxLevelsForTop levels to know. φ = N·v + k for the largest volume v
// ≤ free − m with a free rectangle the set misses and k such
// rectangles, so a level gives at most N·v + (its rectangles today); the
// levels below are bounded without computing them by levelCache.most.
func (d *decision) phiTop() (int64, bool) {
	if d.topKnown {
		return d.top, d.topOK
	}
	d.topKnown = true
	lc := d.levelsNow()
	n := int64(d.s.N())
	left := lc.free - d.m
	top, first, computed := int64(-1), true, 0
	for i, v := range lc.vols {
		if v > left {
			continue
		}
		if !first && n*int64(lc.most[i]) <= top {
			break
		}
		rs, done := lc.levelDone(i)
		if !done {
			return 0, false
		}
		if len(rs) == 0 {
			continue // cheap: the fit lattice settles most sizes
		}
		if computed++; computed > maxLevelsForTop {
			return 0, false
		}
		top = max(top, n*int64(v)+int64(len(rs)))
		first = false
	}
	if top < 0 {
		return 0, false // no free rectangle is left beside any set
	}
	d.top, d.topOK = top, true
	return top, true
}

// settledBy reports whether a candidate of the sizes examined since the
// last check (their indices) settles criteria 1 and 2: it has no transit
// node and leaves φ = phiTop.
func (d *decision) settledBy(results []sizeResult, group []int) bool {
	if d.bestT.Load() != 0 {
		return false
	}
	var cands []*candidate
	for _, si := range group {
		for _, c := range results[si].cands {
			if c.nTransit == 0 {
				cands = append(cands, c)
			}
		}
	}
	if len(cands) == 0 {
		return false
	}
	top, ok := d.phiTop()
	if !ok {
		return false
	}
	lc := d.levelsNow()
	if len(d.sel.taken) < len(d.work) {
		d.sel.taken = make([]takenSet, len(d.work))
	}
	var hit atomic.Bool
	par.For(len(cands), d.sel.Workers, func(w, i int) {
		if hit.Load() {
			return
		}
		if _, ok := lc.afterAtLeast(cands[i], top, &d.sel.taken[w]); ok {
			hit.Store(true)
		}
	})
	return hit.Load()
}

// inheritNoFit marks in f the sizes that did not fit on an earlier state
// of which s is a subset (no node available now that was not then), and
// gives f the free placements found on earlier states (a witness is
// checked before it is believed).
func (sel *Selector) inheritNoFit(s *State, f *fitLattice) {
	nf := &sel.noFit
	if len(nf.witness) == len(f.witness) {
		copy(f.witness, nf.witness)
	}
	if len(nf.avail) != s.N() || len(nf.state) != len(f.state) {
		return
	}
	for v, was := range nf.avail {
		if !was && s.Available(v) {
			return
		}
	}
	for i, st := range nf.state {
		if st == 2 {
			f.state[i] = 2
		}
	}
}

// keepNoFit records the sizes f found without a free placement on s.
func (sel *Selector) keepNoFit(s *State, f *fitLattice) {
	nf := &sel.noFit
	if len(nf.avail) != s.N() {
		nf.avail = make([]bool, s.N())
	}
	for v := range nf.avail {
		nf.avail[v] = s.Available(v)
	}
	if len(nf.state) != len(f.state) {
		nf.state = make([]int8, len(f.state))
	}
	for i, st := range f.state {
		nf.state[i] = 0
		if st == 2 {
			nf.state[i] = 2
		}
	}
	nf.witness = append(nf.witness[:0], f.witness...)
}
