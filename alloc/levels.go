package alloc

import (
	"slices"
	"sync"
	"sync/atomic"
)

// levelCache lists the free rectangles of a state by volume, largest
// first, computing each volume level on demand. φ after an allocation is
// then found from the first level that still has a rectangle the
// allocation misses. Safe for concurrent use.
type levelCache struct {
	sel    *Selector
	s      *State
	free   int       // available nodes today
	vols   []int     // distinct volumes ≤ free nodes, descending
	shapes [][][]int // per volume: the shapes
	// most[i] bounds φ/N at levels i, i+1, …: max over j ≥ i of
	// vols[j] + len(shapes[j]) (a level has at most N placements per
	// shape).
	most []int
	// levels holds each level's rectangles, computed once: every
	// candidate reads the levels from the largest down, so the reads
	// take no lock (a mutex here cost a quarter of a decision's CPU on
	// two cores through cache-line contention).
	levels []levelSlot
	// computing serialises the levels' computations (the fit lattice is
	// a memo without a lock of its own).
	computing sync.Mutex
	fit       *fitLattice
	// stop, when set, ends the computation of levels (the decision's
	// time is up): a level left unfinished is reported as such.
	stop func() bool
}

// levelSlot is one volume level's free rectangles, computed on first use.
type levelSlot struct {
	once     sync.Once
	rects    []Rect
	complete bool
}

func newLevelCache(sel *Selector, s *State) *levelCache {
	lc := &levelCache{sel: sel, s: s, free: s.FreeCount(), fit: newFitLattice(sel.dims, sel.wrap, sel.grid)}
	lc.fit.s = s
	for _, sh := range sel.shapes { // sorted by volume, descending
		v := vol(sh)
		if v > lc.free {
			continue
		}
		if len(lc.vols) == 0 || lc.vols[len(lc.vols)-1] != v {
			lc.vols = append(lc.vols, v)
			lc.shapes = append(lc.shapes, nil)
		}
		lc.shapes[len(lc.shapes)-1] = append(lc.shapes[len(lc.shapes)-1], sh)
	}
	lc.most = make([]int, len(lc.vols))
	for i := len(lc.vols) - 1; i >= 0; i-- {
		lc.most[i] = lc.vols[i] + len(lc.shapes[i])
		if i+1 < len(lc.vols) {
			lc.most[i] = max(lc.most[i], lc.most[i+1])
		}
	}
	lc.levels = make([]levelSlot, len(lc.vols))
	return lc
}

// levelDone returns today's free rectangles of the i-th volume (the
// selector's grid holds today's state) and whether the level was
// finished (false when stop ended it; its rectangles are then some of
// the level's). Shapes that cannot hold a free rectangle (by the fit
// lattice) are not enumerated.
func (lc *levelCache) levelDone(i int) ([]Rect, bool) {
	l := &lc.levels[i]
	l.once.Do(func() {
		lc.computing.Lock()
		defer lc.computing.Unlock()
		l.rects, l.complete = lc.computeLevel(i)
	})
	return l.rects, l.complete
}

// computeLevel enumerates the i-th level's free rectangles; complete is
// false when stop ended it.
func (lc *levelCache) computeLevel(i int) (out []Rect, complete bool) {
	for _, size := range lc.shapes[i] {
		if lc.stop != nil && lc.stop() {
			return out, false
		}
		if !lc.fit.fits(size) {
			if lc.fit.stopped {
				return out, false
			}
			continue
		}
		if b, ok := lc.fit.fitBits().near(lc.fit.index(size), size); ok {
			lc.fit.bits.eachPlacement(b, size, func(v int) bool {
				start := make([]int, len(size))
				dec(v, lc.sel.dims, start)
				out = append(out, Rect{Start: start, Size: size})
				return true
			})
			continue
		}
		sums := lc.fit.window().sums(size)
		placements(lc.sel.dims, lc.sel.wrap, size, func(start []int) bool {
			if sums[enc(start, lc.sel.dims)] == 0 {
				out = append(out, Rect{Start: append([]int(nil), start...), Size: size})
			}
			return true
		})
	}
	return out, true
}

// after returns φ once the candidate's nodes are taken.
func (lc *levelCache) after(c *candidate) Fragmentation {
	f, _ := lc.afterAtLeast(c, 0, &takenSet{})
	return f
}

// afterAtLeast returns φ once the candidate's nodes are taken, or ok false
// as soon as φ is certainly below bound. Levels larger than the nodes left
// free cannot keep a rectangle and are skipped. cs is space for the
// candidate's set.
func (lc *levelCache) afterAtLeast(c *candidate, bound int64, cs *takenSet) (f Fragmentation, ok bool) {
	var fixed atomic.Int64
	fixed.Store(bound)
	return lc.afterAbove(c, &fixed, cs)
}

// afterAbove is afterAtLeast whose bound is read from rising at each
// level: a candidate ranked while others raise the largest φ found gives
// up at the first level where it is certainly below it, instead of
// computing the levels down to its own φ.
func (lc *levelCache) afterAbove(c *candidate, rising *atomic.Int64, cs *takenSet) (f Fragmentation, ok bool) {
	bound := rising.Load()
	n := int64(lc.s.N())
	left := lc.free - c.nodeCount()
	filled := false
	for i, v := range lc.vols {
		if v > left {
			continue
		}
		bound = max(bound, rising.Load())
		if n*int64(lc.most[i]) < bound {
			return Fragmentation{}, false
		}
		rs, done := lc.levelDone(i)
		if !done {
			return Fragmentation{}, false
		}
		if len(rs) == 0 {
			continue
		}
		if !filled {
			cs.fill(c, lc.sel.dims)
			filled = true
		}
		kept := 0
		for _, r := range rs {
			if !cs.hits(r) {
				kept++
			}
		}
		if kept > 0 {
			f := Fragmentation{Phi: n*int64(v) + int64(kept), LargestNodes: v, LargestCount: kept}
			return f, f.Phi >= bound
		}
	}
	return Fragmentation{}, bound <= 0
}

// takenSet is a candidate's node set prepared for rectangle tests.
type takenSet struct {
	dims  []int
	rect  Rect
	exact bool   // the set is the whole rectangle
	boxes []Rect // boxes of the set (a block's active nodes), or none
	coord []int  // other nodes' coordinates, len(dims) per node
	// space for the boxes' starts and sizes, and fillBlock's scratch
	ints, scratch []int
}

// fill prepares t for the candidate's set, reusing t's space.
func (t *takenSet) fill(c *candidate, dims []int) {
	t.dims, t.rect = dims, c.Rect
	t.boxes, t.coord = t.boxes[:0], t.coord[:0]
	t.exact = c.Holes == 0 && c.nodeCount() == c.Rect.Volume()
	if t.exact {
		return
	}
	if b := c.lazy; b != nil {
		t.fillBlock(b, dims)
		return
	}
	for _, l := range [][]int{c.Active, c.Transit} {
		for _, v := range l {
			for _, d := range dims {
				t.coord = append(t.coord, v%d)
				v /= d
			}
		}
	}
}

// fillBlock lists a block set's active boxes and transit coordinates.
func (t *takenSet) fillBlock(b *blockSet, dims []int) {
	n := len(dims)
	t.scratch = append(t.scratch[:0], make([]int, 3*n)...)
	// At most n boxes, a start and a size each: t.ints never moves.
	t.ints = slices.Grow(t.ints[:0], 2*n*n)
	b.forBoxes(t.scratch[:n], t.scratch[n:2*n], func(off, size []int) {
		at := len(t.ints)
		for i, d := range dims {
			t.ints = append(t.ints, (b.start[i]+off[i])%d)
		}
		t.ints = append(t.ints, size...)
		t.boxes = append(t.boxes, Rect{Start: t.ints[at : at+n], Size: t.ints[at+n : at+2*n]})
	})
	b.forTransit(t.scratch[2*n:], func(o []int) {
		for i, d := range dims {
			t.coord = append(t.coord, (b.start[i]+o[i])%d)
		}
	})
}

// overlap reports whether two rectangles share a node.
func overlap(a, b Rect, dims []int) bool {
	for i, d := range dims {
		if a.Size[i] == d || b.Size[i] == d {
			continue
		}
		// Cyclic distances from one start to the other (starts < d).
		ab := b.Start[i] - a.Start[i]
		if ab < 0 {
			ab += d
		}
		ba := a.Start[i] - b.Start[i]
		if ba < 0 {
			ba += d
		}
		if ab >= a.Size[i] && ba >= b.Size[i] {
			return false // disjoint in dimension i
		}
	}
	return true
}

// contains reports whether node coordinates c lie in r (Rect.Contains
// without divisions; coordinates and starts lie in [0, d)).
func contains(r Rect, c, dims []int) bool {
	for i, d := range dims {
		o := c[i] - r.Start[i]
		if o < 0 {
			o += d
		}
		if o >= r.Size[i] {
			return false
		}
	}
	return true
}

// hits reports whether the set takes a node of r: first a cheap test
// against the set's rectangle (exact when the set is the rectangle),
// then box by box and node by node.
func (t *takenSet) hits(r Rect) bool {
	dims := t.dims
	if !overlap(r, t.rect, dims) {
		return false
	}
	if t.exact {
		return true
	}
	for _, b := range t.boxes {
		if overlap(r, b, dims) {
			return true
		}
	}
	n := len(dims)
	for k := 0; k < len(t.coord); k += n {
		if contains(r, t.coord[k:k+n], dims) {
			return true
		}
	}
	return false
}

// fitLattice answers whether a rectangle size has a free placement.
// A size fits only if every size one smaller in one dimension fits, so
// most sizes of a fragmented state are settled without enumerating
// placements; the others look at their bitset of free starts (fitBits).
type fitLattice struct {
	dims  []int
	wrap  []bool
	grid  *grid
	state []int8   // per size (mixed radix of p_i−1): 0 unknown, 1 fits, 2 does not
	bits  *fitBits // made on first use
	probe int      // starts scan tries one by one (scanProbe)
	// witness is, per size, the start (node id) of a placement found
	// free, on this state or an earlier one (carried by the selector),
	// or −1.
	witness []int32
	s       *State
	win     *windowSums // made on first use
	// stop ends the scans (stopped is then set: sizes not settled stay
	// unknown).
	stop    func() bool
	stopped bool
}

// window returns the lattice's sliding sums of the state.
func (f *fitLattice) window() *windowSums {
	if f.win == nil {
		f.win = newWindowSums(f.s)
	}
	return f.win
}

func newFitLattice(dims []int, wrap []bool, g *grid) *fitLattice {
	f := &fitLattice{dims: dims, wrap: wrap, grid: g, state: make([]int8, vol(dims)), witness: make([]int32, vol(dims)), probe: scanProbe}
	for i := range f.witness {
		f.witness[i] = -1
	}
	return f
}

func (f *fitLattice) index(size []int) int {
	idx := 0
	for i := len(size) - 1; i >= 0; i-- {
		idx = idx*f.dims[i] + size[i] - 1
	}
	return idx
}

// scan looks for a free placement of size (lattice index idx) and
// records the first it finds (any: the witness only saves later scans):
// among its first f.probe starts (scanProbe), with the box's prefix-sum
// query, where a lightly used machine has one; else in the size's
// bitset of free starts (fitBits.free).
func (f *fitLattice) scan(idx int, size []int) bool {
	if f.stop != nil && f.stop() {
		f.stopped = true
		return false
	}
	found, n := false, 0
	placements(f.dims, f.wrap, size, func(start []int) bool {
		if n++; n > f.probe {
			return false
		}
		if f.grid.unavailable(start, size) == 0 {
			f.witness[idx], found = int32(enc(start, f.dims)), true
			return false
		}
		return true
	})
	if found {
		return true
	}
	fb := f.fitBits()
	fb.eachPlacement(fb.free(idx, size), size, func(v int) bool {
		f.witness[idx], found = int32(v), true
		return false
	})
	return found
}

// scanProbe is how many starts scan tries one by one before it makes a
// size's bitset of free starts.
const scanProbe = 256

// fitBits returns the lattice's bitsets of free starts, made on first
// use.
func (f *fitLattice) fitBits() *fitBits {
	if f.bits == nil {
		f.bits = newFitBits(f.s, f.dims, f.wrap)
	}
	return f.bits
}

// fits reports whether some placement of size is free.
func (f *fitLattice) fits(size []int) bool {
	idx := f.index(size)
	if f.state[idx] != 0 {
		return f.state[idx] == 1
	}
	ok := true
	smaller := make([]int, len(size))
	for i := range size {
		if size[i] == 1 {
			continue
		}
		copy(smaller, size)
		smaller[i]--
		if !f.fits(smaller) {
			if f.stopped {
				return false
			}
			ok = false
			break
		}
	}
	if ok {
		ok = false
		if w := f.witness[idx]; w >= 0 {
			// a placement free on an earlier state often still is
			st := make([]int, len(size))
			dec(int(w), f.dims, st)
			ok = f.grid.unavailable(st, size) == 0
		}
		if !ok {
			ok = f.scan(idx, size)
		}
	}
	if f.stopped {
		return false // unknown: not recorded
	}
	f.state[idx] = 2
	if ok {
		f.state[idx] = 1
	}
	return ok
}
