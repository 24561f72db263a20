package sched

import (
	"testing"

	"github.com/icn-hpc/icn/alloc"
)

func BenchmarkZZFirst(b *testing.B) {
	tc := replayBench{"x", "torus:8x8x4x4", alloc.Improved, Policy{Window: 1}, stream100k, transitQuarter}
	m := benchMachine(b, tc)
	stream, err := Synthetic(tc.stream, m.Size())
	if err != nil {
		b.Fatal(err)
	}
	c := *stream
	c.Jobs = c.Jobs[:5000]
	b.ResetTimer()
	for b.Loop() {
		rep, err := Simulate(Config{Machine: benchMachine(b, tc), Policy: tc.policy}, &c)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Decisions), "decisions")
		b.ReportMetric(rep.Utilization*100, "U")
		b.ReportMetric(rep.AllocSeconds, "alloc_s")
	}
}
