package unicast

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// OpenSM's opensm-lfts.dump, the text its `file` routing engine loads with
// -U. One block per switch:
//
//	Unicast lids [0-22] of switch Lid 3 guid 0x0002c90000001d18 ('sw-1'):
//	0x0001 007 # Channel Adapter portguid 0x0002c9000000ff95: 'node-1'
//	0x0003 000 # Switch portguid 0x0002c90000001d18: 'sw-1'
//	22 lids dumped
//
// An entry is the destination LID in hex, the output port in decimal (0 =
// the switch itself) and a comment naming the LID's holder; LIDs without a
// route are left out. OpenSM's loader reads the switch GUID after " guid
// 0x", the LID and port of every "0x" line and, when present, the
// "portguid"; lines starting with '#' are comments.

const dumpTag = "# opensm-lfts.dump written by icn:"

// WriteDump writes t in opensm-lfts.dump format, switches in GUID order.
func (t *Tables) WriteDump(w io.Writer) error {
	f := t.F
	g := f.G
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s engine=%s fabric=%s\n", dumpTag, t.Engine, strings.ReplaceAll(g.Name(), "\n", " "))
	order := make([]int, len(f.switches))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return g.GUID(f.Switch(order[a])) < g.GUID(f.Switch(order[b])) })
	maxLID := t.stride - 1
	for _, s := range order {
		v := f.Switch(s)
		if g.NodeFailed(v) {
			continue
		}
		fmt.Fprintf(bw, "Unicast lids [0-%d] of switch Lid %d guid 0x%016x ('%s'):\n", maxLID, f.swLID[s], g.GUID(v), desc(g.NodeName(v)))
		row := t.row(s)
		for lid, p := range row {
			if p == noPort {
				continue
			}
			fmt.Fprintf(bw, "0x%04x %03d # ", lid, p)
			sw, term := f.Owner(lid)
			switch {
			case sw >= 0:
				fmt.Fprintf(bw, "Switch portguid 0x%016x: '%s'\n", g.GUID(f.Switch(sw)), desc(g.NodeName(f.Switch(sw))))
			case term >= 0:
				tm := f.terms[term]
				fmt.Fprintf(bw, "Channel Adapter portguid 0x%016x: '%s'\n", tm.GUID, desc(g.NodeName(tm.Node)))
			default:
				bw.WriteString("unknown node and type\n")
			}
		}
		fmt.Fprintf(bw, "%d lids dumped\n", maxLID)
	}
	return bw.Flush()
}

func desc(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// dumpBlock and dumpEntry are the raw content of a dump file.
type dumpBlock struct {
	line    int
	guid    uint64
	lid     int // 0 if the header gives none
	entries []dumpEntry
}

type dumpEntry struct {
	line int
	lid  int
	port int
}

var (
	reDumpHeader = regexp.MustCompile(`^Unicast lids \[(?:0x)?[0-9a-fA-F]+-(?:0x)?[0-9a-fA-F]+\] of switch Lid (\d+) guid 0x([0-9a-fA-F]{1,16})(?:\s.*)?$`)
	reDumpEntry  = regexp.MustCompile(`^0x([0-9a-fA-F]{1,4})\s+(\d{1,3})(?:\s+#.*)?$`)
	reDumpCount  = regexp.MustCompile(`^\d+ lids dumped$`)
)

// parseDumpRaw reads the blocks of a dump file without a fabric. Errors
// name the file and line.
func parseDumpRaw(r io.Reader, name string) (engine string, blocks []dumpBlock, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	lineNo := 0
	errf := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, a...))
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case line[0] == '#':
			if rest, ok := strings.CutPrefix(line, dumpTag); ok {
				for _, fld := range strings.Fields(rest) {
					if e, ok := strings.CutPrefix(fld, "engine="); ok {
						engine = e
					}
				}
			}
		case strings.HasPrefix(line, "Multicast mlids"):
			return "", nil, errf("this is a multicast table dump, not opensm-lfts.dump")
		case strings.HasPrefix(line, "Unicast lids"):
			m := reDumpHeader.FindStringSubmatch(line)
			if m == nil {
				return "", nil, errf("cannot parse switch header %q (want \"Unicast lids [0-N] of switch Lid L guid 0xGUID ('desc'):\")", clip(line))
			}
			lid, err := strconv.Atoi(m[1])
			if err != nil || lid > MaxLID {
				return "", nil, errf("switch LID %s outside the unicast range 1..%d", m[1], MaxLID)
			}
			guid, _ := strconv.ParseUint(m[2], 16, 64)
			if guid == 0 {
				return "", nil, errf("switch GUID 0 is not valid")
			}
			blocks = append(blocks, dumpBlock{line: lineNo, guid: guid, lid: lid})
		case strings.HasPrefix(line, "0x"):
			m := reDumpEntry.FindStringSubmatch(line)
			if m == nil {
				return "", nil, errf("cannot parse LFT entry %q (want \"0xLID PORT # comment\")", clip(line))
			}
			if len(blocks) == 0 {
				return "", nil, errf("LFT entry before any \"Unicast lids … of switch …\" header")
			}
			lid64, _ := strconv.ParseUint(m[1], 16, 16)
			port, _ := strconv.Atoi(m[2])
			lid := int(lid64)
			if lid == 0 || lid > MaxLID {
				return "", nil, errf("LID 0x%04x is not a unicast LID (1..0x%04x)", lid, MaxLID)
			}
			if port > MaxPort {
				return "", nil, errf("port %d out of range (an LFT names ports 0..%d)", port, MaxPort)
			}
			b := &blocks[len(blocks)-1]
			b.entries = append(b.entries, dumpEntry{line: lineNo, lid: lid, port: port})
		case reDumpCount.MatchString(line):
		default:
			return "", nil, errf("cannot parse line %q", clip(line))
		}
	}
	if err := sc.Err(); err != nil {
		return "", nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(blocks) == 0 {
		return "", nil, fmt.Errorf("%s: no \"Unicast lids\" switch blocks found: not an opensm-lfts.dump file", name)
	}
	return engine, blocks, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// ReadDump reads an opensm-lfts.dump file for the fabric g (with the
// per-port annotations of its file, if any). LIDs are resolved in this
// order: switch LIDs from the block headers and port-0 entries; LIDs the
// fabric file gives; for end ports, the LID a switch delivers through the
// port cabled to them; then the deterministic assignment of NewFabric for
// LIDs still unresolved. Errors (with file and line): unknown or duplicate
// switch GUIDs, ports beyond a switch's port count, LIDs no switch or end
// port can hold, contradictory deliveries, a LID listed twice for a switch.
func ReadDump(r io.Reader, name string, g *topology.Graph, ann *Annotations) (*Tables, error) {
	engine, blocks, err := parseDumpRaw(r, name)
	if err != nil {
		return nil, err
	}
	return resolveDump(engine, blocks, name, g, ann)
}

func resolveDump(engine string, blocks []dumpBlock, name string, g *topology.Graph, ann *Annotations) (*Tables, error) {
	base, err := NewFabric(g, ann)
	if err != nil {
		return nil, err
	}
	errAt := func(line int, format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
	}
	byGUID := map[uint64]int{}
	for v := 0; v < g.NumNodes(); v++ {
		byGUID[g.GUID(v)] = v
	}
	// Which LIDs the fabric file itself fixes.
	fileLIDs := g.LID(0) != 0
	for v := 0; v < g.NumNodes() && !fileLIDs; v++ {
		fileLIDs = g.LID(v) != 0
	}
	if ann != nil {
		for _, n := range ann.ports {
			if n.lid != 0 {
				fileLIDs = true
			}
		}
	}
	plan := &lidPlan{sw: map[int]int{}, port: map[portKey]int{}, src: map[int]string{}, guid: map[portKey]uint64{}}
	holder := map[int]string{} // LID -> description, for conflicts
	holderLine := map[int]int{}
	portOf := map[portKey]int{} // inferred LID of an end port
	blockOf := make([]int, len(blocks))
	seen := map[int]int{}
	for i, b := range blocks {
		v, ok := byGUID[b.guid]
		if !ok {
			return nil, errAt(b.line, "switch GUID 0x%016x is not in the fabric", b.guid)
		}
		if g.Kind(v) != topology.Switch {
			return nil, errAt(b.line, "GUID 0x%016x belongs to %s, which is not a switch", b.guid, g.NodeName(v))
		}
		if prev, dup := seen[v]; dup {
			return nil, errAt(b.line, "switch %s (GUID 0x%016x) has a second block (first at line %d)", g.NodeName(v), b.guid, prev)
		}
		seen[v] = b.line
		blockOf[i] = v
		lid := b.lid
		for _, e := range b.entries {
			if e.port > g.NumPorts(v) {
				return nil, errAt(e.line, "port %d out of range: switch %s has %d ports", e.port, g.NodeName(v), g.NumPorts(v))
			}
			if e.port == 0 {
				if lid != 0 && lid != e.lid {
					return nil, errAt(e.line, "switch %s routes LID %d to itself (port 0) but its LID is %d", g.NodeName(v), e.lid, lid)
				}
				lid = e.lid
			}
		}
		if lid == 0 {
			continue
		}
		if fl := g.LID(v); fl != 0 && fl != lid {
			return nil, errAt(b.line, "the fabric file gives switch %s LID %d, the LFT file %d", g.NodeName(v), fl, lid)
		}
		if h, dup := holder[lid]; dup {
			return nil, errAt(b.line, "LID %d is claimed by switch %s and by %s (line %d)", lid, g.NodeName(v), h, holderLine[lid])
		}
		holder[lid], holderLine[lid] = "switch "+g.NodeName(v), b.line
		plan.sw[v] = lid
	}
	// LIDs the fabric file fixes are authoritative.
	if fileLIDs {
		for s := range base.switches {
			v := base.Switch(s)
			if _, ok := plan.sw[v]; !ok && g.LID(v) != 0 {
				lid := g.LID(v)
				if h, dup := holder[lid]; dup {
					return nil, fmt.Errorf("%s: the fabric file gives LID %d to switch %s, the LFT file to %s (line %d)", name, lid, g.NodeName(v), h, holderLine[lid])
				}
				holder[lid] = "switch " + g.NodeName(v)
				plan.sw[v] = lid
			}
		}
		for _, tm := range base.terms {
			k := portKey{g.NodeName(tm.Node), tm.Port}
			fixed := false
			if ann != nil {
				fixed = ann.ports[k].lid != 0
			}
			if !fixed && g.LID(tm.Node) != 0 && g.LID(tm.Node) == tm.LID {
				fixed = true
			}
			if !fixed {
				continue
			}
			if h, dup := holder[tm.LID]; dup {
				return nil, fmt.Errorf("%s: the fabric file gives LID %d to %s[%d], the LFT file to %s (line %d)", name, tm.LID, k.node, k.port, h, holderLine[tm.LID])
			}
			holder[tm.LID] = fmt.Sprintf("%s[%d]", k.node, k.port)
			plan.port[k] = tm.LID
			portOf[k] = tm.LID
		}
	}
	// End-port LIDs from the ports switches deliver them through.
	for i, b := range blocks {
		v := blockOf[i]
		for _, e := range b.entries {
			if e.port == 0 {
				continue
			}
			c := g.PortChannel(v, e.port)
			if c < 0 {
				continue
			}
			w := g.Dst(c)
			if g.Kind(w) != topology.Endpoint {
				continue
			}
			k := portKey{g.NodeName(w), g.DstPort(c)}
			who := fmt.Sprintf("%s[%d]", k.node, k.port)
			if h, taken := holder[e.lid]; taken {
				if h == who || fileLIDs {
					continue // consistent, or a misdelivery the audit reports
				}
				return nil, errAt(e.line, "switch %s delivers LID %d to %s, but %s holds it (line %d)", g.NodeName(v), e.lid, who, h, holderLine[e.lid])
			}
			if prev, ok := portOf[k]; ok && prev != e.lid {
				return nil, errAt(e.line, "switch %s delivers LID %d to %s, which already receives LID %d (line %d); only LMC 0 is supported", g.NodeName(v), e.lid, who, prev, holderLine[prev])
			}
			holder[e.lid], holderLine[e.lid] = who, e.line
			portOf[k] = e.lid
			plan.port[k] = e.lid
		}
	}
	// Remaining LIDs: the deterministic assignment, where it is free.
	hasLID := map[string]bool{}
	for k := range plan.port {
		hasLID[fmt.Sprintf("%s[%d]", k.node, k.port)] = true
	}
	for _, b := range blocks {
		for _, e := range b.entries {
			if _, taken := holder[e.lid]; taken {
				continue
			}
			sw, term := base.Owner(e.lid)
			switch {
			case sw >= 0:
				v := base.Switch(sw)
				if _, has := plan.sw[v]; !has {
					plan.sw[v] = e.lid
					holder[e.lid], holderLine[e.lid] = "switch "+g.NodeName(v), e.line
					continue
				}
			case term >= 0:
				tm := base.terms[term]
				k := portKey{g.NodeName(tm.Node), tm.Port}
				if !hasLID[fmt.Sprintf("%s[%d]", k.node, k.port)] {
					plan.port[k] = e.lid
					hasLID[fmt.Sprintf("%s[%d]", k.node, k.port)] = true
					holder[e.lid], holderLine[e.lid] = fmt.Sprintf("%s[%d]", k.node, k.port), e.line
					continue
				}
			}
			return nil, errAt(e.line, "unknown LID %d: no switch has it and no switch delivers it to an end port", e.lid)
		}
	}
	for _, tm := range base.terms {
		k := portKey{g.NodeName(tm.Node), tm.Port}
		plan.guid[k] = tm.GUID
	}
	f, err := buildFabric(g, plan)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if engine == "" {
		engine = "file"
	}
	t := NewTables(f, engine)
	for i, b := range blocks {
		s := f.SwitchIndex(blockOf[i])
		set := map[int]int{}
		for _, e := range b.entries {
			if prev, dup := set[e.lid]; dup {
				return nil, errAt(e.line, "LID %d listed twice for switch %s (also line %d)", e.lid, g.NodeName(blockOf[i]), prev)
			}
			set[e.lid] = e.line
			t.Set(s, e.lid, e.port)
		}
	}
	return t, nil
}
