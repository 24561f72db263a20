package routing

import "github.com/icn-hpc/icn/topology"

// buildTable builds a verified table of active ∪ transit on g (tests).
func buildTable(g *topology.Graph, rule Rule, active, transit []int, algo Algo) (*Table, error) {
	r, err := NewRouter(g, rule)
	if err != nil {
		return nil, err
	}
	return r.BuildTable(active, transit, algo)
}

// reachableIn answers the reachability of active ∪ transit on g (tests).
func reachableIn(g *topology.Graph, rule Rule, active, transit []int) (bool, [2]int, error) {
	r, err := NewRouter(g, rule)
	if err != nil {
		return false, [2]int{-1, -1}, err
	}
	return r.ReachableFirst(active, transit)
}
