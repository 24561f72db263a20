package unicast

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The lane file (icn's own format; OpenSM keeps dfsssp's lanes inside
// path records) gives the virtual lane of every path that is not on lane 0:
//
//	# icn virtual lanes: …
//	Lanes 3
//	Source switch Lid 5 guid 0x0002c91000000012:
//	0x0012 1
//	0x0013 2
//
// A path is (source switch, destination LID); every end port cabled to the
// source switch uses its lane.

// WriteLanes writes the lane table of t (only "Lanes 1" when t has none).
func (t *Tables) WriteLanes(w io.Writer) error {
	f := t.F
	g := f.G
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# icn virtual lanes: lane of the path from each source switch to each destination LID; paths not listed use lane 0\n")
	fmt.Fprintf(bw, "Lanes %d\n", t.numLanes)
	if t.lanes != nil {
		order := make([]int, len(f.switches))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return g.GUID(f.Switch(order[a])) < g.GUID(f.Switch(order[b])) })
		for _, s := range order {
			row := t.lanes[s*t.stride : (s+1)*t.stride]
			header := false
			for lid, l := range row {
				if l == 0 {
					continue
				}
				if !header {
					fmt.Fprintf(bw, "Source switch Lid %d guid 0x%016x:\n", f.swLID[s], g.GUID(f.Switch(s)))
					header = true
				}
				fmt.Fprintf(bw, "0x%04x %d\n", lid, l)
			}
		}
	}
	return bw.Flush()
}

var (
	reLanesCount  = regexp.MustCompile(`^Lanes (\d+)$`)
	reLanesHeader = regexp.MustCompile(`^Source switch Lid (\d+) guid 0x([0-9a-fA-F]{1,16}):?$`)
	reLanesEntry  = regexp.MustCompile(`^0x([0-9a-fA-F]{1,4})\s+(\d{1,2})$`)
)

// ReadLanes reads a lane file and attaches it to t (whose fabric must know
// every switch GUID and LID the file names).
func (t *Tables) ReadLanes(r io.Reader, name string) error {
	f := t.F
	g := f.G
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	lineNo := 0
	errf := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, a...))
	}
	byGUID := map[uint64]int{}
	for s := range f.switches {
		byGUID[g.GUID(f.Switch(s))] = s
	}
	n := 0
	cur := -1
	var lanes []uint8
	seen := map[int]bool{}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if m := reLanesCount.FindStringSubmatch(line); m != nil {
			if n != 0 {
				return errf("second \"Lanes\" line")
			}
			n, _ = strconv.Atoi(m[1])
			if n < 1 || n > MaxLanes {
				return errf("lane count %s outside 1..%d", m[1], MaxLanes)
			}
			lanes = make([]uint8, len(f.switches)*t.stride)
			continue
		}
		if n == 0 {
			return errf("expected \"Lanes N\" before %q", clip(line))
		}
		if m := reLanesHeader.FindStringSubmatch(line); m != nil {
			guid, _ := strconv.ParseUint(m[2], 16, 64)
			s, ok := byGUID[guid]
			if !ok {
				return errf("switch GUID 0x%016x is not a switch of the fabric", guid)
			}
			if seen[s] {
				return errf("switch %s listed twice", g.NodeName(f.Switch(s)))
			}
			seen[s] = true
			if lid, _ := strconv.Atoi(m[1]); lid != int(f.swLID[s]) {
				return errf("switch %s has LID %d in the tables, %d here", g.NodeName(f.Switch(s)), f.swLID[s], lid)
			}
			cur = s
			continue
		}
		if m := reLanesEntry.FindStringSubmatch(line); m != nil {
			if cur < 0 {
				return errf("lane entry before any \"Source switch\" header")
			}
			lid64, _ := strconv.ParseUint(m[1], 16, 16)
			lid := int(lid64)
			if sw, term := f.Owner(lid); sw < 0 && term < 0 {
				return errf("unknown LID %d", lid)
			}
			l, _ := strconv.Atoi(m[2])
			if l >= n {
				return errf("lane %d but the file declares %d lanes", l, n)
			}
			lanes[cur*t.stride+lid] = uint8(l)
			continue
		}
		return errf("cannot parse line %q", clip(line))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: no \"Lanes N\" line: not an icn lane file", name)
	}
	t.setLanes(lanes, n)
	return nil
}
