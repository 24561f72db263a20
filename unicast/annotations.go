package unicast

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/icn-hpc/icn/topology"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Annotations are the per-port facts of an ibnetdiscover / ibsim file that
// the topology model does not keep: the LID of every end-node port (from
// the port's own line, "# lid 12 lmc 0 …", or from the switch side, "# "desc"
// lid 12 …") and the port GUID in "[1](2c9000000ff95)". NewFabric uses them
// so that LFTs computed for an imported fabric use the fabric's own LIDs.
type Annotations struct {
	name  string
	ports map[portKey]portNote
	guids bool // the file gives GUIDs (GUID lines or port GUIDs)
}

// HasGUIDs reports whether the file gives GUIDs; without them the topology
// parser follows ibsim's assignment, which a real fabric does not have.
func (a *Annotations) HasGUIDs() bool { return a.guids }

type portNote struct {
	lid  int
	guid uint64
	line int
}

var (
	reAnnNode = regexp.MustCompile(`^(Switch|Ca|Hca|Rt|Router)\s+(\d+)\s+"([^"]*)"`)
	reAnnPort = regexp.MustCompile(`^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-FxX]+)\))?\s*"([^"]*)"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-FxX]+)\))?\s*(.*)$`)
	reAnnLID  = regexp.MustCompile(`\blid (\d+)`)
)

// ParseAnnotations scans ibnetdiscover / ibsim text for per-port LIDs and
// GUIDs. It does not validate the structure (topology.ParseIBNet does);
// it reports only contradictions: one port given two LIDs or two GUIDs.
func ParseAnnotations(data []byte, name string) (*Annotations, error) {
	p := &annotationParser{a: &Annotations{name: name, ports: map[portKey]portNote{}}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		p.lineNo++
		if err := p.parseLine(strings.TrimSpace(sc.Text())); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return p.a, nil
}

// annotationParser is the state of ParseAnnotations: the node whose port
// lines follow and the line number.
type annotationParser struct {
	a         *Annotations
	cur       string
	curSwitch bool
	lineNo    int
}

// parseLine handles one trimmed line: GUID lines, node headers and port
// lines; everything else is left to topology.ParseIBNet.
func (p *annotationParser) parseLine(line string) error {
	if line == "" || line[0] == '#' {
		return nil
	}
	if low := strings.ToLower(line); strings.HasPrefix(low, "switchguid") || strings.HasPrefix(low, "caguid") || strings.HasPrefix(low, "hcaguids") {
		p.a.guids = true
		return nil
	}
	if m := reAnnNode.FindStringSubmatch(line); m != nil {
		p.cur, p.curSwitch = m[3], m[1] == "Switch"
		return nil
	}
	m := reAnnPort.FindStringSubmatch(line)
	if m == nil || p.cur == "" {
		return nil
	}
	return p.parsePort(m)
}

// parsePort notes the LID and GUID a port line gives: on a switch, those
// of the peer port; on an end node, those of its own port.
func (p *annotationParser) parsePort(m []string) error {
	port, _ := strconv.Atoi(m[1])
	peerPort, _ := strconv.Atoi(m[4])
	comment := m[6]
	if i := strings.IndexByte(comment, '#'); i >= 0 {
		comment = comment[i+1:]
	}
	ownGUID, _ := parseHexGUID(m[2])
	peerGUID, _ := parseHexGUID(m[5])
	if ownGUID != 0 || peerGUID != 0 {
		p.a.guids = true
	}
	if p.curSwitch {
		// "# "peer desc" lid 12 4xSDR": the LID outside the quotes is
		// the peer port's.
		lid, err := p.lidIn(topology.StripQuoted(comment))
		if err != nil {
			return err
		}
		return p.note(portKey{m[3], peerPort}, lid, peerGUID)
	}
	// End node: "# lid 12 lmc 0 "peer desc" lid 6 …": the LID before
	// the first quote is the port's own.
	own := comment
	if i := strings.IndexByte(own, '"'); i >= 0 {
		own = own[:i]
	}
	lid, err := p.lidIn(own)
	if err != nil {
		return err
	}
	return p.note(portKey{p.cur, port}, lid, ownGUID)
}

// lidIn returns the LID of the first "lid N" in text (0 if none), which
// must be a unicast LID.
func (p *annotationParser) lidIn(text string) (int, error) {
	lid := 0
	if lm := reAnnLID.FindStringSubmatch(text); lm != nil {
		lid, _ = strconv.Atoi(lm[1])
	}
	if lid > MaxLID {
		return 0, fmt.Errorf("%s:%d: LID %d outside the unicast range 1..%d", p.a.name, p.lineNo, lid, MaxLID)
	}
	return lid, nil
}

// note records the LID and GUID (0: not given) of port k, failing if an
// earlier line gave it a different one.
func (p *annotationParser) note(k portKey, lid int, guid uint64) error {
	n := p.a.ports[k]
	if lid != 0 {
		if n.lid != 0 && n.lid != lid {
			return fmt.Errorf("%s:%d: port %d of %q has LID %d here but %d at line %d", p.a.name, p.lineNo, k.port, k.node, lid, n.lid, n.line)
		}
		n.lid = lid
	}
	if guid != 0 {
		if n.guid != 0 && n.guid != guid {
			return fmt.Errorf("%s:%d: port %d of %q has GUID %#x here but %#x at line %d", p.a.name, p.lineNo, k.port, k.node, guid, n.guid, n.line)
		}
		n.guid = guid
	}
	if n.line == 0 {
		n.line = p.lineNo
	}
	p.a.ports[k] = n
	return nil
}

func parseHexGUID(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	g, err := strconv.ParseUint(s, 16, 64)
	return g, err == nil
}

// AnnotationsOf returns the LID and GUID annotations of a fabric spec:
// those of its file when spec is file:PATH holding ibnetdiscover or ibsim
// text, else nil (generated fabrics get icn's own LIDs and GUIDs).
func AnnotationsOf(spec string) (*Annotations, error) {
	path, ok := strings.CutPrefix(spec, "file:")
	if !ok {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if topology.DetectFormat(data) != topology.FormatIBNet {
		return nil, nil
	}
	return ParseAnnotations(data, path)
}
