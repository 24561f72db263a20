package alloc

import "github.com/icn-hpc/icn/topology"

// liveLinks is a graph's adjacency over its live links as a table, so
// that the connectivity check every uncached reachability question makes
// (joins) reads one array instead of asking the graph, per channel, for
// its far end and for the failure of the link and of both its nodes.
type liveLinks struct {
	g   *topology.Graph
	deg int     // most channels at one node
	nb  []int32 // nb[v·deg+k]: the far end of v's k-th live channel, or -1
}

// of returns the table of g, building it when g is not the graph it was
// built for (a graph's failures never change: failures make a new graph).
func (t *liveLinks) of(g *topology.Graph) *liveLinks {
	if t.g == g {
		return t
	}
	t.g, t.deg = g, 0
	for v := range g.NumNodes() {
		t.deg = max(t.deg, g.Degree(v))
	}
	t.nb = make([]int32, g.NumNodes()*t.deg)
	for v := range g.NumNodes() {
		row := t.nb[v*t.deg : (v+1)*t.deg]
		k := 0
		for _, c := range g.Out(v) {
			if g.Up(int(c)) {
				row[k] = int32(g.Dst(int(c)))
				k++
			}
		}
		for ; k < t.deg; k++ {
			row[k] = -1
		}
	}
	return t
}

// joins reports whether all of active lie in one connected component of
// the subgraph induced by active ∪ transit over live links (as joinsIn
// with the two sets).
func (cs *connScratch) joins(t *liveLinks, active, transit []int) bool {
	if len(active) < 2 {
		return true
	}
	if len(cs.mark) != t.g.NumNodes() || cs.pass >= 1<<31-2 {
		cs.mark, cs.pass = make([]uint32, t.g.NumNodes()), 0
	}
	cs.pass++
	in, seen := 2*cs.pass, 2*cs.pass+1
	for _, set := range [2][]int{active, transit} {
		for _, v := range set {
			cs.mark[v] = in
		}
	}
	cs.queue = append(cs.queue[:0], active[0])
	cs.mark[active[0]] = seen
	for i := 0; i < len(cs.queue); i++ {
		v := cs.queue[i]
		for _, u := range t.nb[v*t.deg : (v+1)*t.deg] {
			if u >= 0 && cs.mark[u] == in {
				cs.mark[u] = seen
				cs.queue = append(cs.queue, int(u))
			}
		}
	}
	for _, v := range active {
		if cs.mark[v] != seen {
			return false
		}
	}
	return true
}
