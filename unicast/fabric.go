package unicast

import (
	"fmt"

	"github.com/icn-hpc/icn/topology"
)

// MaxLID is the largest unicast LID (0xBFFF); LIDs above it are multicast.
const MaxLID = topology.MaxUnicastLID

// MaxPort is the largest switch port an LFT entry can name (255 means "no
// route" in an LFT).
const MaxPort = 254

const noPort = 0xFF

// Terminal is one end-node port that holds a LID: the sources and
// destinations of data traffic.
type Terminal struct {
	Node   int    // end node id in the graph
	Port   int    // its port
	LID    int    // LID of the port (LMC 0)
	Switch int    // index of the switch the port is cabled to, -1 if the peer is not a switch
	SwPort int    // port of that switch
	GUID   uint64 // port GUID (from the fabric file when known)
}

// owner says who holds a LID: a switch (sw >= 0) or a terminal (term >= 0).
type owner struct {
	sw, term int32
}

// Fabric is the LID view of a switched network: switches indexed densely,
// one LID per switch (port 0) and per cabled end-node port.
type Fabric struct {
	G        *topology.Graph
	switches []int32 // switch index -> node id
	swIndex  []int32 // node id -> switch index, -1 for end nodes
	swLID    []uint16
	terms    []Terminal
	owners   []owner // indexed by LID, len maxLID+1
	maxLID   int
	// GUIDNote is set when the fabric file gave no GUIDs (ibsim's assignment
	// is used): tables for it are installed on a real fabric for the wrong
	// hosts.
	GUIDNote string
	// termsAt lists the terminals cabled to each switch (CSR).
	termStart []int32
	termAt    []int32
}

// lidPlan fixes some LIDs before the deterministic assignment fills the rest.
type lidPlan struct {
	sw   map[int]int     // switch node id -> LID
	port map[portKey]int // (end node name, port) -> LID
	src  map[int]string  // LID -> where it came from (for messages)
}

type portKey struct {
	node string
	port int
}

// NewFabric assigns LIDs to g. LIDs the fabric carries (imported files:
// `lid N` annotations kept by the topology parser and, when ann is not nil,
// the per-port annotations of an ibnetdiscover/ibsim file) are honoured;
// the rest are assigned deterministically: switches, then end-node ports in
// node-id and port order, each taking the smallest free LID from 1.
// Failures do not change the assignment.
func NewFabric(g *topology.Graph, ann *Annotations) (*Fabric, error) {
	plan := &lidPlan{sw: map[int]int{}, port: map[portKey]int{}, src: map[int]string{}}
	for v := 0; v < g.NumNodes(); v++ {
		if g.Kind(v) == topology.Switch && g.LID(v) != 0 {
			plan.sw[v] = g.LID(v)
		}
	}
	if ann != nil {
		for k, a := range ann.ports {
			v := g.NodeByName(k.node)
			if v < 0 || g.Kind(v) != topology.Endpoint || k.port < 1 || k.port > g.NumPorts(v) {
				continue
			}
			if a.lid != 0 {
				plan.port[k] = a.lid
				plan.src[a.lid] = fmt.Sprintf("%s:%d", ann.name, a.line)
			}
		}
	}
	for v := 0; v < g.NumNodes(); v++ {
		if g.Kind(v) != topology.Endpoint || g.LID(v) == 0 {
			continue
		}
		annotated := false
		for p := 1; p <= g.NumPorts(v); p++ {
			if _, ok := plan.port[portKey{g.NodeName(v), p}]; ok {
				annotated = true
			}
		}
		if annotated {
			continue
		}
		// The topology parser keeps one LID per end node: give it to the
		// lowest port cabled to a switch.
		for p := 1; p <= g.NumPorts(v); p++ {
			c := g.PortChannel(v, p)
			if c >= 0 && g.Kind(g.Dst(c)) == topology.Switch {
				plan.port[portKey{g.NodeName(v), p}] = g.LID(v)
				break
			}
		}
	}
	f, err := buildFabric(g, plan)
	if err == nil && ann != nil && !ann.guids {
		f.GUIDNote = fmt.Sprintf("%s gives no GUIDs: switch and port GUIDs follow ibsim's assignment (switches from 0x%x, adapters from 0x%x), which only a simulated fabric has", ann.name, 0x200000, 0x100000)
	}
	return f, err
}

func buildFabric(g *topology.Graph, plan *lidPlan) (*Fabric, error) {
	f := &Fabric{G: g}
	if err := f.indexSwitches(); err != nil {
		return nil, err
	}
	f.collectTerminals()
	used := map[int]string{}
	if err := f.claimPlanned(plan, used); err != nil {
		return nil, err
	}
	if err := f.assignFree(used); err != nil {
		return nil, err
	}
	for lid := range used {
		f.maxLID = max(f.maxLID, lid)
	}
	f.indexOwners()
	return f, nil
}

// indexSwitches numbers the switches densely in node order.
func (f *Fabric) indexSwitches() error {
	g := f.G
	f.swIndex = make([]int32, g.NumNodes())
	for v := range f.swIndex {
		f.swIndex[v] = -1
		if g.Kind(v) == topology.Switch {
			if g.NumPorts(v) > MaxPort {
				return fmt.Errorf("switch %s has %d ports; an LFT names ports up to %d", g.NodeName(v), g.NumPorts(v), MaxPort)
			}
			f.swIndex[v] = int32(len(f.switches))
			f.switches = append(f.switches, int32(v))
		}
	}
	if len(f.switches) == 0 {
		return fmt.Errorf("%s has no switches: unicast engines route switched fabrics (for a torus or mesh use :endpoints=E)", g.Name())
	}
	return nil
}

// collectTerminals lists the end-node ports cabled to a switch, in node
// and port order, with their port GUIDs.
func (f *Fabric) collectTerminals() {
	g := f.G
	for v := 0; v < g.NumNodes(); v++ {
		if g.Kind(v) != topology.Endpoint {
			continue
		}
		for p := 1; p <= g.NumPorts(v); p++ {
			c := g.PortChannel(v, p)
			if c < 0 {
				continue
			}
			peer := g.Dst(c)
			if g.Kind(peer) != topology.Switch {
				continue
			}
			f.terms = append(f.terms, Terminal{Node: v, Port: p, Switch: int(f.swIndex[peer]), SwPort: g.DstPort(c), GUID: g.PortGUID(v, p)})
		}
	}
}

// claimPlanned gives the planned LIDs; duplicates are an error.
func (f *Fabric) claimPlanned(plan *lidPlan, used map[int]string) error {
	g := f.G
	claim := func(lid int, who string) error {
		if lid < 1 || lid > MaxLID {
			return fmt.Errorf("LID %d of %s is outside the unicast range 1..%d", lid, who, MaxLID)
		}
		if prev, dup := used[lid]; dup {
			where := ""
			if s := plan.src[lid]; s != "" {
				where = " (" + s + ")"
			}
			return fmt.Errorf("LID %d is given to both %s and %s%s", lid, prev, who, where)
		}
		used[lid] = who
		return nil
	}
	f.swLID = make([]uint16, len(f.switches))
	for i, v := range f.switches {
		if lid, ok := plan.sw[int(v)]; ok {
			if err := claim(lid, "switch "+g.NodeName(int(v))); err != nil {
				return err
			}
			f.swLID[i] = uint16(lid)
		}
	}
	for i := range f.terms {
		t := &f.terms[i]
		if lid, ok := plan.port[portKey{g.NodeName(t.Node), t.Port}]; ok {
			if err := claim(lid, fmt.Sprintf("%s[%d]", g.NodeName(t.Node), t.Port)); err != nil {
				return err
			}
			t.LID = lid
		}
	}
	return nil
}

// assignFree gives the smallest free LIDs to the switches, then the end
// ports, still without one.
func (f *Fabric) assignFree(used map[int]string) error {
	next := 1
	fresh := func() (int, error) {
		for used[next] != "" {
			next++
		}
		if next > MaxLID {
			return 0, fmt.Errorf("%s needs more than %d LIDs", f.G.Name(), MaxLID)
		}
		used[next] = "assigned"
		return next, nil
	}
	for i := range f.switches {
		if f.swLID[i] == 0 {
			lid, err := fresh()
			if err != nil {
				return err
			}
			f.swLID[i] = uint16(lid)
		}
	}
	for i := range f.terms {
		if f.terms[i].LID == 0 {
			lid, err := fresh()
			if err != nil {
				return err
			}
			f.terms[i].LID = lid
		}
	}
	return nil
}

// indexOwners builds the LID → holder table and the terminals per switch.
func (f *Fabric) indexOwners() {
	f.owners = make([]owner, f.maxLID+1)
	for i := range f.owners {
		f.owners[i] = owner{-1, -1}
	}
	for i, lid := range f.swLID {
		f.owners[lid].sw = int32(i)
	}
	for i, t := range f.terms {
		f.owners[t.LID].term = int32(i)
	}
	f.termStart = make([]int32, len(f.switches)+1)
	for _, t := range f.terms {
		f.termStart[t.Switch+1]++
	}
	for i := range f.switches {
		f.termStart[i+1] += f.termStart[i]
	}
	f.termAt = make([]int32, len(f.terms))
	fill := append([]int32(nil), f.termStart[:len(f.switches)]...)
	for i, t := range f.terms {
		f.termAt[fill[t.Switch]] = int32(i)
		fill[t.Switch]++
	}
}

// NumSwitches returns the number of switches.
func (f *Fabric) NumSwitches() int { return len(f.switches) }

// Switch returns the node id of switch index i.
func (f *Fabric) Switch(i int) int { return int(f.switches[i]) }

// SwitchIndex returns the switch index of node v, or -1.
func (f *Fabric) SwitchIndex(v int) int { return int(f.swIndex[v]) }

// SwitchLID returns the LID of switch index i.
func (f *Fabric) SwitchLID(i int) int { return int(f.swLID[i]) }

// Terminals returns the LID-holding end-node ports; the caller must not
// modify the slice.
func (f *Fabric) Terminals() []Terminal { return f.terms }

// MaxLIDInUse returns the largest LID assigned.
func (f *Fabric) MaxLIDInUse() int { return f.maxLID }

// Owner describes the holder of a LID: a switch index (sw >= 0) or a
// terminal index (term >= 0); both are -1 for an unused LID.
func (f *Fabric) Owner(lid int) (sw, term int) {
	if lid < 0 || lid > f.maxLID {
		return -1, -1
	}
	o := f.owners[lid]
	return int(o.sw), int(o.term)
}

// PortLID returns the LID of port p of node v: the switch's LID for a
// switch (any port), the end port's LID for an end node, 0 if none.
func (f *Fabric) PortLID(v, p int) int {
	if s := f.swIndex[v]; s >= 0 {
		return int(f.swLID[s])
	}
	return f.portLID(v, p)
}

// LIDName names the holder of a LID ("node[port]" for end ports, the
// switch name for switches).
func (f *Fabric) LIDName(lid int) string {
	sw, term := f.Owner(lid)
	switch {
	case sw >= 0:
		return f.G.NodeName(f.Switch(sw))
	case term >= 0:
		t := f.terms[term]
		return fmt.Sprintf("%s[%d]", f.G.NodeName(t.Node), t.Port)
	}
	return fmt.Sprintf("LID %d", lid)
}

// termsOf returns the terminals cabled to switch index s.
func (f *Fabric) termsOf(s int) []int32 { return f.termAt[f.termStart[s]:f.termStart[s+1]] }

// switchAlive reports whether switch index s is in service.
func (f *Fabric) switchAlive(s int) bool { return !f.G.NodeFailed(int(f.switches[s])) }

// termAlive reports whether terminal i is in the subnet: its node is alive,
// its cable is up and it hangs off a live switch.
func (f *Fabric) termAlive(i int) bool {
	t := &f.terms[i]
	if t.Switch < 0 || f.G.NodeFailed(t.Node) || !f.switchAlive(t.Switch) {
		return false
	}
	c := f.G.PortChannel(t.Node, t.Port)
	return c >= 0 && f.G.Up(c)
}

// swNext returns the switch index reached from switch index s through port
// p when the link is up and leads to a live switch, else -1.
func (f *Fabric) swNext(s, p int) int {
	c := f.G.PortChannel(int(f.switches[s]), p)
	if c < 0 || !f.G.Up(c) {
		return -1
	}
	return int(f.swIndex[f.G.Dst(c)])
}

// dest is a routing destination: a LID, the switch that delivers it and the
// port it leaves that switch through (0 for the switch's own LID).
type dest struct {
	lid   int
	sw    int // switch index, -1 if not deliverable
	port  int
	term  int // terminal index or -1
	alive bool
}

// dests lists all LIDs in use: terminals first (LID order), then switches
// (LID order). Data traffic goes to terminals, so engines that balance give
// them priority.
func (f *Fabric) dests() []dest {
	var out []dest
	for lid := 1; lid <= f.maxLID; lid++ {
		if o := f.owners[lid]; o.term >= 0 {
			t := f.terms[o.term]
			out = append(out, dest{lid: lid, sw: t.Switch, port: t.SwPort, term: int(o.term), alive: f.termAlive(int(o.term))})
		}
	}
	for lid := 1; lid <= f.maxLID; lid++ {
		if o := f.owners[lid]; o.sw >= 0 {
			out = append(out, dest{lid: lid, sw: int(o.sw), term: -1, alive: f.switchAlive(int(o.sw))})
		}
	}
	return out
}
