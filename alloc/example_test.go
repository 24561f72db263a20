package alloc_test

import (
	"fmt"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

// Place an 8-node job with at most 2 transit nodes on a 4x4x4 Angara torus
// whose first X column is busy.
func Example() {
	g, err := topology.Parse("torus:4x4x4")
	if err != nil {
		panic(err)
	}
	s, err := alloc.NewState(g)
	if err != nil {
		panic(err)
	}
	var busy []int
	for v := 0; v < g.NumNodes(); v++ {
		if v%4 == 0 { // x = 0
			busy = append(busy, v)
		}
	}
	if err := s.Occupy(1, busy); err != nil {
		panic(err)
	}
	rt, err := alloc.NewAngaraRouter(g, "angara*")
	if err != nil {
		panic(err)
	}
	res, err := alloc.NewSelector(s).Select(s, rt, alloc.Request{Nodes: 8, Transit: 2, Algo: alloc.Improved})
	if err != nil {
		panic(err)
	}
	c := res.Chosen
	ok := true
	for _, v := range append(append([]int{}, c.Active...), c.Transit...) {
		ok = ok && s.Available(v)
	}
	fmt.Println(len(c.Active), "active nodes, all free:", ok, "transit ≤ 2:", len(c.Transit) <= 2)
	// Output: 8 active nodes, all free: true transit ≤ 2: true
}
