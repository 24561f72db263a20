package sched

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

// jobsOf makes a stream from "id submit nodes runtime [requested]" lines.
func jobsOf(t *testing.T, lines ...string) *Stream {
	t.Helper()
	s := &Stream{Source: "test"}
	for _, l := range lines {
		var j Job
		n, _ := fmt.Sscan(l, &j.ID, &j.Submit, &j.Nodes, &j.Runtime, &j.Requested)
		if n < 4 {
			t.Fatalf("bad job line %q", l)
		}
		if n == 4 {
			j.Requested = j.Runtime
		}
		s.Jobs = append(s.Jobs, j)
	}
	return s
}

func starts(rep *Report) map[int]float64 {
	m := map[int]float64{}
	for _, r := range rep.Schedule {
		m[r.ID] = r.Start
	}
	return m
}

func simulateOn(t *testing.T, spec string, algo alloc.Algo, pol Policy, s *Stream) *Report {
	t.Helper()
	st, rt := newCluster(t, spec)
	rep, err := Simulate(Config{State: st, Router: rt, Algo: algo, Policy: pol}, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSchedule(st.N(), rep.Schedule); err != nil {
		t.Fatal(err)
	}
	return rep
}

// Issue 17 defect 1: a job with no placement even on the empty machine
// (3 nodes: the baseline allows sides 1, 2 or 4 on a 4x4 torus, T = 0) is
// reported when it arrives and does not hold up the queue; the job behind
// it starts at once.
func TestUnplaceableReportedAtOnce(t *testing.T) {
	s := jobsOf(t, "1 0 1 1000", "2 2 3 10", "3 3 1 10")
	rep := simulateOn(t, "torus:4x4", alloc.Baseline, Policy{Window: 1}, s)
	st := starts(rep)
	if st[3] != 3 {
		t.Errorf("job 3 starts at %g, want 3 (behind an unplaceable job)", st[3])
	}
	if rep.JobsSkipped != 1 || rep.SkippedJobs[0].ID != 2 || !strings.Contains(rep.SkippedJobs[0].Reason, "empty machine") {
		t.Errorf("skipped %+v, want job 2 only", rep.SkippedJobs)
	}
	// One that fits the empty machine waits, however long, and runs.
	s = jobsOf(t, "1 0 8 1000", "2 2 16 10", "3 3 1 10")
	rep = simulateOn(t, "torus:4x4", alloc.Baseline, Policy{Window: 1}, s)
	if st := starts(rep); rep.JobsSkipped != 0 || st[2] != 1000 || st[3] != 1010 {
		t.Errorf("skipped %v, starts %v; want none skipped, job 2 at 1000, job 3 at 1010", rep.SkippedJobs, st)
	}
}

// Issue 17 defect 2: with a window larger than one, EASY still keeps the
// head job's reservation: job 3 (8 nodes, 1000 s) must not take the nodes
// job 2 (the whole machine) gets at t = 100.
func TestEASYWindowKeepsReservation(t *testing.T) {
	for _, w := range []int{1, 8} {
		s := jobsOf(t, "1 0 8 100", "2 1 16 10", "3 2 8 1000")
		rep := simulateOn(t, "torus:4x4", alloc.Improved, Policy{Window: w, Backfill: true}, s)
		if st := starts(rep); st[2] != 100 || st[3] != 110 {
			t.Errorf("window %d: starts %v, want job 2 at 100 and job 3 at 110", w, st)
		}
	}
}

// Issue 17 defect 3 and EASY's promise in general: as jobs run no longer
// than requested, a head job that gets a reservation starts no later than
// it, on every machine and algorithm (exact and overestimated requested
// times, so reservations both kept and searched again as jobs end).
func TestEASYKeepsEveryReservation(t *testing.T) {
	tree, err := topology.Parse("fattree:k=4,n=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec string
		algo alloc.Algo
	}{
		{"torus:4x4", alloc.Baseline}, {"torus:4x8", alloc.Baseline}, {"torus:4x4x2", alloc.Improved},
		{"flat:16", ""}, {"fattree:k=4,n=2", ""},
	} {
		for _, rule := range []string{RuleEASY, RuleWindow} {
			reservations := 0
			for seed := uint64(1); seed <= 4; seed++ {
				var m Machine
				switch {
				case strings.HasPrefix(tc.spec, "flat"):
					m, _ = NewFlatMachine(16, nil)
				case strings.HasPrefix(tc.spec, "fattree"):
					m, _ = NewTreeMachine(tree)
				default:
					st, rt := newCluster(t, tc.spec)
					m = NewTorusMachine(st, rt, tc.algo, nil, 1)
				}
				s, _ := Synthetic(SyntheticParams{Jobs: 80, Span: day, MaxTime: 4 * 3600, Seed: seed, Sizes: "pow2", Overestimate: float64(1 + seed%3)}, m.Size())
				promised := map[int]float64{}
				cfg := Config{Machine: m, Policy: Policy{Window: 4, Backfill: true, Rule: rule},
					onReserve: func(job int, shadow float64) {
						if old, ok := promised[job]; !ok || shadow < old {
							promised[job] = shadow
						}
					}}
				rep, err := Simulate(cfg, s)
				if err != nil {
					t.Fatal(err)
				}
				if err := CheckSchedule(m.Size(), rep.Schedule); err != nil {
					t.Fatal(err)
				}
				for i, r := range rep.Schedule {
					if p, ok := promised[i]; ok && r.Skipped == "" && r.Start > p+1e-9 && !math.IsInf(p, 1) {
						t.Errorf("%s %s %s seed %d: job %d promised %g, started %g", rule, tc.spec, tc.algo, seed, r.ID, p, r.Start)
					}
				}
				reservations += len(promised)
			}
			if reservations < 10 {
				t.Errorf("%s %s: %d reservations made; the test shows little", rule, tc.spec, reservations)
			}
		}
	}
}

// Issue 17 defect 4: duplicate ids and empty streams are errors.
func TestStreamValidate(t *testing.T) {
	st, rt := newCluster(t, "torus:4x4")
	for _, tc := range []struct {
		s    *Stream
		want string
	}{
		{jobsOf(t, "1 0 1 10", "1 5 1 10"), "repeats"},
		{&Stream{Source: "empty.swf"}, "no job"},
		{&Stream{Source: "x.swf", Skipped: []Skipped{{Line: 3, Reason: "r"}}}, "1 skipped"},
		{jobsOf(t, "1 5 1 10", "2 0 1 10"), "submit order"},
		{jobsOf(t, "1 0 1 10 5"), "shorter"},
	} {
		if _, err := Simulate(Config{State: st, Router: rt, Algo: alloc.Improved, Policy: Policy{Window: 1}}, tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.s.Jobs, err, tc.want)
		}
	}
}

// Every problem of an SWF trace is reported once with its line; strict
// mode stops at the first one, naming it.
func TestSWFProblemsByLine(t *testing.T) {
	trace := strings.Join([]string{
		"; Version: 2.2",
		"1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",
		"2 50 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",
		"1 60 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1", // line 4: repeated id
		"3 40 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1", // line 5: earlier submit
		"4 70 0 -5 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",  // line 6: negative run time
		"5 80 0 NaN 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1", // line 7: NaN
		"6 90 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",
	}, "\n")
	s, err := ParseSWF(strings.NewReader(trace), "t.swf", SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := map[int]string{}
	for _, p := range append(s.Skipped, s.Warnings...) {
		if _, dup := lines[p.Line]; dup {
			t.Errorf("line %d reported twice", p.Line)
		}
		lines[p.Line] = p.Reason
	}
	for line, want := range map[int]string{4: "repeats line 2", 5: "earlier than 50 on line 3", 6: "field 4 (run time) is -5", 7: "not a number"} {
		if !strings.Contains(lines[line], want) {
			t.Errorf("line %d: %q, want %q", line, lines[line], want)
		}
	}
	if len(lines) != 4 {
		t.Errorf("problems on lines %v, want 4..7", lines)
	}
	var ids []int
	for _, j := range s.Jobs {
		ids = append(ids, j.ID)
	}
	if fmt.Sprint(ids) != "[1 3 2 6]" {
		t.Errorf("jobs %v, want 1 3 2 6 (line 5 kept, in submit order)", ids)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("parsed stream invalid: %v", err)
	}
	for cut, line := range map[int]int{4: 4, 5: 5, 6: 6, 7: 7} {
		lines := strings.Split(trace, "\n")
		text := strings.Join(append(lines[:3:3], lines[cut-1:]...), "\n")
		_, err := ParseSWF(strings.NewReader(text), "t.swf", SWFOptions{Strict: true})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("t.swf:%d:", 4)) {
			t.Errorf("strict, problem of line %d first: %v", line, err)
		}
	}
}

// Reserve: the earliest running job's end at which the head fits once
// the jobs ending by then have gone; now if it fits now; +Inf if it does
// not fit even on the empty machine.
func TestReserve(t *testing.T) {
	m, _ := NewFlatMachine(8, nil)
	m.Occupy(1, []int{0, 1, 2, 3})
	m.Occupy(2, []int{4, 5})
	running := []RunningJob{{1, []int{0, 1, 2, 3}, 10}, {2, []int{4, 5}, 5}}
	for _, c := range []struct {
		nodes int
		want  float64
	}{{2, 1}, {3, 5}, {4, 5}, {6, 10}, {8, 10}, {9, math.Inf(1)}} {
		got, err := Reserve(m, Job{ID: 9, Nodes: c.nodes}, running, 1)
		if err != nil || got != c.want {
			t.Errorf("head of %d nodes: reserved %v (%v), want %v", c.nodes, got, err, c.want)
		}
	}
	if m.FreeCount() != 2 {
		t.Fatalf("Reserve changed the machine: %d free", m.FreeCount())
	}
}

// RuleWindow: a later job of the window starts before the head only if
// it ends by the head's reservation (EASY also starts one that avoids
// the head's planned nodes), and jobs beyond the window wait.
func TestWindowRule(t *testing.T) {
	// Job 1 holds 8 of 16 nodes until 100; job 2 (12 nodes) heads the
	// queue from t = 1 with a reservation at 100; job 3 (4 nodes, 1000 s)
	// fits now beside job 2's plan; job 4 (2 nodes) ends by 53.
	s := jobsOf(t, "1 0 8 100", "2 1 12 10", "3 2 4 1000", "4 3 2 50")
	easy := starts(simulateOn(t, "torus:4x4", alloc.Improved, Policy{Window: 4, Backfill: true}, s))
	win := starts(simulateOn(t, "torus:4x4", alloc.Improved, Policy{Window: 4, Backfill: true, Rule: RuleWindow}, s))
	narrow := starts(simulateOn(t, "torus:4x4", alloc.Improved, Policy{Window: 2, Backfill: true, Rule: RuleWindow}, s))
	if easy[3] != 2 || easy[2] != 100 {
		t.Errorf("EASY: starts %v, want job 3 at 2 beside job 2's plan, job 2 at 100", easy)
	}
	if win[2] != 100 || win[3] < 100 || win[4] != 3 {
		t.Errorf("window rule, window 4: starts %v, want job 2 at 100, job 3 not before, job 4 at 3", win)
	}
	if narrow[2] != 100 || narrow[4] < 100 {
		t.Errorf("window rule, window 2: starts %v, want job 2 at 100 and job 4 (outside the window) not before", narrow)
	}
}
