package alloc

// levelCache lists the free rectangles of a state by volume, largest
// first, computing each volume level on demand. φ after an allocation is
// then found from the first level that still has a rectangle the
// allocation misses.
type levelCache struct {
	sel    *Selector
	s      *State
	vols   []int     // distinct volumes ≤ free nodes, descending
	shapes [][][]int // per volume: the shapes
	rects  [][]Rect  // per level, once computed
	done   []bool
	coord  []int
}

func newLevelCache(sel *Selector, s *State) *levelCache {
	lc := &levelCache{sel: sel, s: s, coord: make([]int, len(sel.dims))}
	free := s.FreeCount()
	for _, sh := range sel.shapes { // sorted by volume, descending
		v := vol(sh)
		if v > free {
			continue
		}
		if len(lc.vols) == 0 || lc.vols[len(lc.vols)-1] != v {
			lc.vols = append(lc.vols, v)
			lc.shapes = append(lc.shapes, nil)
		}
		lc.shapes[len(lc.shapes)-1] = append(lc.shapes[len(lc.shapes)-1], sh)
	}
	lc.rects = make([][]Rect, len(lc.vols))
	lc.done = make([]bool, len(lc.vols))
	return lc
}

// level returns today's free rectangles of the i-th volume (the selector's
// grid holds today's state).
func (lc *levelCache) level(i int) []Rect {
	if lc.done[i] {
		return lc.rects[i]
	}
	g := lc.sel.grid
	var out []Rect
	for _, size := range lc.shapes[i] {
		placements(lc.sel.dims, lc.sel.wrap, size, func(start []int) bool {
			if g.unavailable(start, size) == 0 {
				out = append(out, Rect{Start: append([]int(nil), start...), Size: size})
			}
			return true
		})
	}
	lc.rects[i], lc.done[i] = out, true
	return out
}

// after returns φ once the candidate's nodes are taken.
func (lc *levelCache) after(c *Candidate) Fragmentation {
	n := lc.s.N()
	for i := range lc.vols {
		rs := lc.level(i)
		left := 0
		for _, r := range rs {
			if !lc.hits(r, c) {
				left++
			}
		}
		if left > 0 {
			return Fragmentation{Phi: int64(n)*int64(lc.vols[i]) + int64(left), LargestNodes: lc.vols[i], LargestCount: left}
		}
	}
	return Fragmentation{}
}

// hits reports whether the candidate takes a node of r: first a cheap
// test against the candidate's rectangle, then node by node.
func (lc *levelCache) hits(r Rect, c *Candidate) bool {
	dims := lc.sel.dims
	for i, d := range dims {
		if r.Size[i] == d || c.Rect.Size[i] == d {
			continue
		}
		if (c.Rect.Start[i]-r.Start[i]+d)%d >= r.Size[i] && (r.Start[i]-c.Rect.Start[i]+d)%d >= c.Rect.Size[i] {
			return false // disjoint in dimension i
		}
	}
	for _, l := range [][]int{c.Active, c.Transit} {
		for _, v := range l {
			dec(v, dims, lc.coord)
			if r.Contains(lc.coord, dims) {
				return true
			}
		}
	}
	return false
}
