package sim

import (
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// cpuTime is the CPU time (user+system) of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchTorus measures the simulator's speed on a torus in router-cycles
// per second after a short warm-up: BookSim2's setting (DOR, 2 VCs × 8
// flits, 1-flit packets, uniform traffic) with the lumped router
// (--router-delay 4) or BookSim's staged 4-stage router, serially or with
// the routers partitioned over `workers` goroutines.
func benchTorus(b *testing.B, spec string, rate float64, workers int, staged bool) {
	g, err := topology.Parse(spec)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Rate, cfg.Workers, cfg.TerminalLinks = rate, workers, true
	cfg.RouterDelay = BookSimStages.Delay()
	if staged {
		cfg.Router, cfg.Stages = RouterStaged, BookSimStages
	}
	n, err := NewNetwork(g, cfg, true)
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewCore(n, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var tk ticker = c
	if workers > 1 {
		p := newPartitioned(c, workers)
		defer p.stop()
		tk = p
	}
	R := float64(g.NumNodes())
	for i := 0; i < int(max(200, 2e5/R)); i++ { // reach steady state
		tk.Tick()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		tk.Tick()
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(R*float64(b.N)/b.Elapsed().Seconds(), "router-cycles/s")
	b.ReportMetric(R*float64(b.N)/cpu.Seconds(), "router-cycles/cpu-s")
}

func BenchmarkTorus8x8(b *testing.B)              { benchTorus(b, "torus:8x8", 0.5, 1, false) }
func BenchmarkTorus8x8Staged(b *testing.B)        { benchTorus(b, "torus:8x8", 0.25, 1, true) }
func BenchmarkTorus8x8Low(b *testing.B)           { benchTorus(b, "torus:8x8", 0.1, 1, false) }
func BenchmarkTorus8x8LowStaged(b *testing.B)     { benchTorus(b, "torus:8x8", 0.1, 1, true) }
func BenchmarkTorus16x16x16(b *testing.B)         { benchTorus(b, "torus:16x16x16", 0.1, 1, false) }
func BenchmarkTorus16x16x16Staged(b *testing.B)   { benchTorus(b, "torus:16x16x16", 0.1, 1, true) }
func BenchmarkPartition8x8Par2(b *testing.B)      { benchTorus(b, "torus:8x8", 0.1, 2, true) }
func BenchmarkPartition16x16x16Par2(b *testing.B) { benchTorus(b, "torus:16x16x16", 0.1, 2, true) }
func BenchmarkPartition32x32x32(b *testing.B)     { benchTorus(b, "torus:32x32x32", 0.1, 1, true) }
func BenchmarkPartition32x32x32Par2(b *testing.B) { benchTorus(b, "torus:32x32x32", 0.1, 2, true) }

// benchPoints measures whole load points (warm-up, measurement, drain) on
// the 8x8 torus, run one after another or in parallel (one per core).
func benchPoints(b *testing.B, workers int) {
	g, _ := topology.Parse("torus:8x8")
	cfg := DefaultConfig()
	cfg.Cycles, cfg.Warmup = 3000, 1000
	n, err := NewNetwork(g, cfg, false)
	if err != nil {
		b.Fatal(err)
	}
	rates := []float64{0.2, 0.3, 0.4, 0.5}
	b.ResetTimer()
	var rc float64
	for i := 0; i < b.N; i++ {
		pts, err := RunRates(n, cfg, rates, workers, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range pts {
			rc += float64(p.Cycles) * 64
		}
	}
	b.ReportMetric(rc/b.Elapsed().Seconds(), "router-cycles/s")
}

func BenchmarkPoints8x8Serial(b *testing.B)   { benchPoints(b, 1) }
func BenchmarkPoints8x8Parallel(b *testing.B) { benchPoints(b, 2) }
