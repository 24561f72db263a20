package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// --backfill picks the rule: on the probe trace (see
// sched/testdata/easy_rules_probe.swf and sched's TestBackfillRulesOnProbe)
// the waits add up to 0+0+99+108+7+0+0+4+3+0+0+9 = 230 s under EASY and
// 0+0+209+8+97+0+0+11+8+0+0+49 = 382 s under accasim's rule, over 12 jobs.
func TestSimulateBackfillRules(t *testing.T) {
	for _, tc := range []struct {
		backfill string
		sum      float64
	}{{"easy", 230}, {"easy-accasim", 382}} {
		o := schedSimOptions("flat:4", "swf:../../sched/testdata/easy_rules_probe.swf")
		o.backfill = tc.backfill
		var buf bytes.Buffer
		if err := runSchedSimulate(context.Background(), o, &buf); err != nil {
			t.Fatalf("%s: %v", tc.backfill, err)
		}
		var rep struct {
			MeanWait float64 `json:"mean_wait"`
		}
		if err := json.Unmarshal(buf.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if want := tc.sum / 12; rep.MeanWait != want {
			t.Errorf("--backfill %s: mean wait %g, want %g", tc.backfill, rep.MeanWait, want)
		}
	}
	o := schedSimOptions("flat:4", "swf:../../sched/testdata/easy_rules_probe.swf")
	o.backfill, o.window = "easy-accasim", 2
	if err := runSchedSimulate(context.Background(), o, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "takes --window 1") {
		t.Errorf("easy-accasim with --window 2: %v", err)
	}
}
