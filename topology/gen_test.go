package topology

import (
	"testing"
)

func TestGeneratorCounts(t *testing.T) {
	tests := []struct {
		spec                        string
		nodes, endpoints, sw, links int
	}{
		{"line:5", 5, 5, 0, 4},
		{"ring:5", 5, 5, 0, 5},
		{"ring:2", 2, 2, 0, 2},
		{"complete:6", 6, 6, 0, 15},
		{"star:7", 7, 7, 0, 6},
		{"tree:15", 15, 15, 0, 14},
		{"mesh:4x3", 12, 12, 0, 17},
		{"torus:4x3", 12, 12, 0, 24},
		{"torus:2x2", 4, 4, 0, 8},
		{"torus:5x4x3", 60, 60, 0, 180},
		{"hypercube:4", 16, 16, 0, 32},
		{"multiring:16:1,3", 16, 16, 0, 32},
		{"multiring:8:1,4", 8, 8, 0, 16},
		{"torus:4x4x2:rings=4,4,2", 32, 32, 0, 32 * (4 + 4 + 2)},
		{"torus:3x2:endpoints=2", 18, 12, 6, 6*2 + 12},
		{"torus:4x4:steps=1,2/1", 16, 16, 0, 16 * 3},
		{"fattree:k=2,n=3", 8 + 12, 8, 12, 8 + 8 + 8},
		{"fattree:k=4,n=2", 16 + 8, 16, 8, 16 + 16},
		{"fattree:m=4,n=3", 16 + 8 + 8 + 4, 16, 20, 16 + 16 + 16},
		{"pft:radix=4,levels=3,endpoints=16", 16 + 20, 16, 20, 48},
		{"dragonfly:a=4,p=2,h=2", 9 * 4 * 3, 72, 36, 72 + 9*6 + 36},
		{"dragonfly:a=2,p=1,h=2,g=3", 3 * 2 * 2, 6, 6, 6 + 3 + 6},
		{"twolevel:groups=4,size=3", 12, 12, 0, 4*3 + 6},
		{"xgft:m=2.3,w=1.2", 6 + 3 + 2, 6, 5, 6 + 6},
	}
	for _, tc := range tests {
		g, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if g.NumNodes() != tc.nodes || g.Count(Endpoint) != tc.endpoints || g.Count(Switch) != tc.sw || g.NumLinks() != tc.links {
			t.Errorf("%s: nodes=%d endpoints=%d switches=%d links=%d, want %d %d %d %d", tc.spec,
				g.NumNodes(), g.Count(Endpoint), g.Count(Switch), g.NumLinks(), tc.nodes, tc.endpoints, tc.sw, tc.links)
		}
		checkPortsConsistent(t, g)
	}
}

// checkPortsConsistent verifies the CSR and port tables agree with links.
func checkPortsConsistent(t *testing.T, g *Graph) {
	t.Helper()
	seen := 0
	for v := 0; v < g.NumNodes(); v++ {
		prev := 0
		for _, c := range g.Out(v) {
			ci := int(c)
			if g.Src(ci) != v {
				t.Fatalf("%s: channel %d in Out(%d) leaves %d", g.Name(), ci, v, g.Src(ci))
			}
			p := g.SrcPort(ci)
			if p <= prev {
				t.Fatalf("%s: ports of %d not increasing", g.Name(), v)
			}
			prev = p
			if g.PortChannel(v, p) != ci {
				t.Fatalf("%s: PortChannel(%d,%d)=%d want %d", g.Name(), v, p, g.PortChannel(v, p), ci)
			}
			r := Reverse(ci)
			if g.Src(r) != g.Dst(ci) || g.Dst(r) != v || g.SrcPort(r) != g.DstPort(ci) {
				t.Fatalf("%s: reverse of channel %d inconsistent", g.Name(), ci)
			}
			seen++
		}
	}
	if seen != g.NumChannels() {
		t.Fatalf("%s: %d channels in adjacency, want %d", g.Name(), seen, g.NumChannels())
	}
}

func TestDragonflyGlobalBalanced(t *testing.T) {
	g, err := Parse("dragonfly:a=18,p=9,h=9")
	if err != nil {
		t.Fatal(err)
	}
	if g.Count(Endpoint) != 26406 {
		t.Fatalf("endpoints = %d, want 26406", g.Count(Endpoint))
	}
	groups := 163
	pair := make(map[[2]int]int)
	perSwitch := make(map[int]int)
	for _, lk := range g.Links() {
		if lk.Class != Global {
			continue
		}
		ga, gb := g.Group(int(lk.A)), g.Group(int(lk.B))
		if ga == gb {
			t.Fatalf("global link inside group %d", ga)
		}
		pair[[2]int{min(ga, gb), max(ga, gb)}]++
		perSwitch[int(lk.A)]++
		perSwitch[int(lk.B)]++
	}
	if len(pair) != groups*(groups-1)/2 {
		t.Fatalf("%d group pairs connected, want %d", len(pair), groups*(groups-1)/2)
	}
	for p, n := range pair {
		if n != 1 {
			t.Fatalf("groups %v share %d global links", p, n)
		}
	}
	for v, n := range perSwitch {
		if n != 9 {
			t.Fatalf("switch %s has %d global links", g.NodeName(v), n)
		}
	}
}

func TestTorusDirections(t *testing.T) {
	g, err := Parse("torus:4x2x3")
	if err != nil {
		t.Fatal(err)
	}
	dims := g.Dims()
	for v := 0; v < g.NumNodes(); v++ {
		cv := g.Coord(v)
		count := map[[2]int]int{}
		for _, c := range g.Out(v) {
			d, s := g.Dir(int(c))
			count[[2]int{d, s}]++
			w := g.Coord(g.Dst(int(c)))
			want := append([]int(nil), cv...)
			want[d] = (cv[d] + s + dims[d]) % dims[d]
			if CoordString(w) != CoordString(want) {
				t.Fatalf("channel %s leads to %v, want %v", g.ChannelName(int(c)), w, want)
			}
		}
		for d := range dims {
			if count[[2]int{d, 1}] != 1 || count[[2]int{d, -1}] != 1 {
				t.Fatalf("node %v: direction counts %v", cv, count)
			}
		}
	}
}

func TestBadSpecs(t *testing.T) {
	for _, spec := range []string{"", "torus", "torus:", "torus:4x0", "torus:1x4", "torus:-3", "mesh:4xx4",
		"torus:4x4:rings=1", "torus:4x4:rings=1,2,3", "multiring:16:0", "multiring:16:3,13", "multiring:16:16",
		"fattree:k=2", "fattree:k=2,m=4,n=2", "fattree:m=5,n=2", "dragonfly:a=2,p=1", "dragonfly:a=3,p=1,h=1,g=3",
		"pft:radix=4,levels=3,endpoints=15", "nosuch:3", "hypercube:40", "torus:100000x100000",
		"torus:4x4:foo=1", "ring:1", "torus:2x2x2x2x2x2x2", "xgft:m=2,w=1.1", "torus:4x4:steps=1/2,2"} {
		if g, err := Parse(spec); err == nil {
			t.Errorf("%q: no error (got %d nodes)", spec, g.NumNodes())
		}
	}
}
