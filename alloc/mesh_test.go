package alloc

import (
	"math/rand/v2"
	"testing"
)

// TestMeshRectanglesNeverWrap: on tori with mesh dimensions, placements
// start every rectangle so that it stays inside each mesh dimension (and
// lists each placement once: d starts along a ring, d−size+1 along a
// mesh line, one for a whole dimension), maximal free rectangles never
// cross a mesh end, and neither do the rectangles of chosen sets, whose
// nodes lie inside them.
func TestMeshRectanglesNeverWrap(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 43))
	insideMesh := func(rc Rect, dims []int, wrap []bool) bool {
		for i, d := range dims {
			if !wrap[i] && rc.Start[i]+rc.Size[i] > d {
				return false
			}
		}
		return true
	}
	for trial := 0; trial < 60; trial++ {
		spec := []string{"torus:4x3x2:mesh=Z", "torus:4x4x2:mesh=X", "torus:5x4:mesh=Y", "torus:3x2x2x2:mesh=Y,W"}[trial%4]
		s := randomState(t, spec, 0.5*r.Float64(), r)
		dims, wrap := s.Dims(), s.wrap
		if trial < 4 {
			for _, size := range Shapes(dims) {
				want := 1
				for i, d := range dims {
					switch {
					case size[i] == d:
					case wrap[i]:
						want *= d
					default:
						want *= d - size[i] + 1
					}
				}
				got := 0
				placements(dims, wrap, size, func(st []int) bool {
					if rc := (Rect{Start: st, Size: size}); !insideMesh(rc, dims, wrap) {
						t.Fatalf("%s: placement %v crosses a mesh end", spec, rc)
					}
					got++
					return true
				})
				if got != want {
					t.Fatalf("%s: %d placements of %v, want %d", spec, got, size, want)
				}
			}
		}
		for _, rc := range MaximalFreeRectangles(s) {
			if !insideMesh(rc, dims, wrap) {
				t.Fatalf("%s: maximal free rectangle %v crosses a mesh end", spec, rc)
			}
		}
		sel := NewSelector(s)
		m := 1 + r.IntN(8)
		res, err := sel.Select(s, graphRouter{G: s.Graph()}, Request{Nodes: m, Transit: r.IntN(3)})
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Chosen; c != nil {
			if !insideMesh(c.Rect, dims, wrap) {
				t.Fatalf("%s: chosen rectangle %v crosses a mesh end", spec, c.Rect)
			}
			c0 := make([]int, len(dims))
			for _, v := range append(append([]int(nil), c.Active...), c.Transit...) {
				dec(v, dims, c0)
				if !c.Rect.Contains(c0, dims) {
					t.Fatalf("%s: node %v outside the chosen rectangle %v", spec, c0, c.Rect)
				}
			}
		}
	}
}
