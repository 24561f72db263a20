package routing

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/topology"
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
		hasSim:    make([]bool, a.nstates), // no state simulates another
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
	routerPairs(t, rng, 2, func(name string, g *topology.Graph, r, plain *Router) {
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
	})
	if merged == 0 {
		t.Fatal("no automaton had a state merged")
	}
}

// TestSimulatedStatesKeepSweeps checks that a sweep which skips the
// vertices a state simulating theirs has reached (reachAuto.sim) ends
// routes at the same nodes as one that visits every vertex, from every
// source of random sets of tori with failed links and mesh dimensions,
// under every rule, and that some sweeps visit fewer vertices.
func TestSimulatedStatesKeepSweeps(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 2))
	pruned := 0
	routerPairs(t, rng, 3, func(name string, g *topology.Graph, r, all *Router) {
		all.tune.noSimulation = true
		for range 6 {
			perm := rng.Perm(g.NumNodes())
			k := 2 + rng.IntN(g.NumNodes()-1)
			a := 1 + rng.IntN(k)
			active, transit := perm[:a], perm[a:k]
			s, sa := r.getScratch(), all.getScratch()
			if err := r.markSet(s, active, transit); err != nil {
				t.Fatal(err)
			}
			if err := all.markSet(sa, active, transit); err != nil {
				t.Fatal(err)
			}
			for _, src := range active {
				ep, epa := r.sweep(s, int32(src)), all.sweep(sa, int32(src))
				for _, v := range perm[:k] {
					if got, want := s.ended[s.at(int32(v))] == ep, sa.ended[sa.at(int32(v))] == epa; got != want {
						t.Fatalf("%s: sweep from %d ends at %d: %v, visiting every vertex %v", name, src, v, got, want)
					}
				}
				if len(s.stack) != 0 {
					t.Fatal("stack left")
				}
				if seen, seenAll := ones(s.seenBits), ones(sa.seenBits); seen > seenAll {
					t.Fatalf("%s: %d vertices visited, %d without skipping", name, seen, seenAll)
				} else if seen < seenAll {
					pruned++
				}
			}
			r.putScratch(s)
			all.putScratch(sa)
		}
	})
	if pruned == 0 {
		t.Fatal("no sweep skipped a vertex")
	}
}

// ones counts the bits set in b.
func ones(b []uint64) int {
	n := 0
	for _, x := range b {
		n += bits.OnesCount64(x)
	}
	return n
}

// routerPairs calls f with two routers of each rule (the second one
// for the caller to change) on each of four small tori, three times
// with linksPer·k random links failed (k = 0, 1, 2).
func routerPairs(t *testing.T, rng *rand.Rand, linksPer int, f func(name string, g *topology.Graph, r, other *Router)) {
	for _, spec := range []string{"6x5x4", "4x4x3x3", "5x4x2x2:mesh=Y,W", "4x3x2x3x2:mesh=W,V"} {
		for faults := range 3 {
			g := mustTorus(t, spec)
			var links []int
			for range linksPer * faults {
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
				other, err := NewRouter(g, Rule{Kind: kind})
				if err != nil {
					t.Fatal(name, err)
				}
				f(name, g, r, other)
			}
		}
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
