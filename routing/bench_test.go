package routing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/internal/benchscen"
	"github.com/icn-hpc/icn/topology"
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
// fault-free torus under angara*: 8x8x4x4 (1 024 nodes, target ≤ 0.5 s
// wall), 8x8x8x8 and 16x16x16 (4 096 nodes, ≤ 5 s wall on 2 cores). The
// same-run baselines: "seq" is the strictly sequential algorithm (one
// source per round, one worker), "baseline" the coordinate algorithm.
func BenchmarkTable(b *testing.B) {
	// icn bench's table rows time the first two (benchscen).
	for _, spec := range []string{benchscen.TableVsBaseline.Full, benchscen.WholeTable.Full, "torus:8x8x8x8"} {
		spec = strings.TrimPrefix(spec, "torus:")
		g := mustTorus(b, spec)
		r := mustRouter(b, g, AngaraStar)
		all := allNodes(g.NumNodes())
		for _, v := range []struct {
			name string
			o    BuildOptions
		}{{"bfs", BuildOptions{}}, {"bfs-seq", BuildOptions{Batch: 1, Workers: 1}}, {"baseline", BuildOptions{Algo: Baseline}}} {
			b.Run(spec+"/"+v.name, func(b *testing.B) {
				c0 := cpuTime()
				var tb *Table
				for b.Loop() {
					var err error
					if tb, err = r.Build(context.Background(), all, nil, v.o); err != nil || !tb.DeadlockFree {
						b.Fatal(err)
					}
				}
				b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
				b.ReportMetric(tb.Figures.BalanceFactor, "balance-%")
			})
		}
	}
}

// BenchmarkVerify measures Verify of the BFS table of every node of a
// fault-free 16x16x16 torus under angara* (4 096 active nodes, 16.8
// million routes) and of a 32x32x4 slab of 32x32x32 (the set the
// 4 096-node decision on 32x32x32 chooses): "shared" walks the segments
// consecutive routes share once (quickShared), "route" is the same-run
// baseline that walks every route.
func BenchmarkVerify(b *testing.B) {
	for _, c := range []struct{ spec, set string }{{"16x16x16", "*.*.*"}, {"32x32x32", "*.*.0-3"}} {
		g := mustTorus(b, c.spec)
		r := mustRouter(b, g, AngaraStar)
		set, err := g.ParseNodes(c.set)
		if err != nil {
			b.Fatal(err)
		}
		tb, err := r.Build(context.Background(), set, nil, BuildOptions{Unverified: true})
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []string{"shared", "route"} {
			b.Run(c.spec+"/"+mode, func(b *testing.B) {
				r.tune.noSharedWalk = mode == "route"
				c0 := cpuTime()
				for b.Loop() {
					rep, err := r.Verify(context.Background(), tb, VerifyOptions{})
					if err != nil || len(rep.Violations) > 0 {
						b.Fatal(err, rep.Violations)
					}
				}
				b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
			})
		}
		r.tune.noSharedWalk = false
	}
}

// benchJob builds the job scenario icn bench's job row also runs
// (benchscen.JobTable at full size: 4 096 active nodes *.*.0-3 of a
// 32x32x32 machine, transit planes *.*.4 and *.*.31, 10 failed X/Y
// links): the machine with its failures, and the nodes.
func benchJob(b testing.TB) (g *topology.Graph, active, transit []int) {
	j := benchscen.JobTable(false)
	g, err := topology.Parse(j.Topo)
	if err != nil {
		b.Fatal(err)
	}
	if g, err = g.ApplyFaults(j.FailLinks, ""); err != nil {
		b.Fatal(err)
	}
	if active, err = g.ParseNodes(j.Active); err != nil {
		b.Fatal(err)
	}
	if transit, err = g.ParseNodes(j.Transit); err != nil {
		b.Fatal(err)
	}
	return g, active, transit
}

// BenchmarkJobTable measures a job's table on a 32x32x32 machine (32 768
// nodes): 4 096 active nodes *.*.0-3, transit planes *.*.4 and *.*.31, 10
// failed X/Y links, angara* (target ≤ 3 s, ≤ 1 GB); the router (R_A*
// construction on the whole machine) is built once outside the loop and
// also measured alone as "router".
func BenchmarkJobTable(b *testing.B) {
	g, active, transit := benchJob(b)
	r := mustRouter(b, g, AngaraStar)
	cpuRun(b, "router", func() { mustRouter(b, g, AngaraStar) })
	cpuRun(b, "table", func() {
		tb, err := r.Build(context.Background(), active, transit, BuildOptions{})
		if err != nil || !tb.DeadlockFree {
			b.Fatal(err)
		}
	})
	cpuRun(b, "table-seq", func() {
		if _, err := r.Build(context.Background(), active, transit, BuildOptions{Batch: 1, Workers: 1}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkRoutesFile writes the 16x16x16 table in the compact format
// (target ≤ 250 MB) and checks it from the file (target ≤ 1 GB, ≤ 30 s);
// the JSON check of the same table is the baseline on 8x8x4x4.
func BenchmarkRoutesFile(b *testing.B) {
	for _, spec := range []string{"8x8x4x4", "16x16x16"} {
		g := mustTorus(b, spec)
		r := mustRouter(b, g, AngaraStar)
		tb, err := r.Build(context.Background(), allNodes(g.NumNodes()), nil, BuildOptions{})
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		formats := []string{"routes"}
		if spec == "8x8x4x4" {
			formats = append(formats, "json")
		}
		for _, format := range formats {
			path := dir + "/t." + format
			cpuRun(b, spec+"/write-"+format, func() {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				write := tb.WriteRoutes
				if format == "json" {
					write = tb.WriteJSON
				}
				if err := write(f); err != nil {
					b.Fatal(err)
				}
				st, _ := f.Stat()
				f.Close()
				b.ReportMetric(float64(st.Size())/1e6, "MB")
			})
			cpuRun(b, spec+"/check-"+format, func() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				rep, _, err := verifyFile(f, "", "", 0)
				if err != nil || len(rep.Violations) > 0 {
					b.Fatal(err, rep.Violations)
				}
			})
		}
	}
}

// BenchmarkRouter measures NewRouter for angara* (torus index, automaton
// and the R_A* construction) on a fault-free torus, Sequoia's and Tofu-D's
// included (the mesh dimensions of Tofu-D close no ring: R_A* accepts 1.35
// million dependencies there).
func BenchmarkRouter(b *testing.B) {
	for _, spec := range []string{"8x8x4x4", "8x8x8x8", "16x16x16", "12x12x12x2x3x2:mesh=W,U", "16x16x16x12x2", "24x23x24x2x3x2:mesh=W,U"} {
		g := mustTorus(b, spec)
		b.Run(spec, func(b *testing.B) {
			for b.Loop() {
				mustRouter(b, g, AngaraStar)
			}
		})
	}
}

// BenchmarkRouterFailures measures the angara* router (its R_A*
// construction) on 16x16x16 with 1 %, 5 % and 15 % of the links failed
// (a fixed random set per share).
func BenchmarkRouterFailures(b *testing.B) {
	g := mustTorus(b, "16x16x16")
	for _, pct := range []int{1, 5, 15} {
		rng := rand.New(rand.NewPCG(uint64(pct), 7))
		links := rng.Perm(g.NumLinks())[:g.NumLinks()*pct/100]
		h, err := g.WithFaults(links, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%d%%", pct), func(b *testing.B) {
			for b.Loop() {
				mustRouter(b, h, AngaraStar)
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
		if _, err := r.Build(context.Background(), box, transit, BuildOptions{}); err != nil {
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
	// A large job: the first 320 nodes of an 8x8x4x2 block active, the
	// other 192 transit (several batches of sources).
	half, err := g4.ParseNodes("0-7.0-7.0-3.0-1")
	if err != nil {
		b.Fatal(err)
	}
	cpuRun(b, "8x8x4x4/job320+192", func() {
		if ok, _ := r4.Reachable(half[:320], half[320:]); !ok {
			b.Fatal("unreachable")
		}
	})
	// Tofu-D: the first 16 384 nodes of a 3x19x24x2x3x2 block, a set the
	// uniform path asks about (not reachable under angara*; its failing
	// sources lie in the block's last, partial layer).
	if testing.Short() {
		return
	}
	gt := mustTorus(b, "24x23x24x2x3x2:mesh=W,U")
	rt := mustRouter(b, gt, AngaraStar)
	tofu, err := gt.ParseNodes("0-2.0-18.0-23.0-1.0-2.0-1")
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(tofu)
	cpuRun(b, "tofu-d/first16384of3x19x24x2x3x2", func() {
		if ok, _ := rt.Reachable(tofu[:16384], nil); ok {
			b.Fatal("reachable")
		}
	})
}

// BenchmarkSweep measures one hinted sweep (every vertex of the set's
// routing graph a source reaches) under angara* on Sequoia's torus, of a
// set a 2 057-node decision of its fill asked about
// (testdata/sweep-sequoia.txt). "sim" skips the vertices a state
// simulating theirs has reached at their node, "all" is the same-run
// baseline that visits every one.
func BenchmarkSweep(b *testing.B) {
	g := mustTorus(b, "16x16x16x12x2")
	r := mustRouter(b, g, AngaraStar)
	data, err := os.ReadFile("testdata/sweep-sequoia.txt")
	if err != nil {
		b.Fatal(err)
	}
	var ids []int
	for _, f := range strings.Fields(string(data[strings.IndexByte(string(data), '\n'):])) {
		v, err := strconv.Atoi(f)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, v)
	}
	src, set := ids[0], ids[1:]
	for _, mode := range []string{"sim", "all"} {
		b.Run(mode, func(b *testing.B) {
			r.tune.noSimulation = mode == "all"
			s := r.getScratch()
			defer r.putScratch(s)
			if err := r.markSet(s, set, nil); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				r.sweep(s, int32(src))
			}
			b.ReportMetric(float64(ones(s.seenBits)), "vertices")
		})
	}
	r.tune.noSimulation = false
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
