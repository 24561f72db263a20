package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simRows runs icn mcast simulate --json and decodes its rows.
func simRows(t *testing.T, dir string, args ...string) []map[string]any {
	t.Helper()
	stdout, stderr, code := runICN(t, dir, append([]string{"mcast", "simulate", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) == 0 {
		t.Fatalf("%v: %v: %s", args, err, stdout)
	}
	return rows
}

// adjacentGroupFile writes e groups of four consecutive end nodes
// (h4i … h4i+3), the seed's EFI experiment, and returns the spec.
func adjacentGroupFile(t *testing.T, dir string, e int) string {
	t.Helper()
	var b strings.Builder
	for i := range e {
		fmt.Fprintf(&b, "g%d: h%d h%d h%d h%d\n", i, 4*i, 4*i+1, 4*i+2, 4*i+3)
	}
	name := fmt.Sprintf("efi%d.txt", e)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file:" + name
}

// --host-overhead O at --link-gbps G adds 2·round(O/cycle) cycles to the
// one delivery path of a trivial tree (four end nodes under one switch);
// without the host flags the JSON has no host keys (today's output).
func TestMcastSimulateHostOverhead(t *testing.T) {
	dir := t.TempDir()
	groups := adjacentGroupFile(t, dir, 1)
	base := simRows(t, dir, "--topo", "fattree:k=4,n=2", "--groups", groups, "--algo", "minhop", "--bytes", "8")[0]
	if _, ok := base["cycle_ns"]; ok {
		t.Errorf("cycle_ns without --link-gbps: %v", base)
	}
	if _, ok := base["host_overhead_cycles"]; ok {
		t.Errorf("host_overhead_cycles without --host-overhead: %v", base)
	}
	row := simRows(t, dir, "--topo", "fattree:k=4,n=2", "--groups", groups, "--algo", "minhop", "--bytes", "8",
		"--link-gbps", "56", "--host-overhead", "500")[0]
	cycle := 16 * 8 / 56.0
	over := math.Round(500 / cycle)
	if row["cycle_ns"].(float64) != cycle || row["host_overhead_cycles"].(float64) != over {
		t.Fatalf("cycle %v, overhead %v; want %v, %v", row["cycle_ns"], row["host_overhead_cycles"], cycle, over)
	}
	for _, k := range []string{"latency_mean", "latency_max", "latency_p99", "zero_load_mean", "completion_mean"} {
		if got, want := row[k].(float64), base[k].(float64)+2*over; got != want {
			t.Errorf("%s: %v, want %v + 2·%v", k, got, base[k], over)
		}
	}
}

// --shared-tree all gives every group the same tree over every end node:
// the height does not change from 1 to 32 groups while the max EFI equals
// the number of groups; the same --seed gives the same output.
func TestMcastSimulateSharedTree(t *testing.T) {
	dir := t.TempDir()
	var height any
	for _, e := range []int{1, 32} {
		args := []string{"--topo", "fattree:k=8,n=3", "--groups", adjacentGroupFile(t, dir, e), "--algo", "minhop,fulb",
			"--shared-tree", "all", "--closed-loop", "--messages", "3"}
		for _, r := range simRows(t, dir, args...) {
			if height == nil {
				height = r["max_height"]
			}
			if r["max_height"] != height || r["max_efi"].(float64) != float64(e) || r["deliveries"].(float64) != float64(3*3*e) {
				t.Errorf("%d groups: %v (first height %v)", e, r, height)
			}
		}
	}
	args := []string{"mcast", "simulate", "--topo", "fattree:k=4,n=3", "--groups", "random:count=12,size=3-6", "--algo", "fulb",
		"--shared-tree", "union", "--closed-loop", "--messages", "4", "--senders", "all", "--link-gbps", "100", "--host-overhead", "300", "--seed", "7"}
	a, _, code := runICN(t, dir, args...)
	b, _, code2 := runICN(t, dir, args...)
	if code != 0 || code2 != 0 || a != b {
		t.Fatalf("same seed, different output (exit %d, %d):\n%s\n%s", code, code2, a, b)
	}
	if !strings.Contains(a, "mean µs") {
		t.Errorf("no µs column with --link-gbps:\n%s", a)
	}
}

// Bad host and shared-tree flags: one line, exit status 2.
func TestMcastSimulateHostBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ flags, want string }{
		{"--host-overhead=500", "needs --link-gbps"},
		{"--link-gbps=-1", "--link-gbps -1 out of range"},
		{"--host-overhead=-5 --link-gbps=56", "--host-overhead -5 out of range"},
		{"--shared-tree=most", `shared tree "most": want union or all`},
		{"--closed-loop --background=0.1", "do not combine with --background"},
	} {
		args := append([]string{"mcast", "simulate", "--topo", "fattree:k=4,n=3", "--groups", "random:count=8,size=4"}, strings.Fields(tc.flags)...)
		_, stderr, code := runICN(t, dir, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q", tc.flags, code, stderr)
		}
	}
}
