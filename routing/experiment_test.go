package routing

import (
	"reflect"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestFaultExperiment runs a tiny experiment with 1 and 2 workers (same
// result), and replays some trials through the public API: with the
// reported number of failures the whole machine is reachable, with one
// more it is not (angara− and angara*), and angara* never survives fewer.
func TestFaultExperiment(t *testing.T) {
	for _, unit := range []string{"link", "channel"} {
		testFaultExperiment(t, unit)
	}
}

func testFaultExperiment(t *testing.T, unit string) {
	o := FaultOptions{Seed: 3, Trials: 3, MaxNodes: 27, MaxSize: 4, MaxDims: 3, Sorted: true, Unit: unit}
	o.Workers = 1
	a, err := FaultExperiment(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Workers = 2
	b, err := FaultExperiment(o)
	if err != nil {
		t.Fatal(err)
	}
	a.Options.Workers, b.Options.Workers = 0, 0
	if !reflect.DeepEqual(a.Rows, b.Rows) || !reflect.DeepEqual(a.Tori, b.Tori) || !reflect.DeepEqual(a.Trials, b.Trials) {
		t.Fatal("results differ between 1 and 2 workers")
	}
	shapes, _ := FaultTori(o)
	if len(a.Tori) != len(shapes) || len(a.Rows) != 2 {
		t.Fatalf("%d tori, %d rows", len(a.Tori), len(a.Rows))
	}
	for ti, d := range shapes {
		g, err := topology.Grid(d, true, topology.GridOpts{})
		if err != nil {
			t.Fatal(err)
		}
		all := allNodes(g.NumNodes())
		for k := 0; k < o.Trials; k++ {
			got := a.Trials[ti*o.Trials+k]
			if got[1] < got[0] {
				t.Fatalf("%v trial %d: angara* %d < angara− %d", d, k, got[1], got[0])
			}
			units := g.NumLinks()
			if unit == "channel" {
				units *= 2
			}
			perm := faultOrder(nil, o.Seed, uint64(ti), uint64(k), units)
			for i, kind := range []Kind{AngaraMinus, AngaraStar} {
				for _, f := range []int{got[i], got[i] + 1} {
					if f > units {
						continue
					}
					var ok bool
					if unit == "link" { // through the public API
						h, err := g.WithFaults(perm[:f], nil)
						if err != nil {
							t.Fatal(err)
						}
						if ok, _, err = reachableIn(h, Rule{Kind: kind}, all, nil); err != nil {
							t.Fatal(err)
						}
					} else { // single channels cannot be failed in a topology.Graph
						tt, _ := newTorus(g)
						up := make([]bool, g.NumChannels())
						for c := range up {
							up[c] = true
						}
						for _, c := range perm[:f] {
							up[c] = false
						}
						r, err := newRouter(tt, up, Rule{Kind: kind}, defaultTuning())
						if err != nil {
							t.Fatal(err)
						}
						if ok, _, err = r.ReachableFirst(all, nil); err != nil {
							t.Fatal(err)
						}
					}
					if ok != (f == got[i]) {
						t.Fatalf("%v trial %d %s: reachable=%v with %d failures, experiment says %d survived", d, k, kind, ok, f, got[i])
					}
				}
			}
		}
	}
}

func TestFaultOptions(t *testing.T) {
	for _, o := range []FaultOptions{
		{Trials: -1}, {MaxSize: 1}, {Unit: "cable"}, {MinDims: 3, MaxDims: 2}, {MaxDims: 7}, {MaxNodes: 3}, {MaxNodes: 5000},
	} {
		if _, err := FaultExperiment(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	shapes, err := FaultTori(FaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for _, d := range shapes {
		n := 1
		for _, x := range d {
			if x < 2 || x > 8 {
				t.Fatalf("shape %v", d)
			}
			n *= x
		}
		if n > 128 {
			t.Fatalf("shape %v has %d nodes", d, n)
		}
		counts[len(d)]++
	}
	// every ordered tuple 2 ≤ d_i ≤ 8 with Π ≤ 128: 49 in 2D, 223 in 3D, 260 in 4D
	if counts[2] != 49 || counts[3] != 223 || counts[4] != 260 {
		t.Errorf("shape counts %v", counts)
	}
}

// TestBalanceExperiment: the comparison runs and its figures match tables
// built directly.
func TestBalanceExperiment(t *testing.T) {
	rep, err := BalanceExperiment(BalanceOptions{MaxNodes: 16, Sorted: true, Rule: Rule{Kind: AngaraStar}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tori) == 0 || rep.Rows[len(rep.Rows)-1].Dims != 0 {
		t.Fatalf("%+v", rep.Rows)
	}
	for _, bt := range rep.Tori {
		g, _ := topology.Grid(bt.Dims, true, topology.GridOpts{})
		tb, err := buildTable(g, Rule{Kind: AngaraStar}, allNodes(g.NumNodes()), nil, Baseline)
		if err != nil {
			t.Fatal(err)
		}
		if tb.Figures != bt.Baseline || bt.Loss != bt.BFS.BalanceFactor-bt.Baseline.BalanceFactor {
			t.Fatalf("%v: %+v vs %+v", bt.Dims, tb.Figures, bt.Baseline)
		}
	}
}

// TestFaultVariantsOrdered runs the fidelity variants on small tori and
// checks, trial by trial, what their definitions imply: angara− is the
// same in all; every R_A* variant survives at least as many failures as
// angara−; every sound variant (each of its dependencies closes no cycle
// in the R_DOR CDG) at most as many as the static one, which accepts every
// such dependency; and R_A, which allows every FS/LS transition, survives
// at least as many as any of them. Counted by bisection, angara* survives
// at least as many failures as up to its first loss, and at most as many
// as at its last reachable failure set.
func TestFaultVariantsOrdered(t *testing.T) {
	base := FaultOptions{Seed: 5, Trials: 3, MaxNodes: 24, MaxSize: 4, Sorted: true, Workers: 1}
	run := func(v starVariant) [][2]int {
		o := base
		o.variant = v
		rep, err := FaultExperiment(o)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Trials
	}
	static, upper := run(starVariant{static: true}), run(starVariant{ruleA: true})
	first, bisect, last := run(starVariant{}), run(starVariant{bisectStar: true}), run(starVariant{lastStar: true})
	for i := range first {
		if !(first[i][1] <= bisect[i][1] && bisect[i][1] <= last[i][1]) {
			t.Fatalf("trial %d: angara* survives %d to its first loss, %d by bisection, %d at the last", i, first[i][1], bisect[i][1], last[i][1])
		}
	}
	for _, v := range []starVariant{{}, {allCandidates: true}, {bTest: "dynamic"}, {incremental: true}, {shuffle: 2}} {
		got := run(v)
		for i, p := range got {
			if p[0] != static[i][0] || p[0] != upper[i][0] {
				t.Fatalf("%+v trial %d: angara− %d, %d, %d", v, i, p[0], static[i][0], upper[i][0])
			}
			if !(p[0] <= p[1] && p[1] <= static[i][1] && static[i][1] <= upper[i][1]) {
				t.Fatalf("%+v trial %d: angara− %d, variant %d, static %d, R_A %d", v, i, p[0], p[1], static[i][1], upper[i][1])
			}
		}
	}
}
