package routing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/internal/cdg"
	"github.com/icn-hpc/icn/topology"
)

// starCDG builds, with internal/cdg and independently of the condensation,
// the channel dependency graph of R_DOR on the live channels plus the
// dependencies R_A* accepted.
func starCDG(r *Router) *cdg.Graph {
	t := r.t
	g := cdg.New(len(r.up))
	for c := range r.up {
		if !r.up[c] {
			continue
		}
		di := t.chDir[c]
		w := int(t.nbAt(int(t.chSrc[c]), di))
		for dj := Dir(0); int(dj) < t.nd; dj++ {
			b := t.chAt(w, dj)
			if !live(r.up, b) {
				continue
			}
			if r.a.rank[dj] >= r.a.rank[di] || r.ExtraAllowed(c, dj) {
				tag := cdg.Turn
				if dj == di {
					tag = cdg.Straight
				}
				g.Add(int32(c), b, tag)
			}
		}
	}
	return g
}

// TestAngaraStar checks the R_A* construction: the dependency graph of
// R_DOR plus the accepted FS/LS dependencies has no cycle with a turn
// (Dally–Seitz with bubble rings), every rejected candidate would close
// such a cycle (the greedy is maximal), nothing is accepted on a
// fault-free torus (on one with mesh dimensions, whose lines close no
// ring, something is), and the bit-set closure and the search give the
// same result.
func TestAngaraStar(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, spec := range []string{"4x4", "5x3", "2x2", "4x3x2", "3x3x3", "2x2x2x2", "4x2x3x2",
		"4x4:mesh=X", "5x3:mesh=Y", "2x2:mesh=X", "4x3x2:mesh=Z", "3x3x3:mesh=X,Z", "2x2x2x2:mesh=Y,W", "4x4:mesh=X,Y",
		"4x4x2x3:mesh=Z,W"} {
		for _, frac := range []float64{0, 0.1, 0.25, 0.45} {
			g, order, _, _, _ := randomScenario(t, rng, spec, frac, false, rng.IntN(2) == 0, false)
			name := fmt.Sprintf("%s/fail=%v/order=%v", spec, frac, order)
			r, err := NewRouter(g, Rule{Kind: AngaraStar, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			offered, accepted := r.ExtraDependencies()
			if frac == 0 && r.t.rings && accepted != 0 {
				t.Errorf("%s: %d dependencies accepted on a fault-free torus", name, accepted)
			}
			if frac == 0 && !r.t.rings && accepted == 0 {
				t.Errorf("%s: nothing accepted on a torus with mesh dimensions", name)
			}
			cg := starCDG(r)
			if cyc := cg.Deadlock(true); cyc != nil {
				t.Fatalf("%s: R_A* dependency graph has a cycle with a turn: %s", name, r.CycleString(toInts(cyc)))
			}
			// maximality: every offered but rejected dependency closes a cycle
			tt := r.t
			rejected, seen := 0, 0
			for c := range r.up {
				if !r.up[c] {
					continue
				}
				di := tt.chDir[c]
				w := int(tt.nbAt(int(tt.chSrc[c]), di))
				for dj := Dir(0); int(dj) < tt.nd; dj++ {
					b := tt.chAt(w, dj)
					if !live(r.up, b) || r.a.rank[dj] >= r.a.rank[di] || (di.Neg() && !dj.Neg()) {
						continue
					}
					seen++
					if r.ExtraAllowed(c, dj) {
						continue
					}
					rejected++
					if !cg.Reaches(b, int32(c)) {
						t.Fatalf("%s: dependency %s→%s was rejected but closes no cycle", name, g.ChannelName(c), g.ChannelName(int(b)))
					}
				}
			}
			if seen != offered || rejected != offered-accepted {
				t.Fatalf("%s: offered %d accepted %d, recount %d rejected %d", name, offered, accepted, seen, rejected)
			}
			// the search mode agrees with the closure
			r2, err := newTunedRouter(g, Rule{Kind: AngaraStar, Order: order}, func(tu *tuning) { tu.closureLimit = 0 })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.star.extra, r2.star.extra) {
				t.Fatalf("%s: closure and search modes accept different dependencies", name)
			}
		}
	}
}

func toInts(xs []int32) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

// TestStarVariants checks the construction variants of the fidelity
// experiments on random failure sets: the sound ones (every candidate,
// random order, the seed's B test) leave no cycle with a turn, and the
// static test accepts everything the exact test and the B test accept (it
// tests against the R_DOR CDG, a subgraph of theirs, and B(uj,Dj) holds
// the direction of every channel a path from (uj,Dj) reaches).
func TestStarVariants(t *testing.T) {
	build := func(g *topology.Graph, order Order, v starVariant) *Router {
		r, err := newTunedRouter(g, Rule{Kind: AngaraStar, Order: order}, func(tu *tuning) { tu.star = v })
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, spec := range []string{"4x4", "5x3", "3x3x2", "4x3x2", "2x2x2x2", "3x2x2x2", "4x4:mesh=Y", "3x3x2:mesh=X,Z"} {
		for _, frac := range []float64{0.05, 0.15, 0.3} {
			g, order, _, _, _ := randomScenario(t, rng, spec, frac, false, rng.IntN(2) == 0, false)
			name := fmt.Sprintf("%s/fail=%v/order=%v", spec, frac, order)
			exact := build(g, order, starVariant{})
			static := build(g, order, starVariant{static: true})
			bt := build(g, order, starVariant{bTest: "dynamic"})
			for _, v := range []starVariant{{allCandidates: true}, {shuffle: 3}, {bTest: "dynamic"}} {
				if cyc := starCDG(build(g, order, v)).Deadlock(true); cyc != nil {
					t.Fatalf("%s %+v: a cycle with a turn", name, v)
				}
			}
			for c := range exact.star.extra {
				for d := Dir(0); int(d) < exact.t.nd; d++ {
					e, s, b := exact.ExtraAllowed(c, d), static.ExtraAllowed(c, d), bt.ExtraAllowed(c, d)
					if (e || b) && !s {
						t.Fatalf("%s: %s→%v accepted by the exact (%v) or B (%v) test but not by the static one", name, g.ChannelName(c), d, e, b)
					}
				}
			}
		}
	}
}
