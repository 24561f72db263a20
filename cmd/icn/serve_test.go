package main

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"

	"github.com/icn-hpc/icn/fm"
)

// TestServeCheckBackupAndRefusals: icn serve --check passes a good file
// and refuses a damaged one (one line, non-zero exit, file unchanged, no
// panic); icn serve backup writes a checked copy; plain HTTP on a
// non-loopback address and half a TLS configuration are refused.
func TestServeCheckBackupAndRefusals(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "fm.db")
	s, _, err := fm.Open(fm.Config{DBPath: db, Topo: "torus:4x4", NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit("t", client.JobRequest{Nodes: 3}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, e, code := runICN(t, dir, "serve", "--db", db, "--check"); code != 0 || !strings.Contains(e, "ok") {
		t.Fatalf("check of a good file: %d %q", code, e)
	}
	if _, e, code := runICN(t, dir, "serve", "backup", "--db", db, "copy.db"); code != 0 {
		t.Fatalf("backup: %d %q", code, e)
	}
	if err := store.CheckFile(filepath.Join(dir, "copy.db")); err != nil {
		t.Fatalf("backup copy: %v", err)
	}

	good, _ := os.ReadFile(db)
	ps := os.Getpagesize()
	for name, bad := range map[string][]byte{
		"truncated": good[:len(good)/2+100],
		"page headers flipped": func() []byte {
			b := bytes.Clone(good)
			for off := 2 * ps; off+16 <= len(b); off += ps {
				for i := 0; i < 16; i++ {
					b[off+i] ^= 0xa5
				}
			}
			return b
		}(),
		"meta pages zeroed": func() []byte {
			b := bytes.Clone(good)
			clear(b[:2*ps])
			return b
		}(),
	} {
		os.WriteFile(db, bad, 0o600)
		sum := sha256.Sum256(bad)
		for _, args := range [][]string{{"serve", "--db", db, "--check"}, {"serve", "--db", db, "--addr", "127.0.0.1:0"}} {
			_, e, code := runICN(t, dir, args...)
			if code == 0 || !strings.HasPrefix(e, "icn: ") || strings.Count(e, "\n") != 1 || strings.Contains(e, "goroutine") {
				t.Errorf("%v on a file with %s: exit %d, stderr %q", args, name, code, e)
			}
			if after, _ := os.ReadFile(db); sha256.Sum256(after) != sum {
				t.Errorf("%v modified the file with %s", args, name)
			}
		}
	}

	other := filepath.Join(dir, "new.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--db", other, "--addr", "0.0.0.0:0"}, "--insecure"},
		{[]string{"serve", "--db", other, "--addr", ":0"}, "--insecure"},
		{[]string{"serve", "--db", other, "--tls-cert", "c.pem"}, "--tls-key"},
	} {
		_, e, code := runICN(t, dir, tc.args...)
		if code != 2 || !strings.Contains(e, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, e)
		}
	}
	if _, err := os.Stat(other); err == nil {
		t.Error("a refused start created the database")
	}
}
