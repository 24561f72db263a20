package sched

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

func newCluster(t testing.TB, spec string) (*alloc.State, alloc.Router) {
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	st, err := alloc.NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	return st, alloc.GraphRouter{G: g}
}

func TestSimulationInvariants(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		policy Policy
		algo   alloc.Algo
	}{
		{"torus:4x4x2", Policy{Window: 1}, alloc.Improved},
		{"torus:4x4x2", Policy{Window: 8}, alloc.Improved},
		{"torus:4x4x2", Policy{Window: 1, Backfill: true}, alloc.Improved},
		{"torus:4x4x2", Policy{Window: 4}, alloc.Baseline},
		{"torus:4x3x3", Policy{Window: 32, Backfill: true}, alloc.Baseline},
	} {
		st, rt := newCluster(t, tc.spec)
		stream, err := Synthetic(SyntheticParams{Jobs: 120, Span: 3 * day, MaxTime: 6 * 3600, Seed: 11, Overestimate: 2}, st.N())
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Simulate(Config{State: st, Router: rt, Policy: tc.policy, Algo: tc.algo,
			Transit: func(m int) int { return m / 2 }}, stream)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s %+v %s", tc.spec, tc.policy, tc.algo)
		if err := CheckSchedule(st.N(), rep.Schedule); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rep.JobsDone+rep.JobsSkipped != len(stream.Jobs) {
			t.Fatalf("%s: %d done + %d skipped != %d", name, rep.JobsDone, rep.JobsSkipped, len(stream.Jobs))
		}
		if rep.Utilization <= 0 || rep.Utilization > 1 || rep.TMean < 0 || rep.MeanBSLD < 1 {
			t.Fatalf("%s: implausible report %+v", name, rep)
		}
		if st.Busy() != 0 {
			t.Fatalf("%s: %d nodes still busy at the end", name, st.Busy())
		}
		// Utilization from the schedule itself.
		work := 0.0
		for i, r := range rep.Schedule {
			if r.Skipped == "" {
				work += float64(r.Active) * (r.End - r.Start)
				if r.End-r.Start != stream.Jobs[i].Runtime {
					t.Fatalf("%s: job %d ran %g, runtime %g", name, r.ID, r.End-r.Start, stream.Jobs[i].Runtime)
				}
			}
		}
		if u := work / (rep.Makespan * float64(st.N())); math.Abs(u-rep.Utilization) > 1e-9 {
			t.Fatalf("%s: utilization %v, recomputed %v", name, rep.Utilization, u)
		}
	}
}

func TestWindowNeverHurtsMuch(t *testing.T) {
	// A window lets later jobs past a blocked head: the mean wait with
	// w=8 should not exceed FCFS's on a loaded stream.
	st, rt := newCluster(t, "torus:4x4x2")
	stream, _ := Synthetic(SyntheticParams{Jobs: 200, Span: 5 * day, MaxTime: 12 * 3600, Seed: 4, Load: 0.9}, st.N())
	var waits []float64
	for _, w := range []int{1, 8} {
		rep, err := Simulate(Config{State: st, Router: rt, Policy: Policy{Window: w}, Algo: alloc.Improved,
			Transit: func(m int) int { return m / 2 }}, stream)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, rep.MeanWait)
	}
	if waits[1] > waits[0] {
		t.Errorf("window 8 mean wait %v > FCFS %v", waits[1], waits[0])
	}
}

func TestSyntheticLoad(t *testing.T) {
	s, err := Synthetic(SyntheticParams{Load: 0.8, Span: 4 * month, Seed: 9}, 64)
	if err != nil {
		t.Fatal(err)
	}
	work := 0.0
	for _, j := range s.Jobs {
		if j.Runtime > day || j.Runtime < 60 || j.Nodes < 1 || j.Nodes > 32 || j.Submit < 0 || j.Submit > 4*month {
			t.Fatalf("job out of bounds: %+v", j)
		}
		work += float64(j.Nodes) * j.Runtime
	}
	load := work / (64 * 4 * month)
	if load < 0.8 || load > 0.85 {
		t.Errorf("offered load %v, want ≈ 0.8", load)
	}
	s2, _ := Synthetic(SyntheticParams{Load: 0.8, Span: 4 * month, Seed: 9}, 64)
	if fmt.Sprint(s.Jobs) != fmt.Sprint(s2.Jobs) {
		t.Error("same seed, different stream")
	}
	for _, bad := range []string{"load=0", "load=x", "span=-1d", "sizes=zipf", "bogus=1", "jobs=0", "noequals"} {
		if _, err := ParseSynthetic(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	p, err := ParseSynthetic("load=0.7,span=1mo,maxtime=12h,sizes=pow2,maxnodes=8,seed=3")
	if err != nil || p.Span != month || p.MaxTime != 43200 || p.MaxNodes != 8 {
		t.Errorf("parse: %+v %v", p, err)
	}
}

func TestSWF(t *testing.T) {
	f, _ := os.Open("testdata/small.swf")
	defer f.Close()
	s, err := ParseSWF(f, "small.swf", SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Jobs) != 4 || len(s.Skipped) != 2 {
		t.Fatalf("jobs %d skipped %v", len(s.Jobs), s.Skipped)
	}
	if j := s.Jobs[0]; j.Nodes != 4 || j.Runtime != 3600 || j.Requested != 7200 {
		t.Errorf("job 1: %+v", j)
	}
	if j := s.Jobs[3]; j.ID != 5 || j.Nodes != 3 || j.Requested != 50 {
		t.Errorf("job 5 (requested procs, missing requested time): %+v", j)
	}
	if s.Skipped[1].Line != 9 {
		t.Errorf("broken line reported as %d", s.Skipped[1].Line)
	}
	s.Limit(32)
	if len(s.Jobs) != 3 || !strings.Contains(s.Skipped[len(s.Skipped)-1].Reason, "64 nodes") {
		t.Errorf("oversized job not reported: %v", s.Skipped)
	}
	f.Seek(0, 0)
	if _, err := ParseSWF(f, "small.swf", SWFOptions{Strict: true}); err == nil || !strings.Contains(err.Error(), "small.swf:9") {
		t.Errorf("strict: %v", err)
	}
}

func FuzzParseSWF(f *testing.F) {
	b, _ := os.ReadFile("testdata/small.swf")
	f.Add(string(b))
	f.Add("1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n")
	f.Add("1 5 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n1 3 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n2 1 0 -7 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSWF(strings.NewReader(text), "fuzz", SWFOptions{})
		if err != nil {
			return
		}
		if len(s.Jobs) > 0 {
			if err := s.Validate(); err != nil {
				t.Fatalf("parsed stream does not validate: %v", err)
			}
		}
		seen := map[int]bool{}
		for _, p := range append(s.Skipped, s.Warnings...) {
			if p.Line < 1 || seen[p.Line] {
				t.Fatalf("problem without a line or reported twice: %+v", p)
			}
			seen[p.Line] = true
		}
		for i, j := range s.Jobs {
			if j.Nodes < 1 || j.Runtime <= 0 || j.Requested < j.Runtime || j.Submit < 0 {
				t.Fatalf("invalid job accepted: %+v", j)
			}
			if i > 0 && j.Submit < s.Jobs[i-1].Submit {
				t.Fatal("not sorted")
			}
		}
	})
}
