package alloc

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestFigureCacheMatchesFresh makes one selector answer requests of many
// job sizes while the state changes, on fault-free tori (where the router
// is translation invariant and classes share their figures across
// decisions), and compares each answer, with its table figures, with a
// fresh selector's. The cache must be used, and some classes must win
// with figures that were cached unverified.
func TestFigureCacheMatchesFresh(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 3))
	hits, late := 0, 0
	for _, spec := range []string{"torus:4x4x2x2", "torus:6x4x3"} {
		g, rt := angaraOn(t, spec)
		st, err := NewState(g)
		if err != nil {
			t.Fatal(err)
		}
		sel := NewSelector(st)
		for step := 1; step <= 40; step++ {
			changeState(r, st, step)
			// Neighbouring job sizes meet the same shapes.
			m0 := 1 + r.IntN(10)
			for m := m0; m < m0+3; m++ {
				req := Request{Nodes: m, Transit: []int{0, (m + 3) / 4, m}[r.IntN(3)], Algo: Improved}
				sameAsFresh(t, fmt.Sprintf("%s step %d %+v", spec, step, req), sel, st, rt, req)
			}
		}
		hits += sel.figures.hits
		late += sel.figures.late
	}
	if hits < 50 || late < 5 {
		t.Fatalf("figure cache: %d hits, %d classes verified when they won: the test does not exercise it", hits, late)
	}
}
