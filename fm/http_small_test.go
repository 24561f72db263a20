package fm

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
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
	tr, r, err := routing.OpenTable(bytes.NewReader(file), "", "")
	var rep *routing.Report
	if err == nil {
		rep, err = r.Verify(context.Background(), tr, routing.VerifyOptions{Workers: 1})
	}
	if resp.StatusCode != 200 || err != nil || rep.Routes != 2 || len(rep.Violations) != 0 {
		t.Errorf("routes?format=routes: %d, %v, %+v", resp.StatusCode, err, rep)
	}
	if code, _ := c.do("GET", "/api/jobs/"+itoa(id)+"/routes?format=xml", nil); code != 400 {
		t.Errorf("routes?format=xml: %d", code)
	}
	if code, m := c.do("POST", "/api/jobs/"+itoa(id)+"/migrate", nil); code != 200 || m["routing"] != "migrated" {
		t.Errorf("migrate: %d %v", code, m)
	}
	// The answer leaves the table out; the service's record keeps it.
	if ok, problem, err := s.VerifyJob(id); !ok || err != nil {
		t.Errorf("the migrated job's table after the answer: %s %v", problem, err)
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

// TestLargeAnswersGzip: over HTTP, GET /api/fabric of a fabric whose
// answer exceeds 1 MiB goes gzip-compressed to a client that accepts it
// (the same bytes once decompressed, the compressed form kept while the
// answer stays), plain to one that does not; a placement renews it.
// GET /api/fabric?compact=1 answers a torus's grid form and a fat
// tree's full answer.
func TestLargeAnswersGzip(t *testing.T) {
	s, tok := openTest(t, t.TempDir(), "torus:16x16x16", nil)
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	get := func(path, accept string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		// A transport of its own: the default one would ask for gzip
		// and decompress by itself.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return resp, body
	}
	gunzip := func(b []byte) []byte {
		t.Helper()
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for round := range 2 {
		want := s.FabricJSON()
		if len(want) < 1<<20 {
			t.Fatalf("the fabric's answer has %d bytes, want a large one", len(want))
		}
		plain, body := get("/api/fabric", "")
		if plain.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, want) {
			t.Errorf("round %d: without Accept-Encoding: %q, %d bytes of %d", round, plain.Header.Get("Content-Encoding"), len(body), len(want))
		}
		if r, _ := get("/api/fabric", "gzip;q=0, br"); r.Header.Get("Content-Encoding") != "" {
			t.Errorf("round %d: gzip;q=0 answered with %q", round, r.Header.Get("Content-Encoding"))
		}
		r1, z1 := get("/api/fabric", "br, gzip")
		r2, z2 := get("/api/fabric", "gzip;q=0.5")
		if r1.Header.Get("Content-Encoding") != "gzip" || r2.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("round %d: Content-Encoding %q, %q", round, r1.Header.Get("Content-Encoding"), r2.Header.Get("Content-Encoding"))
		}
		if !bytes.Equal(gunzip(z1), want) || !bytes.Equal(z1, z2) || len(z1)*4 > len(want) {
			t.Errorf("round %d: gzip answers of %d and %d bytes for %d", round, len(z1), len(z2), len(want))
		}
		if _, err := s.Submit("test", client.JobRequest{Nodes: 8, Transit: 2}); err != nil {
			t.Fatal(err)
		}
	}
	_, compact := get("/api/fabric?compact=1", "gzip")
	var fg client.FabricGrid
	if err := json.Unmarshal(compact, &fg); err != nil || !fg.Grid || len(fg.NodeJobs) != 4096 || len(compact) > 64<<10 {
		t.Errorf("compact answer of a torus: %d bytes, %v", len(compact), err)
	}
	ft, ftok := openTest(t, t.TempDir(), "fattree:k=4,n=3", nil)
	defer ft.Close()
	fsrv := httptest.NewServer(api.New(ft, api.Options{}))
	defer fsrv.Close()
	req, _ := http.NewRequest("GET", fsrv.URL+"/api/fabric?compact=1", nil)
	req.Header.Set("Authorization", "Bearer "+ftok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(body, ft.FabricJSON()) {
		t.Errorf("compact answer of a fat tree is not its full answer")
	}
}

// TestFabricETag: GET /api/fabric (full and compact, plain and gzip),
// /api/fabric/load and /api/jobs carry an ETag; asked again with it in
// If-None-Match they answer 304 without a body while nothing changed,
// and 200 with a new tag once a placement or a failure changed the
// answer.
func TestFabricETag(t *testing.T) {
	s, tok := openTest(t, t.TempDir(), "torus:16x16x16", nil)
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	get := func(path, accept, tag string) (int, string, int) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		if tag != "" {
			req.Header.Set("If-None-Match", tag)
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("ETag"), len(body)
	}
	paths := []string{"/api/fabric", "/api/fabric?compact=1", "/api/fabric/load", "/api/jobs"}
	tags := map[string]string{}
	for _, p := range paths {
		for _, accept := range []string{"", "gzip"} {
			code, tag, n := get(p, accept, "")
			if code != 200 || len(tag) < 10 || tag[0] != '"' || n == 0 {
				t.Fatalf("GET %s (%q): %d, ETag %q, %d bytes", p, accept, code, tag, n)
			}
			if code, again, n := get(p, accept, tag); code != http.StatusNotModified || again != tag || n != 0 {
				t.Errorf("GET %s (%q) with If-None-Match %s: %d, ETag %q, %d bytes", p, accept, tag, code, again, n)
			}
			tags[p+" "+accept] = tag
		}
	}
	if tags["/api/fabric "] == tags["/api/fabric gzip"] || tags["/api/fabric "] == tags["/api/fabric?compact=1 "] {
		t.Errorf("one tag for two representations: %v", tags)
	}
	if code, _, _ := get("/api/fabric", "", `"0123456789"`); code != 200 {
		t.Errorf("another tag: %d", code)
	}
	if _, err := s.Submit("test", client.JobRequest{Nodes: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: "5.5.5+X"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		old := tags[p+" "]
		if code, tag, n := get(p, "", old); code != 200 || tag == old || n == 0 {
			t.Errorf("GET %s after a change with the old tag: %d, ETag %q, %d bytes", p, code, tag, n)
		}
	}
}
