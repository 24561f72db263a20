package routing

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/internal/benchscen"
)

// coreCounts are the GOMAXPROCS values BenchmarkBuildTableCores compares:
// 1, 2 and every core of the machine when it has more.
func coreCounts() []int {
	procs := []int{1, 2}
	if n := runtime.NumCPU(); n > 2 {
		procs = append(procs, n)
	}
	return procs
}

// BenchmarkBuildTableCores measures a verified BFS table (Build
// with the default options, as `icn route` builds it) at GOMAXPROCS 1, 2
// and all cores in the same run, one after the other in every iteration
// (the order alternates between iterations so that a change of the
// machine's load hits both alike), and reports the wall seconds of each
// and the speed-up over one core (and the CPU seconds of each: on a
// shared machine the wall times only mean something at a load average
// well below the number of cores), the share of the wall time spent
// outside the pool of workers (the serial steps before and after the
// rounds) and how many times a pool worker found nothing to do. Cases: every node of 16x16x16 under
// angara*, and the 32x32x32 job of BenchmarkJobTable (4 096 active, 2 048
// transit, 10 failed links; the router is built outside the timing). The
// tables built with each core count must be identical.
//
//	go test -run XXX -bench BuildTableCores -benchtime 3x ./routing/
func BenchmarkBuildTableCores(b *testing.B) {
	type tcase struct {
		name            string
		r               *Router
		active, transit []int
	}
	g16 := mustTorus(b, strings.TrimPrefix(benchscen.WholeTable.Full, "torus:"))
	cases := []tcase{{"16x16x16", mustRouter(b, g16, AngaraStar), allNodes(g16.NumNodes()), nil}}
	g32, active, transit := benchJob(b)
	cases = append(cases, tcase{"job32x32x32", mustRouter(b, g32, AngaraStar), active, transit})
	procs := coreCounts()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			wall := make([]time.Duration, len(procs))
			cpu := make([]time.Duration, len(procs))
			serial := make([]time.Duration, len(procs))
			waits := make([]int, len(procs))
			var poolStart, poolEnd time.Time
			var poolWaits int
			poolObserved = func(start, end time.Time, w int) { poolStart, poolEnd, poolWaits = start, end, w }
			defer func() { poolObserved = nil }()
			var first *Table
			iter := 0
			for b.Loop() {
				order := make([]int, len(procs))
				for k := range order {
					order[k] = k
				}
				if iter%2 == 1 {
					slices.Reverse(order)
				}
				iter++
				for _, k := range order {
					old := runtime.GOMAXPROCS(procs[k])
					start, c0 := time.Now(), cpuTime()
					tb, err := c.r.Build(context.Background(), c.active, c.transit, BuildOptions{})
					end := time.Now()
					wall[k] += end.Sub(start)
					cpu[k] += cpuTime() - c0
					serial[k] += poolStart.Sub(start) + end.Sub(poolEnd)
					waits[k] += poolWaits
					runtime.GOMAXPROCS(old)
					if err != nil || !tb.DeadlockFree {
						b.Fatal(err)
					}
					if first == nil {
						first = tb
					} else if !bytes.Equal(first.codes, tb.codes) || !slices.Equal(first.loads, tb.loads) {
						b.Fatalf("GOMAXPROCS %d: the table differs", procs[k])
					}
					tb = nil
					runtime.GC()
				}
			}
			for k, p := range procs {
				b.ReportMetric(wall[k].Seconds()/float64(iter), fmt.Sprintf("s-%dcore", p))
				b.ReportMetric(cpu[k].Seconds()/float64(iter), fmt.Sprintf("cpu-s-%dcore", p))
				b.ReportMetric(100*serial[k].Seconds()/wall[k].Seconds(), fmt.Sprintf("outside-pool-%%-%dcore", p))
				b.ReportMetric(float64(waits[k])/float64(iter), fmt.Sprintf("idle-waits-%dcore", p))
				if k > 0 {
					b.ReportMetric(wall[0].Seconds()/wall[k].Seconds(), fmt.Sprintf("x-%dcore", p))
				}
			}
		})
	}
}
