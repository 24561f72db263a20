package alloc

import (
	"math/rand/v2"
	"testing"
)

// TestGridCountsUnavailableNodes compares the prefix-sum grid's count of
// unavailable nodes in every rectangle the selector enumerates with a
// direct count, on tori and meshes with random busy nodes, after the
// grid is refilled for a new state (as a selector does between
// decisions).
func TestGridCountsUnavailableNodes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 21))
	for _, spec := range []string{"torus:4x6x10", "torus:3x5", "mesh:4x3x2", "torus:2x3x2x3", "mesh:3x4x2x2", "ring:7",
		"torus:3x2x3x2x2", "torus:3x2x2x2x3x2:mesh=W,U"} {
		s := stateOf(t, spec)
		sel := NewSelector(s)
		var g *grid
		for round, p := range []float64{0.2, 0.6} {
			s = slabState(t, spec, p, r)
			if round == 0 {
				g = newGrid(s)
			} else {
				g.fill(s)
			}
			eachRect(sel, s, func(rect Rect, avail []int) {
				if got, want := g.unavailable(rect.Start, rect.Size), rect.Volume()-len(avail); got != want {
					t.Fatalf("%s p=%v: rectangle %v has %d unavailable nodes, grid says %d", spec, p, rect, want, got)
				}
			})
		}
	}
}
