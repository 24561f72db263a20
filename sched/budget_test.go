package sched

import (
	"testing"
	"time"

	"github.com/icn-hpc/icn/alloc"
)

// TestSimulateWithExpiredBudget: with a budget that has always ended
// (1 ns: every decision is cut before its first placement, which does
// not depend on timing), a simulation still runs every job that fits
// the machine, on nodes no other job holds: a cut answer is never taken
// as "cannot be placed", and when nothing is running the decision is
// made without the budget. The same stream without a budget runs the
// same jobs.
func TestSimulateWithExpiredBudget(t *testing.T) {
	stream, err := Synthetic(SyntheticParams{Jobs: 80, Span: 2 * day, MaxTime: 4 * 3600, Seed: 11, Overestimate: 2}, 32)
	if err != nil {
		t.Fatal(err)
	}
	run := func(budget time.Duration, policy Policy) *Report {
		st, rt := newCluster(t, "torus:4x4x2")
		rep, err := Simulate(Config{State: st, Router: rt, Algo: alloc.Improved, Policy: policy, Transit: transitHalf, Budget: budget}, stream)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckSchedule(st.N(), rep.Schedule); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for _, policy := range []Policy{{Window: 1}, {Window: 4, Backfill: true}} {
		want := run(0, policy)
		got := run(time.Nanosecond, policy)
		if got.DecisionsCut == 0 || want.DecisionsCut != 0 {
			t.Fatalf("%+v: %d decisions cut with the budget, %d without", policy, got.DecisionsCut, want.DecisionsCut)
		}
		if got.JobsDone != want.JobsDone || got.JobsSkipped != want.JobsSkipped {
			t.Fatalf("%+v: %d jobs done, %d skipped with the budget; %d, %d without", policy, got.JobsDone, got.JobsSkipped, want.JobsDone, want.JobsSkipped)
		}
	}
}
