package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRouteFileFormats: icn route writes JSON and compact files that icn
// route check accepts (format detected by content); a damaged compact
// file or a failure crossed by the routes makes the check exit 1 with one
// line naming the first bad record or route; a file that is not a table
// exits 2.
func TestRouteFileFormats(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []struct{ name, format string }{{"t.json", "json"}, {"t.routes", "routes"}} {
		if _, e, code := runICN(t, dir, "route", "--topo", "torus:4x3x2", "--format", f.format, "-o", f.name, "--quiet"); code != 0 {
			t.Fatalf("route --format %s: exit %d: %s", f.format, code, e)
		}
		o, e, code := runICN(t, dir, "route", "check", f.name)
		if code != 0 || !strings.Contains(o, "OK") {
			t.Fatalf("check %s: exit %d: %s %s", f.name, code, o, e)
		}
		_, e, code = runICN(t, dir, "route", "check", f.name, "--fail-links", "0.0.0+X")
		if code != 1 || !strings.Contains(e, "first: route ") || !strings.Contains(e, "failed-link") || strings.Count(strings.TrimSpace(e), "\n") != 0 {
			t.Fatalf("check %s with a failed link: exit %d: %q", f.name, code, e)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "t.routes"))
	if err != nil {
		t.Fatal(err)
	}
	damaged := map[string][]byte{"trunc.routes": b[:len(b)-40], "flip.routes": append([]byte(nil), b...)}
	damaged["flip.routes"][len(b)-60] ^= 0x10
	for name, d := range damaged {
		if err := os.WriteFile(filepath.Join(dir, name), d, 0o644); err != nil {
			t.Fatal(err)
		}
		_, e, code := runICN(t, dir, "route", "check", name)
		if code != 1 || !strings.HasPrefix(e, "icn: "+name+": record ") || strings.Contains(e, "panic") {
			t.Fatalf("check %s: exit %d: %q", name, code, e)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e, code := runICN(t, dir, "route", "check", "x.txt"); code != 2 || !strings.HasPrefix(e, "icn: ") {
		t.Fatalf("check of a non-table: exit %d: %q", code, e)
	}
	if _, e, code := runICN(t, dir, "route", "--topo", "torus:4x4", "--format", "xml", "-o", "t.x"); code != 2 || !strings.Contains(e, "--format") {
		t.Fatalf("bad --format: exit %d: %q", code, e)
	}
}

// icn route --algo genetic writes a table that icn route check accepts,
// balanced at least as well as the BFS table of the same set, and the
// same for the same seed.
func TestRouteGenetic(t *testing.T) {
	dir := t.TempDir()
	pimax := func(name string, args ...string) float64 {
		args = append([]string{"route", "--topo", "torus:4x2x2", "-o", name, "--quiet", "--json"}, args...)
		o, e, code := runICN(t, dir, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, e)
		}
		var v struct {
			Stats struct {
				PiMax float64 `json:"pi_max"`
			} `json:"stats"`
		}
		if err := json.Unmarshal([]byte(o), &v); err != nil || v.Stats.PiMax == 0 {
			t.Fatalf("%v: %v (%.200s)", args, err, o)
		}
		if o, e, code := runICN(t, dir, "route", "check", name); code != 0 || !strings.Contains(o, "OK") {
			t.Fatalf("check %s: exit %d: %s %s", name, code, o, e)
		}
		return v.Stats.PiMax
	}
	bfs := pimax("bfs.json")
	gen := pimax("gen.json", "--algo", "genetic", "--seed", "2", "--generations", "50")
	if gen > bfs {
		t.Errorf("genetic π_max %v above BFS's %v", gen, bfs)
	}
	pimax("gen2.json", "--algo", "genetic", "--seed", "2", "--generations", "50")
	a, _ := os.ReadFile(filepath.Join(dir, "gen.json"))
	b, _ := os.ReadFile(filepath.Join(dir, "gen2.json"))
	if string(a) != string(b) {
		t.Error("same seed, different genetic tables")
	}
}
