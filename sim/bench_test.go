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

func benchTorus(b *testing.B, spec string, rate float64, workers int) {
	g, err := topology.Parse(spec)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Rate = rate
	cfg.Workers = workers
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
	for i := 0; i < 2000; i++ { // reach steady state
		tk.Tick()
	}
	R := float64(g.NumNodes())
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

func BenchmarkTorus8x8(b *testing.B)          { benchTorus(b, "torus:8x8", 0.5, 1) }
func BenchmarkTorus16x16x16(b *testing.B)     { benchTorus(b, "torus:16x16x16", 0.25, 1) }
func BenchmarkTorus16x16x16Par2(b *testing.B) { benchTorus(b, "torus:16x16x16", 0.25, 2) }

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
