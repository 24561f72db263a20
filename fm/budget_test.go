package fm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

func openHeld(t *testing.T, budget time.Duration, hooks tableHooks) (*Service, *gatedRouting, string) {
	t.Helper()
	held := &gatedRouting{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	factory := func(g *topology.Graph) (Routing, error) {
		rt, err := AngaraRouting("angara*")(g)
		held.Routing = rt
		return held, err
	}
	s, tok, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:4x4x4", NewRouting: factory, PlacementBudget: budget, tables: hooks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, held, tok
}

// postJob sends POST /api/jobs to h and returns the answer.
func postJob(ctx context.Context, h http.Handler, tok, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, "POST", "/api/jobs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// getJob reads GET /api/jobs/{id} from h.
func getJob(t *testing.T, h http.Handler, tok string, id int) client.JobRecord {
	t.Helper()
	req := httptest.NewRequest("GET", fmt.Sprintf("/api/jobs/%d", id), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var j client.JobRecord
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &j) != nil {
		t.Fatalf("GET job %d: %d %s", id, w.Code, w.Body)
	}
	return j
}

// errorAnswer is an error answer's body.
type errorAnswer struct {
	Error, Kind string
}

// slowTables makes every table expected to take a second per route: no
// table fits a placement budget, so each is built after the answer.
func slowTables(s *Service) { s.routeSeconds.Store(math.Float64bits(1)) }

// TestPlacementCancelledCommitsNothing: a client that gives up while its
// job is being placed gets nothing committed, and the placement slot is
// free at once for the next request.
func TestPlacementCancelledCommitsNothing(t *testing.T) {
	s, held, _ := openHeld(t, -1, tableHooks{}) // no budget: only the client ends it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 8, Transit: 2})
		done <- err
	}()
	<-held.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled placement: %v", err)
	}
	if jobs, _ := s.Jobs(true); len(jobs) != 0 {
		t.Fatalf("a cancelled placement committed %+v", jobs)
	}
	close(held.gate)
	j, err := s.Submit("t", client.JobRequest{Nodes: 8, Transit: 2})
	if err != nil || j.ID != 1 {
		t.Fatalf("next placement: %+v %v", j, err)
	}
	checkDisjoint(t, s)
}

// TestPlacementBudget: a placement whose table does not finish within
// the service's budget answers 201 with its nodes and a pending table
// (routing "pending", no table yet: GET and verify say so, the routes
// are not there yet), and the table is built after the answer: once
// verified the job's routing is "ok" and its table verifies. A request
// waiting behind the placement gives up when its own client does,
// without waiting for the first to finish.
func TestPlacementBudget(t *testing.T) {
	built := make(chan *client.JobRecord, 4)
	s, held, tok := openHeld(t, 200*time.Millisecond, tableHooks{built: func(j *client.JobRecord) { built <- j }})
	h := api.New(s, api.Options{})
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- postJob(context.Background(), h, tok, `{"nodes":8,"transit":2}`) }()
	<-held.entered
	// The second request waits for the slot; its client gives up.
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan *httptest.ResponseRecorder, 1)
	go func() { second <- postJob(ctx, h, tok, `{"nodes":8,"transit":2}`) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case w := <-second:
		if w.Code == http.StatusCreated {
			t.Fatalf("a request whose client gave up was placed: %s", w.Body)
		}
	case <-first:
		t.Fatal("the waiting request waited for the first placement to end")
	}
	w := <-first // the table ran past the budget: placed, table pending
	var j client.JobRecord
	if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &j) != nil || j.Routing != client.RoutePending || len(j.Active) != 8 || !j.Reachable {
		t.Fatalf("placement whose table ran past the budget: %d %s", w.Code, w.Body)
	}
	if g := getJob(t, h, tok, j.ID); g.Routing != client.RoutePending || g.Table != nil {
		t.Fatalf("GET of a job whose table is pending: routing %q, table %v", g.Routing, g.Table != nil)
	}
	if ok, problem, _ := s.VerifyJob(j.ID); ok || !strings.Contains(problem, "pending") {
		t.Fatalf("verify of a pending table: %v %q", ok, problem)
	}
	req := httptest.NewRequest("GET", fmt.Sprintf("/api/jobs/%d/routes", j.ID), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, req)
	if rw.Code != http.StatusConflict || !strings.Contains(rw.Body.String(), "pending") {
		t.Fatalf("routes of a pending table: %d %s", rw.Code, rw.Body)
	}
	checkDisjoint(t, s)
	close(held.gate) // the builder's table goes through
	if b := <-built; b.ID != j.ID || b.Routing != client.RouteOriginal || b.Table == nil {
		t.Fatalf("built: %+v", b)
	}
	if g := getJob(t, h, tok, j.ID); g.Routing != client.RouteOriginal || g.Stats.Diameter == 0 || !g.Stats.DeadlockFree {
		t.Fatalf("GET after the table was built: routing %q, stats %+v", g.Routing, g.Stats)
	}
	if ok, problem, err := s.VerifyJob(j.ID); !ok || err != nil {
		t.Fatalf("the built table does not verify: %q %v", problem, err)
	}
	if jobs, _ := s.Jobs(true); len(jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(jobs))
	}
}

// TestPendingTables: with every table expected to take longer than the
// budget (a fake estimate), placements answer at once with pending
// tables, and the builder builds them one at a time after the answer:
// a job becomes ok with a table that verifies, one whose node failed in
// between becomes broken with the reason (the failure change itself left
// it to the builder), and that job migrated is pending again and then
// "migrated".
func TestPendingTables(t *testing.T) {
	built := make(chan *client.JobRecord, 8)
	release := make(chan struct{})
	hooks := tableHooks{
		hold: func(ctx context.Context, id int) {
			select {
			case <-release:
			case <-ctx.Done():
			}
		},
		built: func(j *client.JobRecord) { built <- j },
	}
	s, _, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:4x4x4", NewRouting: AngaraRouting("angara*"), tables: hooks})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	slowTables(s)
	a, err := s.Submit("t", client.JobRequest{Nodes: 8, Transit: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Submit("t", client.JobRequest{Nodes: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []*client.JobRecord{a, b} {
		if j.Routing != client.RoutePending || j.Table != nil || j.Selection == nil {
			t.Fatalf("job %d: routing %q, table %v", j.ID, j.Routing, j.Table != nil)
		}
	}
	if st := s.Stats(); st.JobsPending != 2 {
		t.Fatalf("%d pending, want 2", st.JobsPending)
	}
	res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: b.Active[0]})
	if err != nil || len(res.Jobs) != 0 {
		t.Fatalf("failure of a pending job's node: %+v %v", res, err)
	}
	close(release)
	got := map[int]*client.JobRecord{}
	for range 2 {
		j := <-built
		got[j.ID] = j
	}
	if j := got[a.ID]; j == nil || j.Routing != client.RouteOriginal {
		t.Fatalf("job %d after its table: %+v", a.ID, j)
	}
	if ok, problem, _ := s.VerifyJob(a.ID); !ok {
		t.Fatalf("job %d's table: %s", a.ID, problem)
	}
	if j := got[b.ID]; j == nil || j.Routing != client.RouteBroken || !strings.Contains(j.Problem, "has failed") {
		t.Fatalf("job %d, its node failed while the table was pending: %+v", b.ID, j)
	}
	m, err := s.Migrate("t", b.ID)
	if err != nil || m.Routing != client.RoutePending || m.RoutingNext != client.RouteMigrated {
		t.Fatalf("migration with a pending table: %+v %v", m, err)
	}
	if j := <-built; j.ID != b.ID || j.Routing != client.RouteMigrated || j.Table == nil {
		t.Fatalf("migrated job after its table: %+v", j)
	}
	if st := s.Stats(); st.JobsPending != 0 || st.JobsBroken != 0 {
		t.Fatalf("pending %d, broken %d; want none", st.JobsPending, st.JobsBroken)
	}
	checkDisjoint(t, s)
}

// TestPendingTableAfterRestart: a table still pending when the service
// closes is built by the next start, and the job's stored record says
// so afterwards.
func TestPendingTableAfterRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "torus:4x4x4", NewRouting: AngaraRouting("angara*"),
		tables: tableHooks{hold: func(ctx context.Context, id int) { <-ctx.Done() }}} // never built here
	s, _, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	slowTables(s)
	j, err := s.Submit("t", client.JobRequest{Nodes: 12, Transit: 3})
	if err != nil || j.Routing != client.RoutePending {
		t.Fatalf("placement: %+v %v", j, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	built := make(chan *client.JobRecord, 1)
	cfg.tables = tableHooks{built: func(j *client.JobRecord) { built <- j }}
	s, _, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b := <-built; b.ID != j.ID || b.Routing != client.RouteOriginal || !slices.Equal(b.Active, j.Active) {
		t.Fatalf("after the restart: %+v", b)
	}
	s.Close()
	cfg.tables = tableHooks{}
	s, _, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.Job(j.ID); err != nil || r.Routing != client.RouteOriginal || r.Table == nil {
		t.Fatalf("stored after the table was built: %+v %v", r, err)
	}
	if ok, problem, _ := s.VerifyJob(j.ID); !ok {
		t.Fatal(problem)
	}
}

// TestServiceChoosesAsSelector: the service places each job on the set a
// fresh alloc.Selector (as icn alloc uses) chooses for the same request
// on the same state, with the same budget, on a torus with a failed
// link and jobs placed before.
func TestServiceChoosesAsSelector(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	defer s.Close()
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: "1.1.1+Y"}); err != nil {
		t.Fatal(err)
	}
	for _, req := range []client.JobRequest{{Nodes: 8, Transit: 2}, {Nodes: 12, Transit: 3}, {Nodes: 5, Transit: 1},
		{Nodes: 16, Transit: 4}, {Nodes: 3}, {Nodes: 9, Transit: 2}, {Nodes: 2, Transit: 1}} {
		sn := s.snapshot(true)
		rt, err := alloc.NewAngaraRouter(sn.g, "angara*")
		if err != nil {
			t.Fatal(err)
		}
		want, err := alloc.NewSelector(sn.state).Select(sn.state, rt, alloc.Request{Nodes: req.Nodes, Transit: req.Transit, Budget: alloc.DefaultBudget})
		if err != nil || want.Chosen == nil || !want.Exhaustive {
			t.Fatalf("%+v: the selector: %+v %v", req, want, err)
		}
		j, err := s.Submit("t", req)
		if err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		same := func(names []string, nodes []int) bool {
			a := slices.Clone(names)
			b := make([]string, len(nodes))
			for i, v := range nodes {
				b[i] = sn.g.NodeName(v)
			}
			slices.Sort(a)
			slices.Sort(b)
			return slices.Equal(a, b)
		}
		if !same(j.Active, want.Chosen.Active) || !same(j.TransitNodes, want.Chosen.Transit) {
			t.Fatalf("%+v: the service chose %v + %v, the selector %v + %v", req, j.Active, j.TransitNodes, want.Chosen.Active, want.Chosen.Transit)
		}
	}
	checkDisjoint(t, s)
}

// TestPlacementAnswerKinds: a request that can never be met is a 400
// answered before any work (more nodes than the fabric has or than have
// not failed, a brick no size of the torus has without transit, a set
// the fabric's failures rule out); one that cannot be met now a 409 of
// kind "conflict" (more nodes than are free, or no set on this state
// though the empty fabric has one); a budget too short to find any set
// a 409 of kind "budget" naming the placements examined, never a 503 or
// "over budget". None of them commits anything.
func TestPlacementAnswerKinds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		topo     string
		budget   time.Duration
		fail     []client.FailureChange
		before   []string // jobs placed first
		body     string
		code     int
		kind     string
		contains string
	}{
		{"larger than the fabric", "torus:4x4x4", 0, nil, nil, `{"nodes":65}`, 400, client.KindBadRequest, "the fabric has only 64 nodes"},
		{"larger than its nodes up", "torus:4x4x4", 0, []client.FailureChange{{Node: "0.0.0"}}, nil, `{"nodes":64}`, 400, client.KindBadRequest, "only 63 of the fabric's 64 nodes have not failed"},
		{"no brick without transit", "torus:4x4x4", 0, nil, nil, `{"nodes":7}`, 400, client.KindBadRequest, "no brick of the 4x4x4 torus holds exactly 7 nodes"},
		{"failures rule every brick out", "torus:4x4", 0, []client.FailureChange{{Node: "0.0"}, {Node: "2.2"}}, []string{`{"nodes":1}`}, `{"nodes":12}`, 400, client.KindBadRequest, "even with no job running"},
		{"more than the free nodes", "torus:4x4x4", 0, nil, []string{`{"nodes":32}`}, `{"nodes":40,"transit":8}`, 409, client.KindConflict, "only 32 of 64 are free"},
		{"no set now", "torus:4x4", 0, nil, []string{`{"nodes":4}`, `{"nodes":2}`}, `{"nodes":8}`, 409, client.KindConflict, "cannot place now"},
		{"budget too short", "torus:8x8x8", time.Nanosecond, nil, nil, `{"nodes":64}`, 409, client.KindBudget, "no set found within 1ns (0 placements examined)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tok, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: tc.topo, NewRouting: AngaraRouting("angara*"), PlacementBudget: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			h := api.New(s, api.Options{})
			for _, f := range tc.fail {
				if _, err := s.ChangeFailure(context.Background(), "t", f); err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range tc.before {
				if w := postJob(context.Background(), h, tok, b); w.Code != http.StatusCreated {
					t.Fatalf("%s: %d %s", b, w.Code, w.Body)
				}
			}
			w := postJob(context.Background(), h, tok, tc.body)
			var e errorAnswer
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != tc.code || e.Kind != tc.kind || !strings.Contains(e.Error, tc.contains) {
				t.Fatalf("%d %s, want %d kind %q naming %q", w.Code, w.Body, tc.code, tc.kind, tc.contains)
			}
			if strings.Contains(e.Error, "over budget") {
				t.Fatalf("answer says over budget: %s", e.Error)
			}
			if jobs, _ := s.Jobs(true); len(jobs) != len(tc.before) {
				t.Fatalf("%d jobs stored, want the %d placed before", len(jobs), len(tc.before))
			}
		})
	}
}
