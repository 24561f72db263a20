package alloc

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReusedSelectorMatchesFresh runs a sequence of decisions on one
// selector (its reachability cache filled by earlier decisions) and checks
// each choice against a fresh selector's on the same state.
func TestReusedSelectorMatchesFresh(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 17))
	for _, spec := range []string{"torus:4x4x2", "torus:4x3x3", "torus:4x4x4"} {
		st := stateOf(t, spec)
		g := st.Graph()
		rt, err := NewAngaraRouter(g, "angara*")
		if err != nil {
			t.Fatal(err)
		}
		sel := NewSelector(st)
		for job := 1; job <= 40; job++ {
			if st.Busy() > st.N()/2 || r.IntN(3) == 0 && st.Busy() > 0 {
				st.Release(1 + r.IntN(job))
			}
			m := 1 + r.IntN(st.FreeCount()/2+1)
			req := Request{Nodes: m, Transit: m, Algo: Improved, Fast: true}
			got, err := sel.Select(st, rt, req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := NewSelector(st).Select(st, rt, req)
			if err != nil {
				t.Fatal(err)
			}
			if (got.Chosen == nil) != (want.Chosen == nil) {
				t.Fatalf("%s job %d: reused chose %v, fresh %v", spec, job, got.Chosen, want.Chosen)
			}
			if got.Chosen == nil {
				continue
			}
			if !slices.Equal(got.Chosen.Active, want.Chosen.Active) || !slices.Equal(got.Chosen.Transit, want.Chosen.Transit) {
				t.Fatalf("%s job %d: reused chose %v+%v, fresh %v+%v", spec, job,
					got.Chosen.Active, got.Chosen.Transit, want.Chosen.Active, want.Chosen.Transit)
			}
			if err := st.Occupy(job, append(slices.Clone(got.Chosen.Active), got.Chosen.Transit...)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestHashIndexMatchesMap compares the cache's hash index with a map
// under random stores, overwrites, look-ups (hashes drawn from a small
// range, so that probes collide) and clears.
func TestHashIndexMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 11))
	var x hashIndex
	want := map[uint64]uint32{}
	for i := range 200_000 {
		h := r.Uint64N(5000) * 0x9e3779b97f4a7c15 // spread, with repeats
		if r.IntN(3) == 0 {
			h &= 0xff // many equal low bits: long probes
		}
		switch k := r.IntN(100); {
		case k < 45:
			e := uint32(1 + r.IntN(1<<20))
			x.set(h, e)
			want[h] = e
		case k < 99:
			if got := x.get(h); got != want[h] {
				t.Fatalf("step %d: get(%#x) = %d, want %d", i, h, got, want[h])
			}
		default:
			x.clear()
			clear(want)
		}
	}
}
