package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/multicast"
)

// TestMcastVerifyExitStatus: a trees file verifies with exit 0 as written;
// a file whose recorded max EFI or height differs from the recomputed one,
// or whose tree lost an edge, exits 1 naming the run.
func TestMcastVerifyExitStatus(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runICN(t, dir, "mcast", "--topo", "fattree:k=4,n=3", "--groups", "grid2d:4x4",
		"--algo", "minhop,fulb", "--trees-out", "t.json")
	if code != 0 {
		t.Fatalf("mcast: exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "t.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runICN(t, dir, "mcast", "verify", "--trees", "t.json"); code != 0 {
		t.Fatalf("verify of an untouched file: exit %d: %s", code, stderr)
	}
	tamper := func(name string, edit func(*multicast.TreesFile)) {
		f, err := multicast.ReadTrees(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		edit(f)
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tamper("efi.json", func(f *multicast.TreesFile) { f.Runs[1].MaxEFI++ })
	tamper("height.json", func(f *multicast.TreesFile) { f.Runs[0].MaxHeight-- })
	tamper("edge.json", func(f *multicast.TreesFile) {
		gr := &f.Runs[1].Groups[0]
		gr.Edges, gr.Ports = gr.Edges[:len(gr.Edges)-1], gr.Ports[:len(gr.Ports)-1]
	})
	for _, tc := range []struct{ file, want string }{
		{"efi.json", "run fulb: recomputed max EFI"},
		{"height.json", "run minhop: recomputed max EFI"},
		{"edge.json", "run fulb"},
	} {
		stdout, stderr, code := runICN(t, dir, "mcast", "verify", "--trees", tc.file, "--json")
		if code != 1 {
			t.Errorf("%s: exit %d, want 1 (stderr %q)", tc.file, code, stderr)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: stderr %q, want one line containing %q", tc.file, stderr, tc.want)
		}
		if tc.file != "edge.json" {
			var rows []mcastVerifyRow
			if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 2 {
				t.Fatalf("%s: stdout %q: %v", tc.file, stdout, err)
			}
			if rows[0].Matches == (tc.file == "height.json") || rows[1].Matches == (tc.file == "efi.json") {
				t.Errorf("%s: matches flags %v %v", tc.file, rows[0].Matches, rows[1].Matches)
			}
		}
	}
	// The same through runMcastVerify without a process.
	var buf bytes.Buffer
	err = runMcastVerify(context.Background(), mcastVerifyOptions{trees: filepath.Join(dir, "efi.json")}, &buf)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("runMcastVerify: %v, want exit status 1", err)
	}
	if !strings.Contains(buf.String(), " no") {
		t.Errorf("table does not show the mismatch:\n%s", buf.String())
	}
}

// icn mcast simulate --json prints one object per engine with the keys the
// issue names; bad message flags are refused with one line.
func TestMcastSimulateJSON(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := runICN(t, dir, "mcast", "simulate", "--topo", "fattree:k=4,n=3", "--groups", "random:count=8,size=4",
		"--algo", "minhop,fulb", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("%v: %s", err, stdout)
	}
	for i, algo := range []string{"minhop", "fulb"} {
		for _, k := range []string{"algo", "max_efi", "max_height", "latency_mean", "latency_max", "latency_p99", "zero_load_mean"} {
			if _, ok := rows[i][k]; !ok {
				t.Errorf("%s: no key %q", algo, k)
			}
		}
		if rows[i]["algo"] != algo || rows[i]["latency_mean"].(float64) < rows[i]["zero_load_mean"].(float64) {
			t.Errorf("row %d: %v", i, rows[i])
		}
	}
	for _, tc := range []struct{ flag, want string }{
		{"--senders=bogus", "want first or all"},
		{"--bytes=0", "--bytes 0 out of range"},
		{"--map=blocked:3x3", "blocked mappings need a grid"},
		{"--background=1", "--background 1 out of range"},
	} {
		_, stderr, code := runICN(t, dir, "mcast", "simulate", "--topo", "fattree:k=4,n=3", "--groups", "random:count=8,size=4", tc.flag)
		if code == 0 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q", tc.flag, code, stderr)
		}
	}
}

// TestRunMcastInProcess: runMcast's JSON agrees with a recount from the
// trees file it writes: per link, the number of groups whose tree uses
// it (max EFI, links used, tree edges, mean EFI); every tree spans its
// members and the table reports each engine as verified.
func TestRunMcastInProcess(t *testing.T) {
	dir := t.TempDir()
	trees := filepath.Join(dir, "trees.json")
	o := mcastOptions{topo: topoFlags{spec: "fattree:k=4,n=3"}, out: output{json: true},
		groups: "grid3d:4x4x2", algos: "minhop,sssp,fulb", rootMetric: "max", mapSpec: "random",
		seed: 5, treesOut: trees, quiet: true}
	var out bytes.Buffer
	if err := runMcast(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var results []multicast.Result
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	raw, err := os.ReadFile(trees)
	if err != nil {
		t.Fatal(err)
	}
	f, err := multicast.ReadTrees(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || len(f.Runs) != 3 {
		t.Fatalf("%d results and %d runs in the trees file, want 3", len(results), len(f.Runs))
	}
	for i, r := range results {
		run := f.Runs[i]
		efi := map[[2]string]int{}
		edges := 0
		for _, gr := range run.Groups {
			covered := map[string]bool{gr.Root: true}
			for _, e := range gr.Edges {
				covered[e[0]], covered[e[1]] = true, true
				if e[1] < e[0] {
					e[0], e[1] = e[1], e[0]
				}
				efi[e]++
				edges++
			}
			for _, m := range gr.Members {
				if !covered[m] {
					t.Errorf("%s: group %s: member %s is not on its tree", r.Algo, gr.Name, m)
				}
			}
		}
		top := 0
		for _, n := range efi {
			top = max(top, n)
		}
		if !r.Verified || r.Algo != run.Algo || r.Groups != len(run.Groups) || r.Max != top || r.Max != run.MaxEFI ||
			r.LinksUsed != len(efi) || r.Edges != edges || r.Mean != float64(edges)/float64(len(efi)) {
			t.Errorf("%s: reported verified %v, %d groups, max EFI %d, %d links, %d edges, mean %v; trees file: %s, %d groups, max EFI %d, %d links, %d edges",
				r.Algo, r.Verified, r.Groups, r.Max, r.LinksUsed, r.Edges, r.Mean, run.Algo, len(run.Groups), top, len(efi), edges)
		}
	}
}
