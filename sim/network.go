package sim

import (
	"fmt"
	"math"
	"strings"

	"github.com/icn-hpc/icn/internal/cdg"
	"github.com/icn-hpc/icn/topology"
)

const (
	fcNone = iota
	fcDateline
	fcBubble
)

const (
	dlBookSim = iota
	dlAhead
)

const (
	swWormhole = iota
	swVCT
	swSAF
)

// maxBufferFlits bounds the memory of all buffers (32 bytes per flit).
const maxBufferFlits = 1 << 25

// maxPorts bounds the ports of one router (the allocator uses 64-bit masks;
// one port is the terminal's).
const maxPorts = 64

// Network is the static part of a simulation: the router graph, port
// numbering, routing tables and traffic pattern. It is immutable once
// built and shared by all runs (also concurrent ones) on the same
// configuration.
type Network struct {
	g         *topology.Graph
	cfg       Config
	algo      *routingAlgo    // the routing's behaviour (registry entry)
	traffic   *trafficPattern // the traffic's behaviour (registry entry)
	fc        int
	dateline  int // dlBookSim or dlAhead
	sw        int
	V         int
	maxP      int
	classes   int  // VC classes used by the routing (dragonfly global-hop classes)
	oblivious bool // one option per head that does not change while it waits
	warnings  []string

	portStart []int32 // router r has global ports portStart[r] .. portStart[r+1]-1
	gpChan    []int32 // channel leaving through the port, -1 for the terminal port
	gpPeer    []int32 // port at the other end of the link, -1 for the terminal port
	gpNode    []int32 // router owning the port
	gpPeerN   []int32 // node at the other end, -1 for the terminal port
	gpGlobal  []bool  // dragonfly global link
	gpDir     []int8  // torus direction code of the channel, -1 if none
	localGP   []int32 // terminal port of a router, -1 if the node is no terminal

	terms  []int32 // terminal -> node
	termOf []int32 // node -> terminal, -1

	// coordinate routing
	nd       int
	dims     []int
	wrap     []bool
	coord    []int16 // nd coordinates per node (end nodes carry their switch's)
	dirPort  []int8  // 2*nd local ports per node, -1 if none
	direct   bool
	switchOf []int32 // switch of an end node (switch torus), else the node itself
	attach   []int8  // local port of switchOf[v] leading to end node v

	tab      *boundTable
	hop      *topology.HopTable
	forwards []bool
	ud       *updown
	group    []int32
	groups   int
	groupSw  [][]int32 // switches of each dragonfly group
	distG    []uint8   // router × group: hops to the nearest switch of the group
	hasG     []bool    // switch × group: the switch has a global link to the group

	pat   *pattern
	trace []traceMsg
}

// Graph returns the simulated network.
func (n *Network) Graph() *topology.Graph { return n.g }

// Warnings returns the notes collected while building (e.g. forced
// configurations whose deadlock freedom could not be shown).
func (n *Network) Warnings() []string { return n.warnings }

// Terminals returns the nodes that inject and receive traffic.
func (n *Network) Terminals() []int {
	out := make([]int, len(n.terms))
	for i, v := range n.terms {
		out[i] = int(v)
	}
	return out
}

// Config returns the configuration the network was built for.
func (n *Network) Config() Config { return n.cfg }

// NewNetwork prepares a simulation of g under cfg: it checks the routing
// against the topology, the VC count against what the routing needs to be
// deadlock-free (refusing unless cfg.Force), binds routing tables and
// traces, and builds the traffic pattern. needRate is false for runs that
// inject only explicit messages (traces, collectives).
func NewNetwork(g *topology.Graph, cfg Config, needRate bool) (*Network, error) {
	tr := trafficByName(cfg.Traffic) // nil: refused once the terminals are known
	if tr != nil && tr.replay {
		needRate = false
	}
	if err := cfg.check(needRate); err != nil {
		return nil, err
	}
	n := &Network{g: g, cfg: cfg, traffic: tr, V: cfg.VCs, maxP: cfg.MaxPacket(), classes: 1}
	if err := n.setModes(); err != nil {
		return nil, err
	}
	if err := n.buildPorts(); err != nil {
		return nil, err
	}
	if flits := float64(len(n.gpChan)) * float64(cfg.VCs) * float64(cfg.Buf); flits > maxBufferFlits {
		return nil, fmt.Errorf("%d ports × %d VCs × %d flits = %.3g buffered flits exceed the simulator's limit of %d (reduce --vcs or --buf)", len(n.gpChan), cfg.VCs, cfg.Buf, flits, maxBufferFlits)
	}
	if err := n.buildRouting(); err != nil {
		return nil, err
	}
	n.oblivious = !n.algo.adaptive
	if err := n.checkDeadlockFreedom(); err != nil {
		if !cfg.Force {
			return nil, err
		}
		n.warnings = append(n.warnings, "forced: "+err.Error())
	}
	subset := n.tab != nil
	pat, err := buildPattern(tr, &n.cfg, n.terms, g, subset)
	if err != nil {
		return nil, err
	}
	n.pat = pat
	if tr.replay {
		if err := n.bindTrace(); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// setModes translates the configuration's dateline rule and switching
// into the network's modes, resolves its routing in the registry, and
// checks that a routing table is given exactly when the routing takes one.
func (n *Network) setModes() error {
	cfg := &n.cfg
	if cfg.Dateline == DatelineAhead {
		n.dateline = dlAhead
	}
	switch cfg.Switching {
	case Wormhole:
		n.sw = swWormhole
	case VCT:
		n.sw = swVCT
	case SAF:
		n.sw = swSAF
	}
	algo, err := routingByName(cfg.Routing)
	if err != nil {
		return err
	}
	n.algo = algo
	if algo.table && cfg.Table == nil {
		return fmt.Errorf("routing %s needs a table file (--table FILE)", algo.name)
	}
	if !algo.table && cfg.Table != nil {
		return fmt.Errorf("--table is only used with --routing %s", RouteTable)
	}
	return nil
}

// bindTrace binds the trace to the network's terminals; every message must
// fit the buffers its switching and flow control need whole.
func (n *Network) bindTrace() error {
	cfg := &n.cfg
	tr, err := cfg.Trace.bind(n.g, n.termOf)
	if err != nil {
		return err
	}
	for _, m := range tr {
		if n.sw != swWormhole && int(m.size) > cfg.Buf {
			return fmt.Errorf("trace message of %d flits does not fit a %d-flit buffer under %s switching", m.size, cfg.Buf, cfg.Switching)
		}
		if n.fc == fcBubble && 2*int(m.size) > cfg.Buf {
			return fmt.Errorf("trace message of %d flits: bubble flow control needs --buf ≥ %d", m.size, 2*m.size)
		}
		n.maxP = max(n.maxP, int(m.size))
	}
	n.trace = tr
	return nil
}

func (n *Network) buildPorts() error {
	g := n.g
	R := g.NumNodes()
	n.termOf = make([]int32, R)
	for v := range n.termOf {
		n.termOf[v] = -1
	}
	n.direct = g.Direct()
	n.portStart = make([]int32, R+1)
	n.localGP = make([]int32, R)
	chanGP := make([]int32, g.NumChannels())
	for v := 0; v < R; v++ {
		n.portStart[v] = int32(len(n.gpChan))
		out := g.Out(v)
		isTerm := g.Kind(v) == topology.Endpoint && !g.NodeFailed(v)
		np := len(out)
		if isTerm {
			np++
		}
		if np > maxPorts {
			return fmt.Errorf("node %s has %d ports; the simulator supports routers of at most %d ports", g.NodeName(v), np, maxPorts)
		}
		for _, c := range out {
			chanGP[c] = int32(len(n.gpChan))
			n.gpChan = append(n.gpChan, c)
			n.gpNode = append(n.gpNode, int32(v))
		}
		n.localGP[v] = -1
		if isTerm {
			n.localGP[v] = int32(len(n.gpChan))
			n.gpChan = append(n.gpChan, -1)
			n.gpNode = append(n.gpNode, int32(v))
			n.termOf[v] = int32(len(n.terms))
			n.terms = append(n.terms, int32(v))
		}
	}
	n.portStart[R] = int32(len(n.gpChan))
	np := len(n.gpChan)
	n.gpPeer = make([]int32, np)
	n.gpPeerN = make([]int32, np)
	n.gpGlobal = make([]bool, np)
	n.gpDir = make([]int8, np)
	for gp, c := range n.gpChan {
		n.gpDir[gp] = -1
		if c < 0 {
			n.gpPeer[gp], n.gpPeerN[gp] = -1, -1
			continue
		}
		n.gpPeer[gp] = chanGP[topology.Reverse(int(c))]
		n.gpPeerN[gp] = int32(g.Dst(int(c)))
		n.gpGlobal[gp] = g.Link(topology.LinkOf(int(c))).Class == topology.Global
		if g.HasCoords() {
			if d, s := g.Dir(int(c)); d >= 0 {
				code := 2 * d
				if s < 0 {
					code++
				}
				n.gpDir[gp] = int8(code)
			}
		}
	}
	if len(n.terms) == 0 {
		return fmt.Errorf("network %s has no working end nodes to send traffic", g.Name())
	}
	return nil
}

// deg returns the number of network ports of router v (without the
// terminal port).
func (n *Network) deg(v int) int {
	d := int(n.portStart[v+1] - n.portStart[v])
	if n.localGP[v] >= 0 {
		d--
	}
	return d
}

// buildRouting prepares the routing: coordinates and ring flow control
// for the coordinate routings, then the routing's own build and its VC
// classes.
func (n *Network) buildRouting() error {
	cfg := &n.cfg
	if cfg.FlowControl == "" {
		cfg.FlowControl = Dateline
	}
	if n.algo.coords {
		if err := n.buildCoords(); err != nil {
			return err
		}
		n.setRingFlowControl()
	} else if cfg.FlowControl == Bubble {
		return fmt.Errorf("bubble flow control applies to torus rings; routing %s does not use it", cfg.Routing)
	}
	if err := n.algo.build(n); err != nil {
		return err
	}
	if n.algo.classes != nil {
		n.classes = n.algo.classes(n)
	}
	return nil
}

// refuseFaults is the build of the coordinate routings that cannot avoid
// failed links or nodes.
func refuseFaults(n *Network) error {
	if n.g.HasFaults() {
		return fmt.Errorf("routing %s cannot avoid failed links or nodes; use --routing table (with a table that avoids them), minhop or updown", n.cfg.Routing)
	}
	return nil
}

// setRingFlowControl chooses the flow control of torus rings (dateline
// classes or bubble) when the network has a ring of two or more nodes.
func (n *Network) setRingFlowControl() {
	anyWrap := false
	for i, w := range n.wrap {
		if w && n.dims[i] >= 2 {
			anyWrap = true
		}
	}
	if !anyWrap {
		return
	}
	if n.cfg.FlowControl == Bubble {
		n.fc = fcBubble
	} else {
		n.fc = fcDateline
	}
}

// bindTable binds the routing table to the torus; only its active nodes
// stay terminals.
func (n *Network) bindTable() error {
	g := n.g
	if !n.direct {
		return fmt.Errorf("routing tables are for direct tori; %s has switches", g.Name())
	}
	bt, err := n.cfg.Table.bind(g, func(v int, code uint8) int {
		p := n.dirPort[v*2*n.nd+int(code)]
		if p < 0 {
			return -1
		}
		return int(n.gpChan[int(n.portStart[v])+int(p)])
	})
	if err != nil {
		return err
	}
	n.tab = bt
	n.terms = n.terms[:0]
	for v := range n.termOf {
		n.termOf[v] = -1
	}
	for _, v := range bt.active {
		n.termOf[v] = int32(len(n.terms))
		n.terms = append(n.terms, v)
	}
	return nil
}

// buildMinhop prepares minimal adaptive routing: the hop counts and the
// dragonfly groups, if any.
func buildMinhop(n *Network) error {
	if err := n.buildHopRouting(); err != nil {
		return err
	}
	n.buildGroups()
	return nil
}

// minhopClasses: one VC class per global hop on a dragonfly (local,
// global, local: 2), else one.
func minhopClasses(n *Network) int {
	if n.groups > 1 {
		return 2
	}
	return 1
}

// buildUpDown prepares up*/down* routing: the hop counts and the
// up*/down* distance tables.
func buildUpDown(n *Network) error {
	if err := n.buildHopRouting(); err != nil {
		return err
	}
	ud, err := newUpDown(n)
	if err != nil {
		return err
	}
	n.ud = ud
	n.buildGroups()
	return nil
}

// buildDragonfly prepares Valiant and UGAL routing, which need a
// dragonfly of at least three groups (source, intermediate, destination).
func buildDragonfly(n *Network) error {
	if err := n.buildHopRouting(); err != nil {
		return err
	}
	n.buildGroups()
	if n.groups < 3 {
		return fmt.Errorf("routing %s needs a dragonfly with at least 3 groups; %s has %d", n.cfg.Routing, n.g.Name(), n.groups)
	}
	return nil
}

// dragonflyClasses: one VC class per global hop of a Valiant route (to
// the intermediate group and on to the destination's: 3).
func dragonflyClasses(*Network) int { return 3 }

// buildHopRouting prepares what the hop-count routings (minhop, updown,
// valiant, UGAL) share: forwarding nodes and the hop-count matrix, and
// checks that the terminals are connected.
func (n *Network) buildHopRouting() error {
	g := n.g
	n.forwards = make([]bool, g.NumNodes())
	for v := range n.forwards {
		n.forwards[v] = (n.direct || g.Kind(v) == topology.Switch) && !g.NodeFailed(v)
	}
	h, err := topology.MinHops(g, 1)
	if err != nil {
		return err
	}
	n.hop = h
	if len(n.terms) > 0 { // one source suffices to show connectivity of terminals
		t := n.terms[0]
		for _, u := range n.terms {
			if t != u && n.cost(int(t), int(u)) >= topology.Unreachable {
				return fmt.Errorf("%s cannot reach %s (the network is disconnected)", g.NodeName(int(t)), g.NodeName(int(u)))
			}
		}
	}
	return nil
}

// buildCoords prepares dimension-order routing on a torus, mesh or
// hypercube, with or without end nodes attached to switches.
func (n *Network) buildCoords() error {
	g := n.g
	if !g.HasCoords() {
		return fmt.Errorf("routing %s needs a torus, mesh or hypercube; %s has no coordinates (use minhop or updown)", n.cfg.Routing, g.Name())
	}
	n.dims = g.Dims()
	n.wrap = g.Wrap()
	n.nd = len(n.dims)
	if n.nd > 8 {
		return fmt.Errorf("routing %s supports at most 8 dimensions", n.cfg.Routing)
	}
	R := g.NumNodes()
	n.coord = make([]int16, R*n.nd)
	n.dirPort = make([]int8, R*2*n.nd)
	n.switchOf = make([]int32, R)
	n.attach = make([]int8, R)
	for i := range n.dirPort {
		n.dirPort[i] = -1
	}
	for v := 0; v < R; v++ {
		n.switchOf[v] = int32(v)
		n.attach[v] = -1
		for i := 0; i < n.nd; i++ {
			n.coord[v*n.nd+i] = int16(g.CoordAt(v, i))
		}
		for p := 0; p < n.deg(v); p++ {
			gp := int(n.portStart[v]) + p
			d := n.gpDir[gp]
			if d < 0 {
				continue
			}
			slot := &n.dirPort[v*2*n.nd+int(d)]
			if *slot >= 0 {
				return fmt.Errorf("routing %s needs one ring per dimension; %s has parallel links in direction %s (use minhop)", n.cfg.Routing, g.Name(), DirName(uint8(d)))
			}
			*slot = int8(p)
		}
	}
	if !n.direct {
		for v := 0; v < R; v++ {
			if g.Kind(v) != topology.Endpoint {
				continue
			}
			if n.deg(v) != 1 {
				return fmt.Errorf("end node %s must have exactly one link to its switch", g.NodeName(v))
			}
			sw := n.gpPeerN[n.portStart[v]]
			n.switchOf[v] = sw
			for p := 0; p < n.deg(int(sw)); p++ {
				if n.gpPeerN[int(n.portStart[sw])+p] == int32(v) {
					n.attach[v] = int8(p)
				}
			}
		}
	}
	return nil
}

// buildGroups records dragonfly groups (nodes' Group ≥ 0 and global links).
func (n *Network) buildGroups() {
	g := n.g
	hasGlobal := false
	for _, gl := range n.gpGlobal {
		hasGlobal = hasGlobal || gl
	}
	if !hasGlobal {
		return
	}
	n.group = make([]int32, g.NumNodes())
	for v := range n.group {
		n.group[v] = int32(g.Group(v))
		if n.group[v] < 0 {
			n.group = nil
			return
		}
		n.groups = max(n.groups, int(n.group[v])+1)
	}
	n.groupSw = make([][]int32, n.groups)
	for v := 0; v < g.NumNodes(); v++ {
		if n.forwards[v] {
			n.groupSw[n.group[v]] = append(n.groupSw[n.group[v]], int32(v))
		}
	}
	R := g.NumNodes()
	n.hasG = make([]bool, R*n.groups)
	for gp, gl := range n.gpGlobal {
		if gl && g.Up(int(n.gpChan[gp])) {
			n.hasG[int(n.gpNode[gp])*n.groups+int(n.group[n.gpPeerN[gp]])] = true
		}
	}
	n.distG = make([]uint8, R*n.groups)
	for v := 0; v < R; v++ {
		for grp := 0; grp < n.groups; grp++ {
			best := topology.Unreachable
			for _, s := range n.groupSw[grp] {
				best = min(best, n.cost(v, int(s)))
			}
			n.distG[v*n.groups+grp] = uint8(best)
		}
	}
}

// cost returns the minimal hops from node v to node d over forwarding
// nodes (Unreachable if none).
func (n *Network) cost(v, d int) int {
	if v == d {
		return 0
	}
	if n.forwards[v] {
		return n.hop.Hops(v, d)
	}
	best := topology.Unreachable
	for p := 0; p < n.deg(v); p++ {
		if c := n.beyond(int(n.portStart[v])+p, d); c < topology.Unreachable {
			best = min(best, c+1)
		}
	}
	return best
}

// checkDeadlockFreedom returns why the configuration is not known to be
// deadlock-free, or nil.
func (n *Network) checkDeadlockFreedom() error {
	if n.algo.deadlock == nil {
		return nil
	}
	return n.algo.deadlock(n)
}

// deadlockDimOrder: dimension- or direction-order routing on torus rings
// with dateline flow control needs the two dateline VC classes.
func deadlockDimOrder(n *Network) error {
	if n.fc == fcDateline && n.V < 2 {
		return fmt.Errorf("%s routing on torus rings with dateline flow control needs --vcs ≥ 2 (got %d); use --fc bubble --switching vct for one VC, or --force", n.cfg.Routing, n.V)
	}
	return nil
}

// deadlockDuato: Duato's adaptive routing needs its escape VCs (two
// dateline classes, or one) plus at least one adaptive VC.
func deadlockDuato(n *Network) error {
	need := 2
	if n.fc == fcDateline {
		need = 3
	}
	if n.V < need {
		return fmt.Errorf("%s routing needs --vcs ≥ %d here (escape VCs plus at least one adaptive VC), got %d; use --force to run anyway", n.cfg.Routing, need, n.V)
	}
	return nil
}

// deadlockMinhop: minimal routing needs a VC class per global hop and,
// off fat trees and dragonflies, an acyclic channel dependency graph.
func deadlockMinhop(n *Network) error {
	if n.V < n.classes {
		return fmt.Errorf("%s routing on a dragonfly needs --vcs ≥ %d (one VC class per global hop), got %d", n.cfg.Routing, n.classes, n.V)
	}
	return n.checkMinhop()
}

// deadlockDragonfly: Valiant and UGAL need a VC class per global hop.
func deadlockDragonfly(n *Network) error {
	if n.V < n.classes {
		return fmt.Errorf("%s routing needs --vcs ≥ %d (one VC class per global hop), got %d", n.cfg.Routing, n.classes, n.V)
	}
	return nil
}

// checkTable builds the channel dependency graph of the table's routes:
// with dateline flow control over channel×class, with bubble flow control
// over channels where dependencies along one ring are tolerated.
func (n *Network) checkTable() error {
	bt := n.tab
	if n.fc == fcDateline && n.V < 2 {
		return fmt.Errorf("table routing with dateline flow control needs --vcs ≥ 2 (got %d); use --fc bubble --switching vct, or --force", n.V)
	}
	C := n.g.NumChannels()
	dg := cdg.New(2 * C)
	for k := 0; k+1 < len(bt.start); k++ {
		ds := bt.dirs[bt.start[k]:bt.start[k+1]]
		cls := bt.cls[bt.start[k]:bt.start[k+1]]
		v := n.routeSrc(k)
		prev := int32(-1)
		for s, d := range ds {
			p := n.dirPort[v*2*n.nd+int(d)]
			gp := int(n.portStart[v]) + int(p)
			c := n.gpChan[gp]
			vert := c * 2
			if n.fc == fcDateline {
				vert += int32(cls[s])
			}
			if prev >= 0 {
				tag := cdg.Turn
				if ds[s-1] == d {
					tag = cdg.Straight
				}
				dg.Add(prev, vert, tag)
			}
			prev = vert
			v = int(n.gpPeerN[gp])
		}
	}
	cyc := dg.Deadlock(n.fc == fcBubble)
	verdict := ""
	if n.cfg.Table.DeadlockFree != nil && !*n.cfg.Table.DeadlockFree {
		verdict = "; the table file itself says deadlock_free: false"
	}
	if cyc != nil {
		names := make([]string, 0, len(cyc))
		for _, x := range cyc {
			names = append(names, n.g.ChannelName(int(x/2)))
		}
		fc := "dateline"
		if n.fc == fcBubble {
			fc = "bubble"
		}
		return fmt.Errorf("routing table (%s) is not deadlock-free under %s flow control: channel dependency cycle %s%s; use --force to simulate it anyway", n.cfg.Table.Rules, fc, strings.Join(names, " → "), verdict)
	}
	if verdict != "" {
		return fmt.Errorf("routing table: %s; use --force to simulate it anyway", verdict[2:])
	}
	return nil
}

// routeSrc returns the source node of table route k.
func (n *Network) routeSrc(k int) int { return n.cfg.Table.Routes[k].Src }

// checkMinhop verifies minimal routing on networks that are neither fat
// trees nor dragonflies by building its channel dependency graph over
// channel × class states; fat trees (every node has a level) and
// dragonflies with one VC class per global hop are deadlock-free by
// construction.
func (n *Network) checkMinhop() error {
	g := n.g
	fatTree := true
	for v := 0; v < g.NumNodes(); v++ {
		if g.Level(v) < 0 {
			fatTree = false
			break
		}
	}
	if fatTree && n.group == nil {
		return nil
	}
	if n.group != nil && n.classes >= 2 {
		return nil
	}
	C := g.NumChannels()
	work := float64(len(n.terms)) * float64(C) * float64(n.classes) * 8
	if work > 3e8 {
		return fmt.Errorf("cannot verify that minhop routing is deadlock-free on %s (too large to check); use --routing updown, or --force", g.Name())
	}
	cl := n.classes
	dg := cdg.New(C * cl)
	seen := make([]int32, C*cl)
	for i := range seen {
		seen[i] = -1
	}
	var stack []int32
	var cands []int32
	for ti, d := range n.terms {
		for _, s := range n.terms {
			if s == d {
				continue
			}
			for _, gp := range n.minPorts(int(s), int(d), cands[:0]) {
				st := n.gpChan[gp] * int32(cl)
				if seen[st] != int32(ti) {
					seen[st] = int32(ti)
					stack = append(stack, st)
				}
			}
		}
		for len(stack) > 0 {
			st := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			c, k := st/int32(cl), st%int32(cl)
			r := g.Dst(int(c))
			if r == int(d) {
				continue
			}
			cands = n.minPorts(r, int(d), cands[:0])
			for _, gp := range cands {
				k2 := k
				if n.gpGlobal[gp] && int(k2) < cl-1 {
					k2++
				}
				nst := n.gpChan[gp]*int32(cl) + k2
				dg.Add(st, nst, cdg.Turn)
				if seen[nst] != int32(ti) {
					seen[nst] = int32(ti)
					stack = append(stack, nst)
				}
			}
		}
	}
	if cyc := dg.Deadlock(false); cyc != nil {
		names := make([]string, 0, len(cyc))
		for _, x := range cyc {
			names = append(names, g.ChannelName(int(x)/cl))
		}
		return fmt.Errorf("minhop routing on %s is not deadlock-free with %d VC class(es): dependency cycle %s; use --routing updown, or --force", g.Name(), cl, strings.Join(names, " → "))
	}
	return nil
}

// beyond returns the hops to d from the far end of global port gp, 0 if
// the far end is d, Unreachable if the link is down or the far end does
// not forward.
func (n *Network) beyond(gp, d int) int {
	if !n.g.Up(int(n.gpChan[gp])) {
		return topology.Unreachable
	}
	w := int(n.gpPeerN[gp])
	switch {
	case w == d:
		return 0
	case n.forwards[w]:
		return n.hop.Hops(w, d)
	}
	return topology.Unreachable
}

// minPorts appends the global ports of router r on minimal paths to d.
func (n *Network) minPorts(r, d int, buf []int32) []int32 {
	best := math.MaxInt
	start := len(buf)
	for p := 0; p < n.deg(r); p++ {
		gp := int(n.portStart[r]) + p
		c := n.beyond(gp, d)
		if c >= topology.Unreachable {
			continue
		}
		if c < best {
			best = c
			buf = buf[:start]
		}
		if c == best {
			buf = append(buf, int32(gp))
		}
	}
	return buf
}

// updown holds up*/down* distance tables per destination terminal.
type updown struct {
	up   []bool  // per global port: the channel goes up
	dist []uint8 // terminal × node: up*/down* hops
	down []uint8 // terminal × node: down-only hops
	R    int
}

func newUpDown(n *Network) (*updown, error) {
	g := n.g
	R := g.NumNodes()
	T := len(n.terms)
	if float64(T)*float64(R) > 2e8 {
		return nil, fmt.Errorf("up*/down* tables for %d terminals × %d nodes are too large", T, R)
	}
	root := updownRoot(n)
	if root < 0 {
		return nil, fmt.Errorf("no forwarding node for up*/down* routing")
	}
	lvl := upLevels(n, root)
	ud := &updown{up: make([]bool, len(n.gpChan)), R: R, dist: make([]uint8, T*R), down: make([]uint8, T*R)}
	isUp := func(u, w int) bool { return lvl[w] < lvl[u] || (lvl[w] == lvl[u] && w < u) }
	for gp, c := range n.gpChan {
		if c >= 0 {
			ud.up[gp] = isUp(int(n.gpNode[gp]), int(n.gpPeerN[gp]))
		}
	}
	order := levelOrder(lvl)
	for v := 0; v < R; v++ {
		if lvl[v] < 0 && n.termOf[v] >= 0 {
			return nil, fmt.Errorf("up*/down*: %s is not connected to the root %s", g.NodeName(v), g.NodeName(root))
		}
	}
	var queue []int32
	for t, dNode := range n.terms {
		queue = ud.downDistances(n, t, dNode, queue)
		ud.upDownDistances(n, t, dNode, order)
		dist := ud.dist[t*R : (t+1)*R]
		for _, s := range n.terms {
			if dist[s] == topology.Unreachable {
				return nil, fmt.Errorf("up*/down* routing cannot reach %s from %s", g.NodeName(int(dNode)), g.NodeName(int(s)))
			}
		}
	}
	return ud, nil
}

// updownRoot is the root of the up*/down* spanning tree: the highest-level
// switch (fat trees), else the lowest-id forwarding node; -1 if no node
// forwards.
func updownRoot(n *Network) int {
	root, bestLvl := -1, -2
	for v := 0; v < n.g.NumNodes(); v++ {
		if !n.forwards[v] {
			continue
		}
		if l := n.g.Level(v); l > bestLvl {
			root, bestLvl = v, l
		}
	}
	return root
}

// upLevels is every node's breadth-first distance from root over working
// links, passing only through forwarding nodes (-1: not reached).
func upLevels(n *Network, root int) []int32 {
	g := n.g
	lvl := make([]int32, g.NumNodes())
	for v := range lvl {
		lvl[v] = -1
	}
	lvl[root] = 0
	queue := []int32{int32(root)}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		if int(v) != root && !n.forwards[v] {
			continue
		}
		for _, c := range g.Out(int(v)) {
			if !g.Up(int(c)) {
				continue
			}
			w := g.Dst(int(c))
			if lvl[w] < 0 {
				lvl[w] = lvl[v] + 1
				queue = append(queue, int32(w))
			}
		}
	}
	return lvl
}

// levelOrder lists the reached nodes in (level, id) order: up channels lead
// to earlier nodes.
func levelOrder(lvl []int32) []int32 {
	order := make([]int32, 0, len(lvl))
	for l := int32(0); ; l++ {
		found := false
		for v := range lvl {
			if lvl[v] == l {
				order = append(order, int32(v))
				found = true
			}
		}
		if !found {
			return order
		}
	}
}

// downDistances fills ud.down for terminal t at node dNode: the hops to it
// over down channels only, by breadth-first search backwards from dNode.
// queue is scratch space, returned for reuse.
func (ud *updown) downDistances(n *Network, t int, dNode int32, queue []int32) []int32 {
	R := ud.R
	dist := ud.dist[t*R : (t+1)*R]
	down := ud.down[t*R : (t+1)*R]
	for v := range down {
		down[v], dist[v] = topology.Unreachable, topology.Unreachable
	}
	down[dNode] = 0
	queue = append(queue[:0], dNode)
	for len(queue) > 0 {
		w := queue[0]
		queue = queue[1:]
		if w != dNode && !n.forwards[w] {
			continue
		}
		for p := 0; p < n.deg(int(w)); p++ {
			gp := int(n.portStart[w]) + p
			if !n.g.Up(int(n.gpChan[gp])) || !ud.up[gp] {
				continue // u→w is down iff w→u is up
			}
			u := n.gpPeerN[gp]
			if down[u] == topology.Unreachable && down[w]+1 < topology.Unreachable {
				down[u] = down[w] + 1
				queue = append(queue, u)
			}
		}
	}
	return queue
}

// upDownDistances fills ud.dist for terminal t at node dNode: the shortest
// legal up*/down* path, taking nodes in level order so that every up
// neighbour is final before it is used.
func (ud *updown) upDownDistances(n *Network, t int, dNode int32, order []int32) {
	R := ud.R
	dist := ud.dist[t*R : (t+1)*R]
	down := ud.down[t*R : (t+1)*R]
	for _, v := range order {
		best := int(down[v])
		for p := 0; p < n.deg(int(v)); p++ {
			gp := int(n.portStart[v]) + p
			if !n.g.Up(int(n.gpChan[gp])) || !ud.up[gp] {
				continue
			}
			u := n.gpPeerN[gp]
			if u != dNode && !n.forwards[u] {
				continue
			}
			if x := int(dist[u]) + 1; x < best {
				best = x
			}
		}
		if best < topology.Unreachable {
			dist[v] = uint8(best)
		}
	}
}

// dfPorts appends the ports of router r on dragonfly minimal routes to
// group tg (at most one global hop): from an end node its uplink; from a
// switch its global links to tg, else local links to switches of its group
// that have one.
func (n *Network) dfPorts(r, tg int, buf []int32) []int32 {
	start := len(buf)
	base := int(n.portStart[r])
	for p := 0; p < n.deg(r); p++ {
		gp := base + p
		if !n.g.Up(int(n.gpChan[gp])) {
			continue
		}
		w := int(n.gpPeerN[gp])
		if !n.forwards[r] {
			if n.forwards[w] {
				buf = append(buf, int32(gp))
			}
			continue
		}
		if n.gpGlobal[gp] && int(n.group[w]) == tg {
			buf = append(buf, int32(gp))
		}
	}
	if len(buf) > start || !n.forwards[r] {
		return buf
	}
	for p := 0; p < n.deg(r); p++ {
		gp := base + p
		w := int(n.gpPeerN[gp])
		if n.g.Up(int(n.gpChan[gp])) && !n.gpGlobal[gp] && n.forwards[w] && n.group[w] == n.group[r] && n.hasG[w*n.groups+tg] {
			buf = append(buf, int32(gp))
		}
	}
	return buf
}
