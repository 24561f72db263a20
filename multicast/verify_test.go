package multicast

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// The verifier rejects each kind of broken tree, and accepts the good one.
func TestVerifierRejectsBrokenTrees(t *testing.T) {
	f := loadFabric(t, "torus:4x4:endpoints=2")
	g := f.g
	name := func(n string) int32 { return int32(g.NodeByName(n)) }
	members := []int32{name("0.0/0"), name("2.0/1"), name("0.2/0")}
	r := NewRouter(f.h, Algo{Kind: FULB, Rotate: true}, Options{})
	good, err := r.Route(members)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(f.h)
	if _, err := v.Verify(members, good); err != nil {
		t.Fatalf("good tree rejected: %v", err)
	}
	channel := func(a, b string) int32 {
		for _, c := range g.Out(g.NodeByName(a)) {
			if g.NodeName(g.Dst(int(c))) == b {
				return c
			}
		}
		t.Fatalf("no channel %s→%s", a, b)
		return -1
	}
	edit := func(fn func(tr *Tree)) Tree {
		tr := Tree{Root: good.Root, Edges: slices.Clone(good.Edges)}
		fn(&tr)
		return tr
	}
	cases := []struct {
		name string
		tree Tree
		want string
	}{
		{"member missing", edit(func(tr *Tree) {
			tr.Edges = slices.DeleteFunc(tr.Edges, func(c int32) bool { return g.Dst(int(c)) == int(members[1]) })
		}), "not reached"},
		{"two parents", edit(func(tr *Tree) { tr.Edges = append(tr.Edges, tr.Edges[0]) }), "two parents"},
		{"detached edge", Tree{Root: name("3.3"), Edges: []int32{channel("0.0", "0.0/0")}}, "not connected"},
		{"into root", edit(func(tr *Tree) { tr.Edges = append(tr.Edges, int32(tr.Edges[0]^1)) }), "enters the root"},
		{"end node root", Tree{Root: members[0]}, "not a switch"},
		{"end node forwards", Tree{Root: name("1.0"), Edges: []int32{channel("1.0", "0.0"), channel("0.0", "0.0/0"), channel("0.0/0", "0.0")}}, "end node 0.0/0 forwards"},
		{"bad channel", Tree{Root: good.Root, Edges: []int32{int32(g.NumChannels())}}, "out of range"},
		{"cycle", Tree{Root: name("3.3"), Edges: []int32{channel("0.0", "1.0"), channel("1.0", "1.1"), channel("1.1", "0.1"), channel("0.1", "0.0")}}, "cycle"},
		{"too high", Tree{Root: name("0.0"), Edges: []int32{channel("0.0", "1.0"), channel("1.0", "2.0"), channel("2.0", "2.1"),
			channel("2.1", "1.1"), channel("1.1", "1.1/0")}}, "hops from root"},
	}
	for _, c := range cases {
		mem := members
		if c.name == "too high" {
			mem = []int32{name("1.1/0")}
		}
		_, err := v.Verify(mem, c.tree)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A tree over a link that has since failed.
	gf, _ := g.WithFaults([]int{int(good.Edges[0] >> 1)}, nil)
	vf := NewVerifier(mustHops(t, gf))
	if _, err := vf.Verify(members, good); err == nil || !strings.Contains(err.Error(), "failed link") {
		t.Errorf("failed link: %v", err)
	}
}

func mustHops(t *testing.T, g *topology.Graph) *topology.HopTable {
	t.Helper()
	h, err := topology.MinHops(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// VerifyShape's claim: a tree that passed Verify keeps passing it after
// the fabric loses links, whenever it passes VerifyShape. Checked on
// every test fabric with every engine's trees and random link failures;
// trees over a failed link fail both.
func TestVerifyShapeAfterFailures(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	kept, refused := 0, 0
	for _, f := range allFabrics(t) {
		gs := testGroups(t, f, 4, 20)
		for _, a := range algoList(t, "minhop", "sssp", "fulb") {
			res, err := Run(f.h, a, gs, Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for trial := 0; trial < 4; trial++ {
				var links []int
				for k := 0; k < 1+trial; k++ {
					links = append(links, r.IntN(f.g.NumLinks()))
				}
				g2, err := f.g.AddFaults(links, nil)
				if err != nil {
					t.Fatal(err)
				}
				h2, err := topology.MinHops(g2, 0)
				if err != nil {
					t.Fatal(err)
				}
				v := NewVerifier(h2)
				for i, tr := range res.Trees {
					shapeErr := v.VerifyShape(gs[i].Members, tr)
					_, fullErr := v.Verify(gs[i].Members, tr)
					if shapeErr == nil && fullErr != nil {
						t.Fatalf("%s %s: tree of %s passes VerifyShape but not Verify after failing %v: %v", f.spec, a, gs[i].Name, links, fullErr)
					}
					if shapeErr == nil {
						kept++
					} else {
						refused++
						if fullErr == nil {
							t.Fatalf("%s %s: VerifyShape refuses a tree Verify accepts: %v", f.spec, a, shapeErr)
						}
					}
				}
			}
		}
	}
	if kept == 0 || refused == 0 {
		t.Fatalf("kept %d, refused %d: the failures test nothing", kept, refused)
	}
	t.Logf("%d trees kept, %d refused", kept, refused)
}
