package sched

import (
	"os"
	"sort"
	"strings"
	"testing"
)

// runFlat simulates s on a flat machine of n nodes and checks the schedule.
func runFlat(t *testing.T, n int, pol Policy, s *Stream) *Report {
	t.Helper()
	m, err := NewFlatMachine(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Simulate(Config{Machine: m, Policy: pol}, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSchedule(n, rep.Schedule); err != nil {
		t.Fatal(err)
	}
	return rep
}

// The probe trace (testdata/easy_rules_probe.swf) on flat:4 under each
// rule. The expected starts follow from the rules' definitions:
//
// Jobs 1-5. Jobs 1 and 2 (2 nodes each) start at 0; job 3 (4 nodes)
// arrives at 1 and waits for both, by requested times until 100.
//   - FCFS: 3 at 100 (job 1 ends), 4 at 110 (job 3 ends), 5 at 110 beside 4.
//   - EASY: job 2 ends at 10; 3 still does not fit; 4 (2 nodes, to 210)
//     would run past 100 on nodes 3 needs, so it waits; 5 (1 node, to 15)
//     ends before 100 and starts at 10. 3 at 100, 4 at 110.
//   - accasim: at 10 the head is not tried (its retry time is 100) and 4
//     fits, so it starts at 10 (to 210). At 100 3 finds 2 free nodes of 4,
//     and 5 takes one at 100. 3 starts when 4 ends, at 210.
//
// Jobs 6-9. 6 and 7 start at 1000; 6 requested 10 s and runs 20 (to
// 1020), 7 requested 100 and runs 5 (to 1005); 8 (2 nodes) arrives at 1001.
//   - FCFS and EASY: 8 starts when 7 ends, at 1005 (to 1015); 9 (1 node,
//     arrives 1012) waits for 8's end, 1015.
//   - accasim: 8's retry time is 6's start plus its 10 s request, 1010;
//     at 1005 it is not tried; at 1012 (9 arrives) it is, and starts; 9
//     finds no node free until 6 ends, at 1020.
//
// Jobs 10-12. 10 and 11 (2 nodes, requested 50, run 10) start at 2000; 12
// (4 nodes) arrives at 2001 and is due at 2050 by requested times.
//   - FCFS and EASY: 12 starts when both end, at 2010.
//   - accasim: nothing runs after 2010, and 12 is tried at its retry
//     time, 2050.
func TestBackfillRulesOnProbe(t *testing.T) {
	f, err := os.Open("testdata/easy_rules_probe.swf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseSWF(f, "easy_rules_probe.swf", SWFOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Jobs[5].TraceRequested; got != 10 {
		t.Fatalf("job 6's trace requested time %g, want 10", got)
	}
	for _, tc := range []struct {
		name string
		pol  Policy
		want map[int]float64
	}{
		{"fcfs", Policy{Window: 1}, map[int]float64{1: 0, 2: 0, 3: 100, 4: 110, 5: 110,
			6: 1000, 7: 1000, 8: 1005, 9: 1015, 10: 2000, 11: 2000, 12: 2010}},
		{"easy", Policy{Window: 1, Backfill: true, Rule: RuleEASY}, map[int]float64{1: 0, 2: 0, 3: 100, 4: 110, 5: 10,
			6: 1000, 7: 1000, 8: 1005, 9: 1015, 10: 2000, 11: 2000, 12: 2010}},
		{"easy-accasim", Policy{Window: 1, Backfill: true, Rule: RuleAccasim}, map[int]float64{1: 0, 2: 0, 3: 210, 4: 10, 5: 100,
			6: 1000, 7: 1000, 8: 1012, 9: 1020, 10: 2000, 11: 2000, 12: 2050}},
	} {
		rep := runFlat(t, 4, tc.pol, s)
		got := starts(rep)
		for id, w := range tc.want {
			if got[id] != w {
				t.Errorf("%s: job %d starts at %g, want %g", tc.name, id, got[id], w)
			}
		}
	}
	// The default rule (Rule "") is EASY.
	def := starts(runFlat(t, 4, Policy{Window: 1, Backfill: true}, s))
	easy := starts(runFlat(t, 4, Policy{Window: 1, Backfill: true, Rule: RuleEASY}, s))
	for id := range easy {
		if def[id] != easy[id] {
			t.Errorf("default rule starts job %d at %g, easy at %g", id, def[id], easy[id])
		}
	}
}

// Under the accasim rule, a job waiting behind the head never finds
// enough free nodes at an event: at every submit or end time, each
// waiting job but the first in queue order needs more nodes than are free
// once the starts of that instant are made. Checked by brute force on
// synthetic streams on flat:16.
func TestAccasimStartsEveryLaterJobThatFits(t *testing.T) {
	const n = 16
	checked := 0
	for seed := uint64(1); seed <= 6; seed++ {
		s, err := Synthetic(SyntheticParams{Jobs: 150, Span: day, MaxTime: 4 * 3600, Seed: seed, Overestimate: float64(1 + seed%3)}, n)
		if err != nil {
			t.Fatal(err)
		}
		rep := runFlat(t, n, Policy{Window: 1, Backfill: true, Rule: RuleAccasim}, s)
		recs := rep.Schedule
		var times []float64
		for _, r := range recs {
			times = append(times, r.Submit, r.End)
		}
		sort.Float64s(times)
		for _, tm := range times {
			busy := 0
			for i, r := range recs {
				if r.Start <= tm && tm < r.End {
					busy += s.Jobs[i].Nodes
				}
			}
			head := true
			for i, r := range recs { // submit order is queue order
				if !(r.Submit <= tm && r.Start > tm) {
					continue
				}
				if !head && s.Jobs[i].Nodes <= n-busy {
					t.Fatalf("seed %d: at %g job %d (%d nodes) waits with %d nodes free", seed, tm, r.ID, s.Jobs[i].Nodes, n-busy)
				}
				head = false
				checked++
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d waiting jobs checked; the test shows little", checked)
	}
}

// The accasim rule plans with the trace's requested time even when the
// job ran longer; the other rules with the run time.
func TestTraceRequestedTime(t *testing.T) {
	s, err := ParseSWF(strings.NewReader("1 0 -1 20 2 -1 -1 2 10 -1 1 -1 -1 -1 -1 -1 -1 -1\n"+
		"2 0 -1 20 2 -1 -1 2 30 -1 1 -1 -1 -1 -1 -1 -1 -1\n"+
		"3 0 -1 20 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"), "t.swf", SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]float64{{20, 10}, {30, 0}, {20, 0}} {
		if j := s.Jobs[i]; j.Requested != want[0] || j.TraceRequested != want[1] {
			t.Errorf("job %d: requested %g, trace requested %g; want %g, %g", j.ID, j.Requested, j.TraceRequested, want[0], want[1])
		}
	}
	bad := &Stream{Source: "x", Jobs: []Job{{ID: 1, Nodes: 1, Runtime: 10, Requested: 10, TraceRequested: 10}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "trace's requested time") {
		t.Errorf("trace requested time equal to the run time: got %v", err)
	}
}

func TestBackfillRuleChecked(t *testing.T) {
	s := jobsOf(t, "1 0 1 10")
	m, _ := NewFlatMachine(4, nil)
	for _, tc := range []struct {
		pol  Policy
		want string
	}{
		{Policy{Window: 2, Backfill: true, Rule: RuleAccasim}, "window of 1"},
		{Policy{Window: 1, Rule: RuleAccasim}, "needs backfilling"},
		{Policy{Window: 1, Backfill: true, Rule: "conservative"}, "unknown backfilling rule"},
		{Policy{Window: 0}, "window must be at least 1"},
	} {
		if _, err := Simulate(Config{Machine: m, Policy: tc.pol}, s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error with %q", tc.pol, err, tc.want)
		}
	}
}

// Under the accasim rule a job that never fits is skipped, blocked
// behind nothing: the jobs after it start as if it were not there.
func TestAccasimSkipsJobThatNeverFits(t *testing.T) {
	s := jobsOf(t, "1 0 2 100", "2 1 8 10", "3 2 2 10", "4 3 4 10")
	rep := runFlat(t, 4, Policy{Window: 1, Backfill: true, Rule: RuleAccasim}, s)
	st := starts(rep)
	if rep.JobsSkipped != 1 || rep.SkippedJobs[0].ID != 2 || st[3] != 2 || st[4] != 100 {
		t.Errorf("skipped %v, starts %v; want job 2 skipped, 3 at 2, 4 at 100", rep.SkippedJobs, st)
	}
}
