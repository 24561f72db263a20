package alloc

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Counting the blocks of a pruned size changes no decision: on idle tori,
// tori with busy slabs and with random busy nodes, under the Angara rules
// and plain connectivity, every count and the chosen set are those of
// the full examination.
func TestBlockCountingSameDecision(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 4))
	for trial := 0; trial < 72; trial++ {
		spec := []string{"torus:6x5x4", "torus:8x4x4", "torus:4x4x3x2", "torus:8x8"}[trial%4]
		var s *State
		switch trial % 3 {
		case 0:
			s = stateOf(t, spec)
		case 1:
			s = slabState(t, spec, 0.05*r.Float64(), r)
		default:
			s = randomState(t, spec, 0.1*r.Float64(), r)
		}
		var rt Router = GraphRouter{G: s.Graph()}
		if trial%2 == 0 {
			var err error
			if rt, err = NewAngaraRouter(s.Graph(), "angara*"); err != nil {
				t.Fatal(err)
			}
		}
		m := 1 + r.IntN(s.FreeCount()/2)
		req := Request{Nodes: m, Transit: r.IntN(m/2 + 2), Algo: Improved}
		got, err := NewSelector(s).Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		blockCounting = false
		want, err := NewSelector(s).Select(s, rt, req)
		blockCounting = true
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, fmt.Sprintf("%s trial %d m=%d T=%d", spec, trial, req.Nodes, req.Transit), got, want)
	}
}
