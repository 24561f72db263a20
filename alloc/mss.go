package alloc

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
)

// Rect is an n-dimensional rectangle of a torus: Size[i] nodes from
// Start[i] in dimension i, wrapping around. A dimension taken whole
// (Size = d) always has Start 0.
type Rect struct {
	Start []int `json:"start"`
	Size  []int `json:"size"`
}

// Volume returns the number of nodes of r.
func (r Rect) Volume() int {
	v := 1
	for _, p := range r.Size {
		v *= p
	}
	return v
}

func (r Rect) String() string {
	var s, p []string
	for i := range r.Size {
		s = append(s, fmt.Sprint(r.Start[i]))
		p = append(p, fmt.Sprint(r.Size[i]))
	}
	return strings.Join(p, "x") + "@" + strings.Join(s, ".")
}

// Nodes appends r's node ids to buf (X fastest).
func (r Rect) Nodes(dims []int, buf []int) []int {
	n := len(dims)
	off := make([]int, n)
	c := make([]int, n)
	for {
		for i := range c {
			c[i] = (r.Start[i] + off[i]) % dims[i]
		}
		buf = append(buf, enc(c, dims))
		i := 0
		for ; i < n; i++ {
			off[i]++
			if off[i] < r.Size[i] {
				break
			}
			off[i] = 0
		}
		if i == n {
			return buf
		}
	}
}

// Contains reports whether node coordinates c lie in r.
func (r Rect) Contains(c, dims []int) bool {
	for i := range c {
		if (c[i]-r.Start[i]+dims[i])%dims[i] >= r.Size[i] {
			return false
		}
	}
	return true
}

// grid answers "how many unavailable nodes in this box" in O(2^n) with an
// n-dimensional prefix sum over the torus unrolled to twice its size.
type grid struct {
	dims   []int
	wrap   []bool
	ext    []int // extent of the unrolled array per dim (2d for rings)
	stride []int // strides of the prefix array (ext+1 per dim)
	pre    []int32
	corner [][]int // per corner mask: which dims take the far end
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
	n := len(g.dims)
	c := make([]int, n)
	x := make([]int, n)
	clear(g.pre)
	// Raw indicator at index x+1 (prefix arrays are 1-based).
	total := 1
	for i := range g.ext {
		total *= g.ext[i]
	}
	for k := 0; k < total; k++ {
		rem := k
		idx := 0
		for i := 0; i < n; i++ {
			x[i] = rem % g.ext[i]
			rem /= g.ext[i]
			c[i] = x[i] % g.dims[i]
			idx += (x[i] + 1) * g.stride[i]
		}
		if !s.Available(enc(c, g.dims)) {
			g.pre[idx] = 1
		}
	}
	// Prefix sums dimension by dimension.
	for i := 0; i < n; i++ {
		st := g.stride[i]
		for idx := range g.pre {
			if (idx/st)%(g.ext[i]+1) > 0 {
				g.pre[idx] += g.pre[idx-st]
			}
		}
	}
}

// unavailable counts unavailable nodes in the box start..start+size-1
// (start within [0, d), size ≤ d; for non-wrapping dims start+size ≤ d).
func (g *grid) unavailable(start, size []int) int {
	n := len(g.dims)
	switch {
	case n == 3:
		return g.unavailable3(start, size)
	case n > 16:
		return g.unavailableSlow(start, size)
	}
	// Corner idx = base + Σ over the far dimensions of size·stride; its
	// sign is − for an odd number of near dimensions.
	base := 0
	var far [16]int
	for i := 0; i < n; i++ {
		base += start[i] * g.stride[i]
		far[i] = size[i] * g.stride[i]
	}
	sum := int32(0)
	for mask := 0; mask < 1<<n; mask++ {
		idx := base
		for i := 0; i < n; i++ {
			if mask>>i&1 == 1 {
				idx += far[i]
			}
		}
		if (n-bits.OnesCount(uint(mask)))&1 == 1 {
			sum -= g.pre[idx]
		} else {
			sum += g.pre[idx]
		}
	}
	return int(sum)
}

// unavailable3 is unavailable for three dimensions, the corners written
// out.
func (g *grid) unavailable3(start, size []int) int {
	s0, s1, s2 := g.stride[0], g.stride[1], g.stride[2]
	b := start[0]*s0 + start[1]*s1 + start[2]*s2
	f0, f1, f2 := size[0]*s0, size[1]*s1, size[2]*s2
	p := g.pre
	sum := p[b+f0+f1+f2] - p[b+f1+f2] - p[b+f0+f2] - p[b+f0+f1] +
		p[b+f0] + p[b+f1] + p[b+f2] - p[b]
	return int(sum)
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

// Shapes returns every rectangle size of the torus, largest volume first
// (ties in lexicographic order).
func Shapes(dims []int) [][]int {
	var out [][]int
	p := make([]int, len(dims))
	var rec func(i int)
	rec = func(i int) {
		if i == len(dims) {
			out = append(out, append([]int(nil), p...))
			return
		}
		for x := 1; x <= dims[i]; x++ {
			p[i] = x
			rec(i + 1)
		}
	}
	rec(0)
	sort.SliceStable(out, func(a, b int) bool { return vol(out[a]) > vol(out[b]) })
	return out
}

func vol(p []int) int {
	v := 1
	for _, x := range p {
		v *= x
	}
	return v
}

// placements calls f for every start of a rectangle of the given size
// (whole dimensions start at 0; mesh dimensions stay inside the border).
// f returns false to stop.
func placements(dims []int, wrap []bool, size []int, f func(start []int) bool) {
	n := len(dims)
	start := make([]int, n)
	limit := make([]int, n)
	for i := range dims {
		switch {
		case size[i] == dims[i]:
			limit[i] = 1
		case wrap[i]:
			limit[i] = dims[i]
		default:
			limit[i] = dims[i] - size[i] + 1
		}
	}
	for {
		if !f(start) {
			return
		}
		i := 0
		for ; i < n; i++ {
			start[i]++
			if start[i] < limit[i] {
				break
			}
			start[i] = 0
		}
		if i == n {
			return
		}
	}
}

// MaximalFreeRectangles lists every maximal free sub-rectangle (MSS): a
// rectangle of available nodes that cannot grow in any direction, because
// the ring is complete or the next layer holds an unavailable node (or, on
// a mesh, the border). Exhaustive: O(N²·2ⁿ); for small tori and reports.
func MaximalFreeRectangles(s *State) []Rect {
	g := newGrid(s)
	var out []Rect
	n := len(s.dims)
	ext := make([]int, n)
	exs := make([]int, n)
	for _, size := range Shapes(s.dims) {
		placements(s.dims, s.wrap, size, func(start []int) bool {
			if g.unavailable(start, size) != 0 {
				return true
			}
			for i := 0; i < n; i++ {
				if size[i] == s.dims[i] {
					continue
				}
				copy(ext, size)
				ext[i]++
				// grow downwards
				copy(exs, start)
				exs[i] = start[i] - 1
				if s.wrap[i] {
					exs[i] = (exs[i] + s.dims[i]) % s.dims[i]
					if ext[i] == s.dims[i] {
						exs[i] = 0
					}
				}
				if exs[i] >= 0 && g.fits(exs, ext) && g.unavailable(exs, ext) == 0 {
					return true
				}
				// grow upwards
				copy(exs, start)
				if ext[i] == s.dims[i] {
					exs[i] = 0
				}
				if g.fits(exs, ext) && g.unavailable(exs, ext) == 0 {
					return true
				}
			}
			out = append(out, Rect{Start: append([]int(nil), start...), Size: append([]int(nil), size...)})
			return true
		})
	}
	return out
}

// Fragmentation is φ(I, S) = |N|·(nodes in the largest MSS) + (number of
// largest MSSs), with its two parts. Larger is better (less fragmented).
type Fragmentation struct {
	Phi          int64 `json:"phi"`
	LargestNodes int   `json:"largest_mss_nodes"`
	LargestCount int   `json:"largest_mss_count"`
}

// Phi computes the fragmentation score of the state. A free rectangle of
// the largest volume is necessarily maximal, so it suffices to find the
// largest volume with a free placement and count the free placements of
// that volume: shapes are tried in decreasing volume and the search stops
// at the first volume that has one.
func Phi(s *State) Fragmentation {
	g := newGrid(s)
	free := s.FreeCount()
	best, count := 0, 0
	for _, size := range Shapes(s.dims) { // by volume, descending
		v := vol(size)
		if v > free {
			continue
		}
		if best > 0 && v < best {
			break
		}
		placements(s.dims, s.wrap, size, func(start []int) bool {
			if g.unavailable(start, size) == 0 {
				best = v
				count++
			}
			return true
		})
	}
	return Fragmentation{Phi: int64(s.N())*int64(best) + int64(count), LargestNodes: best, LargestCount: count}
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

// wallShortcut enables splitByWall (tests turn it off to compare).
var wallShortcut = true

// splitByWall reports whether the available nodes of r (avail of them,
// the first m in r's order, X fastest, active and the others transit)
// certainly do not join the active nodes: some cross-section of r strictly
// inside a dimension that r does not take whole (no ring link joins r's
// two ends there) holds no available node, and both sides of it hold an
// active node. No link of the set crosses the wall, so the set is not
// reachable (the connectivity test on the listed nodes says the same).
func (g *grid) splitByWall(r Rect, avail, m int, ws *workerScratch) bool {
	if !wallShortcut {
		return false
	}
	total := vol(r.Size)
	ws.lo = append(ws.lo[:0], r.Start...)
	ws.hi = append(ws.hi[:0], r.Size...)
	for i, d := range g.dims {
		if r.Size[i] >= d || r.Size[i] < 3 {
			continue
		}
		layer, holes := total/r.Size[i], total-avail
		if holes < layer {
			continue // too few unavailable nodes for a wall
		}
		from := 1
		if holes == layer {
			// A wall would hold every unavailable node: it can only be
			// the first slab with one.
			from = g.firstHoleSlab(r, i, ws)
			if from < 1 {
				continue
			}
		}
		for k := from; k < r.Size[i]-1; k++ {
			ws.lo[i], ws.hi[i] = r.Start[i]+k, 1
			full := g.unavailable(ws.lo, ws.hi) == layer
			ws.lo[i], ws.hi[i] = r.Start[i], r.Size[i]
			if full && g.activeBothSides(r, i, k, avail, m, ws) {
				return true
			}
			if holes == layer {
				break
			}
		}
	}
	return false
}

// firstHoleSlab returns the least offset k of dimension i whose slab of
// r holds an unavailable node (r holds one), by bisection on the counts
// of the slabs before it (ws.lo/hi are r's box and are restored).
func (g *grid) firstHoleSlab(r Rect, i int, ws *workerScratch) int {
	lo, hi := 0, r.Size[i]-1 // the answer is in [lo, hi]
	for lo < hi {
		mid := (lo + hi) / 2
		ws.hi[i] = mid + 1 // slabs 0..mid
		if g.unavailable(ws.lo, ws.hi) > 0 {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	ws.hi[i] = r.Size[i]
	return lo
}

// activeBothSides reports whether both sides of the wall at offset k of
// dimension i of r hold an active node (a sufficient test; ws.lo/hi are
// r's box apart from dimension i and are restored). Either side has an
// active node when it has more available nodes than there are transit
// nodes. Or, in the first row of r (offset 0 in the dimensions above i,
// which comes first in r's order, its nodes before the wall first): when
// both sides of the row hold an available node and the side before the
// wall fewer than m, the first available node of each side is among the
// first m.
func (g *grid) activeBothSides(r Rect, i, k, avail, m int, ws *workerScratch) bool {
	defer func() {
		ws.lo[i], ws.hi[i] = r.Start[i], r.Size[i]
		copy(ws.hi[i+1:], r.Size[i+1:])
	}()
	layer := vol(r.Size) / r.Size[i]
	ws.lo[i], ws.hi[i] = r.Start[i], k
	before := k*layer - g.unavailable(ws.lo, ws.hi)
	if transit := avail - m; before > transit && avail-before > transit {
		return true
	}
	row := 1 // nodes of the first row per offset of dimension i
	for l := range i {
		row *= r.Size[l]
	}
	for l := i + 1; l < len(r.Size); l++ {
		ws.hi[l] = 1
	}
	a := k*row - g.unavailable(ws.lo, ws.hi)
	ws.lo[i], ws.hi[i] = r.Start[i]+k+1, r.Size[i]-k-1
	b := (r.Size[i]-k-1)*row - g.unavailable(ws.lo, ws.hi)
	return a >= 1 && b >= 1 && a < m
}
