package multiring

import (
	"math"
	"slices"
	"testing"
)

// bruteForce balances every duplex step set containing ±1 and returns them
// sorted like Search.
func bruteForce(t *testing.T, n, k int) []Candidate {
	t.Helper()
	h := (n - 1) / 2
	var all []Candidate
	comb := make([]int, k-1)
	var rec func(i, from int)
	rec = func(i, from int) {
		if i == k-1 {
			steps := append([]int{1}, comb...)
			var signed []int
			for _, s := range steps {
				signed = append(signed, s, -s)
			}
			m, err := New(n, signed)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, Candidate{Steps: slices.Clone(steps), Balanced: m.Balanced().Effective(),
				Shortest: m.Shortest().Effective(), Bound: m.UpperBound(), Cable: Cable(steps)})
			return
		}
		for x := from; x <= h; x++ {
			comb[i] = x
			rec(i+1, x+1)
		}
	}
	rec(0, 2)
	sortCandidates(all)
	return all
}

// Without isomorphism reduction (any MaxCable switches it off) the pruned
// parallel search returns exactly the brute-force top list.
func TestSearchMatchesBruteForce(t *testing.T) {
	for _, c := range [][2]int{{9, 4}, {16, 4}, {16, 6}, {21, 6}, {24, 8}, {31, 6}} {
		n, rings := c[0], c[1]
		want := bruteForce(t, n, rings/2)
		got, err := Search(SearchOptions{N: n, Rings: rings, Top: 4, MaxCable: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		want = want[:min(4, len(want))]
		if len(got.Best) != len(want) {
			t.Fatalf("N=%d rings=%d: %d results, want %d", n, rings, len(got.Best), len(want))
		}
		for i := range want {
			g, w := got.Best[i], want[i]
			if !slices.Equal(g.Steps, w.Steps) || math.Abs(g.Balanced-w.Balanced) > 1e-9 || g.Cable != w.Cable {
				t.Fatalf("N=%d rings=%d #%d: got %v C=%g, brute force %v C=%g", n, rings, i, g.Steps, g.Balanced, w.Steps, w.Balanced)
			}
		}
		// With the isomorphism reduction the best capacity is within the
		// heuristic's labelling sensitivity of the brute force and never
		// above it.
		red, err := Search(SearchOptions{N: n, Rings: rings, Top: 1})
		if err != nil {
			t.Fatal(err)
		}
		if b := red.Best[0].Balanced; b > want[0].Balanced+1e-9 || b < 0.97*want[0].Balanced {
			t.Fatalf("N=%d rings=%d: reduced search best %g, brute force %g", n, rings, b, want[0].Balanced)
		}
		if red.Sets > got.Sets {
			t.Fatalf("isomorphism reduction enumerated more sets (%d > %d)", red.Sets, got.Sets)
		}
	}
}

func TestSearchDeterministicAcrossWorkers(t *testing.T) {
	a, err := Search(SearchOptions{N: 40, Rings: 8, Top: 6, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Search(SearchOptions{N: 40, Rings: 8, Top: 6, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Best {
		if !slices.Equal(a.Best[i].Steps, b.Best[i].Steps) || a.Best[i].Balanced != b.Best[i].Balanced {
			t.Fatalf("#%d: 1 worker %v, 2 workers %v", i, a.Best[i], b.Best[i])
		}
	}
	if a.Sets != b.Sets {
		t.Fatalf("sets %d vs %d", a.Sets, b.Sets)
	}
}

// Seed table 2.4: within the cable of the seed's set (laid along ±1) the
// seed's growable multiring is the best the search finds.
func TestSearchReproducesTable24UnderCable(t *testing.T) {
	for _, c := range []struct {
		n, rings int
		seed     []int
	}{{16, 4, []int{1, 3}}, {32, 8, []int{1, 2, 3, 7}}, {64, 10, []int{1, 2, 3, 5, 7}}} {
		r, err := Search(SearchOptions{N: c.n, Rings: c.rings, Top: 1, MaxCable: Cable(c.seed)})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Best[0].Steps, c.seed) {
			t.Errorf("N=%d rings=%d cable≤%d: best %v, seed %v", c.n, c.rings, Cable(c.seed), r.Best[0].Steps, c.seed)
		}
	}
}

func TestSearchBadInput(t *testing.T) {
	for _, o := range []SearchOptions{{N: 16, Rings: 5}, {N: 16, Rings: 0}, {N: 2, Rings: 2}, {N: 8, Rings: 10}, {N: 16, Rings: 4, Include: []int{8}}, {N: 16, Rings: 4, Include: []int{2, 3}}} {
		if _, err := Search(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestCombinations(t *testing.T) {
	for n := 0; n <= 9; n++ {
		for k := 0; k <= n; k++ {
			total := binom(n, k)
			c := unrank(n, k, 0)
			for i := int64(0); i < total; i++ {
				if u := unrank(n, k, i); !slices.Equal(u, c) {
					t.Fatalf("C(%d,%d) #%d: unrank %v, iteration %v", n, k, i, u, c)
				}
				nextComb(c, n)
			}
		}
	}
}

func BenchmarkSearch128x12(b *testing.B) {
	for b.Loop() {
		if _, err := Search(SearchOptions{N: 128, Rings: 12}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearch128x10(b *testing.B) {
	for b.Loop() {
		if _, err := Search(SearchOptions{N: 128, Rings: 10}); err != nil {
			b.Fatal(err)
		}
	}
}
