package multicast

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// groupsWith builds a workload's groups under a mapping.
func groupsWith(t *testing.T, f fabric, wspec, mspec string, seed uint64) []Group {
	t.Helper()
	w, err := ParseWorkload(wspec)
	if err != nil {
		t.Fatal(err)
	}
	if w.Map, err = ParseMapping(mspec); err != nil {
		t.Fatal(err)
	}
	gs, err := w.Groups(f.g, seed)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// rankOf inverts a grid line group: the node of every rank, from the line
// groups along X (rank x + A·y: group X.y<y> lists ranks in x order).
func ranksOf2D(t *testing.T, gs []Group, a, b int) []int32 {
	t.Helper()
	out := make([]int32, a*b)
	for _, g := range gs {
		var y int
		if _, err := fmt.Sscanf(g.Name, "X.y%d", &y); err != nil {
			continue
		}
		if len(g.Members) != a {
			t.Fatalf("line %s has %d members, want %d (one rank per node)", g.Name, len(g.Members), a)
		}
		for x, v := range g.Members {
			out[x+a*y] = v
		}
	}
	return out
}

// Linear is the old node order; random is a permutation of the slots
// (every node at most ppn ranks) fixed by the seed; blocked puts each block
// of the grid on consecutive slots.
func TestMappings(t *testing.T) {
	f := loadFabric(t, "torus:4x4:endpoints=2") // 32 end nodes
	eps := f.g.Endpoints()
	lin := ranksOf2D(t, groupsWith(t, f, "grid2d:8x4", "linear", 1), 8, 4)
	for r, v := range lin {
		if int(v) != eps[r] {
			t.Fatalf("linear: rank %d on %s, want %s", r, f.g.NodeName(int(v)), f.g.NodeName(eps[r]))
		}
	}
	rnd := ranksOf2D(t, groupsWith(t, f, "grid2d:8x4", "random", 3), 8, 4)
	if slices.Equal(rnd, lin) {
		t.Fatal("random mapping equals the linear one")
	}
	sorted := slices.Clone(rnd)
	slices.Sort(sorted)
	if !slices.Equal(sorted, lin) { // lin is the sorted end-node list
		t.Fatal("random mapping is not a permutation of the end nodes")
	}
	if again := ranksOf2D(t, groupsWith(t, f, "grid2d:8x4", "random", 3), 8, 4); !slices.Equal(again, rnd) {
		t.Fatal("random mapping differs for the same seed")
	}
	blk := ranksOf2D(t, groupsWith(t, f, "grid2d:8x4", "blocked:2x2", 1), 8, 4)
	for r, v := range blk {
		x, y := r%8, r/8
		block := x/2 + 4*(y/2) // 4 blocks along X
		in := x%2 + 2*(y%2)
		if int(v) != eps[4*block+in] {
			t.Fatalf("blocked: rank %d (x %d, y %d) on %s, want slot %d", r, x, y, f.g.NodeName(int(v)), 4*block+in)
		}
	}
	// ppn=2: random never puts more than two ranks on a node.
	gs := groupsWith(t, f, "random:count=1,size=64,ppn=2", "random", 5)
	if len(gs[0].Members) != 32 {
		t.Fatalf("64 ranks at 2 per node cover %d nodes, want 32", len(gs[0].Members))
	}
}

// A rank file reproduces the mapping it was written from, and bad rank
// files are refused with the line.
func TestRankFile(t *testing.T) {
	f := loadFabric(t, "torus:4x4:endpoints=2")
	want := groupsWith(t, f, "grid2d:8x4", "random", 9)
	rnd := ranksOf2D(t, want, 8, 4)
	var b strings.Builder
	b.WriteString("# rank file\n")
	for _, v := range rnd {
		b.WriteString(f.g.NodeName(int(v)) + "\n")
	}
	path := t.TempDir() + "/ranks"
	if err := writeFile(path, b.String()); err != nil {
		t.Fatal(err)
	}
	got := groupsWith(t, f, "grid2d:8x4", "file:"+path, 1)
	for i := range want {
		if !slices.Equal(got[i].Members, want[i].Members) {
			t.Fatalf("group %s: %v, want %v", want[i].Name, got[i].Members, want[i].Members)
		}
	}
	for _, c := range []struct{ text, want string }{
		{"0.0/0\n", "places 1 ranks; the workload has 4"},
		{"nosuch\n", `line 1: no node "nosuch"`},
		{"0.0/0 0.0/1\n", "one node per line"},
		{"0.0\n", "not an end node"},
	} {
		if _, err := ParseRankFile(f.g, []byte(c.text), 4); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{"bogus", "unknown kind"},
		{"blocked:", "want blocked:"},
		{"blocked:2x0", "out of range"},
		{"random:3", "takes no arguments"},
		{"file:", "missing file path"},
	} {
		if _, err := ParseMapping(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
	}
	w, _ := ParseWorkload("grid2d:8x4")
	for _, c := range []struct{ spec, want string }{{"blocked:3x2", "does not divide"}, {"blocked:2x2x1", "3 block extents"}} {
		w.Map, _ = ParseMapping(c.spec)
		if _, err := w.Groups(f.g, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.spec, err, c.want)
		}
	}
	w, _ = ParseWorkload("random:count=2,size=3")
	w.Map, _ = ParseMapping("blocked:2x2")
	if _, err := w.Groups(f.g, 1); err == nil || !strings.Contains(err.Error(), "need a grid2d or grid3d") {
		t.Errorf("blocked random workload: %v", err)
	}
}

// Mapping specs and rank files never panic; accepted mappings give valid
// groups.
func FuzzParseMapping(f *testing.F) {
	for _, s := range []string{"linear", "random", "blocked:2x2", "blocked:1x4", "file:x", "blocked:2x2x2", ""} {
		f.Add(s, []byte("0.0/0\n1.0/1\n"))
	}
	fab := loadFabric(f, "torus:4x4:endpoints=2")
	f.Fuzz(func(t *testing.T, spec string, ranks []byte) {
		if _, err := ParseRankFile(fab.g, ranks, 2); err != nil && strings.Contains(err.Error(), "panic") {
			t.Fatal(err)
		}
		mp, err := ParseMapping(spec)
		if err != nil || mp.Kind == "file" {
			return
		}
		w, _ := ParseWorkload("grid2d:8x4")
		w.Map = mp
		gs, err := w.Groups(fab.g, 1)
		if err != nil {
			return
		}
		for _, g := range gs {
			if err := CheckMembers(fab.g, g.Members); err != nil {
				t.Fatalf("%q: group %s: %v", spec, g.Name, err)
			}
		}
	})
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
