package collective

import (
	"fmt"
	"math"

	"github.com/icn-hpc/icn/sim"
	"github.com/icn-hpc/icn/topology"
)

// Simulate runs the plan of op on the simulator with the model's
// parameters mapped onto it: one word per flit and tw = 1 cycle; for
// cut-through (wormhole) a hop costs router delay + link latency = th
// and a message t_s = start-up + router delay; for store-and-forward a hop
// costs m + router delay + link latency − 1, so router delay = th and
// start-up = ts − th − 1. It returns the cycle the last message arrived.
func Simulate(t Topo, op string, mode Mode, p Params) (int64, error) {
	if p.Tw != 1 {
		return 0, fmt.Errorf("simulation needs tw = 1 (one word = one flit per cycle)")
	}
	if p.Ts != math.Trunc(p.Ts) || p.Th != math.Trunc(p.Th) {
		return 0, fmt.Errorf("simulation needs whole-cycle ts and th")
	}
	ts, th := int(p.Ts), int(p.Th)
	cfg := sim.DefaultConfig()
	cfg.LinkLatency = 1
	var startup int
	if mode == CT {
		if th < 1 || ts < th-1 {
			return 0, fmt.Errorf("simulating cut-through needs th ≥ 1 and ts ≥ th − 1 (th = router delay + 1-cycle link, ts = start-up + router delay)")
		}
		cfg.Switching = sim.Wormhole
		cfg.RouterDelay = th - 1
		cfg.Buf = max(8, th+3)
		startup = ts - cfg.RouterDelay
	} else {
		if ts < th+1 {
			return 0, fmt.Errorf("simulating store-and-forward needs ts ≥ th + 1 (th = router delay, ts = start-up + router delay + 1)")
		}
		cfg.Switching = sim.SAF
		cfg.RouterDelay = th
		startup = ts - th - 1
	}
	msgs, err := Plan(t, op, mode, p)
	if err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	maxSize := 1
	for _, m := range msgs {
		maxSize = max(maxSize, m.Size)
	}
	g, err := topology.Parse(t.Spec)
	if err != nil {
		return 0, err
	}
	deg := 0
	for v := 0; v < g.NumNodes(); v++ {
		deg = max(deg, g.Degree(v))
	}
	cfg.VCs = 2
	if t.Kind == Hypercube {
		cfg.VCs = 1
	}
	if cfg.Switching == sim.SAF {
		cfg.Buf = maxSize
		if float64(g.NumNodes())*float64(deg+1)*float64(cfg.VCs)*float64(maxSize) > 4e6 {
			return 0, fmt.Errorf("store-and-forward simulation needs buffers of %d flits on %d nodes: too large (reduce m)", maxSize, g.NumNodes())
		}
	}
	cfg.Sizes = []sim.SizeWeight{{Size: maxSize, Weight: 1}}
	cfg.LocalSpeedup = deg
	cfg.Rate = 0
	n, err := sim.NewNetwork(g, cfg, false)
	if err != nil {
		return 0, err
	}
	sm := make([]sim.Message, len(msgs))
	for i, m := range msgs {
		sm[i] = sim.Message{Src: m.Src, Dst: m.Dst, Size: m.Size, Deps: m.Deps}
	}
	res, err := sim.RunMessages(n, cfg, sm, startup, 0)
	if err != nil {
		return 0, err
	}
	return res.Finish, nil
}
