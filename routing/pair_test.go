package routing

import (
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
