package collective_test

import (
	"fmt"

	"github.com/icn-hpc/icn/collective"
)

// The cost of a one-to-all broadcast of a 100-word message on a 64-node
// hypercube under cut-through switching (seed 002 §3.3):
// (ts + m·tw + th)·log p, one step per hypercube dimension.
func Example() {
	t, err := collective.ParseModelTopo("hypercube:6")
	if err != nil {
		panic(err)
	}
	mode, err := collective.ParseMode("ct")
	if err != nil {
		panic(err)
	}
	r, err := collective.Cost(t, "bcast", mode, collective.Params{Ts: 10, Tw: 1, Th: 1, M: 100, Shift: 1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s on %d nodes: %.0f time units, %d steps (%s)\n", r.Op, r.P, r.Time, r.Steps, r.Formula)
	// Output: bcast on 64 nodes: 666 time units, 6 steps ((ts + m·tw + th)·log p)
}
