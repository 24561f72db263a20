package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/sched"
	"github.com/icn-hpc/icn/topology"
)

// --hostlist names exactly the chosen nodes (active and transit).
func TestAllocHostlist(t *testing.T) {
	o := allocOptions{nodes: 5, transit: 3, algo: "improved", rules: "angara*", prefix: "nid", hostlist: true}
	o.topo.spec = "torus:4x4x2"
	var line bytes.Buffer
	if err := runAlloc(context.Background(), o, &line); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Hostlist string `json:"hostlist"`
		Chosen   struct {
			Active, Transit []int
		} `json:"chosen"`
	}
	allocJSON(t, o, &v)
	if strings.TrimSpace(line.String()) != v.Hostlist {
		t.Errorf("line %q, JSON %q", line.String(), v.Hostlist)
	}
	names, err := sched.ExpandHostlist(v.Hostlist)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, x := range append(v.Chosen.Active, v.Chosen.Transit...) {
		want[sched.NewNodeNamer("nid", 32).Name(x)] = true
	}
	if len(names) != len(want) {
		t.Fatalf("%v for %v", names, want)
	}
	for _, n := range names {
		if !want[n] {
			t.Errorf("%s not chosen", n)
		}
	}
}

func TestSlurmTopologyFiles(t *testing.T) {
	dir := t.TempDir()
	for _, fabric := range []string{"fattree:k=4,n=3", "torus:4x6x10"} {
		o := slurmTopologyOptions{prefix: "nid", name: "t", dir: dir, format: "yaml"}
		o.fabric.spec = fabric
		var buf bytes.Buffer
		if err := runSlurmTopology(context.Background(), o, &buf); err != nil {
			t.Fatal(err)
		}
		y, _ := os.ReadFile(filepath.Join(dir, "topology.yaml"))
		c, _ := os.ReadFile(filepath.Join(dir, "topology.conf"))
		kind, line := "tree:", "SwitchName="
		if strings.HasPrefix(fabric, "torus") {
			kind, line = "block:", "BlockSizes=30,60,120,240"
		}
		if !strings.Contains(string(y), kind) || !strings.Contains(string(c), line) {
			t.Errorf("%s:\n%s\n%s", fabric, y, c)
		}
	}
	o := slurmTopologyOptions{prefix: "nid7", format: "yaml"}
	o.fabric.spec = "torus:4x4"
	if err := runSlurmTopology(context.Background(), o, &bytes.Buffer{}); err == nil {
		t.Error("prefix ending in a digit accepted")
	}
}

// nodePatterns names exactly the given set, each node once: the patterns
// parse back (as --busy reads them) to the same nodes, on random sets of
// random tori, and boxes give one pattern.
func TestNodePatternsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 14))
	for trial := 0; trial < 200; trial++ {
		spec := []string{"torus:8", "torus:4x4", "torus:6x5x4", "torus:4x3x2x2", "torus:16x8x8"}[trial%5]
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		n := g.NumNodes()
		var set []int
		switch trial % 3 {
		case 0: // random subset
			p := rng.Float64()
			for v := 0; v < n; v++ {
				if rng.Float64() < p {
					set = append(set, v)
				}
			}
		default: // a box, possibly wrapping, minus a few nodes when trial%3 == 2
			dims := g.Dims()
			c := make([]int, len(dims))
			start, size := make([]int, len(dims)), make([]int, len(dims))
			for i, d := range dims {
				start[i], size[i] = rng.IntN(d), 1+rng.IntN(d)
			}
			for v := 0; v < n; v++ {
				in := true
				for i, d := range dims {
					c[i] = g.CoordAt(v, i)
					in = in && (c[i]-start[i]+d)%d < size[i]
				}
				if in && (trial%3 == 1 || rng.IntN(10) > 0) {
					set = append(set, v)
				}
			}
		}
		pats := nodePatterns(g, set)
		got, err := g.ParseNodes(strings.Join(pats, ","))
		if len(set) == 0 {
			if len(pats) != 0 {
				t.Fatalf("%s: empty set gave %v", spec, pats)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: patterns %v: %v", spec, pats, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, set) {
			t.Fatalf("%s: patterns %v name %d nodes, want %d", spec, pats, len(got), len(set))
		}
		if trial%3 == 1 && len(pats) > 1<<len(g.Dims()) {
			t.Fatalf("%s: a box gave %d patterns: %v", spec, len(pats), pats)
		}
	}
}

// The table of a large allocation stays short: the count and the
// patterns, not every name; --json keeps every name.
func TestAllocCompactTable(t *testing.T) {
	o := allocOptions{nodes: 300, transit: 100, algo: "improved", rules: "angara*"}
	o.topo.spec = "torus:8x8x8"
	var out bytes.Buffer
	if err := runAlloc(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var active string
	for _, line := range strings.Split(out.String(), "\n") {
		if f, ok := strings.CutPrefix(line, "active"); ok {
			active = strings.TrimSpace(f)
		}
	}
	count, pats, ok := strings.Cut(active, " nodes: ")
	if !ok || count != "300" {
		t.Fatalf("active row %q: want the count and patterns", active)
	}
	g, _ := topology.Parse(o.topo.spec)
	fromTable, err := g.ParseNodes(strings.ReplaceAll(pats, " ", ","))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Names  []string               `json:"active_nodes"`
		Chosen struct{ Active []int } `json:"chosen"`
	}
	allocJSON(t, o, &v)
	if len(v.Names) != 300 || len(v.Chosen.Active) != 300 {
		t.Fatalf("--json lists %d names and %d ids, want 300", len(v.Names), len(v.Chosen.Active))
	}
	slices.Sort(fromTable)
	want := slices.Sorted(slices.Values(v.Chosen.Active))
	if !slices.Equal(fromTable, want) {
		t.Fatalf("table patterns %q name other nodes than --json", pats)
	}
}

// allocJSON runs `icn alloc --json` with o and decodes its output into v.
func allocJSON(t *testing.T, o allocOptions, v any) {
	t.Helper()
	o.out.json = true
	var js strings.Builder
	if err := runAlloc(context.Background(), o, &js); err != nil {
		t.Fatal(err)
	}
	decodeJSON(t, js.String(), v)
}

// The table of icn alloc says what --json says: the request, the count,
// the rectangle and φ of the chosen set, or why there is none.
func TestAllocTableMatchesJSON(t *testing.T) {
	for _, tc := range []struct {
		o    allocOptions
		busy string
	}{
		{allocOptions{nodes: 8, transit: 2, algo: "improved", rules: "angara*"}, ""},
		{allocOptions{nodes: 5, transit: 3, algo: "baseline", rules: "angara"}, "0.0.*"},
		{allocOptions{nodes: 16, algo: "improved", rules: "angara*"}, "0-2.*.*"}, // no set now
	} {
		o := tc.o
		o.topo.spec, o.busy = "torus:4x4x2", tc.busy
		var out bytes.Buffer
		err := runAlloc(context.Background(), o, &out)
		rows := map[string]string{}
		for _, line := range strings.Split(out.String(), "\n") {
			if k, v, ok := strings.Cut(line, "  "); ok {
				rows[k] = strings.TrimSpace(v)
			}
		}
		var v struct {
			alloc.Result
			Rules string `json:"rules"`
		}
		o.out.json = true
		var js strings.Builder
		if err2 := runAlloc(context.Background(), o, &js); (err == nil) != (err2 == nil) {
			t.Fatalf("%+v: table %v, --json %v", tc, err, err2)
		}
		decodeJSON(t, js.String(), &v)
		want := map[string]string{
			"request":          fmt.Sprintf("%d active, ≤ %d transit, %s, rules %s", o.nodes, o.transit, o.algo, o.rules),
			"candidates found": strconv.Itoa(v.Found),
		}
		if c := v.Chosen; c != nil {
			want["rectangle"] = fmt.Sprintf("%s (%d unavailable inside)", c.Rect, c.Holes)
			want["φ after"] = fmt.Sprintf("%d (largest free rectangle %d nodes ×%d)", c.Frag.Phi, c.Frag.LargestNodes, c.Frag.LargestCount)
		} else {
			want["result"] = "no allocation: " + v.Reason
			if v.Reason == "" || err == nil {
				t.Errorf("%+v: no set, reason %q, exit %v", tc, v.Reason, err)
			}
		}
		for k, w := range want {
			if rows[k] != w {
				t.Errorf("%+v: table row %q = %q, --json says %q", tc, k, rows[k], w)
			}
		}
	}
}
