package alloctest

import (
	"context"
	"fmt"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// GraphRouter is a rule-free alloc.Router: a set is reachable when the
// live links inside it connect all active nodes, and the table is
// shortest paths inside the set. Its tables need no verification.
type GraphRouter struct {
	G *topology.Graph
}

var _ alloc.Router = GraphRouter{}

// Props implements alloc.Router: connectivity inside a set depends only
// on the set's links, so it is invariant under translation on a torus
// without failures, blocks of one size share it, and a box is connected.
func (r GraphRouter) Props() alloc.RouterProps {
	return alloc.RouterProps{TranslationInvariant: faultFreeTorus(r.G), BlocksLocal: true, BoxesReachable: true}
}

func faultFreeTorus(g *topology.Graph) bool {
	for _, w := range g.Wrap() {
		if !w {
			return false
		}
	}
	return len(g.FailedLinks()) == 0 && len(g.FailedNodes()) == 0
}

// Reachable reports whether the active nodes are connected inside the set.
func (r GraphRouter) Reachable(active, transit []int) (bool, error) {
	if len(active) == 0 {
		return true, nil
	}
	in, err := r.members(active, transit)
	if err != nil {
		return false, err
	}
	dist := r.bfs(active[0], in)
	for _, v := range active {
		if _, ok := dist[v]; !ok {
			return false, nil
		}
	}
	return true, nil
}

// ReachableWithHints answers with Reachable (the hints cannot help).
func (r GraphRouter) ReachableWithHints(active, transit []int, _ [][2]int) (bool, [2]int, error) {
	ok, err := r.Reachable(active, transit)
	return ok, [2]int{-1, -1}, err
}

// Table returns the diameter of shortest paths inside the set; link loads
// are not modelled (π_max = π_perfect = 0), and there is no table to
// verify.
func (r GraphRouter) Table(_ context.Context, active, transit []int, _ routing.BuildOptions) (routing.Figures, *routing.Table, error) {
	in, err := r.members(active, transit)
	if err != nil {
		return routing.Figures{}, nil, err
	}
	var f routing.Figures
	for _, a := range active {
		dist := r.bfs(a, in)
		for _, b := range active {
			d, ok := dist[b]
			if !ok {
				return f, nil, fmt.Errorf("set is not reachable")
			}
			f.Diameter = max(f.Diameter, d)
		}
	}
	return f, nil, nil
}

// VerifyUnverified has nothing to verify.
func (GraphRouter) VerifyUnverified(context.Context, *routing.Table, int) error { return nil }

func (r GraphRouter) members(active, transit []int) (map[int]bool, error) {
	in := make(map[int]bool, len(active)+len(transit))
	for _, l := range [][]int{active, transit} {
		for _, v := range l {
			if v < 0 || v >= r.G.NumNodes() {
				return nil, fmt.Errorf("node id %d out of range", v)
			}
			in[v] = true
		}
	}
	return in, nil
}

func (r GraphRouter) bfs(src int, in map[int]bool) map[int]int {
	dist := map[int]int{src: 0}
	queue := []int{src}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, c := range r.G.Out(v) {
			if !r.G.Up(int(c)) {
				continue
			}
			w := r.G.Dst(int(c))
			if _, ok := dist[w]; !ok && in[w] {
				dist[w] = dist[v] + 1
				queue = append(queue, w)
			}
		}
	}
	return dist
}
