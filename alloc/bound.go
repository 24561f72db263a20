package alloc

import (
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
				if kept := len(rs) - int(out[v]); kept > best[k] && d.holesAt(w, sel.grid, b, st) == 0 {
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
	N := d.s.N()
	if d.sel.tune.cutMasks {
		d.clock.enum.Store(true) // as if the budget ended here (tests)
	}
	par.For(len(lead), d.sel.Workers, func(w, j int) {
		if !reach[j] || d.clock.enum.Load() {
			return
		}
		mask := make([]uint64, (N+63)/64)
		out := bufs[w]
		for li, rs := range bl.rects {
			ccs[w].count(lead[j], rs, out)
			need := bl.need(li)
			for v := range out {
				if len(rs)-int(out[v]) >= need {
					mask[v/64] |= 1 << (v % 64)
				}
			}
		}
		promising[j] = mask
	})
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
	results := make([]sizeResult, len(d.sizes))
	d.boundedPlacements(bl, ccs, bufs, period, repAt, func(w, si int, st []int) bool {
		return d.examine(w, d.sizes[si], st, &results[si], nil)
	})
	d.settled = true
	return results
}

// boundedPlacements calls f for the placements below the periods whose
// leading box's bound beats φ* (bl.need) and for each size's
// representative, the placement starting at node repAt[si] (none: −1).
func (d *decision) boundedPlacements(bl *boundLevels, ccs []*coverCounter, bufs [][]int32, period, repAt []int, f func(w, si int, st []int) bool) {
	sel := d.sel
	N := d.s.N()
	lead, sizeBox := d.leadingBoxes()
	reps := 1 // placements left per size by the periods, at most
	for _, q := range period {
		reps *= q
	}
	rects := 0
	for _, rs := range bl.rects {
		rects += len(rs)
	}
	// Where a size has few placements left (a state with translation
	// symmetry) each is checked against the levels' rectangles directly;
	// otherwise the starts where its leading box can reach φ* are found
	// for all starts at once, once per leading box.
	direct := reps*rects <= 4*N && !sel.tune.boundMasks
	promising := make([][]uint64, len(lead))
	reach := make([]bool, len(lead))
	bl.countShapes()
	for j, a := range lead {
		reach[j] = bl.canReach(a, sel.dims)
	}
	if !direct {
		d.promisingStarts(lead, reach, bl, ccs, bufs, promising)
	}
	order := d.sizeOrder()
	par.For(len(order), sel.Workers, func(w, k int) {
		si := order[k]
		j := sizeBox[si]
		mask, a := promising[j], lead[j]
		size := d.sizes[si]
		// The size's representative, a set without transit nodes that
		// leaves φ* (a free box or a seed, its questions answered), is
		// examined even after the budget's enumeration phase ended (in
		// its place in enumeration order when the phase lasts): a cut
		// decision then still has its sets of φ*.
		repDone := repAt[si] < 0
		rep := func(st []int) bool {
			repDone = true
			d.work[w].late = true
			defer func() { d.work[w].late = false }()
			return f(w, si, st)
		}
		defer func() {
			if !repDone {
				st := make([]int, len(size))
				dec(repAt[si], sel.dims, st)
				rep(st)
			}
		}()
		if reach[j] && !direct && mask == nil {
			d.cutHit.Store(true) // the masks were cut by the budget
			return
		}
		if !reach[j] {
			return
		}
		box := Rect{Size: a}
		// Starts beyond the periods are translates of earlier ones.
		placementsBelow(sel.dims, sel.wrap, size, period, func(st []int) bool {
			v := enc(st, sel.dims)
			if v == repAt[si] {
				return rep(st)
			}
			if direct {
				box.Start = st
				if !bl.reaches(box, sel.dims) {
					return true
				}
			} else if mask[v/64]>>(v%64)&1 == 0 {
				return true
			}
			if rects <= maxPrefixRects && !d.prefixBeats(w, size, st, bl) {
				return true
			}
			return f(w, si, st)
		})
	})
}

// maxPrefixRects bounds the rectangles prefixBeats tests a box against.
const maxPrefixRects = 4096

// prefixBeats tightens the leading box's bound for a placement with
// unavailable nodes: its set without transit nodes is the first m
// available nodes of the rectangle in coordinate order (the first
// dimension fastest), so it holds every available node of its prefix box
// (prefixBox), and φ after it is at most what that box leaves. It reports
// whether that bound beats φ* (false too when the rectangle has fewer
// than m available nodes, so that it has no set).
func (d *decision) prefixBeats(w int, size, st []int, bl *boundLevels) bool {
	holes := d.holesAt(w, d.sel.grid, size, st)
	if vol(size)-holes < d.m {
		return false
	}
	if holes == 0 {
		return true // a block: its leading box is that prefix box
	}
	box := d.prefixBox(w, size, st)
	return box == nil || bl.reaches(Rect{Start: st, Size: box}, d.sel.dims)
}

// prefixBox returns the largest prefix box of the rectangle at st (the
// first dimensions whole, then some layers of one, the first layer of
// the others: a first stretch of its nodes in coordinate order) with at
// most m available nodes, in the worker's scratch; nil when even one
// node is too many.
func (d *decision) prefixBox(w int, size, st []int) []int {
	g := d.sel.grid
	n := len(size)
	ws := &d.work[w]
	box := append(ws.prefix[:0], size...)
	ws.prefix = box
	avail := func() int { return vol(box) - g.unavailable(st, box) }
	for k := n - 1; k >= 0; k-- {
		for i := k + 1; i < n; i++ {
			box[i] = 1
		}
		box[k] = 1
		if avail() > d.m {
			continue // even one layer of dimension k holds too many
		}
		lo, hi := 1, size[k]
		for lo < hi {
			if box[k] = (lo + hi + 1) / 2; avail() <= d.m {
				lo = box[k]
			} else {
				hi = box[k] - 1
			}
		}
		box[k] = lo
		return box
	}
	return nil
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
	for li, rs := range bl.rects {
		n, need := 0, bl.need(li)
		for _, r := range rs {
			if !overlap(box, r, dims) {
				if n++; n >= need {
					return true
				}
			}
		}
	}
	return false
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
