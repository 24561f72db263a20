package routing

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user+system CPU time (the benchmarks
// report it per operation because the machine may be shared).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func allNodes(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// cpuRun runs f as a sub-benchmark and also reports CPU seconds per op.
func cpuRun(b *testing.B, name string, f func()) {
	b.Run(name, func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			f()
		}
		b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
	})
}

// BenchmarkTable measures a full BFS routing table with its verification
// (routes, figures, channel dependency check) for every node of a
// fault-free torus: the 8x8x4x4 (1 024 nodes, target < 1 s) and
// 16x16x16 (4 096 nodes), under angara*.
func BenchmarkTable(b *testing.B) {
	for _, spec := range []string{"8x8x4x4", "16x16x16"} {
		g := mustTorus(b, spec)
		r := mustRouter(b, g, AngaraStar)
		all := allNodes(g.NumNodes())
		cpuRun(b, spec+"/bfs", func() {
			tb, err := r.BuildTable(all, nil, BFS)
			if err != nil || !tb.DeadlockFree {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRouter measures NewRouter for angara* (torus index, automaton
// and the R_A* construction) on a fault-free torus.
func BenchmarkRouter(b *testing.B) {
	for _, spec := range []string{"8x8x4x4", "8x8x8x8", "16x16x16"} {
		g := mustTorus(b, spec)
		b.Run(spec, func(b *testing.B) {
			for b.Loop() {
				mustRouter(b, g, AngaraStar)
			}
		})
	}
}

// BenchmarkReachable measures reachability of the whole machine and of a
// 4x4x4 sub-box with 16 transit nodes (the node-selection case).
func BenchmarkReachable(b *testing.B) {
	g := mustTorus(b, "16x16x16")
	r := mustRouter(b, g, AngaraStar)
	box, err := g.ParseNodes("0-3.0-3.0-3")
	if err != nil {
		b.Fatal(err)
	}
	transit, err := g.ParseNodes("4.0-3.0-3")
	if err != nil {
		b.Fatal(err)
	}
	cpuRun(b, "16x16x16/box64+16", func() {
		if ok, _ := r.Reachable(box, transit); !ok {
			b.Fatal("unreachable")
		}
	})
	cpuRun(b, "16x16x16/box64+16/table", func() {
		if _, err := r.BuildTable(box, transit, BFS); err != nil {
			b.Fatal(err)
		}
	})
	all := allNodes(g.NumNodes())
	cpuRun(b, "16x16x16/all", func() {
		if ok, _ := r.Reachable(all, nil); !ok {
			b.Fatal("unreachable")
		}
	})
	g4 := mustTorus(b, "8x8x4x4")
	r4 := mustRouter(b, g4, AngaraStar)
	all4 := allNodes(g4.NumNodes())
	cpuRun(b, "8x8x4x4/all", func() {
		if ok, _ := r4.Reachable(all4, nil); !ok {
			b.Fatal("unreachable")
		}
	})
}

// BenchmarkRGMemory reports the memory of the routing graph of a 4 096-node
// 4D torus (8x8x8x8) under angara*: the implicit RG, the torus index, the
// per-worker scratch, and what an explicit adjacency list would take.
func BenchmarkRGMemory(b *testing.B) {
	g := mustTorus(b, "8x8x8x8")
	r := mustRouter(b, g, AngaraStar)
	rg := r.RG()
	for b.Loop() {
		_ = rg.Bytes()
	}
	b.ReportMetric(float64(rg.NumVertices()), "vertices")
	b.ReportMetric(float64(rg.NumEdges()), "edges")
	b.ReportMetric(float64(rg.Bytes()), "rg-bytes")
	b.ReportMetric(float64(rg.TorusBytes()), "torus-bytes")
	b.ReportMetric(float64(rg.ScratchBytes()), "scratch-bytes")
	b.ReportMetric(float64(rg.ExplicitBytes()), "explicit-bytes")
}
