package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// An ibsim net file without GUIDs: a warning on stderr, in the report and
// in the dump header; the dump is streamed to the file named.
func TestFabricRouteWarnsWithoutGUIDs(t *testing.T) {
	dir := t.TempDir()
	g, err := topology.Parse("fattree:m=4,n=2")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := g.WriteIBNet(&b); err != nil {
		t.Fatal(err)
	}
	// Drop the GUID lines and the port GUIDs: an ibsim net file.
	bare := regexp.MustCompile(`(?m)^\w*guid=.*\n`).ReplaceAllString(b.String(), "")
	bare = regexp.MustCompile(`\]\([0-9a-f]+\)`).ReplaceAllString(bare, "]")
	net := filepath.Join(dir, "bare.net")
	if err := os.WriteFile(net, []byte(bare), 0o644); err != nil {
		t.Fatal(err)
	}

	dump := filepath.Join(dir, "lfts.dump")
	var o fabricRouteOptions
	o.ff.spec, o.engine, o.lanes, o.lftOut, o.out.json = net, "minhop", 8, dump, true
	o.af.contention, o.af.perms, o.af.seed = "off", 0, 1
	var stderr, stdout bytes.Buffer
	o.stderr = &stderr
	if err := runFabricRoute(context.Background(), o, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "gives no GUIDs") {
		t.Errorf("no warning on stderr: %q", stderr.String())
	}
	var v map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if w, _ := v["guid_warning"].(string); !strings.Contains(w, "ibsim") {
		t.Errorf("guid_warning %q", w)
	}
	if o, _ := v["destination_order"].(string); o != "switch-grouped" && o != "interleaved" {
		t.Errorf("destination_order %q", o)
	}
	if _, ok := v["misdelivered_pairs"]; !ok {
		t.Errorf("no misdelivered_pairs key")
	}
	text, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(text), "\n", 3)
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "# WARNING: ") || !strings.Contains(lines[2], "guid 0x0000000000200000") {
		t.Errorf("dump head:\n%s", strings.Join(lines[:min(3, len(lines))], "\n"))
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".icn-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
