package fm

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
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
