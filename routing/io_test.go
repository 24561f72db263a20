package routing

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

func buildFor(t testing.TB, spec, faults string, kind Kind, activeList, transitList string, algo Algo) *Table {
	t.Helper()
	g := mustTorus(t, spec)
	g, err := g.ApplyFaults(faults, "")
	if err != nil {
		t.Fatal(err)
	}
	var active, transit []int
	if activeList == "" {
		active = allNodes(g.NumNodes())
	} else if active, err = g.ParseNodes(activeList); err != nil {
		t.Fatal(err)
	}
	if transit, err = g.ParseNodes(transitList); err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(g, Rule{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := r.Build(context.Background(), active, transit, BuildOptions{Algo: algo})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func tableJSON(t testing.TB, tb *Table) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tb.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func checkBytes(t testing.TB, b []byte, links, nodes string) (*Report, error) {
	t.Helper()
	tf, err := ReadTableJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	rep, _, err := verifyJSON(tf, links, nodes)
	return rep, err
}

// TestJSONRoundTrip writes tables as JSON, checks the format of issue 3
// (keys, coordinates, "+X" directions) and re-verifies them from the file.
func TestJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		spec, faults  string
		kind          Kind
		active, trans string
		algo          Algo
	}{
		{"4x4x2", "", AngaraStar, "", "", BFS},
		{"4x4x2", "0.0.0+X,1.2.1+Y,3.3.0+Z", AngaraMinus, "", "", BFS},
		{"5x4", "1.1+X,2.2+Y", AngaraStar, "0-3.0-3", "4.0-3", BFS},
		{"4x4", "", Dirbit, "", "", Baseline},
		{"3x3x3", "", DOR, "0-1.0-1.0-1", "", Baseline},
		{"4x4", "", Angara, "", "", BFS},
	} {
		tb := buildFor(t, tc.spec, tc.faults, tc.kind, tc.active, tc.trans, tc.algo)
		b := tableJSON(t, tb)
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("%s: invalid JSON: %v", tc.spec, err)
		}
		for _, k := range []string{"dims", "rules", "routes", "stats", "deadlock_free"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("%s: key %q missing", tc.spec, k)
			}
		}
		var stats map[string]float64
		if err := json.Unmarshal(raw["stats"], &stats); err != nil || len(stats) != 4 {
			t.Errorf("%s: stats %s", tc.spec, raw["stats"])
		}
		var routes []RouteJSON
		if err := json.Unmarshal(raw["routes"], &routes); err != nil || len(routes) != tb.NumRoutes() {
			t.Fatalf("%s: %d routes, %v", tc.spec, len(routes), err)
		}
		g := tb.Graph()
		for i, rt := range routes {
			want := tb.Route(i)
			if g.NodeAt(rt.Src) != want.Src || g.NodeAt(rt.Dst) != want.Dst || strings.Join(rt.Dirs, " ") != FormatDirs(want.Dirs) {
				t.Fatalf("%s: route %d is %+v, want %+v", tc.spec, i, rt, want)
			}
		}
		rep, err := checkBytes(t, b, "", "")
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		wantViol := 0
		if !tb.DeadlockFree {
			wantViol = 1 // angara: the check reports the deadlock
		}
		if len(rep.Violations) != wantViol {
			t.Fatalf("%s %s: %v", tc.spec, tc.kind, rep.Violations)
		}
		if !statsClose(rep.Figures, tb.Figures) {
			t.Errorf("%s: recomputed %+v, table %+v", tc.spec, rep.Figures, tb.Figures)
		}
		if (rep.Cycle == nil) != tb.DeadlockFree {
			t.Errorf("%s: deadlock verdict differs", tc.spec)
		}
	}
}

// TestCheckFindsViolations tampers with a table file and expects the check
// to name the problem.
func TestCheckFindsViolations(t *testing.T) {
	tb := buildFor(t, "4x4", "1.2+Y", AngaraMinus, "0-2.0-1", "3.0-1", BFS)
	b := tableJSON(t, tb)
	var tf TableJSON
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(tf *TableJSON)) []byte {
		c := tf
		c.Routes = slices.Clone(tf.Routes)
		for i := range c.Routes {
			c.Routes[i].Dirs = slices.Clone(tf.Routes[i].Dirs)
		}
		f(&c)
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	find := func(tf *TableJSON, src, dst []int) int {
		for i, r := range tf.Routes {
			if slices.Equal(r.Src, src) && slices.Equal(r.Dst, dst) {
				return i
			}
		}
		t.Fatalf("no route %v→%v", src, dst)
		return -1
	}
	for _, tc := range []struct {
		name, kind string
		b          []byte
		links      string
	}{
		{"missing", "missing", mutate(func(tf *TableJSON) { tf.Routes = tf.Routes[1:] }), ""},
		{"duplicate", "duplicate", mutate(func(tf *TableJSON) { tf.Routes = append(tf.Routes, tf.Routes[0]) }), ""},
		{"arrival", "arrival", mutate(func(tf *TableJSON) {
			i := find(tf, []int{0, 0}, []int{1, 0})
			tf.Routes[i].Dirs = append(tf.Routes[i].Dirs, "+X")
		}), ""},
		{"failed link", "failed-link", b, "0.0+X"},
		{"rule", "rule", mutate(func(tf *TableJSON) {
			i := find(tf, []int{0, 0}, []int{1, 1})
			tf.Routes[i].Dirs = []string{"+Y", "+X"} // order violated, FS+Y then +X is not allowed in R_A−
		}), ""},
		{"transit", "transit", mutate(func(tf *TableJSON) {
			i := find(tf, []int{0, 0}, []int{0, 1})
			tf.Routes[i].Dirs = []string{"-Y", "-Y", "-Y"} // through 0.3, outside the set
		}), ""},
		{"stats", "stats", mutate(func(tf *TableJSON) { tf.Figures.PiMax++ }), ""},
		{"not active", "not-active", mutate(func(tf *TableJSON) {
			tf.Routes = append(tf.Routes, RouteJSON{Src: []int{0, 3}, Dst: []int{0, 0}, Dirs: []string{"+Y"}})
		}), ""},
	} {
		rep, err := checkBytes(t, tc.b, tc.links, "")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		found := false
		for _, v := range rep.Violations {
			found = found || v.Kind == tc.kind
		}
		if !found {
			t.Errorf("%s: want a %s violation, got %v", tc.name, tc.kind, rep.Violations)
		}
	}
	// a deadlocking table is a violation whatever the file claims
	tb = buildFor(t, "4x4", "", Angara, "", "", BFS)
	if tb.DeadlockFree {
		t.Fatal("expected the BFS angara table on 4x4 to deadlock")
	}
	rep, err := checkBytes(t, tableJSON(t, tb), "", "")
	if err != nil || len(rep.Violations) != 1 || rep.Violations[0].Kind != "deadlock" {
		t.Fatalf("angara table: %v %v", rep, err)
	}
}

// TestCorruptTableFiles: structurally bad files are clear errors.
func TestCorruptTableFiles(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "not a valid table"},
		{"[1,2]", "not a valid table"},
		{`{"rules":"dor","routes":[]}`, "missing \"dims\""},
		{`{"dims":[4,4],"routes":[]}`, "missing \"rules\""},
		{`{"dims":[4,4],"rules":"dor"}`, "missing \"routes\""},
		{`{"dims":[4,1],"rules":"dor","routes":[]}`, "out of range"},
		{`{"dims":[4,4,4,4,4,4,4],"rules":"dor","routes":[]}`, "dims must list"},
		{`{"dims":[4,4],"rules":"fast","routes":[]}`, "unknown routing rule"},
		{`{"dims":[4,4],"rules":"dor","routes":[{"src":[0,9],"dst":[0,0],"dirs":[]}]}`, "outside the torus"},
		{`{"dims":[4,4],"rules":"dor","routes":[{"src":[0],"dst":[0,0],"dirs":[]}]}`, "coordinates"},
		{`{"dims":[4,4],"rules":"dor","routes":[{"src":[0,1],"dst":[0,0],"dirs":["+Q"]}]}`, "unknown dimension"},
		{`{"dims":[4,4],"rules":"dor","routes":[{"src":[0,1],"dst":[0,0],"dirs":["+Z"]}]}`, "not a direction"},
		{`{"dims":[4,4],"rules":"dor","routes":[],"failed_links":["0.0+Z"]}`, "no dimension"},
		{`{"dims":[4,4],"rules":"dor","routes":[],"order":["+X"]}`, "lists 1"},
		{`{"dims":[4,4],"rules":"dor","routes":[],"active":[[0,0],[0,0]]}`, "twice"},
	} {
		_, err := checkBytes(t, []byte(tc.in), "", "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestNodeTablesRoundTrip exports per-node tables and reads them back.
func TestNodeTablesRoundTrip(t *testing.T) {
	for _, tb := range []*Table{
		buildFor(t, "4x4x2", "0.0.0+X,2.1.1+Y", AngaraStar, "", "", BFS),
		buildFor(t, "4x4", "", Angara, "", "", BFS),
		buildFor(t, "3x4", "", DOR, "0-1.0-1", "2.0-1", BFS),
	} {
		var buf bytes.Buffer
		if err := tb.WriteNodeTables(&buf); err != nil {
			t.Fatal(err)
		}
		nt, err := ReadNodeTables(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(nt.Dims, tb.Graph().Dims()) || nt.Rule.Kind != tb.Rule.Kind || nt.Rule.OrderFor(len(nt.Dims)).String() != tb.r.order.String() {
			t.Fatalf("header %v %v", nt.Dims, nt.Rule)
		}
		if len(nt.Routes) != tb.NumRoutes() {
			t.Fatalf("%d routes, want %d", len(nt.Routes), tb.NumRoutes())
		}
		fsls := 0
		for i, rt := range nt.Routes {
			want := tb.Route(i)
			if rt.Src != want.Src || rt.Dst != want.Dst || !slices.Equal(rt.Dirs, want.Dirs) || rt.FS != want.FS || rt.LS != want.LS {
				t.Fatalf("route %d: %+v, want %+v", i, rt, want)
			}
			if rt.FS || rt.LS {
				fsls++
			}
		}
		if tb.Rule.Kind == Angara && fsls == 0 {
			t.Error("the angara table should use some FS/LS steps")
		}
	}
	for _, bad := range []string{
		"node 0.0\n", "torus 4x4\nrule dor\n1.0 +X\n", "torus 4x4\nrule dor\nnode 0.0\n1.0 +Z\n",
		"torus 4x4\nrule dor\nnode 0.0\n1.0\n", "torus 4x4\nrule dor\nnode 0.0\n1.0 +X fs:+Y\n",
		"torus 4x4\nrule dor\nnode 0-1.0\n", "torus 4x0\nrule dor\n", "torus 4x4\nrule nope\n",
	} {
		if _, err := ReadNodeTables(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzReadTableJSON: reading and checking arbitrary files never panics.
func FuzzReadTableJSON(f *testing.F) {
	tb := buildFor(f, "3x2", "0.0+X", AngaraStar, "", "", BFS)
	f.Add(tableJSON(f, tb))
	f.Add([]byte(`{"dims":[2,2],"rules":"angara","routes":[{"src":[0,0],"dst":[1,1],"dirs":["+Y","+X"]}]}`))
	f.Add([]byte(`{"dims":[3],"rules":"dor","routes":[],"active":[[0]]}`))
	f.Add(tableJSON(f, buildFor(f, "3x2:mesh=Y", "0.0+X", AngaraStar, "", "", BFS)))
	f.Add([]byte(`{"dims":[3,2],"mesh":["Y"],"rules":"dirbit","routes":[{"src":[0,1],"dst":[0,0],"dirs":["+Y"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := ReadTableJSON(bytes.NewReader(b))
		if err != nil {
			return
		}
		n := 1
		for _, d := range tf.Dims {
			n *= d
		}
		if n > 256 || len(tf.Routes) > 2000 {
			return // keep each input cheap
		}
		verifyJSON(tf, "", "")
	})
}

// FuzzReadNodeTables: the text parser never panics, and what it accepts
// has routes with directions of the torus.
func FuzzReadNodeTables(f *testing.F) {
	var buf bytes.Buffer
	if err := buildFor(f, "3x2", "", Angara, "", "", BFS).WriteNodeTables(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.String())
	f.Add("torus 2x2\nrule angara*\norder +X,+Y,-X,-Y\nnode 0.0\n1.1 fs:+Y +X\n")
	f.Add("torus 3x2:mesh=Y\nrule dirbit\nnode 0.1\n0.0 +Y\n")
	f.Fuzz(func(t *testing.T, s string) {
		nt, err := ReadNodeTables(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, r := range nt.Routes {
			for _, d := range r.Dirs {
				if d.Dim() >= len(nt.Dims) {
					t.Fatalf("direction %s on %v", d, nt.Dims)
				}
			}
		}
	})
}

var _ = topology.Parse

// TestJSONRoutesParallel checks that the routes array, encoded a window
// of sources at a time on all cores, is byte for byte the route-by-route
// encoding, at 1, 2 and 3 cores (8x8x4 has 256 sources: several windows).
func TestJSONRoutesParallel(t *testing.T) {
	g := mustTorus(t, "8x8x4")
	r := mustRouter(t, g, AngaraStar)
	tb, err := r.Build(context.Background(), allNodes(g.NumNodes()), nil, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	want.WriteString("  \"routes\": [")
	var b []byte
	for i := 0; i < tb.NumRoutes(); i++ {
		src, dst := tb.Pair(i)
		b = b[:0]
		if i > 0 {
			b = append(b, ',')
		}
		want.Write(appendRouteJSON(b, g, src, dst, tb.AppendDirs(i, nil)))
	}
	want.WriteString("\n  ],\n")
	for _, p := range []int{1, 2, 3} {
		old := runtime.GOMAXPROCS(p)
		var got bytes.Buffer
		bw := bufio.NewWriter(&got)
		tb.writeJSONRoutes(bw)
		bw.Flush()
		runtime.GOMAXPROCS(old)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("GOMAXPROCS %d: the routes array differs from the route-by-route encoding (%d vs %d bytes)", p, got.Len(), want.Len())
		}
	}
}
