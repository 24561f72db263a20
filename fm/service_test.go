package fm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/routing"

	bolt "go.etcd.io/bbolt"
)

// fakeClock is a manual clock for multicast timeouts.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openTest(t testing.TB, dir, topo string, clk *fakeClock) (*Service, string) {
	t.Helper()
	cfg := Config{DBPath: filepath.Join(dir, "fm.db"), Topo: topo, NewRouting: AngaraRouting("angara*"), MulticastTimeout: 5 * time.Second}
	if clk != nil {
		cfg.Now = clk.Now
	}
	s, tok, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, tok
}

// mustTable returns job j's table with its routes (fullTable: decoded
// when the service keeps it encoded); it panics on damaged routes.
func mustTable(j *client.JobRecord) *routing.TableJSON {
	tf, err := fullTable(j)
	if err != nil {
		panic(err)
	}
	return tf
}

// checkDisjoint verifies that no node belongs to two running jobs, in
// memory and in the store.
func checkDisjoint(t testing.TB, s *Service) {
	t.Helper()
	owner := map[string]int{}
	jobs, err := s.Jobs(true)
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, j := range jobs {
		if j.State != "running" {
			continue
		}
		running++
		for _, n := range append(append([]string(nil), j.Active...), j.TransitNodes...) {
			if o, dup := owner[n]; dup {
				t.Fatalf("node %s held by jobs %d and %d", n, o, j.ID)
			}
			owner[n] = j.ID
		}
	}
	f := s.Fabric()
	busy := 0
	for _, n := range f.Nodes {
		if n.Job != 0 {
			busy++
			if owner[n.Name] != n.Job {
				t.Fatalf("node %s: memory says job %d, store says %d", n.Name, n.Job, owner[n.Name])
			}
		}
	}
	if busy != len(owner) {
		t.Fatalf("%d busy nodes in memory, %d in the store", busy, len(owner))
	}
}

func TestJobsPersistAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s, tok := openTest(t, dir, "torus:4x4x2", nil)
	if tok == "" {
		t.Fatal("first run printed no token")
	}
	st, err := os.Stat(TokenFile(filepath.Join(dir, "fm.db")))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", err, st.Mode())
	}
	if err := s.TokenShown(); err != nil {
		t.Fatal(err)
	}
	var ids []int
	for i := 0; i < 3; i++ {
		j, err := s.Submit("test", client.JobRequest{Nodes: 4, Transit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if !j.Stats.DeadlockFree || j.Table == nil || len(mustTable(j).Routes) != 12 {
			t.Fatalf("job %d: table %v", j.ID, j.Stats)
		}
		ids = append(ids, j.ID)
	}
	if _, err := s.Release("test", ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit("test", client.JobRequest{Nodes: 33}); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("oversized job: %v", err)
	}
	if _, err := s.Submit("test", client.JobRequest{Nodes: 30, Transit: 2}); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "cannot place now") {
		t.Fatalf("job that does not fit now: %v", err)
	}
	checkDisjoint(t, s)
	res, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: "0.0.0+X"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2, tok2 := openTest(t, dir, "", nil)
	defer s2.Close()
	if tok2 != "" {
		t.Error("token printed again on restart")
	}
	jobs, _ := s2.Jobs(false)
	if len(jobs) != 2 || jobs[0].ID != ids[0] || jobs[1].ID != ids[2] {
		t.Fatalf("after restart: %+v", jobs)
	}
	if f := s2.Fabric(); len(f.FailedLinks) != 1 || f.FailedLinks[0] != "0.0.0+X" {
		t.Fatalf("failures after restart: %v (result was %+v)", f.FailedLinks, res)
	}
	checkDisjoint(t, s2)
	ev, _ := s2.Audit(0, 0)
	var actions []string
	for _, e := range ev {
		actions = append(actions, e.Action)
	}
	want := "fabric.create job.submit job.submit job.submit job.release link.fail"
	if strings.Join(actions, " ") != want {
		t.Fatalf("audit log %v, want %s", actions, want)
	}
	// A new job id never repeats an old one.
	j, err := s2.Submit("test", client.JobRequest{Nodes: 2})
	if err != nil || j.ID != 4 {
		t.Fatalf("next job %v %v", j, err)
	}
}

func TestFailureAffectsJobs(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4", nil)
	defer s.Close()
	j, err := s.Submit("t", client.JobRequest{Nodes: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Fail a node of the job: its table can no longer be valid.
	res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: j.Active[1]})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AffectedJobs) != 1 || res.AffectedJobs[0] != j.ID || !slices.Equal(res.BrokenJobs, res.AffectedJobs) ||
		len(res.Jobs) != 1 || res.Jobs[0].State != "broken" {
		t.Fatalf("affected %v broken %v jobs %+v", res.AffectedJobs, res.BrokenJobs, res.Jobs)
	}
	ok, problem, _ := s.VerifyJob(j.ID)
	if ok || problem == "" {
		t.Fatal("verify passed on a failed node")
	}
	// Repair: reachable again.
	res, err = s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: j.Active[1], Repair: true})
	// The repair touches the job again: back on a table of its kind.
	if err != nil || !slices.Equal(res.AffectedJobs, []int{j.ID}) || len(res.BrokenJobs) != 0 || res.Jobs[0].State != "ok" {
		t.Fatalf("repair: %+v %v", res, err)
	}
	if ok, _, _ := s.VerifyJob(j.ID); !ok {
		t.Fatal("verify failed after repair")
	}
	jj, _ := s.Job(j.ID)
	if !jj.Reachable {
		t.Fatal("job not marked reachable after repair")
	}
	for _, bad := range []client.FailureChange{{}, {Link: "9.9+X"}, {Node: "nosuch"}, {Link: "0.0+X", Node: "0.0"}} {
		if _, err := s.ChangeFailure(context.Background(), "t", bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestStorageFailureKeepsStateConsistent(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4", nil)
	defer s.Close()
	j, err := s.Submit("t", client.JobRequest{Nodes: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.store.SetFailWrites(func() error { return errors.New("no space left on device") })
	if _, err := s.Submit("t", client.JobRequest{Nodes: 4}); err == nil || api.StatusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("submit on a full disk: %v", err)
	}
	if _, err := s.Release("t", j.ID); err == nil {
		t.Fatal("release on a full disk succeeded")
	}
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: "0.0+X"}); err == nil {
		t.Fatal("failure change on a full disk succeeded")
	}
	if _, err := s.mc.join(context.Background(), "t", client.McastRequest{Group: "g", Member: "0.0", MemberCount: 2}); err == nil {
		t.Fatal("join on a full disk succeeded")
	}
	if len(s.mc.list()) != 0 {
		t.Fatal("a group exists although its join was not stored")
	}
	if f := s.Fabric(); len(f.FailedLinks) != 0 {
		t.Fatal("failed link visible although not stored")
	}
	jobs, _ := s.Jobs(false)
	if len(jobs) != 1 || s.state.Busy() != 4 {
		t.Fatalf("jobs %d busy %d after failed writes", len(jobs), s.state.Busy())
	}
	s.store.SetFailWrites(nil)
	checkDisjoint(t, s)
	if _, err := s.mc.join(context.Background(), "t", client.McastRequest{Group: "g", Member: "0.0", MemberCount: 2}); err != nil {
		t.Fatalf("join after the disk recovered: %v", err)
	}
}

func TestMulticastProtocolAndRestart(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := openTest(t, dir, "torus:4x4x2", clk)
	join := func(g, m string, n int) (*client.GroupRecord, error) {
		return s.mc.join(context.Background(), "t", client.McastRequest{Group: g, Member: m, MemberCount: n})
	}
	if g, err := join("a", "0.0.0", 3); err != nil || g.State != "ReceivingJoinReq" {
		t.Fatalf("%v %v", g, err)
	}
	join("a", "2.1.0", 3)
	g, err := join("a", "3.3.1", 3)
	if err != nil || g.State != "Ready" || g.Root == "" || len(g.Edges) < 3 {
		t.Fatalf("group a after all joins: %+v %v", g, err)
	}
	if _, err := join("a", "3.3.1", 3); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("duplicate join: %v", err)
	}
	if _, err := s.mc.leave(context.Background(), "t", client.McastRequest{Group: "a", Member: "1.1.1"}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("leave by non-member: %v", err)
	}
	if _, err := join("a", "nosuch", 3); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unknown member: %v", err)
	}
	g, err = s.mc.leave(context.Background(), "t", client.McastRequest{Group: "a", Member: "0.0.0"})
	if err != nil || g.State != "ReceivingLeaveReq" || len(g.Edges) == 0 {
		t.Fatalf("after a leave (no re-routing): %+v %v", g, err)
	}
	join("b", "1.1.0", 2) // never completes
	edgesA := s.mc.list()[0].Edges
	s.Close()

	s2, _ := openTest(t, dir, "", clk)
	defer s2.Close()
	gs := s2.mc.list()
	if len(gs) != 2 || gs[0].State != "ReceivingLeaveReq" || gs[1].State != "ReceivingJoinReq" {
		t.Fatalf("groups after restart: %+v", gs)
	}
	if fmt.Sprint(gs[0].Edges) != fmt.Sprint(edgesA) {
		t.Fatalf("tree changed across restart: %v vs %v", gs[0].Edges, edgesA)
	}
	// Timeouts: b misses a join, a misses leaves.
	clk.Add(10 * time.Second)
	s2.Tick()
	clk.Add(2 * time.Second)
	s2.Tick()
	if gs := s2.mc.list(); len(gs) != 0 {
		t.Fatalf("groups after the timeouts: %+v", gs)
	}
	ev, _ := s2.Audit(0, 0)
	destroyed := 0
	for _, e := range ev {
		if e.Action == "mcast.destroy" {
			destroyed++
		}
	}
	if destroyed != 2 {
		t.Fatalf("%d destroy events", destroyed)
	}
}

func TestRefuseForeignAndCorruptDatabases(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"text.db":    []byte("hello, this is not a database\n"),
		"empty.db":   {},
		"garbage.db": bytes.Repeat([]byte{0xff, 0x00, 0x13}, 5000),
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, content, 0o644)
		_, _, err := Open(Config{DBPath: p, NewRouting: AngaraRouting("angara*")})
		if err == nil {
			t.Errorf("%s opened", name)
		}
		after, _ := os.ReadFile(p)
		if !bytes.Equal(after, content) {
			t.Errorf("%s was modified", name)
		}
	}
	// A valid bbolt file that is not ours.
	p := filepath.Join(dir, "other.db")
	db, err := bolt.Open(p, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err })
	db.Close()
	before, _ := os.ReadFile(p)
	if _, _, err := Open(Config{DBPath: p, NewRouting: AngaraRouting("angara*")}); err == nil || !errors.Is(err, store.ErrForeign) {
		t.Errorf("foreign bbolt file: %v", err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Error("foreign bbolt file was modified")
	}
}

// ---- HTTP ----

type apiClient struct {
	t     testing.TB
	url   string
	token string
}

func (c *apiClient) do(method, path string, body any) (int, map[string]any) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, c.url+path, rd)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(data) > 0 && data[0] == '{' {
		if err := json.Unmarshal(data, &out); err != nil {
			c.t.Fatalf("%s %s: bad JSON %q", method, path, data)
		}
	}
	return resp.StatusCode, out
}

func TestHTTPAPI(t *testing.T) {
	s, tok := openTest(t, t.TempDir(), "torus:4x4x2", nil)
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, token: tok}
	anon := &apiClient{t: t, url: srv.URL}
	wrong := &apiClient{t: t, url: srv.URL, token: "0123"}

	if code, _ := anon.do("GET", "/api/fabric", nil); code != 401 {
		t.Errorf("anonymous read: %d", code)
	}
	if code, _ := wrong.do("POST", "/api/jobs", map[string]any{"nodes": 2}); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
	if code, _ := anon.do("GET", "/healthz", nil); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	code, job := c.do("POST", "/api/jobs", map[string]any{"nodes": 4, "transit": 1, "name": "x"})
	if code != 201 || job["state"] != "running" {
		t.Fatalf("submit: %d %v", code, job)
	}
	id := int(job["id"].(float64))
	cases := []struct {
		method, path string
		body         any
		want         int
	}{
		{"POST", "/api/jobs", `{"nodes": 2`, 400},
		{"POST", "/api/jobs", `{"nodes": 2, "bogus": 1}`, 400},
		{"POST", "/api/jobs", `{"nodes": 2} {}`, 400},
		{"POST", "/api/jobs", ``, 400},
		{"POST", "/api/jobs", `{"nodes": -1}`, 400},
		{"POST", "/api/jobs", `{"nodes": 2, "algo": "magic"}`, 400},
		{"POST", "/api/jobs", `{"nodes": 1000}`, 400},
		{"POST", "/api/jobs", `{"nodes": 30, "transit": 2}`, 409},
		{"POST", "/api/jobs", `{"nodes": 31}`, 400}, // no brick holds 31 nodes
		{"POST", "/api/jobs", `{"nodes": 2, "name": "` + strings.Repeat("x", api.MaxBody) + `"}`, 413},
		{"GET", "/api/jobs/abc", nil, 400},
		{"GET", "/api/jobs/999", nil, 404},
		{"DELETE", "/api/jobs/999", nil, 404},
		{"POST", "/api/fabric/failures", `{"link": "9.9.9+X"}`, 404},
		{"POST", "/api/fabric/failures", `{"node": "0.0.0", "link": "0.0.0+X"}`, 400},
		{"POST", "/api/mcast/join", `{"group": "g", "member": "nosuch", "member_count": 2}`, 404},
		{"POST", "/api/mcast/join", `{"group": "g", "member": "0.0.0"}`, 400},
		{"POST", "/api/mcast/leave", `{"group": "nog", "member": "0.0.0"}`, 404},
		{"GET", "/api/nothing", nil, 404},
		{"GET", fmt.Sprintf("/api/jobs/%d/routes", id), nil, 200},
		{"POST", fmt.Sprintf("/api/jobs/%d/verify", id), nil, 200},
		{"GET", "/api/fabric/metrics", nil, 200},
		{"GET", "/api/fabric/load", nil, 200},
	}
	for _, tc := range cases {
		code, body := c.do(tc.method, tc.path, tc.body)
		if code != tc.want {
			t.Errorf("%s %s %.60v: %d, want %d (%v)", tc.method, tc.path, tc.body, code, tc.want, body)
		}
		if code >= 400 && (body == nil || body["error"] == "") {
			t.Errorf("%s %s: error without a message", tc.method, tc.path)
		}
	}
	for _, p := range []string{"/", "/static/app.js", "/static/app.css", "/api/openapi.json", "/metrics"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", p, err, resp.StatusCode)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(strings.ReplaceAll(string(body), "http://www.w3.org/2000/svg", ""), "http://") && strings.HasSuffix(p, ".js") {
			t.Errorf("%s refers to an external URL", p)
		}
	}
	// The web page loads nothing from the internet.
	for _, name := range []string{"api/web/index.html", "api/web/app.js", "api/web/app.css"} {
		b, _ := os.ReadFile(name)
		if strings.Contains(string(b), "https://") || strings.Contains(string(b), "//cdn") {
			t.Errorf("%s loads an external asset", name)
		}
	}
	// Open reads.
	open := httptest.NewServer(api.New(s, api.Options{OpenRead: true}))
	defer open.Close()
	oc := &apiClient{t: t, url: open.URL}
	if code, _ := oc.do("GET", "/api/fabric", nil); code != 200 {
		t.Errorf("open read: %d", code)
	}
	if code, _ := oc.do("POST", "/api/jobs", map[string]any{"nodes": 1}); code != 401 {
		t.Errorf("open read lets writes through: %d", code)
	}
	if code, _ := c.do("DELETE", fmt.Sprintf("/api/jobs/%d", id), nil); code != 200 {
		t.Errorf("release: %d", code)
	}
}

// TestConcurrentClients runs 50 clients placing and releasing jobs and
// joining multicast groups at once for a bounded time, then checks that no
// node was booked twice and memory equals the store.
func TestConcurrentClients(t *testing.T) {
	s, tok := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	deadline := time.Now().Add(2 * time.Second)
	if testing.Short() {
		deadline = time.Now().Add(500 * time.Millisecond)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	placed, conflicts := 0, 0
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := &apiClient{t: t, url: srv.URL, token: tok}
			var mine []int
			for i := 0; time.Now().Before(deadline); i++ {
				switch {
				case w%10 == 0:
					grp := fmt.Sprintf("g%d-%d", w, i)
					c.do("POST", "/api/mcast/join", map[string]any{"group": grp, "member": fmt.Sprintf("%d.%d.0", i%4, w%4), "member_count": 2})
					c.do("POST", "/api/mcast/join", map[string]any{"group": grp, "member": fmt.Sprintf("%d.%d.3", i%4, (w+1)%4), "member_count": 2})
				case len(mine) > 2 || (len(mine) > 0 && i%3 == 0):
					code, _ := c.do("DELETE", fmt.Sprintf("/api/jobs/%d", mine[0]), nil)
					if code != 200 {
						t.Errorf("release: %d", code)
					}
					mine = mine[1:]
				default:
					code, j := c.do("POST", "/api/jobs", map[string]any{"nodes": 1 + (w+i)%6, "transit": 2})
					mu.Lock()
					switch code {
					case 201:
						placed++
						mine = append(mine, int(j["id"].(float64)))
					case 409:
						conflicts++
					default:
						t.Errorf("submit: %d %v", code, j)
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	if placed == 0 {
		t.Fatal("no job placed")
	}
	checkDisjoint(t, s)
	t.Logf("%d placed, %d refused as full", placed, conflicts)
}

// TestSwitchedFabric runs the service on a fat tree: failures and
// multicast work, jobs are refused with the reason.
func TestSwitchedFabric(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "fattree:k=4,n=3", nil)
	defer s.Close()
	if f := s.Fabric(); f.Rules != "none" || len(f.Nodes) != 64+48 {
		t.Fatalf("fabric %s rules %s nodes %d", f.Spec, f.Rules, len(f.Nodes))
	}
	if _, err := s.Submit("t", client.JobRequest{Nodes: 2}); !errors.Is(err, client.ErrBadRequest) || !strings.Contains(err.Error(), "takes no jobs") {
		t.Fatalf("job on a fat tree: %v", err)
	}
	for _, m := range []string{"h0", "h17", "h63"} {
		if _, err := s.mc.join(context.Background(), "t", client.McastRequest{Group: "g", Member: m, MemberCount: 3}); err != nil {
			t.Fatal(err)
		}
	}
	g, _ := s.mc.get("g")
	if g.State != "Ready" || g.Height < 2 {
		t.Fatalf("group on a fat tree: %+v", g)
	}
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: "L1-0[3]"}); err != nil {
		t.Fatal(err)
	}
}
