package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
)

// The test binary doubles as icn: with ICN_CLI_ARGS set (arguments joined
// by \x1f) it runs main with them, and so it does when it is started by
// the name icn (TestHelpExamples puts a link of that name on PATH).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "icn" {
		main()
		os.Exit(0)
	}
	if a, ok := os.LookupEnv("ICN_CLI_ARGS"); ok {
		os.Args = append([]string{"icn"}, strings.Split(a, "\x1f")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runICN(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ICN_CLI_ARGS="+strings.Join(args, "\x1f"), "ICN_PROGRESS=0", noRaceExitSleep())
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// noRaceExitSleep is the GORACE setting that spares a process of the
// race-enabled test binary the race detector's second of sleep at exit
// (atexit_sleep_ms, default 1000), keeping the caller's other settings.
func noRaceExitSleep() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// TestBadInput: every malformed spec, unknown name, impossible request or
// corrupt file gets one line on stderr naming the problem and a non-zero
// exit status, never a panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.net"), []byte("garbage\x00\x01 switch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.swf"), []byte("1 0 0 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args string
		want string // in the message
		code int    // the exit status: 2 for an invalid request (one never met), 1 for a no, 3 for a budget too short
	}{
		{"topo show torus:0x4", "size 0 in dimension X", 2},
		{"topo show torus:4x", `size "" is not a whole number`, 0},
		{"topo show torus:4x4x2:mesh=V", "the torus has 3 dimensions (X, Y, Z), no dimension V", 2},
		{"topo show torus:4x4x2:mesh=Z,Y,Z", "dimension Z named twice", 2},
		{"topo show torus:4x4x2:mesh=Q", `unknown dimension "Q"`, 2},
		{"topo show torus:4x4x2:mesh=", "mesh: empty list", 2},
		{"topo import bad.net", "not a topology file", 2},
		{"topo import missing.net", "no such file", 2},
		{"topo measure", `unknown command "measure"`, 0},
		{"sched experiment bogus", `unknown command "bogus"`, 0},
		{"alloc --topo torus:4x4 --nodes 2 --busy 9.9", "outside 0..3", 2},
		{"alloc --topo torus:4x4 --nodes 99", "no allocation, ever: the job asks for 99 nodes, the fabric has only 16 nodes", 2},
		{"alloc --topo torus:4x4 --nodes 15 --fail-nodes 0.0,1.1", "only 14 of the fabric's 16 nodes have not failed", 2},
		{"alloc --topo torus:4x4 --nodes 7", "no brick of the 4x4 torus holds exactly 7 nodes", 2},
		{"alloc --topo torus:4x4 --nodes 12 --fail-nodes 0.0,2.2 --busy 1.3", "even with no job running", 2},
		{"alloc --topo torus:4x4 --nodes 8 --busy 0.0,0.1,0.2,0.3,1.0,2.0", "no allocation: no reachable set of 8", 1},
		{"route --topo torus:4x4 --rules bogus", `unknown routing rule "bogus"`, 0},
		{"route --topo torus:64x64x64", "needs 549.8 GB of memory", 2},
		{"route --topo torus:4x4 --seed 3", "only --algo genetic takes it", 2},
		{"route --topo torus:4x4 --algo genetic --population 1", "--population 1: want ≥ 2", 2},
		{"sched simulate --jobs synthetic:span=2x", "invalid duration", 2},
		{"sched simulate --jobs swf:bad.swf --strict", "bad.swf:1: expected 18 fields", 2},
		{"design bibd --n 7 --m 3 --lambda 5", "cannot exist", 2},
		{"multiring capacity --n 16 --steps 2,4", "coprime", 2},
		{"fabric route --fabric fattree:k=4,n=3 --engine bogus", `unknown engine "bogus"`, 0},
		{"mcast --topo torus:4x4 --groups bogus:3", `unknown kind "bogus"`, 0},
		{"sim --topo torus:4x4 --rate -1", "injection rate -1", 2},
		{"sim sweep --topo torus:4x4 --traffic bogus", `unknown traffic "bogus"`, 0},
		{"sim --topo torus:4x4 --stages 1,2", "want four cycle counts", 2},
		{"sim --topo torus:4x4 --router fancy", `unknown router model "fancy"`, 0},
		{"sim --topo torus:4x4 --dateline x", `unknown dateline rule "x"`, 0},
		{"sim --booksim missing.cfg", "no such file", 2},
		{"collective --topo torus:4x4 --op bogus", `unknown operation "bogus"`, 0},
		{"shmem run -n 0 true", "number of PEs 0", 2},
		{"shmem run -n 2 --bind socket true", `unknown binding "socket"`, 0},
		{"alloc --topo torus:4x4 --nodes 2 --budget -1s", "-1s is negative", 2},
		{"alloc --topo torus:4x4 --nodes 2 --budget soon", `"soon" is not a duration`, 2},
		{"sched simulate --budget 10", `"10" is not a duration`, 2},
		{"serve --budget -5ms --check", "-5ms is negative", 2},
		{"serve --db fm.db --addr 127.0.0.1:99999", "--addr 127.0.0.1:99999: not a listen address", 2},
		{"serve --db fm.db --addr localhost", "--addr localhost: not a listen address", 2},
		{"alloc --topo torus:8x8x8 --nodes 64 --budget 1ns", "no set found within 1ns (0 placements examined)", 3},
	} {
		t.Run(tc.args, func(t *testing.T) {
			_, stderr, code := runICN(t, dir, strings.Fields(tc.args)...)
			if code == 0 || tc.code != 0 && code != tc.code {
				t.Fatalf("exit status %d (want %d), stderr %q", code, tc.code, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "icn: ") || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("stderr %q: want one line \"icn: …%s…\"", stderr, tc.want)
			}
		})
	}
}

// TestJSONOutputs: --json prints exact JSON with the documented keys.
func TestJSONOutputs(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args string
		keys []string
	}{
		{"topo show torus:4x4 --json", []string{"nodes", "links"}},
		{"topo show torus:4x3x2:mesh=Z --json", []string{"dims", "wrap", "diameter", "bisection_width", "connectivity", "links"}},
		{"alloc --topo torus:4x4x2 --nodes 4 --json", []string{"request", "chosen"}},
		{"multiring capacity --n 16 --steps ±1,±3 --json", []string{"n", "steps"}},
		{"sched simulate --topo torus:4x4x2 --jobs synthetic:jobs=50,seed=1 --json -q",
			[]string{"utilization", "t_mean", "mean_wait", "mean_bounded_slowdown", "makespan", "jobs_done", "jobs_skipped"}},
	} {
		t.Run(tc.args, func(t *testing.T) {
			stdout, stderr, code := runICN(t, dir, strings.Fields(tc.args)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(stdout), &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, stdout)
			}
			for _, k := range tc.keys {
				if _, ok := v[k]; !ok {
					t.Errorf("key %q missing", k)
				}
			}
		})
	}
}

// TestRouteCheckInProcess calls runRoute and runRouteCheck without a
// process: the table icn route writes for a 4x4x2 torus passes its own
// check with one route per ordered pair of nodes and the diameter the
// summary printed, and the same file checked against a failed link it
// uses is exit status 1, and each route over that link is a violation\n// naming it.
func TestRouteCheckInProcess(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.json")
	ro := routeOptions{algo: "bfs", format: "json", outFile: file, show: 0, quiet: true}
	ro.set.tf.spec, ro.set.rules = "torus:4x4x2", "angara*"
	var summary bytes.Buffer
	if err := runRoute(ctx, ro, &summary); err != nil {
		t.Fatal(err)
	}
	var diameter int
	for _, line := range strings.Split(summary.String(), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "diameter" {
			diameter, _ = strconv.Atoi(f[1])
		}
	}
	check := func(failLinks string) (routeCheckResult, error) {
		co := routeCheckOptions{file: file, failLinks: failLinks}
		co.out.json = true
		var out bytes.Buffer
		err := runRouteCheck(ctx, co, &out)
		var res routeCheckResult
		if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
			t.Fatalf("check %q: %v in %q", failLinks, jerr, out.String())
		}
		return res, err
	}
	res, err := check("")
	if err != nil || !res.OK || len(res.Violations) != 0 || !res.DeadlockFree {
		t.Fatalf("fault-free check: err %v, %+v", err, res)
	}
	if n := 4 * 4 * 2; res.Routes != n*(n-1) {
		t.Errorf("%d routes checked, want %d", res.Routes, n*(n-1))
	}
	if diameter == 0 || res.Stats.Diameter != diameter {
		t.Errorf("check diameter %d, route summary printed %d", res.Stats.Diameter, diameter)
	}
	res, err = check("0.0.0+X")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || res.OK || len(res.Violations) == 0 {
		t.Fatalf("check with a failed link: err %v, ok %v, %d violations", err, res.OK, len(res.Violations))
	}
	failed := 0
	for _, v := range res.Violations {
		if v.Kind == "failed-link" {
			failed++
			if !strings.Contains(v.Msg, "0.0.0+X") {
				t.Errorf("violation %q does not name the failed link", v.Msg)
			}
		}
	}
	if failed == 0 {
		t.Errorf("no failed-link violation among %v", res.Violations)
	}
}

// One exit-status rule for every command: 1 a no, 2 an invalid request,
// 3 the environment.
func TestExitCode(t *testing.T) {
	_, missing := os.Open(filepath.Join(t.TempDir(), "missing"))
	for _, c := range []struct {
		err  error
		want int
	}{
		{&exitError{1, errors.New("3 violations")}, 1},
		{fmt.Errorf("route: %w", &exitError{2, errors.New("bad")}), 2},
		{errors.New(`unknown node "x"`), 2},
		{missing, 2},
		{fmt.Errorf("write lfts.dump: %w", syscall.ENOSPC), 3},
		{fmt.Errorf("open: %w", fs.ErrPermission), 3},
		{&url.Error{Op: "Get", URL: "http://127.0.0.1:1", Err: errors.New("connection refused")}, 3},
		{fmt.Errorf("opensm: %w", exec.ErrNotFound), 3},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%v: exit status %d, want %d", c.err, got, c.want)
		}
	}
	// A service that cannot be reached is the environment.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tok"), []byte("x"), 0o600)
	_, stderr, code := runICN(t, dir, "fabric", "status", "--server", "http://127.0.0.1:1", "--token-file", "tok")
	if code != 3 {
		t.Errorf("unreachable service: exit status %d, stderr %q", code, stderr)
	}
}

// Every command names its network --topo: fabric commands also take
// --fabric (the same flag), topo show and export also the argument.
func TestTopoFlagEverywhere(t *testing.T) {
	dir := t.TempDir()
	for _, pair := range [][2]string{
		{"fabric route --topo fattree:k=2,n=2 --engine ftree --json", "fabric route --fabric fattree:k=2,n=2 --engine ftree --json"},
		{"topo show --topo torus:4x4 --json", "topo show torus:4x4 --json"},
		{"topo export --topo ring:5", "topo export ring:5"},
	} {
		a, errA, codeA := runICN(t, dir, strings.Fields(pair[0])...)
		b, errB, codeB := runICN(t, dir, strings.Fields(pair[1])...)
		// Timings differ run to run.
		secs := regexp.MustCompile(`"[a-z_]*seconds": [0-9.e+-]+`)
		a, b = secs.ReplaceAllString(a, ""), secs.ReplaceAllString(b, "")
		if codeA != 0 || codeB != 0 || a != b || a == "" {
			t.Errorf("%q and %q differ: %d %q / %d %q", pair[0], pair[1], codeA, errA, codeB, errB)
		}
	}
}

// One convention for every command: -q/--quiet is one flag of every
// command (none shadows it), --json is the same flag wherever a command
// prints a table, --topo is a string flag whose usage names a spec or a
// file, and the version is asked for either way.
func TestFlagConventions(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := map[string]int{}
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if !c.Runnable() {
			return
		}
		if c.LocalNonPersistentFlags().Lookup("quiet") != nil {
			t.Errorf("%s: a --quiet of its own", c.CommandPath())
		}
		if q := c.Flags().ShorthandLookup("q"); q == nil || q.Name != "quiet" {
			t.Errorf("%s: -q is %v", c.CommandPath(), q)
		}
		if f := c.Flags().Lookup("json"); f != nil {
			seen["json"]++
			if f.Value.Type() != "bool" || f.Usage != "print exact JSON instead of a table" {
				t.Errorf("%s: --json is a %s: %q", c.CommandPath(), f.Value.Type(), f.Usage)
			}
		}
		if f := c.Flags().Lookup("topo"); f != nil {
			seen["topo"]++
			if f.Value.Type() != "string" || !strings.Contains(f.Usage, ":") {
				t.Errorf("%s: --topo is a %s: %q", c.CommandPath(), f.Value.Type(), f.Usage)
			}
			// A command that needs a torus gives no other kind as its
			// example.
			if strings.HasPrefix(f.Usage, "torus or mesh") && strings.Contains(f.Usage, "dragonfly") {
				t.Errorf("%s: --topo: %q", c.CommandPath(), f.Usage)
			}
		}
		if f := c.Flags().Lookup("count"); f != nil && f.Deprecated == "" {
			t.Errorf("%s: --count names what is --member-count elsewhere", c.CommandPath())
		}
	}
	walk(newRootCmd())
	if seen["json"] < 30 || seen["topo"] < 15 {
		t.Errorf("--json on %d commands, --topo on %d", seen["json"], seen["topo"])
	}
	dir := t.TempDir()
	a, _, codeA := runICN(t, dir, "--version")
	b, _, codeB := runICN(t, dir, "version")
	if codeA != 0 || codeB != 0 || a != b || !regexp.MustCompile(`^icn \S+ commit \S+( \(\S+\))? go1\.\S+\n$`).MatchString(a) {
		t.Errorf("--version %q (exit %d), version %q (exit %d)", a, codeA, b, codeB)
	}
}
