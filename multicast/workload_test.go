package multicast

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Grid workloads: one group per line of the grid; with one process per end
// node every end node is in exactly one group per dimension of extent ≥ 2,
// and each group's members are the grid line mapped in order.
func TestGridGroups(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3") // 64 end nodes
	eps := f.g.Endpoints()
	for _, c := range []struct {
		spec string
		dims []int
	}{
		{"grid2d:8x8", []int{8, 8}},
		{"grid2d:16x4", []int{16, 4}},
		{"grid3d:4x4x4", []int{4, 4, 4}},
		{"grid3d:2x8x4", []int{2, 8, 4}},
		{"grid3d:1x8x8", []int{1, 8, 8}},
		{"grid2d:5x3", []int{5, 3}},
	} {
		w, err := ParseWorkload(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := w.Groups(f.g, 1)
		if err != nil {
			t.Fatal(err)
		}
		total, wantGroups, lines := 1, 0, 0
		for _, d := range c.dims {
			total *= d
		}
		for _, d := range c.dims {
			if d >= 2 {
				wantGroups += total / d
				lines++
			}
		}
		if len(gs) != wantGroups {
			t.Fatalf("%s: %d groups, want %d", c.spec, len(gs), wantGroups)
		}
		in := map[int32]int{}
		for _, g := range gs {
			for _, m := range g.Members {
				in[m]++
			}
		}
		for p := 0; p < total; p++ {
			if in[int32(eps[p])] != lines {
				t.Fatalf("%s: end node %d in %d groups, want %d", c.spec, p, in[int32(eps[p])], lines)
			}
		}
		if len(in) != total {
			t.Fatalf("%s: %d end nodes used, want %d", c.spec, len(in), total)
		}
		// Brute force: group "X.y1…" of a 2D grid is processes y·A + x.
		if len(c.dims) == 2 {
			for _, g := range gs {
				var want []int32
				var fixed int
				if _, err := fmt.Sscanf(g.Name[1:], ".%c%d", new(rune), &fixed); err != nil {
					t.Fatalf("group name %q", g.Name)
				}
				if g.Name[0] == 'X' {
					for x := 0; x < c.dims[0]; x++ {
						want = append(want, int32(eps[fixed*c.dims[0]+x]))
					}
				} else {
					for y := 0; y < c.dims[1]; y++ {
						want = append(want, int32(eps[y*c.dims[0]+fixed]))
					}
				}
				if !slices.Equal(g.Members, want) {
					t.Fatalf("%s group %s: %v, want %v", c.spec, g.Name, g.Members, want)
				}
			}
		}
	}
}

// With K processes per end node, a group holds each end node once.
func TestProcessesPerNode(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	w, _ := ParseWorkload("grid2d:16x16,ppn=4")
	gs, err := w.Groups(f.g, 1)
	if err != nil {
		t.Fatal(err)
	}
	eps := f.g.Endpoints()
	for _, g := range gs {
		seen := map[int32]bool{}
		for _, m := range g.Members {
			if seen[m] {
				t.Fatalf("%s lists %d twice", g.Name, m)
			}
			seen[m] = true
		}
		if g.Name[0] == 'X' && len(g.Members) != 4 { // 16 consecutive processes on 4 nodes
			t.Fatalf("%s: %d members, want 4", g.Name, len(g.Members))
		}
		if g.Name[0] == 'Y' && len(g.Members) != 16 { // stride 16 = 4 nodes apart
			t.Fatalf("%s: %d members, want 16", g.Name, len(g.Members))
		}
	}
	if gs[0].Members[0] != int32(eps[0]) || gs[0].Members[3] != int32(eps[3]) {
		t.Fatalf("processes not mapped in order: %v", gs[0].Members)
	}
	if _, err := (Workload{Kind: "grid2d", Dims: []int{16, 17}, PPN: 4, spec: "x"}).Groups(f.g, 1); err == nil || !strings.Contains(err.Error(), "needs 272 processes") {
		t.Fatalf("over capacity: %v", err)
	}
}

// Hierarchical groups: consecutive groups, then groups of their leaders,
// up to one top group; brute-force count and leader membership.
func TestHierGroups(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	w, err := ParseWorkload("hier:size=4.2,procs=60")
	if err != nil {
		t.Fatal(err)
	}
	gs, err := w.Groups(f.g, 1)
	if err != nil {
		t.Fatal(err)
	}
	// 60 → 15 groups of 4 (leaders 0,4,…,56) → 8 groups of 2 (7 of two, one
	// single leader skipped: 7 groups) → leaders 0,8,…,56 (8) → 4 → 2 → 1.
	var want []string
	for k := 0; k < 15; k++ {
		want = append(want, fmt.Sprintf("L1.%d", k))
	}
	for k := 0; k < 7; k++ {
		want = append(want, fmt.Sprintf("L2.%d", k))
	}
	for k := 0; k < 4; k++ {
		want = append(want, fmt.Sprintf("L3.%d", k))
	}
	want = append(want, "L4.0", "L4.1", "L5.0")
	var got []string
	for _, g := range gs {
		got = append(got, g.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	eps := f.g.Endpoints()
	top := gs[len(gs)-1]
	if !slices.Equal(top.Members, []int32{int32(eps[0]), int32(eps[32])}) {
		t.Fatalf("top group %v", top.Members)
	}
	// Every leader of level 1 is in its own group and one level-2 group.
	for _, g := range gs[:15] {
		leader := g.Members[0]
		n := 0
		for _, h := range gs[15:22] {
			if slices.Contains(h.Members, leader) {
				n++
			}
		}
		if n != 1 && leader != int32(eps[56]) {
			t.Fatalf("leader %d of %s in %d level-2 groups", leader, g.Name, n)
		}
	}
}

// Random groups: distinct members of the right size, the same for the same
// seed, different for another seed.
func TestRandomGroups(t *testing.T) {
	f := loadFabric(t, "torus:4x4:endpoints=2")
	w, err := ParseWorkload("random:count=50,size=3-7")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := w.Groups(f.g, 7)
	b, _ := w.Groups(f.g, 7)
	c, _ := w.Groups(f.g, 8)
	same := true
	for i := range a {
		if len(a[i].Members) < 3 || len(a[i].Members) > 7 {
			t.Fatalf("group size %d", len(a[i].Members))
		}
		if err := CheckMembers(f.g, a[i].Members); err != nil {
			t.Fatal(err)
		}
		for _, m := range a[i].Members {
			if f.g.Kind(int(m)) != 0 {
				t.Fatalf("member %d is not an end node", m)
			}
		}
		if !slices.Equal(a[i].Members, b[i].Members) {
			t.Fatal("same seed, different groups")
		}
		same = same && slices.Equal(a[i].Members, c[i].Members)
	}
	if same {
		t.Fatal("different seeds, same groups")
	}
	// Every process is drawn about equally often (Floyd's sampling is
	// uniform): 2000 draws of 5 out of 32 → 312 each on average.
	w2, _ := ParseWorkload("random:count=2000,size=5")
	gs, _ := w2.Groups(f.g, 1)
	count := map[int32]int{}
	for _, g := range gs {
		for _, m := range g.Members {
			count[m]++
		}
	}
	for m, n := range count {
		if n < 220 || n > 410 {
			t.Fatalf("end node %d drawn %d times, expected about 312", m, n)
		}
	}
}

// Group files: round trip through the text format; bad files are rejected
// with the line number.
func TestGroupFile(t *testing.T) {
	f := loadFabric(t, "dragonfly:a=4,p=2,h=2")
	gs := testGroups(t, f, 3, 20)
	var b strings.Builder
	b.WriteString("# groups\n\n")
	for i, g := range gs {
		fmt.Fprintf(&b, "%s:", g.Name)
		for j, m := range g.Members {
			if (i+j)%3 == 0 {
				fmt.Fprintf(&b, " %d", m) // ids work too
			} else {
				fmt.Fprintf(&b, " %s", f.g.NodeName(int(m)))
			}
			if j%2 == 1 {
				b.WriteString(",")
			}
		}
		b.WriteString("  # comment\n")
	}
	b.WriteString("g0-s0-h0 g1-s0-h0\n")
	back, err := ParseGroups(f.g, []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(gs)+1 || back[len(gs)].Name != fmt.Sprintf("line%d", len(gs)+3) {
		t.Fatalf("%d groups, last %q", len(back), back[len(back)-1].Name)
	}
	for i := range gs {
		if back[i].Name != gs[i].Name || !slices.Equal(back[i].Members, gs[i].Members) {
			t.Fatalf("group %d: %v, want %v", i, back[i], gs[i])
		}
	}
	for _, c := range []struct{ text, want string }{
		{"a: g0-s0-h0 nosuch\n", "line 1: group \"a\": no node \"nosuch\""},
		{"a: g0-s0-h0 g0-s0-h0\n", "lists node g0-s0-h0 twice"},
		{"a:\n", "has no members"},
		{"a: g0-s0-h0\na: g0-s0-h1\n", "already defined on line 1"},
		{"# nothing\n", "no groups"},
		{": x\n", "empty group name"},
	} {
		if _, err := ParseGroups(f.g, []byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

func TestWorkloadSpecErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"grid2d", "want KIND:ARGS"},
		{"grid2d:8", "needs 2 extents"},
		{"grid3d:8x8", "needs 3 extents"},
		{"grid2d:8x0", "out of range"},
		{"grid2d:8xq", "not an integer"},
		{"grid2d:8x8,ppn=0", "out of range"},
		{"grid2d:8x8,size=3", "unknown key"},
		{"grid2d:8x8,ppn=2,ppn=3", "given twice"},
		{"grid3d:5000x5000x5000", "more than"},
		{"hier:procs=8", "needs size"},
		{"hier:size=1", "out of range"},
		{"random:count=3", "needs count"},
		{"random:count=3,size=5-2", "empty"},
		{"random:count=4000000,size=1000", "too much"},
		{"ring:3", "unknown kind"},
		{"file:", "missing file path"},
		{"grid2d:8x8,ppn", "KEY=VALUE"},
	} {
		if _, err := ParseWorkload(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
	}
	f := loadFabric(t, "fattree:k=2,n=2")
	for _, c := range []struct{ spec, want string }{
		{"grid2d:4x4", "needs 16 processes"},
		{"random:count=2,size=9", "groups of 9 processes out of 4"},
		{"file:/nonexistent/groups.txt", "group file"},
		{"grid2d:1x1", "no group of two"},
	} {
		w, err := ParseWorkload(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Groups(f.g, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
	}
}
