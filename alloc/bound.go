package alloc

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/icn-hpc/icn/internal/par"
)

// On a large, partly used torus a budgeted decision bounds φ before it
// examines placements (the bounded path). When some rectangle size of
// volume m has a free placement, the fewest transit nodes is 0, and φ*,
// the largest φ after allocation among those free boxes, is found for
// all their placements at once (coverCount). Every other candidate
// without transit nodes is the first m available nodes, in coordinate
// order, of a rectangle of some size S, so it contains the available
// nodes of the box A_S of S's first whole layers (the first box of
// blockSet.forBoxes; A_S is S when vol(S) = m): a free rectangle the set
// misses misses A_S too. So φ after the set is at most the φ the box A_S
// would leave at the same start, and the placements where that bound
// falls below φ* cannot win on criteria 1–2 and are not examined. The
// others are examined as the enumeration examines them; the decision is
// then Settled (TestBoundedMatchesEnumeration compares it with the
// direct enumeration on random busy states of small tori).

// bounded reports whether the decision may take the bounded path: a
// budgeted improved decision on a torus without failed links that would
// examine more than uniformAfter placements (without a budget every
// placement is examined, as the seed's experiments count them).
func (d *decision) bounded() bool {
	sel := d.sel
	if d.req.Algo != Improved || d.req.CountOnly || d.req.Exists || d.req.Budget <= 0 || sel.anyFault ||
		sel.tune.cutAfter > 0 || sel.tune.cutAfterAsks > 0 || sel.tune.noUniform {
		return false
	}
	return sel.tune.forceBounded || d.manyPlacements()
}

// coverCounter counts, for every start of a box, the rectangles of a
// list that the box placed there meets: an n-dimensional difference array
// (each rectangle adds 1 on the starts that meet it, a product of at most
// two intervals per dimension) summed once.
type coverCounter struct {
	dims, stride []int
	wrap         []bool
	acc          []int32 // (d_i+1) per dimension
	lo, hi       [][2]int
	parts        []int
}

func newCoverCounter(dims []int, wrap []bool) *coverCounter {
	n := len(dims)
	cc := &coverCounter{dims: dims, wrap: wrap, stride: make([]int, n), lo: make([][2]int, n), hi: make([][2]int, n), parts: make([]int, n)}
	size := 1
	for i, d := range dims {
		cc.stride[i] = size
		size *= d + 1
	}
	cc.acc = make([]int32, size)
	return cc
}

// count fills out (len N, by node id of the start) with the number of
// rectangles of rs that a box of size b placed at each start meets.
// Starts that are not placements of b (beyond a whole dimension's 0, or
// past a mesh's border) get meaningless counts.
func (cc *coverCounter) count(b []int, rs []Rect, out []int32) {
	clear(cc.acc)
	n := len(cc.dims)
	for _, r := range rs {
		for i, d := range cc.dims {
			cc.parts[i] = 1
			switch {
			case b[i] == d || r.Size[i] == d:
				cc.lo[i][0], cc.hi[i][0] = 0, d
			case !cc.wrap[i]:
				lo, hi := max(0, r.Start[i]-b[i]+1), min(d-b[i], r.Start[i]+r.Size[i]-1)+1
				if lo >= hi {
					cc.parts[i] = 0
				}
				cc.lo[i][0], cc.hi[i][0] = lo, hi
			default:
				l := r.Size[i] + b[i] - 1
				lo := ((r.Start[i]-b[i]+1)%d + d) % d
				switch {
				case l >= d:
					cc.lo[i][0], cc.hi[i][0] = 0, d
				case lo+l <= d:
					cc.lo[i][0], cc.hi[i][0] = lo, lo+l
				default:
					cc.lo[i][0], cc.hi[i][0] = lo, d
					cc.lo[i][1], cc.hi[i][1] = 0, lo+l-d
					cc.parts[i] = 2
				}
			}
		}
		cc.addProduct(0, 0, 0)
	}
	for i, d := range cc.dims {
		st := cc.stride[i]
		block := st * (d + 1)
		if st == 1 {
			// The first dimension: running sums along contiguous rows.
			for base := 0; base < len(cc.acc); base += block {
				row := cc.acc[base : base+block]
				for k := 1; k < len(row); k++ {
					row[k] += row[k-1]
				}
			}
			continue
		}
		for base := 0; base < len(cc.acc); base += block {
			for off := base + st; off < base+block; off += st {
				dst, src := cc.acc[off:off+st], cc.acc[off-st:off]
				for k := range dst {
					dst[k] += src[k]
				}
			}
		}
	}
	// Read the sums at the starts (node ids, X fastest), a row of X at a
	// time.
	c := make([]int, n)
	idx, d0 := 0, cc.dims[0]
	for v := 0; v < len(out); v += d0 {
		copy(out[v:v+d0], cc.acc[idx:idx+d0])
		for i := 1; i < n; i++ {
			c[i]++
			idx += cc.stride[i]
			if c[i] < cc.dims[i] {
				break
			}
			idx -= c[i] * cc.stride[i]
			c[i] = 0
		}
	}
}

// addProduct adds the boxes of the product of the dimensions' intervals
// from dimension i on, with the index and parity of the corner so far.
func (cc *coverCounter) addProduct(i, idx, parity int) {
	if i == len(cc.dims) {
		if parity&1 == 1 {
			cc.acc[idx]--
		} else {
			cc.acc[idx]++
		}
		return
	}
	for p := 0; p < cc.parts[i]; p++ {
		cc.addProduct(i+1, idx+cc.lo[i][p]*cc.stride[i], parity)
		cc.addProduct(i+1, idx+cc.hi[i][p]*cc.stride[i], parity+1)
	}
}

// leadingBox is the size of the box of the first whole layers of a
// rectangle of size s that a set of its first m nodes holds (blockSet's
// first box).
func leadingBox(s []int, m int) []int {
	n := len(s)
	for j := n - 1; j >= 0; j-- {
		layer := 1
		for _, p := range s[:j] {
			layer *= p
		}
		if q := m / layer; q > 0 {
			out := make([]int, n)
			copy(out, s[:j])
			out[j] = min(q, s[j])
			for i := j + 1; i < n; i++ {
				out[i] = 1
			}
			return out
		}
	}
	return nil
}

// phiStarLevels finds φ*, the largest φ after allocation among the free
// placements of the boxes (sizes of volume m): the levels of free
// rectangles from the largest a set can leave (left is the free nodes a
// set leaves) down to the first where a free box misses a rectangle,
// with the workers' cover counters and buffers. rep is, per box size,
// the node id of its first start (in enumeration order) that leaves φ*,
// or −1. ok is false when the budget ended first.
func (d *decision) phiStarLevels(lc *levelCache, boxes [][]int, left int) (bl boundLevels, ccs []*coverCounter, bufs [][]int32, rep []int, ok bool) {
	sel := d.sel
	ccs, bufs = d.coverCounters()
	// φ*: the levels from the top until a box misses a rectangle.
	bl.starLevel = -1
	for i, v := range lc.vols {
		if v > left {
			continue
		}
		if d.clock.enum.Load() {
			return bl, ccs, bufs, nil, false
		}
		rs, done := lc.levelDone(i)
		if !done {
			return bl, ccs, bufs, nil, false
		}
		if len(rs) == 0 {
			continue
		}
		bl.vols = append(bl.vols, v)
		bl.rects = append(bl.rects, rs)
		best := make([]int, len(boxes))
		at := make([]int, len(boxes))
		par.For(len(boxes), sel.Workers, func(w, k int) {
			if d.clock.hard.Load() {
				return
			}
			b := boxes[k]
			out := bufs[w]
			ccs[w].count(b, rs, out)
			at[k] = -1
			placements(sel.dims, sel.wrap, b, func(st []int) bool {
				v := enc(st, sel.dims)
				if kept := len(rs) - int(out[v]); kept > best[k] && sel.grid.unavailable(st, b) == 0 {
					best[k], at[k] = kept, v
				}
				return true
			})
		})
		if d.clock.hard.Load() {
			return bl, ccs, bufs, nil, false
		}
		if k := slices.Max(best); k > 0 {
			bl.starLevel, bl.starCount = len(bl.vols)-1, k
			rep = make([]int, len(boxes))
			for j := range rep {
				rep[j] = -1
				if best[j] == k {
					rep[j] = at[j]
				}
			}
			break
		}
	}
	return bl, ccs, bufs, rep, true
}

// boundStops makes the scans of lc stop at the bound phase's end too
// (besides the hard deadline) and returns what restores them.
func (d *decision) boundStops(lc *levelCache) (restore func()) {
	hard := lc.stop
	if hard == nil {
		hard = func() bool { return false }
	}
	lc.stop = func() bool { return d.clock.bound.Load() || hard() }
	lc.fit.stop = lc.stop
	return func() { lc.stop, lc.fit.stop = hard, hard }
}

// dropLateLevels drops the level cache whose scans a deadline stopped
// (incomplete levels are never completed; the ranking makes a new one,
// which inherits what the lattice settled) and keeps the φ filter from
// listing them again (levelsLate).
func (d *decision) dropLateLevels() {
	if d.levels != nil {
		// What its lattice settled (sizes without a free placement, free
		// placements found) holds on this state: the next cache starts
		// from it rather than scanning again.
		d.sel.keepNoFit(d.s, d.levels.fit)
	}
	d.levels, d.levelsLate = nil, true
}

// giveUpBounded ends the bounded path cut before its φ* was known: at the
// bound phase's end the level cache is dropped (dropLateLevels) and the
// placements are enumerated directly (false); after the enumeration
// phase nothing is left to examine.
func (d *decision) giveUpBounded() ([]sizeResult, bool) {
	if !d.clock.enum.Load() && !d.clock.hard.Load() {
		d.dropLateLevels()
		d.sel.boundGaveUp.Add(1)
		return nil, false
	}
	d.cutHit.Store(true)
	return make([]sizeResult, len(d.sizes)), true
}

// promisingStarts fills promising[j], for each leading box that can reach
// φ*, with the starts (a bit per node id) where it can: where the free
// rectangles it misses reach the count φ* needs at some level. The
// budget's enumeration phase leaves the masks not made nil.
func (d *decision) promisingStarts(lead [][]int, reach []bool, bl *boundLevels, ccs []*coverCounter, bufs [][]int32, promising [][]uint64) {
	if d.sel.tune.cutMasks {
		d.clock.enum.Store(true) // as if the budget ended here (tests)
	}
	par.For(len(lead), d.sel.Workers, func(w, j int) {
		if !reach[j] || d.clock.enum.Load() {
			return
		}
		promising[j] = d.promisingMask(lead[j], bl, ccs[w], bufs[w])
	})
}

// promisingMask returns the starts (a bit per node id) where the box a
// misses need(li) rectangles of some level li of bl: with a bit per
// rectangle (rectMask), or, when the levels hold more than maxMaskRects
// rectangles, with the cover counter's counts.
func (d *decision) promisingMask(a []int, bl *boundLevels, cc *coverCounter, buf []int32) []uint64 {
	N := d.s.N()
	mask := make([]uint64, (N+63)/64)
	if bl.rectCount() <= maxMaskRects {
		bl.rectMask(a, cc.dims, cc.wrap, mask)
		return mask
	}
	for li, rs := range bl.rects {
		cc.count(a, rs, buf)
		need := bl.need(li)
		for v, met := range buf {
			if len(rs)-int(met) >= need {
				mask[v/64] |= 1 << (v % 64)
			}
		}
	}
	return mask
}

// maxMaskRects bounds the rectangles of the levels for which the masks
// take a bit per rectangle (rectMask); beyond it they come from the
// cover counter, a level at a time.
const maxMaskRects = 2048

// rectMask sets in mask the starts where the box a misses need(li)
// rectangles of some level li: per dimension and coordinate, the
// rectangles (a bit each) that a box starting there meets along that
// dimension; a box meets a rectangle where it meets it along every
// dimension, so the rectangles it meets at a start are the AND of its
// coordinates' bits, taken dimension by dimension as the starts run in
// node-id order. Every level but φ*'s needs one rectangle missed, so
// those levels are asked at once: whether any of their rectangles is
// missed.
func (bl *boundLevels) rectMask(a, dims []int, wrap []bool, mask []uint64) {
	n, R := len(dims), bl.rectCount()
	k := (R + 63) / 64 // words per set of rectangles
	// one: the rectangles of the levels that need one missed; star
	// those of the level that needs needStar (none when every level
	// needs one).
	one, star := make([]uint64, k), make([]uint64, k)
	needStar := 0
	r0 := 0
	for li, rs := range bl.rects {
		set, need := one, bl.need(li)
		if need <= 0 {
			// every box misses that many
			for v := range vol(dims) {
				mask[v/64] |= 1 << (v % 64)
			}
			return
		}
		if need != 1 {
			set, needStar = star, need
		}
		for b := r0; b < r0+len(rs); b++ {
			set[b/64] |= 1 << (b % 64)
		}
		r0 += len(rs)
	}
	member := make([][]uint64, n) // member[i][x*k:(x+1)*k]
	for i, d := range dims {
		member[i] = make([]uint64, d*k)
		b := 0
		set := func(x int) { member[i][x*k+b/64] |= 1 << (b % 64) }
		for _, rs := range bl.rects {
			for _, r := range rs {
				switch {
				case a[i] == d || r.Size[i] == d:
					for x := range d {
						set(x)
					}
				case !wrap[i]:
					for x := max(0, r.Start[i]-a[i]+1); x <= min(d-a[i], r.Start[i]+r.Size[i]-1); x++ {
						set(x)
					}
				default:
					l := r.Size[i] + a[i] - 1
					lo := ((r.Start[i]-a[i]+1)%d + d) % d
					for t := range min(l, d) {
						set((lo + t) % d)
					}
				}
				b++
			}
		}
	}
	if needStar == 0 {
		missAnyMask(member, one, dims, mask)
		return
	}
	// misses reports whether a box meeting the rectangles met misses
	// enough of them.
	misses := func(met []uint64) bool {
		missed := 0
		for w := range k {
			if one[w]&^met[w] != 0 {
				return true
			}
			missed += bits.OnesCount64(star[w] &^ met[w])
		}
		return needStar > 0 && missed >= needStar
	}
	// partial[i]: the rectangles met along dimensions i… at the current
	// coordinates of those dimensions.
	partial := make([]uint64, (n+1)*k)
	for w := range k {
		partial[n*k+w] = ^uint64(0)
	}
	and := func(i, x int) { // partial[i] = partial[i+1] & member[i][x]
		for w := range k {
			partial[i*k+w] = partial[(i+1)*k+w] & member[i][x*k+w]
		}
	}
	c := make([]int, n)
	for i := n - 1; i >= 1; i-- {
		and(i, 0)
	}
	d0, m0, N := dims[0], member[0], vol(dims)
	met := make([]uint64, k)
	rowOf := make([]uint64, k)
	known := false
	var row uint64
	for v := 0; v < N; v += d0 {
		p := partial[k : 2*k]
		// A row's starts (along the first dimension) depend only on the
		// rectangles met above it (p), which few rows change: a row of
		// at most 64 starts is computed once per value and or-ed in.
		if d0 > 64 || !known || !slices.Equal(p, rowOf) {
			row = 0
			all := misses(p) // a box missing them above misses them on the whole row
			for x := range d0 {
				hit := all
				if !hit {
					for w := range k {
						met[w] = p[w] & m0[x*k+w]
					}
					hit = misses(met)
				}
				switch {
				case !hit:
				case d0 > 64:
					u := v + x
					mask[u/64] |= 1 << (u % 64)
				default:
					row |= 1 << x
				}
			}
			copy(rowOf, p)
			known = d0 <= 64
		}
		if w, o := v/64, v%64; row != 0 {
			mask[w] |= row << o
			if o+d0 > 64 {
				mask[w+1] |= row >> (64 - o)
			}
		}
		// the next row: advance the coordinates above the first
		i := 1
		for ; i < n; i++ {
			c[i]++
			if c[i] < dims[i] {
				break
			}
			c[i] = 0
		}
		for j := min(i, n-1); j >= 1; j-- {
			and(j, c[j])
		}
	}
}

// missAnyMask is rectMask when every level needs one rectangle missed:
// a box meets all the rectangles of one where it meets them all along
// every dimension, so the starts where it meets them all are a product
// of coordinate sets (all[i]), and the mask is its complement.
func missAnyMask(member [][]uint64, one []uint64, dims []int, mask []uint64) {
	n, k := len(dims), len(one)
	all := make([][]bool, n)
	for i, d := range dims {
		all[i] = make([]bool, d)
		for x := range d {
			all[i][x] = true
			for w := range k {
				if one[w]&^member[i][x*k+w] != 0 {
					all[i][x] = false
					break
				}
			}
		}
	}
	d0 := dims[0]
	var none, some uint64 // a row's starts where the box misses one: all of them, or where the first coordinate does
	if d0 <= 64 {
		none = ^uint64(0) >> (64 - d0)
		for x := range d0 {
			if !all[0][x] {
				some |= 1 << x
			}
		}
	}
	c := make([]int, n)
	for v, N := 0, vol(dims); v < N; v += d0 {
		meets := true // the box meets them all along the dimensions above the first
		for i := 1; i < n && meets; i++ {
			meets = all[i][c[i]]
		}
		switch {
		case d0 > 64:
			for x := range d0 {
				if !meets || !all[0][x] {
					u := v + x
					mask[u/64] |= 1 << (u % 64)
				}
			}
		default:
			row := none
			if meets {
				row = some
			}
			if w, o := v/64, v%64; row != 0 {
				mask[w] |= row << o
				if o+d0 > 64 {
					mask[w+1] |= row >> (64 - o)
				}
			}
		}
		for i := 1; i < n; i++ {
			c[i]++
			if c[i] < dims[i] {
				break
			}
			c[i] = 0
		}
	}
}

// leadingBoxes lists the distinct leading boxes of the decision's sizes
// and, per size index, the index of its own in that list.
func (d *decision) leadingBoxes() (lead [][]int, sizeBox []int) {
	byBox := map[string]int{}
	sizeBox = make([]int, len(d.sizes))
	for si, size := range d.sizes {
		a := leadingBox(size, d.m)
		k := sizeKey("", a)
		j, ok := byBox[k]
		if !ok {
			j = len(lead)
			byBox[k] = j
			lead = append(lead, a)
		}
		sizeBox[si] = j
	}
	return lead, sizeBox
}

// boundLevels are today's free rectangles by volume from the largest
// volume a set of m nodes can leave free, down to the level of φ*.
type boundLevels struct {
	vols  []int
	rects [][]Rect
	// star is φ*: the level index and the count at it.
	starLevel, starCount int
	// beat: a placement must beat φ* (miss more than starCount
	// rectangles at its level), not only reach it.
	beat   bool
	shapes [][]shapeCount // per level (countShapes)
}

// enumerateBounded is enumerate for the bounded path; ok false when
// neither a free box of m nodes nor a seed (seeded.go) was found (the
// caller enumerates then).
func (d *decision) enumerateBounded() ([]sizeResult, bool) {
	// The seed search and the listing below ask the grid for boxes
	// hundreds of millions of times on a filling machine.
	if !d.sel.tune.plainScan {
		d.sel.grid.buildFold(d.sel.Workers)
	}
	lc := d.levelsNow()
	left := lc.free - d.m
	// The free rectangles and φ* must be known by the bound phase's end;
	// otherwise the placements are enumerated directly (giveUpBounded).
	defer d.boundStops(lc)()
	boxes, ok := d.boxSeeds(lc)
	if !ok {
		return d.giveUpBounded()
	}
	repAt := make([]int, len(d.sizes))
	for i := range repAt {
		repAt[i] = -1
	}
	var bl boundLevels
	var ccs []*coverCounter
	var bufs [][]int32
	boxStar := int64(-1)
	if len(boxes) > 0 {
		sizes := make([][]int, len(boxes))
		for k, si := range boxes {
			sizes[k] = d.sizes[si]
		}
		var rep []int
		bl, ccs, bufs, rep, ok = d.phiStarLevels(lc, sizes, left)
		if !ok {
			return d.giveUpBounded()
		}
		if bl.starLevel < 0 {
			// No free rectangle is left beside any box: every set leaves φ 0.
			return d.enumerate(), true
		}
		for k, si := range boxes {
			repAt[si] = rep[k]
		}
		boxStar = int64(d.s.N())*int64(bl.vols[bl.starLevel]) + int64(bl.starCount)
	} else {
		ccs, bufs = d.coverCounters()
	}
	// Criterion 1 is settled at 0 by a box, or by a seed if one is found.
	d.lowerBest(0)
	seeds := d.seedByBound(lc, left, ccs, bufs)
	if f := d.sel.tune.onSeeds; f != nil {
		f(seeds)
	}
	if d.sel.tune.forgetAnswers {
		d.sel.reach.forget()
	}
	// The seeds' candidates are examined again with the others.
	d.resetArenas()
	if len(boxes) > 0 && d.clock.bound.Load() {
		// Cut while it listed levels: the boxes' φ* stands, and the
		// ranking lists the levels anew.
		d.dropLateLevels()
		seeds = nil
	}
	switch {
	case len(boxes) == 0 && (len(seeds) == 0 || d.clock.bound.Load()):
		d.undoSeedSearch()
		if d.clock.bound.Load() {
			return d.giveUpBounded()
		}
		return nil, false
	case len(seeds) == 0:
	case seeds[0].f.Phi > boxStar:
		if bl, ok = d.levelsTo(lc, left, seeds[0].f); !ok {
			return d.giveUpBounded()
		}
		d.sel.boundSeeded.Add(1)
		for i := range repAt {
			repAt[i] = -1
		}
		fallthrough
	case seeds[0].f.Phi == boxStar:
		for _, sd := range seeds {
			if sd.f.Phi == seeds[0].f.Phi && repAt[sd.si] < 0 {
				repAt[sd.si] = sd.at
			}
		}
	}
	return d.examineBeating(&bl, ccs, bufs, repAt), true
}

// examineBeating examines, below the periods, the placements whose bound
// beats φ* (bl) and each size's representative, the placement at node
// repAt[si] (−1: none), a set without transit nodes that leaves φ*; the
// decision is then settled for criteria 1–2.
func (d *decision) examineBeating(bl *boundLevels, ccs []*coverCounter, bufs [][]int32, repAt []int) []sizeResult {
	sel := d.sel
	period := d.periods()
	c := make([]int, len(sel.dims))
	for si, v := range repAt {
		if v >= 0 {
			// the translate below the periods comes first in enumeration order
			dec(v, sel.dims, c)
			for i, q := range period {
				c[i] %= q
			}
			repAt[si] = enc(c, sel.dims)
		}
	}
	bl.beat = true
	results := d.boundedPlacements(bl, ccs, bufs, period, repAt)
	d.settled = true
	return results
}

// boundedEntry is a placement examined by φ: its size index, its start
// (node id) and φ after its set without transit nodes (stairBoxes), or
// the largest int64 where φ is not computed (too many rectangles).
type boundedEntry struct {
	si  int32
	v   int32
	phi int64
}

// boundedPlacements examines the placements below the periods whose set
// without transit nodes beats φ* (bl.need), and each size's
// representative, the placement starting at node repAt[si] (none: −1),
// and returns each size's outcome.
//
// The placements are listed first, each with φ after its set, and
// examined from the largest φ down: once a set of some φ is a candidate,
// a placement of no larger φ cannot win or only ties (criterion 1 is
// settled at 0, so only sets without transit nodes are candidates), and
// it is not examined (examineEntries without ties).
func (d *decision) boundedPlacements(bl *boundLevels, ccs []*coverCounter, bufs [][]int32, period, repAt []int) []sizeResult {
	sel := d.sel
	N := d.s.N()
	lead, sizeBox := d.leadingBoxes()
	reps := 1 // placements left per size by the periods, at most
	for _, q := range period {
		reps *= q
	}
	rects := bl.rectCount()
	exact := rects <= maxStairRects
	promising := make([][]uint64, len(lead))
	reach := make([]bool, len(lead))
	bl.countShapes()
	boxes, sizes := 0, 0 // the leading boxes that can reach φ*, and their sizes
	for j, a := range lead {
		if reach[j] = bl.canReach(a, sel.dims); reach[j] {
			boxes++
		}
	}
	for si := range d.sizes {
		if reach[sizeBox[si]] {
			sizes++
		}
	}
	// Where the sizes have few placements left (a state with translation
	// symmetry) each is checked against the levels' rectangles directly
	// (a test per rectangle); otherwise the starts where a leading box
	// can reach φ* are found for all starts at once, in a pass over the
	// starts per leading box that all its sizes share.
	direct := (reps*rects*sizes <= N*boxes || sel.tune.boundDirect) && !sel.tune.boundMasks
	if !direct {
		d.promisingStarts(lead, reach, bl, ccs, bufs, promising)
	}
	order := d.sizeOrder()
	lists := make([][]boundedEntry, len(d.sizes))
	list := func(w, si int) []boundedEntry {
		j := sizeBox[si]
		mask, a := promising[j], lead[j]
		size := d.sizes[si]
		if reach[j] && !direct && mask == nil {
			d.cutHit.Store(true) // the masks were cut by the budget
			return nil
		}
		if !reach[j] {
			return nil
		}
		box := Rect{Size: a}
		var list []boundedEntry
		var poor *poorStarts // the starts passed over where φ is exact
		if exact && !sel.tune.plainScan {
			poor = newPoorStarts(sel.grid, size, d.m, false)
		}
		each := func(v int, st []int) bool {
			if d.clock.enum.Load() {
				d.cutHit.Store(true)
				return false
			}
			if v == repAt[si] {
				return true // examined on its own, below
			}
			if direct {
				box.Start = st
				if !bl.reaches(box, sel.dims) {
					return true
				}
			}
			phi := int64(math.MaxInt64)
			if exact {
				if direct && poor != nil && poor.skip(v, st) {
					return true // fewer than m available nodes
				}
				holes := sel.grid.unavailable(st, size)
				if poor != nil {
					poor.counted(v, st, vol(size)-holes)
				}
				boxes := d.stairBoxesHoles(w, size, st, holes)
				if boxes == nil {
					return true // fewer than m available nodes
				}
				var ok bool
				if phi, ok = bl.phiReaching(boxes, sel.dims, N); !ok {
					return true
				}
			}
			list = append(list, boundedEntry{si: int32(si), v: int32(v), phi: phi})
			return true
		}
		// Starts beyond the periods are translates of earlier ones.
		if direct {
			placementsBelow(sel.dims, sel.wrap, size, period, func(st []int) bool { return each(enc(st, sel.dims), st) })
		} else {
			startsIn(mask, sel.dims, sel.wrap, size, period, poor, each)
		}
		return list
	}
	results := make([]sizeResult, len(d.sizes))
	// No set can leave more than every rectangle of the top level (φ_top).
	// The sorted list starts with the placements of φ_top in enumeration
	// order, examined a chunk at a time, and once one is a candidate no
	// other placement is examined (sets that only tie are not looked for).
	// So the sizes are listed a wave at a time, in order, and each full
	// chunk of placements of φ_top found in the sizes listed so far is
	// examined at once, as it would be first in the sorted list: a
	// candidate among them ends the listing. Each wave lists twice as
	// many sizes as the one before, so that the workers waiting at the
	// waves' ends cost little when no candidate ends the listing.
	phiTop := int64(math.MaxInt64)
	if exact && len(bl.rects) > 0 {
		phiTop = int64(N)*int64(bl.vols[0]) + int64(len(bl.rects[0]))
	}
	chunk, wave := 2*par.Workers(sel.Workers), 4*par.Workers(sel.Workers)
	if sel.tune.listWave > 0 {
		wave = sel.tune.listWave
	}
	var top []boundedEntry // the placements of φ_top listed, in order
	taken := 0             // how many of them were examined
	for w0 := 0; w0 < len(order); w0, wave = w0+wave, 2*wave {
		sizes := order[w0:min(w0+wave, len(order))]
		par.For(len(sizes), sel.Workers, func(w, k int) { lists[sizes[k]] = list(w, sizes[k]) })
		if !exact || sel.tune.wholeList {
			continue
		}
		for _, si := range sizes {
			for _, e := range lists[si] {
				if e.phi == phiTop {
					top = append(top, e)
				}
			}
		}
		for len(top)-taken >= chunk && d.phiBar.Load() < phiTop && !d.clock.enum.Load() {
			d.examineEntries(top[taken:taken+chunk], results, false)
			taken += chunk
		}
		if d.phiBar.Load() >= phiTop {
			if c := sel.tune.topStops; c != nil && w0+len(sizes) < len(order) {
				c.Add(1)
			}
			break
		}
	}
	// The rest, sorted by φ: what the waves did not examine.
	var all []boundedEntry
	for _, si := range order {
		for _, e := range lists[si] {
			if e.phi == phiTop && taken > 0 {
				taken--
				continue
			}
			all = append(all, e)
		}
	}
	// Sets that only tie are not looked for, but without exact φ every
	// placement ties.
	d.examineEntries(all, results, !exact)
	// Each size's representative, a set without transit nodes that
	// leaves φ* (a free box or a seed, its questions answered), is
	// examined even after the budget's enumeration phase ended: a cut
	// decision then still has its sets of φ*.
	par.For(len(order), sel.Workers, func(w, k int) {
		si := order[k]
		if repAt[si] < 0 {
			return
		}
		st := make([]int, len(sel.dims))
		dec(repAt[si], sel.dims, st)
		d.work[w].late = true
		defer func() { d.work[w].late = false }()
		d.examine(w, d.sizes[si], st, &results[si], nil)
	})
	return results
}

// examineEntries examines the placements listed, each with φ after its
// set without transit nodes (criterion 1 is settled at 0), from the
// largest φ down, and adds each size's outcome to results. A placement
// whose φ is below that of a candidate found so far in the decision
// (phiBar) cannot win and is not examined (counted only); the bar rises
// between chunks of a few placements, so what is examined does not
// depend on timing. With ties, a placement of a candidate's φ is
// examined too, and the sort is stable, so each size's candidates of one
// φ keep enumeration order: the sets tied on criteria 1–2 and their
// order are those of the enumeration. Without ties (the bounded path,
// which does not look for sets that only tie) it is left out as well.
func (d *decision) examineEntries(all []boundedEntry, results []sizeResult, ties bool) {
	slices.SortStableFunc(all, func(a, b boundedEntry) int { return cmp.Compare(b.phi, a.phi) })
	below := func(phi, bar int64) bool { return phi < bar || !ties && bar > 0 && phi == bar }
	parts := make([]sizeResult, len(all))
	sts := make([][]int, len(d.work))
	skip := func(k int) {
		parts[k].examined++
		if c := d.sel.tune.barSkips; c != nil {
			c.Add(1)
		}
	}
	// A few placements at a time, the bar raised between them, so that
	// which are examined does not depend on timing.
	chunk := 2 * par.Workers(d.sel.Workers)
	lo, cut := 0, false
	for ; lo < len(all) && !below(all[lo].phi, d.phiBar.Load()); lo += chunk {
		if cut = d.stop.Load() || d.clock.enum.Load(); cut {
			d.cutHit.Store(d.clock.enum.Load())
			break
		}
		hi, bar := min(lo+chunk, len(all)), d.phiBar.Load()
		par.For(hi-lo, d.sel.Workers, func(w, k int) {
			e := all[lo+k]
			if below(e.phi, bar) {
				skip(lo + k)
				return
			}
			if sts[w] == nil {
				sts[w] = make([]int, len(d.sel.dims))
			}
			dec(int(e.v), d.sel.dims, sts[w])
			d.examine(w, d.sizes[e.si], sts[w], &parts[lo+k], nil)
		})
		for k := lo; k < hi; k++ {
			if len(parts[k].cands) > 0 && all[k].phi > d.phiBar.Load() {
				d.phiBar.Store(all[k].phi)
			}
		}
	}
	for k := lo; k < len(all) && !cut; k++ {
		skip(k) // below the bar, as every later one (the list is sorted)
	}
	for k, e := range all {
		results[e.si].add(&parts[k])
	}
}

// add adds another part of the size's outcome, after its own.
func (r *sizeResult) add(p *sizeResult) {
	r.found += p.found
	r.examined += p.examined
	r.cands = append(r.cands, p.cands...)
	if r.err == nil {
		r.err = p.err
	}
}

// startsIn calls f, in enumeration order, with the placements of size
// below cap (per dimension) whose start (node id v) is set in mask, until
// f returns false: the set bits in order, those that are placements.
// With poor, the starts it skips are passed over without calling f.
func startsIn(mask []uint64, dims []int, wrap []bool, size, cap []int, poor *poorStarts, f func(v int, start []int) bool) {
	var limBuf [16]int
	limit := limBuf[:len(dims)]
	if len(dims) > len(limBuf) {
		limit = make([]int, len(dims))
	}
	placementLimits(dims, wrap, size, limit)
	for i := range limit {
		limit[i] = min(limit[i], cap[i])
	}
	st := make([]int, len(dims))
	var rowBuf [16]int
	rowSt := rowBuf[:len(dims)]
	if len(dims) > len(rowBuf) {
		rowSt = make([]int, len(dims))
	}
	// A row is a line of starts along the first dimension: its other
	// coordinates are decoded once, and a row outside the limits (or
	// the rest of one past the first dimension's) is skipped whole.
	d0 := dims[0]
	row, rowOK := -1, false
	if poor != nil {
		poor.mask = mask
	}
	for w, x := range mask {
		for x != 0 {
			v := w*64 + bits.TrailingZeros64(x)
			r := v / d0
			if r != row {
				if k := r - row; row >= 0 && len(dims) > 1 && k < dims[1] {
					// a few rows on: carry instead of dividing
					rowSt[1] += k
					for i := 1; i+1 < len(dims) && rowSt[i] >= dims[i]; i++ {
						rowSt[i] -= dims[i]
						rowSt[i+1]++
					}
				} else {
					for i, rest := 1, r; i < len(dims); i++ {
						rowSt[i] = rest % dims[i]
						rest /= dims[i]
					}
				}
				row, rowOK = r, true
				for i := 1; i < len(dims); i++ {
					rowOK = rowOK && rowSt[i] < limit[i]
				}
			}
			rowSt[0] = v - r*d0
			if !rowOK || rowSt[0] >= limit[0] {
				// nothing else of this row is a placement
				if end := (r+1)*d0 - w*64; end < 64 {
					x &^= 1<<uint(end) - 1
				} else {
					x = 0
				}
				continue
			}
			if poor != nil && poor.skip(v, rowSt) {
				// nothing before poor.to is a placement to examine
				if end := poor.to - w*64; end < 64 {
					x &^= 1<<uint(end) - 1
				} else {
					x = 0
				}
				continue
			}
			x &= x - 1
			for i := range st {
				st[i] = rowSt[i] // f may write into its start
			}
			if !f(v, st) {
				return
			}
		}
	}
}

// maxStairRects bounds the rectangles a placement is tested against for
// its exact φ (boundedPlacements).
const maxStairRects = 4096

// stairBoxes is the exact test behind the leading box's bound: the
// placement's set without transit nodes, the first m available nodes of
// the rectangle in coordinate order, is the available part of the
// rectangle's first stretch up to its m-th available node, and a free
// rectangle meets the set exactly when it meets that stretch (its nodes
// are all available), so φ after the set follows from the stretch's
// boxes (phiReaching).
//
// stairBoxes returns, in the worker's scratch, the boxes whose union is
// the first stretch of the rectangle at st (coordinate order, the first
// dimension fastest) up to and with its m-th available node: for each
// dimension j from the last, the whole layers of j before that node's
// (the dimensions below j whole, those above at the node's coordinates),
// the last box ending at the node. nil when the rectangle has fewer than
// m available nodes.
func (d *decision) stairBoxes(w int, size, st []int) []Rect {
	return d.stairBoxesHoles(w, size, st, d.sel.grid.unavailable(st, size))
}

// stairBoxesHoles is stairBoxes for a rectangle known to hold holes
// unavailable nodes.
func (d *decision) stairBoxesHoles(w int, size, st []int, holes int) []Rect {
	g := d.sel.grid
	dims := d.sel.dims
	n := len(size)
	if vol(size)-holes < d.m {
		return nil
	}
	ws := &d.work[w]
	if len(ws.stairInts) < 2*n*(n+1) {
		ws.stairInts = make([]int, 2*n*(n+1))
	}
	start, box := ws.stairInts[:n], ws.stairInts[n:2*n]
	free := ws.stairInts[2*n:] // the boxes' starts and sizes
	copy(start, st)
	copy(box, size)
	boxes := ws.stair[:0]
	left := d.m
	for j := n - 1; j >= 0; j-- {
		for i := j + 1; i < n; i++ {
			box[i] = 1
		}
		avail := func(q int) int {
			box[j] = q
			if holes == 0 {
				return vol(box)
			}
			return vol(box) - g.unavailable(start, box)
		}
		// The largest q whose first q layers hold fewer than left
		// available nodes: the m-th lies in layer q (without holes, the
		// layers hold layer nodes each).
		lo, hi := 0, size[j]-1
		if holes == 0 {
			layer := vol(box) / size[j]
			lo = (left - 1) / layer
		}
		for lo < hi && holes > 0 {
			if q := (lo + hi + 1) / 2; avail(q) < left {
				lo = q
			} else {
				hi = q - 1
			}
		}
		q := lo
		if j == 0 {
			q++ // the row up to and with the node
		}
		if q > 0 {
			left -= avail(q)
			bs, bz := free[:n:n], free[n:2*n:2*n]
			free = free[2*n:]
			copy(bs, start)
			copy(bz, box)
			boxes = append(boxes, Rect{Start: bs, Size: bz})
		}
		start[j] = (st[j] + lo) % dims[j]
	}
	ws.stair = boxes
	return boxes
}

// boxSeeds returns the indices of the sizes of volume m that fit: their
// free placements are sets without transit nodes. ok is false when the
// budget's bound phase ended first.
func (d *decision) boxSeeds(lc *levelCache) (seeds []int, ok bool) {
	for si, size := range d.sizes {
		if vol(size) == d.m && lc.fit.fits(size) {
			seeds = append(seeds, si)
		}
		if lc.fit.stopped {
			return nil, false
		}
	}
	return seeds, true
}

// need is how many rectangles of level li a set must miss to reach φ*.
func (bl *boundLevels) need(li int) int {
	switch {
	case li == bl.starLevel && bl.beat:
		return bl.starCount + 1
	case li == bl.starLevel:
		return bl.starCount
	}
	return 1
}

// reaches reports whether the box misses need(li) rectangles of some
// level li.
func (bl *boundLevels) reaches(box Rect, dims []int) bool {
	one := [1]Rect{box}
	_, ok := bl.phiReaching(one[:], dims, 0)
	return ok
}

// rectCount is the number of rectangles of the levels.
func (bl *boundLevels) rectCount() int {
	n := 0
	for _, rs := range bl.rects {
		n += len(rs)
	}
	return n
}

// phiReaching returns φ after a set (N nodes in all) whose free
// rectangles it misses are those the union of the boxes misses, when
// that φ reaches φ* (beats it with bl.beat): when it misses need(li)
// rectangles of some level li. The first level with a rectangle missed
// gives it.
func (bl *boundLevels) phiReaching(boxes []Rect, dims []int, N int) (int64, bool) {
	for li, rs := range bl.rects {
		missed := 0
	next:
		for _, r := range rs {
			for _, b := range boxes {
				if overlap(b, r, dims) {
					continue next
				}
			}
			missed++
		}
		if missed >= bl.need(li) {
			return int64(N)*int64(bl.vols[li]) + int64(missed), true
		}
		if missed > 0 {
			return 0, false
		}
	}
	return 0, false
}

// canReach reports whether a box of size a could miss some rectangle of
// the levels above φ*'s or φ*'s count of them somewhere, by the shapes
// alone: a placement of shape R misses the box at some start only if
// R_i + a_i ≤ d_i in some dimension.
func (bl *boundLevels) canReach(a, dims []int) bool {
	for li, shapes := range bl.shapes {
		n := 0
		for _, sc := range shapes {
			for i, d := range dims {
				if sc.size[i]+a[i] <= d {
					n += sc.count
					break
				}
			}
		}
		if n >= bl.need(li) {
			return true
		}
	}
	return false
}

// shapeCount is how many rectangles of a level have one shape.
type shapeCount struct {
	size  []int
	count int
}

// countShapes fills bl.shapes from bl.rects (a level's rectangles come
// shape by shape).
func (bl *boundLevels) countShapes() {
	bl.shapes = make([][]shapeCount, len(bl.rects))
	for li, rs := range bl.rects {
		for _, r := range rs {
			l := bl.shapes[li]
			if len(l) > 0 && slices.Equal(l[len(l)-1].size, r.Size) {
				l[len(l)-1].count++
				continue
			}
			bl.shapes[li] = append(l, shapeCount{size: r.Size, count: 1})
		}
	}
}

// periods returns, per dimension, the least shift along it that maps the
// state onto itself (d_i when none does) when the router's answers are
// translation invariant: a placement is then a translate of the one at
// its start modulo the periods, with the same set up to translation, the
// same φ after allocation and the same table figures, and that one comes
// first in enumeration order. Without invariance every period is d_i.
func (d *decision) periods() []int {
	dims := d.sel.dims
	out := slices.Clone(dims)
	if !d.invariant || !d.shareBlocks {
		return out
	}
	n := len(dims)
	c := make([]int, n)
	for i, di := range dims {
		if !d.sel.wrap[i] {
			continue
		}
		for q := 1; q < di; q++ {
			if di%q != 0 {
				continue
			}
			ok := true
			for v := 0; v < d.s.N() && ok; v++ {
				dec(v, dims, c)
				c[i] = (c[i] + q) % di
				ok = d.s.Available(v) == d.s.Available(enc(c, dims))
			}
			if ok {
				out[i] = q
				break
			}
		}
	}
	return out
}
