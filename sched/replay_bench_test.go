package sched

import (
	"testing"

	"github.com/icn-hpc/icn/alloc"
)

// BenchmarkReplay replays a 3 170-job synthetic trace (sizes log-uniform up
// to 64 nodes, offered load 0.8, runtimes overestimated 2x) on torus:4x6x10
// with each algorithm and policy, with the Angara router and T = m as `icn sched simulate`
// does by default (the figure issue 17 bounds: ≤ 10 CPU-s per replay). alloc_s/op is the time spent choosing
// nodes.
func BenchmarkReplay(b *testing.B) {
	for _, tc := range []struct {
		name   string
		algo   alloc.Algo
		policy Policy
	}{
		{"improved/w1", alloc.Improved, Policy{Window: 1}},
		{"improved/w8-easy", alloc.Improved, Policy{Window: 8, Backfill: true}},
		{"baseline/w1", alloc.Baseline, Policy{Window: 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				st, _ := newCluster(b, "torus:4x6x10")
				rt, err := alloc.NewAngaraRouter(st.Graph(), "angara*")
				if err != nil {
					b.Fatal(err)
				}
				stream, err := Synthetic(SyntheticParams{Jobs: 3170, Load: 0.8, MaxNodes: 64, Overestimate: 2, Seed: 17}, st.N())
				if err != nil {
					b.Fatal(err)
				}
				rep, err := Simulate(Config{State: st, Router: rt, Policy: tc.policy, Algo: tc.algo,
					Transit: func(m int) int { return m }}, stream)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(rep.AllocSeconds, "alloc_s/op")
				b.ReportMetric(rep.Utilization, "util")
			}
		})
	}
}
