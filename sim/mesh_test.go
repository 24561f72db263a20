package sim

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// TestMixedTorusPackets: on tori with mesh dimensions every single packet
// arrives after exactly the BFS distance in hops (dimension-order routing
// goes the one way along a mesh dimension, never over a wrap link it
// lacks), for dor, dirbit and adaptive routing; loaded runs (one routing
// per torus) conserve flits; the ideal throughput is the bound of the most loaded dimension.
func TestMixedTorusPackets(t *testing.T) {
	for k, tc := range []struct {
		spec  string
		ideal float64 // before × (N−1)/N
	}{
		{"torus:8x8x2:mesh=Z", 8.0 / 8},
		{"torus:5x4:mesh=X", 4 * 5.0 / 24},
		{"torus:4x3x2:mesh=X,Z", 4.0 / 4},
		{"torus:3x6:mesh=Y", 4.0 / 6},
	} {
		for i, rt := range []string{RouteDOR, RouteDirbit, RouteAdaptive} {
			cfg := DefaultConfig()
			cfg.Routing, cfg.Rate = rt, 0
			if rt == RouteAdaptive {
				cfg.VCs = 3
			}
			n := mustNet(t, tc.spec, cfg)
			g := n.Graph()
			c, err := NewCore(n, cfg)
			if err != nil {
				t.Fatal(err)
			}
			c.LogDeliveries(true)
			dist := make([]int32, g.NumNodes())
			for _, src := range []int{0, g.NumNodes() - 1, g.NumNodes() / 3} {
				topology.BFS(g, src, dist, nil)
				for d := 0; d < g.NumNodes(); d++ {
					start := c.Now()
					if err := c.Send(src, d, 1, int32(d)); err != nil {
						t.Fatal(err)
					}
					var dl []Delivery
					for len(dl) == 0 && c.Now() < start+1000 {
						c.Tick()
						dl = c.TakeDeliveries(dl)
					}
					// one flit: H·(delay + link) + delay + 1
					if want := int64(dist[d])*int64(cfg.RouterDelay+cfg.LinkLatency) + int64(cfg.RouterDelay) + 1; len(dl) != 1 || dl[0].At-start != want {
						t.Fatalf("%s %s: %s→%s (distance %d) delivered %v, want after %d cycles", tc.spec, rt, g.NodeName(src), g.NodeName(d), dist[d], dl, want)
					}
				}
			}
			if err := c.CheckConservation(); err != nil {
				t.Fatal(err)
			}
			if i != k%3 {
				continue // one loaded run per torus, the routings in turn
			}
			cfg.Rate, cfg.Cycles, cfg.MaxWarmup = 0.3, cycles(1500), 3
			p, err := Run(mustNet(t, tc.spec, cfg), cfg)
			if err != nil || !p.Conserved {
				t.Fatalf("%s %s: %v, conserved %v", tc.spec, rt, err, p.Conserved)
			}
		}
		cfg := DefaultConfig()
		cfg.Rate = 0.1
		n := mustNet(t, tc.spec, cfg)
		N := float64(n.Graph().NumNodes())
		if ideal, note := n.IdealThroughput(); math.Abs(ideal-math.Min(1, tc.ideal*(N-1)/N)) > 1e-12 {
			t.Errorf("%s: ideal throughput %v (%s), want %v", tc.spec, ideal, note, tc.ideal*(N-1)/N)
		}
	}
}

// TestMixedTorusTable: a routing table built by the routing package on a
// torus with mesh dimensions drives the simulator (dateline and bubble
// flow control) along its routes, and a table is refused on a network
// that wraps differently.
func TestMixedTorusTable(t *testing.T) {
	g, err := topology.Parse("torus:4x3x2:mesh=Z")
	if err != nil {
		t.Fatal(err)
	}
	r, err := routing.NewRouter(g, routing.Rule{Kind: routing.AngaraStar})
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, g.NumNodes())
	for v := range all {
		all[v] = v
	}
	tb, err := r.Build(context.Background(), all, nil, routing.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tb.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	tab, err := ParseTable(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Routing, cfg.Table = RouteTable, tab
	cfg.Rate, cfg.Cycles = 0.2, cycles(4000)
	for _, fc := range []string{Dateline, Bubble} {
		c := cfg
		c.FlowControl = fc
		if fc == Bubble {
			c.Switching, c.VCs = VCT, 1
		}
		n := mustNet(t, g.Name(), c)
		p, err := Run(n, c)
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := n.ZeroLoad(c)
		if want := float64(tb.SumLength) / float64(tb.NumRoutes()); math.Abs(h-want) > 1e-9 || math.Abs(p.HopsAvg-h) > 0.05*h || !p.Stable || !p.Conserved {
			t.Errorf("%s: hops %.3f, table average %.3f (%.3f), stable %v", fc, p.HopsAvg, h, want, p.Stable)
		}
	}
	for _, other := range []string{"torus:4x3x2", "torus:4x3x2:mesh=Y"} {
		h, _ := topology.Parse(other)
		if _, err := NewNetwork(h, cfg, false); err == nil || !strings.Contains(err.Error(), "routing table is for torus:4x3x2:mesh=Z") {
			t.Errorf("%s: the table of torus:4x3x2:mesh=Z accepted (%v)", other, err)
		}
	}
	bad := bytes.Replace(buf.Bytes(), []byte(`"mesh": ["Z"]`), []byte(`"mesh": ["V"]`), 1)
	if _, err := ParseTable(bad); err == nil || !strings.Contains(err.Error(), `mesh names "V"`) {
		t.Errorf("mesh V in a 3-dimensional table: %v", err)
	}
}
