package fm

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/store"

	"github.com/icn-hpc/icn/routing"
)

// TestHTTPSmallPoints covers the smaller points of issue 15.
func TestHTTPSmallPoints(t *testing.T) {
	dir := t.TempDir()
	s, tok := openTest(t, dir, "torus:4x4x2", nil)
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, token: tok}

	for _, body := range []string{`{"NODES":1}`, `{"nodes":1,"nodes":2}`, `{"Nodes":1}`, `{"nodes":1} {}`, `[1]`} {
		code, out := c.do("POST", "/api/jobs", body)
		if code != 400 {
			t.Errorf("%s: HTTP %d", body, code)
		}
		if msg, _ := out["error"].(string); strings.Count(msg, "bad request") != 1 {
			t.Errorf("%s: error %q", body, msg)
		}
	}
	code, out := c.do("POST", "/api/mcast/join", map[string]any{"group": "g", "member": "0.0.0", "member_count": 1000})
	if msg, _ := out["error"].(string); code != 400 || strings.Count(msg, "bad request") != 1 {
		t.Errorf("bad member count: %d %q", code, msg)
	}
	for _, m := range []string{"PUT", "PATCH"} {
		code, _ := c.do(m, "/api/jobs", "{}")
		if code != 405 {
			t.Errorf("%s /api/jobs: %d", m, code)
		}
	}
	if code, _ := c.do("PUT", "/api/nosuch", nil); code != 404 {
		t.Errorf("unknown path: %d", code)
	}
	for _, q := range []string{"after=abc", "after=-1", "limit=x", "limit=0"} {
		if code, _ := c.do("GET", "/api/audit?"+q, nil); code != 400 {
			t.Errorf("audit?%s: %d", q, code)
		}
	}
	if code, _ := c.do("GET", "/api/audit?after=1&limit=2", nil); code != 200 {
		t.Errorf("valid audit query: %d", code)
	}
	// Migrate over HTTP.
	code, job := c.do("POST", "/api/jobs", map[string]any{"nodes": 2})
	if code != 201 {
		t.Fatalf("submit: %d", code)
	}
	id := int(job["id"].(float64))
	// The answer carries the placement and the table's figures; the
	// table comes from its own resource.
	if _, has := job["table"]; has || job["stats"] == nil || len(job["active"].([]any)) != 2 {
		t.Errorf("submit answer: %v", job)
	}
	if code, tb := c.do("GET", "/api/jobs/"+itoa(id)+"/routes", nil); code != 200 || len(tb["routes"].([]any)) != 2 {
		t.Errorf("routes of the job: %d %v", code, tb)
	}
	// The same table as a compact route file, which the table checker
	// reads and finds valid.
	req, _ := http.NewRequest("GET", srv.URL+"/api/jobs/"+itoa(id)+"/routes?format=routes", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	file, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rep, _, err := routing.VerifyFile(bytes.NewReader(file), "", "", 1)
	if resp.StatusCode != 200 || err != nil || rep.Routes != 2 || len(rep.Violations) != 0 {
		t.Errorf("routes?format=routes: %d, %v, %+v", resp.StatusCode, err, rep)
	}
	if code, _ := c.do("GET", "/api/jobs/"+itoa(id)+"/routes?format=xml", nil); code != 400 {
		t.Errorf("routes?format=xml: %d", code)
	}
	if code, m := c.do("POST", "/api/jobs/"+itoa(id)+"/migrate", nil); code != 200 || m["routing"] != "migrated" {
		t.Errorf("migrate: %d %v", code, m)
	}
	if code, _ := c.do("POST", "/api/jobs/77/migrate", nil); code != 404 {
		t.Errorf("migrate unknown job: %d", code)
	}
	// Backup: token required; the copy opens and holds the job.
	req, _ = http.NewRequest("GET", srv.URL+"/api/backup", nil)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("backup without token: %d", resp.StatusCode)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cp := filepath.Join(t.TempDir(), "copy.db")
	os.WriteFile(cp, data, 0o600)
	os.WriteFile(TokenFile(cp), []byte(tok+"\n"), 0o600)
	if err := store.CheckFile(cp); err != nil {
		t.Fatal(err)
	}
	s2, _, err := Open(Config{DBPath: cp, NewRouting: AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if j, err := s2.Job(id); err != nil || j.State != "running" {
		t.Fatalf("job in the backup: %v %v", j, err)
	}
	// BackupFile writes a checked copy.
	var buf bytes.Buffer
	if _, err := s.Backup(&buf, nil); err != nil || buf.Len() == 0 {
		t.Fatal(err)
	}
	out2 := filepath.Join(t.TempDir(), "b.db")
	if _, err := store.BackupFile(func(w io.Writer) (int64, error) { return s.Backup(w, nil) }, out2); err != nil {
		t.Fatal(err)
	}
	if err := store.CheckFile(out2); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
