package multicast

import (
	"fmt"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// countPaths counts the shortest paths from src to dst by dynamic
// programming over BFS layers (parallel cables count separately).
func countPaths(g *topology.Graph, src, dst int) int {
	d := bfs(g, src)
	ways := make([]int, g.NumNodes())
	ways[src] = 1
	for layer := 0; layer < d[dst]; layer++ {
		for v := range d {
			if d[v] != layer || (v != src && !forwards(g, v)) {
				continue
			}
			for _, c := range g.Out(v) {
				if w := g.Dst(int(c)); g.Up(int(c)) && d[w] == layer+1 {
					ways[w] += ways[v]
				}
			}
		}
	}
	return ways[dst]
}

func TestDirectorShape(t *testing.T) {
	for _, c := range []struct{ pods, leaves, ends, l2, cables int }{{3, 2, 4, 4, 2}, {4, 3, 2, 2, 1}} {
		g, err := Director(c.pods, c.leaves, c.ends, c.l2, c.cables)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Count(topology.Endpoint); got != c.pods*c.leaves*c.ends {
			t.Fatalf("%d end nodes", got)
		}
		top := g.NodeByName("L3-0")
		for l := 0; l < c.pods*c.leaves; l++ {
			leaf := g.NodeByName(fmt.Sprintf("L1-%d", l))
			if n := countPaths(g, leaf, top); n != c.l2*c.cables {
				t.Fatalf("leaf %d has %d paths to the top, want %d", l, n, c.l2*c.cables)
			}
		}
	}
	for _, s := range []string{"director:", "director:pods=2", "director:pods=2,leaves=2,ends=2,l2=2,cables=0", "director:x=1", "director:pods=a,leaves=2,ends=2,l2=2,cables=1"} {
		if _, err := ParseDirector(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	g, err := ParseFabric("director:pods=2,leaves=2,ends=2,l2=2,cables=1")
	if err != nil || g.NumNodes() != 8+4+4+1 {
		t.Fatalf("%v", err)
	}
}

// Under one top switch with l2·cables paths from every leaf, root rotation
// has no choice for groups spanning pods, and MINHOP-new piles them on the
// lowest ports; FULB's link rotation spreads them over all paths (the
// seed's finding (2) on pruned fat trees).
func TestLinkRotationOnRedundantPaths(t *testing.T) {
	f := fabric{spec: "director"}
	var err error
	if f.g, err = Director(4, 4, 4, 4, 2); err != nil {
		t.Fatal(err)
	}
	f.h = mustHops(t, f.g)
	// Pillars of a 4×4×4 grid: 16 groups, each with one end node in each
	// pod (process stride 16 = one pod).
	w, _ := ParseWorkload("grid3d:4x4x4")
	all, err := w.Groups(f.g, 1)
	if err != nil {
		t.Fatal(err)
	}
	var gs []Group
	for _, g := range all {
		if strings.HasPrefix(g.Name, "Z") {
			gs = append(gs, g)
		}
	}
	mh, _ := Run(f.h, Algo{Kind: MinHop, Rotate: true}, gs, Options{}, nil)
	fu, _ := Run(f.h, Algo{Kind: FULB, Rotate: true}, gs, Options{}, nil)
	ss, _ := Run(f.h, Algo{Kind: SSSP, Rotate: true}, gs, Options{}, nil)
	// 16 groups over 8 paths per pod: link rotation reaches 16/8 = 2 on
	// the cables to the top; fixed lowest ports carry all 16.
	if mh.MaxSwitch != 16 || fu.MaxSwitch != 2 || ss.MaxSwitch > 4 {
		t.Fatalf("max switch EFI: minhop-new %d, fulb %d, sssp-new %d", mh.MaxSwitch, fu.MaxSwitch, ss.MaxSwitch)
	}
}
