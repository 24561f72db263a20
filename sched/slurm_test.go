package sched

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
	"go.yaml.in/yaml/v3"
)

func TestHostlist(t *testing.T) {
	nn := NewNodeNamer("nid", 1024)
	var names []string
	for _, v := range []int{7, 1, 2, 3, 4} {
		names = append(names, nn.Name(v))
	}
	if got := Hostlist(names); got != "nid[0001-0004,0007]" {
		t.Errorf("got %q", got)
	}
	if got := Hostlist([]string{"login", "nid0005", "sw3", "sw4"}); got != "nid0005,sw[3-4],login" {
		t.Errorf("got %q", got)
	}
	// Round trip on random sets.
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		set := map[string]bool{}
		for k := r.IntN(40); k >= 0; k-- {
			set[nn.Name(r.IntN(64))] = true
			if r.IntN(5) == 0 {
				set[fmt.Sprintf("s%d", r.IntN(12))] = true
			}
		}
		var in []string
		for n := range set {
			in = append(in, n)
		}
		expr := Hostlist(in)
		out, err := ExpandHostlist(expr)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		sort.Strings(in)
		sort.Strings(out)
		if !slices.Equal(in, out) {
			t.Fatalf("%v → %q → %v", in, expr, out)
		}
	}
}

// checkSlurmYAML reads topology.yaml with the field names of
// topology.yaml(5) only and checks the rules stated there.
func checkSlurmYAML(t *testing.T, text string) []SlurmTopology {
	t.Helper()
	var tops []SlurmTopology
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&tops); err != nil {
		t.Fatalf("not a topology.yaml: %v\n%s", err, text)
	}
	if !strings.HasPrefix(strings.TrimLeft(strings.SplitN(text, "- ", 2)[1], " "), "topology:") {
		t.Error("topology is not the first attribute")
	}
	for _, tp := range tops {
		if (tp.Tree == nil) == (tp.Block == nil) {
			t.Errorf("%s: want exactly one of tree and block", tp.Topology)
		}
		if tp.Block != nil {
			for i := 1; i < len(tp.Block.BlockSizes); i++ {
				r := tp.Block.BlockSizes[i] / tp.Block.BlockSizes[i-1]
				if tp.Block.BlockSizes[i]%tp.Block.BlockSizes[i-1] != 0 || r&(r-1) != 0 || r < 2 {
					t.Errorf("block sizes %v: each must be a power-of-two multiple of the one before", tp.Block.BlockSizes)
				}
			}
		}
	}
	return tops
}

func TestSlurmTreeTopology(t *testing.T) {
	g := mustParse(t, "fattree:k=4,n=3")
	m, err := NewTreeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	nn := NewNodeNamer("nid", m.Size())
	top := SlurmTreeTopology("fabric", m, nn)
	var buf bytes.Buffer
	if err := WriteTopologyYAML(&buf, []SlurmTopology{top}); err != nil {
		t.Fatal(err)
	}
	tops := checkSlurmYAML(t, buf.String())
	// Every node under exactly one leaf, the leaf its network has; every
	// switch but the top one the child of exactly one switch.
	leafOf := map[string]string{}
	parent := map[string]int{}
	for _, s := range tops[0].Tree.Switches {
		nodes, _ := ExpandHostlist(s.Nodes)
		for _, n := range nodes {
			if _, dup := leafOf[n]; dup {
				t.Fatalf("%s under two switches", n)
			}
			leafOf[n] = s.Switch
		}
		kids, _ := ExpandHostlist(s.Children)
		for _, k := range kids {
			parent[k]++
		}
	}
	if len(leafOf) != m.Size() {
		t.Fatalf("%d nodes listed, %d in the machine", len(leafOf), m.Size())
	}
	for v := 0; v < m.Size(); v++ {
		for u := 0; u < m.Size(); u++ {
			same := m.LeafOf(v) == m.LeafOf(u)
			if same != (leafOf[nn.Name(v)] == leafOf[nn.Name(u)]) {
				t.Fatalf("nodes %d and %d: same leaf %v in the network, not in the file", v, u, same)
			}
		}
	}
	roots := 0
	for _, s := range tops[0].Tree.Switches {
		switch parent[s.Switch] {
		case 0:
			roots++
		case 1:
		default:
			t.Errorf("switch %s has %d parents", s.Switch, parent[s.Switch])
		}
	}
	if roots != 1 || len(tops[0].Tree.Switches) != 16+4+1 {
		t.Errorf("%d roots, %d switches; want 1 and 16 leaves + 4 pods + 1 top", roots, len(tops[0].Tree.Switches))
	}
	var conf bytes.Buffer
	WriteTopologyConf(&conf, top)
	if !strings.Contains(conf.String(), "SwitchName=l0s00 Nodes=nid[00-03]") || !strings.Contains(conf.String(), "SwitchName=l2s0 Switches=l1s[0-3]") {
		t.Errorf("topology.conf:\n%s", conf.String())
	}
}

func TestSlurmBlockTopology(t *testing.T) {
	g := mustParse(t, "torus:8x8x4")
	nn := NewNodeNamer("nid", g.NumNodes())
	top, err := SlurmBlockTopology("torus", g, nn, 16)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	WriteTopologyYAML(&buf, []SlurmTopology{top})
	b := checkSlurmYAML(t, buf.String())[0].Block
	if !slices.Equal(b.BlockSizes, []int{16, 32, 64, 128, 256}) || len(b.Blocks) != 16 {
		t.Fatalf("sizes %v, %d blocks", b.BlockSizes, len(b.Blocks))
	}
	// Every aligned run of 2^k blocks is a brick: a product of intervals.
	var nodes [][]int
	for _, bl := range b.Blocks {
		names, _ := ExpandHostlist(bl.Nodes)
		var ids []int
		for _, n := range names {
			var v int
			fmt.Sscanf(strings.TrimPrefix(n, "nid"), "%d", &v)
			ids = append(ids, v)
		}
		nodes = append(nodes, ids)
	}
	for run := 1; run <= len(nodes); run *= 2 {
		for s := 0; s < len(nodes); s += run {
			var set []int
			for _, ns := range nodes[s : s+run] {
				set = append(set, ns...)
			}
			if !isBrick(g.Dims(), set) || len(set) != run*16 {
				t.Fatalf("blocks %d..%d (%d nodes) are not a brick", s, s+run-1, len(set))
			}
		}
	}
	if _, err := SlurmBlockTopology("t", g, nn, 24); err == nil {
		t.Error("block size 24 accepted on 8x8x4")
	}
}

// isBrick: the set is the product of the coordinate values it uses.
func isBrick(dims []int, set []int) bool {
	vals := make([]map[int]bool, len(dims))
	for i := range vals {
		vals[i] = map[int]bool{}
	}
	for _, v := range set {
		for i, d := range dims {
			vals[i][v%d] = true
			v /= d
		}
	}
	prod := 1
	for _, m := range vals {
		prod *= len(m)
	}
	return prod == len(set)
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"nid[0001-0004,0007]", "a,b[1-2],c", "x[", "n[5-3]", "s[01-10],login"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := ExpandHostlist(expr)
		if err != nil || len(names) > 5000 {
			return
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, ",[]") {
				return // not a name Hostlist is meant for
			}
		}
		back, err := ExpandHostlist(Hostlist(names))
		if err != nil {
			t.Fatalf("%q → %q: %v", expr, Hostlist(names), err)
		}
		a, b := slices.Clone(names), back
		sort.Strings(a)
		a = slices.Compact(a)
		sort.Strings(b)
		if !slices.Equal(a, b) {
			t.Fatalf("%q: %v → %q → %v", expr, a, Hostlist(names), b)
		}
	})
}

// BlockAsTree: every base block is a leaf with its nodes, every switch
// above holds a brick (the union of its leaves' nodes is a product of
// intervals), there is one top switch over all nodes, and Slurm's
// topology.conf syntax is written for topology/tree.
func TestBlockAsTree(t *testing.T) {
	for _, spec := range []string{"torus:8x8x4", "torus:4x6x10", "torus:4x4x4"} {
		g := mustParse(t, spec)
		nn := NewNodeNamer("nid", g.NumNodes())
		blk, err := SlurmBlockTopology("torus", g, nn, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := BlockAsTree(blk)
		if err != nil || tr.Tree == nil || tr.Block != nil {
			t.Fatalf("%s: %+v %v", spec, tr, err)
		}
		under := map[string][]int{} // switch -> node ids below it
		parents := map[string]int{}
		var top string
		for _, s := range tr.Tree.Switches {
			if s.Nodes != "" {
				names, _ := ExpandHostlist(s.Nodes)
				for _, n := range names {
					var v int
					fmt.Sscanf(strings.TrimPrefix(n, "nid"), "%d", &v)
					under[s.Switch] = append(under[s.Switch], v)
				}
				continue
			}
			kids := strings.Split(s.Children, ",")
			if len(kids) > 2 {
				t.Fatalf("%s: switch %s has %d children", spec, s.Switch, len(kids))
			}
			for _, k := range kids {
				under[s.Switch] = append(under[s.Switch], under[k]...)
				parents[k]++
			}
			if !isBrick(g.Dims(), under[s.Switch]) {
				t.Fatalf("%s: switch %s does not hold a brick", spec, s.Switch)
			}
			top = s.Switch
		}
		if len(under[top]) != g.NumNodes() {
			t.Fatalf("%s: top switch %s holds %d of %d nodes", spec, top, len(under[top]), g.NumNodes())
		}
		for sw, n := range parents {
			if n != 1 {
				t.Fatalf("%s: switch %s has %d parents", spec, sw, n)
			}
		}
		var conf bytes.Buffer
		WriteTopologyConf(&conf, tr)
		if !strings.Contains(conf.String(), "TopologyPlugin=topology/tree") || strings.Contains(conf.String(), "BlockName") {
			t.Fatalf("%s: conf\n%s", spec, conf.String())
		}
	}
	if _, err := BlockAsTree(SlurmTopology{}); err == nil {
		t.Fatal("an empty topology converted")
	}
}

// TestSlurmTopologyFiles checks the file set per Slurm release: before
// 23.11 a block topology is written as a tree and there is no YAML; from
// 23.11 topology.conf holds the blocks; from 25.05 topology.yaml comes
// too; a release that is not one is refused.
func TestSlurmTopologyFiles(t *testing.T) {
	g := mustParse(t, "torus:4x4x2")
	top, err := SlurmBlockTopology("torus", g, NewNodeNamer("nid", g.NumNodes()), 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		release   string
		tree, yml bool
	}{{"22.05", true, false}, {"23.11", false, false}, {"24.11.3", false, false}, {"25.05", false, true}} {
		f, err := SlurmTopologyFiles(top, tc.release)
		if err != nil {
			t.Fatal(tc.release, err)
		}
		if (f.Topology.Tree != nil) != tc.tree || (f.YAML != nil) != tc.yml || f.For != "Slurm "+tc.release {
			t.Fatalf("%s: tree %v yaml %v for %q", tc.release, f.Topology.Tree != nil, f.YAML != nil, f.For)
		}
		wantConf := "BlockName="
		if tc.tree {
			wantConf = "SwitchName="
		}
		if !strings.HasPrefix(string(f.Conf), "# for "+f.For+"\n") || !strings.Contains(string(f.Conf), wantConf) {
			t.Fatalf("%s: topology.conf\n%s", tc.release, f.Conf)
		}
	}
	for _, bad := range []string{"", "22", "latest", "16.05", "22.13"} {
		if _, err := SlurmTopologyFiles(top, bad); err == nil {
			t.Fatalf("release %q accepted", bad)
		}
	}
}

// SlurmTopologyOf writes a torus or mesh for topology/block over its node
// ids and a switched fabric for topology/tree over its end nodes, naming
// the nodes Slurm sees with names; anything else, or a naming that
// fails, is refused.
func TestSlurmTopologyOf(t *testing.T) {
	for _, c := range []struct {
		spec  string
		block bool
	}{{"torus:4x4x2", true}, {"torus:4x4:mesh=Y", true}, {"fattree:k=4,n=2", false}, {"dragonfly:a=4,p=2,h=2", false}} {
		g, err := topology.Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		var seen []int
		top, err := SlurmTopologyOf("default", g, 0, func(n int, vertex func(int) int) (NodeNamer, error) {
			for i := range n {
				seen = append(seen, vertex(i))
			}
			return NewNodeNamer("nid", n), nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if (top.Block != nil) != c.block || (top.Tree != nil) == c.block || top.Topology != "default" {
			t.Errorf("%s: block %v, tree %v, name %q; want block %v", c.spec, top.Block != nil, top.Tree != nil, top.Topology, c.block)
		}
		// Slurm sees every end node once: the node ids in order on a
		// torus, the end nodes (no switch) on a fabric.
		want := g.Endpoints()
		if c.block {
			want = nil
			for v := range g.NumNodes() {
				want = append(want, v)
			}
		}
		if got := slices.Sorted(slices.Values(seen)); !slices.Equal(got, want) || c.block && !slices.Equal(seen, want) {
			t.Errorf("%s: named vertices %v, want %v", c.spec, seen, want)
		}
	}
	g, _ := topology.Parse("torus:4x4")
	if _, err := SlurmTopologyOf("default", g, 0, func(int, func(int) int) (NodeNamer, error) { return NodeNamer{}, fmt.Errorf("no names") }); err == nil || err.Error() != "no names" {
		t.Errorf("a naming that fails: %v", err)
	}
	g, _ = topology.Parse("complete:4")
	if _, err := SlurmTopologyOf("default", g, 0, func(n int, _ func(int) int) (NodeNamer, error) { return NewNodeNamer("nid", n), nil }); err == nil {
		t.Error("complete:4 (no switches, no coordinates) accepted")
	}
}
