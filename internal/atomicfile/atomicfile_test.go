package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A write that fails leaves the old file and no temporary file; one that
// succeeds replaces it whole, readable by all.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "old"); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	if err := Write(p, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	if data, _ := os.ReadFile(p); string(data) != "old" {
		t.Fatalf("after a failed write: %q", data)
	}
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	data, _ := os.ReadFile(p)
	entries, _ := os.ReadDir(dir)
	if string(data) != "new" || st.Mode().Perm() != 0o644 || len(entries) != 1 {
		t.Fatalf("after a write: %q %v, %d files", data, st.Mode(), len(entries))
	}
	if err := Write(filepath.Join(dir, "no", "such"), func(io.Writer) error { return nil }); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}

// A directory that does not exist is named, not the temporary file.
func TestWriteMissingDir(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "f")
	err := Write(p, func(w io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "cannot write "+p) || strings.Contains(err.Error(), ".icn-") || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("write into a missing directory: %v", err)
	}
}
