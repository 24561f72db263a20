package fm

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
)

// rawPost sends a POST /api/jobs announcing 100 bytes of body but sending
// only part of it, then either waits past the server's read timeout or
// closes its side, and returns the answer's status line and body.
func rawPost(t *testing.T, addr, tok string, closeWrite bool, wait time.Duration) (string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"nodes\":", tok)
	if closeWrite {
		conn.(*net.TCPConn).CloseWrite()
	} else {
		time.Sleep(wait)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&body)
	return resp.Status, body.String()
}

// TestRequestBodyEdges: a body that stops arriving gets 408 and one that
// is cut short gets 400, each with a line saying so (not 500 with
// internal text), and nothing is placed.
func TestRequestBodyEdges(t *testing.T) {
	s, tok := openTest(t, t.TempDir(), "torus:4x4x2", nil)
	defer s.Close()
	srv := httptest.NewUnstartedServer(api.New(s, api.Options{}))
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	status, body := rawPost(t, addr, tok, false, time.Second)
	if !strings.HasPrefix(status, "408") || !strings.Contains(body, "did not arrive in time") {
		t.Errorf("slow body: %s %s", status, body)
	}
	status, body = rawPost(t, addr, tok, true, 0)
	if !strings.HasPrefix(status, "400") || !strings.Contains(body, "truncated: 9 of the 100 bytes") {
		t.Errorf("truncated body: %s %s", status, body)
	}
	if jobs, _ := s.Jobs(true); len(jobs) != 0 {
		t.Errorf("%d jobs placed from incomplete requests", len(jobs))
	}
}

// TestTokenFileReadableByOthers: a start refuses a token file that group
// or others can read, as ssh refuses such a private key, and says how to
// fix it; the database is not modified.
func TestTokenFileReadableByOthers(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:4x4x2", nil)
	s.Close()
	db := filepath.Join(dir, "fm.db")
	if err := os.Chmod(TokenFile(db), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(db)
	_, _, err := Open(Config{DBPath: db, NewRouting: AngaraRouting("angara*")})
	if err == nil || !strings.Contains(err.Error(), "chmod 600") || !strings.Contains(err.Error(), "mode 0644") {
		t.Fatalf("token file 0644: %v", err)
	}
	if after, _ := os.ReadFile(db); string(after) != string(before) {
		t.Error("the database was modified")
	}
	os.Chmod(TokenFile(db), 0o600)
	s, _, err = Open(Config{DBPath: db, NewRouting: AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
