package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm"
	"github.com/spf13/cobra"
)

// helpExample is one example of a command's help, continuation lines
// joined.
type helpExample struct {
	cmd, line string
}

// helpExamples lists the examples of every command's help, command by
// command in the order of the tree.
func helpExamples(c *cobra.Command) []helpExample {
	var out []helpExample
	var cur string
	for _, l := range strings.Split(c.Example, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if more, ok := strings.CutSuffix(l, "\\"); ok {
			cur += more
			continue
		}
		out = append(out, helpExample{c.CommandPath(), cur + l})
		cur = ""
	}
	for _, s := range c.Commands() {
		out = append(out, helpExamples(s)...)
	}
	return out
}

// examplesNotRun are the examples a test cannot run, by a piece of their
// text, with the reason; each is named so that a new example is either
// run or given a reason here.
var examplesNotRun = map[string]string{
	"icn serve\x00":                           "serves on the fixed port 8080 until stopped (the serve tests start the service on a free port)",
	"--addr 127.0.0.1:9090":                   "serves until stopped, on a fixed port and under /var/lib",
	"--tls-cert cert.pem":                     "needs a TLS certificate and a non-loopback address",
	"etcd://":                                 "needs an etcd cluster (TestServeHA starts one)",
	"icn fabric watch":                        "needs a running fabric manager and ibnetdiscover on a live fabric (TestWatch* drive it on ibsim)",
	"icn slurm agent":                         "needs slurmctld (TestSlurmAgent* start one)",
	"icn slurm install":                       "writes into /etc/slurm",
	"--out /etc/slurm":                        "writes into /etc/slurm",
	"sbatch ":                                 "needs Slurm",
	"--roots S-0002c90000001d18":              "needs the fabric with that switch (the user's ibnetdiscover output)",
	"--topo net.ibnet --lft opensm-lfts.dump": "reads the tables of the example before it, on the user's fabric",
	"go build -o stencil":                     "builds an example program from the repository (shmem/examples/kernels's tests build and run it)",
}

// examplesExit are the examples whose answer is documented to be no
// (exit status 1), by a piece of their text.
var examplesExit = map[string]int{
	"icn route check t.json --fail-links 0.0+X": 1, // the table does not survive that failure
}

// examplesLong are the examples that take over about a second on two
// cores (over two under -race), by a piece of their text ("\x00" ends a
// line): they run with -tags long (about 15 minutes in all, most of it
// icn mcast experiment --families all, twice).
var examplesLong = []string{
	"--families",
	"icn sim sweep",
	"icn experiment faults --seed 1",
	"icn experiment faults --trials 50",
	"icn experiment balance\x00",
	"icn multiring family",
	"icn multiring search --n 128",
	"--schedule optimal",
	"icn sim multiring --n",
	"icn sim --topo fattree:k=4,n=3",
	"icn sim --topo torus:8x8 --rate",
	"icn sim --topo torus:8x8 --routing dor",
	"--topo torus:16x16x16",
	"icn sched experiment",
	"icn sched simulate --topo torus:4x4x2 --jobs synthetic",
	"--topo taihulight",
	"--topo dragonfly:a=18",
	// Over two seconds under -race.
	"--algo genetic",
	"icn sim --topo dragonfly",
	"icn sim --topo torus:8x8 --router staged",
	"icn sim --topo torus:8x8 --routing table",
	"icn sim --topo torus:4x4x4",
	"icn sim --booksim",
	"icn experiment balance --sorted",
	"icn topo show torus:8x8 --fail-links",
	"--topo torus:8x8x8",
	"--topo bluelight",
	// README's.
	"--topo torus:32x32x32 --nodes 4096 --budget 0",
	"--topo fattree:m=40,n=3 --engine ftree",
}

// exampleFixtures are files the examples read, made before they run.
var exampleFixtures = map[string]string{
	"failed.txt": "0.0+X\n3.4+Y\n",
	"blocks.txt": "1 2 4\n2 3 5\n3 4 6\n4 5 7\n5 6 1\n6 7 2\n7 1 3\n", // the Fano plane
	"groups.txt": "g1: 0 5 9 14\ng2: 1 2 3\n",
	"h2.txt":     "h: 0 1 2 3 4 5 6 7\n",
	"efi16.txt":  "e: 0 3 6 9 12 15 18 21 24 27 30 33 36 39 42 45\n",
	"torus88.cfg": "topology = torus;\nk = 8;\nn = 2;\nrouting_function = dim_order;\nnum_vcs = 2;\n" +
		"traffic = uniform;\ninjection_rate = 0.1;\n",
}

// TestHelpExamples runs every example of every command's help (with
// bash, icn being this test binary) in one directory, in the order of
// the tree, and checks that each exits 0 (or the status examplesExit
// gives it): an example that a command refuses is a failed test. Examples that need what a test cannot give
// are named in examplesNotRun with the reason, and the long ones run only
// with -tags long.
func TestHelpExamples(t *testing.T) {
	examples := helpExamples(newRootCmd())
	ran, used := runExamples(t, examples)
	for piece := range examplesNotRun {
		if !used[piece] && !readmeOnly(piece) {
			t.Errorf("examplesNotRun names %q, which no example has", piece)
		}
	}
	if ran < len(examples)/2 {
		t.Fatalf("ran %d of %d examples", ran, len(examples))
	}
}

// TestREADMEExamples runs README's examples ("A few examples") as
// TestHelpExamples runs the help's: README's other blocks are the quick
// start (the service, and this test command) and the Slurm walkthrough
// (TestSlurmREADMEWalkthrough).
func TestREADMEExamples(t *testing.T) {
	examples := readmeExamples(t)
	if len(examples) < 8 {
		t.Fatalf("README's examples: found %d lines", len(examples))
	}
	runExamples(t, examples)
}

// readmeExamples lists the lines of README's first shell block after "A
// few examples".
func readmeExamples(t *testing.T) []helpExample {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "A few examples")
	if !ok {
		t.Fatal("README has no \"A few examples\"")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	var out []helpExample
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, helpExample{"README", l})
		}
	}
	return out
}

// readmeOnly reports whether an examplesNotRun entry is for README's
// examples (TestHelpExamples does not see them).
func readmeOnly(piece string) bool { return piece == "go build -o stencil" }

// runExamples runs the examples as TestHelpExamples describes, in a new
// directory with the fixtures, and returns how many ran and which
// examplesNotRun entries were used.
func runExamples(t *testing.T, examples []helpExample) (int, map[string]bool) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir, env := exampleDir(t)
	used := map[string]bool{}
	ran := 0
	for _, ex := range examples {
		key := ex.line + "\x00"
		skip := ""
		for piece, why := range examplesNotRun {
			if strings.Contains(key, piece) {
				skip, used[piece] = why, true
			}
		}
		long := false
		for _, piece := range examplesLong {
			long = long || strings.Contains(key, piece)
		}
		switch {
		case skip != "":
			t.Logf("%s: not run: %s", ex.line, skip)
			continue
		case long && !runLongExamples:
			t.Logf("%s: long (-tags long)", ex.line)
			continue
		}
		runExample(t, ex, dir, env)
		ran++
	}
	return ran, used
}

// exampleDir makes the directory the examples run in: icn (this test
// binary) on PATH, the fixtures, a trace, a message file and a
// service's database.
func exampleDir(t *testing.T) (dir string, env []string) {
	dir = t.TempDir()
	bin := filepath.Join(dir, "bin")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "icn")); err != nil {
		t.Fatal(err)
	}
	for name, text := range exampleFixtures {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, filepath.Join("..", "..", "sched", "testdata", "small.swf"), filepath.Join(dir, "trace.swf"))
	copyFile(t, filepath.Join("..", "..", "sim", "testdata", "traces", "small.txt"), filepath.Join(dir, "msgs.txt"))
	s, _, err := fm.Open(fm.Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "torus:4x4", NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+dir,
		"ICN_PROGRESS=0", "ICN_SERVER=http://127.0.0.1:1", noRaceExitSleep())
	return dir, env
}

// runExample runs one example with bash in dir and checks its exit
// status against examplesExit (0 unless named there).
func runExample(t *testing.T, ex helpExample, dir string, env []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", ex.line)
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	want := 0
	for piece, code := range examplesExit {
		if strings.Contains(ex.line, piece) {
			want = code
		}
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() != want:
		t.Errorf("%s (%s): exit %d, want %d:\n%s", ex.line, ex.cmd, ee.ExitCode(), want, tail(out, 600))
	case err == nil && want != 0:
		t.Errorf("%s (%s): exit 0, want %d", ex.line, ex.cmd, want)
	case err != nil && ee == nil:
		t.Errorf("%s: %v", ex.line, err)
	}
	t.Logf("%s: %.1fs", ex.line, time.Since(start).Seconds())
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
