package sim

import (
	"fmt"
	"runtime"
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

// benchCores runs the same network twice in lock step, cycle for cycle:
// one core ticked serially with GOMAXPROCS 1, one partitioned over all
// of GOMAXPROCS (the -cpu flag; at least 2), in alternating slices of
// about 0.1 s so that other load on the machine hits both alike. Both
// simulate exactly the same cycles (the result does not depend on the
// partitions, checked at the end), so the ratio of their times is the
// speed-up. It reports both rates, the speed-up S on P cores, the parallel
// fraction f it implies (Amdahl: S = 1/((1-f) + f/P)) and what f predicts
// for 16 cores.
func benchCores(b *testing.B, spec string, rate float64) {
	P := runtime.GOMAXPROCS(0)
	if P < 2 {
		b.Skip("needs GOMAXPROCS ≥ 2")
	}
	g, err := topology.Parse(spec)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Rate = rate
	n, err := NewNetwork(g, cfg, true)
	if err != nil {
		b.Fatal(err)
	}
	serial, err := NewCore(n, cfg)
	if err != nil {
		b.Fatal(err)
	}
	pc, _ := NewCore(n, cfg)
	par := newPartitioned(pc, P)
	defer par.stop()
	R := float64(g.NumNodes())
	for i := 0; i < int(max(100, 2e5/R)); i++ { // reach steady state
		serial.Tick()
		par.Tick()
	}
	slice := int(max(1, 1e5/R))
	var ts, tp, cs, cp time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		m := min(slice, b.N-done)
		runtime.GOMAXPROCS(1)
		t0, c0 := time.Now(), cpuTime()
		for j := 0; j < m; j++ {
			serial.Tick()
		}
		ts += time.Since(t0)
		cs += cpuTime() - c0
		runtime.GOMAXPROCS(P)
		t0, c0 = time.Now(), cpuTime()
		for j := 0; j < m; {
			j += par.TickUpTo(m - j)
		}
		tp += time.Since(t0)
		cp += cpuTime() - c0
		done += m
	}
	b.StopTimer()
	if a, c := serial.sum(), pc.sum(); a.moved != c.moved || a.ejFlits != c.ejFlits || a.latSum != c.latSum || serial.now != pc.now {
		b.Fatalf("serial and %d partitions diverged: %d/%d flit moves, %d/%d ejected", P, a.moved, c.moved, a.ejFlits, c.ejFlits)
	}
	S := ts.Seconds() / tp.Seconds()
	f := (1 - 1/S) / (1 - 1/float64(P))
	b.ReportMetric(R*float64(b.N)/ts.Seconds(), "router-cycles/s@1")
	b.ReportMetric(R*float64(b.N)/tp.Seconds(), fmt.Sprintf("router-cycles/s@%d", P))
	b.ReportMetric(S, "speedup")
	b.ReportMetric(f, "parallel-fraction")
	b.ReportMetric(1/((1-f)+f/16), "amdahl-speedup@16")
	b.ReportMetric(cs.Seconds()/ts.Seconds(), "cores-used@1")
	b.ReportMetric(cp.Seconds()/tp.Seconds(), fmt.Sprintf("cores-used@%d", P))
}

// BenchmarkSimCores: the speed-up of one run partitioned over all cores
// against the same run on one core (go test -run XXX -bench SimCores
// -benchtime 60x ./sim; -cpu sets the cores).
func BenchmarkSimCores(b *testing.B) {
	for _, tc := range []struct {
		spec string
		rate float64
	}{{"torus:32x32x32", 0.1}, {"torus:16x16x16", 0.2}, {"torus:64x32", 0.1}} {
		b.Run(fmt.Sprintf("%s@%g", tc.spec, tc.rate), func(b *testing.B) { benchCores(b, tc.spec, tc.rate) })
	}
}
