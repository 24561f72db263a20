package alloc

import (
	"fmt"
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
	for i := range dims {
		switch {
		case size[i] == dims[i]:
			limit[i] = 1
		case wrap[i]:
			limit[i] = dims[i]
		default:
			limit[i] = max(dims[i]-size[i]+1, 0)
		}
		n *= limit[i]
	}
	return n
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
