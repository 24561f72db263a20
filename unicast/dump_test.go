package unicast

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// The exact text OpenSM's dump_ucast_lfts writes, for one switch with two
// hosts (switch LID 1, hosts 2 and 3 in id order after the switch).
func TestDumpFormat(t *testing.T) {
	b := topology.NewBuilder("tiny")
	h0 := b.AddNode(topology.Endpoint, "h0", topology.NodeOpts{GUID: 0x100, Level: topology.NoLevel, Group: topology.NoGroup})
	h1 := b.AddNode(topology.Endpoint, "h1", topology.NodeOpts{GUID: 0x200, Level: topology.NoLevel, Group: topology.NoGroup})
	sw := b.AddNode(topology.Switch, "sw", topology.NodeOpts{GUID: 0x10, Ports: 4, Level: topology.NoLevel, Group: topology.NoGroup})
	b.ConnectPorts(sw, 2, h0, 1, topology.Plain)
	b.ConnectPorts(sw, 4, h1, 1, topology.Plain)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFabric(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := route(t, f, "minhop", 0)
	var buf bytes.Buffer
	if err := res.Tables.WriteDump(&buf); err != nil {
		t.Fatal(err)
	}
	want := `# opensm-lfts.dump written by icn: engine=minhop fabric=tiny
Unicast lids [0-3] of switch Lid 1 guid 0x0000000000000010 ('sw'):
0x0001 000 # Switch portguid 0x0000000000000010: 'sw'
0x0002 002 # Channel Adapter portguid 0x0000000000000101: 'h0'
0x0003 004 # Channel Adapter portguid 0x0000000000000201: 'h1'
3 lids dumped
`
	if buf.String() != want {
		t.Errorf("dump:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// Export then import gives back every entry and every LID, for every
// engine, with failures and with an imported fabric's own LIDs.
func TestDumpRoundTrip(t *testing.T) {
	cases := []struct{ spec, links, engine string }{
		{"testdata/ft2.ibnet", "", "minhop"},
		{"testdata/ft2.ibnet", "S-0002c90000000020[3]", "ftree"},
		{"testdata/ring6.net", "", "dfsssp"},
		{"fattree:k=3,n=2", "", "ftree"},
		{"dragonfly:a=4,p=2,h=2", "", "updn"},
		{"torus:4x3:endpoints=2", "3.2+Y", "sssp"},
		{"mesh:3x3:endpoints=1", "", "dor"},
	}
	for _, c := range cases {
		f := fabricFaults(t, c.spec, c.links, "")
		res := route(t, f, c.engine, 0)
		var dump, lanes bytes.Buffer
		if err := res.Tables.WriteDump(&dump); err != nil {
			t.Fatal(err)
		}
		if got := res.Tables.DumpSize(); got != int64(dump.Len()) {
			t.Fatalf("%s: DumpSize %d, the dump has %d bytes", c.spec, got, dump.Len())
		}
		// The bound known before routing: never below the dump, exact
		// without failures for an engine that routes every LID (ftree
		// leaves some switches' LIDs out, as OpenSM's does).
		for _, compact := range []bool{false, true} {
			size := res.Tables.DumpSize()
			if compact {
				size = res.Tables.CompactDumpSize()
			}
			b := f.DumpSizeBound(c.engine, compact)
			if b < size || (c.links == "" && c.engine != "ftree" && b != size) {
				t.Errorf("%s %s (compact %v): DumpSizeBound %d, the dump has %d bytes", c.spec, c.engine, compact, b, size)
			}
		}
		if err := res.Tables.WriteLanes(&lanes); err != nil {
			t.Fatal(err)
		}
		var ann *Annotations
		if strings.HasPrefix(c.spec, "testdata/") {
			data, _ := os.ReadFile(c.spec)
			ann, _ = ParseAnnotations(data, c.spec)
		}
		back, err := ReadDump(bytes.NewReader(dump.Bytes()), "dump", f.G, ann)
		if err != nil {
			t.Fatalf("%s %s: %v", c.spec, c.engine, err)
		}
		if err := back.ReadLanes(bytes.NewReader(lanes.Bytes()), "lanes"); err != nil {
			t.Fatalf("%s %s: lanes: %v", c.spec, c.engine, err)
		}
		if back.Engine != c.engine {
			t.Errorf("%s: engine %q after the round trip", c.spec, back.Engine)
		}
		if d := diffTables(res.Tables, back); d != "" {
			t.Errorf("%s %s: round trip differs: %s", c.spec, c.engine, d)
		}
		var again bytes.Buffer
		back.WriteDump(&again)
		if !bytes.Equal(dump.Bytes(), again.Bytes()) {
			t.Errorf("%s %s: second export differs", c.spec, c.engine)
		}
		// The compact dump: its size, and read back (from the fabric's
		// LIDs) to the same tables.
		var compact bytes.Buffer
		if err := res.Tables.WriteCompactDump(&compact); err != nil {
			t.Fatal(err)
		}
		if got := res.Tables.CompactDumpSize(); got != int64(compact.Len()) || compact.Len() >= dump.Len() {
			t.Fatalf("%s: CompactDumpSize %d, the compact dump has %d bytes (full %d)", c.spec, got, compact.Len(), dump.Len())
		}
		if strings.Contains(compact.String(), "portguid") {
			t.Fatalf("%s: the compact dump names holders", c.spec)
		}
		cback, err := ReadDump(bytes.NewReader(compact.Bytes()), "compact", f.G, ann)
		if err != nil {
			t.Fatalf("%s %s: compact: %v", c.spec, c.engine, err)
		}
		cback.ReadLanes(bytes.NewReader(lanes.Bytes()), "lanes")
		if d := diffTables(res.Tables, cback); d != "" {
			t.Errorf("%s %s: compact round trip differs: %s", c.spec, c.engine, d)
		}
	}
}

// diffTables compares LIDs, entries and lanes.
func diffTables(a, b *Tables) string {
	fa, fb := a.F, b.F
	if fa.MaxLIDInUse() != fb.MaxLIDInUse() {
		return fmt.Sprintf("max LID %d vs %d", fa.MaxLIDInUse(), fb.MaxLIDInUse())
	}
	for lid := 0; lid <= fa.MaxLIDInUse(); lid++ {
		if fa.LIDName(lid) != fb.LIDName(lid) {
			return fmt.Sprintf("LID %d: %s vs %s", lid, fa.LIDName(lid), fb.LIDName(lid))
		}
	}
	if a.Lanes() != b.Lanes() {
		return fmt.Sprintf("lanes %d vs %d", a.Lanes(), b.Lanes())
	}
	for s := 0; s < fa.NumSwitches(); s++ {
		if fa.G.NodeFailed(fa.Switch(s)) {
			continue
		}
		for lid := 0; lid <= fa.MaxLIDInUse(); lid++ {
			if a.Port(s, lid) != b.Port(s, lid) {
				return fmt.Sprintf("switch %s LID %d: port %d vs %d", fa.G.NodeName(fa.Switch(s)), lid, a.Port(s, lid), b.Port(s, lid))
			}
			if a.Lane(s, lid) != b.Lane(s, lid) {
				return fmt.Sprintf("switch %s LID %d: lane %d vs %d", fa.G.NodeName(fa.Switch(s)), lid, a.Lane(s, lid), b.Lane(s, lid))
			}
		}
	}
	return ""
}

// A fabric exported as ibnetdiscover text and read back (with its LID
// annotations) gets the same LIDs and the same tables; tables computed on
// the generated fabric audit the same against the imported one.
func TestIBNetRoundTrip(t *testing.T) {
	for _, spec := range []string{"fattree:k=3,n=2", "dragonfly:a=3,p=2,h=1", "testdata/ft2.ibnet", "testdata/ring6.net"} {
		f := fabric(t, spec)
		res := route(t, f, "dfsssp", 0)
		var net bytes.Buffer
		g := f.G
		if strings.HasPrefix(spec, "testdata/") {
			// Carry the LIDs into the export.
			b := topology.NewBuilder(spec)
			for v := 0; v < g.NumNodes(); v++ {
				lid := 0
				if s := f.SwitchIndex(v); s >= 0 {
					lid = f.SwitchLID(s)
				} else {
					lid = f.portLID(v, 1)
				}
				b.AddNode(g.Kind(v), g.NodeName(v), topology.NodeOpts{GUID: g.GUID(v), Ports: g.NumPorts(v), Level: topology.NoLevel, Group: topology.NoGroup, LID: lid})
			}
			for _, lk := range g.Links() {
				b.ConnectPorts(int(lk.A), int(lk.APort), int(lk.B), int(lk.BPort), topology.LinkOpts{Dim: -1, Bandwidth: float64(lk.Bandwidth)})
			}
			var err error
			if g, err = b.Build(); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.WriteIBNet(&net); err != nil {
			t.Fatal(err)
		}
		ann, err := ParseAnnotations(net.Bytes(), "export")
		if err != nil {
			t.Fatal(err)
		}
		h, err := topology.ParseIBNet(bytes.NewReader(net.Bytes()), "export")
		if err != nil {
			t.Fatal(err)
		}
		f2, err := NewFabric(h, ann)
		if err != nil {
			t.Fatal(err)
		}
		res2 := route(t, f2, "dfsssp", 0)
		// (ibnetdiscover export keeps node GUIDs only, so the port GUIDs
		// in the dump comments may differ; LIDs and entries may not.)
		if d := diffTables(res.Tables, res2.Tables); d != "" {
			t.Errorf("%s: tables differ after an ibnetdiscover round trip: %s", spec, d)
		}
		var d1 bytes.Buffer
		res.Tables.WriteDump(&d1)
		back, err := ReadDump(bytes.NewReader(d1.Bytes()), "dump", h, ann)
		if err != nil {
			t.Fatal(err)
		}
		r1, r2 := audit(t, res.Tables), audit(t, back)
		if r1.MaxLinkRoutes != r2.MaxLinkRoutes || r1.AvgHops != r2.AvgHops || r1.Reachable != r2.Reachable {
			t.Errorf("%s: audits differ after the round trip", spec)
		}
	}
}

// LIDs come from the fabric file: switch headers, the end port's own line
// and (ibsim) the switch side of the cable.
func TestLIDsFromFiles(t *testing.T) {
	f := fabric(t, "testdata/ft2.ibnet")
	want := map[int]string{1: "S-0002c90000000010", 2: "S-0002c90000000011", 3: "S-0002c90000000020", 4: "S-0002c90000000030",
		11: "H-0002c90000000101[1]", 12: "H-0002c90000000201[1]", 13: "H-0002c90000000301[1]", 14: "H-0002c90000000401[1]"}
	for lid, name := range want {
		if got := f.LIDName(lid); got != name {
			t.Errorf("ft2: LID %d is %s, want %s", lid, got, name)
		}
	}
	if f.MaxLIDInUse() != 14 {
		t.Errorf("ft2: max LID %d", f.MaxLIDInUse())
	}
	if tm := f.Terminals()[0]; tm.GUID != 0x2c90000000102 {
		t.Errorf("port GUID %#x, want the file's 0x2c90000000102", tm.GUID)
	}
	r := fabric(t, "testdata/ring6.net")
	for i := 0; i < 6; i++ {
		if got, want := r.LIDName(20+i), fmt.Sprintf("h%d[1]", i); got != want {
			t.Errorf("ring6: LID %d is %s, want %s", 20+i, got, want)
		}
		if got, want := r.LIDName(1+i), fmt.Sprintf("sw%d", i); got != want {
			t.Errorf("ring6: LID %d is %s, want %s", 1+i, got, want)
		}
	}
	// Without LIDs in the file: switches first, then end ports, in id order.
	g := fabric(t, "fattree:k=2,n=2")
	for s := 0; s < g.NumSwitches(); s++ {
		if g.SwitchLID(s) != s+1 {
			t.Errorf("switch %d has LID %d", s, g.SwitchLID(s))
		}
	}
	for i, tm := range g.Terminals() {
		if tm.LID != g.NumSwitches()+1+i {
			t.Errorf("terminal %d has LID %d", i, tm.LID)
		}
	}
	// Every LID has exactly one holder.
	seen := map[string]bool{}
	for lid := 1; lid <= g.MaxLIDInUse(); lid++ {
		if seen[g.LIDName(lid)] {
			t.Errorf("%s holds two LIDs", g.LIDName(lid))
		}
		seen[g.LIDName(lid)] = true
	}
}

func TestLIDConflicts(t *testing.T) {
	net := strings.ReplaceAll(mustRead(t, "testdata/ring6.net"), `"host 3" lid 23`, `"host 3" lid 22`)
	g, err := topology.ParseData([]byte(net), "dup.net")
	if err != nil {
		t.Fatal(err)
	}
	ann, err := ParseAnnotations([]byte(net), "dup.net")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewFabric(g, ann); err == nil || !strings.Contains(err.Error(), "LID 22 is given to both") {
		t.Errorf("duplicate LID: %v", err)
	}
	two := mustRead(t, "testdata/ft2.ibnet") + "\n"
	two = strings.Replace(two, `# lid 11 lmc 0 "leaf-1"`, `# lid 15 lmc 0 "leaf-1"`, 1)
	if _, err := ParseAnnotations([]byte(two), "two.ibnet"); err == nil || !strings.Contains(err.Error(), "two.ibnet:") {
		t.Errorf("contradictory LIDs for one port: %v", err)
	}
}

func mustRead(t testing.TB, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A dump written by OpenSM (LIDs of the live fabric, switches in its own
// order) imports and audits.
func TestImportOpenSMDump(t *testing.T) {
	f := fabric(t, "testdata/ft2.ibnet")
	data, _ := os.ReadFile("testdata/ft2.ibnet")
	ann, _ := ParseAnnotations(data, "ft2.ibnet")
	fh, err := os.Open("testdata/ft2-opensm-lfts.dump")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	tb, err := ReadDump(fh, "ft2-opensm-lfts.dump", f.G, ann)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Engine != "file" {
		t.Errorf("engine %q", tb.Engine)
	}
	r := audit(t, tb)
	checkAgainstBrute(t, "opensm dump", tb, r)
	if !r.Reachable || r.MaxHops != 4 || r.MinimalFraction != 1 || r.MaxLinkRoutes != 2 {
		t.Errorf("OpenSM dump: reachable %v hops %d minimal %v max routes %d", r.Reachable, r.MaxHops, r.MinimalFraction, r.MaxLinkRoutes)
	}
	// Against a fabric without LIDs (generated-style names), the LIDs come
	// from the deliveries in the dump.
	g2, _ := topology.ParseData(data, "ft2.ibnet")
	tb2, err := ReadDump(strings.NewReader(mustRead(t, "testdata/ft2-opensm-lfts.dump")), "dump", g2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffTables(tb, tb2); d != "" {
		t.Errorf("inferred LIDs differ: %s", d)
	}
}

func TestDumpErrors(t *testing.T) {
	good := mustRead(t, "testdata/ft2-opensm-lfts.dump")
	g, err := topology.LoadFile("testdata/ft2.ibnet")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, text, want string }{
		{"unknown switch", strings.Replace(good, "guid 0x0002c90000000030", "guid 0x0002c90000000099", 1), "bad.dump:1: switch GUID 0x0002c90000000099 is not in the fabric"},
		{"not a switch", strings.Replace(good, "guid 0x0002c90000000030", "guid 0x0002c90000000101", 1), "bad.dump:1: GUID 0x0002c90000000101 belongs to H-0002c90000000101, which is not a switch"},
		{"port out of range", strings.Replace(good, "0x000d 001 #", "0x000d 009 #", 1), "bad.dump:8: port 9 out of range: switch S-0002c90000000030 has 4 ports"},
		{"port beyond 254", strings.Replace(good, "0x000d 001 #", "0x000d 300 #", 1), "bad.dump:8: port 300 out of range"},
		{"unknown LID", strings.Replace(good, "0x000d 001 # Channel Adapter portguid 0x0002c90000000302", "0x0063 003 # Channel Adapter", 1), "unknown LID 99"},
		{"unknown port GUID", strings.ReplaceAll(good, "portguid 0x0002c90000000302", "portguid 0x0002c90000000303"), "bad.dump:8: LID 13 is said to be portguid 0x0002c90000000303, which no port of the fabric has"},
		{"two GUIDs for a LID", strings.Replace(good, "0x000d 001 # Channel Adapter portguid 0x0002c90000000302", "0x000d 001 # Channel Adapter portguid 0x0002c90000000202", 1), "bad.dump:18: LID 13 is said to be portguid 0x0002c90000000302 here but 0x0002c90000000202 at line 8"},
		{"GUID says other LID", strings.ReplaceAll(good, "portguid 0x0002c90000000302", "portguid 0x0002c90000000202"), "LID 13 is said to be H-0002c90000000201[1] (portguid 0x0002c90000000202), but H-0002c90000000301[1] holds it (the fabric file)"},
		{"multicast LID", strings.Replace(good, "0x000d 001 #", "0xc001 001 #", 1), "bad.dump:8: LID 0xc001 is not a unicast LID"},
		{"LID twice", strings.Replace(good, "0x000e 002 # Channel Adapter portguid 0x0002c90000000402", "0x000d 001 # Channel Adapter portguid 0x0002c90000000302", 1), "LID 13 listed twice for switch S-0002c90000000030 (also line 8)"},
		{"entry first", "0x0001 001\n" + good, "bad.dump:1: LFT entry before any"},
		{"garbage", good + "hello world\n", "bad.dump:41: cannot parse line"},
		{"bad entry", strings.Replace(good, "0x000d 001 #", "0x000d one #", 1), "bad.dump:8: cannot parse LFT entry"},
		{"bad header", strings.Replace(good, "of switch Lid 4 guid", "of switch guid", 1), "bad.dump:1: cannot parse switch header"},
		{"second block", good + strings.SplitAfterN(good, "14 lids dumped\n", 2)[0], "has a second block"},
		{"multicast dump", "Multicast mlids [0xc000-0xc001] of switch Lid 1:\n", "multicast table dump"},
		{"empty", "# nothing\n", "not an opensm-lfts.dump file"},
		{"wrong self", strings.Replace(good, "0x0004 000 # Switch portguid 0x0002c90000000030", "0x0003 000 # Switch portguid 0x0002c90000000020", 1), "routes LID 3 to itself (port 0) but its LID is 4"},
		{"two deliveries", strings.Replace(good, "0x000d 001 # Channel Adapter portguid 0x0002c90000000302", "0x000c 001 # Channel Adapter portguid 0x0002c90000000202", 1), "LID 12 listed twice"},
	}
	for _, c := range cases {
		_, err := ReadDump(strings.NewReader(c.text), "bad.dump", g, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestLanesErrors(t *testing.T) {
	f := fabric(t, "testdata/ring6.net")
	res := route(t, f, "dfsssp", 0)
	var buf bytes.Buffer
	res.Tables.WriteLanes(&buf)
	good := buf.String()
	if !strings.Contains(good, "Lanes 2\n") {
		t.Fatalf("lane file:\n%s", good)
	}
	cases := []struct{ name, text, want string }{
		{"no count", strings.Replace(good, "Lanes 2\n", "", 1), "expected \"Lanes N\""},
		{"lane too big", strings.Replace(good, " 1\n", " 7\n", 1), "lane 7 but the file declares 2 lanes"},
		{"bad count", strings.Replace(good, "Lanes 2", "Lanes 99", 1), "lane count 99 outside 1..15"},
		{"unknown switch", strings.Replace(good, "guid 0x0000", "guid 0x0f00", 1), "is not a switch of the fabric"},
		{"unknown LID", strings.Replace(good, "\n0x00", "\n0x3f", 1), "unknown LID"},
		{"garbage", good + "zzz\n", "cannot parse line"},
		{"empty", "", "not an icn lane file"},
	}
	for _, c := range cases {
		err := res.Tables.ReadLanes(strings.NewReader(c.text), "bad.lanes")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.lanes") {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// FuzzReadDump feeds arbitrary text to the dump reader for the ft2 fabric:
// it must never panic, and whatever it accepts must survive a write/read
// round trip unchanged.
func FuzzReadDump(f *testing.F) {
	for _, p := range []string{"testdata/ft2-opensm-lfts.dump"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("Unicast lids [0-3] of switch Lid 3 guid 0x0002c90000000020 ('x'):\n0x0003 000\n0x000b 001\n")
	g, err := topology.LoadFile("testdata/ft2.ibnet")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tb, err := ReadDump(strings.NewReader(text), "fuzz", g, nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := tb.WriteDump(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadDump(bytes.NewReader(buf.Bytes()), "again", g, nil)
		if err != nil {
			t.Fatalf("re-reading our own dump: %v\n%s", err, buf.String())
		}
		if d := diffTables(tb, back); d != "" {
			t.Fatalf("round trip differs: %s", d)
		}
		if _, err := Audit(tb, AuditOptions{Contention: ContentionOn, Perms: 1}); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReadLanes(f *testing.F) {
	fab := fabric(f, "testdata/ring6.net")
	res := route(f, fab, "dfsssp", 0)
	var buf bytes.Buffer
	res.Tables.WriteLanes(&buf)
	f.Add(buf.String())
	f.Fuzz(func(t *testing.T, text string) {
		tb := NewTables(fab, "x")
		if err := tb.ReadLanes(strings.NewReader(text), "fuzz"); err != nil {
			return
		}
		var out bytes.Buffer
		tb.WriteLanes(&out)
		tb2 := NewTables(fab, "x")
		if err := tb2.ReadLanes(bytes.NewReader(out.Bytes()), "again"); err != nil {
			t.Fatalf("re-reading our lanes: %v", err)
		}
		if d := diffTables(tb, tb2); d != "" {
			t.Fatal(d)
		}
	})
}

func FuzzParseAnnotations(f *testing.F) {
	for _, p := range []string{"testdata/ft2.ibnet", "testdata/ring6.net"} {
		b, _ := os.ReadFile(p)
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, text string) {
		a, err := ParseAnnotations([]byte(text), "fuzz")
		if err != nil {
			return
		}
		// ibnetdiscover text only: JSON/YAML documents may name generated
		// specs of millions of nodes, which is the topology fuzzers' business.
		g, err := topology.ParseIBNet(strings.NewReader(text), "fuzz")
		if err != nil {
			return
		}
		// Whatever both parsers accept either yields a fabric or a clear
		// error, never a panic.
		if fab, err := NewFabric(g, a); err == nil {
			for lid := 1; lid <= fab.MaxLIDInUse(); lid++ {
				fab.LIDName(lid)
			}
		}
	})
}

// The fuzz seed corpus lives in testdata/fuzz; make sure it is there.
func TestFuzzCorpusPresent(t *testing.T) {
	for _, name := range []string{"FuzzReadDump", "FuzzReadLanes", "FuzzParseAnnotations"} {
		m, _ := filepath.Glob(filepath.Join("testdata", "fuzz", name, "*"))
		if len(m) == 0 {
			t.Errorf("no seeds in testdata/fuzz/%s", name)
		}
	}
}

// splitDumpEntry accepts exactly "0x" + 1–4 hex digits, white space, 1–3
// decimal digits and an optional "# comment" after white space.
func TestSplitDumpEntry(t *testing.T) {
	good := map[string][3]any{
		"0x0001 000":              {1, 0, ""},
		"0xbfff\t254 # x":         {0xbfff, 254, " x"},
		"0x1 7":                   {1, 7, ""},
		"0x00ff 012 #Switch port": {0xff, 12, "Switch port"},
	}
	for line, want := range good {
		lid, port, comment, ok := splitDumpEntry(line)
		if !ok || lid != want[0].(int) || port != want[1].(int) || comment != want[2].(string) {
			t.Errorf("%q: %d %d %q %v", line, lid, port, comment, ok)
		}
	}
	for _, line := range []string{"0x", "0x0001", "0x00001 001", "0x0001 0001", "0x0001 001x", "0x0001 001#c", "0xg001 001", "0x0001 a"} {
		if _, _, _, ok := splitDumpEntry(line); ok {
			t.Errorf("%q accepted", line)
		}
	}
}
