package sched

import (
	"testing"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

// benchReplay replays a synthetic stream the size of the archive trace of
// issue 17 (3 170 jobs) on a 240-node torus with the CLI's defaults
// (angara* rules, T = m).
func benchReplay(b *testing.B, spec string, jobs int, span float64, algo alloc.Algo, pol Policy, transit func(int) int) {
	g, err := topology.Parse(spec)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := alloc.NewAngaraRouter(g, "angara*")
	if err != nil {
		b.Fatal(err)
	}
	st, err := alloc.NewState(g)
	if err != nil {
		b.Fatal(err)
	}
	stream, err := Synthetic(SyntheticParams{Jobs: jobs, Span: span, Seed: 1}, st.N())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := Simulate(Config{State: st, Router: rt, Algo: algo, Policy: pol, Transit: transit}, stream)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Decisions), "decisions")
		b.ReportMetric(rep.Utilization, "U")
	}
}

func transitEqual(m int) int { return m }

// Issue 17's target: ≤ 10 s for any policy.
func BenchmarkReplay3170On240(b *testing.B) {
	for _, tc := range []struct {
		name string
		algo alloc.Algo
		pol  Policy
	}{
		{"improved/fcfs", alloc.Improved, Policy{Window: 1}},
		{"improved/w8", alloc.Improved, Policy{Window: 8}},
		{"improved/easy", alloc.Improved, Policy{Window: 1, Backfill: true}},
		{"baseline/fcfs", alloc.Baseline, Policy{Window: 1}},
		{"baseline/easy", alloc.Baseline, Policy{Window: 1, Backfill: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchReplay(b, "torus:4x6x10", 3170, 2*month, tc.algo, tc.pol, transitEqual)
		})
	}
}

// Issue 17's target: 100 000 jobs on 1 024 nodes in ≤ 5 min. The torus
// case is bound by node selection (alloc); the flat and fat-tree cases
// measure the simulator itself, with EASY backfilling.
func BenchmarkReplay100kOn1024(b *testing.B) {
	b.Run("torus-improved/fcfs", func(b *testing.B) {
		benchReplay(b, "torus:8x8x4x4", 100_000, 44*month, alloc.Improved, Policy{Window: 1}, func(m int) int { return (m + 3) / 4 })
	})
	for _, spec := range []string{"flat", "fattree:k=32,n=2"} {
		b.Run(spec+"/easy", func(b *testing.B) {
			var m Machine
			if spec == "flat" {
				m, _ = NewFlatMachine(1024, nil)
			} else {
				g, err := topology.Parse(spec)
				if err != nil {
					b.Fatal(err)
				}
				if m, err = NewTreeMachine(g); err != nil {
					b.Fatal(err)
				}
			}
			stream, err := Synthetic(SyntheticParams{Jobs: 100_000, Span: 44 * month, Seed: 1}, m.Size())
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				rep, err := Simulate(Config{Machine: m, Policy: Policy{Window: 8, Backfill: true}}, stream)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(rep.Utilization, "U")
			}
		})
	}
}
