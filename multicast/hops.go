package multicast

import (
	"github.com/icn-hpc/icn/topology"
)

// HopRow is one row of a switch's min-hop table as a subnet manager keeps
// it: the hops to one destination through every port, column 0 being the
// minimum over the ports (seed 004, definition 5). Ports without a working
// link, or whose far side cannot forward toward the destination, hold
// topology.Unreachable.
type HopRow struct {
	Dest  string `json:"dest"`
	Min   int    `json:"min"`
	Ports []int  `json:"ports"` // Ports[p-1] = hops through port p
}

// HopRows returns the rows of switch s's min-hop table for the given
// destinations (all nodes if dests is nil).
func HopRows(h *topology.HopTable, s int, dests []int) []HopRow {
	g := h.Graph()
	if dests == nil {
		dests = make([]int, g.NumNodes())
		for i := range dests {
			dests[i] = i
		}
	}
	np := g.NumPorts(s)
	rows := make([]HopRow, len(dests))
	for i, d := range dests {
		row := HopRow{Dest: g.NodeName(d), Min: h.Hops(s, d), Ports: make([]int, np)}
		for p := 1; p <= np; p++ {
			row.Ports[p-1] = h.PortHops(s, p, d)
		}
		rows[i] = row
	}
	return rows
}
