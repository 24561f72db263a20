package main

import (
	"bytes"
	"encoding/json"
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
