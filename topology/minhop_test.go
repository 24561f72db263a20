package topology

import "testing"

// TestMinHopsMatchesBFS checks every hop count of MinHops and of
// MinHopsLazy against a direct BFS, with and without failed links.
func TestMinHopsMatchesBFS(t *testing.T) {
	for _, spec := range []string{"fattree:k=3,n=2", "dragonfly:a=3,p=2,h=1", "torus:3x3:endpoints=2", "torus:4x3", "xgft:m=2.2,w=2.2"} {
		g0, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		for k, g := range []*Graph{g0, mustFault(g0), g0, mustFault(g0)} {
			h, err := MinHops(g, 0)
			if err != nil {
				t.Fatal(err)
			}
			if k >= 2 {
				// The lazy table answers as the full one.
				h = MinHopsLazy(g)
			}
			dist := make([]int32, g.NumNodes())
			for _, r := range h.Routers() {
				BFS(g, int(r), dist, nil)
				for d := 0; d < g.NumNodes(); d++ {
					want := int(dist[d])
					if want < 0 {
						want = Unreachable
					}
					if got := h.Hops(int(r), d); got != want {
						t.Fatalf("%s: hops %s->%s = %d, want %d", spec, g.NodeName(int(r)), g.NodeName(d), got, want)
					}
					// Column 0 is the minimum over ports.
					best := Unreachable
					for p := 1; p <= g.NumPorts(int(r)); p++ {
						best = min(best, h.PortHops(int(r), p, d))
					}
					if d != int(r) && best != want {
						t.Fatalf("%s: min over ports %d != %d", spec, best, want)
					}
				}
			}
		}
	}
}

func mustFault(g *Graph) *Graph {
	h, err := g.WithFaults([]int{g.NumLinks() - 1, g.NumLinks() / 3}, nil)
	if err != nil {
		panic(err)
	}
	return h
}
