package routing

import (
	"context"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// JSONHeader returns the table in the TableJSON format without its
// routes: the network, rule, figures, verdict and set, as WriteJSON
// writes them. Coordinates of one node share one slice.
func (tb *Table) JSONHeader() *TableJSON {
	tf, _ := tb.jsonHeader()
	return tf
}

// jsonHeader is JSONHeader with the coordinates of a node (one slice per
// node, shared) for the routes.
func (tb *Table) jsonHeader() (*TableJSON, func(v int) []int) {
	g := tb.Graph()
	coords := make(map[int][]int, len(tb.Active))
	coord := func(v int) []int {
		c, ok := coords[v]
		if !ok {
			c = g.Coord(v)
			coords[v] = c
		}
		return c
	}
	list := func(vs []int) [][]int {
		out := make([][]int, len(vs))
		for i, v := range vs {
			out[i] = coord(v)
		}
		return out
	}
	st := tb.Figures
	tf := &TableJSON{Dims: g.Dims(), Mesh: tb.r.t.meshLetters(), Rules: tb.Rule.Kind.String(), Figures: &st,
		DeadlockFree: tb.DeadlockFree, Order: strings.Split(tb.r.order.String(), ","),
		Algo: tb.Algo.String(), Active: list(tb.Active)}
	if len(tb.Transit) > 0 {
		tf.Transit = list(tb.Transit)
	}
	tf.FailedLinks, tf.FailedNodes, tf.Cycle = tb.failureNames()
	return tf, coord
}

// failureNames names the network's failed links and nodes and the
// table's dependency cycle (if any), as the table files write them.
func (tb *Table) failureNames() (links, nodes, cycle []string) {
	g := tb.Graph()
	links, nodes = failedNames(g)
	for _, c := range tb.Cycle {
		cycle = append(cycle, g.ChannelName(c))
	}
	return links, nodes, cycle
}

// failedNames names g's failed links and nodes.
func failedNames(g *topology.Graph) (links, nodes []string) {
	for _, l := range g.FailedLinks() {
		links = append(links, g.LinkName(l))
	}
	for _, v := range g.FailedNodes() {
		nodes = append(nodes, g.NodeName(v))
	}
	return links, nodes
}

// JSON returns the table in the TableJSON format, routes included,
// without a text round trip: what WriteJSON writes and ReadTableJSON
// reads back. Routes share one coordinate slice per node and one
// direction list per distinct step sequence (on a torus most routes
// repeat a translated shape), so a million routes cost tens of
// megabytes; the slices must not be modified. It stops with ctx's error
// when ctx ends (a 4 096-node set's 16.8 million routes take seconds).
func (tb *Table) JSON(ctx context.Context) (*TableJSON, error) {
	tf, coord := tb.jsonHeader()
	n := tb.NumRoutes()
	tf.Routes = make([]RouteJSON, n)
	shared := make(map[string][]string)
	var dirs []Dir
	var key []byte
	for i := range n {
		if i&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		src, dst := tb.Pair(i)
		dirs = tb.AppendDirs(i, dirs[:0])
		key = key[:0]
		for _, d := range dirs {
			key = append(key, byte(d))
		}
		l, ok := shared[string(key)]
		if !ok {
			l = make([]string, len(dirs))
			for k, d := range dirs {
				l[k] = d.String()
			}
			shared[string(key)] = l
		}
		tf.Routes[i] = RouteJSON{Src: coord(src), Dst: coord(dst), Dirs: l}
	}
	return tf, nil
}
