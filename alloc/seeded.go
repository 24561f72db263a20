package alloc

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/bitset"
	"github.com/icn-hpc/icn/internal/par"
)

// A filling machine often has no free box of m nodes, and its best sets
// fill a rectangle around busy nodes exactly. So the bounded path also
// looks for seeds: sets without transit nodes whose φ after allocation
// is known, found where φ can be largest. Every candidate without
// transit nodes holds the available nodes of its size's leading box A_S
// at its start, so φ after it is at most what A_S leaves there
// (bound.go). For each of the top levels of free rectangles (the largest
// volumes a set of m nodes can leave, at most maxSeedLevels of them),
// the leading boxes that could miss any of the level's rectangles are
// scanned seedChunk at a time in a fixed order: per leading box, its
// sizes in volume order and their starts in enumeration order, where
// the box misses one, until a rectangle whose available nodes are
// exactly m is reachable alone (the first m nodes of a larger set are
// rarely reachable alone, and asking costs). When the level has such
// sets, those of the leading boxes that could miss the most of its
// rectangles by their shapes alone are looked for the same way, and
// they are the seeds if there are any (a level without seeds is scanned
// once). The sets of the first chunk that has any are the seeds; φ
// after each is computed exactly. Starts whose rectangle surely holds
// other than m available nodes are passed over (poorStarts). The
// largest becomes φ* when it beats the free boxes' (criterion 1 is then
// settled at 0), and the bounded path examines only what can beat it.
// Which seeds are found depends on the state alone, not on the number of
// workers or on timing; a search the bound phase's end cut is dropped.

// maxSeedLevels bounds the levels of free rectangles searched for a seed.
const maxSeedLevels = 8

// seedChunk is how many leading boxes seedByBound scans at a time.
const seedChunk = 8

// seed is a set without transit nodes found by seedByBound: its size
// index, its start (node id) and φ after it.
type seed struct {
	si, at int
	f      Fragmentation
}

// undoSeedSearch undoes what a seed search that found nothing left in
// the decision: criterion 1's bound and the candidates. The block
// reductions the workers cached were made under the bound 0 and are
// dropped too.
func (d *decision) undoSeedSearch() {
	d.bestT.Store(int64(d.T))
	d.resetArenas()
	for i := range d.work {
		d.work[i].blocks = nil
	}
}

// resetArenas drops the candidates recorded so far.
func (d *decision) resetArenas() {
	for i := range d.sel.arenas {
		d.sel.arenas[i].reset()
	}
}

// levelsTo lists the levels of free rectangles from the largest a set
// can leave (left free nodes) down to star's, which becomes φ*; ok is
// false when the budget ended while they were listed.
func (d *decision) levelsTo(lc *levelCache, left int, star Fragmentation) (bl boundLevels, ok bool) {
	bl.starLevel = -1
	for i, v := range lc.vols {
		if v > left {
			continue
		}
		rs, done := lc.levelDone(i)
		if !done {
			return bl, false
		}
		if len(rs) == 0 {
			continue
		}
		bl.vols = append(bl.vols, v)
		bl.rects = append(bl.rects, rs)
		if v == star.LargestNodes {
			bl.starLevel, bl.starCount = len(bl.vols)-1, star.LargestCount
			return bl, true
		}
	}
	return bl, false
}

// seedByBound finds the seeds (see above), the largest φ first; none
// when there is no free rectangle a set could leave, no seed in the
// levels tried, or the bound phase ended.
func (d *decision) seedByBound(lc *levelCache, left int, ccs []*coverCounter, bufs [][]int32) []seed {
	sel := d.sel
	lead, sizeBox := d.leadingBoxes()
	bySize := make([][]int, len(lead)) // per leading box, its sizes in volume order
	for _, si := range d.sizeOrder() {
		bySize[sizeBox[si]] = append(bySize[sizeBox[si]], si)
	}
	ts := make([]takenSet, len(d.work))
	seen := newSeedMemo(len(d.sizes), d.s.N())
	if sel.tune.noSeedMemo {
		seen.left.Store(0)
	}
	levels := 0
	for i, v := range lc.vols {
		if levels == maxSeedLevels {
			break
		}
		if v > left {
			continue
		}
		rs, done := lc.levelDone(i)
		if !done {
			return nil
		}
		if len(rs) == 0 {
			continue
		}
		levels++
		// The most rectangles of the level a leading box could miss, by
		// the shapes alone; then any at all.
		lv := &boundLevels{rects: [][]Rect{rs}}
		lv.countShapes()
		can := func(a []int, K int) bool {
			lv.starCount = K
			return lv.canReach(a, sel.dims)
		}
		hi := 0
		for _, a := range lead {
			for hi < len(rs) && can(a, hi+1) {
				hi++
			}
		}
		if hi == 0 {
			continue
		}
		scan := func(K int) []seed {
			var js []int
			for j, a := range lead {
				if can(a, K) {
					js = append(js, j)
				}
			}
			return d.seedChunks(lead, bySize, js, rs, len(rs)-K, lc, ccs, bufs, ts, seen)
		}
		// The seeds are those missing hi rectangles if there are any,
		// else those missing one. Every seed of the first kind is one of
		// the second, so the level is looked at for one missed first:
		// a level without seeds is then scanned once, not twice.
		out := scan(1)
		if d.clock.bound.Load() {
			return nil
		}
		if len(out) == 0 {
			continue
		}
		if hi > 1 {
			if most := scan(hi); len(most) > 0 || d.clock.bound.Load() {
				return most
			}
		}
		return out
	}
	return nil
}

// seedChunks scans the leading boxes js, seedChunk at a time in order
// (so that the seeds do not depend on the number of workers), for their
// first set (firstSeed) where the box meets at most maxMet of the
// level's rectangles rs; it returns those of the first chunk that has
// any, the largest φ first.
func (d *decision) seedChunks(lead [][]int, bySize [][]int, js []int, rs []Rect, maxMet int, lc *levelCache, ccs []*coverCounter, bufs [][]int32, ts []takenSet, seen *seedMemo) []seed {
	found := make([]seed, seedChunk)
	for j0 := 0; j0 < len(js); j0 += seedChunk {
		chunk := min(seedChunk, len(js)-j0)
		par.For(chunk, d.sel.Workers, func(w, k int) {
			found[k].si = -1
			if d.clock.bound.Load() {
				return
			}
			j := js[j0+k]
			few := make([]uint64, (len(bufs[w])+63)/64) // the starts where the box meets at most maxMet
			if len(rs) <= maxMaskRects {
				lv := boundLevels{rects: [][]Rect{rs}, starCount: len(rs) - maxMet}
				lv.rectMask(lead[j], d.sel.dims, d.sel.wrap, few)
			} else {
				ccs[w].count(lead[j], rs, bufs[w])
				for v, met := range bufs[w] {
					if int(met) <= maxMet {
						few[v/64] |= 1 << (v % 64)
					}
				}
			}
			found[k] = d.firstSeed(w, bySize[j], few, lc, &ts[w], seen)
		})
		if d.clock.bound.Load() {
			return nil
		}
		var out []seed
		for _, sd := range found[:chunk] {
			if sd.si >= 0 {
				out = append(out, sd)
			}
		}
		if len(out) > 0 {
			slices.SortStableFunc(out, func(a, b seed) int { return cmp.Compare(b.f.Phi, a.f.Phi) })
			return out
		}
	}
	return nil
}

// firstSeed scans the placements of the sizes (one leading box's, in
// volume order) at the starts set in few (where the leading box meets
// few enough of a level's rectangles) and returns the first whose
// available nodes are exactly m and reachable alone, with φ after them;
// si −1 when none is. Placements an earlier scan of the decision found
// not to be seeds (seen) are skipped: whether a placement is one depends
// on the state alone, so the first seed in order is the same.
func (d *decision) firstSeed(w int, sizes []int, few []uint64, lc *levelCache, ts *takenSet, seen *seedMemo) seed {
	sel := d.sel
	out := seed{si: -1}
	var scan []uint64
	for _, si := range sizes {
		size := d.sizes[si]
		mask, done := few, seen.of(si)
		if done != nil {
			if scan == nil {
				scan = make([]uint64, len(few))
			}
			for i, x := range few {
				scan[i] = x &^ done[i]
			}
			mask = scan
			if c := sel.tune.seedSkips; c != nil {
				c.Add(int64(bitset.Set(few).Count() - bitset.Set(scan).Count()))
			}
		}
		notSeed := func(v int) { // a start examined in full
			if done != nil {
				done.Add(v)
			}
		}
		volume := vol(size)
		var poor *poorStarts
		if !sel.tune.plainScan {
			poor = newPoorStarts(sel.grid, size, d.m, true)
			poor.skipped = done // none of them is a seed
		}
		startsIn(mask, sel.dims, sel.wrap, size, sel.dims, poor, func(v int, st []int) bool {
			if d.clock.bound.Load() {
				return false
			}
			// Only rectangles whose available nodes are exactly m: the
			// first m nodes of a larger set are rarely reachable alone.
			holes := sel.grid.unavailable(st, size)
			if poor != nil {
				poor.counted(v, st, volume-holes)
			}
			if volume-holes != d.m {
				notSeed(v)
				return true
			}
			p, ok := d.placementSet(w, size, st, holes)
			if !ok {
				notSeed(v)
				return true
			}
			if ok, err := d.alone(w, p, p.blockSize != nil); err != nil || !ok {
				if err == nil {
					notSeed(v)
				}
				return err == nil
			}
			var keep []int
			if p.nTransit > 0 {
				keep = []int{}
			}
			c := d.newCandidate(w, p, keep)
			f, _ := lc.afterAtLeast(c, 0, ts)
			out = seed{si: si, at: v, f: f}
			return false
		})
		if out.si >= 0 || d.clock.bound.Load() {
			break
		}
	}
	return out
}

// seedMemo keeps, per size index, the starts a seed search of the
// decision examined and found not to be seeds (a bit per node id), up to
// maxSeedMemoBytes in all. Each size belongs to one leading box, and one
// worker at a time scans a box's sizes, so a size's bits are written by
// one goroutine at a time.
type seedMemo struct {
	sizes []bitset.Set
	words int
	left  atomic.Int64 // bytes that may still be taken
}

// maxSeedMemoBytes bounds a decision's seedMemo: past it, sizes met for
// the first time are scanned without one.
const maxSeedMemoBytes = 64 << 20

func newSeedMemo(sizes, n int) *seedMemo {
	m := &seedMemo{sizes: make([]bitset.Set, sizes), words: (n + 63) / 64}
	m.left.Store(maxSeedMemoBytes)
	return m
}

// of returns size si's bits, taking them when there is room; nil without.
func (m *seedMemo) of(si int) bitset.Set {
	if m.sizes[si] == nil && m.left.Add(-8*int64(m.words)) >= 0 {
		m.sizes[si] = make(bitset.Set, m.words)
	}
	return m.sizes[si]
}
