package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSimMultiringLatency: the latency table's JSON carries the simulated
// latency and (2.1)'s prediction at every load, null above the capacity.
func TestSimMultiringLatency(t *testing.T) {
	o := simMultiringOptions{out: output{json: true}, n: 8, copies: 1, cycles: 2000, iters: 0,
		steps: "±1", schedule: "shortest", loads: "0.2,1.5", seed: 3}
	var b bytes.Buffer
	if err := runSimMultiring(t.Context(), o, &b); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Analytic float64 `json:"analytic_capacity"`
		Base     float64 `json:"load_base"`
		Latency  []struct {
			Load    float64  `json:"load"`
			Latency float64  `json:"latency_avg"`
			Tau     *float64 `json:"tau_2_1"`
			Lat21   *float64 `json:"latency_2_1"`
		} `json:"latency"`
	}
	if err := json.Unmarshal(b.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if res.Base != res.Analytic || len(res.Latency) != 2 {
		t.Fatalf("load base %g (analytic C %g), %d points; want the analytic C and 2 points", res.Base, res.Analytic, len(res.Latency))
	}
	lo, hi := res.Latency[0], res.Latency[1]
	if lo.Tau == nil || lo.Lat21 == nil || !(*lo.Tau > 0) || !(lo.Latency > 1) {
		t.Errorf("at 0.2 C: latency %g, τ %v; want a positive prediction", lo.Latency, lo.Tau)
	}
	if hi.Tau != nil || hi.Lat21 != nil {
		t.Errorf("at 1.5 C: τ %v, want null (above capacity)", *hi.Tau)
	}
	for _, bad := range []string{"0", "2.5", "x", "0.5:0.1:0.1", ""} {
		o.loads = bad
		if err := runSimMultiring(t.Context(), o, &b); err == nil || !strings.Contains(err.Error(), "--loads") {
			t.Errorf("--loads %q: error %v, want one naming --loads", bad, err)
		}
	}
}

// TestMultiringStepsBothCommands: icn multiring capacity and icn sim
// multiring read ring steps with the same parser: every accepted spelling
// gives both the same rings, in the same order, and bad steps the same
// one-line error.
func TestMultiringStepsBothCommands(t *testing.T) {
	rings := func(t *testing.T, steps string, copies int) ([]int, []int, error, error) {
		t.Helper()
		var a, b bytes.Buffer
		errA := runMultiringCapacity(t.Context(), multiringCapacityOptions{out: output{json: true}, n: 16, copies: copies, steps: steps, schedule: "shortest"}, &a)
		errB := runSimMultiring(t.Context(), simMultiringOptions{out: output{json: true}, n: 16, copies: copies, cycles: 1000, steps: steps, schedule: "shortest", loads: "none", seed: 1}, &b)
		var ra, rb struct {
			Steps []int `json:"steps"`
		}
		if errA == nil {
			if err := json.Unmarshal(a.Bytes(), &ra); err != nil {
				t.Fatal(err)
			}
		}
		if errB == nil {
			if err := json.Unmarshal(b.Bytes(), &rb); err != nil {
				t.Fatal(err)
			}
		}
		return ra.Steps, rb.Steps, errA, errB
	}
	for _, c := range []struct {
		steps  string
		copies int
		want   []int
	}{
		{"±1,±3", 1, []int{1, 3, -3, -1}},
		{"+-1,+-3", 1, []int{1, 3, -3, -1}},
		{"+/-1;-+3", 1, []int{1, 3, -3, -1}},
		{"±1;±3", 1, []int{1, 3, -3, -1}},
		{"1 3 -3 -1", 1, []int{1, 3, -3, -1}},
		{"-1,-3,3,1", 1, []int{1, 3, -3, -1}},
		{"{±1,±3}", 1, []int{1, 3, -3, -1}},
		{"1 3", 1, []int{1, 3}},
		{"-+1", 1, []int{1, -1}},
		{"±1", 2, []int{1, 1, -1, -1}},
	} {
		a, b, errA, errB := rings(t, c.steps, c.copies)
		if errA != nil || errB != nil {
			t.Errorf("--steps %q: capacity: %v; sim multiring: %v", c.steps, errA, errB)
			continue
		}
		if !slices.Equal(a, c.want) || !slices.Equal(b, c.want) {
			t.Errorf("--steps %q ×%d: capacity rings %v, sim multiring rings %v, want %v", c.steps, c.copies, a, b, c.want)
		}
	}
	for _, bad := range []string{"", "x", "1,x", "±", "±-1", "{±1", "1.5", "±8,±1", "0", "±2,±4", "2×±1"} {
		_, _, errA, errB := rings(t, bad, 1)
		if errA == nil || errB == nil {
			t.Errorf("--steps %q: capacity error %v, sim multiring error %v; want both refused", bad, errA, errB)
			continue
		}
		if errA.Error() != errB.Error() || strings.Contains(errA.Error(), "\n") {
			t.Errorf("--steps %q: capacity says %q, sim multiring %q; want the same one line", bad, errA, errB)
		}
	}
}

// TestSimMultiringScheduleDirect: --schedule balanced simulates exactly
// the schedule icn multiring capacity prints (read back with --schedule
// FILE), so no file is needed.
func TestSimMultiringScheduleDirect(t *testing.T) {
	var rep bytes.Buffer
	if err := runMultiringCapacity(t.Context(), multiringCapacityOptions{out: output{json: true}, n: 16, copies: 1, steps: "±1,±3", schedule: "balanced"}, &rep); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b16.json")
	if err := os.WriteFile(file, rep.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	o := simMultiringOptions{out: output{json: true}, n: 16, copies: 1, cycles: 2000, iters: 2, steps: "±1,±3", schedule: "balanced", loads: "0.5", seed: 2}
	var direct, fromFile bytes.Buffer
	if err := runSimMultiring(t.Context(), o, &direct); err != nil {
		t.Fatal(err)
	}
	o.schedule, o.steps = file, "ignored"
	if err := runSimMultiring(t.Context(), o, &fromFile); err != nil {
		t.Fatal(err)
	}
	if direct.String() != fromFile.String() {
		t.Errorf("--schedule balanced and --schedule FILE differ:\n%s\n%s", direct.String(), fromFile.String())
	}
	var res struct {
		Schedule string  `json:"schedule"`
		Analytic float64 `json:"analytic_capacity"`
	}
	if err := json.Unmarshal(direct.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Schedule != "balanced" || math.Abs(res.Analytic-21.818181818181817) > 1e-12 {
		t.Errorf("schedule %q, C = %g; want balanced with the seed's C = 21.82", res.Schedule, res.Analytic)
	}
	o.schedule = filepath.Join(t.TempDir(), "none.json")
	if err := runSimMultiring(t.Context(), o, &fromFile); err == nil || !strings.Contains(err.Error(), "want shortest, balanced, optimal or a schedule FILE") {
		t.Errorf("missing schedule file: %v", err)
	}
}
