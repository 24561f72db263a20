package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

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
	srv := httptest.NewServer(api.New(s, api.Options{}))
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
	var j client.JobRecord
	run(&j, "job", "submit", "--nodes", "3")
	var res client.FailureResult
	run(&res, "fabric", "fail-node", j.Active[0])
	if len(res.AffectedJobs) != 1 || len(res.BrokenJobs) != 1 || res.Jobs[0].Result != "broken" || res.Jobs[0].Unreachable == nil && res.Jobs[0].Problem == "" {
		t.Fatalf("failure: %+v", res)
	}
	var m client.JobRecord
	run(&m, "job", "migrate", "1")
	if m.Routing != "migrated" || slices.Contains(m.Active, j.Active[0]) || slices.Contains(m.TransitNodes, j.Active[0]) {
		t.Fatalf("migrate: %+v", m)
	}
	// The table answer names the job and what happened in words, not as
	// a Go list.
	textCl := slices.DeleteFunc(slices.Clone(cl), func(a string) bool { return a == "--json" })
	o, e, code := runICN(t, dir, append([]string{"fabric", "fail-node", m.Active[1]}, textCl...)...)
	if code != 0 || !regexp.MustCompile(`(?m)^jobs affected +1$`).MatchString(o) ||
		!regexp.MustCompile(`(?m)^1 +broken +node `+regexp.QuoteMeta(m.Active[1])+` of the job has failed`).MatchString(o) || strings.Contains(o, "[") {
		t.Fatalf("fail-node (text): exit %d: %s%s", code, o, e)
	}
	// Larger than the fabric: the answer is a bad request (exit 2), at
	// once, with no budget estimate.
	if _, e, code := runICN(t, dir, append([]string{"job", "submit", "--nodes", "100000"}, cl...)...); code != 2 || !strings.Contains(e, "the fabric has only 16") || strings.Contains(e, "budget") {
		t.Fatalf("100 000 nodes on 16: exit %d: %s", code, e)
	}
	var j2 client.JobRecord
	run(&j2, "job", "submit", "--nodes", "2")
	run(&j2, "job", "release", "2")
	var all, running []client.JobRecord
	run(&all, "job", "list", "--all")
	run(&running, "job", "list")
	if len(all) != 2 || len(running) != 1 || running[0].ID != 1 {
		t.Fatalf("list --all: %d jobs, list: %d", len(all), len(running))
	}
}

// TestJobRoutesInProcess calls the client run functions without a
// process: the table runJobRoutes prints for a submitted job passes
// runRouteCheck with one route per ordered pair of the job's active nodes,
// and runJobVerify agrees with it.
func TestJobRoutesInProcess(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "fm.db")
	s, _, err := fm.Open(fm.Config{DBPath: db, Topo: "torus:4x4", NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	ctx := context.Background()
	cl := clientFlags{server: srv.URL, tokenFile: fm.TokenFile(db), json: true}
	var out bytes.Buffer
	if err := runJobSubmit(ctx, jobSubmitOptions{cl: cl, nodes: 5, transit: 2, algo: "improved"}, &out); err != nil {
		t.Fatal(err)
	}
	var j client.JobRecord
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || len(j.Active) != 5 {
		t.Fatalf("submit: %v, %q", err, out.String())
	}
	table := filepath.Join(dir, "job.json")
	out.Reset()
	if err := runJobRoutes(ctx, jobIDOptions{cl: cl, id: strconv.Itoa(j.ID)}, &out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(table, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	co := routeCheckOptions{file: table}
	co.out.json = true
	out.Reset()
	if err := runRouteCheck(ctx, co, &out); err != nil {
		t.Fatalf("route check of the job's table: %v\n%s", err, out.String())
	}
	var res routeCheckResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if n := len(j.Active); !res.OK || res.Routes != n*(n-1) || res.Stats.Diameter != j.Stats.Diameter {
		t.Errorf("check: ok %v, %d routes (want %d), diameter %d (job says %d)", res.OK, res.Routes, n*(n-1), res.Stats.Diameter, j.Stats.Diameter)
	}
	out.Reset()
	if err := runJobVerify(ctx, jobIDOptions{cl: cl, id: strconv.Itoa(j.ID)}, &out); err != nil {
		t.Fatalf("verify: %v", err)
	}
	var v jobVerifyResult
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || !v.OK || v.ID != j.ID {
		t.Errorf("verify: %v, %+v", err, v)
	}
}

// TestJobSubmitExitStatuses: icn job submit follows the exit rule as
// icn alloc does: a job the fabric can never take exits with 2 (HTTP
// 400), one it cannot take now with 1 (409), and one for which the
// service's budget ended before any set was found with 3 (409 of kind
// "budget", naming the placements examined); none of them is placed.
func TestJobSubmitExitStatuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		topo   string
		budget time.Duration
		before []int // jobs placed first
		nodes  int
		code   int
		want   string
	}{
		{"torus:4x4", 0, nil, 7, 2, "no brick of the 4x4 torus holds exactly 7 nodes"},
		{"torus:4x4", 0, []int{4, 2}, 8, 1, "cannot place now"},
		{"torus:8x8x8", time.Nanosecond, nil, 64, 3, "placements examined"},
	} {
		dir := t.TempDir()
		db := filepath.Join(dir, "fm.db")
		s, _, err := fm.Open(fm.Config{DBPath: db, Topo: tc.topo, NewRouting: fm.AngaraRouting("angara*"), PlacementBudget: tc.budget})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(api.New(s, api.Options{}))
		cl := clientFlags{server: srv.URL, tokenFile: fm.TokenFile(db), json: true}
		for _, n := range tc.before {
			if err := runJobSubmit(ctx, jobSubmitOptions{cl: cl, nodes: n, algo: "improved"}, io.Discard); err != nil {
				t.Fatal(err)
			}
		}
		err = runJobSubmit(ctx, jobSubmitOptions{cl: cl, nodes: tc.nodes, algo: "improved"}, io.Discard)
		if code := exitCode(err); code != tc.code || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s, %d nodes: exit %d (%v), want %d naming %q", tc.topo, tc.nodes, code, err, tc.code, tc.want)
		}
		if jobs, _ := s.Jobs(true); len(jobs) != len(tc.before) {
			t.Errorf("%s, %d nodes: %d jobs stored, want %d", tc.topo, tc.nodes, len(jobs), len(tc.before))
		}
		srv.Close()
		s.Close()
	}
}

// TestJobEffectText: what `icn fabric fail-link` and `fail-node` print
// for each outcome of a failure on a job, a dropped transit node first.
func TestJobEffectText(t *testing.T) {
	pair := [2]string{"0.1", "0.2"}
	for _, tc := range []struct {
		e    client.JobEffect
		want string
	}{
		{client.JobEffect{Result: client.RouteBroken, Unreachable: &pair}, "no legal route from 0.1 to 0.2 inside its nodes: migrate it"},
		{client.JobEffect{Result: client.RouteBroken, Problem: "node 0.2 of the job has failed"}, "node 0.2 of the job has failed"},
		{client.JobEffect{Result: client.RouteRerouted, State: "rerouted", TransitAdded: []string{"0.3", "1.3"}}, "new table, 2 free node(s) added as transit: 0.3 1.3"},
		{client.JobEffect{Result: client.RouteRerouted, State: "rerouted", TransitAdded: []string{"0.3"}, TransitDropped: []string{"1.1"}}, "failed transit node 1.1 dropped; new table, 1 free node(s) added as transit: 0.3"},
		{client.JobEffect{Result: client.RouteRerouted, State: "rerouted", TransitDropped: []string{"1.1"}}, "failed transit node 1.1 dropped; new table on its own nodes"},
		{client.JobEffect{Result: client.RouteRerouted, State: "ok"}, "new table of its original kind (no failure left among its nodes)"},
		{client.JobEffect{Result: client.RouteRerouted, State: "rerouted"}, "new table on its own nodes"},
		{client.JobEffect{Result: client.RoutePending, State: "pending"}, "table pending: built and verified after this answer (over --failure-budget)"},
	} {
		if got := jobEffectText(tc.e); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}
