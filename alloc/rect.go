package alloc

import (
	"cmp"
	"fmt"
	"slices"
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

// Nodes appends r's node ids to buf (X fastest). Each row along X adds
// its base id to the X offsets, so a node costs an addition.
func (r Rect) Nodes(dims []int, buf []int) []int {
	n := len(dims)
	if n == 0 {
		return buf
	}
	xs := make([]int, r.Size[0])
	for k := range xs {
		xs[k] = (r.Start[0] + k) % dims[0]
	}
	off := make([]int, n)
	stride := make([]int, n)
	stride[0] = 1
	for i := 1; i < n; i++ {
		stride[i] = stride[i-1] * dims[i-1]
	}
	buf = slices.Grow(buf, vol(r.Size))
	for {
		row := 0
		for i := 1; i < n; i++ {
			row += (r.Start[i] + off[i]) % dims[i] * stride[i]
		}
		for _, x := range xs {
			buf = append(buf, row+x)
		}
		i := 1
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

// Shapes returns every rectangle size of the torus, largest volume first
// (ties in lexicographic order).
func Shapes(dims []int) [][]int {
	n := len(dims)
	count := 1
	for _, d := range dims {
		count *= d
	}
	// Lexicographic order (the last dimension fastest) in one backing
	// array, then a stable sort by volume.
	all := make([]int, count*n)
	vols := make([]int, count)
	p := make([]int, n)
	for i := range p {
		p[i] = 1
	}
	for k := range count {
		copy(all[k*n:], p)
		vols[k] = vol(p)
		for i := n - 1; i >= 0; i-- {
			if p[i]++; p[i] <= dims[i] {
				break
			}
			p[i] = 1
		}
	}
	idx := make([]int32, count)
	for k := range idx {
		idx[k] = int32(k)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(vols[b], vols[a]) })
	out := make([][]int, count)
	for k, i := range idx {
		out[k] = all[int(i)*n : int(i)*n+n : int(i)*n+n]
	}
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
	placementsBelow(dims, wrap, size, dims, f)
}

// placementsBelow is placements restricted to starts below cap in each
// dimension.
func placementsBelow(dims []int, wrap []bool, size, cap []int, f func(start []int) bool) {
	n := len(dims)
	start := make([]int, n)
	limit := make([]int, n)
	placementLimits(dims, wrap, size, limit)
	for i := range limit {
		limit[i] = min(limit[i], cap[i])
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

// placementLimits fills limit with the number of starts of a rectangle of
// the given size per dimension, as placements enumerates them, and
// returns the number of placements.
func placementLimits(dims []int, wrap []bool, size, limit []int) int {
	n := 1
	for i, d := range dims {
		limit[i] = startsAlong(d, wrap[i], size[i])
		n *= limit[i]
	}
	return n
}

// startsAlong is the number of starts of a side of p nodes along a
// dimension of d nodes: one when it is whole, d around a ring, the
// positions inside the border of a mesh.
func startsAlong(d int, wrap bool, p int) int {
	switch {
	case p == d:
		return 1
	case wrap:
		return d
	}
	return max(d-p+1, 0)
}

// placementRange calls f for the placements of the given size with
// indices lo..hi-1 in the order placements enumerates them (the first
// dimension fastest); f returns false to stop.
func placementRange(dims []int, wrap []bool, size []int, lo, hi int, f func(start []int) bool) {
	n := len(dims)
	limit := make([]int, n)
	placementLimits(dims, wrap, size, limit)
	start := make([]int, n)
	for i, x := 0, lo; i < n; i++ {
		start[i] = x % limit[i]
		x /= limit[i]
	}
	for k := lo; k < hi; k++ {
		if !f(start) {
			return
		}
		for i := 0; i < n; i++ {
			if start[i]++; start[i] < limit[i] {
				break
			}
			start[i] = 0
		}
	}
}
