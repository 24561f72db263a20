package topology

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/internal/benchscen"
)

func BenchmarkGenerate(b *testing.B) {
	for _, spec := range []string{"torus:32x32x32", "dragonfly:a=18,p=9,h=9", "fattree:m=40,n=3", "taihulight",
		"torus:16x16x16x12x2", "torus:24x23x24x2x3x2:mesh=W,U"} {
		b.Run(spec, func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse(spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAllPairs measures the generic all-pairs BFS (symmetry shortcut
// off) on a 16x16x16 torus (benchscen.AllPairs, icn bench's first row)
// with one worker and with all cores; the ratio of the two is the
// parallel speed-up.
func BenchmarkAllPairs(b *testing.B) {
	spec := benchscen.AllPairs.Full
	g, err := Parse(spec)
	if err != nil {
		b.Fatal(err)
	}
	diameter := 0
	for _, d := range g.Dims() {
		diameter += d / 2
	}
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("%s/workers=%d", strings.TrimPrefix(spec, "torus:"), w), func(b *testing.B) {
			for b.Loop() {
				st := Distances(g, MetricsOptions{ForceGeneric: true, Workers: w})
				if st.Diameter != diameter {
					b.Fatal(st.Diameter, diameter)
				}
			}
		})
	}
}

func BenchmarkMeasure(b *testing.B) {
	for _, spec := range []string{"torus:8x8x8", "fattree:m=40,n=3", "dragonfly:a=18,p=9,h=9"} {
		g, _ := Parse(spec)
		b.Run(spec, func(b *testing.B) {
			for b.Loop() {
				Measure(g, MetricsOptions{})
			}
		})
	}
}

func BenchmarkMinHops(b *testing.B) {
	for _, spec := range []string{"fattree:m=40,n=3", "dragonfly:a=18,p=9,h=9", "taihulight"} {
		g, _ := Parse(spec)
		b.Run(spec, func(b *testing.B) {
			for b.Loop() {
				if _, err := MinHops(g, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScale builds a 100 000-node, 1 000 000-channel network (a 3D
// torus with two parallel rings in X and Y) and reports the memory it holds.
func BenchmarkScale(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		g, err := Parse("torus:40x50x50:rings=2,2,1")
		if err != nil {
			b.Fatal(err)
		}
		if g.NumNodes() != 100000 || g.NumChannels() != 1000000 {
			b.Fatalf("%d nodes %d channels", g.NumNodes(), g.NumChannels())
		}
	}
}

// BenchmarkMeasureFailures: every metric of torus:32x32x32 and
// torus:16x16x16 with one and with ten failed links (and a failed node),
// as the fabric manager computes them after a failure; the distance,
// connectivity and bisection steps are timed apart.
func BenchmarkMeasureFailures(b *testing.B) {
	for _, spec := range []string{"torus:16x16x16", "torus:32x32x32"} {
		base, err := Parse(spec)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range []struct {
			name  string
			links []int
			nodes []int
		}{
			{"1-link", []int{base.NumLinks() / 3}, nil},
			{"10-links", []int{5, 1000, 2001, 3007, 4099, 5003, 6007, 7001, 8009, 9001}, nil},
			{"1-node", nil, []int{base.NumNodes() / 2}},
		} {
			g, err := base.WithFaults(f.links, f.nodes)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(spec+"/"+f.name, func(b *testing.B) {
				var m Metrics
				for b.Loop() {
					m = Measure(g, MetricsOptions{})
				}
				b.ReportMetric(m.AvgDistance, "avg-distance")
				b.ReportMetric(float64(m.Diameter), "diameter")
				for _, part := range []struct {
					name string
					run  func()
				}{
					{"distances", func() { Distances(g, MetricsOptions{}) }},
					{"connectivity", func() { EdgeConnectivity(g, MetricsOptions{}) }},
					{"bisection", func() { Bisection(g, MetricsOptions{}) }},
				} {
					start := time.Now()
					part.run()
					b.ReportMetric(float64(time.Since(start).Microseconds())/1000, part.name+"-ms")
				}
			})
		}
	}
}
