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
// active node is reached, reusing its marks) with a full search on random
// sets of a torus with failed links.
func TestJoinsInMatchesFullSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	g, err := topology.Parse("torus:4x4x3")
	if err != nil {
		t.Fatal(err)
	}
	if g, err = g.ApplyFaults("0.0.0+X,1.1.1+Y,2.2.2+Z,3.1.0-X", ""); err != nil {
		t.Fatal(err)
	}
	var cs connScratch
	joined := 0
	for range 3000 {
		perm := r.Perm(g.NumNodes())
		set := perm[:2+r.IntN(len(perm)-2)]
		active := set[:1+r.IntN(len(set))]
		want := joinedRef(g, active, set)
		if got := cs.joinsIn(g, active, active, set[len(active):]); got != want {
			t.Fatalf("active %v of %v: joinsIn %v, full search %v", active, set, got, want)
		}
		if want {
			joined++
		}
	}
	if joined == 0 || joined == 3000 {
		t.Fatalf("%d of 3000 sets joined: the cases do not exercise both answers", joined)
	}
}
