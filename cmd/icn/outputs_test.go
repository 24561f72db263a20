package main

import (
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag that writes a file or a directory is in outputFlags (and so
// checked before the work), and every entry of outputFlags is a flag.
func TestOutputFlagsListed(t *testing.T) {
	writes := regexp.MustCompile(`(?i)\b(write|draw)s?\b.*\b(FILE|DIR)\b|\bchart\b.*\.svg|\bdump\b.*\bwritten to\b`)
	listed := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			key := c.CommandPath() + " --" + f.Name
			_, ok := outputFlags[c.CommandPath()][f.Name]
			if ok {
				listed[key] = true
				if len(f.Annotations[outputAnnotation]) != 1 {
					t.Errorf("%s is listed but not annotated", key)
				}
			}
			if writes.MatchString(f.Usage) && !ok {
				t.Errorf("%s writes a file (%q) but is not in outputFlags", key, f.Usage)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	for path, flags := range outputFlags {
		for name := range flags {
			if !listed[path+" --"+name] {
				t.Errorf("outputFlags names %s --%s, which does not exist", path, name)
			}
		}
	}
}

// An output that cannot be written ends the command before its work, with
// one line naming the flag and exit status 3; a device or a pipe is written
// through and stays what it was; nothing is left behind.
func TestOutputsCheckedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no", "such")
	for _, c := range []struct {
		args string
		want string
		code int
	}{
		// 73 s of simulation before the fix
		{"sim sweep --topo torus:8x8 --routing dor --traffic uniform --plot " + missing + "/x.svg", "--plot: cannot write " + missing + "/x.svg: no directory " + missing, 3},
		{"sim sweep --topo torus:8x8 --routing dor --traffic uniform --plot x.txt", "--plot x.txt: the extension must be", 2},
		{"fabric route --topo fattree:k=4,n=3 --engine ftree --lft-out " + missing + "/x.dump", "--lft-out: cannot write " + missing + "/x.dump: no directory", 3},
		{"fabric route --topo fattree:k=4,n=3 --engine ftree --lft-out " + sock, "is a socket", 3},
		{"fabric route --topo fattree:k=4,n=3 --engine ftree --lanes-out " + dir, "--lanes-out: cannot write " + dir + ": is a directory", 3},
		{"route --topo torus:4x4 -o " + file + "/x", "--output: cannot write " + file + "/x: " + dir + "/file is not a directory", 3},
		{"route --topo torus:4x4 --export " + missing + "/t.txt", "--export: cannot write", 3},
		{"topo export --topo torus:4x4 -o " + missing + "/t.json", "--output: cannot write", 3},
		{"sched simulate --topo torus:4x4 --jobs synthetic:load=0.5,span=1d,seed=1 --schedule-out " + missing + "/s.swf", "--schedule-out: cannot write", 3},
		{"mcast --topo fattree:k=4,n=2 --groups random:n=2,size=4 --trees-out " + missing + "/t.json", "--trees-out: cannot write", 3},
		{"slurm topology --fabric torus:4x4 --out " + file + "/d", "--out: cannot write " + file + "/d: " + file + " is not a directory", 3},
		{"serve backup --db " + filepath.Join(dir, "none.db") + " " + missing + "/b.db", "cannot write " + missing + "/b.db: no directory", 3},
		// the size refusal comes from the fabric, before 24 s of routing
		{"fabric route --topo fattree:m=40,n=3 --engine ftree --lft-out " + filepath.Join(dir, "big.dump"), "would be up to 2.4 GB", 2},
	} {
		t0 := time.Now()
		_, stderr, code := runICN(t, dir, strings.Fields(c.args)...)
		took := time.Since(t0)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("icn %s: exit %d, stderr %q; want %d and one line with %q", c.args, code, stderr, c.code, c.want)
		}
		if took > 10*time.Second {
			t.Errorf("icn %s: refused after %v, not before the work", c.args, took)
		}
	}
	if st, err := os.Lstat(sock); err != nil || st.Mode()&fs.ModeSocket == 0 {
		t.Errorf("the socket was replaced: %v %v", st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "sock" && e.Name() != "file" {
			t.Errorf("left behind: %s", e.Name())
		}
	}

	// /dev/null is written through and stays a device (it was replaced by
	// a regular file: --lft-out /dev/null as root).
	if st, err := os.Stat("/dev/null"); err == nil && st.Mode()&fs.ModeCharDevice != 0 {
		_, stderr, code := runICN(t, dir, "fabric", "route", "--topo", "fattree:k=4,n=3", "--engine", "ftree", "--lft-out", "/dev/null")
		if code != 0 {
			t.Errorf("--lft-out /dev/null: exit %d: %s", code, stderr)
		}
		if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("/dev/null is no longer a character device: %v %v", st.Mode(), err)
		}
	}
	// a named pipe gets the dump and stays a pipe
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- ""
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	_, stderr, code := runICN(t, dir, "fabric", "route", "--topo", "fattree:k=4,n=3", "--engine", "ftree", "--lft-out", fifo)
	var dump string
	select {
	case dump = <-got:
	case <-time.After(30 * time.Second): // the pipe was never opened for writing
		t.Fatalf("--lft-out FIFO: exit %d (%s), nothing written to the pipe", code, stderr)
	}
	if code != 0 || !strings.HasPrefix(dump, "# opensm-lfts.dump written by icn") || !strings.Contains(dump, " lids dumped\n") {
		t.Errorf("--lft-out FIFO: exit %d (%s), the reader got %d bytes", code, stderr, len(dump))
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", st.Mode(), err)
	}
}

// A write that fails after the work (a full disk, a directory removed
// meanwhile) is exit status 3 too, however it is wrapped.
func TestWriteErrorIsExit3(t *testing.T) {
	err := atomicfile.WriteFile(filepath.Join(t.TempDir(), "gone", "x"), nil)
	if code := exitCode(fmt.Errorf("--output: %w", err)); code != 3 {
		t.Errorf("exit %d for %v", code, err)
	}
}
