package topology

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTranslationDistancesMatchAllPairs: on tori with random failed links
// and nodes (parallel rings and multiring steps included), the translated
// BFS repaired around the failures gives exactly the figures of the
// all-pairs BFS, also when failures cut nodes off; and it declines graphs
// whose translations are not automorphisms.
func TestTranslationDistancesMatchAllPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	specs := []string{"torus:8", "torus:4x4", "torus:5x3", "torus:3x3x3", "torus:4x4x4", "torus:6x5x4",
		"torus:2x3x4", "torus:4x4x2x2", "torus:5x4:rings=2,1", "torus:9x3:steps=1,2/1"}
	for _, spec := range specs {
		base, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if !translationInvariant(base) {
			t.Fatalf("%s: not seen as translation-invariant", spec)
		}
		for trial := 0; trial < 12; trial++ {
			var links, nodes []int
			// A third of the links: most sources take the plain BFS.
			nl := []int{1, 1, 2, 3, 5, base.NumLinks() / 3}[trial%6]
			for range nl {
				links = append(links, r.IntN(base.NumLinks()))
			}
			if trial%3 == 2 {
				nodes = append(nodes, r.IntN(base.NumNodes()))
			}
			if trial == 11 {
				// Cut a node off: every link of node 1.
				for _, c := range base.Out(1) {
					links = append(links, int(c)>>1)
				}
			}
			g, err := base.WithFaults(links, nodes)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s links %v nodes %v", spec, links, nodes)
			terms := Terminals(g)
			got, ok := translationDistances(g, terms, MetricsOptions{Workers: 1 + trial%2})
			if !ok {
				t.Fatalf("%s: declined", name)
			}
			want := Distances(g, MetricsOptions{ForceGeneric: true})
			if got.Diameter != want.Diameter || got.Average != want.Average || got.Unreachable != want.Unreachable || !got.Exact {
				t.Fatalf("%s: diameter %d avg %v unreachable %d exact %v, all-pairs BFS %d %v %d", name,
					got.Diameter, got.Average, got.Unreachable, got.Exact, want.Diameter, want.Average, want.Unreachable)
			}
		}
	}
	for _, spec := range []string{"mesh:4x4", "torus:3x2:endpoints=2", "fattree:k=2,n=3"} {
		g, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if translationInvariant(g) {
			t.Errorf("%s: seen as translation-invariant", spec)
		}
	}
}

// TestTorusCutsWithFailures: the edge connectivity of a torus with a few
// failures (the minimum degree, when torusFewFaults holds) equals the
// max-flow value on random failures of tori up to four dimensions, and
// the bisection through failed links equals the brute-force bisection of
// every 2-colouring on small tori.
func TestTorusCutsWithFailures(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 21))
	closedSeen, straightSeen := 0, 0
	for _, spec := range []string{"torus:4x4", "torus:3x3", "torus:5x3", "torus:3x3x3", "torus:4x3x5", "torus:4x4x4", "torus:3x3x3x3"} {
		base, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 20; trial++ {
			var links, nodes []int
			for range 1 + r.IntN(4) {
				links = append(links, r.IntN(base.NumLinks()))
			}
			if trial%4 == 3 {
				nodes = append(nodes, r.IntN(base.NumNodes()))
			}
			g, err := base.WithFaults(links, nodes)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s links %v nodes %v", spec, links, nodes)
			conn, exact, method := EdgeConnectivity(g, MetricsOptions{})
			want, wantExact, _ := EdgeConnectivity(g, MetricsOptions{ForceGeneric: true})
			if !wantExact || !exact || conn != want {
				t.Fatalf("%s: connectivity %d (exact %v, %s), max-flow %d", name, conn, exact, method, want)
			}
			if strings.HasPrefix(method, "minimum degree (a torus") {
				closedSeen++
			}
		}
	}
	for _, spec := range []string{"torus:8", "torus:7", "torus:4x4", "torus:3x4", "torus:4x2x2"} {
		base, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 12; trial++ {
			var links []int
			for range 1 + trial%3 {
				links = append(links, r.IntN(base.NumLinks()))
			}
			g, err := base.WithFaults(links, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, wantBis := bruteCuts(g)
			bis, exact, method := Bisection(g, MetricsOptions{})
			if bis < wantBis || (exact && bis != wantBis) {
				t.Fatalf("%s links %v: bisection %d (exact %v, %s), brute force %d", spec, links, bis, exact, method, wantBis)
			}
			if strings.HasPrefix(method, "closed form less") {
				straightSeen++
			}
		}
	}
	if closedSeen == 0 || straightSeen == 0 {
		t.Errorf("the closed forms were used %d (connectivity) and %d (bisection) times", closedSeen, straightSeen)
	}
}

// TestMeasureContextStops: MeasureContext returns its context's error
// when the context has ended, and the figures of Measure otherwise.
func TestMeasureContextStops(t *testing.T) {
	base, err := Parse("torus:6x6x6")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := base.WithFaults([]int{3, 50}, nil)
	for _, o := range []MetricsOptions{{}, {ForceGeneric: true}} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := MeasureContext(ctx, g, o); err != context.Canceled {
			t.Errorf("generic %v: MeasureContext after cancel: %v", o.ForceGeneric, err)
		}
		m, err := MeasureContext(context.Background(), g, o)
		if want := Measure(g, o); err != nil || m != want {
			t.Errorf("generic %v: MeasureContext %+v, %v; Measure %+v", o.ForceGeneric, m, err, want)
		}
	}
}
