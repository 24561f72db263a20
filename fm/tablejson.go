package fm

import (
	"context"
	"strings"

	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/routing"
)

// tableJSON converts a routing table to the file format (what
// Table.WriteJSON writes and routing.ReadTableJSON reads back) without a
// text round trip. Routes share one coordinate slice per node and one
// direction list per distinct step sequence, so a million routes cost
// tens of megabytes, not gigabytes. The slices must not be modified.
func tableJSON(tb *routing.Table) *routing.TableJSON {
	tf, _ := tableJSONContext(context.Background(), tb)
	return tf
}

// tableJSONContext is tableJSON that stops with ctx's error when ctx
// ends (a 4 096-node job's 16.8 million routes take seconds).
func tableJSONContext(ctx context.Context, tb *routing.Table) (*routing.TableJSON, error) {
	tf, coord := tableHeader(tb)
	var dirNames [2 * routing.MaxDims]string
	for d := range dirNames {
		dirNames[d] = routing.Dir(d).String()
	}
	n := tb.NumRoutes()
	tf.Routes = make([]routing.RouteJSON, n)
	// Routes with the same steps share one direction list (on a torus
	// most routes repeat a translated shape).
	shared := make(map[string][]string)
	var dirs []routing.Dir
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
				l[k] = dirNames[d]
			}
			shared[string(key)] = l
		}
		tf.Routes[i] = routing.RouteJSON{Src: coord(src), Dst: coord(dst), Dirs: l}
	}
	return tf, nil
}

// tableHeader returns tb in the file format without its routes, and the
// coordinates of a node (one slice per node, shared).
func tableHeader(tb *routing.Table) (*routing.TableJSON, func(v int) []int) {
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
	tf := &routing.TableJSON{Dims: g.Dims(), Mesh: routing.MeshNames(g.Wrap()), Rules: tb.Rule.Kind.String(),
		DeadlockFree: tb.DeadlockFree, Order: strings.Split(tb.Router().Rule().Order.String(), ","),
		Algo: tb.Algo.String(), Active: list(tb.Active)}
	st := tb.Stats
	tf.Stats = &st
	if len(tb.Transit) > 0 {
		tf.Transit = list(tb.Transit)
	}
	for _, l := range g.FailedLinks() {
		tf.FailedLinks = append(tf.FailedLinks, g.LinkName(l))
	}
	for _, v := range g.FailedNodes() {
		tf.FailedNodes = append(tf.FailedNodes, g.NodeName(v))
	}
	for _, c := range tb.Cycle {
		tf.Cycle = append(tf.Cycle, g.ChannelName(c))
	}
	return tf, coord
}

// tableEncoded returns tb in the file format without its routes and its
// routes encoded as the store keeps them (store.EncodeTableRoutes): a
// job's table as the service keeps it (keepEncoded), made without the
// routes of the file format.
func tableEncoded(ctx context.Context, tb *routing.Table) (*routing.TableJSON, []byte, error) {
	tf, _ := tableHeader(tb)
	routes, err := store.EncodeTableRoutes(ctx, tb)
	if err != nil {
		return nil, nil, err
	}
	return tf, routes, nil
}
