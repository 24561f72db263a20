package fm

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/icn-hpc/icn/internal/atomicfile"
)

// TokenFile returns where the API token of a database is kept.
func TokenFile(dbPath string) string { return dbPath + ".token" }

// newToken creates a random token, writes it to the token file with mode
// 0600 and returns it. An existing token file is never overwritten.
func newToken(path string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("token file %s already exists but the database has no token; remove one of them", path)
		}
		return "", err
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", err
	}
	return tok, nil
}

// writeToken replaces the token file atomically (mode 0600; atomicfile) with a new
// random token and returns it.
func writeToken(path string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b)
	if err := atomicfile.WriteMode(path, 0o600, func(w io.Writer) error {
		_, err := io.WriteString(w, tok+"\n")
		return err
	}); err != nil {
		return "", err
	}
	return tok, nil
}

// readToken reads the token file and checks it against the stored hash.
func readToken(path string, want []byte) (string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("token file %s is missing, so no client could use the service; run icn serve with --rotate-token to create a new token", path)
	}
	if err != nil {
		return "", err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		// As ssh refuses a private key others can read.
		return "", fmt.Errorf("token file %s can be read by others (mode %04o): run chmod 600 %s, and --rotate-token if someone may have read it", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if subtle.ConstantTimeCompare(hashToken(tok), want) != 1 {
		return "", fmt.Errorf("token file %s does not hold the database's token; run icn serve with --rotate-token to create a new token", path)
	}
	return tok, nil
}

func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return h[:]
}

// checkToken compares a bearer token with the stored hash in constant time.
func checkToken(header string, want []byte) bool {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || tok == "" || want == nil {
		return false
	}
	return subtle.ConstantTimeCompare(hashToken(tok), want) == 1
}

// tokenForNewStore returns the token of a store being created: the
// token file's (refused when others can read it), or a new one written
// to a new file (fresh).
func tokenForNewStore(path string) (tok string, fresh bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		tok, err := newToken(path)
		return tok, err == nil, err
	}
	if err != nil {
		return "", false, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return "", false, fmt.Errorf("token file %s can be read by others (mode %04o): run chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	tok = strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return "", false, fmt.Errorf("token file %s holds %d characters, too short for a token (at least 16)", path, len(tok))
	}
	return tok, false, nil
}
