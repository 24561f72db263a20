//go:build long

package routing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// TestRAStarVariants is the R_A* fidelity experiment (docs/routing.md):
// the fault-tolerance gain of angara* over angara− per dimensionality for
// the construction variants (R_DOR CDG with or without reversal turns;
// candidates offered node by node or direction pair by direction pair),
// on every torus N ≤ 128 with ICN_TRIALS trials (default 5) per torus,
// and a check that tables built with each variant on random failures are
// deadlock-free. Run with
//
//	ICN_TRIALS=5 go test -tags long -run TestRAStarVariants -v ./routing
func TestRAStarVariants(t *testing.T) {
	trials := 5
	if s := os.Getenv("ICN_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	variants := []struct {
		name string
		v    starVariant
	}{
		{"R_DOR CDG, node order (current)", starVariant{}},
		{"no reversal turns, node order", starVariant{noReversal: true}},
		{"R_DOR CDG, direction order", starVariant{byDirection: true}},
		{"no reversal turns, direction order", starVariant{noReversal: true, byDirection: true}},
	}
	for _, v := range variants {
		rep, err := FaultExperiment(FaultOptions{Seed: 1, Trials: trials, variant: v.v})
		if err != nil {
			t.Fatal(err)
		}
		line := ""
		for _, r := range rep.Rows {
			line += fmt.Sprintf("  %dD %.1f %% (angara− %.2f, angara* %.2f)", r.Dims, r.Gain, r.MinusMean, r.StarMean)
		}
		t.Logf("%-38s%s", v.name, line)
		deadlockFreeTables(t, v.v)
	}
}

// deadlockFreeTables builds verified BFS tables with the variant on 4D
// tori with random failed channels.
func deadlockFreeTables(t *testing.T, v starVariant) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, spec := range []string{"3x3x2x2", "4x2x3x2", "2x2x2x4", "4x4x3"} {
		for rep := 0; rep < 5; rep++ {
			g, order, active, transit, _ := randomScenario(t, rng, spec, 0.06, rep%2 == 1, false, false)
			r, err := newTunedRouter(g, Rule{Kind: AngaraStar, Order: order}, func(tu *tuning) { tu.star = v })
			if err != nil {
				t.Fatal(err)
			}
			tb, err := r.Build(context.Background(), active, transit, BuildOptions{})
			var ue *UnreachableError
			if errors.As(err, &ue) {
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", spec, err) // includes a deadlock found by the verification
			}
			if !tb.DeadlockFree {
				t.Fatalf("%s: deadlock", spec)
			}
		}
	}
}
