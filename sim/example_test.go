package sim_test

import (
	"fmt"

	"github.com/icn-hpc/icn/sim"
	"github.com/icn-hpc/icn/topology"
)

// Simulate uniform random traffic at 10 % load on an 8x8 torus with
// dimension-order routing, and check the run's invariants.
func Example() {
	g, err := topology.Parse("torus:8x8")
	if err != nil {
		panic(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Traffic = "uniform"
	cfg.Rate = 0.1
	cfg.Cycles = 2000
	cfg.Seed = 1
	n, err := sim.NewNetwork(g, cfg, true)
	if err != nil {
		panic(err)
	}
	p, err := sim.Run(n, cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println("stable:", p.Stable, "conserved:", p.Conserved)
	fmt.Println("latency above the hop count:", p.LatencyAvg > p.HopsAvg)
	// Output:
	// stable: true conserved: true
	// latency above the hop count: true
}
