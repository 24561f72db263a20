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

// WriteDump writes t in opensm-lfts.dump format, switches in GUID order, as
// it goes: memory beyond the tables is one comment per LID and one switch
// block. When the fabric file gave no GUIDs the header says so.
func (t *Tables) WriteDump(w io.Writer) error { return t.writeDump(w, t.dumpTails()) }

// WriteCompactDump writes t as WriteDump does but without the comment
// that names each LID's holder: about a sixth of the size (381 MB instead
// of 2.27 GB for 16 000 hosts with ftree). OpenSM's file engine reads only the LID
// and the port of an entry, so it loads either (checked on ibsim); icn
// reads it back from the fabric file's LIDs.
func (t *Tables) WriteCompactDump(w io.Writer) error { return t.writeDump(w, nil) }

var newline = []byte{'\n'}

// writeDump writes the dump with the given per-LID line tails (nil: none).
func (t *Tables) writeDump(w io.Writer, tails [][]byte) error {
	f := t.F
	g := f.G
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(bw, "%s engine=%s fabric=%s\n", dumpTag, t.Engine, desc(g.Name()))
	if f.GUIDNote != "" {
		fmt.Fprintf(bw, "# WARNING: %s\n", desc(f.GUIDNote))
	}
	maxLID := t.stride - 1
	var buf []byte
	for _, s := range f.switchesByGUID() {
		v := f.Switch(s)
		if g.NodeFailed(v) {
			continue
		}
		buf = fmt.Appendf(buf[:0], "Unicast lids [0-%d] of switch Lid %d guid 0x%016x ('%s'):\n", maxLID, f.swLID[s], g.GUID(v), desc(g.NodeName(v)))
		for lid, p := range t.row(s) {
			if p == noPort {
				continue
			}
			buf = appendDumpEntry(buf, lid, int(p))
			if tails != nil {
				buf = append(buf, tails[lid]...)
			} else {
				buf = append(buf, newline...)
			}
			if len(buf) >= 1<<16 {
				if _, err := bw.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		buf = strconv.AppendInt(buf, int64(maxLID), 10)
		buf = append(buf, " lids dumped\n"...)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// DumpSize is the number of bytes WriteDump writes, computed without
// writing them (OpenSM's format lists every LID for every switch: 2.3 GB
// for 16 000 hosts).
func (t *Tables) DumpSize() int64 { return t.dumpSize(t.dumpTails()) }

// CompactDumpSize is the number of bytes WriteCompactDump writes.
func (t *Tables) CompactDumpSize() int64 { return t.dumpSize(nil) }

func (t *Tables) dumpSize(tails [][]byte) int64 {
	f := t.F
	g := f.G
	n := int64(len(fmt.Sprintf("%s engine=%s fabric=%s\n", dumpTag, t.Engine, desc(g.Name()))))
	if f.GUIDNote != "" {
		n += int64(len(fmt.Sprintf("# WARNING: %s\n", desc(f.GUIDNote))))
	}
	maxLID := t.stride - 1
	for _, s := range f.switchesByGUID() {
		v := f.Switch(s)
		if g.NodeFailed(v) {
			continue
		}
		n += int64(len(fmt.Sprintf("Unicast lids [0-%d] of switch Lid %d guid 0x%016x ('%s'):\n", maxLID, f.swLID[s], g.GUID(v), desc(g.NodeName(v)))))
		for lid, p := range t.row(s) {
			if p == noPort {
				continue
			}
			n += dumpEntrySize(lid, tails)
		}
		n += int64(len(strconv.Itoa(maxLID)) + len(" lids dumped\n"))
	}
	return n
}

// dumpEntrySize is the bytes of one entry of a switch's table in the
// dump: "0xLLLL PPP" and its tail (a newline, or with tails the comment
// and newline of the LID).
func dumpEntrySize(lid int, tails [][]byte) int64 {
	entry := 10
	if lid > 0xffff {
		entry = 2 + len(strconv.FormatInt(int64(lid), 16)) + 4
	}
	tail := 1
	if tails != nil {
		tail = len(tails[lid])
	}
	return int64(entry + tail)
}

// DumpSizeBound is the size of the dump (compact: WriteCompactDump's) of
// tables that route every LID of the fabric on every live switch, known
// before any routing: DumpSize of a fabric whose LIDs are all reachable
// from every switch, an upper bound otherwise. Callers refuse a dump that
// is too large before spending the routing on it.
func (f *Fabric) DumpSizeBound(engine string, compact bool) int64 {
	t := &Tables{F: f, Engine: engine, stride: f.maxLID + 1}
	var tails [][]byte
	if !compact {
		tails = t.dumpTails()
	}
	g := f.G
	n := int64(len(fmt.Sprintf("%s engine=%s fabric=%s\n", dumpTag, t.Engine, desc(g.Name()))))
	if f.GUIDNote != "" {
		n += int64(len(fmt.Sprintf("# WARNING: %s\n", desc(f.GUIDNote))))
	}
	maxLID := t.stride - 1
	var rows int64 // the entries of one switch
	for lid := 0; lid <= maxLID; lid++ {
		if sw, term := f.Owner(lid); sw < 0 && term < 0 {
			continue
		}
		rows += dumpEntrySize(lid, tails)
	}
	for s := range f.switches {
		v := f.Switch(s)
		if g.NodeFailed(v) {
			continue
		}
		n += int64(len(fmt.Sprintf("Unicast lids [0-%d] of switch Lid %d guid 0x%016x ('%s'):\n", maxLID, f.swLID[s], g.GUID(v), desc(g.NodeName(v)))))
		n += rows + int64(len(strconv.Itoa(maxLID))+len(" lids dumped\n"))
	}
	return n
}

// appendDumpEntry appends "0xLLLL PPP" (LID in 4 hex digits, port in 3
// decimal digits), OpenSM's format.
func appendDumpEntry(buf []byte, lid, port int) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '0', 'x')
	if lid > 0xffff {
		buf = strconv.AppendInt(buf, int64(lid), 16)
	} else {
		buf = append(buf, hex[lid>>12&15], hex[lid>>8&15], hex[lid>>4&15], hex[lid&15])
	}
	return append(buf, ' ', byte('0'+port/100), byte('0'+port/10%10), byte('0'+port%10))
}

// dumpTails returns, per LID, the comment that ends its entry lines.
func (t *Tables) dumpTails() [][]byte {
	f := t.F
	g := f.G
	tails := make([][]byte, t.stride)
	for lid := range tails {
		sw, term := f.Owner(lid)
		switch {
		case sw >= 0:
			v := f.Switch(sw)
			tails[lid] = fmt.Appendf(nil, " # Switch portguid 0x%016x: '%s'\n", g.GUID(v), desc(g.NodeName(v)))
		case term >= 0:
			tm := f.terms[term]
			tails[lid] = fmt.Appendf(nil, " # Channel Adapter portguid 0x%016x: '%s'\n", tm.GUID, desc(g.NodeName(tm.Node)))
		default:
			tails[lid] = []byte(" # unknown node and type\n")
		}
	}
	return tails
}

// switchesByGUID returns the switch indices in GUID order.
func (f *Fabric) switchesByGUID() []int {
	order := make([]int, len(f.switches))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return f.G.GUID(f.Switch(order[a])) < f.G.GUID(f.Switch(order[b])) })
	return order
}

func desc(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// dumpBlock and dumpEntry are the raw content of a dump file.
type dumpBlock struct {
	line    int
	guid    uint64
	lid     int // 0 if the header gives none
	entries []dumpEntry
}

// dumpEntry is one "0xLID PORT" line, packed: a 2 GB dump has 36 M.
type dumpEntry struct {
	line int32
	lid  uint16
	port uint8
}

// namedGUID is the port GUID the entry comments give a LID.
type namedGUID struct {
	guid uint64
	line int
}

var (
	reDumpHeader = regexp.MustCompile(`^Unicast lids \[(?:0x)?[0-9a-fA-F]+-(?:0x)?[0-9a-fA-F]+\] of switch Lid (\d+) guid 0x([0-9a-fA-F]{1,16})(?:\s.*)?$`)
	reDumpCount  = regexp.MustCompile(`^\d+ lids dumped$`)
)

// dumpRaw is the content of a dump file, before a fabric resolves it.
type dumpRaw struct {
	engine string
	blocks []dumpBlock
	named  map[int]namedGUID // LID -> port GUID the comments name
}

// parseDumpRaw reads the blocks of a dump file without a fabric. Errors
// name the file and line.
func parseDumpRaw(r io.Reader, name string) (*dumpRaw, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	raw := &dumpRaw{named: map[int]namedGUID{}}
	lineNo := 0
	errf := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, a...))
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		var err error
		switch {
		case line == "":
		case line[0] == '#':
			if rest, ok := strings.CutPrefix(line, dumpTag); ok {
				for _, fld := range strings.Fields(rest) {
					if e, ok := strings.CutPrefix(fld, "engine="); ok {
						raw.engine = e
					}
				}
			}
		case strings.HasPrefix(line, "Multicast mlids"):
			err = errf("this is a multicast table dump, not opensm-lfts.dump")
		case strings.HasPrefix(line, "Unicast lids"):
			err = raw.header(line, lineNo, errf)
		case strings.HasPrefix(line, "0x"):
			err = raw.entry(line, lineNo, errf)
		case reDumpCount.MatchString(line):
		default:
			err = errf("cannot parse line %q", clip(line))
		}
		if err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(raw.blocks) == 0 {
		return nil, fmt.Errorf("%s: no \"Unicast lids\" switch blocks found: not an opensm-lfts.dump file", name)
	}
	return raw, nil
}

// header reads a "Unicast lids [0-N] of switch Lid L guid 0xG ('desc'):" line.
func (raw *dumpRaw) header(line string, lineNo int, errf func(string, ...any) error) error {
	m := reDumpHeader.FindStringSubmatch(line)
	if m == nil {
		return errf("cannot parse switch header %q (want \"Unicast lids [0-N] of switch Lid L guid 0xGUID ('desc'):\")", clip(line))
	}
	lid, err := strconv.Atoi(m[1])
	if err != nil || lid > MaxLID {
		return errf("switch LID %s outside the unicast range 1..%d", m[1], MaxLID)
	}
	guid, _ := strconv.ParseUint(m[2], 16, 64)
	if guid == 0 {
		return errf("switch GUID 0 is not valid")
	}
	b := dumpBlock{line: lineNo, guid: guid, lid: lid}
	if n := len(raw.blocks); n > 0 {
		// Switches list about as many LIDs each: size the next block
		// like the last one instead of growing it by doubling.
		b.entries = make([]dumpEntry, 0, len(raw.blocks[n-1].entries))
	}
	raw.blocks = append(raw.blocks, b)
	return nil
}

// entry reads a "0xLID PORT # comment" line and the port GUID the comment
// names ("… portguid 0x…").
func (raw *dumpRaw) entry(line string, lineNo int, errf func(string, ...any) error) error {
	lid, port, comment, ok := splitDumpEntry(line)
	if !ok {
		return errf("cannot parse LFT entry %q (want \"0xLID PORT # comment\")", clip(line))
	}
	if len(raw.blocks) == 0 {
		return errf("LFT entry before any \"Unicast lids … of switch …\" header")
	}
	if lid == 0 || lid > MaxLID {
		return errf("LID 0x%04x is not a unicast LID (1..0x%04x)", lid, MaxLID)
	}
	if port > MaxPort {
		return errf("port %d out of range (an LFT names ports 0..%d)", port, MaxPort)
	}
	if i := strings.Index(comment, "portguid 0x"); i >= 0 {
		hex := comment[i+len("portguid 0x"):]
		n := 0
		for n < len(hex) && n < 17 && isHex(hex[n]) {
			n++
		}
		if guid, err := strconv.ParseUint(hex[:n], 16, 64); err == nil && n > 0 && guid != 0 {
			if prev, seen := raw.named[lid]; seen && prev.guid != guid {
				return errf("LID %d is said to be portguid 0x%016x here but 0x%016x at line %d", lid, guid, prev.guid, prev.line)
			} else if !seen {
				raw.named[lid] = namedGUID{guid, lineNo}
			}
		}
	}
	b := &raw.blocks[len(raw.blocks)-1]
	b.entries = append(b.entries, dumpEntry{line: int32(lineNo), lid: uint16(lid), port: uint8(port)})
	return nil
}

// splitDumpEntry parses "0xLLLL PPP[ # comment]": 1–4 hex digits, white
// space, 1–3 decimal digits, then nothing or white space and a comment.
func splitDumpEntry(line string) (lid, port int, comment string, ok bool) {
	i := 2
	for i < len(line) && i < 6 && isHex(line[i]) {
		i++
	}
	if i == 2 || (i < len(line) && isHex(line[i])) {
		return 0, 0, "", false
	}
	l, _ := strconv.ParseUint(line[2:i], 16, 32)
	j := i
	for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
		j++
	}
	if j == i {
		return 0, 0, "", false
	}
	k := j
	for k < len(line) && k-j < 4 && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	if k == j || k-j > 3 {
		return 0, 0, "", false
	}
	p, _ := strconv.Atoi(line[j:k])
	rest := line[k:]
	if rest != "" {
		t := strings.TrimLeft(rest, " \t")
		if t == rest || t == "" || t[0] != '#' {
			return 0, 0, "", false
		}
		comment = t[1:]
	}
	return int(l), p, comment, true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
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
// fabric file gives; the port GUIDs the entry comments name (OpenSM and
// icn write "portguid 0x…" for every LID): such a LID belongs to the port
// with that GUID, and a switch that delivers it elsewhere misdelivers it
// (the audit reports it); for end ports no GUID names, the LID a switch
// delivers through the port cabled to them; then the deterministic
// assignment of NewFabric for LIDs still unresolved. Errors (with file and
// line): unknown or duplicate switch GUIDs, port GUIDs the fabric does not
// have, ports beyond a switch's port count, LIDs no switch or end port can
// hold, contradictory deliveries or GUIDs, a LID listed twice for a switch.
func ReadDump(r io.Reader, name string, g *topology.Graph, ann *Annotations) (*Tables, error) {
	raw, err := parseDumpRaw(r, name)
	if err != nil {
		return nil, err
	}
	return resolveDump(raw, name, g, ann)
}

// dumpResolver decides who holds every LID a dump names.
type dumpResolver struct {
	name       string
	g          *topology.Graph
	ann        *Annotations
	base       *Fabric
	blocks     []dumpBlock
	blockOf    []int // node id of each block's switch
	plan       *lidPlan
	holder     map[int]string // LID -> "switch X" or "node[port]"
	holderLine map[int]int
	portOf     map[portKey]int // LID of an end port, once known
	named      map[int]bool    // LIDs whose holder a port GUID names
	namedGUIDs map[int]namedGUID
	fileLIDs   bool
}

func (d *dumpResolver) errAt(line int, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", d.name, line, fmt.Sprintf(format, a...))
}

func resolveDump(raw *dumpRaw, name string, g *topology.Graph, ann *Annotations) (*Tables, error) {
	engine, blocks := raw.engine, raw.blocks
	base, err := NewFabric(g, ann)
	if err != nil {
		return nil, err
	}
	d := &dumpResolver{name: name, g: g, ann: ann, base: base, blocks: blocks, blockOf: make([]int, len(blocks)), namedGUIDs: raw.named,
		plan:   &lidPlan{sw: map[int]int{}, port: map[portKey]int{}, src: map[int]string{}},
		holder: map[int]string{}, holderLine: map[int]int{}, portOf: map[portKey]int{}, named: map[int]bool{}}
	d.fileLIDs = fabricFileLIDs(g, ann)
	steps := []func() error{d.switchBlocks, d.fileFixed, d.portGUIDs, d.deliveries, d.leftovers}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	f, err := buildFabric(g, d.plan)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	f.GUIDNote = base.GUIDNote
	if engine == "" {
		engine = "file"
	}
	return d.tables(f, engine)
}

// fabricFileLIDs reports whether the fabric file fixes any LID.
func fabricFileLIDs(g *topology.Graph, ann *Annotations) bool {
	for v := 0; v < g.NumNodes(); v++ {
		if g.LID(v) != 0 {
			return true
		}
	}
	if ann != nil {
		for _, n := range ann.ports {
			if n.lid != 0 {
				return true
			}
		}
	}
	return false
}

// where says where the holder of lid was found.
func (d *dumpResolver) where(lid int) string {
	if l := d.holderLine[lid]; l > 0 {
		return fmt.Sprintf("line %d", l)
	}
	return "the fabric file"
}

// claim records that who holds lid (first claim wins; callers check).
func (d *dumpResolver) claim(lid int, who string, line int) {
	d.holder[lid], d.holderLine[lid] = who, line
}

// switchBlocks maps every block to its switch and takes the switch LIDs
// from the headers and port-0 entries.
func (d *dumpResolver) switchBlocks() error {
	g := d.g
	byGUID := map[uint64]int{}
	for v := 0; v < g.NumNodes(); v++ {
		byGUID[g.GUID(v)] = v
	}
	seen := map[int]int{}
	for i, b := range d.blocks {
		v, ok := byGUID[b.guid]
		if !ok {
			return d.errAt(b.line, "switch GUID 0x%016x is not in the fabric", b.guid)
		}
		if g.Kind(v) != topology.Switch {
			return d.errAt(b.line, "GUID 0x%016x belongs to %s, which is not a switch", b.guid, g.NodeName(v))
		}
		if prev, dup := seen[v]; dup {
			return d.errAt(b.line, "switch %s (GUID 0x%016x) has a second block (first at line %d)", g.NodeName(v), b.guid, prev)
		}
		seen[v] = b.line
		d.blockOf[i] = v
		lid := b.lid
		for _, e := range b.entries {
			if int(e.port) > g.NumPorts(v) {
				return d.errAt(int(e.line), "port %d out of range: switch %s has %d ports", int(e.port), g.NodeName(v), g.NumPorts(v))
			}
			if int(e.port) == 0 {
				if lid != 0 && lid != int(e.lid) {
					return d.errAt(int(e.line), "switch %s routes LID %d to itself (port 0) but its LID is %d", g.NodeName(v), int(e.lid), lid)
				}
				lid = int(e.lid)
			}
		}
		if lid == 0 {
			continue
		}
		if fl := g.LID(v); fl != 0 && fl != lid {
			return d.errAt(b.line, "the fabric file gives switch %s LID %d, the LFT file %d", g.NodeName(v), fl, lid)
		}
		if h, dup := d.holder[lid]; dup {
			return d.errAt(b.line, "LID %d is claimed by switch %s and by %s (line %d)", lid, g.NodeName(v), h, d.holderLine[lid])
		}
		d.claim(lid, "switch "+g.NodeName(v), b.line)
		d.plan.sw[v] = lid
	}
	return nil
}

// fileFixed adds the LIDs the fabric file fixes: they are authoritative.
func (d *dumpResolver) fileFixed() error {
	if !d.fileLIDs {
		return nil
	}
	g := d.g
	for s := range d.base.switches {
		v := d.base.Switch(s)
		if _, ok := d.plan.sw[v]; !ok && g.LID(v) != 0 {
			lid := g.LID(v)
			if h, dup := d.holder[lid]; dup {
				return fmt.Errorf("%s: the fabric file gives LID %d to switch %s, the LFT file to %s (line %d)", d.name, lid, g.NodeName(v), h, d.holderLine[lid])
			}
			d.claim(lid, "switch "+g.NodeName(v), 0)
			d.plan.sw[v] = lid
		}
	}
	for _, tm := range d.base.terms {
		k := portKey{g.NodeName(tm.Node), tm.Port}
		fixed := false
		if d.ann != nil {
			fixed = d.ann.ports[k].lid != 0
		}
		if !fixed && g.LID(tm.Node) != 0 && g.LID(tm.Node) == tm.LID {
			fixed = true
		}
		if !fixed {
			continue
		}
		if h, dup := d.holder[tm.LID]; dup {
			return fmt.Errorf("%s: the fabric file gives LID %d to %s[%d], the LFT file to %s (line %d)", d.name, tm.LID, k.node, k.port, h, d.holderLine[tm.LID])
		}
		d.claim(tm.LID, fmt.Sprintf("%s[%d]", k.node, k.port), 0)
		d.plan.port[k] = tm.LID
		d.portOf[k] = tm.LID
	}
	return nil
}

// portGUIDs gives every LID whose entries name a port GUID to that port.
func (d *dumpResolver) portGUIDs() error {
	g := d.g
	swByGUID := map[uint64]int{}
	for s := range d.base.switches {
		swByGUID[g.GUID(d.base.Switch(s))] = d.base.Switch(s)
	}
	termByGUID := map[uint64]Terminal{}
	for _, tm := range d.base.terms {
		termByGUID[tm.GUID] = tm
	}
	lids := make([]int, 0, len(d.namedGUIDs))
	for lid := range d.namedGUIDs {
		lids = append(lids, lid)
	}
	sort.Ints(lids)
	for _, lid := range lids {
		n := d.namedGUIDs[lid]
		var who string
		if v, ok := swByGUID[n.guid]; ok {
			who = "switch " + g.NodeName(v)
			if have, has := d.plan.sw[v]; has && have != lid {
				return d.errAt(n.line, "LID %d is said to be switch %s (portguid 0x%016x), whose LID is %d", lid, g.NodeName(v), n.guid, have)
			}
			if h, taken := d.holder[lid]; taken && h != who {
				return d.errAt(n.line, "LID %d is said to be switch %s (portguid 0x%016x), but %s holds it (%s)", lid, g.NodeName(v), n.guid, h, d.where(lid))
			}
			d.plan.sw[v] = lid
		} else if tm, ok := termByGUID[n.guid]; ok {
			k := portKey{g.NodeName(tm.Node), tm.Port}
			who = fmt.Sprintf("%s[%d]", k.node, k.port)
			if h, taken := d.holder[lid]; taken && h != who {
				return d.errAt(n.line, "LID %d is said to be %s (portguid 0x%016x), but %s holds it (%s)", lid, who, n.guid, h, d.where(lid))
			}
			if prev, has := d.portOf[k]; has && prev != lid {
				return d.errAt(n.line, "LID %d is said to be %s (portguid 0x%016x), which holds LID %d; only LMC 0 is supported", lid, who, n.guid, prev)
			}
			d.portOf[k] = lid
			d.plan.port[k] = lid
		} else {
			return d.errAt(n.line, "LID %d is said to be portguid 0x%016x, which no port of the fabric has (tables computed for other GUIDs?)", lid, n.guid)
		}
		if _, taken := d.holder[lid]; !taken {
			d.claim(lid, who, n.line)
		}
		d.named[lid] = true
	}
	return nil
}

// deliveries infers end-port LIDs from the ports switches deliver them
// through, for LIDs no GUID and no fabric file names.
func (d *dumpResolver) deliveries() error {
	g := d.g
	for i, b := range d.blocks {
		v := d.blockOf[i]
		for _, e := range b.entries {
			if int(e.port) == 0 {
				continue
			}
			c := g.PortChannel(v, int(e.port))
			if c < 0 {
				continue
			}
			w := g.Dst(c)
			if g.Kind(w) != topology.Endpoint {
				continue
			}
			k := portKey{g.NodeName(w), g.DstPort(c)}
			who := fmt.Sprintf("%s[%d]", k.node, k.port)
			if h, taken := d.holder[int(e.lid)]; taken {
				if h == who || d.fileLIDs || d.named[int(e.lid)] {
					continue // consistent, or a misdelivery the audit reports
				}
				return d.errAt(int(e.line), "switch %s delivers LID %d to %s, but %s holds it (%s)", g.NodeName(v), int(e.lid), who, h, d.where(int(e.lid)))
			}
			if prev, ok := d.portOf[k]; ok && prev != int(e.lid) {
				return d.errAt(int(e.line), "switch %s delivers LID %d to %s, which already receives LID %d (line %d); only LMC 0 is supported", g.NodeName(v), int(e.lid), who, prev, d.holderLine[prev])
			}
			d.claim(int(e.lid), who, int(e.line))
			d.portOf[k] = int(e.lid)
			d.plan.port[k] = int(e.lid)
		}
	}
	return nil
}

// leftovers gives LIDs still unresolved to their holder under the
// deterministic assignment, where that holder has no LID yet.
func (d *dumpResolver) leftovers() error {
	g := d.g
	for _, b := range d.blocks {
		for _, e := range b.entries {
			if _, taken := d.holder[int(e.lid)]; taken {
				continue
			}
			sw, term := d.base.Owner(int(e.lid))
			switch {
			case sw >= 0:
				v := d.base.Switch(sw)
				if _, has := d.plan.sw[v]; !has {
					d.plan.sw[v] = int(e.lid)
					d.claim(int(e.lid), "switch "+g.NodeName(v), int(e.line))
					continue
				}
			case term >= 0:
				tm := d.base.terms[term]
				k := portKey{g.NodeName(tm.Node), tm.Port}
				if _, has := d.plan.port[k]; !has {
					d.plan.port[k] = int(e.lid)
					d.claim(int(e.lid), fmt.Sprintf("%s[%d]", k.node, k.port), int(e.line))
					continue
				}
			}
			return d.errAt(int(e.line), "unknown LID %d: no switch has it and no switch delivers it to an end port", int(e.lid))
		}
	}
	return nil
}

// tables fills the tables of f from the blocks.
func (d *dumpResolver) tables(f *Fabric, engine string) (*Tables, error) {
	t := NewTables(f, engine)
	for i, b := range d.blocks {
		s := f.SwitchIndex(d.blockOf[i])
		set := map[int]int{}
		for _, e := range b.entries {
			if prev, dup := set[int(e.lid)]; dup {
				return nil, d.errAt(int(e.line), "LID %d listed twice for switch %s (also line %d)", int(e.lid), d.g.NodeName(d.blockOf[i]), prev)
			}
			set[int(e.lid)] = int(e.line)
			t.Set(s, int(e.lid), int(e.port))
		}
	}
	return t, nil
}
