package alloc

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestFoldGridMatches compares the folded grid's answers with the
// grid's own (the corners of every dimension) at every box of random
// states of small tori of five and six dimensions with short trailing
// dimensions, rings and meshes among them, and again after the state
// changes (fill drops the fold, buildFold recomputes it).
func TestFoldGridMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 29))
	for _, spec := range []string{"torus:3x4x3x2x3x2:mesh=W,U", "torus:2x3x4x3x3x2", "mesh:3x2x3x2x2x3", "torus:3x3x2x2x2x2:mesh=X,V"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		dims := s.Dims()
		if !foldable(dims) {
			t.Fatalf("%s does not fold", spec)
		}
		gr := newGrid(s)
		for round := range 3 {
			for v := range s.N() {
				if r.IntN(3) == 0 {
					s.Occupy(round+1, []int{v})
				}
			}
			gr.fill(s)
			if gr.fold.Load() != nil {
				t.Fatalf("%s: fill kept the fold", spec)
			}
			gr.buildFold(2)
			f := gr.fold.Load()
			if f == nil {
				t.Fatalf("%s: no fold built", spec)
			}
			limit := make([]int, len(dims))
			boxes := 0
			forEachSize(dims, func(size []int) {
				placementLimits(dims, s.wrap, size, limit)
				placements(dims, s.wrap, size, func(st []int) bool {
					if got, want := f.unavailable(st, size), gr.unavailableSlow(st, size); got != want {
						t.Fatalf("%s round %d: box %v@%v: folded %d, grid %d", spec, round, size, st, got, want)
					}
					boxes++
					// the same box from the rings' second turn, where
					// the unrolled array holds it
					turn := slices.Clone(st)
					for i, d := range dims {
						if s.wrap[i] && st[i]+d+size[i] <= 2*d {
							turn[i] += d
						}
					}
					if got, want := f.unavailable(turn, size), gr.unavailableSlow(turn, size); got != want {
						t.Fatalf("%s round %d: box %v@%v: folded %d, grid %d", spec, round, size, turn, got, want)
					}
					return true
				})
			})
			if boxes == 0 {
				t.Fatalf("%s: no box", spec)
			}
		}
	}
	for _, dims := range [][]int{{8, 8, 4, 4}, {16, 16, 16, 12, 2}, {4, 3, 4, 3, 2}, {3, 3, 3, 4, 2, 2}, {24, 23, 24, 2, 4, 2}} {
		if foldable(dims) {
			t.Fatalf("%v folds", dims)
		}
	}
}

// forEachSize calls f with every box size that fits the dimensions.
func forEachSize(dims []int, f func(size []int)) {
	size := make([]int, len(dims))
	for i := range size {
		size[i] = 1
	}
	for {
		f(size)
		i := 0
		for ; i < len(dims); i++ {
			size[i]++
			if size[i] <= dims[i] {
				break
			}
			size[i] = 1
		}
		if i == len(dims) {
			return
		}
	}
}
