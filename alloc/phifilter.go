package alloc

import "github.com/icn-hpc/icn/internal/par"

// A decision that does not report its counts (Fast) and has a free box of
// m nodes skips the placements that cannot be among the sets tied on
// criteria 1 and 2, before anything is asked about them. The argument is
// the bounded path's (bound.go), used here without changing the choice:
//
//   - a free box of volume m is a block, reachable, without transit
//     nodes: the fewest transit nodes is 0, and the largest φ after
//     allocation is at least φ*, the largest φ such a box leaves;
//   - a set without transit nodes is the first m available nodes of a
//     rectangle of some size S, so it holds the available nodes of the
//     box A_S of S's first whole layers at the same start
//     (leadingBox); a free rectangle the set misses misses A_S too, so φ
//     after the set is at most φ after A_S;
//   - where that bound is below φ*, the placement's set has more transit
//     nodes than the best or a smaller φ: it is not among the tied sets
//     that the tables and the enumeration order rank, so leaving it out
//     changes neither which set is chosen nor its figures.
//
// Criterion 1's bound is set to 0 at once (the free box is a candidate),
// so every placement examined asks only whether its active nodes are
// reachable alone. Found and Distinct then count only the placements
// examined, as Fast allows. TestPhiFilterSameChoice compares the choices
// with and without the filter on random states; the digests of the
// replays (sched) are unchanged. On the 3 170-job stream of light jobs on
// torus:4x6x10 it leaves out 54 % of the placements and a third of the
// CPU.

// phiFilter says which placements a decision skips: per rectangle size,
// its leading box, and per leading box the starts (by node id) where the
// box can reach φ*.
type phiFilter struct {
	sizeBox   []int      // per size index: its leading box
	reach     []bool     // per leading box: it can reach φ* somewhere
	promising [][]uint64 // per leading box: the starts where it can
	// bl are the levels down to φ*'s; exact: they are few enough
	// (maxStairRects) for each placement's exact φ (examineByPhi).
	bl    boundLevels
	exact bool
}

// phiFilterApplies reports whether the decision may skip placements by
// φ: a Fast improved decision that chooses a set, on a torus without
// failed links, not cut at fixed points by a test.
func (d *decision) phiFilterApplies() bool {
	t := &d.sel.tune
	return d.req.Fast && d.req.Algo == Improved && !d.req.CountOnly && !d.req.Exists && !d.sel.anyFault &&
		!t.noPhiFilter && t.cutAfter == 0 && t.cutAfterAsks == 0 && !d.levelsLate
}

// newPhiFilter returns the decision's filter, or nil when it has none (no
// free box of m nodes, no free rectangle beside any, or the budget ended
// while the free rectangles were listed).
func (d *decision) newPhiFilter() *phiFilter {
	if !d.phiFilterApplies() {
		return nil
	}
	bl, ok := d.phiStar()
	if !ok {
		return nil
	}
	sel := d.sel
	d.lowerBest(0)
	f := &phiFilter{}
	var lead [][]int
	lead, f.sizeBox = d.leadingBoxes()
	bl.countShapes()
	f.reach = make([]bool, len(lead))
	for j, a := range lead {
		f.reach[j] = bl.canReach(a, sel.dims)
	}
	f.bl = bl
	f.exact = bl.rectCount() <= maxStairRects && !d.sel.tune.noExactPhi
	f.promising = make([][]uint64, len(lead))
	ccs, bufs := d.coverCounters()
	par.For(len(lead), sel.Workers, func(w, j int) {
		if f.reach[j] {
			f.promising[j] = d.promisingMask(lead[j], &bl, ccs[w], bufs[w])
		}
	})
	return f
}

// phiStar lists today's free rectangles from the largest volume a set of
// m nodes can leave free down to the level of φ*, the largest φ a free
// box of volume m leaves (as the bounded path does); ok is false when
// there is no such box, no free rectangle beside any, or the budget ended.
func (d *decision) phiStar() (bl boundLevels, ok bool) {
	sel := d.sel
	lc := d.levelsNow()
	// Like the bounded path's, by the bound phase's end or not at all:
	// the enumeration then goes on without the filter.
	defer d.boundStops(lc)()
	var boxes [][]int
	for _, size := range d.sizes {
		if vol(size) == d.m && lc.fit.fits(size) {
			boxes = append(boxes, size)
		}
	}
	if lc.fit.stopped {
		d.dropLateLevels()
		return bl, false
	}
	if len(boxes) == 0 {
		return bl, false
	}
	ccs, bufs := d.coverCounters()
	left := lc.free - d.m
	for i, v := range lc.vols {
		if v > left {
			continue
		}
		rs, done := lc.levelDone(i)
		if !done {
			d.dropLateLevels()
			return bl, false
		}
		if len(rs) == 0 {
			continue
		}
		bl.vols = append(bl.vols, v)
		bl.rects = append(bl.rects, rs)
		best := make([]int, len(boxes)) // most rectangles of the level a free box misses
		par.For(len(boxes), sel.Workers, func(w, k int) {
			b := boxes[k]
			ccs[w].count(b, rs, bufs[w])
			placements(sel.dims, sel.wrap, b, func(st []int) bool {
				if kept := len(rs) - int(bufs[w][enc(st, sel.dims)]); kept > best[k] && sel.grid.unavailable(st, b) == 0 {
					best[k] = kept
				}
				return true
			})
		})
		for _, k := range best {
			bl.starCount = max(bl.starCount, k)
		}
		if bl.starCount > 0 {
			bl.starLevel = len(bl.vols) - 1
			return bl, true
		}
	}
	return bl, false // every set leaves φ 0: nothing to skip by
}

// coverCounters gives each worker a cover counter and a buffer of one
// count per node.
func (d *decision) coverCounters() ([]*coverCounter, [][]int32) {
	ccs := make([]*coverCounter, len(d.work))
	bufs := make([][]int32, len(d.work))
	for w := range ccs {
		ccs[w] = newCoverCounter(d.sel.dims, d.sel.wrap)
		bufs[w] = make([]int32, d.s.N())
	}
	return ccs, bufs
}

// skip reports whether the placement of size index si at start st cannot
// be among the tied sets.
func (f *phiFilter) skip(si int, st, dims []int) bool {
	j := f.sizeBox[si]
	if !f.reach[j] {
		return true
	}
	v := enc(st, dims)
	return f.promising[j][v/64]>>(v%64)&1 == 0
}
