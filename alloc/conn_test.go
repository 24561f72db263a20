package alloc

import (
	"math/rand/v2"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// joinedRef is joinsIn without shortcuts: a full search of the set from
// the first active node over live links, then a check of every active node.
func joinedRef(g *topology.Graph, active, set []int) bool {
	in := map[int]bool{}
	for _, v := range set {
		in[v] = true
	}
	seen := map[int]bool{active[0]: true}
	queue := []int{active[0]}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, c := range g.Out(v) {
			if u := g.Dst(int(c)); in[u] && !seen[u] && g.Up(int(c)) {
				seen[u] = true
				queue = append(queue, u)
			}
		}
	}
	for _, v := range active {
		if !seen[v] {
			return false
		}
	}
	return true
}

// TestJoinsInMatchesFullSearch compares joinsIn (which stops once every
// active node is reached, reusing its marks) and joins (over the table of
// live links) with a full search on random sets of tori and a mesh with
// failed links and nodes.
func TestJoinsInMatchesFullSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for _, tc := range []struct{ spec, links, nodes string }{
		{"torus:4x4x3", "0.0.0+X,1.1.1+Y,2.2.2+Z,3.1.0-X", ""},
		{"torus:4x2x3", "0.0.0+Y,1.1.1+Z", "2.1.2"},
		{"mesh:3x4x2", "0.0.0+X,1.1.1+Y", "2.2.0"},
	} {
		g, err := topology.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if g, err = g.ApplyFaults(tc.links, tc.nodes); err != nil {
			t.Fatal(err)
		}
		var up []int
		for v := range g.NumNodes() {
			if !g.NodeFailed(v) {
				up = append(up, v)
			}
		}
		var cs connScratch
		var links liveLinks
		joined := 0
		for range 3000 {
			perm := r.Perm(len(up))
			set := make([]int, 2+r.IntN(len(perm)-2))
			for i := range set {
				set[i] = up[perm[i]]
			}
			active := set[:1+r.IntN(len(set))]
			want := joinedRef(g, active, set)
			if got := cs.joinsIn(g, active, active, set[len(active):]); got != want {
				t.Fatalf("%s: active %v of %v: joinsIn %v, full search %v", tc.spec, active, set, got, want)
			}
			if got := cs.joins(links.of(g), active, set[len(active):]); got != want {
				t.Fatalf("%s: active %v of %v: joins %v, full search %v", tc.spec, active, set, got, want)
			}
			if want {
				joined++
			}
		}
		if joined == 0 || joined == 3000 {
			t.Fatalf("%s: %d of 3000 sets joined: the cases do not exercise both answers", tc.spec, joined)
		}
	}
}
