package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// instance is a fake fabric manager instance: a leader answers, a
// standby redirects to the leader, a down one refuses connections.
type instance struct {
	srv    *httptest.Server
	leader atomic.Pointer[string] // "" : this is the leader
	posts  atomic.Int32
	token  string
}

func newInstance(t *testing.T, token string) *instance {
	in := &instance{token: token}
	empty := ""
	in.leader.Store(&empty)
	in.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+in.token {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"missing or wrong bearer token"}`)
			return
		}
		leader := *in.leader.Load()
		if r.Method != "GET" && leader == "none" {
			w.Header().Set("X-ICN-Role", "standby")
			w.WriteHeader(503)
			io.WriteString(w, `{"error":"not the leader: no leader elected yet"}`)
			return
		}
		if r.Method != "GET" && leader != "" {
			w.Header().Set("X-ICN-Role", "standby")
			w.Header().Set("X-ICN-Leader", leader)
			w.Header().Set("Location", leader+r.URL.RequestURI())
			w.WriteHeader(307)
			io.WriteString(w, `{"error":"not the leader"}`)
			return
		}
		role := "leader"
		if leader != "" {
			role = "standby"
		}
		w.Header().Set("X-ICN-Role", role)
		if r.Method == "POST" {
			in.posts.Add(1)
			var req JobRequest
			json.NewDecoder(r.Body).Decode(&req)
			w.WriteHeader(201)
			json.NewEncoder(w).Encode(JobRecord{ID: int(in.posts.Load()), Nodes: req.Nodes})
			return
		}
		json.NewEncoder(w).Encode([]JobRecord{})
	}))
	t.Cleanup(in.srv.Close)
	return in
}

func (in *instance) setLeader(url string) { in.leader.Store(&url) }

// TestClientFollowsTheLeader: reads go to the first instance that
// answers; a write sent to a standby follows its redirect to the leader
// with the token (which net/http would drop between hosts) and learns
// the leader for the next write; a dead instance is skipped.
func TestClientFollowsTheLeader(t *testing.T) {
	leader, standby := newInstance(t, "tok"), newInstance(t, "tok")
	standby.setLeader(leader.srv.URL)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	c := New(deadURL+","+standby.srv.URL+",", "tok")
	if len(c.Servers) != 2 {
		t.Fatalf("servers %v", c.Servers)
	}
	var jobs []JobRecord
	if err := c.Get(context.Background(), "/api/jobs", &jobs); err != nil {
		t.Fatalf("read past a dead instance: %v", err)
	}
	var j JobRecord
	if err := c.Do(context.Background(), "POST", "/api/jobs", JobRequest{Nodes: 2, RequestID: "r"}, &j, true); err != nil {
		t.Fatal(err)
	}
	if j.ID != 1 || leader.posts.Load() != 1 || standby.posts.Load() != 0 {
		t.Fatalf("the write went to the wrong instance: job %+v, leader %d, standby %d", j, leader.posts.Load(), standby.posts.Load())
	}
	if c.Leader() != leader.srv.URL {
		t.Fatalf("leader learned: %q", c.Leader())
	}
}

// TestClientRetries: while no instance leads, a request that is safe to
// repeat is tried until one does; one that is not is not repeated after
// an attempt whose fate is unknown; errors carry their HTTP status.
func TestClientRetries(t *testing.T) {
	in := newInstance(t, "tok")
	in.setLeader("none")
	c := New(in.srv.URL, "tok")
	c.Retry = 5 * time.Second
	time.AfterFunc(500*time.Millisecond, func() { in.setLeader("") })
	var j JobRecord
	if err := c.Do(context.Background(), "POST", "/api/jobs", JobRequest{Nodes: 1, RequestID: "r"}, &j, true); err != nil || j.ID != 1 {
		t.Fatalf("a safe write during a takeover: %+v %v", j, err)
	}
	in.setLeader("none")
	c.Retry = -1
	err := c.Do(context.Background(), "POST", "/api/jobs", JobRequest{Nodes: 1}, &j, false)
	if StatusOf(err) != 503 {
		t.Fatalf("no leader, no retries: %v", err)
	}
	bad := New(in.srv.URL, "wrong")
	if err := bad.Get(context.Background(), "/api/jobs", nil); StatusOf(err) != 401 || !strings.Contains(err.Error(), "bearer token") {
		t.Fatalf("wrong token: %v", err)
	}
}

// TestClientLinksNoServer: the client package (the command line's, the
// Slurm agent's and the fabric watcher's) links neither bbolt nor etcd
// nor the service.
func TestClientLinksNoServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/icn-hpc/icn/fm/client").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"go.etcd.io/bbolt", "go.etcd.io/etcd", "github.com/icn-hpc/icn/fm/store", "github.com/icn-hpc/icn/fm/api", "github.com/icn-hpc/icn/fm"} {
			if dep == bad || strings.HasPrefix(dep, bad+"/") && bad != "github.com/icn-hpc/icn/fm" {
				t.Errorf("fm/client depends on %s", dep)
			}
		}
	}
}
