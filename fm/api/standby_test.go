package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/fm/client"
)

// standby is a Backend that does not lead: every change is refused with
// ErrNotLeader; reads answer.
type standby struct {
	Backend
	health client.Health
}

func (s *standby) Health() client.Health                  { return s.health }
func (s *standby) Authorized(h string) bool               { return h == "Bearer tok" }
func (s *standby) ObserveAllocations(func(float64, bool)) {}
func (s *standby) Stats() client.ServiceStats             { return client.ServiceStats{} }
func (s *standby) JobsJSON() []byte                       { return []byte("[]\n") }
func (s *standby) SubmitContext(ctx context.Context, actor string, req client.JobRequest) (*client.JobRecord, error) {
	return nil, fmt.Errorf("%w: this instance is a standby; nothing was placed", client.ErrNotLeader)
}

// TestStandbyAnswers: a standby answers reads with its role, revision
// and staleness in headers; a change is redirected (307) to the leader
// with Location and X-ICN-Leader, or answered 503 with Retry-After while
// no leader is known; /metrics reports the role.
func TestStandbyAnswers(t *testing.T) {
	b := &standby{health: client.Health{Status: "ok", Role: "standby", Store: "etcd", URL: "http://me:1", Leader: "http://leader:2",
		Term: 7, Revision: 41, Lag: 2}}
	srv := httptest.NewServer(New(b, Options{}))
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	r := do("GET", "/api/jobs", "")
	if r.StatusCode != 200 || r.Header.Get("X-ICN-Role") != "standby" || r.Header.Get("X-ICN-Revision") != "41" || r.Header.Get("X-ICN-Stale") != "" {
		t.Fatalf("read: %d %v", r.StatusCode, r.Header)
	}
	r = do("POST", "/api/jobs?x=1", `{"nodes":2}`)
	if r.StatusCode != 307 || r.Header.Get("Location") != "http://leader:2/api/jobs?x=1" || r.Header.Get("X-ICN-Leader") != "http://leader:2" {
		t.Fatalf("write to a standby: %d %v", r.StatusCode, r.Header)
	}
	b.health.Leader, b.health.Stale = "", true
	r = do("POST", "/api/jobs", `{"nodes":2}`)
	if r.StatusCode != 503 || r.Header.Get("Retry-After") == "" || r.Header.Get("X-ICN-Stale") != "true" {
		t.Fatalf("write with no leader known: %d %v", r.StatusCode, r.Header)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`icn_fm_role{role="standby"} 1`, `icn_fm_role{role="leader"} 0`, "icn_fm_term 7", "icn_fm_revision_lag 2", "icn_fm_stale 1"} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
