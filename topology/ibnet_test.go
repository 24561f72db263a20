package topology

import (
	"bytes"
	"strings"
	"testing"
)

// GUIDs of a net file without GUID lines follow ibsim's sim_net.c: per
// node type a counter (switches from 0x200000, one GUID each; adapters
// from 0x100000, ports + 1 each), set by switchguid= / caguid= lines and
// moved by "+N"; adapter port p has node GUID + p; "(guid)" port GUIDs are
// kept; lid 0 means no LID.
func TestIBSimGUIDAssignment(t *testing.T) {
	net := `Switch 4 "s0" # "s0" base port 0 lid 0 lmc 0
[1] "a"[1]
[2] "b"[2]
Hca 2 "a"
[1] "s0"[1] # lid 0 lmc 0 "s0" lid 0
Ca 2 "b"
[2](abc) "s0"[2]
switchguid=0x5000
Switch 4 "s1"
Switch 4 "s2"
caguid+0x10
Ca 1 "c"
`
	g, err := ParseIBNet(strings.NewReader(net), "x.net")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"s0": 0x200000, "a": 0x100000, "b": 0x100003, "s1": 0x5000, "s2": 0x5001, "c": 0x100010}
	for name, guid := range want {
		if got := g.GUID(g.NodeByName(name)); got != guid {
			t.Errorf("%s: GUID %#x, want %#x", name, got, guid)
		}
	}
	ports := []struct {
		node string
		port int
		guid uint64
	}{{"a", 1, 0x100001}, {"a", 2, 0x100002}, {"b", 1, 0x100004}, {"b", 2, 0xabc}, {"s0", 3, 0x200000}}
	for _, p := range ports {
		if got := g.PortGUID(g.NodeByName(p.node), p.port); got != p.guid {
			t.Errorf("%s[%d]: port GUID %#x, want %#x", p.node, p.port, got, p.guid)
		}
	}
	for v := 0; v < g.NumNodes(); v++ {
		if g.LID(v) != 0 {
			t.Errorf("%s has LID %d from a file that says lid 0", g.NodeName(v), g.LID(v))
		}
	}
	// Export keeps every GUID, and ibsim reads no port option from it.
	var b bytes.Buffer
	if err := g.WriteIBNet(&b); err != nil {
		t.Fatal(err)
	}
	h, err := ParseIBNet(bytes.NewReader(b.Bytes()), "again")
	if err != nil {
		t.Fatal(err)
	}
	for v := 0; v < g.NumNodes(); v++ {
		for p := 1; p <= g.NumPorts(v); p++ {
			if g.PortGUID(v, p) != h.PortGUID(v, p) || g.GUID(v) != h.GUID(v) {
				t.Errorf("%s[%d]: GUIDs change in a round trip", g.NodeName(v), p)
			}
		}
	}
}

// Link classes travel on a comment line (ibsim takes every '=' of a port
// line as a port option); the older in-line form is still read.
func TestIBNetClassComment(t *testing.T) {
	g, err := Parse("dragonfly:a=3,p=1,h=1")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := g.WriteIBNet(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "[") && strings.Contains(line, "=") {
			t.Fatalf("port line with '=': %q", line)
		}
	}
	h, err := ParseIBNet(&b, "df")
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]Class{}
	for l := 0; l < h.NumLinks(); l++ {
		classes[h.LinkName(l)] = h.Link(l).Class
	}
	for l := 0; l < g.NumLinks(); l++ {
		if got, ok := classes[g.LinkName(l)]; !ok || got != g.Link(l).Class {
			t.Fatalf("link %s: class %v, read back %v (found %v)", g.LinkName(l), g.Link(l).Class, got, ok)
		}
	}
	old := "Switch 2 \"s\"\n[1] \"t\"[1] # \"t\" icn-class=global\nSwitch 2 \"t\"\n"
	o, err := ParseIBNet(strings.NewReader(old), "old")
	if err != nil || o.Link(0).Class != Global {
		t.Errorf("in-line class: %v", err)
	}
}

func TestIBNetGUIDErrors(t *testing.T) {
	for name, text := range map[string]string{
		"dupportguid": "Switch 4 \"s\"\n[1] \"a\"[1](10)\n[2] \"b\"[1](10)\nCa 1 \"a\"\nCa 1 \"b\"\n",
		"twoguids":    "Switch 4 \"s\"\n[1] \"a\"[1](10)\nCa 1 \"a\"\n[1](11) \"s\"[1]\n",
		"badclass":    "Switch 4 \"s\"\n# icn-class=bogus\n[1] \"a\"[1]\nCa 1 \"a\"\n",
		"router":      "rtguid=0x10\n",
	} {
		if _, err := ParseIBNet(strings.NewReader(text), name); err == nil || !strings.HasPrefix(err.Error(), name+":") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}
