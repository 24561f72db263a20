package routing

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestReachableWithHintsMatchesBruteForce checks the single-pair search against
// brute-force route enumeration for every ordered pair of active nodes on
// small tori with random failures, orders, sets and every rule, and that
// ReachableWithHints answers as ReachableFirst does whatever pairs it is given first; and
// that straightRoute never claims a pair without a legal route (and
// claims many, not all, of those with one).
func TestReachableWithHintsMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	straights, others := 0, 0
	specs := []string{"4", "3x4", "4x2", "3x3", "2x3x2", "4x4x2", "4x3x2", "3x3x3",
		"4:mesh=X", "4x3x2:mesh=Z", "3x3:mesh=X,Y"}
	for _, spec := range specs {
		for rep := 0; rep < 4; rep++ {
			fail := []float64{0, 0.1, 0.25, 0.4}[rep]
			g, order, active, transit, inSet := randomScenario(t, rng, spec, fail, rep > 0, rng.IntN(3) == 0, rep == 3)
			if len(active) < 2 {
				continue
			}
			for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
				name := fmt.Sprintf("%s/fail=%v/%s/order=%v", spec, fail, kind, order)
				r, err := NewRouter(g, Rule{Kind: kind, Order: order})
				if err != nil {
					t.Fatal(name, err)
				}
				want := bruteForce(r, active, inSet)
				all, _, err := r.ReachableFirst(active, transit)
				if err != nil {
					t.Fatal(name, err)
				}
				for _, a := range active {
					for _, b := range active {
						if a == b {
							continue
						}
						p := [2]int{a, b}
						s := r.getScratch()
						if err := r.markSet(s, active, transit); err != nil {
							t.Fatal(err)
						}
						straight := r.straightRoute(s, a, b)
						r.putScratch(s)
						if straight && want[p] < 0 {
							t.Fatalf("%s: straightRoute found a route for %v, which has none", name, p)
						}
						if rep == 0 && !straight {
							// the whole fault-free torus holds every straight route
							t.Fatalf("%s: straightRoute found no route for %v", name, p)
						}
						if straight {
							straights++
						} else if want[p] >= 0 {
							others++
						}
						ok, bad, err := r.ReachableWithHints(active, transit, [][2]int{{b, b}, p})
						if err != nil {
							t.Fatal(name, err)
						}
						switch {
						case want[p] < 0 && (ok || bad != p):
							t.Fatalf("%s: pair %v has no legal route, ReachableWithHints gave %v %v", name, p, ok, bad)
						case want[p] >= 0 && ok != all:
							t.Fatalf("%s: ReachableWithHints %v, ReachableFirst %v", name, ok, all)
						case !ok && want[bad] >= 0:
							t.Fatalf("%s: ReachableWithHints reported pair %v, which has a route", name, bad)
						}
					}
				}
			}
		}
	}
	if straights < 1000 || others < 100 {
		t.Fatalf("straightRoute: %d pairs proven, %d reachable pairs not: the test exercises too little", straights, others)
	}
}

// TestReachableWithHintsLargeSets checks ReachableWithHints on sets of
// more than 64 active nodes (several batches of sources, the hint pairs'
// nodes taken first) against ReachableFirst, on tori with a few busy
// holes and failed links under every rule: the same answer, and a
// reported pair that has no route (by the single-pair search, itself
// checked against brute force above). ReachableFirst's pair is the one
// with the smallest source, then the smallest destination.
func TestReachableWithHintsLargeSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 5))
	hasRoute := func(r *Router, active, transit []int, p [2]int) bool {
		s := r.getScratch()
		defer r.putScratch(s)
		if err := r.markSet(s, active, transit); err != nil {
			t.Fatal(err)
		}
		return r.straightRoute(s, p[0], p[1]) || r.pairReach(s, int32(p[0]), int32(p[1]))
	}
	reachable, multi := 0, 0
	for _, spec := range []string{"8x8x4", "6x5x4", "5x4x3x2:mesh=W"} {
		for rep := range 6 {
			g := mustTorus(t, spec)
			var links []int
			for range rep % 3 {
				links = append(links, rng.IntN(g.NumLinks()))
			}
			g, err := g.WithFaults(links, nil)
			if err != nil {
				t.Fatal(err)
			}
			busy := map[int]bool{}
			for range rng.IntN(9) {
				busy[rng.IntN(g.NumNodes())] = true
			}
			var set []int
			for v := range g.NumNodes() {
				if !busy[v] {
					set = append(set, v)
				}
			}
			k := 65 + rng.IntN(len(set)-70)
			active, transit := set[:k], set[k:]
			for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
				name := fmt.Sprintf("%s/rep=%d/%s", spec, rep, kind)
				r, err := NewRouter(g, Rule{Kind: kind})
				if err != nil {
					t.Fatal(name, err)
				}
				want, first, err := r.ReachableFirst(active, transit)
				if err != nil {
					t.Fatal(name, err)
				}
				if want {
					reachable++
				} else {
					if hasRoute(r, active, transit, first) {
						t.Fatalf("%s: ReachableFirst reported pair %v, which has a route", name, first)
					}
					for _, a := range active {
						if a >= first[0] {
							break
						}
						for _, b := range active {
							if a != b && !hasRoute(r, active, transit, [2]int{a, b}) {
								t.Fatalf("%s: ReachableFirst reported %v, but %v has no route and a smaller source", name, first, [2]int{a, b})
							}
						}
					}
				}
				for range 4 {
					var pairs [][2]int
					for range rng.IntN(6) {
						pairs = append(pairs, [2]int{active[rng.IntN(k)], active[rng.IntN(k)]})
					}
					if !want && rng.IntN(2) == 0 {
						// a node that lacked a route, as a source
						pairs = append(pairs, [2]int{first[0], active[rng.IntN(k)]})
					}
					ok, bad, err := r.ReachableWithHints(active, transit, pairs)
					if err != nil {
						t.Fatal(name, err)
					}
					if ok != want {
						t.Fatalf("%s: ReachableWithHints %v, ReachableFirst %v", name, ok, want)
					}
					if !ok && hasRoute(r, active, transit, bad) {
						t.Fatalf("%s: ReachableWithHints reported pair %v, which has a route", name, bad)
					}
					if !ok && bad != first {
						multi++
					}
				}
			}
		}
	}
	if reachable == 0 || reachable == 90 || multi == 0 {
		t.Fatalf("%d of 90 sets reachable, %d answers with another pair than ReachableFirst's: the cases do not exercise both answers and the first batch", reachable, multi)
	}
}

// TestReachableWithHintsUntil checks that a stop that never fires leaves
// the answer as ReachableWithHints gives it, that one that fires ends
// a check of more than one batch of sources with ErrStopped after the
// batches it allowed, and that later checks answer as before.
func TestReachableWithHintsUntil(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 6))
	for _, kind := range []Kind{AngaraMinus, AngaraStar} {
		g := mustTorus(t, "8x8x4")
		r, err := NewRouter(g, Rule{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		stopped := 0
		for rep := range 4 {
			perm := rng.Perm(g.NumNodes())
			k := 130 + rng.IntN(100)
			active, transit := perm[:k], perm[k:k+rng.IntN(g.NumNodes()-k)]
			if rep == 0 {
				active, transit = perm, nil // the whole torus: reachable
			}
			want, wbad, err := r.ReachableWithHints(active, transit, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, gbad, err := r.ReachableWithHintsUntil(active, transit, nil, func() bool { return false })
			if err != nil || got != want || gbad != wbad {
				t.Fatalf("%v: never stopped: %v %v %v, want %v %v", kind, got, gbad, err, want, wbad)
			}
			asked := 0
			_, _, err = r.ReachableWithHintsUntil(active, transit, nil, func() bool { asked++; return asked > 1 })
			if want && !errors.Is(err, ErrStopped) {
				t.Fatalf("%v: stopped after one batch of a reachable set of %d: %v", kind, len(active), err)
			}
			if errors.Is(err, ErrStopped) {
				stopped++
			}
			if err != nil && !errors.Is(err, ErrStopped) {
				t.Fatal(err)
			}
			// A check stopped before its first batch, then the next
			// checks (on the scratch it gave back) answer as before.
			if _, _, err := r.ReachableWithHintsUntil(active, transit, nil, func() bool { return true }); !errors.Is(err, ErrStopped) {
				t.Fatalf("%v: stopped at once: %v", kind, err)
			}
			if again, err := r.Reachable(active, transit); err != nil || again != want {
				t.Fatalf("%v: after stopped checks: %v %v, want %v", kind, again, err, want)
			}
		}
		if stopped == 0 {
			t.Fatalf("%v: no check was stopped", kind)
		}
	}
}

// TestReachSetIndexing checks that the reachability checks give the same
// answers, and name the same pair, whether their arrays are indexed by
// node id (small networks) or by the set's own indices (large ones), on
// random sets of tori with meshes and failures under every rule.
func TestReachSetIndexing(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 7))
	defer func(d int) { denseEntries = d }(denseEntries)
	local := 0
	for _, spec := range []string{"6x5x4", "4x4x3:mesh=Z", "5x4x2x2:mesh=Y,W"} {
		g := mustTorus(t, spec)
		g, err := g.WithFaults([]int{rng.IntN(g.NumLinks()), rng.IntN(g.NumLinks())}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
			r, err := NewRouter(g, Rule{Kind: kind})
			if err != nil {
				t.Fatal(err)
			}
			for range 40 {
				perm := rng.Perm(g.NumNodes())
				k := 2 + rng.IntN(g.NumNodes()-2)
				a := 1 + rng.IntN(k)
				active, transit := perm[:a], perm[a:k]
				hints := [][2]int{{active[rng.IntN(a)], active[rng.IntN(a)]}}
				var oks [2]bool
				var bads, firsts [2][2]int
				for mode, dense := range []int{1 << 30, 0} {
					denseEntries = dense
					ok, bad, err := r.ReachableWithHints(active, transit, hints)
					if err != nil {
						t.Fatal(err)
					}
					ok2, first, err := r.ReachableFirst(active, transit)
					if err != nil || ok2 != ok {
						t.Fatalf("%s %v: ReachableFirst %v %v, with hints %v", spec, kind, ok2, err, ok)
					}
					oks[mode], bads[mode], firsts[mode] = ok, bad, first
				}
				if oks[0] != oks[1] || bads[0] != bads[1] || firsts[0] != firsts[1] {
					t.Fatalf("%s %v: by node id %v %v %v, by set index %v %v %v", spec, kind, oks[0], bads[0], firsts[0], oks[1], bads[1], firsts[1])
				}
				if !oks[1] {
					local++
				}
			}
		}
	}
	if local == 0 {
		t.Fatal("no set without routes was compared")
	}
}
