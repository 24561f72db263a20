package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// TestFabricAuditInProcess: runFabricAudit of the tables runFabricRoute
// wrote reports what the route's own audit reported (the dump is a
// faithful copy), and with --check it fails with exit status 1 exactly
// when the audit finds a dependency cycle (minhop on a torus ring).
func TestFabricAuditInProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		spec, engine string
		cycle        bool
	}{
		{"fattree:k=2,n=3", "ftree", false},
		{"dragonfly:a=4,p=2,h=2", "dfsssp", false},
		{"torus:4x4:endpoints=1", "minhop", true},
	} {
		dump, lanes := filepath.Join(dir, "lfts.dump"), filepath.Join(dir, "lanes")
		var ro fabricRouteOptions
		ro.ff.spec, ro.engine, ro.lanes, ro.lftOut, ro.lanesOut, ro.out.json = tc.spec, tc.engine, 8, dump, "", true
		if tc.engine == "dfsssp" {
			ro.lanesOut = lanes
		}
		ro.af.contention, ro.af.perms, ro.af.seed = "on", 2, 1
		var routed bytes.Buffer
		if err := runFabricRoute(ctx, ro, &routed); err != nil {
			t.Fatalf("%s %s: route: %v", tc.spec, tc.engine, err)
		}
		ao := fabricAuditOptions{ff: ro.ff, af: ro.af, out: ro.out, lftPath: dump, lanesPath: ro.lanesOut}
		ao.af.check = true
		var audited bytes.Buffer
		err := runFabricAudit(ctx, ao, &audited)
		var ee *exitError
		if tc.cycle != (errors.As(err, &ee) && ee.code == 1) || (!tc.cycle && err != nil) {
			t.Fatalf("%s %s: audit --check: %v, want a cycle: %v", tc.spec, tc.engine, err, tc.cycle)
		}
		var r, a map[string]any
		if err := json.Unmarshal(routed.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(audited.Bytes(), &a); err != nil {
			t.Fatalf("%s: %v in %q", tc.spec, err, audited.String())
		}
		for _, k := range []string{"reachable", "deadlock_free", "max_hops", "avg_hops", "max_link_routes", "lanes", "switches", "endpoints", "contention"} {
			rv, _ := json.Marshal(r[k])
			av, _ := json.Marshal(a[k])
			if r[k] == nil || string(rv) != string(av) {
				t.Errorf("%s %s: %s: route %s, audit of its dump %s", tc.spec, tc.engine, k, rv, av)
			}
		}
	}
}
