package sched

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/alloctest"
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
	return st, alloctest.GraphRouter{G: g}
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

// Uniform runtimes have the mean of their bounds; log-uniform ones far
// less (their mean is (max−min)/ln(max/min)).
func TestSyntheticTimes(t *testing.T) {
	mean := func(times string) float64 {
		s, err := Synthetic(SyntheticParams{Jobs: 20000, Times: times, Seed: 4}, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, j := range s.Jobs {
			if j.Runtime < 60 || j.Runtime > day {
				t.Fatalf("%s: runtime %v out of [60, 86400]", times, j.Runtime)
			}
			sum += j.Runtime
		}
		return sum / float64(len(s.Jobs))
	}
	if u, want := mean("uniform"), (day+60)/2; math.Abs(u-want) > 0.02*want {
		t.Errorf("uniform runtimes: mean %.0f s, want ≈ %.0f", u, want)
	}
	if l, want := mean(""), (day-60)/math.Log(day/60); math.Abs(l-want) > 0.05*want {
		t.Errorf("log-uniform runtimes: mean %.0f s, want ≈ %.0f", l, want)
	}
	if _, err := ParseSynthetic("times=normal"); err == nil {
		t.Error("times=normal accepted")
	}
}

// A network's stream depends on the seed and its name, not on the other
// networks of the experiment or its place among them.
func TestExperimentStreamIndependentOfList(t *testing.T) {
	o := ExperimentOptions{Seed: 1, Stream: SyntheticParams{Span: month}, TransitFrac: 1}
	alone, err := Utilization([]string{"4x2x2"}, []int{1}, false, o, angaraRouter)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := Utilization([]string{"4x4", "2x2x2", "4x2x2"}, []int{1}, false, o, angaraRouter)
	if err != nil {
		t.Fatal(err)
	}
	var got []UtilRow
	for _, r := range listed {
		if r.Network == "4x2x2" {
			got = append(got, r)
		}
	}
	for _, rows := range [][]UtilRow{alone, got} {
		for i := range rows {
			rows[i].AllocSecs = 0 // time measured, not simulated
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(alone) {
		t.Errorf("4x2x2 alone %+v, in a list %+v", alone, got)
	}
	if StreamSeed(1, "4x4") == StreamSeed(1, "4x2x2") || StreamSeed(1, "4x4") == StreamSeed(2, "4x4") {
		t.Error("stream seeds collide")
	}
}

func TestAggregate(t *testing.T) {
	a := Aggregate([]UtilSummary{
		{BaselineU: .5, ImprovedU: .6, GainPoints: 10, BaselineT: 10, ImprovedT: 5, TMeanRatio: 2},
		{BaselineU: .4, ImprovedU: .5, GainPoints: 10, BaselineT: 30, ImprovedT: 5, TMeanRatio: 6},
		{BaselineU: .8, ImprovedU: .8, GainPoints: 0, BaselineT: 2, ImprovedT: 2, TMeanRatio: 1},
	})
	// By hand: relative gains 20 %, 25 %, 0 %; T_mean means 14 / 4,
	// medians 10 / 5.
	want := UtilAggregate{GainPoints: 20.0 / 3, GainMin: 0, GainMax: 10, GainRelative: 15, TMeanRatio: 3, TMeanRatioOfMeans: 3.5, TMeanRatioOfMedians: 2}
	if math.Abs(a.GainPoints-want.GainPoints) > 1e-9 || a.GainMin != 0 || a.GainMax != 10 || math.Abs(a.GainRelative-15) > 1e-9 ||
		a.TMeanRatio != 3 || math.Abs(a.TMeanRatioOfMeans-3.5) > 1e-9 || a.TMeanRatioOfMedians != 2 {
		t.Errorf("got %+v, want %+v", a, want)
	}
}
