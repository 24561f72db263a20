package sim

import (
	"fmt"
	"math"

	"github.com/icn-hpc/icn/topology"
)

// BookSimRef is a configuration with BookSim2's measured saturation and
// zero-load latency (booksim2 as compared in docs/sim.md: 8 bisection steps of injection_rate with injection_rate_uses_flits = 1
// and use_noc_latency = 0; latency at 0.01 flits/node/cycle). icn runs it
// with the staged router and injection/ejection channels.
type BookSimRef struct {
	Name     string
	Spec     string
	Traffic  string
	Packet   int
	Stages   Stages
	Sat      float64 // BookSim2's highest stable load
	ZeroLoad float64 // BookSim2's mean packet latency at 0.01
	Quick    bool    // part of the quick validation
}

var spec2 = Stages{RC: 0, VA: 1, SA: 1, ST: 1, Speculative: true}

// BookSimRefs are the reference results of `icn sim validate`.
var BookSimRefs = []BookSimRef{
	{"uniform, 4-stage router", "torus:8x8", "uniform", 1, BookSimStages, 0.27734, 27.397, true},
	{"uniform, speculative 2-cycle router", "torus:8x8", "uniform", 1, spec2, 0.58593, 16.975, true},
	{"uniform 4-flit packets, 4-stage router", "torus:8x8", "uniform", 4, BookSimStages, 0.38672, 30.363, false},
	{"uniform 4-flit packets, speculative router", "torus:8x8", "uniform", 4, spec2, 0.48047, 20.328, false},
	{"mesh uniform, 4-stage router", "mesh:8x8", "uniform", 1, BookSimStages, 0.3125, 33.227, false},
	{"neighbour, 4-stage router (one VC per ring: ~1/3)", "torus:8x8", "neighbor", 1, BookSimStages, 0.35547, 17.033, true},
	{"neighbour, speculative router", "torus:8x8", "neighbor", 1, spec2, 0.99609, 11, false},
	{"transpose, speculative router", "torus:8x8", "transpose", 1, spec2, 0.28516, 16.814, false},
	{"bitcomp, speculative router", "torus:8x8", "bitcomp", 1, spec2, 0.4375, 16.831, false},
}

// Tolerances of the reference checks: saturation within ±RefSatTol of
// BookSim2's (relative), zero-load latency within ±RefLatTol.
const (
	RefSatTol = 0.10
	RefLatTol = 0.03
)

// RunRef measures a reference configuration: the saturation by bisection
// (steps halvings of [0, 1], as for BookSim2) and the latency at 0.01.
func RunRef(ref BookSimRef, cycles, steps int, seed uint64) (sat, lat float64, conserved bool, err error) {
	g, err := topology.Parse(ref.Spec)
	if err != nil {
		return 0, 0, false, err
	}
	cfg := DefaultConfig()
	cfg.Traffic, cfg.Sizes, cfg.Seed = ref.Traffic, []SizeWeight{{ref.Packet, 1}}, seed
	cfg.Router, cfg.Stages, cfg.TerminalLinks = RouterStaged, ref.Stages, true
	cfg.Cycles, cfg.Warmup = cycles, max(1000, cycles/3)
	n, err := NewNetwork(g, cfg, false)
	if err != nil {
		return 0, 0, false, err
	}
	conserved = true
	run := func(rate float64) (Point, error) {
		c := cfg
		c.Rate = rate
		p, err := Run(n, c)
		conserved = conserved && p.Conserved
		return p, err
	}
	p, err := run(0.01)
	if err != nil {
		return 0, 0, false, err
	}
	lat = p.LatencyAvg
	lo, hi := 0.0, 1.0
	for i := 0; i < steps; i++ {
		mid := (lo + hi) / 2
		p, err := run(mid)
		if err != nil {
			return 0, 0, false, err
		}
		if p.Stable {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, lat, conserved, nil
}

// refChecks compares one reference configuration with BookSim2.
func refChecks(ref BookSimRef, o ValidateOptions) ([]Check, error) {
	cycles, steps := 10000, 8
	if o.Quick {
		cycles, steps = 3000, 6
	}
	sat, lat, cons, err := RunRef(ref, cycles, steps, o.Seed)
	if err != nil {
		return nil, err
	}
	// The bisection's resolution widens the band by one step.
	res := math.Ldexp(1, -steps)
	ds := (sat - ref.Sat) / ref.Sat
	dl := (lat - ref.ZeroLoad) / ref.ZeroLoad
	name := fmt.Sprintf("vs BookSim2 %s %s P=%d", ref.Spec, ref.Name, ref.Packet)
	return []Check{
		{Name: "saturation " + name, Expected: fmt.Sprintf("%.4f ±%.0f%%", ref.Sat, 100*RefSatTol),
			Measured: fmt.Sprintf("%.4f (%+.1f%%)", sat, 100*ds), Value: sat, Ref: ref.Sat,
			Pass: math.Abs(sat-ref.Sat) <= RefSatTol*ref.Sat+res && cons},
		{Name: "latency at 0.01 " + name, Expected: fmt.Sprintf("%.2f ±%.0f%%", ref.ZeroLoad, 100*RefLatTol),
			Measured: fmt.Sprintf("%.2f (%+.1f%%)", lat, 100*dl), Value: lat, Ref: ref.ZeroLoad,
			Pass: math.Abs(dl) <= RefLatTol && cons},
	}, nil
}
