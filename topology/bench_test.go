package topology

import (
	"fmt"
	"testing"
)

func BenchmarkGenerate(b *testing.B) {
	for _, spec := range []string{"torus:32x32x32", "dragonfly:a=18,p=9,h=9", "fattree:m=40,n=3", "taihulight"} {
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
// off) on a 16x16x16 torus with one worker and with all cores; the ratio of
// the two is the parallel speed-up.
func BenchmarkAllPairs(b *testing.B) {
	g, err := Parse("torus:16x16x16")
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("16x16x16/workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				st := Distances(g, MetricsOptions{ForceGeneric: true, Workers: w})
				if st.Diameter != 24 {
					b.Fatal(st.Diameter)
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
