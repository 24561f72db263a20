package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/internal/bitset"
)

// Kind tells what a node is.
type Kind uint8

const (
	// Endpoint is a processor / host channel adapter. In a direct network
	// (torus, mesh, hypercube, ...) endpoints also forward traffic.
	Endpoint Kind = iota
	// Switch forwards traffic and has no processor.
	Switch
)

func (k Kind) String() string {
	if k == Switch {
		return "switch"
	}
	return "endpoint"
}

// ParseKind is the inverse of Kind.String (also accepts IB words).
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "endpoint", "ca", "hca", "host", "terminal":
		return Endpoint, nil
	case "switch", "sw":
		return Switch, nil
	}
	return 0, fmt.Errorf("unknown node kind %q (want endpoint or switch)", s)
}

// Class labels a link (e.g. dragonfly local vs global cables).
type Class uint8

const (
	Local  Class = iota // inside a group / chassis (default)
	Global              // between dragonfly groups or supernodes
	Access              // endpoint to its switch
)

var classNames = [...]string{"local", "global", "access"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class" + strconv.Itoa(int(c))
}

// ParseClass is the inverse of Class.String.
func ParseClass(s string) (Class, error) {
	for i, n := range classNames {
		if s == n {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("unknown link class %q (want local, global or access)", s)
}

// Link is one duplex cable between port APort of node A and port BPort of
// node B. Channel 2*l goes A->B, channel 2*l+1 goes B->A.
//
// For coordinate networks Dim >= 0 names the dimension (torus/mesh) or ring
// (multiring) the link belongs to and A->B is the positive direction; Dim is
// -1 for links without a direction.
type Link struct {
	A, B         int32
	APort, BPort uint16
	Dim          int8
	Class        Class
	Bandwidth    float32 // relative bandwidth, 1 = one flit per cycle
}

// Graph is an immutable network: nodes with numbered ports joined by duplex
// links, plus a set of failed links and nodes. Node ids are 0..NumNodes()-1,
// link ids 0..NumLinks()-1, channel ids 0..2*NumLinks()-1.
//
// Ports are numbered from 1 (port 0 is the InfiniBand switch management
// port and never carries a link). The structure is stored in flat slices so
// that 100 000 nodes and a million channels fit comfortably in memory.
// Graphs are safe for concurrent reads; WithFaults returns a view that shares
// the structure.
type Graph struct {
	name  string
	dims  []int  // coordinate extents, nil if the graph has no coordinates
	wrap  []bool // per dimension: true for torus rings, false for mesh lines
	kinds []Kind
	names []string
	guids []uint64
	nport []uint16 // number of ports per node
	level []int8   // fat-tree level (0 = endpoints), -1 unknown
	group []int32  // dragonfly group / supernode, -1 unknown
	coord []int16  // len(dims) entries per node, empty if no coordinates
	lid   []uint16 // InfiniBand LID per node from an imported file, nil if none
	desc  []string // node description per node from an imported file, nil if none
	// portGUID holds the port GUIDs an imported file gives, keyed by
	// node<<8 | port; nil if none (then PortGUID applies the default rule).
	portGUID map[uint32]uint64
	links    []Link

	outStart []int32 // CSR of outgoing channels, sorted by source port
	outChan  []int32
	portBase []int32 // index into portChan for node v: portBase[v] + port-1
	portChan []int32 // channel leaving node via port, -1 if unconnected

	byName  map[string]int32
	byCoord map[string]int32 // coordinate key -> node (for coordinate graphs)

	failedLinks bitset.Set
	failedNodes bitset.Set

	shape Shape // what the generator knows about the structure
}

// Shape records structural facts a generator knows, used for closed-form
// metrics and symmetry shortcuts. The zero value means "unknown".
type Shape struct {
	// Family is "torus", "mesh", "hypercube", "complete", "star", "tree"
	// for plain instances of those families (one ring per dimension, no
	// end nodes), "mixed" for a plain torus some of whose dimensions are
	// meshes (Graph.Wrap says which), else "". A torus whose dimensions
	// are all meshes is a "mesh".
	Family string
	// VertexTransitive is true when every node looks the same (tori,
	// hypercubes, complete graphs, multirings): one BFS gives all
	// distances and edge connectivity equals the degree (Mader).
	VertexTransitive bool
}

// Shape returns what the generator recorded about g's structure.
func (g *Graph) Shape() Shape { return g.shape }

// Name returns the spec or description the graph was built from.
func (g *Graph) Name() string { return g.name }

// NumNodes returns the number of nodes.
func (g *Graph) NumNodes() int { return len(g.kinds) }

// NumLinks returns the number of duplex links.
func (g *Graph) NumLinks() int { return len(g.links) }

// NumChannels returns the number of directed channels (2 per link).
func (g *Graph) NumChannels() int { return 2 * len(g.links) }

// Kind returns the kind of node v.
func (g *Graph) Kind(v int) Kind { return g.kinds[v] }

// NodeName returns the unique name of node v.
func (g *Graph) NodeName(v int) string { return g.names[v] }

// GUID returns node v's GUID (deterministic for generated graphs).
func (g *Graph) GUID(v int) uint64 { return g.guids[v] }

// PortGUID returns the GUID of port p of node v: the one the imported file
// gives, else the rule ibsim applies and InfiniBand adapters follow: a
// switch's ports share the switch GUID (port 0), port p of an end node has
// node GUID + p.
func (g *Graph) PortGUID(v, p int) uint64 {
	if pg, ok := g.portGUID[uint32(v)<<8|uint32(p)]; ok {
		return pg
	}
	if g.kinds[v] == Switch {
		return g.guids[v]
	}
	return g.guids[v] + uint64(p)
}

// NumPorts returns the number of ports of node v.
func (g *Graph) NumPorts(v int) int { return int(g.nport[v]) }

// Level returns the fat-tree level of v (0 = endpoint), or -1.
func (g *Graph) Level(v int) int { return int(g.level[v]) }

// Group returns the group (dragonfly group, supernode) of v, or -1.
func (g *Graph) Group(v int) int { return int(g.group[v]) }

// LID returns the LID an imported fabric file gave node v, or 0.
func (g *Graph) LID(v int) int {
	if g.lid == nil {
		return 0
	}
	return int(g.lid[v])
}

// Dims returns the coordinate extents (nil if the graph has none). The
// caller must not modify the slice.
func (g *Graph) Dims() []int { return g.dims }

// Wrap reports per dimension whether it wraps around (torus) or not (mesh).
func (g *Graph) Wrap() []bool { return g.wrap }

// HasCoords reports whether nodes carry coordinates.
func (g *Graph) HasCoords() bool { return len(g.dims) > 0 }

// Coord returns the coordinates of v (nil if none). Endpoints attached to a
// switch of a switch torus carry their switch's coordinates.
func (g *Graph) Coord(v int) []int {
	n := len(g.dims)
	if n == 0 {
		return nil
	}
	c := make([]int, n)
	for i := range c {
		c[i] = int(g.coord[v*n+i])
	}
	return c
}

// CoordAt returns coordinate i of node v without allocating.
func (g *Graph) CoordAt(v, i int) int { return int(g.coord[v*len(g.dims)+i]) }

// NodeAt returns the node with the given coordinates (the switch, for a
// switch torus), or -1.
func (g *Graph) NodeAt(c []int) int {
	if v, ok := g.byCoord[coordKey(c)]; ok {
		return int(v)
	}
	return -1
}

// NodeByName returns the node with the given name, or -1.
func (g *Graph) NodeByName(name string) int {
	if v, ok := g.byName[name]; ok {
		return int(v)
	}
	return -1
}

// Link returns link l.
func (g *Graph) Link(l int) Link { return g.links[l] }

// Links returns all links; the caller must not modify the slice.
func (g *Graph) Links() []Link { return g.links }

// Out returns the channels leaving v, in increasing port order, including
// failed ones. The caller must not modify the slice.
func (g *Graph) Out(v int) []int32 { return g.outChan[g.outStart[v]:g.outStart[v+1]] }

// Degree returns the number of links at v (failed or not).
func (g *Graph) Degree(v int) int { return int(g.outStart[v+1] - g.outStart[v]) }

// Src returns the node channel c leaves.
func (g *Graph) Src(c int) int {
	l := &g.links[c>>1]
	if c&1 == 0 {
		return int(l.A)
	}
	return int(l.B)
}

// Dst returns the node channel c enters.
func (g *Graph) Dst(c int) int {
	l := &g.links[c>>1]
	if c&1 == 0 {
		return int(l.B)
	}
	return int(l.A)
}

// SrcPort returns the port of Src(c) that c leaves through.
func (g *Graph) SrcPort(c int) int {
	l := &g.links[c>>1]
	if c&1 == 0 {
		return int(l.APort)
	}
	return int(l.BPort)
}

// DstPort returns the port of Dst(c) that c enters through.
func (g *Graph) DstPort(c int) int {
	l := &g.links[c>>1]
	if c&1 == 0 {
		return int(l.BPort)
	}
	return int(l.APort)
}

// Reverse returns the opposite channel of the same link.
func Reverse(c int) int { return c ^ 1 }

// LinkOf returns the link a channel belongs to.
func LinkOf(c int) int { return c >> 1 }

// Dir returns the dimension of channel c and its sign (+1 or -1), or
// (-1, 0) if the link has no direction.
func (g *Graph) Dir(c int) (dim int, sign int) {
	l := &g.links[c>>1]
	if l.Dim < 0 {
		return -1, 0
	}
	if c&1 == 0 {
		return int(l.Dim), +1
	}
	return int(l.Dim), -1
}

// PortChannel returns the channel leaving v through port p, or -1.
func (g *Graph) PortChannel(v, p int) int {
	if p < 1 || p > int(g.nport[v]) {
		return -1
	}
	return int(g.portChan[int(g.portBase[v])+p-1])
}

// Direct reports whether the graph is a direct network (no switches: every
// node is an endpoint that also forwards).
func (g *Graph) Direct() bool {
	for _, k := range g.kinds {
		if k == Switch {
			return false
		}
	}
	return true
}

// Endpoints returns the ids of all endpoint nodes in increasing order.
func (g *Graph) Endpoints() []int { return g.nodesOf(Endpoint) }

// Switches returns the ids of all switch nodes in increasing order.
func (g *Graph) Switches() []int { return g.nodesOf(Switch) }

func (g *Graph) nodesOf(k Kind) []int {
	var out []int
	for v, kk := range g.kinds {
		if kk == k {
			out = append(out, v)
		}
	}
	return out
}

// Count returns the number of nodes of kind k.
func (g *Graph) Count(k Kind) int {
	n := 0
	for _, kk := range g.kinds {
		if kk == k {
			n++
		}
	}
	return n
}

// ---- faults ----

// LinkFailed reports whether link l is failed (or touches a failed node).
func (g *Graph) LinkFailed(l int) bool {
	if g.failedLinks.Has(l) {
		return true
	}
	lk := &g.links[l]
	return g.failedNodes.Has(int(lk.A)) || g.failedNodes.Has(int(lk.B))
}

// LinkMarkedFailed reports whether link l itself is in the failed set.
func (g *Graph) LinkMarkedFailed(l int) bool { return g.failedLinks.Has(l) }

// NodeFailed reports whether node v is failed.
func (g *Graph) NodeFailed(v int) bool { return g.failedNodes.Has(v) }

// Up reports whether channel c can carry traffic: its link is not failed
// and neither end node is failed.
func (g *Graph) Up(c int) bool { return !g.LinkFailed(c >> 1) }

// FailedLinks returns the ids of links in the failed set (not counting links
// that are down only because a node failed).
func (g *Graph) FailedLinks() []int { return g.failedLinks.Members() }

// FailedNodes returns the ids of failed nodes.
func (g *Graph) FailedNodes() []int { return g.failedNodes.Members() }

// HasFaults reports whether any link or node is failed.
func (g *Graph) HasFaults() bool {
	return g.failedLinks.Count() > 0 || g.failedNodes.Count() > 0
}

// WithFaults returns a view of g that shares its structure and has exactly
// the given failed links and nodes (ids out of range are an error).
func (g *Graph) WithFaults(links, nodes []int) (*Graph, error) {
	h := *g
	h.failedLinks = bitset.New(len(g.links))
	h.failedNodes = bitset.New(len(g.kinds))
	for _, l := range links {
		if l < 0 || l >= len(g.links) {
			return nil, fmt.Errorf("failed link id %d out of range 0..%d", l, len(g.links)-1)
		}
		h.failedLinks.Add(l)
	}
	for _, v := range nodes {
		if v < 0 || v >= len(g.kinds) {
			return nil, fmt.Errorf("failed node id %d out of range 0..%d", v, len(g.kinds)-1)
		}
		h.failedNodes.Add(v)
	}
	return &h, nil
}

// AddFaults returns a view with the given links and nodes failed in addition
// to those already failed.
func (g *Graph) AddFaults(links, nodes []int) (*Graph, error) {
	return g.WithFaults(append(g.FailedLinks(), links...), append(g.FailedNodes(), nodes...))
}

// WithoutFaults returns a view with no failures.
func (g *Graph) WithoutFaults() *Graph {
	h, _ := g.WithFaults(nil, nil)
	return h
}

// ---- node description helpers ----

// CoordString formats coordinates as "0.1.3".
func CoordString(c []int) string {
	var b strings.Builder
	for i, x := range c {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

func coordKey(c []int) string { return CoordString(c) }

// dimLetters name the first six dimensions.
const dimLetters = "XYZWVU"

// DimName names dimension i: X, Y, Z, W, V, U, then D6, D7, ...
func DimName(i int) string {
	const names = dimLetters
	if i >= 0 && i < len(names) {
		return names[i : i+1]
	}
	return "D" + strconv.Itoa(i)
}

// DimIndex is the inverse of DimName (case-insensitive), or -1.
func DimIndex(s string) int {
	s = strings.ToUpper(s)
	if len(s) == 1 {
		if i := strings.IndexByte(dimLetters, s[0]); i >= 0 {
			return i
		}
	}
	if strings.HasPrefix(s, "D") {
		if i, err := strconv.Atoi(s[1:]); err == nil && i >= 0 {
			return i
		}
	}
	return -1
}

// Describe returns a short human description of node v: its name, and
// kind if it is a switch.
func (g *Graph) Describe(v int) string {
	if g.kinds[v] == Switch {
		return "switch " + g.names[v]
	}
	return g.names[v]
}

// Equal reports whether two graphs have the same structure, attributes and
// failures (names, kinds, GUIDs, ports, coordinates, links in order).
func Equal(a, b *Graph) bool {
	return a.Diff(b) == ""
}

// Diff describes the first difference between a and b, or "" if equal.
func (a *Graph) Diff(b *Graph) string {
	switch {
	case a.NumNodes() != b.NumNodes():
		return fmt.Sprintf("node count %d vs %d", a.NumNodes(), b.NumNodes())
	case a.NumLinks() != b.NumLinks():
		return fmt.Sprintf("link count %d vs %d", a.NumLinks(), b.NumLinks())
	case !slices.Equal(a.dims, b.dims):
		return fmt.Sprintf("dims %v vs %v", a.dims, b.dims)
	case !slices.Equal(a.wrap, b.wrap):
		return fmt.Sprintf("wrap %v vs %v", a.wrap, b.wrap)
	}
	for v := range a.kinds {
		switch {
		case a.kinds[v] != b.kinds[v]:
			return fmt.Sprintf("node %d kind %v vs %v", v, a.kinds[v], b.kinds[v])
		case a.names[v] != b.names[v]:
			return fmt.Sprintf("node %d name %q vs %q", v, a.names[v], b.names[v])
		case a.guids[v] != b.guids[v]:
			return fmt.Sprintf("node %d guid %#x vs %#x", v, a.guids[v], b.guids[v])
		case a.nport[v] != b.nport[v]:
			return fmt.Sprintf("node %d ports %d vs %d", v, a.nport[v], b.nport[v])
		case a.level[v] != b.level[v]:
			return fmt.Sprintf("node %d level %d vs %d", v, a.level[v], b.level[v])
		case a.group[v] != b.group[v]:
			return fmt.Sprintf("node %d group %d vs %d", v, a.group[v], b.group[v])
		case a.Desc(v) != b.Desc(v):
			return fmt.Sprintf("node %d description %q vs %q", v, a.Desc(v), b.Desc(v))
		}
	}
	if a.LIDsDiffer(b) {
		return "LIDs differ"
	}
	if !slices.Equal(a.coord, b.coord) {
		return "coordinates differ"
	}
	for l := range a.links {
		if a.links[l] != b.links[l] {
			return fmt.Sprintf("link %d %+v vs %+v", l, a.links[l], b.links[l])
		}
	}
	if !slices.Equal(a.FailedLinks(), b.FailedLinks()) {
		return fmt.Sprintf("failed links %v vs %v", a.FailedLinks(), b.FailedLinks())
	}
	if !slices.Equal(a.FailedNodes(), b.FailedNodes()) {
		return fmt.Sprintf("failed nodes %v vs %v", a.FailedNodes(), b.FailedNodes())
	}
	return ""
}

// LIDsDiffer reports whether the two graphs assign different LIDs.
func (a *Graph) LIDsDiffer(b *Graph) bool {
	for v := range a.kinds {
		if a.LID(v) != b.LID(v) {
			return true
		}
	}
	return false
}

// SameStructure reports whether a and b have the same nodes (name, kind,
// GUID, ports) and the same set of links (as unordered port pairs, with
// class and bandwidth), ignoring link order, coordinates and levels. It is
// the equivalence kept by formats that do not carry coordinates, such as
// ibnetdiscover.
func SameStructure(a, b *Graph) string {
	if a.NumNodes() != b.NumNodes() {
		return fmt.Sprintf("node count %d vs %d", a.NumNodes(), b.NumNodes())
	}
	if a.NumLinks() != b.NumLinks() {
		return fmt.Sprintf("link count %d vs %d", a.NumLinks(), b.NumLinks())
	}
	for v := range a.kinds {
		w := b.NodeByName(a.names[v])
		if w < 0 {
			return fmt.Sprintf("node %q missing", a.names[v])
		}
		if a.kinds[v] != b.kinds[w] || a.guids[v] != b.guids[w] || a.nport[v] != b.nport[w] || a.LID(v) != b.LID(w) {
			return fmt.Sprintf("node %q differs", a.names[v])
		}
		for p := 1; p <= int(a.nport[v]); p++ {
			ca, cb := a.PortChannel(v, p), b.PortChannel(w, p)
			if (ca < 0) != (cb < 0) {
				return fmt.Sprintf("node %q port %d connected in one graph only", a.names[v], p)
			}
			if ca < 0 {
				continue
			}
			if a.names[a.Dst(ca)] != b.names[b.Dst(cb)] || a.DstPort(ca) != b.DstPort(cb) {
				return fmt.Sprintf("node %q port %d peers differ", a.names[v], p)
			}
			la, lb := a.links[ca>>1], b.links[cb>>1]
			if la.Bandwidth != lb.Bandwidth || la.Class != lb.Class {
				return fmt.Sprintf("node %q port %d link attributes differ", a.names[v], p)
			}
		}
	}
	return ""
}

// Desc returns node v's description as an imported file gives it
// (ibnetdiscover's NodeDescription, e.g. "node-1 HCA-1"), or "".
func (g *Graph) Desc(v int) string {
	if g.desc == nil {
		return ""
	}
	return g.desc[v]
}

// HostName returns the host name in node v's description: its first word
// ("node-1" of "node-1 HCA-1", as ibnetdiscover shows the NodeDescription
// an adapter's driver sets from the host name), or "" if there is none.
func (g *Graph) HostName(v int) string {
	f := strings.Fields(g.Desc(v))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// LinksMissingFrom returns the links of g that d does not hold as working
// links, ends matched by node GUID and port number: the links of a fabric
// that a later discovery of it (ibnetdiscover) no longer sees. Nodes
// without a GUID never match.
func (g *Graph) LinksMissingFrom(d *Graph) []int {
	type end struct {
		guid uint64
		port int
	}
	key := func(x *Graph, c int) [2]end {
		a := end{x.GUID(x.Src(c)), x.SrcPort(c)}
		b := end{x.GUID(x.Dst(c)), x.DstPort(c)}
		if b.guid < a.guid || b.guid == a.guid && b.port < a.port {
			a, b = b, a
		}
		return [2]end{a, b}
	}
	have := make(map[[2]end]bool, d.NumLinks())
	for l := 0; l < d.NumLinks(); l++ {
		if !d.LinkFailed(l) {
			have[key(d, 2*l)] = true
		}
	}
	var out []int
	for l := 0; l < g.NumLinks(); l++ {
		if k := key(g, 2*l); k[0].guid == 0 || !have[k] {
			out = append(out, l)
		}
	}
	return out
}
