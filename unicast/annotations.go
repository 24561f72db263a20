package unicast

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/icn-hpc/icn/topology"
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
	a := &Annotations{name: name, ports: map[portKey]portNote{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	cur, curSwitch := "", false
	lineNo := 0
	set := func(k portKey, lid int, guid uint64) error {
		n := a.ports[k]
		if lid != 0 {
			if n.lid != 0 && n.lid != lid {
				return fmt.Errorf("%s:%d: port %d of %q has LID %d here but %d at line %d", name, lineNo, k.port, k.node, lid, n.lid, n.line)
			}
			n.lid = lid
		}
		if guid != 0 {
			if n.guid != 0 && n.guid != guid {
				return fmt.Errorf("%s:%d: port %d of %q has GUID %#x here but %#x at line %d", name, lineNo, k.port, k.node, guid, n.guid, n.line)
			}
			n.guid = guid
		}
		if n.line == 0 {
			n.line = lineNo
		}
		a.ports[k] = n
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if low := strings.ToLower(line); strings.HasPrefix(low, "switchguid") || strings.HasPrefix(low, "caguid") || strings.HasPrefix(low, "hcaguids") {
			a.guids = true
			continue
		}
		if m := reAnnNode.FindStringSubmatch(line); m != nil {
			cur, curSwitch = m[3], m[1] == "Switch"
			continue
		}
		m := reAnnPort.FindStringSubmatch(line)
		if m == nil || cur == "" {
			continue
		}
		port, _ := strconv.Atoi(m[1])
		peerPort, _ := strconv.Atoi(m[4])
		comment := m[6]
		if i := strings.IndexByte(comment, '#'); i >= 0 {
			comment = comment[i+1:]
		}
		ownGUID, _ := parseHexGUID(m[2])
		peerGUID, _ := parseHexGUID(m[5])
		if ownGUID != 0 || peerGUID != 0 {
			a.guids = true
		}
		if curSwitch {
			// "# "peer desc" lid 12 4xSDR": the LID outside the quotes is
			// the peer port's.
			lid := 0
			if lm := reAnnLID.FindStringSubmatch(topology.StripQuoted(comment)); lm != nil {
				lid, _ = strconv.Atoi(lm[1])
			}
			if lid > MaxLID {
				return nil, fmt.Errorf("%s:%d: LID %d outside the unicast range 1..%d", name, lineNo, lid, MaxLID)
			}
			if err := set(portKey{m[3], peerPort}, lid, peerGUID); err != nil {
				return nil, err
			}
			continue
		}
		// End node: "# lid 12 lmc 0 "peer desc" lid 6 …": the LID before
		// the first quote is the port's own.
		own := comment
		if i := strings.IndexByte(own, '"'); i >= 0 {
			own = own[:i]
		}
		lid := 0
		if lm := reAnnLID.FindStringSubmatch(own); lm != nil {
			lid, _ = strconv.Atoi(lm[1])
		}
		if lid > MaxLID {
			return nil, fmt.Errorf("%s:%d: LID %d outside the unicast range 1..%d", name, lineNo, lid, MaxLID)
		}
		if err := set(portKey{cur, port}, lid, ownGUID); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return a, nil
}

func parseHexGUID(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	g, err := strconv.ParseUint(s, 16, 64)
	return g, err == nil
}
