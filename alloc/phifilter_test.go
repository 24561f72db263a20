package alloc

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestPhiFilterSameChoice compares Fast decisions with and without the φ
// filter on random states of small tori and meshes (busy boxes, as jobs
// leave them, and scattered busy nodes) under angara* and angara: the
// same set, with the same φ after allocation and the same table figures,
// whether or not the tables are built, with one worker or two, on fresh
// selectors and on one reused across the decisions, with each
// placement's exact φ (examined from the largest φ down) and without.
func TestPhiFilterSameChoice(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 5))
	specs := []string{"torus:4x4x4", "torus:6x4x2", "torus:5x3x4", "torus:8x4", "torus:4x4x2x2", "torus:4x6x3",
		"torus:4x3x2:mesh=Z", "torus:3x2x2x3:mesh=Y,W"}
	filtered, decided := 0, 0
	var skips atomic.Int64              // placements examined by φ, left out below a candidate's
	reused := map[string][2]*Selector{} // per torus: with and without the filter
	for trial := range 600 {
		spec := specs[trial%len(specs)]
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		busy := map[int]bool{}
		for range r.IntN(5) { // jobs: boxes
			size := make([]int, len(s.dims))
			st := make([]int, len(s.dims))
			for i, d := range s.dims {
				size[i], st[i] = 1+r.IntN(d), r.IntN(d)
			}
			for _, v := range (Rect{Start: st, Size: size}).Nodes(s.dims, nil) {
				busy[v] = true
			}
		}
		for range r.IntN(4) {
			busy[r.IntN(s.N())] = true
		}
		var list []int
		for v := range busy {
			list = append(list, v)
		}
		if len(list) == s.N() {
			continue
		}
		if err := s.Occupy(1, list); err != nil {
			t.Fatal(err)
		}
		rt, err := NewAngaraRouter(g, []string{"angara*", "angara"}[trial%2])
		if err != nil {
			t.Fatal(err)
		}
		m := 1 + r.IntN(max(1, s.FreeCount()*2/3))
		req := Request{Nodes: m, Transit: r.IntN(m + 1), Fast: true, NoTable: trial%3 != 0}
		workers := 1 + trial%2
		sel, plain := NewSelector(s), NewSelector(s)
		if trial%4 == 3 {
			if _, ok := reused[spec]; !ok {
				reused[spec] = [2]*Selector{sel, plain}
			}
			sel, plain = reused[spec][0], reused[spec][1]
		}
		plain.Workers, plain.tune.noPhiFilter = workers, true
		sel.tune.noExactPhi = trial%5 == 4
		sel.tune.barSkips = &skips
		want, err := plain.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		sel.Workers = workers
		got, err := sel.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s busy %v m=%d T=%d notable=%v", spec, list, m, req.Transit, req.NoTable)
		if (got.Chosen == nil) != (want.Chosen == nil) {
			t.Fatalf("%s: with the filter chose %+v, without %+v", name, got.Chosen, want.Chosen)
		}
		if want.Chosen == nil {
			continue
		}
		decided++
		if got.Distinct < want.Distinct {
			filtered++
		}
		if !reflect.DeepEqual(got.Chosen, want.Chosen) || got.Examined != want.Examined || got.Complete != want.Complete {
			t.Fatalf("%s: with the filter chose %+v (examined %d), without %+v (examined %d)", name, got.Chosen, got.Examined, want.Chosen, want.Examined)
		}
	}
	t.Logf("the filter left sets out in %d of %d decisions; %d placements left out below a candidate's φ", filtered, decided, skips.Load())
	if skips.Load() == 0 {
		t.Fatal("no placement was left out below a candidate's φ: the cases exercise too little")
	}
	if filtered < decided/4 {
		t.Fatalf("the filter left sets out in %d of %d decisions: the cases exercise too little", filtered, decided)
	}
}
