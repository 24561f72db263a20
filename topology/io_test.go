package topology

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var roundTripSpecs = []string{
	"torus:4x3x2", "mesh:3x3", "hypercube:3", "ring:2", "torus:3x3:rings=2,1", "torus:3x2:endpoints=2",
	"fattree:k=2,n=3", "dragonfly:a=3,p=2,h=1", "multiring:9:1,3", "complete:5", "star:4", "tree:7",
	"pft:radix=6,levels=2,endpoints=12,up=2", "twolevel:groups=3,size=2", "torus:5x4:steps=1,2/1",
	"torus:4x3x2:mesh=Z", "torus:3x2x2x2:mesh=Y,W", "torus:4x2:mesh=x:endpoints=1", "torus:3x3:mesh=Y:rings=1,2",
}

func TestJSONRoundTrip(t *testing.T) {
	for _, spec := range roundTripSpecs {
		g, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if g.NumLinks() > 2 {
			g, _ = g.WithFaults([]int{1}, []int{0})
		}
		var buf bytes.Buffer
		if err := g.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		h, err := ParseData(buf.Bytes(), spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if d := g.Diff(h); d != "" {
			t.Errorf("%s: JSON round trip differs: %s", spec, d)
		}
	}
}

func TestIBNetRoundTrip(t *testing.T) {
	for _, spec := range roundTripSpecs {
		g, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := g.WriteIBNet(&buf); err != nil {
			t.Fatal(err)
		}
		if DetectFormat(buf.Bytes()) != FormatIBNet {
			t.Fatalf("%s: export not detected as ibnetdiscover", spec)
		}
		h, err := ParseIBNet(&buf, spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if d := SameStructure(g, h); d != "" {
			t.Errorf("%s: ibnetdiscover round trip differs: %s", spec, d)
		}
		// And a second trip is byte-identical.
		var b1, b2 bytes.Buffer
		h.WriteIBNet(&b1)
		h2, _ := ParseIBNet(bytes.NewReader(b1.Bytes()), spec)
		h2.WriteIBNet(&b2)
		if !bytes.Equal(b1.Bytes()[bytes.IndexByte(b1.Bytes(), '\n'):], b2.Bytes()[bytes.IndexByte(b2.Bytes(), '\n'):]) {
			t.Errorf("%s: second export differs", spec)
		}
	}
}

func TestIBNetRealFiles(t *testing.T) {
	g, err := LoadFile("testdata/small.ibnet")
	if err != nil {
		t.Fatal(err)
	}
	if g.Count(Switch) != 2 || g.Count(Endpoint) != 3 || g.NumLinks() != 4 {
		t.Fatalf("small.ibnet: %d switches %d endpoints %d links", g.Count(Switch), g.Count(Endpoint), g.NumLinks())
	}
	sw := g.NodeByName("S-0002c90000001d18")
	if g.GUID(sw) != 0x2c90000001d18 || g.LID(sw) != 6 || g.NumPorts(sw) != 24 {
		t.Errorf("switch attributes: guid %#x lid %d ports %d", g.GUID(sw), g.LID(sw), g.NumPorts(sw))
	}
	h := g.NodeByName("H-0002c9000000ffa0")
	if g.LID(h) != 14 {
		t.Errorf("HCA lid %d, want 14", g.LID(h))
	}
	c := g.PortChannel(sw, 24)
	if g.NodeName(g.Dst(c)) != "S-0002c90000001d28" || g.Link(c>>1).Bandwidth != 20 {
		t.Errorf("inter-switch link: %s bw %v", g.NodeName(g.Dst(c)), g.Link(c>>1).Bandwidth)
	}
	g2, err := LoadFile("testdata/ibsim.net")
	if err != nil {
		t.Fatal(err)
	}
	if g2.NumLinks() != 4 || g2.Count(Switch) != 2 {
		t.Fatalf("ibsim.net: %d links %d switches", g2.NumLinks(), g2.Count(Switch))
	}
	// hca0's LID is only given on the switch's port line.
	if l := g2.LID(g2.NodeByName("hca0")); l != 10 {
		t.Errorf("hca0 LID %d, want 10 (from the switch side)", l)
	}
}

// TestIBNetDescriptions checks that node descriptions (ibnetdiscover's
// NodeDescription, whose first word is the host name) are read from the
// header comments and survive ibnetdiscover and JSON round trips.
func TestIBNetDescriptions(t *testing.T) {
	g, err := LoadFile("testdata/small.ibnet")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"S-0002c90000001d18": {"ISR9024 Voltaire", "ISR9024"},
		"H-0002c9000000ff94": {"node-1 HCA-1", "node-1"},
		"H-0002c9000000ffa0": {"node-3 HCA-1", "node-3"},
	}
	for name, w := range want {
		v := g.NodeByName(name)
		if g.Desc(v) != w[0] || g.HostName(v) != w[1] {
			t.Errorf("%s: description %q host %q, want %q %q", name, g.Desc(v), g.HostName(v), w[0], w[1])
		}
	}
	sim, err := LoadFile("testdata/ibsim.net")
	if err != nil {
		t.Fatal(err)
	}
	if d := sim.Desc(sim.NodeByName("hca0")); d != "" {
		t.Errorf("hca0 has no description in the file, got %q", d)
	}
	if h := sim.HostName(sim.NodeByName("hca2")); h != "host" {
		t.Errorf("hca2 host %q, want host", h)
	}
	for _, src := range []*Graph{g, sim} {
		var ib, js bytes.Buffer
		if err := src.WriteIBNet(&ib); err != nil {
			t.Fatal(err)
		}
		h, err := ParseIBNet(&ib, src.Name())
		if err != nil {
			t.Fatal(err)
		}
		for v := range src.NumNodes() {
			if want := src.Desc(v); want != "" && h.Desc(v) != want {
				t.Errorf("%s: ibnetdiscover round trip: node %s description %q, want %q", src.Name(), src.NodeName(v), h.Desc(v), want)
			}
		}
		if err := src.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		j, err := ParseData(js.Bytes(), src.Name())
		if err != nil {
			t.Fatal(err)
		}
		if d := src.Diff(j); d != "" {
			t.Errorf("%s: JSON round trip: %s", src.Name(), d)
		}
	}
}

func TestIBNetErrors(t *testing.T) {
	base := "Switch 4 \"a\"\n[1] \"b\"[1]\nCa 1 \"b\"\n[1] \"a\"[1]\n"
	cases := map[string]string{
		"dangling":   "Switch 4 \"a\"\n[1] \"zz\"[1]\n",
		"asymmetric": "Switch 4 \"a\"\n[1] \"b\"[1]\nCa 2 \"b\"\n[1] \"a\"[2]\n",
		"range":      "Switch 4 \"a\"\n[5] \"b\"[1]\nCa 1 \"b\"\n",
		"dupname":    base + "Ca 1 \"b\"\n",
		"dupguid":    "switchguid=0x10\nSwitch 4 \"a\"\ncaguid=0x10\nCa 1 \"b\"\n",
		"dupport":    "Switch 4 \"a\"\n[1] \"b\"[1]\n[1] \"c\"[1]\nCa 1 \"b\"\nCa 1 \"c\"\n",
		"garbage":    base + "hello world\n",
		"peerport":   "Switch 4 \"a\"\n[1] \"b\"[3]\nCa 1 \"b\"\n",
		"badlid":     "Switch 4 \"a\"\t# lid 99999\n",
	}
	for name, text := range cases {
		_, err := ParseIBNet(strings.NewReader(text), name)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.HasPrefix(err.Error(), name+":") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q should name file and line on one line", name, err)
		}
	}
	if _, err := ParseIBNet(strings.NewReader(base), "ok"); err != nil {
		t.Errorf("base: %v", err)
	}
}

func TestSpecFileAndFaults(t *testing.T) {
	dir := t.TempDir()
	y := filepath.Join(dir, "t.yaml")
	os.WriteFile(y, []byte("spec: torus:4x4\nfailed_links: [\"0.0+X\", \"1.1-Y\"]\nfailed_nodes: [\"3.3\"]\n"), 0o644)
	g, err := Parse("file:" + y)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.FailedLinks()) != 2 || len(g.FailedNodes()) != 1 {
		t.Fatalf("failures: %v %v", g.FailedLinks(), g.FailedNodes())
	}
	l := g.FailedLinks()
	names := []string{g.LinkName(l[0]), g.LinkName(l[1])}
	if !(names[0] == "0.0+X" && names[1] == "1.0+Y") && !(names[1] == "0.0+X" && names[0] == "1.0+Y") {
		t.Errorf("failed link names %v", names)
	}
	j := filepath.Join(dir, "t.json")
	os.WriteFile(j, []byte(`{"spec":"ring:5","failed_nodes":["2"]}`), 0o644)
	if g, err := Parse("file:" + j); err != nil || !g.NodeFailed(2) {
		t.Fatalf("json spec file: %v", err)
	}
	for _, bad := range []string{`{"spec":"ring:5","bogus":1}`, `{"spec":"ring:5","failed_nodes":["9"]}`, `{"nodes":[{"name":"a","kind":"cpu"}]}`, `{}`} {
		os.WriteFile(j, []byte(bad), 0o644)
		if _, err := Parse("file:" + j); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	g, _ = Parse("torus:4x4x4")
	for _, bad := range []string{"9.0.0", "0.0", "0.0.0+Q", "0.0.0,0.0.0", "nosuch"} {
		if _, err := g.ParseNodes(bad); err == nil && !strings.Contains(bad, "+") {
			t.Errorf("nodes %q accepted", bad)
		}
		if _, err := g.ParseLinks(bad); err == nil {
			t.Errorf("links %q accepted", bad)
		}
	}
	vs, err := g.ParseNodes("0-1.*.3")
	if err != nil || len(vs) != 8 {
		t.Errorf("range pattern: %v %v", vs, err)
	}
	ls, err := g.ParseLinks("0.1.3+X, 1.1.3-X")
	if err == nil {
		t.Errorf("the same cable named twice was accepted: %v", ls)
	}
	ls, err = g.ParseLinks("0.1.3+X")
	if err != nil || len(ls) != 1 || g.LinkName(ls[0]) != "0.1.3+X" {
		t.Errorf("link parse: %v %v", ls, err)
	}
	ls2, _ := g.ParseLinks("1.1.3-X")
	if ls2[0] != ls[0] {
		t.Error("0.1.3+X and 1.1.3-X are different links")
	}
	p, _ := Parse("torus:4x4:rings=2,1")
	ls, err = p.ParseLinks("0.0+X#1")
	if err != nil || p.LinkName(ls[0]) != "0.0+X#1" {
		t.Errorf("parallel ring link: %v %v", ls, err)
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range roundTripSpecs {
		f.Add(s)
	}
	f.Add("torus:32x32x16:rings=4,4,2")
	f.Add("torus:6x5x6x2x3x2:mesh=W,U")
	f.Add("torus:4x4x2:mesh=V")
	f.Add("torus:4x4x2:mesh=Z,z")
	f.Add("dragonfly:a=2,p=1,h=1")
	f.Fuzz(func(t *testing.T, spec string) {
		if strings.HasPrefix(spec, "file:") {
			return
		}
		g, err := Parse(spec)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if g.NumNodes() > 5000 {
			return
		}
		var buf bytes.Buffer
		if err := g.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		h, err := ParseData(buf.Bytes(), "fuzz")
		if err != nil {
			t.Fatalf("%s: re-import: %v", spec, err)
		}
		if d := g.Diff(h); d != "" {
			t.Fatalf("%s: %s", spec, d)
		}
	})
}

func FuzzParseIBNet(f *testing.F) {
	for _, name := range []string{"testdata/small.ibnet", "testdata/ibsim.net"} {
		b, _ := os.ReadFile(name)
		f.Add(string(b))
	}
	f.Add("Switch 2 \"a\"\n[1] \"b\"[1]\nCa 1 \"b\"\n")
	f.Add("switchguid+0x10\nSwitch 2 \"a\" # lid 0\n# icn-class=global\n[1] \"b\"[1](abc)\ncaguid=0x50\nCa 2 \"b\"\n[1](abc) \"a\"[1] # lid 0 lmc 0 \"a\" lid 0\n")
	f.Fuzz(func(t *testing.T, text string) {
		g, err := ParseIBNet(strings.NewReader(text), "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := g.WriteIBNet(&buf); err != nil {
			return // e.g. names that cannot be written back
		}
		h, err := ParseIBNet(&buf, "again")
		if err != nil {
			t.Fatalf("re-import failed: %v\n%s", err, buf.String())
		}
		if d := SameStructure(g, h); d != "" {
			t.Fatalf("round trip: %s", d)
		}
		for v := range g.NumNodes() {
			if d := g.Desc(v); d != "" && h.Desc(v) != d {
				t.Fatalf("node %s: description %q came back as %q", g.NodeName(v), d, h.Desc(v))
			}
		}
	})
}
