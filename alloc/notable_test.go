package alloc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNoTableSameChoice compares decisions with and without NoTable on
// random states: the chosen set must be the same, and the shortcut must
// have been taken (no table built, no figures) in some of them.
func TestNoTableSameChoice(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 14))
	skipped := 0
	for _, spec := range []string{"torus:4x4x2", "torus:4x4x4", "torus:6x4x3"} {
		g, rt := angaraOn(t, spec)
		for trial := 0; trial < 25; trial++ {
			st, err := NewState(g)
			if err != nil {
				t.Fatal(err)
			}
			for id := 1; id <= trial%6; id++ {
				changeState(r, st, id)
			}
			m := 1 + r.IntN(st.FreeCount())
			for _, req := range []Request{
				{Nodes: m, Transit: r.IntN(m + 1), Algo: Improved},
				{Nodes: m, Transit: m, Algo: Improved, Fast: true},
			} {
				name := fmt.Sprintf("%s trial %d %+v", spec, trial, req)
				want, err := NewSelector(st).Select(st, rt, req)
				if err != nil {
					t.Fatal(name, err)
				}
				req.NoTable = true
				got, err := NewSelector(st).Select(st, rt, req)
				if err != nil {
					t.Fatal(name, err)
				}
				if (got.Chosen == nil) != (want.Chosen == nil) {
					t.Fatalf("%s: NoTable chose %v, with tables %v", name, got.Chosen, want.Chosen)
				}
				if got.Chosen == nil {
					continue
				}
				if !slices.Equal(got.Chosen.Active, want.Chosen.Active) || !slices.Equal(got.Chosen.Transit, want.Chosen.Transit) {
					t.Fatalf("%s: NoTable chose %v+%v, with tables %v+%v", name,
						got.Chosen.Active, got.Chosen.Transit, want.Chosen.Active, want.Chosen.Transit)
				}
				if got.Chosen.Figures == nil {
					skipped++
					if got.Tables != 0 {
						t.Fatalf("%s: no figures but %d tables built", name, got.Tables)
					}
				}
			}
		}
	}
	if skipped < 10 {
		t.Fatalf("the table was skipped only %d times", skipped)
	}
}

// TestExistsMatchesSelect checks that an Exists request finds a set
// exactly when the full request chooses one, on random states.
func TestExistsMatchesSelect(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	yes, no := 0, 0
	for _, spec := range []string{"torus:4x4x2", "torus:4x4x4", "torus:6x4x3"} {
		g, rt := angaraOn(t, spec)
		sel := NewSelector(&State{g: g, dims: g.Dims(), wrap: g.Wrap(), owner: make([]int32, g.NumNodes())})
		for trial := 0; trial < 40; trial++ {
			st, err := NewState(g)
			if err != nil {
				t.Fatal(err)
			}
			for id := 1; id <= 3+trial%8; id++ {
				changeState(r, st, id)
			}
			m := 1 + r.IntN(st.FreeCount())
			for _, algo := range []Algo{Improved, Baseline} {
				req := Request{Nodes: m, Transit: r.IntN(m/2 + 1), Algo: algo, Fast: true}
				want, err := NewSelector(st).Select(st, rt, req)
				if err != nil {
					t.Fatal(err)
				}
				req.Exists = true
				got, err := sel.Select(st, rt, req)
				if err != nil {
					t.Fatal(err)
				}
				if (got.Found > 0) != (want.Chosen != nil) || got.Chosen != nil {
					t.Fatalf("%s trial %d %+v: Exists found %d (chosen %v), the full request chose %v", spec, trial, req, got.Found, got.Chosen, want.Chosen)
				}
				if got.Found > 0 {
					yes++
				} else {
					no++
				}
			}
		}
	}
	if yes < 20 || no < 20 {
		t.Fatalf("%d placeable and %d unplaceable requests: too few of one kind", yes, no)
	}
}
