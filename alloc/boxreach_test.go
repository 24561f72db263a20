package alloc

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestBoxCoversImpliesReachable draws sets around random boxes (cyclic on
// rings) on tori with failed links and nodes and checks, for every rule,
// that whenever boxCovers claims a set reachable the router agrees; the
// claim must be made often (also on whole fault-free boxes), and refused
// often.
func TestBoxCoversImpliesReachable(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 4))
	claims, refusals, wholeClaims := 0, 0, 0
	for _, spec := range []string{"torus:4x4", "torus:5x3x2", "torus:4x4x3", "torus:3x3x2x2"} {
		for _, fail := range []float64{0, 0.05, 0.15} {
			g := randomFaults(t, r, spec, fail)
			st, err := NewState(g)
			if err != nil {
				t.Fatal(err)
			}
			sel := NewSelector(st)
			sel.prepare(st)
			for _, rule := range []string{"dor", "dirbit", "angara-", "angara", "angara*"} {
				rt, err := NewAngaraRouter(g, rule)
				if err != nil {
					t.Fatal(err)
				}
				var bs boxScratch
				for trial := 0; trial < 40; trial++ {
					active, transit, whole := boxSet(r, g)
					if len(active) == 0 {
						continue
					}
					name := fmt.Sprintf("%s fail %v %s active %v transit %v", spec, fail, rule, active, transit)
					claim := sel.boxCovers(&bs, active, transit)
					if !claim {
						refusals++
						continue
					}
					if whole && !anyFailure(g, active, transit) {
						wholeClaims++
					}
					claims++
					ok, err := rt.Reachable(active, transit)
					if err != nil {
						t.Fatal(name, err)
					}
					if !ok {
						t.Fatalf("%s: boxCovers claims reachable, the router disagrees", name)
					}
				}
			}
		}
	}
	if claims < 100 || refusals < 100 || wholeClaims < 50 {
		t.Fatalf("%d claims (%d on whole fault-free boxes), %d refusals: the test does not exercise both outcomes", claims, wholeClaims, refusals)
	}
}

// randomFaults fails each link with probability p and, when p > 0, one node.
func randomFaults(t *testing.T, r *rand.Rand, spec string, p float64) *topology.Graph {
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	var links, nodes []int
	for l := 0; l < g.NumLinks(); l++ {
		if r.Float64() < p {
			links = append(links, l)
		}
	}
	if p > 0 {
		nodes = append(nodes, r.IntN(g.NumNodes()))
	}
	g, err = g.WithFaults(links, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// boxSet draws a random box (cyclic on rings) of live nodes, makes a
// random part of it active and the rest transit, adds random other live
// nodes to the transit, and sometimes drops one box node (whole false).
func boxSet(r *rand.Rand, g *topology.Graph) (active, transit []int, whole bool) {
	dims := g.Dims()
	lo, n := make([]int, len(dims)), make([]int, len(dims))
	for i, d := range dims {
		lo[i], n[i] = r.IntN(d), 1+r.IntN(d)
	}
	in := map[int]bool{}
	var box []int
	off := make([]int, len(dims))
	for {
		c := make([]int, len(dims))
		for i := range dims {
			c[i] = (lo[i] + off[i]) % dims[i]
		}
		v := enc(c, dims)
		if g.NodeFailed(v) {
			return nil, nil, false
		}
		box = append(box, v)
		in[v] = true
		i := 0
		for ; i < len(dims); i++ {
			if off[i]++; off[i] < n[i] {
				break
			}
			off[i] = 0
		}
		if i == len(dims) {
			break
		}
	}
	r.Shuffle(len(box), func(i, j int) { box[i], box[j] = box[j], box[i] })
	k := 1 + r.IntN(len(box))
	active, transit = box[:k], box[k:]
	whole = true
	if len(transit) > 0 && r.IntN(3) == 0 {
		transit, whole = transit[1:], false
	}
	for v := 0; v < g.NumNodes(); v++ {
		if !in[v] && !g.NodeFailed(v) && r.IntN(4) == 0 {
			transit = append(transit, v)
		}
	}
	return active, transit, whole
}

// anyFailure reports whether a node of the set has a failed link.
func anyFailure(g *topology.Graph, active, transit []int) bool {
	for _, l := range [2][]int{active, transit} {
		for _, v := range l {
			for _, c := range g.Out(v) {
				if !g.Up(int(c)) {
					return true
				}
			}
		}
	}
	return false
}
