package sched_test

import (
	"fmt"

	"github.com/icn-hpc/icn/sched"
)

// Three jobs on a flat machine of 4 nodes, first come first served: the
// third waits for the first to end.
func Example() {
	m, err := sched.NewFlatMachine(4, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	stream := &sched.Stream{Jobs: []sched.Job{
		{ID: 1, Submit: 0, Nodes: 3, Runtime: 100, Requested: 100},
		{ID: 2, Submit: 0, Nodes: 1, Runtime: 50, Requested: 50},
		{ID: 3, Submit: 10, Nodes: 2, Runtime: 10, Requested: 10},
	}}
	rep, err := sched.Simulate(sched.Config{Machine: m, Policy: sched.Policy{Window: 1}}, stream)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("makespan %.0f s, mean wait %.1f s\n", rep.Makespan, rep.MeanWait)
	// Output:
	// makespan 110 s, mean wait 30.0 s
}
