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
		s := stateOf(t, spec)
		switch trial % 3 {
		case 1:
			s = slabState(t, spec, 0.05*r.Float64(), r)
		case 2:
			s = randomState(t, spec, 0.1*r.Float64(), r)
		}
		sameWithout(t, tuning{noBlockCounting: true}, fmt.Sprintf("%s trial %d", spec, trial), s, trial%2 == 0, r)
	}
}
