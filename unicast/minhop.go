package unicast

import (
	"github.com/icn-hpc/icn/topology"
)

// routeMinHop routes every destination over a shortest path, balancing
// end-port routes over the shortest ports of each switch, in the better of
// the two destination orders.
func routeMinHop(f *Fabric, o Options) (*Result, engineState, error) {
	h, err := topology.MinHops(f.G, o.Workers)
	if err != nil {
		return nil, engineState{}, err
	}
	adj := switchAdjacency(f)
	cand := func(_, s, tt int, buf []uint8) []uint8 {
		sv, tv := int(f.switches[s]), int(f.switches[tt])
		best := h.Hops(sv, tv)
		if best == topology.Unreachable {
			return buf
		}
		for e := adj.start[s]; e < adj.start[s+1]; e++ {
			x := int(f.switches[adj.nb[e]])
			hx := 0
			if x != tv {
				hx = h.Hops(x, tv)
			}
			if hx+1 == best {
				buf = append(buf, adj.port[e])
			}
		}
		return buf
	}
	t, order, err := bestOrder(f, o, func(ds []dest) (*Tables, error) {
		t := NewTables(f, o.Engine)
		fillLocal(t)
		balanced(t, ds, cand, o.Workers, o.Progress)
		return t, nil
	})
	if err != nil {
		return nil, engineState{}, err
	}
	return &Result{Tables: t, LanesNeeded: 1, Order: order}, engineState{}, nil
}
