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
// annotations. The quoted identifier is the node's name; GUIDs come from the
// *guid= lines, else from an "S-"/"H-" identifier, else are assigned.

var (
	reIBNode = regexp.MustCompile(`^(Switch|Ca|Hca|Rt|Router)\s+(\d+)\s+"([^"]*)"\s*(.*)$`)
	reIBPort = regexp.MustCompile(`^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-FxX]+)\))?\s*"([^"]*)"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-FxX]+)\))?\s*(.*)$`)
	reIBLid  = regexp.MustCompile(`\blid (\d+)`)
	reIBRate = regexp.MustCompile(`\b(1|2|4|8|12)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)\b`)
)

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
	ports int
	guid  uint64
	line  int
	lid   int
	conns []ibPort
}

// ParseIBNet reads ibnetdiscover output or an ibsim net file. Errors carry
// file name and line: duplicate names or GUIDs, ports beyond a node's port
// count, ports used twice, links to nodes the file never defines (dangling)
// and links the two ends describe differently (asymmetric).
func ParseIBNet(r io.Reader, name string) (*Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var nodes []*ibNode
	byName := map[string]*ibNode{}
	var cur *ibNode
	var pendingGUID uint64
	var peerLID map[string]int
	lineNo := 0
	errf := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, a...))
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		low := strings.ToLower(line)
		if k, v, ok := strings.Cut(low, "="); ok && !strings.ContainsAny(k, " \t\"[") {
			switch k {
			case "switchguid", "caguid", "rtguid":
				hex := v
				if i := strings.IndexByte(hex, '('); i >= 0 {
					hex = hex[:i]
				}
				g, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(hex), "0x"), 16, 64)
				if err != nil || g == 0 {
					return nil, errf("invalid GUID %q", v)
				}
				pendingGUID = g
			case "vendid", "devid", "sysimgguid":
			default:
				return nil, errf("unknown attribute %q", k)
			}
			continue
		}
		if m := reIBNode.FindStringSubmatch(line); m != nil {
			if m[1] == "Rt" || m[1] == "Router" {
				return nil, errf("routers are not supported")
			}
			ports, err := strconv.Atoi(m[2])
			if err != nil || ports < 1 || ports > 254 {
				return nil, errf("node %q has invalid port count %s (1..254)", m[3], m[2])
			}
			if m[3] == "" {
				return nil, errf("node with an empty name")
			}
			if prev, dup := byName[m[3]]; dup {
				return nil, errf("node %q defined twice (first at line %d)", m[3], prev.line)
			}
			kind := Endpoint
			if m[1] == "Switch" {
				kind = Switch
			}
			n := &ibNode{kind: kind, name: m[3], ports: ports, guid: pendingGUID, line: lineNo}
			pendingGUID = 0
			if n.guid == 0 {
				n.guid = guidFromIdent(m[3])
			}
			if lm := reIBLid.FindStringSubmatch(StripQuoted(m[4])); lm != nil {
				if n.lid, err = parseLID(lm[1]); err != nil {
					return nil, errf("%v", err)
				}
			}
			nodes = append(nodes, n)
			byName[n.name] = n
			cur = n
			continue
		}
		if m := reIBPort.FindStringSubmatch(line); m != nil {
			if cur == nil {
				return nil, errf("port line before any Switch/Ca header")
			}
			p, err1 := strconv.Atoi(m[1])
			pp, err2 := strconv.Atoi(m[4])
			if err1 != nil || err2 != nil || pp < 1 || pp > 254 {
				return nil, errf("invalid port number")
			}
			if p < 1 || p > cur.ports {
				return nil, errf("port %d out of range: %q has %d ports", p, cur.name, cur.ports)
			}
			for _, c := range cur.conns {
				if c.port == p {
					return nil, errf("port %d of %q listed twice (also line %d)", p, cur.name, c.line)
				}
			}
			if m[3] == "" {
				return nil, errf("port %d of %q names an empty peer", p, cur.name)
			}
			c := ibPort{port: p, peer: m[3], peerPort: pp, line: lineNo, bw: 1}
			rawTail := m[6]
			tail := StripQuoted(rawTail)
			if rm := reIBRate.FindAllStringSubmatch(tail, -1); rm != nil {
				last := rm[len(rm)-1]
				w, _ := strconv.Atoi(last[1])
				c.bw = float64(w) * laneGbps[last[2]]
			}
			if i := strings.Index(tail, "icn-class="); i >= 0 {
				f := strings.Fields(tail[i+len("icn-class="):])
				if len(f) > 0 {
					cl, err := ParseClass(f[0])
					if err != nil {
						return nil, errf("%v", err)
					}
					c.class, c.hasClass = cl, true
				}
			}
			if cur.kind == Switch {
				// "[1] "hca0"[1] # "host 0" lid 10": the adapter's LID as
				// the switch sees it, used if the adapter's own block
				// does not give one.
				if lm := reIBLid.FindStringSubmatch(tail); lm != nil {
					if l, err := parseLID(lm[1]); err == nil {
						if peerLID == nil {
							peerLID = map[string]int{}
						}
						peerLID[c.peer] = l
					}
				}
			}
			if cur.kind == Endpoint && cur.lid == 0 {
				// "# lid 12 lmc 0 "peer desc" lid 6 4xSDR": the adapter's
				// own LID comes before the peer's description.
				own := rawTail
				if i := strings.IndexByte(own, '"'); i >= 0 {
					own = own[:i]
				}
				if lm := reIBLid.FindStringSubmatch(own); lm != nil {
					var err error
					if cur.lid, err = parseLID(lm[1]); err != nil {
						return nil, errf("%v", err)
					}
				}
			}
			cur.conns = append(cur.conns, c)
			continue
		}
		return nil, errf("cannot parse line %q", clip(line))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no Switch or Ca nodes found", name)
	}
	guids := map[uint64]*ibNode{}
	for _, n := range nodes {
		if n.guid == 0 {
			continue
		}
		if o, dup := guids[n.guid]; dup {
			return nil, fmt.Errorf("%s:%d: GUID %#016x of %q already used by %q (line %d)", name, n.line, n.guid, n.name, o.name, o.line)
		}
		guids[n.guid] = n
	}
	for _, n := range nodes {
		if n.kind == Endpoint && n.lid == 0 {
			n.lid = peerLID[n.name]
		}
	}
	b := NewBuilder(name)
	id := map[string]int{}
	for i, n := range nodes {
		g := n.guid
		if g == 0 {
			g = DefaultGUID(n.kind, i)
			for guids[g] != nil {
				g += 1 << 32
			}
			guids[g] = n
		}
		id[n.name] = b.AddNode(n.kind, n.name, NodeOpts{GUID: g, Ports: n.ports, Level: NoLevel, Group: NoGroup, LID: n.lid})
	}
	for _, n := range nodes {
		for _, c := range n.conns {
			peer := byName[c.peer]
			if peer == nil {
				return nil, fmt.Errorf("%s:%d: dangling port: %q port %d leads to %q, which the file never defines", name, c.line, n.name, c.port, c.peer)
			}
			if c.peerPort > peer.ports {
				return nil, fmt.Errorf("%s:%d: %q port %d leads to port %d of %q, which has %d ports", name, c.line, n.name, c.port, c.peerPort, peer.name, peer.ports)
			}
			var back *ibPort
			for i := range peer.conns {
				if peer.conns[i].port == c.peerPort {
					back = &peer.conns[i]
				}
			}
			if back != nil && (back.peer != n.name || back.peerPort != c.port) {
				return nil, fmt.Errorf("%s:%d: asymmetric link: %q[%d] -> %q[%d], but line %d says %q[%d] -> %q[%d]",
					name, c.line, n.name, c.port, peer.name, c.peerPort, back.line, peer.name, c.peerPort, back.peer, back.peerPort)
			}
			if back != nil && (n.name > peer.name || (n.name == peer.name && c.port > c.peerPort)) {
				continue // the other end creates the link
			}
			if n.name == peer.name && c.port == c.peerPort {
				return nil, fmt.Errorf("%s:%d: port %d of %q is connected to itself", name, c.line, c.port, n.name)
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
		}
	}
	g, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return g, nil
}

// MaxUnicastLID is the largest unicast LID (0xBFFF).
const MaxUnicastLID = 0xBFFF

func parseLID(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > MaxUnicastLID {
		return 0, fmt.Errorf("LID %s outside the unicast range 1..%d", s, MaxUnicastLID)
	}
	return v, nil
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

// guidFromIdent extracts the GUID from identifiers like "S-0002c90000001d18".
func guidFromIdent(s string) uint64 {
	if len(s) == 18 && (s[0] == 'S' || s[0] == 'H') && s[1] == '-' {
		if g, err := strconv.ParseUint(s[2:], 16, 64); err == nil {
			return g
		}
	}
	return 0
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

// WriteIBNet writes g as ibnetdiscover text that ParseIBNet (and ibsim)
// read back. Node identifiers are the node names; bandwidths that match an
// InfiniBand width×speed are written as such; non-local link classes are
// kept in an "icn-class=" comment. Coordinates, levels and groups are not
// representable in this format and are not written.
func (g *Graph) WriteIBNet(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "#\n# Topology file: generated by icn from %s\n#\n", g.name)
	for v := range g.kinds {
		if strings.ContainsAny(g.names[v], "\"\n") {
			return fmt.Errorf("node name %q cannot be written in ibnetdiscover format", g.names[v])
		}
	}
	for v := range g.kinds {
		fmt.Fprintf(bw, "\nvendid=0x2c9\n")
		lid := ""
		if g.lid != nil && g.lid[v] != 0 {
			lid = fmt.Sprintf(" lid %d", g.lid[v])
		}
		if g.kinds[v] == Switch {
			fmt.Fprintf(bw, "devid=0xc738\nsysimgguid=0x%x\nswitchguid=0x%x(%x)\n", g.guids[v], g.guids[v], g.guids[v])
			fmt.Fprintf(bw, "Switch\t%d \"%s\"\t\t# \"%s\" base port 0%s lmc 0\n", g.nport[v], g.names[v], g.names[v], lid)
		} else {
			fmt.Fprintf(bw, "devid=0x1011\nsysimgguid=0x%x\ncaguid=0x%x\n", g.guids[v], g.guids[v])
			fmt.Fprintf(bw, "Ca\t%d \"%s\"\t\t# \"%s\"%s\n", g.nport[v], g.names[v], g.names[v], lid)
		}
		for _, c := range g.Out(v) {
			ci := int(c)
			peer := g.Dst(ci)
			lk := g.links[ci>>1]
			tail := fmt.Sprintf("\"%s\"", g.names[peer])
			if g.kinds[v] != Switch && g.lid != nil && g.lid[v] != 0 {
				tail = fmt.Sprintf("lid %d lmc 0 %s", g.lid[v], tail)
			}
			if g.lid != nil && g.lid[peer] != 0 {
				tail += fmt.Sprintf(" lid %d", g.lid[peer])
			}
			if r := rateName(float64(lk.Bandwidth)); r != "" {
				tail += " " + r
			} else if lk.Bandwidth != 1 {
				return fmt.Errorf("link %s has bandwidth %g, which is not an InfiniBand width×speed", g.LinkName(ci>>1), lk.Bandwidth)
			}
			if lk.Class != Local {
				tail += " icn-class=" + lk.Class.String()
			}
			fmt.Fprintf(bw, "[%d]\t\"%s\"[%d]\t\t# %s\n", g.SrcPort(ci), g.names[peer], g.DstPort(ci), tail)
		}
	}
	return bw.Flush()
}
