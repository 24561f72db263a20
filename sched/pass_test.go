package sched

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// passStream is a small busy stream on 32 nodes for the pass-interval and
// start-delay tests.
func passStream(t *testing.T, seed uint64) *Stream {
	t.Helper()
	s, err := Synthetic(SyntheticParams{Jobs: 300, Span: 3 * day, MaxTime: 6 * 3600, MaxNodes: 16, Overestimate: 1.5, Seed: seed}, 32)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func simulateFlat(t *testing.T, cfg Config, s *Stream) *Report {
	t.Helper()
	m, err := NewFlatMachine(32, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Machine = m
	rep, err := Simulate(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// ceilGrid rounds x up to a multiple of iv.
func ceilGrid(x, iv float64) float64 {
	k := math.Ceil(x/iv - 1e-9)
	return k * iv
}

// TestPassIntervalIsRoundedEvents checks the pass interval against an
// independent reading of it: with passes only at multiples of I, a
// window policy without backfilling sees every arrival at the next
// multiple of I and every end at the next multiple after it, so its
// starts are those of the event-driven simulation of the stream whose
// submit times and run times are rounded up to multiples of I (a start
// on the grid plus a rounded run time is the rounded end).
func TestPassIntervalIsRoundedEvents(t *testing.T) {
	for _, tc := range []struct {
		window int
		iv     float64
		seed   uint64
	}{{1, 600, 1}, {1, 3600, 2}, {8, 900, 3}, {8, 60, 4}} {
		s := passStream(t, tc.seed)
		got := simulateFlat(t, Config{Policy: Policy{Window: tc.window, Interval: tc.iv}}, s)
		rounded := &Stream{Source: s.Source, Jobs: slices.Clone(s.Jobs)}
		for i := range rounded.Jobs {
			j := &rounded.Jobs[i]
			j.Submit = ceilGrid(j.Submit, tc.iv)
			j.Runtime = ceilGrid(j.Runtime, tc.iv)
			j.Requested = math.Max(j.Requested, j.Runtime)
		}
		want := simulateFlat(t, Config{Policy: Policy{Window: tc.window}}, rounded)
		for i, r := range got.Schedule {
			if k := r.Start / tc.iv; math.Abs(k-math.Round(k)) > 1e-9*math.Max(1, k) {
				t.Fatalf("window %d, I=%g: job %d starts at %g, not a multiple of I", tc.window, tc.iv, r.ID, r.Start)
			}
			if r.Start < s.Jobs[i].Submit {
				t.Fatalf("job %d starts before its submission", r.ID)
			}
			if math.Abs(r.Start-want.Schedule[i].Start) > 1e-6 {
				t.Fatalf("window %d, I=%g: job %d starts at %g, the rounded stream's at %g", tc.window, tc.iv, r.ID, r.Start, want.Schedule[i].Start)
			}
		}
		if got.MeanWait <= simulateFlat(t, Config{Policy: Policy{Window: tc.window}}, s).MeanWait {
			t.Errorf("window %d, I=%g: waiting for passes did not lengthen the mean wait", tc.window, tc.iv)
		}
	}
}

// TestStartDelayHoldsNodes checks a start delay against its definition:
// the schedule is the one in which each job's run time is longer by its
// delay (same starts and ends), while utilization counts run time only.
func TestStartDelayHoldsNodes(t *testing.T) {
	for _, pol := range []Policy{{Window: 1}, {Window: 1, Backfill: true}, {Window: 8, Backfill: true, Rule: RuleWindow}} {
		s := passStream(t, 7)
		rng := rand.New(rand.NewPCG(7, 1))
		delay := map[int]float64{}
		longer := &Stream{Source: s.Source, Jobs: slices.Clone(s.Jobs)}
		for i := range longer.Jobs {
			j := &longer.Jobs[i]
			delay[j.ID] = float64(rng.IntN(600))
			j.Runtime += delay[j.ID]
			j.Requested = math.Max(j.Requested, j.Runtime)
		}
		got := simulateFlat(t, Config{Policy: pol, StartDelay: func(j Job) float64 { return delay[j.ID] }}, s)
		want := simulateFlat(t, Config{Policy: pol}, longer)
		for i, r := range got.Schedule {
			w := want.Schedule[i]
			if r.Start != w.Start || r.End != w.End {
				t.Fatalf("%+v: job %d runs %g–%g, with its delay in its run time %g–%g", pol, r.ID, r.Start, r.End, w.Start, w.End)
			}
		}
		if got.MeanWait != want.MeanWait {
			t.Errorf("%+v: mean wait %g, want %g", pol, got.MeanWait, want.MeanWait)
		}
		if !(got.Utilization < want.Utilization) {
			t.Errorf("%+v: utilization %g counts the delays (%g with them in the run time)", pol, got.Utilization, want.Utilization)
		}
	}
}

func TestPassIntervalRefused(t *testing.T) {
	for _, p := range []Policy{
		{Window: 1, Interval: -1},
		{Window: 1, Interval: math.NaN()},
		{Window: 1, Interval: math.Inf(1)},
		{Window: 1, Backfill: true, Rule: RuleAccasim, Interval: 60},
	} {
		if err := p.check(); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
