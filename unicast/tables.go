package unicast

// Tables is a set of linear forwarding tables, one per switch (destination
// LID → output port, 0 = the switch itself), plus optionally the virtual
// lane of every path (source switch, destination LID). Paths from an end
// port start at the switch it is cabled to, so the lane of a (source port,
// destination) path is the lane of its source switch's row.
type Tables struct {
	F        *Fabric
	Engine   string
	stride   int
	lft      []uint8 // [switch*stride + lid], noPort = no route
	lanes    []uint8 // nil = every path on lane 0
	numLanes int
}

// NewTables returns empty tables (no routes) for f.
func NewTables(f *Fabric, engine string) *Tables {
	t := &Tables{F: f, Engine: engine, stride: f.maxLID + 1, numLanes: 1}
	t.lft = make([]uint8, len(f.switches)*t.stride)
	for i := range t.lft {
		t.lft[i] = noPort
	}
	return t
}

// Port returns the output port of switch index s for lid, or -1 if the
// table has no entry.
func (t *Tables) Port(s, lid int) int {
	if lid < 0 || lid >= t.stride {
		return -1
	}
	p := t.lft[s*t.stride+lid]
	if p == noPort {
		return -1
	}
	return int(p)
}

// Set sets the output port of switch index s for lid (-1 clears it).
func (t *Tables) Set(s, lid, port int) {
	if port < 0 {
		port = noPort
	}
	t.lft[s*t.stride+lid] = uint8(port)
}

// row returns switch s's table.
func (t *Tables) row(s int) []uint8 { return t.lft[s*t.stride : (s+1)*t.stride] }

// Lanes returns the number of virtual lanes the tables use (1 when no lane
// table is attached).
func (t *Tables) Lanes() int { return t.numLanes }

// Lane returns the lane of the path from source switch index s to lid.
func (t *Tables) Lane(s, lid int) int {
	if t.lanes == nil || lid < 0 || lid >= t.stride {
		return 0
	}
	return int(t.lanes[s*t.stride+lid])
}

// setLanes attaches a lane table ([switch*stride+lid]) using n lanes.
func (t *Tables) setLanes(l []uint8, n int) {
	t.lanes, t.numLanes = l, n
	if n <= 1 {
		t.lanes, t.numLanes = nil, 1
	}
}

// HasLanes reports whether a lane table is attached.
func (t *Tables) HasLanes() bool { return t.lanes != nil }

// next returns the switch index that switch s forwards lid to, or one of
// the negative codes: atDest (the packet leaves the fabric here correctly),
// misdelivered (handed to a live end port that does not hold lid), hole
// (no entry, a dead or unconnected port).
func (t *Tables) next(s, lid int) int {
	p := t.Port(s, lid)
	f := t.F
	if p < 0 {
		return hole
	}
	osw, oterm := f.Owner(lid)
	if p == 0 {
		if osw == s {
			return atDest
		}
		return hole
	}
	v := int(f.switches[s])
	if p > f.G.NumPorts(v) {
		return hole
	}
	c := f.G.PortChannel(v, p)
	if c < 0 || !f.G.Up(c) {
		return hole
	}
	w := f.G.Dst(c)
	if ws := int(f.swIndex[w]); ws >= 0 {
		if f.G.NodeFailed(w) {
			return hole
		}
		return ws
	}
	if f.G.NodeFailed(w) {
		return hole
	}
	if oterm >= 0 {
		tm := &f.terms[oterm]
		if tm.Node == w && tm.Port == f.G.DstPort(c) {
			return atDest
		}
	}
	return misdelivered
}

const (
	atDest       = -1
	hole         = -2
	misdelivered = -3
)

// fillLocal sets the entries every engine shares: a switch's own LID goes
// to port 0 and the LID of each live end port goes out the port it is
// cabled to.
func fillLocal(t *Tables) {
	f := t.F
	for s := range f.switches {
		if !f.switchAlive(s) {
			continue
		}
		t.Set(s, int(f.swLID[s]), 0)
		for _, ti := range f.termsOf(s) {
			if f.termAlive(int(ti)) {
				tm := f.terms[ti]
				t.Set(s, tm.LID, tm.SwPort)
			}
		}
	}
}
