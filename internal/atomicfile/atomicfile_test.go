package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// /dev/null stays a character device: Check accepts it and Write writes
// through it (the bug: a temporary file renamed over /dev/null as root).
func TestWriteDevice(t *testing.T) {
	const dev = "/dev/null"
	st, err := os.Stat(dev)
	if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Skip("no /dev/null character device")
	}
	if err := Check(dev); err != nil {
		t.Fatalf("check %s: %v", dev, err)
	}
	wrote := false
	if err := Write(dev, func(w io.Writer) error {
		_, err := io.WriteString(w, "discarded")
		wrote = err == nil
		return err
	}); err != nil || !wrote {
		t.Fatalf("write %s: %v (wrote %v)", dev, err, wrote)
	}
	if st, err := os.Stat(dev); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v %v", dev, st.Mode(), err)
	}
}

// A named pipe is written through, not replaced: a reader gets the data
// and the pipe is still there.
func TestWriteFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := Check(p); err != nil {
		t.Fatalf("check a pipe: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if err := WriteFile(p, []byte("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Fatalf("reader got %q", s)
	}
	if st, err := os.Lstat(p); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the pipe was replaced: %v %v", st.Mode(), err)
	}
}

// A socket, a directory, a missing directory and a read-only directory are
// refused by Check (before any work) and by Write, with the path named and
// as an *Error; nothing is left behind.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer l.Close()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		sock:                              "is a socket",
		dir:                               "is a directory",
		filepath.Join(dir, "no", "x.svg"): "no directory " + filepath.Join(dir, "no"),
		filepath.Join(dir, "f", "x"):      "is not a directory",
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root writes into a 0500 directory
		cases[filepath.Join(ro, "x")] = "permission denied"
	}
	for p, want := range cases {
		for name, f := range map[string]func(string) error{"Check": Check, "Write": func(p string) error { return WriteFile(p, []byte("x")) }} {
			err := f(p)
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), "cannot write "+p+": ") || !strings.Contains(err.Error(), want) {
				t.Errorf("%s(%s): %v, want an *Error saying %q", name, p, err, want)
			}
		}
	}
	if st, err := os.Lstat(sock); err != nil || st.Mode()&fs.ModeSocket == 0 {
		t.Errorf("the socket was replaced: %v %v", st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".icn-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if !errors.Is(Check(filepath.Join(dir, "no", "x")), fs.ErrNotExist) {
		t.Error("a missing directory is not fs.ErrNotExist")
	}
}

// A symbolic link to a file stays a link; its target gets the new content.
func TestWriteThroughLink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", link); err != nil {
		t.Fatal(err)
	}
	if err := Check(link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(link)
	data, _ := os.ReadFile(target)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 || string(data) != "new" {
		t.Fatalf("link %v, target %q", st.Mode(), data)
	}
}
