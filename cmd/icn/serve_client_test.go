package main

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/fm"
)

// TestJobClientCommands drives a service through the client commands:
// submit, fail the job's node (broken), list --all, migrate.
func TestJobClientCommands(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "fm.db")
	s, _, err := fm.Open(fm.Config{DBPath: db, Topo: "torus:4x4", NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler(fm.HandlerOptions{}))
	defer srv.Close()
	cl := []string{"--server", srv.URL, "--token-file", fm.TokenFile(db), "--json"}
	run := func(v any, args ...string) {
		t.Helper()
		o, e, code := runICN(t, dir, append(args, cl...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, e)
		}
		if err := json.Unmarshal([]byte(o), v); err != nil {
			t.Fatalf("%v: %v in %q", args, err, o)
		}
	}
	var j fm.JobRecord
	run(&j, "job", "submit", "--nodes", "3")
	var res fm.FailureResult
	run(&res, "fabric", "fail-node", j.Active[0])
	if len(res.AffectedJobs) != 1 || res.Jobs[0].Result != "broken" {
		t.Fatalf("failure: %+v", res)
	}
	var m fm.JobRecord
	run(&m, "job", "migrate", "1")
	if m.Routing != "migrated" || slices.Contains(m.Active, j.Active[0]) || slices.Contains(m.TransitN, j.Active[0]) {
		t.Fatalf("migrate: %+v", m)
	}
	var j2 fm.JobRecord
	run(&j2, "job", "submit", "--nodes", "2")
	run(&j2, "job", "release", "2")
	var all, running []fm.JobRecord
	run(&all, "job", "list", "--all")
	run(&running, "job", "list")
	if len(all) != 2 || len(running) != 1 || running[0].ID != 1 {
		t.Fatalf("list --all: %d jobs, list: %d", len(all), len(running))
	}
}
