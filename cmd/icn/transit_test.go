package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/sched"
)

// transitSizes and transitTable are T = ⌈frac·m⌉ (0 for frac 0) worked
// out by hand; slurmagent's TestAgentTransitFractions has the same table.
var (
	transitSizes = []int{1, 2, 3, 4, 5, 8, 10}
	transitTable = []struct {
		frac float64
		want []int // T for each of transitSizes
	}{
		{0, []int{0, 0, 0, 0, 0, 0, 0}},
		{0.25, []int{1, 1, 1, 1, 2, 2, 3}},
		{0.6, []int{1, 2, 2, 3, 3, 5, 6}},
		{1, []int{1, 2, 3, 4, 5, 8, 10}},
	}
)

// A transit fraction gives the same T for the same m in every command
// that takes one: icn sched simulate and icn sched experiment
// (--transit-frac) and icn slurm agent (--transit), from their flags to
// the limit their placements ask for.
func TestTransitFracSameEverywhere(t *testing.T) {
	for _, c := range transitTable {
		so := schedSimOptions("torus:4x4x2", "")
		so.transitFrac = c.frac
		m, _, err := schedMachine(so)
		if err != nil {
			t.Fatal(err)
		}
		simulate := m.(*sched.TorusMachine)
		eo, _, _, err := schedExperimentConfig("utilization", schedExperimentOptions{streamSpec: "load=0.8,span=4mo", networks: "4x4x2", windows: "1", transitFrac: c.frac})
		if err != nil {
			t.Fatal(err)
		}
		agent := slurmAgentConfig(slurmAgentOptions{partition: "torus", transit: c.frac}, nil, nil)
		for i, m := range transitSizes {
			for _, got := range []struct {
				where string
				t     int
			}{
				{"sched.TransitLimit", sched.TransitLimit(c.frac, m)},
				{"icn sched simulate", simulate.Transit(m)},
				{"icn sched experiment", eo.TransitLimit(m)},
				{"icn slurm agent", agent.TransitLimit(m)},
			} {
				if got.t != c.want[i] {
					t.Errorf("%s, fraction %g, %d nodes: T = %d, want %d", got.where, c.frac, m, got.t, c.want[i])
				}
			}
		}
	}
	// Both sched commands refuse what TransitLimit would take as 0.
	for _, f := range []float64{-0.5, -1} {
		so := schedSimOptions("torus:4x4x2", "synthetic:jobs=5")
		so.transitFrac = f
		eo := schedExperimentOptions{streamSpec: "jobs=5", networks: "4x4x2", windows: "1", transitFrac: f}
		for _, err := range []error{runSchedSimulate(context.Background(), so, &bytes.Buffer{}), runSchedExperiment(context.Background(), "utilization", eo, &bytes.Buffer{})} {
			if err == nil || err.Error() != "--transit-frac must not be negative" {
				t.Errorf("--transit-frac %g: %v", f, err)
			}
		}
	}
}

// icn sched simulate places with that T: the baseline algorithm's
// rectangles on torus:4x4x2 (sides 1, 2 or 4 by 1, 2 or 4 by 1 or 2) hold
// a power of two of nodes, so a job of m nodes runs only when T covers
// the round-up to the next power of two (3 → 4, 5 → 8, 10 → 16), and is
// otherwise skipped with its T in the reason.
func TestSimulateTransitFrac(t *testing.T) {
	stderrProblems = false
	var swf strings.Builder
	for i, m := range transitSizes {
		fmt.Fprintf(&swf, "%d %d 0 10 %d -1 -1 %d 10 -1 1 1 1 -1 1 -1 -1 -1\n", i+1, 10*i, m, m)
	}
	path := filepath.Join(t.TempDir(), "sizes.swf")
	if err := os.WriteFile(path, []byte(swf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	reason := regexp.MustCompile(`\((\d+) nodes, transit ≤ (\d+)\)`)
	for _, c := range transitTable {
		o := schedSimOptions("torus:4x4x2", "swf:"+path)
		o.algo, o.transitFrac = "baseline", c.frac
		var out bytes.Buffer
		if err := runSchedSimulate(context.Background(), o, &out); err != nil {
			t.Fatal(err)
		}
		var rep sched.Report
		decodeJSON(t, out.String(), &rep)
		skipped := map[int]int{} // nodes → T in the reason
		for _, s := range rep.SkippedJobs {
			f := reason.FindStringSubmatch(s.Reason)
			if f == nil {
				t.Fatalf("fraction %g: job %d skipped: %s", c.frac, s.ID, s.Reason)
			}
			m, _ := strconv.Atoi(f[1])
			skipped[m], _ = strconv.Atoi(f[2])
		}
		for i, m := range transitSizes {
			T, skip := skipped[m]
			pow := 1
			for pow < m {
				pow *= 2
			}
			wantSkip := pow-m > c.want[i]
			if skip != wantSkip || skip && T != c.want[i] {
				t.Errorf("fraction %g, %d nodes: skipped %v with T = %d, want skipped %v with T = %d", c.frac, m, skip, T, wantSkip, c.want[i])
			}
		}
	}
}

// icn sched experiment --transit-frac 0 is T = 0, not the T = m of
// --transit-frac 1: the baseline can no longer round jobs up to an
// allowed rectangle, so it skips jobs it ran with T = m.
func TestExperimentTransitFracZero(t *testing.T) {
	skipped := map[float64]int{}
	for _, frac := range []float64{0, 1} {
		o := schedExperimentOptions{streamSpec: "jobs=60,span=2d", networks: "4x4x2", windows: "1", transitFrac: frac, quiet: true}
		o.out.json = true
		var out bytes.Buffer
		if err := runSchedExperiment(context.Background(), "utilization", o, &out); err != nil {
			t.Fatal(err)
		}
		var file sched.ShardFile
		decodeJSON(t, out.String(), &file)
		for _, r := range file.Util {
			if r.Algo == "baseline" {
				skipped[frac] += r.Skipped
			}
		}
	}
	if !(skipped[0] > skipped[1]) {
		t.Errorf("baseline skipped %d jobs with --transit-frac 0 and %d with 1; want more with 0 (T = 0)", skipped[0], skipped[1])
	}
}
