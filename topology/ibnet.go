package topology

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ibnetdiscover / ibsim topology text.
//
// Both grammars describe nodes as a header line followed by one line per
// connected port:
//
//	switchguid=0x2c90000001d18(2c90000001d18)
//	Switch	24 "S-0002c90000001d18"		# "ISR9024 Voltaire" base port 0 lid 6 lmc 0
//	[1]	"H-0002c9000000ff94"[1](2c9000000ff95)		# "node-1" lid 12 4xSDR
//	caguid=0x2c9000000ff94
//	Ca	2 "H-0002c9000000ff94"		# "node-1"
//	[1](2c9000000ff95) 	"S-0002c90000001d18"[1]		# lid 12 lmc 0 "ISR9024 Voltaire" lid 6 4xSDR
//
// ibsim net files use the same shape with "Hca" for adapters and fewer
// annotations. The quoted identifier is the node's name.
//
// GUIDs follow ibsim (sim_net.c): switches and adapters each take the next
// value of a counter per node type, which starts at 0x200000 for switches
// and 0x100000 for adapters; a "switchguid=G" line sets the switch counter,
// "caguid=G" (or "hcaguids=G") the adapter counter ("+N" instead of "=G"
// moves it relative to the last base). A switch takes one GUID, an adapter
// with P ports P+1 (its port p has GUID node GUID + p). ibnetdiscover output
// puts a GUID line before every node, so its GUIDs are kept exactly; port
// GUIDs written as "[1](2c9000000ff95)" are kept as given. LIDs of 0 (a
// fabric discovered before any subnet manager ran) mean "not assigned".

var (
	reIBNode = regexp.MustCompile(`^(Switch|Ca|Hca|Rt|Router)\s+(\d+)\s+"([^"]*)"\s*(.*)$`)
	reIBPort = regexp.MustCompile(`^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-FxX]+)\))?\s*"([^"]*)"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-FxX]+)\))?\s*(.*)$`)
	reIBLid  = regexp.MustCompile(`\blid (\d+)`)
	reIBRate = regexp.MustCompile(`\b(1|2|4|8|12)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)\b`)
)

// ibsim's first GUIDs per node type.
const (
	ibsimSwitchGUID = 0x200000
	ibsimCAGUID     = 0x100000
)

// icnClassComment starts the comment line that carries a link's class
// (ibsim reads every '=' of a port line as a port option, so the class
// cannot sit in the port line's comment).
const icnClassComment = "# icn-class="

// laneGbps is the data rate of one lane of each InfiniBand speed.
var laneGbps = map[string]float64{
	"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10.3125, "FDR": 14.0625,
	"EDR": 25.78125, "HDR": 53.125, "NDR": 106.25, "XDR": 212.5,
}

type ibPort struct {
	port, peerPort int
	peer           string
	line           int
	bw             float64
	class          Class
	hasClass       bool
}

type ibNode struct {
	kind  Kind
	name  string
	desc  string // NodeDescription: the first "…" of the header's comment
	ports int
	guid  uint64
	line  int
	lid   int
	conns []ibPort
}

// portGUIDNote is a port GUID the file gives, with where it was given.
type portGUIDNote struct {
	guid uint64
	line int
}

// ibParser holds the state of one ParseIBNet run.
type ibParser struct {
	name     string
	lineNo   int
	nodes    []*ibNode
	byName   map[string]*ibNode
	cur      *ibNode
	guidNext [2]uint64 // ibsim counters: [0] adapters, [1] switches
	guidBase [2]uint64
	class    *Class // from an "# icn-class=" line, for the next port line
	peerLID  map[string]int
	portGUID map[string]map[int]portGUIDNote // node name -> port -> GUID
}

func (p *ibParser) errf(format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, p.lineNo, fmt.Sprintf(format, a...))
}

// ParseIBNet reads ibnetdiscover output or an ibsim net file. Errors carry
// file name and line: duplicate names, node GUIDs or port GUIDs, ports
// beyond a node's port count, ports used twice, links to nodes the file
// never defines (dangling) and links the two ends describe differently
// (asymmetric).
func ParseIBNet(r io.Reader, name string) (*Graph, error) {
	p := &ibParser{name: name, byName: map[string]*ibNode{}, peerLID: map[string]int{}, portGUID: map[string]map[int]portGUIDNote{}}
	p.guidNext = [2]uint64{ibsimCAGUID, ibsimSwitchGUID}
	p.guidBase = p.guidNext
	if err := p.scan(r); err != nil {
		return nil, err
	}
	if err := p.checkGUIDs(); err != nil {
		return nil, err
	}
	return p.build()
}

// scan reads the file line by line into nodes and port lines.
func (p *ibParser) scan(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		p.lineNo++
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, icnClassComment); ok {
			cl, err := ParseClass(strings.TrimSpace(rest))
			if err != nil {
				return p.errf("%v", err)
			}
			p.class = &cl
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		var err error
		switch m := reIBNode.FindStringSubmatch(line); {
		case p.attribute(line, &err):
		case m != nil:
			err = p.node(m)
		default:
			if pm := reIBPort.FindStringSubmatch(line); pm != nil {
				err = p.port(pm)
			} else {
				err = p.errf("cannot parse line %q", clip(line))
			}
		}
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", p.name, err)
	}
	if len(p.nodes) == 0 {
		return fmt.Errorf("%s: no Switch or Ca nodes found", p.name)
	}
	return nil
}

// attribute handles "key=value" (and ibsim's "key+N") lines; it reports
// whether the line was one, setting *err on a bad one.
func (p *ibParser) attribute(line string, err *error) bool {
	i := strings.IndexAny(line, "=+")
	if i < 0 {
		return false
	}
	k, v := strings.ToLower(strings.TrimSpace(line[:i])), strings.TrimSpace(line[i+1:])
	if k == "" || strings.ContainsAny(k, " \t\"[") {
		return false
	}
	switch k {
	case "switchguid", "caguid", "hcaguids":
		t := 0
		if k == "switchguid" {
			t = 1
		}
		hex := v
		if j := strings.IndexByte(hex, '('); j >= 0 {
			hex = hex[:j]
		}
		g, perr := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(hex)), "0x"), 16, 64)
		if perr != nil || (g == 0 && line[i] == '=') {
			*err = p.errf("invalid GUID %q", v)
			return true
		}
		if line[i] == '+' {
			p.guidNext[t] = p.guidBase[t] + g
		} else {
			p.guidBase[t], p.guidNext[t] = g, g
		}
	case "rtguid":
		*err = p.errf("routers are not supported")
	case "vendid", "devid", "sysimgguid", "width", "speed", "extspeed", "pdebug":
		if line[i] != '=' {
			*err = p.errf("cannot parse line %q", clip(line))
		}
	default:
		*err = p.errf("unknown attribute %q", k)
	}
	return true
}

// node handles a "Switch N "name" # …" or "Ca N "name" # …" header.
func (p *ibParser) node(m []string) error {
	if m[1] == "Rt" || m[1] == "Router" {
		return p.errf("routers are not supported")
	}
	ports, err := strconv.Atoi(m[2])
	if err != nil || ports < 1 || ports > 254 {
		return p.errf("node %q has invalid port count %s (1..254)", m[3], m[2])
	}
	if m[3] == "" {
		return p.errf("node with an empty name")
	}
	if prev, dup := p.byName[m[3]]; dup {
		return p.errf("node %q defined twice (first at line %d)", m[3], prev.line)
	}
	n := &ibNode{kind: Endpoint, name: m[3], ports: ports, line: p.lineNo}
	t := 0
	if m[1] == "Switch" {
		n.kind, t = Switch, 1
	}
	n.guid = p.guidNext[t]
	if n.kind == Switch {
		p.guidNext[t]++
	} else {
		p.guidNext[t] += uint64(ports) + 1
	}
	n.desc = headerDesc(m[4])
	if lm := reIBLid.FindStringSubmatch(StripQuoted(m[4])); lm != nil {
		if n.lid, err = parseLID(lm[1]); err != nil {
			return p.errf("%v", err)
		}
	}
	p.nodes = append(p.nodes, n)
	p.byName[n.name] = n
	p.cur = n
	p.class = nil
	return nil
}

// port handles a "[p](guid) "peer"[pp](guid) # …" line.
func (p *ibParser) port(m []string) error {
	cur := p.cur
	if cur == nil {
		return p.errf("port line before any Switch/Ca header")
	}
	pn, err1 := strconv.Atoi(m[1])
	pp, err2 := strconv.Atoi(m[4])
	if err1 != nil || err2 != nil || pp < 1 || pp > 254 {
		return p.errf("invalid port number")
	}
	if pn < 1 || pn > cur.ports {
		return p.errf("port %d out of range: %q has %d ports", pn, cur.name, cur.ports)
	}
	for _, c := range cur.conns {
		if c.port == pn {
			return p.errf("port %d of %q listed twice (also line %d)", pn, cur.name, c.line)
		}
	}
	if m[3] == "" {
		return p.errf("port %d of %q names an empty peer", pn, cur.name)
	}
	c := ibPort{port: pn, peer: m[3], peerPort: pp, line: p.lineNo, bw: 1}
	if p.class != nil {
		c.class, c.hasClass = *p.class, true
		p.class = nil
	}
	if err := p.notePortGUID(cur.name, pn, m[2]); err != nil {
		return err
	}
	if err := p.notePortGUID(m[3], pp, m[5]); err != nil {
		return err
	}
	rawTail := m[6]
	tail := StripQuoted(rawTail)
	if rm := reIBRate.FindAllStringSubmatch(tail, -1); rm != nil {
		last := rm[len(rm)-1]
		w, _ := strconv.Atoi(last[1])
		c.bw = float64(w) * laneGbps[last[2]]
	}
	if i := strings.Index(tail, "icn-class="); i >= 0 {
		// Older icn exports kept the class in the port comment.
		if f := strings.Fields(tail[i+len("icn-class="):]); len(f) > 0 {
			cl, err := ParseClass(f[0])
			if err != nil {
				return p.errf("%v", err)
			}
			c.class, c.hasClass = cl, true
		}
	}
	if err := p.portLIDs(cur, &c, rawTail, tail); err != nil {
		return err
	}
	cur.conns = append(cur.conns, c)
	return nil
}

// portLIDs reads the LIDs of a port line's comment: on a switch, the
// adapter's LID as the switch sees it ("[1] "hca0"[1] # "host 0" lid 10"),
// used if the adapter's own block gives none; on an adapter its own LID,
// which comes before the peer's description ("# lid 12 lmc 0 "peer" lid 6").
func (p *ibParser) portLIDs(cur *ibNode, c *ibPort, rawTail, tail string) error {
	if cur.kind == Switch {
		if lm := reIBLid.FindStringSubmatch(tail); lm != nil {
			if l, err := parseLID(lm[1]); err == nil && l != 0 {
				p.peerLID[c.peer] = l
			}
		}
		return nil
	}
	if cur.lid != 0 {
		return nil
	}
	own := rawTail
	if i := strings.IndexByte(own, '"'); i >= 0 {
		own = own[:i]
	}
	if lm := reIBLid.FindStringSubmatch(own); lm != nil {
		var err error
		if cur.lid, err = parseLID(lm[1]); err != nil {
			return p.errf("%v", err)
		}
	}
	return nil
}

// notePortGUID records the "(guid)" the file gives port pn of node name.
func (p *ibParser) notePortGUID(name string, pn int, hex string) error {
	if hex == "" {
		return nil
	}
	g, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(hex), "0x"), 16, 64)
	if err != nil || g == 0 {
		return p.errf("invalid port GUID %q", hex)
	}
	m := p.portGUID[name]
	if m == nil {
		m = map[int]portGUIDNote{}
		p.portGUID[name] = m
	}
	if prev, ok := m[pn]; ok && prev.guid != g {
		return p.errf("port %d of %q has GUID %#x here but %#x at line %d", pn, name, g, prev.guid, prev.line)
	}
	m[pn] = portGUIDNote{g, p.lineNo}
	return nil
}

// checkGUIDs rejects node GUIDs used twice and port GUIDs (end-node ports
// and switch port 0) used twice.
func (p *ibParser) checkGUIDs() error {
	guids := map[uint64]*ibNode{}
	for _, n := range p.nodes {
		if o, dup := guids[n.guid]; dup {
			return fmt.Errorf("%s:%d: GUID %#016x of %q already used by %q (line %d)", p.name, n.line, n.guid, n.name, o.name, o.line)
		}
		guids[n.guid] = n
	}
	ports := map[uint64]string{}
	for _, n := range p.nodes {
		if n.kind == Switch {
			ports[n.guid] = n.name
			continue
		}
		for pn := 1; pn <= n.ports; pn++ {
			g := n.guid + uint64(pn)
			if note, ok := p.portGUID[n.name][pn]; ok {
				g = note.guid
			}
			who := fmt.Sprintf("%s[%d]", n.name, pn)
			if o, dup := ports[g]; dup {
				return fmt.Errorf("%s:%d: port GUID %#016x of %s already used by %s", p.name, n.line, g, who, o)
			}
			ports[g] = who
		}
	}
	return nil
}

// build turns the parsed nodes and port lines into a Graph.
func (p *ibParser) build() (*Graph, error) {
	name := p.name
	for _, n := range p.nodes {
		if n.kind == Endpoint && n.lid == 0 {
			n.lid = p.peerLID[n.name]
		}
	}
	b := NewBuilder(name)
	id := map[string]int{}
	for _, n := range p.nodes {
		v := b.AddNode(n.kind, n.name, NodeOpts{GUID: n.guid, Ports: n.ports, Level: NoLevel, Group: NoGroup, LID: n.lid, Desc: n.desc})
		id[n.name] = v
		if n.kind == Endpoint {
			for pn, note := range p.portGUID[n.name] {
				if pn <= n.ports && note.guid != n.guid+uint64(pn) {
					b.SetPortGUID(v, pn, note.guid)
				}
			}
		}
	}
	for _, n := range p.nodes {
		for _, c := range n.conns {
			if err := p.link(b, id, n, c); err != nil {
				return nil, err
			}
		}
	}
	g, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return g, nil
}

// link checks one port line against its peer and adds the link once.
func (p *ibParser) link(b *Builder, id map[string]int, n *ibNode, c ibPort) error {
	name := p.name
	peer := p.byName[c.peer]
	if peer == nil {
		return fmt.Errorf("%s:%d: dangling port: %q port %d leads to %q, which the file never defines", name, c.line, n.name, c.port, c.peer)
	}
	if c.peerPort > peer.ports {
		return fmt.Errorf("%s:%d: %q port %d leads to port %d of %q, which has %d ports", name, c.line, n.name, c.port, c.peerPort, peer.name, peer.ports)
	}
	var back *ibPort
	for i := range peer.conns {
		if peer.conns[i].port == c.peerPort {
			back = &peer.conns[i]
		}
	}
	if back != nil && (back.peer != n.name || back.peerPort != c.port) {
		return fmt.Errorf("%s:%d: asymmetric link: %q[%d] -> %q[%d], but line %d says %q[%d] -> %q[%d]",
			name, c.line, n.name, c.port, peer.name, c.peerPort, back.line, peer.name, c.peerPort, back.peer, back.peerPort)
	}
	if back != nil && (n.name > peer.name || (n.name == peer.name && c.port > c.peerPort)) {
		return nil // the other end creates the link
	}
	if n.name == peer.name && c.port == c.peerPort {
		return fmt.Errorf("%s:%d: port %d of %q is connected to itself", name, c.line, c.port, n.name)
	}
	bw := c.bw
	if back != nil && back.bw != 1 && bw == 1 {
		bw = back.bw
	}
	o := LinkOpts{Dim: -1, Bandwidth: bw}
	switch {
	case c.hasClass:
		o.Class = c.class
	case back != nil && back.hasClass:
		o.Class = back.class
	}
	b.ConnectPorts(id[n.name], c.port, id[peer.name], c.peerPort, o)
	return nil
}

// MaxUnicastLID is the largest unicast LID (0xBFFF).
const MaxUnicastLID = 0xBFFF

// parseLID reads a LID annotation; 0 means "not assigned yet".
func parseLID(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > MaxUnicastLID {
		return 0, fmt.Errorf("LID %s outside the unicast range 1..%d", s, MaxUnicastLID)
	}
	return v, nil
}

// headerDesc returns the node description of a node header's comment
// (`# "node-1 HCA-1" lid 12`), or "" if the comment quotes none.
func headerDesc(comment string) string {
	c, ok := strings.CutPrefix(strings.TrimSpace(comment), "#")
	if !ok {
		return ""
	}
	c, ok = strings.CutPrefix(strings.TrimSpace(c), "\"")
	if !ok {
		return ""
	}
	d, _, ok := strings.Cut(c, "\"")
	if !ok {
		return ""
	}
	return strings.TrimSpace(d)
}

// StripQuoted blanks out "…" sections (node descriptions) of an
// ibnetdiscover comment so annotations such as "lid 6" are only read
// outside them.
func StripQuoted(s string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			in = !in
			b.WriteByte(' ')
			continue
		}
		if !in {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// rateName returns the IB width×speed for a bandwidth in Gb/s, if exact.
func rateName(bw float64) string {
	speeds := make([]string, 0, len(laneGbps))
	for s := range laneGbps {
		speeds = append(speeds, s)
	}
	sort.Strings(speeds)
	for _, w := range []int{4, 1, 2, 8, 12} {
		for _, s := range speeds {
			if math.Abs(float64(w)*laneGbps[s]-bw) < 1e-9 {
				return fmt.Sprintf("%dx%s", w, s)
			}
		}
	}
	return ""
}

// WriteIBNet writes g as ibnetdiscover text that ParseIBNet, ibsim and
// other ibnetdiscover readers load. Every node gets its GUID line and every
// end-node port its port GUID ("[1](guid)" on the adapter's line and after
// the peer port on the switch's), so a round trip keeps the GUIDs and ibsim
// simulates the same GUIDs. Node identifiers are the node names; LIDs the
// graph carries are written, others as "lid 0" (not assigned, as
// ibnetdiscover shows a fabric before a subnet manager ran); bandwidths
// that match an InfiniBand width×speed are written as such; non-local link
// classes go on an "# icn-class=" comment line before the port line (a
// comment line, which ibsim skips). Coordinates, levels and groups are not
// representable in this format and are not written.
func (g *Graph) WriteIBNet(w io.Writer) error {
	return g.WriteIBNetLIDs(w, nil)
}

// WriteIBNetLIDs is WriteIBNet with the LID of every port given by lid
// (port 0 for a switch): for instance the LIDs a routing engine uses, so
// that ibsim configures them and OpenSM keeps them. A nil lid writes the
// LIDs the graph carries.
func (g *Graph) WriteIBNetLIDs(w io.Writer, lid func(v, port int) int) error {
	if lid == nil {
		lid = func(v, _ int) int { return g.ibLID(v) }
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "#\n# Topology file: generated by icn from %s\n#\n", strings.ReplaceAll(g.name, "\n", " "))
	for v := range g.kinds {
		if strings.ContainsAny(g.names[v], "\"\n#@") {
			return fmt.Errorf("node name %q cannot be written in ibnetdiscover format (no '\"', '#', '@' or new lines)", g.names[v])
		}
	}
	for v := range g.kinds {
		g.writeIBNetHeader(bw, v, lid)
		for _, c := range g.Out(v) {
			if err := g.writeIBNetPort(bw, v, int(c), lid); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// ibLID is the LID annotation of node v ("0" when the graph has none).
func (g *Graph) ibLID(v int) int {
	if g.lid == nil {
		return 0
	}
	return int(g.lid[v])
}

func (g *Graph) writeIBNetHeader(bw *bufio.Writer, v int, lid func(v, port int) int) {
	guid := g.guids[v]
	fmt.Fprintf(bw, "\nvendid=0x2c9\n")
	if g.kinds[v] == Switch {
		fmt.Fprintf(bw, "devid=0xc738\nsysimgguid=0x%x\nswitchguid=0x%x(%x)\n", guid, guid, guid)
		fmt.Fprintf(bw, "Switch\t%d \"%s\"\t\t# \"%s\" base port 0 lid %d lmc 0\n", g.nport[v], g.names[v], g.ibDesc(v), lid(v, 0))
		return
	}
	fmt.Fprintf(bw, "devid=0x1011\nsysimgguid=0x%x\ncaguid=0x%x\n", guid, guid)
	own := ""
	if l := g.ibLID(v); l != 0 && len(g.Out(v)) == 0 {
		own = fmt.Sprintf(" lid %d", l) // no port line carries it
	}
	fmt.Fprintf(bw, "Ca\t%d \"%s\"\t\t# \"%s\"%s\n", g.nport[v], g.names[v], g.ibDesc(v), own)
}

// ibDesc is the node description written for v: the one the graph
// carries, else the node's name.
func (g *Graph) ibDesc(v int) string {
	if d := g.Desc(v); d != "" && !strings.ContainsAny(d, "\"\n") {
		return d
	}
	return g.names[v]
}

func (g *Graph) writeIBNetPort(bw *bufio.Writer, v, c int, lid func(v, port int) int) error {
	peer := g.Dst(c)
	lk := g.links[c>>1]
	rate := rateName(float64(lk.Bandwidth))
	if rate == "" && lk.Bandwidth != 1 {
		return fmt.Errorf("link %s has bandwidth %g, which is not an InfiniBand width×speed", g.LinkName(c>>1), lk.Bandwidth)
	}
	if rate != "" {
		rate = " " + rate
	}
	if lk.Class != Local {
		fmt.Fprintf(bw, "%s%s\n", icnClassComment, lk.Class)
	}
	peerGUID, peerPort := "", 0
	if g.kinds[peer] != Switch {
		peerGUID, peerPort = fmt.Sprintf("(%x)", g.PortGUID(peer, g.DstPort(c))), g.DstPort(c)
	}
	if g.kinds[v] == Switch {
		fmt.Fprintf(bw, "[%d]\t\"%s\"[%d]%s\t\t# \"%s\" lid %d%s\n", g.SrcPort(c), g.names[peer], g.DstPort(c), peerGUID, g.names[peer], lid(peer, peerPort), rate)
		return nil
	}
	fmt.Fprintf(bw, "[%d](%x)\t\"%s\"[%d]%s\t\t# lid %d lmc 0 \"%s\" lid %d%s\n", g.SrcPort(c), g.PortGUID(v, g.SrcPort(c)), g.names[peer], g.DstPort(c), peerGUID, lid(v, g.SrcPort(c)), g.names[peer], lid(peer, peerPort), rate)
	return nil
}
