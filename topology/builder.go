package topology

import (
	"fmt"
	"math"
)

// Builder assembles a Graph. Add nodes, connect them, then call Build.
// Generators in this package and in later packages (designs, imported
// fabrics) all go through a Builder, so every Graph is validated the same way.
type Builder struct {
	name  string
	dims  []int
	wrap  []bool
	kinds []Kind
	names []string
	guids []uint64
	nport []uint16
	level []int8
	group []int32
	coord []int16
	lid   []uint16
	desc  []string // node descriptions, nil if no node has one
	links []Link
	pguid map[uint32]uint64
	used  map[uint64]bool // (node<<16 | port) already connected
	next  []uint16        // next free port per node for auto assignment

	failedLinks []int
	failedNodes []int
	shape       Shape
}

// SetShape records structural facts about the graph being built.
func (b *Builder) SetShape(s Shape) { b.shape = s }

// NewBuilder starts an empty graph with a name (usually the spec).
func NewBuilder(name string) *Builder {
	return &Builder{name: name, used: make(map[uint64]bool)}
}

// SetDims declares node coordinates with the given extents; wrap says per
// dimension whether it is a ring (torus) or a line (mesh).
func (b *Builder) SetDims(dims []int, wrap []bool) {
	b.dims = append([]int(nil), dims...)
	b.wrap = append([]bool(nil), wrap...)
}

// NodeOpts are optional node attributes.
type NodeOpts struct {
	GUID  uint64 // 0 = assign deterministically
	Ports int    // 0 = grow as links are added
	Level int    // fat-tree level; use -1 if unknown (NoLevel)
	Group int    // group id; -1 if none
	Coord []int  // required iff SetDims was called
	LID   int    // InfiniBand LID from an imported file, 0 = none
	Desc  string // node description from an imported file ("node-1 HCA-1"), "" = none
}

// NoLevel and NoGroup are the "unknown" values for NodeOpts.
const (
	NoLevel = -1
	NoGroup = -1
)

// AddNode adds a node and returns its id.
func (b *Builder) AddNode(kind Kind, name string, o NodeOpts) int {
	id := len(b.kinds)
	b.kinds = append(b.kinds, kind)
	b.names = append(b.names, name)
	guid := o.GUID
	if guid == 0 {
		guid = DefaultGUID(kind, id)
	}
	b.guids = append(b.guids, guid)
	b.nport = append(b.nport, uint16(o.Ports))
	b.next = append(b.next, 1)
	if o.LID != 0 && b.lid == nil {
		b.lid = make([]uint16, id)
	}
	if b.lid != nil {
		b.lid = append(b.lid, uint16(o.LID))
	}
	if o.Desc != "" && b.desc == nil {
		b.desc = make([]string, id)
	}
	if b.desc != nil {
		b.desc = append(b.desc, o.Desc)
	}
	b.level = append(b.level, int8(o.Level))
	b.group = append(b.group, int32(o.Group))
	for i := range b.dims {
		x := 0
		if i < len(o.Coord) {
			x = o.Coord[i]
		}
		b.coord = append(b.coord, int16(x))
	}
	return id
}

// SetPortGUID records the GUID an imported file gives port p of node v.
func (b *Builder) SetPortGUID(v, p int, guid uint64) {
	if b.pguid == nil {
		b.pguid = map[uint32]uint64{}
	}
	b.pguid[uint32(v)<<8|uint32(p)] = guid
}

// DefaultGUID is the GUID given to generated nodes: a Mellanox-style OUI
// prefix, a kind nibble and the node id. End nodes are 256 apart so that
// their port GUIDs (node GUID + port, see Graph.PortGUID) are unique.
func DefaultGUID(kind Kind, id int) uint64 {
	base := uint64(0x0002c90000000000)
	if kind == Switch {
		return base | 0x0000001000000000 + uint64(id) + 1
	}
	return base + (uint64(id)+1)<<8
}

// LinkOpts are optional link attributes.
type LinkOpts struct {
	Dim       int     // dimension/ring index, -1 for none
	Class     Class   // default Local
	Bandwidth float64 // 0 = 1
}

// Plain is LinkOpts for an undirected link with default attributes.
var Plain = LinkOpts{Dim: -1}

// Connect joins the next free ports of a and b and returns the link id.
func (b *Builder) Connect(a, c int, o LinkOpts) int {
	pa := b.freePort(a)
	b.used[key(a, pa)] = true
	pc := b.freePort(c)
	delete(b.used, key(a, pa))
	return b.ConnectPorts(a, pa, c, pc, o)
}

func (b *Builder) freePort(v int) int {
	p := int(b.next[v])
	for b.used[key(v, p)] {
		p++
	}
	return p
}

func key(v, p int) uint64 { return uint64(v)<<16 | uint64(p) }

// ConnectPorts joins port pa of a and port pc of c. Errors (port in use,
// bad node) are reported by Build so generators stay simple; the returned id
// is the link's id if Build succeeds.
func (b *Builder) ConnectPorts(a, pa, c, pc int, o LinkOpts) int {
	bw := o.Bandwidth
	if bw == 0 {
		bw = 1
	}
	id := len(b.links)
	b.links = append(b.links, Link{A: int32(a), B: int32(c), APort: uint16(pa), BPort: uint16(pc),
		Dim: int8(o.Dim), Class: o.Class, Bandwidth: float32(bw)})
	if a >= 0 && a < len(b.kinds) {
		b.used[key(a, pa)] = true
		if pa >= int(b.next[a]) {
			b.next[a] = uint16(pa + 1)
		}
	}
	if c >= 0 && c < len(b.kinds) {
		b.used[key(c, pc)] = true
		if pc >= int(b.next[c]) {
			b.next[c] = uint16(pc + 1)
		}
	}
	return id
}

// NumNodes returns the number of nodes added so far.
func (b *Builder) NumNodes() int { return len(b.kinds) }

// FailLink marks a link failed in the built graph.
func (b *Builder) FailLink(l int) { b.failedLinks = append(b.failedLinks, l) }

// FailNode marks a node failed in the built graph.
func (b *Builder) FailNode(v int) { b.failedNodes = append(b.failedNodes, v) }

// Limits of the representation.
const (
	MaxNodes = math.MaxInt32 / 4
	MaxPorts = math.MaxUint16 - 1
)

// Build validates the graph and returns it.
func (b *Builder) Build() (*Graph, error) {
	if err := b.checkSize(); err != nil {
		return nil, err
	}
	g := &Graph{
		name: b.name, dims: b.dims, wrap: b.wrap, kinds: b.kinds, names: b.names,
		guids: b.guids, level: b.level, group: b.group, coord: b.coord, lid: b.lid, desc: b.desc, links: b.links, shape: b.shape, portGUID: b.pguid,
	}
	steps := []func(*Graph) error{b.countPorts, b.indexPorts, b.indexNames, b.checkGUIDs, b.indexCoords}
	for _, step := range steps {
		if err := step(g); err != nil {
			return nil, err
		}
	}
	ff, err := g.WithFaults(b.failedLinks, b.failedNodes)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.name, err)
	}
	return ff, nil
}

// checkSize refuses empty graphs and graphs beyond the node and link limits.
func (b *Builder) checkSize() error {
	n := len(b.kinds)
	if n == 0 {
		return fmt.Errorf("%s: graph has no nodes", b.name)
	}
	if n > MaxNodes {
		return fmt.Errorf("%s: %d nodes exceeds the limit %d", b.name, n, MaxNodes)
	}
	if len(b.links) > math.MaxInt32/2 {
		return fmt.Errorf("%s: too many links", b.name)
	}
	return nil
}

// linkEnds lists the two (node, port) ends of a link, A first.
func linkEnds(lk Link) [2]struct {
	v int32
	p uint16
} {
	return [2]struct {
		v int32
		p uint16
	}{{lk.A, lk.APort}, {lk.B, lk.BPort}}
}

// countPorts checks every link's ends and sets each node's port count to
// the declared count, or the highest port a link uses if none was declared.
func (b *Builder) countPorts(g *Graph) error {
	n := len(b.kinds)
	g.nport = make([]uint16, n)
	copy(g.nport, b.nport)
	for l, lk := range b.links {
		if lk.A < 0 || int(lk.A) >= n || lk.B < 0 || int(lk.B) >= n {
			return fmt.Errorf("%s: link %d joins unknown node", b.name, l)
		}
		if lk.A == lk.B && lk.APort == lk.BPort {
			return fmt.Errorf("%s: link %d connects port %d of %q to itself", b.name, l, lk.APort, b.names[lk.A])
		}
		if lk.APort == 0 || lk.BPort == 0 || lk.APort > MaxPorts || lk.BPort > MaxPorts {
			return fmt.Errorf("%s: link %d uses port 0 or a port beyond %d", b.name, l, MaxPorts)
		}
		for _, e := range linkEnds(lk) {
			if b.nport[e.v] != 0 && e.p > b.nport[e.v] {
				return fmt.Errorf("%s: node %q has %d ports but link %d uses port %d", b.name, b.names[e.v], b.nport[e.v], l, e.p)
			}
			if e.p > g.nport[e.v] {
				g.nport[e.v] = e.p
			}
		}
	}
	return nil
}

// indexPorts builds the port → channel table and the compressed list of
// each node's outgoing channels in port order, refusing a port used twice.
func (b *Builder) indexPorts(g *Graph) error {
	n := len(b.kinds)
	g.portBase = make([]int32, n+1)
	for v := 0; v < n; v++ {
		g.portBase[v+1] = g.portBase[v] + int32(g.nport[v])
	}
	g.portChan = make([]int32, g.portBase[n])
	for i := range g.portChan {
		g.portChan[i] = -1
	}
	g.outStart = make([]int32, n+1)
	for l, lk := range b.links {
		for dir, e := range linkEnds(lk) {
			slot := &g.portChan[g.portBase[e.v]+int32(e.p)-1]
			if *slot >= 0 {
				return fmt.Errorf("%s: port %d of %q is used by two links", b.name, e.p, b.names[e.v])
			}
			*slot = int32(2*l + dir)
			g.outStart[e.v+1]++
		}
	}
	for v := 0; v < n; v++ {
		g.outStart[v+1] += g.outStart[v]
	}
	g.outChan = make([]int32, 0, 2*len(b.links))
	for v := 0; v < n; v++ {
		for _, c := range g.portChan[g.portBase[v]:g.portBase[v+1]] {
			if c >= 0 {
				g.outChan = append(g.outChan, c)
			}
		}
	}
	return nil
}

// indexNames maps names to nodes, refusing empty and duplicate names.
func (b *Builder) indexNames(g *Graph) error {
	g.byName = make(map[string]int32, len(b.names))
	for v, name := range b.names {
		if name == "" {
			return fmt.Errorf("%s: node %d has an empty name", b.name, v)
		}
		if w, dup := g.byName[name]; dup {
			return fmt.Errorf("%s: nodes %d and %d share the name %q", b.name, w, v, name)
		}
		g.byName[name] = int32(v)
	}
	return nil
}

// checkGUIDs refuses two nodes with the same GUID.
func (b *Builder) checkGUIDs(*Graph) error {
	seenGUID := make(map[uint64]int, len(b.kinds))
	for v, guid := range b.guids {
		if w, dup := seenGUID[guid]; dup {
			return fmt.Errorf("%s: nodes %q and %q share GUID %#016x", b.name, b.names[w], b.names[v], guid)
		}
		seenGUID[guid] = v
	}
	return nil
}

// indexCoords maps coordinates to nodes in a graph with dimensions; where
// endpoints share their switch's coordinates, the switch owns the key.
func (b *Builder) indexCoords(g *Graph) error {
	if len(b.dims) == 0 {
		return nil
	}
	if len(b.wrap) != len(b.dims) {
		return fmt.Errorf("%s: wrap flags do not match dimensions", b.name)
	}
	g.byCoord = make(map[string]int32)
	nd := len(b.dims)
	c := make([]int, nd)
	for v := range b.kinds {
		for i := range c {
			c[i] = int(b.coord[v*nd+i])
			if c[i] < 0 || c[i] >= b.dims[i] {
				return fmt.Errorf("%s: node %q coordinate %d out of range", b.name, b.names[v], c[i])
			}
		}
		k := coordKey(c)
		if w, dup := g.byCoord[k]; dup {
			// Endpoints of a switch torus share their switch's
			// coordinates; the switch (or the first node) owns the key.
			if g.kinds[w] == Switch || g.kinds[v] != Switch {
				continue
			}
		}
		g.byCoord[k] = int32(v)
	}
	return nil
}
