package alloc

import (
	"slices"
	"sync/atomic"
)

// grid answers "how many unavailable nodes in this box" in O(2^n) with an
// n-dimensional prefix sum over the torus unrolled to twice its size.
type grid struct {
	dims   []int
	wrap   []bool
	ext    []int // extent of the unrolled array per dim (2d for rings)
	stride []int // strides of the prefix array (ext+1 per dim)
	pre    []int32
	// fold, when set, answers the queries (foldgrid.go); nil until
	// buildFold, and after fill.
	fold atomic.Pointer[foldGrid]
	// folded is the last fold built, kept for its memory.
	folded *foldGrid
}

func newGrid(s *State) *grid {
	n := len(s.dims)
	g := &grid{dims: s.dims, wrap: s.wrap, ext: make([]int, n), stride: make([]int, n)}
	size := 1
	for i, d := range s.dims {
		g.ext[i] = d
		if s.wrap[i] {
			g.ext[i] = 2 * d
		}
		g.stride[i] = size
		size *= g.ext[i] + 1
	}
	g.pre = make([]int32, size)
	g.fill(s)
	return g
}

// fill recomputes the prefix sums for the state.
func (g *grid) fill(s *State) {
	g.fold.Store(nil)
	g.fillIndicator(s)
	for i := range g.dims {
		g.prefixAlong(i)
	}
}

// fillIndicator writes 1 at the (1-based) prefix index of every unrolled
// cell whose torus node is unavailable, 0 elsewhere.
func (g *grid) fillIndicator(s *State) {
	n := len(g.dims)
	clear(g.pre)
	x := make([]int, n) // unrolled coordinates
	c := make([]int, n) // torus coordinates (x mod dims)
	idx, node := 0, 0   // prefix index of x+1, torus node of c
	nodeStride := make([]int, n)
	for i, p := 0, 1; i < n; i++ {
		idx += g.stride[i]
		nodeStride[i] = p
		p *= g.dims[i]
	}
	for {
		if !s.Available(node) {
			g.pre[idx] = 1
		}
		i := 0
		for ; i < n; i++ {
			x[i]++
			idx += g.stride[i]
			c[i]++
			node += nodeStride[i]
			if c[i] == g.dims[i] {
				c[i] = 0
				node -= g.dims[i] * nodeStride[i]
			}
			if x[i] < g.ext[i] {
				break
			}
			idx -= g.ext[i] * g.stride[i]
			node -= c[i] * nodeStride[i]
			x[i], c[i] = 0, 0
		}
		if i == n {
			return
		}
	}
}

// prefixAlong turns the array into prefix sums along dimension i: runs of
// stride cells are added to the next run, within each block of ext+1 runs.
func (g *grid) prefixAlong(i int) {
	st := g.stride[i]
	block := st * (g.ext[i] + 1)
	for base := 0; base < len(g.pre); base += block {
		for off := base + st; off < base+block; off += st {
			dst, src := g.pre[off:off+st], g.pre[off-st:off]
			for k := range dst {
				dst[k] += src[k]
			}
		}
	}
}

// unavailable counts unavailable nodes in the box start..start+size-1
// (start within [0, d), size ≤ d; for non-wrapping dims start+size ≤ d).
func (g *grid) unavailable(start, size []int) int {
	n := len(g.dims)
	if f := g.fold.Load(); f != nil {
		return f.unavailable(start, size)
	}
	switch {
	case n == 3:
		return g.unavailable3(start, size)
	case n == 4:
		return g.unavailable4(start, size)
	case n == 5:
		return g.unavailable5(start, size)
	case n == 6:
		return g.unavailable6(start, size)
	}
	return g.unavailableSlow(start, size)
}

// unavailable3 is unavailable for three dimensions, the corners written
// out.
func (g *grid) unavailable3(start, size []int) int {
	s0, s1, s2 := g.stride[0], g.stride[1], g.stride[2]
	b := start[0]*s0 + start[1]*s1 + start[2]*s2
	return int(g.corners3(b, size[0]*s0, size[1]*s1, size[2]*s2))
}

// unavailable4 is unavailable for four dimensions: the difference of the
// three-dimensional sums at the far and the near end of the fourth.
func (g *grid) unavailable4(start, size []int) int {
	s0, s1, s2, s3 := g.stride[0], g.stride[1], g.stride[2], g.stride[3]
	b := start[0]*s0 + start[1]*s1 + start[2]*s2 + start[3]*s3
	f0, f1, f2 := size[0]*s0, size[1]*s1, size[2]*s2
	return int(g.corners3(b+size[3]*s3, f0, f1, f2) - g.corners3(b, f0, f1, f2))
}

// unavailable5 is unavailable for five dimensions (Sequoia): the
// three-dimensional sums at the four combinations of near and far ends
// of the last two, added where both or neither end is far.
func (g *grid) unavailable5(start, size []int) int {
	s0, s1, s2, s3, s4 := g.stride[0], g.stride[1], g.stride[2], g.stride[3], g.stride[4]
	b := start[0]*s0 + start[1]*s1 + start[2]*s2 + start[3]*s3 + start[4]*s4
	f0, f1, f2, f3, f4 := size[0]*s0, size[1]*s1, size[2]*s2, size[3]*s3, size[4]*s4
	return int(g.corners3(b, f0, f1, f2) - g.corners3(b+f3, f0, f1, f2) -
		g.corners3(b+f4, f0, f1, f2) + g.corners3(b+f3+f4, f0, f1, f2))
}

// unavailable6 is unavailable for six dimensions (Tofu-D): as
// unavailable5 over the eight combinations of ends of the last three,
// added where an even number of them is near.
func (g *grid) unavailable6(start, size []int) int {
	s0, s1, s2, s3, s4, s5 := g.stride[0], g.stride[1], g.stride[2], g.stride[3], g.stride[4], g.stride[5]
	b := start[0]*s0 + start[1]*s1 + start[2]*s2 + start[3]*s3 + start[4]*s4 + start[5]*s5
	f0, f1, f2, f3, f4, f5 := size[0]*s0, size[1]*s1, size[2]*s2, size[3]*s3, size[4]*s4, size[5]*s5
	even := g.corners3(b+f3+f4+f5, f0, f1, f2) + g.corners3(b+f3, f0, f1, f2) +
		g.corners3(b+f4, f0, f1, f2) + g.corners3(b+f5, f0, f1, f2)
	odd := g.corners3(b, f0, f1, f2) + g.corners3(b+f3+f4, f0, f1, f2) +
		g.corners3(b+f3+f5, f0, f1, f2) + g.corners3(b+f4+f5, f0, f1, f2)
	return int(even - odd)
}

// corners3 is the inclusion–exclusion sum of the eight prefix entries at
// base b and offsets f0, f1, f2.
func (g *grid) corners3(b, f0, f1, f2 int) int32 {
	return corners3(g.pre, b, f0, f1, f2)
}

// corners3 is the inclusion–exclusion sum of the eight entries of p at
// base b and offsets f0, f1, f2.
func corners3(p []int32, b, f0, f1, f2 int) int32 {
	return p[b+f0+f1+f2] - p[b+f1+f2] - p[b+f0+f2] - p[b+f0+f1] +
		p[b+f0] + p[b+f1] + p[b+f2] - p[b]
}

// unavailableSlow is unavailable for any number of dimensions.
func (g *grid) unavailableSlow(start, size []int) int {
	n := len(g.dims)
	sum := int32(0)
	for mask := 0; mask < 1<<n; mask++ {
		idx := 0
		sign := int32(1)
		for i := 0; i < n; i++ {
			if mask>>i&1 == 1 {
				idx += (start[i] + size[i]) * g.stride[i]
			} else {
				idx += start[i] * g.stride[i]
				sign = -sign
			}
		}
		sum += sign * g.pre[idx]
	}
	return int(sum)
}

// fits reports whether the box is within the grid (mesh borders).
func (g *grid) fits(start, size []int) bool {
	for i := range start {
		if !g.wrap[i] && start[i]+size[i] > g.dims[i] {
			return false
		}
	}
	return true
}

// availableBox reports whether the available nodes of r (avail of them)
// form a box, and returns it (corner in [0, d)). It finds the bounding
// box of the available nodes slab by slab from the prefix sums; the nodes
// form a box exactly when that bounding box holds no unavailable node.
func (g *grid) availableBox(r Rect, avail int, ws *workerScratch) (Rect, bool) {
	n := len(g.dims)
	if avail == 0 {
		return Rect{}, false
	}
	ws.lo = append(ws.lo[:0], r.Start...)
	ws.hi = append(ws.hi[:0], r.Size...)
	total := vol(r.Size)
	slabFree := func(i, k int) bool { // slab at offset k of dimension i has an available node
		ws.lo[i], ws.hi[i] = r.Start[i]+k, 1
		u := g.unavailable(ws.lo, ws.hi)
		ws.lo[i], ws.hi[i] = r.Start[i], r.Size[i]
		return u < total/r.Size[i]
	}
	var loA, sizeA [16]int // no allocation unless the nodes form a box
	lo, size := loA[:], sizeA[:]
	if n > len(loA) {
		lo, size = make([]int, n), make([]int, n)
	}
	bv := 1
	for i := range n {
		for !slabFree(i, lo[i]) {
			lo[i]++
		}
		hi := r.Size[i] - 1
		for !slabFree(i, hi) {
			hi--
		}
		size[i] = hi - lo[i] + 1
		bv *= size[i]
	}
	if bv != avail {
		return Rect{}, false
	}
	for i := range n {
		ws.lo[i] = r.Start[i] + lo[i]
	}
	if g.unavailable(ws.lo, size[:n]) != 0 {
		return Rect{}, false
	}
	box := Rect{Start: make([]int, n), Size: slices.Clone(size[:n])}
	for i, d := range g.dims {
		box.Start[i] = ws.lo[i] % d
	}
	return box, true
}
