package topology_test

import (
	"fmt"

	"github.com/icn-hpc/icn/topology"
)

// Build a torus from its spec string and measure it.
func Example() {
	g, err := topology.Parse("torus:4x4x2")
	if err != nil {
		panic(err)
	}
	m := topology.Measure(g, topology.MetricsOptions{})
	fmt.Println(g.NumNodes(), "nodes, diameter", m.Diameter)
	// Output: 32 nodes, diameter 5
}
