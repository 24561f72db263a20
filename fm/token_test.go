package fm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenLifecycle: the token is returned until a serving start marks
// it shown; a missing token file refuses to start with the fix in the
// message; rotation replaces file and hash and shows the new token once.
func TestTokenLifecycle(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "fm.db")
	cfg := Config{DBPath: db, Topo: "torus:4x4", NewRouting: AngaraRouting("angara*")}
	s, tok, err := Open(cfg)
	if err != nil || tok == "" {
		t.Fatalf("first start: %q %v", tok, err)
	}
	s.Close() // e.g. the port was busy: the token was never served
	s, tok2, err := Open(cfg)
	if err != nil || tok2 != tok {
		t.Fatalf("second start after a failed first one: %q (want %q) %v", tok2, tok, err)
	}
	if !s.Authorized("Bearer " + tok) {
		t.Fatal("token refused")
	}
	if err := s.TokenShown(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, tok3, err := Open(cfg)
	if err != nil || tok3 != "" {
		t.Fatalf("start after the token was shown: %q %v", tok3, err)
	}
	s.Close()

	os.Remove(TokenFile(db))
	if _, _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "--rotate-token") {
		t.Fatalf("missing token file: %v", err)
	}
	rot := cfg
	rot.RotateToken = true
	s, tok4, err := Open(rot)
	if err != nil || tok4 == "" || tok4 == tok {
		t.Fatalf("rotation: %q %v", tok4, err)
	}
	if s.Authorized("Bearer "+tok) || !s.Authorized("Bearer "+tok4) {
		t.Fatal("rotation kept the old token or refused the new one")
	}
	s.Close()
	b, _ := os.ReadFile(TokenFile(db))
	if strings.TrimSpace(string(b)) != tok4 {
		t.Fatal("token file does not hold the new token")
	}
	os.WriteFile(TokenFile(db), []byte("something else\n"), 0o600)
	if _, _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "--rotate-token") {
		t.Fatalf("wrong token file: %v", err)
	}
}
