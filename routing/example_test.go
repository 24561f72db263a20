package routing_test

import (
	"context"
	"fmt"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// Route every pair of a 4x4x2 torus with one failed link under the Angara
// rule R_A*, and read the figures of the verified table.
func Example() {
	g, err := topology.Parse("torus:4x4x2")
	if err != nil {
		panic(err)
	}
	g, err = g.ApplyFaults("0.0.0+X", "")
	if err != nil {
		panic(err)
	}
	rule, err := routing.ParseRule("angara*")
	if err != nil {
		panic(err)
	}
	all := make([]int, g.NumNodes())
	for v := range all {
		all[v] = v
	}
	r, err := routing.NewRouter(g, rule)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	tb, err := r.Build(ctx, all, nil, routing.BuildOptions{Algo: routing.BFS})
	if err != nil {
		panic(err)
	}
	fmt.Println(tb.NumRoutes(), "routes, deadlock-free:", tb.DeadlockFree)
	rep, err := r.Verify(ctx, tb, routing.VerifyOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("violations:", len(rep.Violations))
	// Output:
	// 992 routes, deadlock-free: true
	// violations: 0
}
