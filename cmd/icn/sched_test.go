package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/sched"
)

func schedSimOptions(topo, jobs string) schedSimulateOptions {
	o := schedSimulateOptions{jobs: jobs, backfill: "easy", algo: "improved", rules: "angara*", window: 1, transitFrac: 1, quiet: true, ppn: 1}
	o.topo.spec = topo
	o.out.json = true
	return o
}

// Every machine kind answers with the same summary keys.
func TestSimulateSameKeysOnEveryMachine(t *testing.T) {
	stderrProblems = false
	var want []string
	for _, topo := range []string{"torus:4x4x2", "flat:32", "fattree:k=4,n=2"} {
		var buf bytes.Buffer
		if err := runSchedSimulate(context.Background(), schedSimOptions(topo, "synthetic:jobs=60,seed=3,span=2d"), &buf); err != nil {
			t.Fatalf("%s: %v", topo, err)
		}
		var v map[string]any
		if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if want == nil {
			want = keys
		} else if !reflect.DeepEqual(keys, want) {
			t.Errorf("%s: keys %v, torus has %v", topo, keys, want)
		}
		if v["jobs_done"].(float64) != 60 {
			t.Errorf("%s: %v jobs done", topo, v["jobs_done"])
		}
	}
}

func TestSimulateBadInput(t *testing.T) {
	stderrProblems = false
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.swf")
	dup := filepath.Join(dir, "dup.swf")
	os.WriteFile(empty, []byte("; Version: 2.2\n"), 0o644)
	os.WriteFile(dup, []byte("1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n1 5 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n"), 0o644)
	for _, tc := range []struct {
		topo, jobs string
		strict     bool
		want       string
	}{
		{"torus:4x4", "swf:" + empty, false, "no job to simulate"},
		{"torus:4x4", "swf:" + dup, true, "dup.swf:2: job id 1 repeats line 1"},
		{"flat:x", "synthetic:jobs=5", false, "want flat:N"},
		{"flat:0", "synthetic:jobs=5", false, "node count"},
		{"complete:4", "synthetic:jobs=5", false, "neither a torus"},
	} {
		o := schedSimOptions(tc.topo, tc.jobs)
		o.strict = tc.strict
		err := runSchedSimulate(context.Background(), o, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.topo, tc.jobs, err, tc.want)
		}
	}
}

func TestSimulateScheduleOutAndPlot(t *testing.T) {
	stderrProblems = false
	dir := t.TempDir()
	o := schedSimOptions("fattree:k=4,n=2", "synthetic:jobs=40,seed=1,span=1d")
	o.scheduleOut = filepath.Join(dir, "s.swf")
	o.plot = filepath.Join(dir, "u.svg")
	if err := runSchedSimulate(context.Background(), o, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(o.scheduleOut)
	if err != nil || !strings.Contains(string(b), "; Computer: simulated fattree:k=4,n=2") || strings.Count(string(b), "\n") != 40+12 {
		t.Errorf("schedule: %v\n%s", err, b)
	}
	for _, f := range []string{"u.svg", "u-wait.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Errorf("plot %s: %v", f, err)
		}
	}
}

// TestSimulateStartDelayAndPasses runs icn sched simulate with
// --pass-interval and --start-delay (a number and @FILE) and checks the
// schedule it writes: every start on a multiple of the interval, every
// job holding its nodes its run time plus its delay, and bad values
// refused with exit 2.
func TestSimulateStartDelayAndPasses(t *testing.T) {
	dir := t.TempDir()
	jobs := "synthetic:jobs=120,span=2d,maxtime=6h,maxnodes=16,seed=3"
	read := func(name string) []sched.JobRecord {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var out []sched.JobRecord
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r sched.JobRecord
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	if _, e, code := runICN(t, dir, "sched", "simulate", "--topo", "flat:32", "--jobs", jobs, "--schedule-out", "plain.json"); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	plain := read("plain.json")
	if err := os.WriteFile(filepath.Join(dir, "d.txt"), []byte("# id delay\n1 90\n2 5m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		delay string
		of    func(id int) float64
	}{{"45", func(int) float64 { return 45 }}, {"@d.txt", func(id int) float64 { return map[int]float64{1: 90, 2: 300}[id] }}} {
		if _, e, code := runICN(t, dir, "sched", "simulate", "--topo", "flat:32", "--jobs", jobs, "--pass-interval", "10m",
			"--start-delay", tc.delay, "--schedule-out", "timed.json"); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.delay, code, e)
		}
		for i, r := range read("timed.json") {
			if k := r.Start / 600; k != float64(int64(k)) {
				t.Fatalf("%s: job %d starts at %g, not on a 10-minute pass", tc.delay, r.ID, r.Start)
			}
			run := plain[i].End - plain[i].Start
			if got := r.End - r.Start; got < run+tc.of(r.ID)-1e-6 || got > run+tc.of(r.ID)+1e-6 {
				t.Fatalf("%s: job %d holds its nodes %g s, want run %g + delay %g", tc.delay, r.ID, got, run, tc.of(r.ID))
			}
		}
	}
	for _, bad := range [][]string{{"--start-delay", "-1"}, {"--pass-interval", "soon"}, {"--start-delay", "@missing.txt"}, {"--backfill", "easy-accasim", "--pass-interval", "60"}} {
		_, e, code := runICN(t, dir, append([]string{"sched", "simulate", "--topo", "flat:32", "--jobs", jobs}, bad...)...)
		if code != 2 || strings.Count(strings.TrimSpace(e), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", bad, code, e)
		}
	}
}
