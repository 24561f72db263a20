package sched

import (
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

// NewMachine decides the machine by the network: node selection on tori
// and meshes (with the options given), tree placement on switched
// fabrics, and a one-line refusal for anything else.
func TestNewMachine(t *testing.T) {
	opts := MachineOptions{Algo: alloc.Baseline, Rules: "angara", TransitFrac: 0.6, Budget: 2 * time.Second}
	for _, spec := range []string{"torus:4x4x2", "torus:4x4:mesh=Y"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMachine(g, opts)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		tm, ok := m.(*TorusMachine)
		if !ok {
			t.Fatalf("%s: %T, want node selection (*TorusMachine)", spec, m)
		}
		if tm.Algo != alloc.Baseline || tm.Budget != 2*time.Second || tm.Size() != g.NumNodes() {
			t.Errorf("%s: algo %s, budget %v, %d nodes; want baseline, 2s, %d", spec, tm.Algo, tm.Budget, tm.Size(), g.NumNodes())
		}
		if got := tm.Transit(5); got != 3 {
			t.Errorf("%s: transit limit of 5 nodes at 0.6 is %d, want ⌈3.0⌉ = 3", spec, got)
		}
		if ar, ok := tm.Router.(*alloc.AngaraRouter); !ok || ar.R.Rule().String() != "angara" {
			t.Errorf("%s: router %T, want the angara rule", spec, tm.Router)
		}
	}
	g, _ := topology.Parse("fattree:k=4,n=2")
	// A switched fabric ignores the torus options, even invalid ones.
	m, err := NewMachine(g, MachineOptions{Algo: "bogus", Rules: "bogus"})
	if err != nil {
		t.Fatal(err)
	}
	if tm, ok := m.(*TreeMachine); !ok || tm.Size() != g.Count(topology.Endpoint) {
		t.Errorf("fattree: %T with %d nodes, want *TreeMachine on its %d end nodes", m, m.Size(), g.Count(topology.Endpoint))
	}
	torus, _ := topology.Parse("torus:4x4")
	complete, _ := topology.Parse("complete:4")
	for _, c := range []struct {
		g    *topology.Graph
		o    MachineOptions
		want string
	}{
		{complete, opts, "complete:4 is neither a torus or mesh nor a switched fabric (use flat:N for a machine without network constraints)"},
		{torus, MachineOptions{Algo: "bogus", Rules: "angara*"}, `unknown node-selection algorithm "bogus"`},
		{torus, MachineOptions{Algo: alloc.Improved, Rules: "bogus"}, `unknown routing rule "bogus"`},
	} {
		m, err := NewMachine(c.g, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || m != nil {
			t.Errorf("%s %+v: %v, %v; want one line with %q and no machine", c.g.Name(), c.o, m, err, c.want)
		}
	}
}

// ParseFlat reads flat:N and only flat:…; NewFlatMachine checks N.
func TestParseFlat(t *testing.T) {
	for _, c := range []struct {
		spec       string
		n          int
		flat       bool
		err        string
		machineErr string
	}{
		{"flat:240", 240, true, "", ""},
		{"flat:0", 0, true, "", "node count must be"},
		{"flat:x", 0, true, "flat:x: want flat:N with N the number of nodes", ""},
		{"flat:", 0, true, "flat:: want flat:N", ""},
		{"torus:4x4", 0, false, "", ""},
		{"file:flat:3", 0, false, "", ""},
	} {
		n, flat, err := ParseFlat(c.spec)
		if n != c.n || flat != c.flat || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("ParseFlat(%q) = %d, %v, %v; want %d, %v, %q", c.spec, n, flat, err, c.n, c.flat, c.err)
			continue
		}
		if !flat || err != nil {
			continue
		}
		m, err := NewFlatMachine(n, nil)
		if c.machineErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.machineErr) {
				t.Errorf("%s: %v, want %q", c.spec, err, c.machineErr)
			}
		} else if err != nil || m.Size() != c.n {
			t.Errorf("%s: %v, want %d nodes", c.spec, err, c.n)
		}
	}
}
