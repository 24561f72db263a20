package multiring_test

import (
	"fmt"

	"github.com/icn-hpc/icn/multiring"
)

// The capacity of the 16-node multiring {±1, ±3} (effective capacity N(N−1)/max ring load) under the shortest and the
// balanced route schedules (seed 000, tables 2.2 and 2.3: 20 and 21.82).
func Example() {
	m, err := multiring.New(16, []int{1, -1, 3, -3})
	if err != nil {
		panic(err)
	}
	for _, kind := range []string{multiring.Shortest, multiring.Balanced} {
		s, err := m.Schedule(kind)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: C = %.2f\n", kind, s.Effective())
	}
	// Output:
	// shortest: C = 20.00
	// balanced: C = 21.82
}
