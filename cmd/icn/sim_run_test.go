package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/icn-hpc/icn/sim"
	"github.com/spf13/cobra"
)

// simTestOptions are icn sim's defaults (as the flags set them) on topo.
func simTestOptions(topo string) simOptions {
	var o simOptions
	o.sim.register(&cobra.Command{})
	o.sim.tf.spec, o.sim.quiet, o.sim.cycles = topo, true, 2000
	o.out.json = true
	return o
}

// runSim in process: below saturation on a 4x4 torus with uniform traffic
// (ideal bound 1 flit/node/cycle) every point is stable and the accepted
// load matches the offered one; the run is the same for the same seed.
func TestRunSimBelowSaturation(t *testing.T) {
	o := simTestOptions("torus:4x4")
	o.rates = "0.1,0.3"
	var out bytes.Buffer
	if err := runSim(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var pts []sim.Point
	if err := json.Unmarshal(out.Bytes(), &pts); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(pts) != 2 {
		t.Fatalf("%d points, want 2", len(pts))
	}
	for _, p := range pts {
		if !p.Stable || p.Packets == 0 || p.Deadlock != "" {
			t.Errorf("load %g: stable %v, %d packets, deadlock %q", p.Offered, p.Stable, p.Packets, p.Deadlock)
		}
		if math.Abs(p.Accepted-p.Offered) > 0.1*p.Offered {
			t.Errorf("load %g: accepted %g, want within 10%% of the offered load", p.Offered, p.Accepted)
		}
		if p.LatencyAvg < 1 || p.LatencyP99 < p.LatencyP50 || p.LatencyMax < p.LatencyP99 {
			t.Errorf("load %g: latencies avg %g p50 %g p99 %g max %v out of order", p.Offered, p.LatencyAvg, p.LatencyP50, p.LatencyP99, p.LatencyMax)
		}
	}
	var again bytes.Buffer
	if err := runSim(context.Background(), o, &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), again.Bytes()) {
		t.Error("same seed, different output")
	}
}

// runSim in process: a torus ring with one VC and no dateline, forced,
// deadlocks at high load, and the error carries exit status 1.
func TestRunSimDeadlockExit(t *testing.T) {
	o := simTestOptions("torus:4x4")
	o.rates, o.sim.vcs, o.sim.force, o.sim.packet = "0.9", 1, true, "8"
	err := runSim(context.Background(), o, &bytes.Buffer{})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("err %v, want a deadlock with exit status 1", err)
	}
}
