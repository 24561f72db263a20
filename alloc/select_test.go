package alloc

import (
	"math/rand/v2"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

func TestSelectInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 60; trial++ {
		spec := []string{"torus:4x4x2", "torus:4x3x3", "torus:3x3x2x2", "torus:4x4"}[trial%4]
		s := randomState(t, spec, 0.4*r.Float64(), r)
		rt := GraphRouter{G: s.Graph()}
		sel := NewSelector(s)
		m := 1 + r.IntN(8)
		T := r.IntN(4)
		for _, algo := range []Algo{Improved, Baseline} {
			res, err := sel.Select(s, rt, Request{Nodes: m, Transit: T, Algo: algo})
			if err != nil {
				t.Fatal(err)
			}
			if res.Chosen == nil {
				if res.Found != 0 || res.Reason == "" {
					t.Fatalf("no choice but found=%d reason=%q", res.Found, res.Reason)
				}
				continue
			}
			c := res.Chosen
			if len(c.Active) != m || len(c.Transit) > T {
				t.Fatalf("%s: %d active %d transit for m=%d T=%d", algo, len(c.Active), len(c.Transit), m, T)
			}
			seen := map[int]bool{}
			for _, v := range append(append([]int(nil), c.Active...), c.Transit...) {
				if !s.Available(v) || seen[v] {
					t.Fatalf("%s: chose unavailable or duplicate node %d", algo, v)
				}
				seen[v] = true
			}
			if ok, _ := rt.Reachable(c.Active, c.Transit); !ok {
				t.Fatalf("%s: chosen set not reachable", algo)
			}
			if algo == Baseline {
				if c.Holes != 0 || len(c.Active)+len(c.Transit) != c.Rect.Volume() || !baselineShape(c.Rect.Size, s.Dims()) {
					t.Fatalf("baseline chose %v with %d holes", c.Rect, c.Holes)
				}
			}
			// φ of the chosen set equals φ recomputed from scratch.
			after := s.Clone()
			after.Occupy(99, append(append([]int(nil), c.Active...), c.Transit...))
			if f := Phi(after); f != c.Frag {
				t.Fatalf("%s: φ after %+v, recomputed %+v", algo, c.Frag, f)
			}
		}
		// The improved algorithm finds at least every baseline solution's
		// size class: never fewer transit nodes for baseline.
		imp, _ := sel.Select(s, rt, Request{Nodes: m, Transit: T, Algo: Improved})
		base, _ := sel.Select(s, rt, Request{Nodes: m, Transit: T, Algo: Baseline})
		if base.Chosen != nil && imp.Chosen == nil {
			t.Fatalf("baseline placed m=%d T=%d but improved did not", m, T)
		}
		if base.Chosen != nil && len(imp.Chosen.Transit) > len(base.Chosen.Transit) {
			t.Fatalf("improved uses more transit nodes than baseline")
		}
		if imp.Found < base.Found {
			t.Fatalf("improved found %d < baseline %d", imp.Found, base.Found)
		}
	}
}

func TestSelectHolesAndFaults(t *testing.T) {
	g, _ := topology.Parse("torus:4x4")
	s, _ := NewState(g)
	// Busy node in the middle of the only 3x3 area: improved may use a
	// 2x4 strip or a rectangle with a hole, baseline needs a whole
	// rectangle with sides ≤ 2 or = 4.
	s.Occupy(1, []int{g.NodeAt([]int{1, 1})})
	sel := NewSelector(s)
	rt := GraphRouter{G: g}
	res, err := sel.Select(s, rt, Request{Nodes: 8, Transit: 1, Algo: Improved})
	if err != nil || res.Chosen == nil {
		t.Fatalf("%v %+v", err, res)
	}
	if len(res.Chosen.Transit) != 0 {
		t.Errorf("improved chose %d transit nodes where a whole 2x4 strip exists", len(res.Chosen.Transit))
	}
	// A failed link inside a rectangle disqualifies it for the baseline.
	h, _ := g.ApplyFaults("0.0+X", "")
	s2, _ := NewState(h)
	res, _ = NewSelector(s2).Select(s2, GraphRouter{G: h}, Request{Nodes: 16, Algo: Baseline})
	if res.Chosen != nil {
		t.Errorf("baseline allocated the whole torus across a failed link")
	}
	res, _ = NewSelector(s2).Select(s2, GraphRouter{G: h}, Request{Nodes: 16, Algo: Improved})
	if res.Chosen == nil {
		t.Errorf("improved refused the whole torus although it stays connected")
	}
	// Too large.
	res, _ = sel.Select(s, rt, Request{Nodes: 16})
	if res.Chosen != nil || res.Reason == "" {
		t.Errorf("16 nodes placed on a torus with one busy node")
	}
	if _, err := sel.Select(s, rt, Request{Nodes: 0}); err == nil {
		t.Error("zero nodes accepted")
	}
}
