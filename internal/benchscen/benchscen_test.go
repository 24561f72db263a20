package benchscen_test

import (
	"testing"

	"github.com/icn-hpc/icn/internal/benchscen"
	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
)

// TestScenariosValid: every scenario names, at both sizes, networks the
// topology core builds (tori for the table scenarios), nodes and failed
// links the job's machine has, and a rule and engines their packages
// know; the quick size is the smaller.
func TestScenariosValid(t *testing.T) {
	sizes := []bool{true}
	if !testing.Short() {
		sizes = append(sizes, false)
	}
	if _, err := routing.ParseRule(benchscen.TableRule); err != nil {
		t.Error(err)
	}
	if _, err := unicast.LookupEngine(benchscen.SSSPTables.Engine); err != nil {
		t.Error(err)
	}
	for _, a := range []string{benchscen.FULBvsSSSP.Algo, benchscen.FULBvsSSSP.Baseline} {
		if _, err := multicast.ParseAlgo(a); err != nil {
			t.Error(err)
		}
	}
	nets := map[string]benchscen.Network{"AllPairs": benchscen.AllPairs, "TableVsBaseline": benchscen.TableVsBaseline,
		"WholeTable": benchscen.WholeTable, "SSSPTables": benchscen.SSSPTables.Fabric, "FULBvsSSSP": benchscen.FULBvsSSSP.Fabric}
	for name, n := range nets {
		var nodes [2]int
		for i, quick := range sizes {
			g, err := topology.Parse(n.Spec(quick))
			if err != nil {
				t.Fatalf("%s (quick %v): %v", name, quick, err)
			}
			nodes[i] = g.NumNodes()
		}
		if len(sizes) == 2 && nodes[0] >= nodes[1] {
			t.Errorf("%s: quick %d nodes, full %d", name, nodes[0], nodes[1])
		}
	}
	for _, quick := range sizes {
		checkJob(t, benchscen.JobTable(quick))
		g, err := topology.Parse(benchscen.FULBvsSSSP.Fabric.Spec(quick))
		if err != nil {
			t.Fatal(err)
		}
		w, err := multicast.ParseWorkload(benchscen.FULBvsSSSP.Groups.Spec(quick))
		if err != nil {
			t.Fatal(err)
		}
		if gs, err := w.Groups(g, 1); err != nil || len(gs) == 0 {
			t.Errorf("groups of %s on %s: %d, %v", benchscen.FULBvsSSSP.Groups.Spec(quick), g.Name(), len(gs), err)
		}
	}
}

// checkJob: the job's machine is a torus with the failed links, its
// active and transit nodes are disjoint and not empty.
func checkJob(t *testing.T, j benchscen.Job) {
	t.Helper()
	g, err := topology.Parse(j.Topo)
	if err != nil {
		t.Fatal(err)
	}
	if g, err = g.ApplyFaults(j.FailLinks, ""); err != nil {
		t.Fatalf("%s: %v", j.Topo, err)
	}
	active, err := g.ParseNodes(j.Active)
	if err != nil {
		t.Fatal(err)
	}
	transit, err := g.ParseNodes(j.Transit)
	if err != nil {
		t.Fatal(err)
	}
	in := map[int]bool{}
	for _, v := range active {
		in[v] = true
	}
	for _, v := range transit {
		if in[v] {
			t.Errorf("%s: node %s both active and transit", j.Topo, g.NodeName(v))
		}
	}
	if len(active) == 0 || len(transit) == 0 || len(g.FailedLinks()) == 0 {
		t.Errorf("%s: %d active, %d transit, %d failed links", j.Topo, len(active), len(transit), len(g.FailedLinks()))
	}
}
