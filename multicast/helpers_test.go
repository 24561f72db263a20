package multicast

import (
	"fmt"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// Test fabrics: fat trees (unique down paths), a pruned XGFT, a switch
// torus and a mesh with end nodes (many shortest paths), a dragonfly
// (global links), a direct torus (every node forwards), and a fat tree and
// torus with failures.
var testSpecs = []string{
	"fattree:k=4,n=3",
	"xgft:m=4.3.3,w=1.2.2",
	"torus:4x4:endpoints=2",
	"mesh:4x3:endpoints=1",
	"dragonfly:a=4,p=2,h=2",
	"torus:3x3x3",
	"torus:5x4:endpoints=1",
	"director:pods=3,leaves=2,ends=3,l2=2,cables=2",
}

type fabric struct {
	spec string
	g    *topology.Graph
	h    *topology.HopTable
}

func loadFabric(t testing.TB, spec string) fabric {
	t.Helper()
	g, err := ParseFabric(spec)
	if err != nil {
		t.Fatal(err)
	}
	h, err := topology.MinHops(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fabric{spec, g, h}
}

func faultyFabric(t testing.TB, spec string, links []int) fabric {
	t.Helper()
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	g, err = g.WithFaults(links, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := topology.MinHops(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fabric{spec + " (faulty)", g, h}
}

func allFabrics(t testing.TB) []fabric {
	var out []fabric
	for _, s := range testSpecs {
		out = append(out, loadFabric(t, s))
	}
	// A failed cable between switches in the fat tree and the torus: still
	// connected, fewer shortest paths.
	ft := loadFabric(t, "fattree:k=4,n=3")
	out = append(out, faultyFabric(t, "fattree:k=4,n=3", []int{switchLink(ft.g, 0), switchLink(ft.g, 5)}))
	tor := loadFabric(t, "torus:4x4:endpoints=2")
	out = append(out, faultyFabric(t, "torus:4x4:endpoints=2", []int{switchLink(tor.g, 3)}))
	return out
}

// switchLink returns the k-th link joining two switches.
func switchLink(g *topology.Graph, k int) int {
	for l := 0; l < g.NumLinks(); l++ {
		lk := g.Link(l)
		if g.Kind(int(lk.A)) == topology.Switch && g.Kind(int(lk.B)) == topology.Switch {
			if k == 0 {
				return l
			}
			k--
		}
	}
	panic("no such link")
}

// forwards says whether v may relay traffic: switches, or every node of a
// direct network. Written independently of the package under test.
func forwards(g *topology.Graph, v int) bool {
	if g.Kind(v) == topology.Switch {
		return true
	}
	for u := 0; u < g.NumNodes(); u++ {
		if g.Kind(u) == topology.Switch {
			return false
		}
	}
	return true
}

// bfs returns hop distances from src over working links, relaying only
// through forwarding nodes (-1 = unreachable).
func bfs(g *topology.Graph, src int) []int {
	d := make([]int, g.NumNodes())
	for i := range d {
		d[i] = -1
	}
	fw := make([]bool, g.NumNodes())
	for v := range fw {
		fw[v] = forwards(g, v)
	}
	d[src] = 0
	q := []int{src}
	for len(q) > 0 {
		v := q[0]
		q = q[1:]
		if v != src && !fw[v] {
			continue
		}
		for _, c := range g.Out(v) {
			if !g.Up(int(c)) {
				continue
			}
			w := g.Dst(int(c))
			if d[w] < 0 {
				d[w] = d[v] + 1
				q = append(q, w)
			}
		}
	}
	return d
}

// allDist caches bfs from every forwarding node.
type allDist struct {
	g *topology.Graph
	m map[int][]int
}

func newAllDist(g *topology.Graph) *allDist { return &allDist{g, map[int][]int{}} }

func (a *allDist) from(v int) []int {
	if d, ok := a.m[v]; ok {
		return d
	}
	d := bfs(a.g, v)
	a.m[v] = d
	return d
}

// checkTree verifies a tree with the independent BFS: a tree rooted at a
// forwarding node, only forwarding nodes relay, every member reached, every
// node at its shortest distance from the root, height minimal.
func checkTree(ad *allDist, members []int32, t Tree) error {
	g := ad.g
	root := int(t.Root)
	if !forwards(g, root) {
		return fmt.Errorf("root %s does not forward", g.NodeName(root))
	}
	dist := ad.from(root)
	parent := map[int]int{}
	for _, c := range t.Edges {
		if !g.Up(int(c)) {
			return fmt.Errorf("failed link used")
		}
		p, x := g.Src(int(c)), g.Dst(int(c))
		if x == root {
			return fmt.Errorf("edge into root")
		}
		if _, dup := parent[x]; dup {
			return fmt.Errorf("%s has two parents", g.NodeName(x))
		}
		if !forwards(g, p) {
			return fmt.Errorf("%s relays but cannot forward", g.NodeName(p))
		}
		parent[x] = p
	}
	depth := func(x int) (int, error) {
		d := 0
		for x != root {
			p, ok := parent[x]
			if !ok {
				return 0, fmt.Errorf("%s not connected to root", g.NodeName(x))
			}
			x = p
			d++
			if d > len(t.Edges) {
				return 0, fmt.Errorf("cycle")
			}
		}
		return d, nil
	}
	height := 0
	for x := range parent {
		d, err := depth(x)
		if err != nil {
			return err
		}
		if d != dist[x] {
			return fmt.Errorf("%s at depth %d, distance %d", g.NodeName(x), d, dist[x])
		}
		height = max(height, d)
	}
	want := 0
	for _, m := range members {
		if int(m) != root {
			if _, ok := parent[int(m)]; !ok {
				return fmt.Errorf("member %s missing", g.NodeName(int(m)))
			}
		}
		want = max(want, dist[m])
	}
	if height != want {
		return fmt.Errorf("height %d, minimum %d", height, want)
	}
	return nil
}

// testGroups builds a mixed workload on a fabric: random groups of end
// nodes, plus a few groups that include switches.
func testGroups(t testing.TB, f fabric, seed uint64, count int) []Group {
	t.Helper()
	w, err := ParseWorkload(fmt.Sprintf("random:count=%d,size=1-9", count))
	if err != nil {
		t.Fatal(err)
	}
	gs, err := w.Groups(f.g, seed)
	if err != nil {
		t.Fatal(err)
	}
	sw := f.g.Switches()
	for i := 0; i < 3 && len(sw) > 2; i++ {
		eps := gs[i].Members
		gs = append(gs, Group{Name: fmt.Sprintf("sw%d", i), Members: append([]int32{int32(sw[(i*7)%len(sw)])}, eps...)})
	}
	return gs
}

func algoList(t testing.TB, names ...string) []Algo {
	var out []Algo
	for _, n := range names {
		a, err := ParseAlgo(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}
