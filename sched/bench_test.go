package sched

import (
	"fmt"
	"testing"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

// trace3170 stands for the archive trace of issue 17: 3 170 jobs over two
// months on a 240-node torus. trace3170Load is a second stream of the same
// size (log-uniform sizes up to 64 nodes, offered load 0.8, runtimes
// overestimated 2x).
var (
	trace3170     = SyntheticParams{Jobs: 3170, Span: 2 * month, Seed: 1}
	trace3170Load = SyntheticParams{Jobs: 3170, Load: 0.8, MaxNodes: 64, Overestimate: 2, Seed: 17}
	stream100k    = SyntheticParams{Jobs: 100_000, Span: 44 * month, Seed: 1}
)

func transitEqual(m int) int { return m }

// replayBench is one replay benchmark: a machine (a torus with node
// selection under the angara* rules when algo is set, else flat:1024 or a
// fat tree), a policy and a stream.
type replayBench struct {
	name    string
	spec    string
	algo    alloc.Algo
	policy  Policy
	stream  SyntheticParams
	transit func(int) int
}

// BenchmarkReplay replays the streams issue 17 bounds: the 3 170-job
// stream on torus:4x6x10 (≤ 10 s for any policy) and 100 000 jobs on
// 1 024 nodes (≤ 5 min). On tori the time is node selection's (alloc_s is
// the time spent choosing nodes); flat:1024 and the fat tree measure the
// simulator itself.
func BenchmarkReplay(b *testing.B) {
	ease := Policy{Window: 8, Backfill: true}
	for _, tc := range []replayBench{
		{"3170on240/improved/fcfs", "torus:4x6x10", alloc.Improved, Policy{Window: 1}, trace3170, transitEqual},
		{"3170on240/improved/w8", "torus:4x6x10", alloc.Improved, Policy{Window: 8}, trace3170, transitEqual},
		{"3170on240/improved/easy", "torus:4x6x10", alloc.Improved, Policy{Window: 1, Backfill: true}, trace3170, transitEqual},
		{"3170on240/baseline/fcfs", "torus:4x6x10", alloc.Baseline, Policy{Window: 1}, trace3170, transitEqual},
		{"3170on240/baseline/easy", "torus:4x6x10", alloc.Baseline, Policy{Window: 1, Backfill: true}, trace3170, transitEqual},
		{"3170load/improved/w1", "torus:4x6x10", alloc.Improved, Policy{Window: 1}, trace3170Load, transitEqual},
		{"3170load/improved/w8-easy", "torus:4x6x10", alloc.Improved, ease, trace3170Load, transitEqual},
		{"3170load/baseline/w1", "torus:4x6x10", alloc.Baseline, Policy{Window: 1}, trace3170Load, transitEqual},
		{"100kon1024/torus-improved/fcfs", "torus:8x8x4x4", alloc.Improved, Policy{Window: 1}, stream100k, transitQuarter},
		{"100kon1024/torus-baseline/fcfs", "torus:8x8x4x4", alloc.Baseline, Policy{Window: 1}, stream100k, transitQuarter},
		{"100kon1024/flat/easy", "flat", "", ease, stream100k, nil},
		{"100kon1024/fattree:k=32,n=2/easy", "fattree:k=32,n=2", "", ease, stream100k, nil},
	} {
		b.Run(tc.name, func(b *testing.B) { benchReplay(b, tc) })
	}
}

func benchReplay(b *testing.B, tc replayBench) {
	m := benchMachine(b, tc)
	stream, err := Synthetic(tc.stream, m.Size())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := Simulate(Config{Machine: m, Policy: tc.policy}, stream)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Decisions), "decisions")
		b.ReportMetric(rep.Utilization, "U")
		b.ReportMetric(rep.AllocSeconds, "alloc_s")
	}
}

// benchMachine builds the benchmark's machine (with its own selector, so
// each benchmark starts with empty caches).
func benchMachine(b testing.TB, tc replayBench) Machine {
	if tc.spec == "flat" {
		m, err := NewFlatMachine(1024, nil)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	g, err := topology.Parse(tc.spec)
	if err != nil {
		b.Fatal(err)
	}
	if tc.algo == "" {
		m, err := NewTreeMachine(g)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	rt, err := alloc.NewAngaraRouter(g, "angara*")
	if err != nil {
		b.Fatal(err)
	}
	st, err := alloc.NewState(g)
	if err != nil {
		b.Fatal(err)
	}
	return NewTorusMachine(st, rt, tc.algo, tc.transit, 0)
}

// BenchmarkReplayBudget replays streams with a decision budget and
// compares each with the same replay without one: it reports the
// decisions the budget cut, the jobs whose start or nodes differ, and
// the change in utilization (pp) and mean wait (%). The default budget
// (10 s) on the 3 170-job streams of torus:4x6x10 and on the first 5 000
// jobs of the 100 000-job stream on torus:8x8x4x4 (T = m/4), and
// budgets far below a decision's time, to show what cutting costs.
// Cut decisions depend on timing, so those rows vary between runs.
func BenchmarkReplayBudget(b *testing.B) {
	first5000 := func(st *Stream) *Stream {
		c := *st
		c.Jobs = c.Jobs[:min(5000, len(c.Jobs))]
		return &c
	}
	for _, tc := range []struct {
		replayBench
		budgets []time.Duration
		cut     func(*Stream) *Stream
	}{
		{replayBench{"3170on240/improved/fcfs", "torus:4x6x10", alloc.Improved, Policy{Window: 1}, trace3170, transitEqual}, []time.Duration{alloc.DefaultBudget, 2 * time.Millisecond, 500 * time.Microsecond}, nil},
		{replayBench{"3170on240/improved/easy", "torus:4x6x10", alloc.Improved, Policy{Window: 1, Backfill: true}, trace3170, transitEqual}, []time.Duration{alloc.DefaultBudget}, nil},
		{replayBench{"3170load/improved/w8-easy", "torus:4x6x10", alloc.Improved, Policy{Window: 8, Backfill: true}, trace3170Load, transitEqual}, []time.Duration{alloc.DefaultBudget}, nil},
		{replayBench{"100k-first5000/improved/fcfs", "torus:8x8x4x4", alloc.Improved, Policy{Window: 1}, stream100k, transitQuarter}, []time.Duration{alloc.DefaultBudget, 10 * time.Millisecond, 2 * time.Millisecond}, first5000},
	} {
		m := benchMachine(b, tc.replayBench)
		stream, err := Synthetic(tc.stream, m.Size())
		if err != nil {
			b.Fatal(err)
		}
		if tc.cut != nil {
			stream = tc.cut(stream)
		}
		var want *Report
		var wantSeconds float64
		for _, budget := range tc.budgets {
			b.Run(fmt.Sprintf("%s/budget=%v", tc.name, budget), func(b *testing.B) {
				if want == nil {
					start := time.Now()
					if want, err = Simulate(Config{Machine: m.Clone(), Policy: tc.policy}, stream); err != nil {
						b.Fatal(err)
					}
					wantSeconds = time.Since(start).Seconds()
				}
				b.ResetTimer()
				for b.Loop() {
					mb := benchMachine(b, tc.replayBench).(*TorusMachine)
					mb.Budget = budget
					got, err := Simulate(Config{Machine: mb, Policy: tc.policy}, stream)
					if err != nil {
						b.Fatal(err)
					}
					differ := 0
					for i, r := range got.Schedule {
						w := want.Schedule[i]
						if r.Start != w.Start || fmt.Sprint(r.Nodes) != fmt.Sprint(w.Nodes) {
							differ++
						}
					}
					b.ReportMetric(float64(got.Decisions), "decisions")
					b.ReportMetric(float64(got.DecisionsCut), "cut")
					b.ReportMetric(float64(got.DecisionsSettled), "settled")
					b.ReportMetric(wantSeconds, "exhaustive-s")
					b.ReportMetric(float64(differ), "jobs-differ")
					b.ReportMetric(100*got.Utilization, "U-%")
					b.ReportMetric(100*(got.Utilization-want.Utilization), "dU-pp")
					b.ReportMetric(100*(got.MeanWait-want.MeanWait)/max(want.MeanWait, 1e-9), "dwait-%")
				}
			})
		}
	}
}
