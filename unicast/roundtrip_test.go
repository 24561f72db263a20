package unicast

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// importIBNet parses ibnetdiscover text as the CLI does: the graph and its
// per-port annotations.
func importIBNet(t testing.TB, text, name string) (*topology.Graph, *Annotations) {
	t.Helper()
	g, err := topology.ParseIBNet(strings.NewReader(text), name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ann, err := ParseAnnotations([]byte(text), name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return g, ann
}

// exportIBNet writes g as ibnetdiscover text.
func exportIBNet(t testing.TB, g *topology.Graph) string {
	t.Helper()
	var b bytes.Buffer
	if err := g.WriteIBNet(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var (
	reGUIDLine = regexp.MustCompile(`(?m)^(switchguid|caguid|sysimgguid)=.*\n`)
	rePortGUID = regexp.MustCompile(`\]\([0-9a-f]+\)`)
)

// stripGUIDs turns ibnetdiscover text into an ibsim net file without GUIDs.
func stripGUIDs(s string) string {
	return rePortGUID.ReplaceAllString(reGUIDLine.ReplaceAllString(s, ""), "]")
}

// withOpenSMLIDs returns g with the LIDs OpenSM's LID manager gives a fresh
// subnet: the subnet manager's port LID 1, then every port (switch port 0
// and end ports) in increasing port GUID order.
func withOpenSMLIDs(t testing.TB, g *topology.Graph, sm int) *topology.Graph {
	t.Helper()
	var nodes []int
	for v := 0; v < g.NumNodes(); v++ {
		if v != sm {
			nodes = append(nodes, v)
		}
	}
	key := func(v int) uint64 {
		if g.Kind(v) == topology.Switch {
			return g.GUID(v)
		}
		return g.PortGUID(v, 1)
	}
	sort.Slice(nodes, func(i, j int) bool { return key(nodes[i]) < key(nodes[j]) })
	return withLIDs(t, g, append([]int{sm}, nodes...))
}

// withShuffledLIDs returns g with LIDs 1, 2, … given in a random order.
func withShuffledLIDs(t testing.TB, g *topology.Graph, seed uint64) *topology.Graph {
	t.Helper()
	return withLIDs(t, g, rand.New(rand.NewPCG(seed, 1)).Perm(g.NumNodes()))
}

// withLIDs returns a copy of g (single-port end nodes) whose nodes in the
// given order hold LIDs 1, 2, ….
func withLIDs(t testing.TB, g *topology.Graph, order []int) *topology.Graph {
	t.Helper()
	lid := map[int]int{}
	for i, v := range order {
		lid[v] = i + 1
	}
	b := topology.NewBuilder(g.Name())
	for v := 0; v < g.NumNodes(); v++ {
		b.AddNode(g.Kind(v), g.NodeName(v), topology.NodeOpts{GUID: g.GUID(v), Ports: g.NumPorts(v), Level: topology.NoLevel, Group: topology.NoGroup, LID: lid[v]})
	}
	for _, lk := range g.Links() {
		b.ConnectPorts(int(lk.A), int(lk.APort), int(lk.B), int(lk.BPort), topology.LinkOpts{Dim: -1, Bandwidth: float64(lk.Bandwidth), Class: lk.Class})
	}
	h, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var reDumpPortGUID = regexp.MustCompile(`(?m)^0x([0-9a-f]{4}) \d{3} # Channel Adapter portguid 0x([0-9a-f]{16}):`)

// namedGUIDs reads, independently of ReadDump, the port GUID a dump names
// for every end-port LID.
func namedGUIDs(t testing.TB, dump string) map[int]uint64 {
	t.Helper()
	out := map[int]uint64{}
	for _, m := range reDumpPortGUID.FindAllStringSubmatch(dump, -1) {
		lid, _ := strconv.ParseUint(m[1], 16, 16)
		g, _ := strconv.ParseUint(m[2], 16, 64)
		if prev, ok := out[int(lid)]; ok && prev != g {
			t.Fatalf("dump names two GUIDs for LID %d", lid)
		}
		out[int(lid)] = g
	}
	return out
}

// checkDelivery walks every (end port, end-port LID) route of tb and
// checks that it ends at the port whose GUID the dump names for the LID;
// it returns the number of pairs checked.
func checkDelivery(t *testing.T, name string, tb *Tables, named map[int]uint64) int {
	t.Helper()
	f := tb.F
	g := f.G
	pairs := 0
	for _, src := range f.Terminals() {
		for lid, guid := range named {
			_, term := f.Owner(lid)
			if term >= 0 && f.terms[term].Node == src.Node {
				continue
			}
			chans, _ := walkRoute(tb, src, lid)
			last := chans[len(chans)-1]
			v, p := g.Dst(last), g.DstPort(last)
			if g.Kind(v) == topology.Switch || g.PortGUID(v, p) != guid {
				t.Fatalf("%s: %s[%d] → LID %d ends at %s[%d] (port GUID %#x), the dump names %#x", name, g.NodeName(src.Node), src.Port, lid, g.NodeName(v), p, g.PortGUID(v, p), guid)
			}
			pairs++
		}
	}
	return pairs
}

// The round trip of the issue: generated fabric → ibnetdiscover export →
// import → tables → dump → import of the dump → audit, checking that every
// pair reaches the host whose port GUID the dump names. Fabrics with GUIDs,
// without (ibsim's assignment), with lid 0 everywhere and with OpenSM's LID
// numbering.
func TestExportRouteDumpRoundTrip(t *testing.T) {
	type variant struct {
		name string
		text func(g *topology.Graph) string
	}
	variants := []variant{
		{"guids, lid 0", func(g *topology.Graph) string { return exportIBNet(t, g) }},
		{"no guids (ibsim net)", func(g *topology.Graph) string { return stripGUIDs(exportIBNet(t, g)) }},
		{"opensm lids", func(g *topology.Graph) string { return exportIBNet(t, withOpenSMLIDs(t, g, g.NumNodes()-1)) }},
		{"icn lids (icn topo export)", func(g *topology.Graph) string {
			f, err := NewFabric(g, nil)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := g.WriteIBNetLIDs(&b, f.PortLID); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}},
		{"shuffled lids", func(g *topology.Graph) string { return exportIBNet(t, withShuffledLIDs(t, g, 3)) }},
	}
	for _, spec := range []string{"fattree:m=4,n=2", "dragonfly:a=4,p=2,h=2", "torus:3x3:endpoints=2"} {
		gen, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, vr := range variants {
			text := vr.text(gen)
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "[") && strings.Contains(line, "=") {
					t.Fatalf("%s: port line %q has an '=', which ibsim reads as a port option", spec, line)
				}
			}
			g, ann := importIBNet(t, text, spec)
			f, err := NewFabric(g, ann)
			if err != nil {
				t.Fatalf("%s %s: %v", spec, vr.name, err)
			}
			if (vr.name == "no guids (ibsim net)") != (f.GUIDNote != "") {
				t.Errorf("%s %s: GUID note %q", spec, vr.name, f.GUIDNote)
			}
			for _, engine := range []string{"minhop", "dfsssp"} {
				name := fmt.Sprintf("%s %s %s", spec, vr.name, engine)
				res := route(t, f, engine, 0)
				var dump bytes.Buffer
				if err := res.Tables.WriteDump(&dump); err != nil {
					t.Fatal(err)
				}
				if f.GUIDNote != "" && !strings.Contains(dump.String(), "# WARNING: ") {
					t.Errorf("%s: dump header does not warn about the missing GUIDs", name)
				}
				// Import the dump against a fresh import of the fabric file.
				g2, ann2 := importIBNet(t, text, spec)
				back, err := ReadDump(bytes.NewReader(dump.Bytes()), "dump", g2, ann2)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				r := audit(t, back)
				if !r.Reachable || r.Misdelivered != 0 {
					t.Errorf("%s: reachable %v, misdelivered %d (%s)", name, r.Reachable, r.Misdelivered, r.FirstUnreachable)
				}
				named := namedGUIDs(t, dump.String())
				if len(named) != len(f.Terminals()) {
					t.Errorf("%s: dump names %d end-port GUIDs, fabric has %d end ports", name, len(named), len(f.Terminals()))
				}
				if n := checkDelivery(t, name, back, named); n == 0 {
					t.Errorf("%s: no pairs checked", name)
				}
			}
		}
	}
}

// Tables whose port GUIDs belong to other hosts are reported as
// misdelivered, not as black holes: two hosts exchange GUIDs between the
// fabric the tables were computed for and the fabric they are audited on.
func TestMisdeliveryReported(t *testing.T) {
	gen, err := topology.Parse("fattree:m=4,n=2")
	if err != nil {
		t.Fatal(err)
	}
	text := exportIBNet(t, gen)
	g, ann := importIBNet(t, text, "a")
	f, err := NewFabric(g, ann)
	if err != nil {
		t.Fatal(err)
	}
	res := route(t, f, "minhop", 0)
	var dump bytes.Buffer
	res.Tables.WriteDump(&dump)
	// h0 and h1 swap node and port GUIDs.
	a, b := g.GUID(g.NodeByName("h0")), g.GUID(g.NodeByName("h1"))
	swapped := strings.NewReplacer(fmt.Sprintf("%x", a), fmt.Sprintf("%x", b), fmt.Sprintf("%x", b), fmt.Sprintf("%x", a),
		fmt.Sprintf("%x", a+1), fmt.Sprintf("%x", b+1), fmt.Sprintf("%x", b+1), fmt.Sprintf("%x", a+1)).Replace(text)
	g2, ann2 := importIBNet(t, swapped, "b")
	back, err := ReadDump(bytes.NewReader(dump.Bytes()), "dump", g2, ann2)
	if err != nil {
		t.Fatal(err)
	}
	r := audit(t, back)
	// Every other end port sends to h0 and h1: 2 × 7 pairs misdelivered.
	if r.Misdelivered != 14 || r.BlackHoles != 0 || r.Loops != 0 || !strings.Contains(r.FirstUnreachable, "instead of its holder") {
		t.Errorf("misdelivered %d, black holes %d, loops %d, first %q", r.Misdelivered, r.BlackHoles, r.Loops, r.FirstUnreachable)
	}
	checkAgainstBrute(t, "swapped", back, r)
}
