package routing

import (
	"context"
	"io"

	"github.com/icn-hpc/icn/topology"
)

// buildTable builds a verified table of active ∪ transit on g (tests).
func buildTable(g *topology.Graph, rule Rule, active, transit []int, algo Algo) (*Table, error) {
	r, err := NewRouter(g, rule)
	if err != nil {
		return nil, err
	}
	return r.Build(context.Background(), active, transit, BuildOptions{Algo: algo})
}

// reachableIn answers the reachability of active ∪ transit on g (tests).
func reachableIn(g *topology.Graph, rule Rule, active, transit []int) (bool, [2]int, error) {
	r, err := NewRouter(g, rule)
	if err != nil {
		return false, [2]int{-1, -1}, err
	}
	return r.ReachableFirst(active, transit)
}

// violations verifies a table built by Build with its router and returns
// the violations (tests).
func violations(tb *Table) []Violation {
	rep, err := tb.Router().Verify(context.Background(), tb, VerifyOptions{})
	if err != nil {
		panic(err)
	}
	return rep.Violations
}

// verifyFile opens a table file and verifies it with the router it names
// (tests).
func verifyFile(f io.ReadSeeker, extraLinks, extraNodes string, workers int) (*Report, *Router, error) {
	tr, r, err := OpenTable(f, extraLinks, extraNodes)
	if err != nil {
		return nil, nil, err
	}
	rep, err := r.Verify(context.Background(), tr, VerifyOptions{Workers: workers})
	return rep, r, err
}

// verifyJSON verifies a table in the file format with the router it names
// (tests).
func verifyJSON(tf *TableJSON, extraLinks, extraNodes string) (*Report, *Router, error) {
	r, err := tf.NewRouter(extraLinks, extraNodes)
	if err != nil {
		return nil, nil, err
	}
	rep, err := r.Verify(context.Background(), tf, VerifyOptions{})
	return rep, r, err
}
