package routing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// plainStates is reachability's automaton without merged states: every
// state of r.a its own (what mergeStates must answer like).
func plainStates(r *Router) reachAuto {
	a := r.a
	ra := reachAuto{
		nstates:   a.nstates,
		begin:     int32(a.begin),
		topo:      a.topo,
		self:      a.self,
		canEnd:    a.canEnd,
		in:        a.in,
		moveStart: r.moveStart,
		moves:     r.moves,
	}
	return ra
}

// TestMergedStatesKeepAnswers checks reachability with merged states
// (mergeStates) against the automaton's own states: the sources that
// miss, the first missing pair, single pairs and sweeps, on random sets
// of small tori with failed links and mesh dimensions (where R_A*'s
// conditional moves depend on the entering direction), under every rule.
func TestMergedStatesKeepAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 1))
	merged := 0
	for _, spec := range []string{"6x5x4", "4x4x3x3", "5x4x2x2:mesh=Y,W", "4x3x2x3x2:mesh=W,V"} {
		for faults := range 3 {
			g := mustTorus(t, spec)
			var links []int
			for range 2 * faults {
				links = append(links, rng.IntN(g.NumLinks()))
			}
			g, err := g.WithFaults(links, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
				name := fmt.Sprintf("%s/faults=%d/%s", spec, len(links), kind)
				r, err := NewRouter(g, Rule{Kind: kind})
				if err != nil {
					t.Fatal(name, err)
				}
				plain, err := NewRouter(g, Rule{Kind: kind})
				if err != nil {
					t.Fatal(name, err)
				}
				plain.ra = plainStates(plain)
				if r.ra.nstates < r.a.nstates {
					merged++
				}
				for range 25 {
					perm := rng.Perm(g.NumNodes())
					k := 2 + rng.IntN(g.NumNodes()-1)
					a := 1 + rng.IntN(k)
					active, transit := perm[:a], perm[a:k]
					want, wantBad, err := plain.MissingFrom(active, transit, nil)
					if err != nil {
						t.Fatal(name, err)
					}
					got, bad, err := r.MissingFrom(active, transit, nil)
					if err != nil {
						t.Fatal(name, err)
					}
					if !slices.Equal(got, want) || bad != wantBad {
						t.Fatalf("%s: %d states merged into %d miss %v %v, the automaton's own %v %v", name, r.a.nstates, r.ra.nstates, got, bad, want, wantBad)
					}
					for range 4 {
						p := [2]int{active[rng.IntN(a)], active[rng.IntN(a)]}
						w, _, err := plain.ReachableWithHints(active, transit, [][2]int{p})
						if err != nil {
							t.Fatal(name, err)
						}
						o, _, err := r.ReachableWithHints(active, transit, [][2]int{p})
						if err != nil || o != w {
							t.Fatalf("%s: with hint %v merged %v %v, own states %v", name, p, o, err, w)
						}
						if p[0] == p[1] {
							continue
						}
						// The route of fewest transit nodes, then hops.
						wp, err := plain.LegalPath(p[0], p[1], active, transit)
						if err != nil {
							t.Fatal(name, err)
						}
						gp, err := r.LegalPath(p[0], p[1], active, transit)
						if err != nil || (gp == nil) != (wp == nil) || len(gp) != len(wp) || outside(gp, active) != outside(wp, active) {
							t.Fatalf("%s: legal path %v→%v merged %v %v, own states %v", name, p[0], p[1], gp, err, wp)
						}
					}
				}
			}
		}
	}
	if merged == 0 {
		t.Fatal("no automaton had a state merged")
	}
}

// TestMergedStatesCount pins what merging saves where it matters: under
// angara* on fault-free 4D and 5D tori the states that accept the same
// continuations are many.
func TestMergedStatesCount(t *testing.T) {
	for _, tc := range []struct {
		spec       string
		own, merge int
	}{
		{"8x8x4x4", 90, 37},
		{"16x16x16x12x2", 254, 70},
		{"4x6x10", 34, 20},
		{"24x23x24x2x3x2:mesh=W,U", 742, 135},
	} {
		r, err := NewRouter(mustTorus(t, tc.spec), Rule{Kind: AngaraStar})
		if err != nil {
			t.Fatal(err)
		}
		if r.a.nstates != tc.own || r.ra.nstates != tc.merge {
			t.Errorf("%s: %d states merged into %d, want %d into %d", tc.spec, r.a.nstates, r.ra.nstates, tc.own, tc.merge)
		}
	}
}

// outside counts the nodes of path that set lacks.
func outside(path, set []int) int {
	n := 0
	for _, v := range path {
		if !slices.Contains(set, v) {
			n++
		}
	}
	return n
}
