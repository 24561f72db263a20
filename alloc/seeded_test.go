package alloc

import (
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

// TestSeedMemoSameSeeds checks that the seed search finds the same seeds
// when the placements an earlier pass found not to be seeds are skipped
// (seedMemo, with the starts poorStarts passed over, from the folded
// grid where it folds) as when every pass asks the unfolded grid about
// them all (plainScan), on random busy states of small tori, and that
// the memo did skip placements.
func TestSeedMemoSameSeeds(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 5))
	specs := []string{"torus:4x4x4", "torus:6x4x2", "torus:4x4x2x2", "torus:5x3x4", "torus:4x3x2:mesh=Z", "torus:3x2x2x3:mesh=Y,W", "torus:3x3x2x2x3x2:mesh=W,U"}
	var skips atomic.Int64
	found := 0
	for trial := range 400 {
		spec := specs[trial%len(specs)]
		s := randomState(t, spec, 0.2+0.4*r.Float64(), r)
		rt, err := NewAngaraRouter(s.g, "angara*")
		if err != nil {
			t.Fatal(err)
		}
		m := 1 + r.IntN(max(1, s.FreeCount()/2))
		req := Request{Nodes: m, Transit: r.IntN(m/2 + 2), Budget: time.Hour}
		var seeds [2][]seed
		for k, memo := range []bool{false, true} {
			sel := NewSelector(s)
			sel.tune.forceBounded = true
			sel.tune.noSeedMemo, sel.tune.plainScan = !memo, !memo
			if memo {
				sel.tune.seedSkips = &skips
			}
			sel.tune.onSeeds = func(sd []seed) { seeds[k] = append([]seed(nil), sd...) }
			if _, err := sel.Select(s, rt, req); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(seeds[0], seeds[1]) {
			t.Fatalf("%s trial %d m=%d T=%d: seeds %+v without the memo, %+v with it", spec, trial, m, req.Transit, seeds[0], seeds[1])
		}
		if len(seeds[0]) > 0 {
			found++
		}
	}
	if found == 0 || skips.Load() == 0 {
		t.Fatalf("%d decisions found seeds, the memo skipped %d placements", found, skips.Load())
	}
	t.Logf("%d decisions found seeds; the memo skipped %d placements", found, skips.Load())
}
