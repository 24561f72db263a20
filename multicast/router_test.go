package multicast

import (
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

var allAlgos = []string{"minhop", "minhop-new", "sssp", "sssp-new", "fulb", "sssp+1g", "sssp-new+1g", "fulb+1g"}

// Every engine on every test fabric: trees pass an independent check and
// the EFI counted by brute force matches.
func TestEnginesBuildValidTrees(t *testing.T) {
	for _, f := range allFabrics(t) {
		gs := testGroups(t, f, 1, 40)
		ad := newAllDist(f.g)
		for _, a := range algoList(t, allAlgos...) {
			for _, rm := range []RootMetric{RootMax, RootMean} {
				res, err := Run(f.h, a, gs, Options{Root: rm}, nil)
				if err != nil {
					t.Fatalf("%s %s %s: %v", f.spec, a, rm, err)
				}
				if !res.Verified || len(res.Trees) != len(gs) {
					t.Fatalf("%s %s: not verified", f.spec, a)
				}
				for i, tr := range res.Trees {
					if err := checkTree(ad, gs[i].Members, tr); err != nil {
						t.Fatalf("%s %s %s group %s: %v", f.spec, a, rm, gs[i].Name, err)
					}
				}
				// Brute-force EFI: for each link, the trees containing it.
				maxEFI, sum, used := 0, 0, 0
				for l := 0; l < f.g.NumLinks(); l++ {
					n := 0
					for _, tr := range res.Trees {
						if slices.ContainsFunc(tr.Edges, func(c int32) bool { return int(c>>1) == l }) {
							n++
						}
					}
					if int(res.EFI[l]) != n {
						t.Fatalf("%s %s: link %d EFI %d, brute force %d", f.spec, a, l, res.EFI[l], n)
					}
					if n > 0 {
						used++
						sum += n
						maxEFI = max(maxEFI, n)
					}
				}
				if res.Max != maxEFI || res.LinksUsed != used || res.Mean != float64(sum)/float64(used) {
					t.Fatalf("%s %s: stats %+v, brute force max %d used %d sum %d", f.spec, a, res.EFIStats, maxEFI, used, sum)
				}
			}
		}
	}
}

// The loads a Router keeps agree with the trees it built.
func TestRouterLoadsMatchTrees(t *testing.T) {
	for _, f := range allFabrics(t)[:5] {
		gs := testGroups(t, f, 2, 30)
		for _, a := range algoList(t, "minhop-new", "sssp-new", "fulb") {
			r := NewRouter(f.h, a, Options{})
			var trees []Tree
			for _, g := range gs {
				tr, err := r.Route(g.Members)
				if err != nil {
					t.Fatal(err)
				}
				trees = append(trees, tr)
			}
			efi := LinkEFI(f.g, trees)
			for l := range efi {
				if r.LinkLoad(l) != int(efi[l]) {
					t.Fatalf("%s %s: link %d load %d, EFI %d", f.spec, a, l, r.LinkLoad(l), efi[l])
				}
			}
			for v := 0; v < f.g.NumNodes(); v++ {
				if f.h.RouterIndex(v) < 0 {
					continue
				}
				n := 0
				for _, tr := range trees {
					if treeNodes(f.g, tr)[v] {
						n++
					}
				}
				if r.SwitchLoad(v) != n {
					t.Fatalf("%s %s: switch %s load %d, trees through it %d", f.spec, a, f.g.NodeName(v), r.SwitchLoad(v), n)
				}
			}
			// Releasing every tree brings all loads back to zero.
			for _, tr := range trees {
				r.Release(tr)
			}
			for l := 0; l < f.g.NumLinks(); l++ {
				if r.LinkLoad(l) != 0 {
					t.Fatalf("%s %s: load %d left on link %d", f.spec, a, r.LinkLoad(l), l)
				}
			}
		}
	}
}

func treeNodes(g *topology.Graph, t Tree) map[int]bool {
	in := map[int]bool{int(t.Root): true}
	for _, c := range t.Edges {
		in[g.Dst(int(c))] = true
	}
	return in
}

// replay calls check for every tree with the switch and link loads of the
// trees before it.
func replay(g *topology.Graph, trees []Tree, check func(i int, swLoad map[int]int, linkLoad []int)) {
	swLoad := map[int]int{}
	linkLoad := make([]int, g.NumLinks())
	for i, tr := range trees {
		check(i, swLoad, linkLoad)
		for v := range treeNodes(g, tr) {
			if forwards(g, v) {
				swLoad[v]++
			}
		}
		for _, c := range tr.Edges {
			linkLoad[c>>1]++
		}
	}
}

// Root choice against brute force: the root minimises the largest (or
// total) distance to the members; without rotation it is the first such
// switch, with rotation the least loaded one (first on ties).
func TestRootChoiceBruteForce(t *testing.T) {
	for _, f := range allFabrics(t) {
		gs := testGroups(t, f, 3, 40)
		ad := newAllDist(f.g)
		var switches []int
		for v := 0; v < f.g.NumNodes(); v++ {
			if forwards(f.g, v) && !f.g.NodeFailed(v) {
				switches = append(switches, v)
			}
		}
		for _, a := range algoList(t, "minhop", "minhop-new", "sssp", "sssp-new", "fulb") {
			for _, rm := range []RootMetric{RootMax, RootMean} {
				res, err := Run(f.h, a, gs, Options{Root: rm}, nil)
				if err != nil {
					t.Fatal(err)
				}
				replay(f.g, res.Trees, func(i int, swLoad map[int]int, _ []int) {
					best, want := -1, -1
					for _, s := range switches {
						d := ad.from(s)
						score := 0
						for _, m := range gs[i].Members {
							if rm == RootMean {
								score += d[m]
							} else {
								score = max(score, d[m])
							}
						}
						better := best < 0 || score < best
						if !better && score == best && a.Rotate && swLoad[s] < swLoad[want] {
							better = true
						}
						if better {
							best, want = score, s
						}
					}
					if got := int(res.Trees[i].Root); got != want {
						t.Fatalf("%s %s %s group %s: root %s, brute force %s", f.spec, a, rm, gs[i].Name,
							f.g.NodeName(got), f.g.NodeName(want))
					}
				})
			}
		}
	}
}

// MINHOP-MC: the tree is the union of the root-to-member paths that take,
// at every switch, the lowest port on a shortest path to the member.
func TestMinhopLowestPortPaths(t *testing.T) {
	for _, f := range allFabrics(t) {
		gs := testGroups(t, f, 4, 30)
		for _, a := range algoList(t, "minhop", "minhop-new") {
			res, err := Run(f.h, a, gs, Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, tr := range res.Trees {
				want := map[int32]bool{}
				for _, m := range gs[i].Members {
					dm := bfs(f.g, int(m))
					for s := int(tr.Root); s != int(m); {
						next := -1
						for _, c := range f.g.Out(s) {
							x := f.g.Dst(int(c))
							if f.g.Up(int(c)) && (x == int(m) || forwards(f.g, x)) && dm[x] == dm[s]-1 {
								want[c] = true
								next = x
								break
							}
						}
						if next < 0 {
							t.Fatalf("no path")
						}
						s = next
					}
				}
				got := map[int32]bool{}
				for _, c := range tr.Edges {
					got[c] = true
				}
				if len(got) != len(want) {
					t.Fatalf("%s %s group %s: %d edges, lowest-port paths give %d", f.spec, a, gs[i].Name, len(got), len(want))
				}
				for c := range want {
					if !got[c] {
						t.Fatalf("%s %s group %s: lowest-port edge %d missing", f.spec, a, gs[i].Name, c)
					}
				}
			}
		}
	}
}

// FULB-MC link rotation: every edge a member's walk takes toward the root
// is a least-loaded one among the min-hop choices at that node.
func TestFULBLinkRotation(t *testing.T) {
	for _, f := range allFabrics(t) {
		gs := testGroups(t, f, 5, 60)
		res, err := Run(f.h, Algo{Kind: FULB, Rotate: true}, gs, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ad := newAllDist(f.g)
		replay(f.g, res.Trees, func(i int, _ map[int]int, load []int) {
			tr := res.Trees[i]
			dr := ad.from(int(tr.Root))
			for _, c := range tr.Edges {
				child := f.g.Dst(int(c))
				best := -1
				for _, o := range f.g.Out(child) {
					y := f.g.Dst(int(o))
					if !f.g.Up(int(o)) || !forwards(f.g, y) || dr[y] != dr[child]-1 || (forwards(f.g, child) && !forwards(f.g, y)) {
						continue
					}
					if best < 0 || load[o>>1] < best {
						best = load[o>>1]
					}
				}
				if load[c>>1] != best {
					t.Fatalf("%s group %s: edge to %s has load %d, least-loaded choice %d", f.spec, gs[i].Name, f.g.NodeName(child), load[c>>1], best)
				}
			}
		})
	}
}

// SSSP-MC: every member's tree path carries the least total load among the
// shortest paths from the root (Dijkstra's optimum, computed here by
// dynamic programming over the shortest-path DAG).
func TestSSSPLeastLoadedPaths(t *testing.T) {
	for _, f := range allFabrics(t) {
		gs := testGroups(t, f, 6, 60)
		res, err := Run(f.h, Algo{Kind: SSSP, Rotate: true}, gs, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ad := newAllDist(f.g)
		replay(f.g, res.Trees, func(i int, _ map[int]int, load []int) {
			tr := res.Trees[i]
			root := int(tr.Root)
			dr := ad.from(root)
			best := dagMin(f.g, root, dr, func(c int) int { return load[c>>1] })
			parent := map[int]int32{}
			for _, c := range tr.Edges {
				parent[f.g.Dst(int(c))] = c
			}
			for _, m := range gs[i].Members {
				sum := 0
				for x := int(m); x != root; x = f.g.Src(int(parent[x])) {
					sum += load[parent[x]>>1]
				}
				if sum != best[m] {
					t.Fatalf("%s group %s: path to %s carries load %d, least %d", f.spec, gs[i].Name, f.g.NodeName(int(m)), sum, best[m])
				}
			}
		})
	}
}

// dagMin returns, for every node, the least total cost of a shortest path
// from root (relaying only through forwarding nodes).
func dagMin(g *topology.Graph, root int, dr []int, cost func(c int) int) []int {
	order := make([]int, 0, g.NumNodes())
	for v := range dr {
		if dr[v] >= 0 {
			order = append(order, v)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return dr[a] - dr[b] })
	best := make([]int, g.NumNodes())
	for i := range best {
		best[i] = 1 << 30
	}
	best[root] = 0
	for _, v := range order {
		if v != root && !forwards(g, v) {
			continue
		}
		for _, c := range g.Out(v) {
			w := g.Dst(int(c))
			if g.Up(int(c)) && dr[w] == dr[v]+1 && best[v]+cost(int(c)) < best[w] {
				best[w] = best[v] + cost(int(c))
			}
		}
	}
	return best
}

// +1g: every member's tree path crosses the fewest global links any
// shortest path from the root does.
func TestOneGlobalFewestGlobalLinks(t *testing.T) {
	for _, spec := range []string{"dragonfly:a=4,p=2,h=2", "dragonfly:a=3,p=2,h=2"} {
		f := loadFabric(t, spec)
		gs := testGroups(t, f, 7, 60)
		ad := newAllDist(f.g)
		glob := func(c int) int {
			if f.g.Link(c>>1).Class == topology.Global {
				return 1
			}
			return 0
		}
		for _, a := range algoList(t, "fulb+1g", "sssp+1g", "sssp-new+1g") {
			res, err := Run(f.h, a, gs, Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, tr := range res.Trees {
				root := int(tr.Root)
				best := dagMin(f.g, root, ad.from(root), glob)
				parent := map[int]int32{}
				for _, c := range tr.Edges {
					parent[f.g.Dst(int(c))] = c
				}
				for _, m := range gs[i].Members {
					n := 0
					for x := int(m); x != root; x = f.g.Src(int(parent[x])) {
						n += glob(int(parent[x]))
					}
					if n != best[m] {
						t.Fatalf("%s %s group %s: %d global links to %s, fewest %d", spec, a, gs[i].Name, n, f.g.NodeName(int(m)), best[m])
					}
				}
			}
		}
	}
}

// On fat trees (XGFTs) the path from a root to a member below it is unique,
// so with the same root rotation MINHOP-new, SSSP-new and FULB build the
// same trees (the seed's finding (3) for the standard fat tree).
func TestFatTreeEnginesAgree(t *testing.T) {
	for _, spec := range []string{"fattree:k=4,n=3", "xgft:m=4.3.3,w=1.2.2", "xgft:m=4.4,w=1.3"} {
		f := loadFabric(t, spec)
		// End-node members only: a switch member can sit beside the
		// root's subtree, with several shortest paths to it.
		w, _ := ParseWorkload("random:count=80,size=1-9")
		gs, err := w.Groups(f.g, 8)
		if err != nil {
			t.Fatal(err)
		}
		var ref []int32
		for _, a := range algoList(t, "minhop-new", "sssp-new", "fulb") {
			res, err := Run(f.h, a, gs, Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = res.EFI
			} else if !slices.Equal(ref, res.EFI) {
				t.Fatalf("%s: %s EFI differs from minhop-new", spec, a)
			}
		}
	}
}

// Root rotation: on a fat tree, many groups spanning every pod spread over
// the top switches, while plain MINHOP puts them all on the first one.
func TestRootRotationSpreadsRoots(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	var eps []int32
	for _, v := range f.g.Endpoints() {
		eps = append(eps, int32(v))
	}
	var gs []Group
	for i := 0; i < 16; i++ {
		gs = append(gs, Group{Name: "all", Members: eps})
	}
	plain, _ := Run(f.h, Algo{Kind: MinHop}, gs, Options{}, nil)
	rot, _ := Run(f.h, Algo{Kind: MinHop, Rotate: true}, gs, Options{}, nil)
	roots := map[int32]bool{}
	for _, tr := range rot.Trees {
		roots[tr.Root] = true
	}
	tops := 0
	for _, s := range f.g.Switches() {
		if f.g.Level(s) == 3 {
			tops++
		}
	}
	// Every leaf has 4 up-links; 16 groups rooted at 16 different tops use
	// each of them 4 times, against 16 times when every group has the same
	// root.
	if len(roots) != tops || plain.MaxSwitch != len(gs) || rot.MaxSwitch != len(gs)/4 {
		t.Fatalf("rotation used %d roots of %d tops, max switch EFI %d (plain %d)", len(roots), tops, rot.MaxSwitch, plain.MaxSwitch)
	}
}

func TestBadInput(t *testing.T) {
	f := loadFabric(t, "fattree:k=2,n=2")
	a := Algo{Kind: FULB, Rotate: true}
	cases := []struct {
		members []int32
		want    string
	}{
		{nil, "empty group"},
		{[]int32{0, 0}, "listed twice"},
		{[]int32{999}, "not a node"},
		{[]int32{-1}, "not a node"},
	}
	for _, c := range cases {
		_, err := Run(f.h, a, []Group{{Name: "x", Members: c.members}}, Options{}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("members %v: error %v, want %q", c.members, err, c.want)
		}
	}
	// A failed member.
	g, _ := f.g.WithFaults(nil, []int{1})
	h, _ := topology.MinHops(g, 0)
	if _, err := Run(h, a, []Group{{Name: "x", Members: []int32{0, 1}}}, Options{}, nil); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Errorf("failed member: %v", err)
	}
	// Disconnected fabric: cut h1's only cable; the error names h1.
	g2, _ := f.g.WithFaults([]int{linkOf(f.g, "h1")}, nil)
	h2, _ := topology.MinHops(g2, 0)
	for _, alg := range algoList(t, allAlgos...) {
		_, err := Run(h2, alg, []Group{{Name: "x", Members: []int32{0, 1, 2}}}, Options{}, nil)
		if err == nil || !strings.Contains(err.Error(), "disconnected") || !strings.Contains(err.Error(), "h1") || strings.Contains(err.Error(), "h0,") {
			t.Errorf("%s disconnected: %v", alg, err)
		}
	}
	if _, err := ParseAlgo("fast"); err == nil {
		t.Error("unknown engine accepted")
	}
	if _, err := ParseAlgo("minhop+1g"); err == nil {
		t.Error("minhop+1g accepted")
	}
	if _, err := ParseAlgos("fulb,fulb"); err == nil {
		t.Error("duplicate engine accepted")
	}
	if _, err := ParseAlgos(" , "); err == nil {
		t.Error("empty engine list accepted")
	}
}

func linkOf(g *topology.Graph, name string) int {
	v := g.NodeByName(name)
	return int(g.Out(v)[0] >> 1)
}

func TestAlgoNamesRoundTrip(t *testing.T) {
	for _, n := range allAlgos {
		a, err := ParseAlgo(n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ParseAlgo(a.String())
		if err != nil || a != b || a.String() != n {
			t.Fatalf("%s -> %s -> %v", n, a, b)
		}
	}
}

// Same input, same trees.
func TestDeterministic(t *testing.T) {
	f := loadFabric(t, "torus:4x4:endpoints=2")
	gs := testGroups(t, f, 9, 50)
	for _, a := range algoList(t, "minhop-new", "sssp-new", "fulb", "fulb+1g") {
		r1, _ := Run(f.h, a, gs, Options{}, nil)
		r2, _ := Run(f.h, a, gs, Options{}, nil)
		for i := range r1.Trees {
			if r1.Trees[i].Root != r2.Trees[i].Root || !slices.Equal(r1.Trees[i].Edges, r2.Trees[i].Edges) {
				t.Fatalf("%s: group %d differs between runs", a, i)
			}
		}
	}
}

// A lazy hop table (columns computed on first use, as the fabric manager
// uses on large tori) gives the same trees as the full table, for every
// engine on every test fabric; the lazy table computes fewer columns than
// the full one has.
func TestLazyHopsSameTrees(t *testing.T) {
	for _, f := range allFabrics(t) {
		gs := testGroups(t, f, 3, 12)
		for _, a := range algoList(t, allAlgos...) {
			full, err := Run(f.h, a, gs, Options{}, nil)
			if err != nil {
				t.Fatalf("%s %s: %v", f.spec, a, err)
			}
			lazy := topology.MinHopsLazy(f.g)
			got, err := Run(lazy, a, gs, Options{}, nil)
			if err != nil {
				t.Fatalf("%s %s lazy: %v", f.spec, a, err)
			}
			for i := range full.Trees {
				if full.Trees[i].Root != got.Trees[i].Root || !slices.Equal(full.Trees[i].Edges, got.Trees[i].Edges) {
					t.Fatalf("%s %s group %s: lazy tree differs", f.spec, a, gs[i].Name)
				}
			}
		}
	}
}
