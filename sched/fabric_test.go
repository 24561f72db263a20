package sched

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// levelOf is the lowest level at which all the given leaves are in one
// group (len(groups) if never).
func (m *TreeMachine) levelOf(leaves []int) int {
	for k, level := range m.groups {
		for _, grp := range level {
			in := map[int]bool{}
			for _, li := range grp {
				in[li] = true
			}
			all := true
			for _, li := range leaves {
				all = all && in[li]
			}
			if all {
				return k
			}
		}
	}
	return len(m.groups)
}

// Tree placement against brute force on a 3-level fat tree: the chosen
// nodes are free, on the fewest leaf switches any choice could use, and
// among choices on that many leaves under the lowest common level.
func TestTreePlacementIsOptimal(t *testing.T) {
	g, err := topology.Parse("fattree:k=4,n=3")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewTreeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	if m.Size() != 64 || len(m.leaves) != 16 || len(m.groups) != 3 {
		t.Fatalf("%d nodes, %d leaves, %d levels; want 64, 16, 3", m.Size(), len(m.leaves), len(m.groups))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 40; trial++ {
		c := m.Clone().(*TreeMachine)
		var busy []int
		for v := 0; v < c.Size(); v++ {
			if r.Float64() < 0.6 {
				busy = append(busy, v)
			}
		}
		if err := c.Occupy(1, busy); err != nil {
			t.Fatal(err)
		}
		need := 1 + r.IntN(max(1, c.FreeCount()))
		p, ok, err := c.Place(Job{ID: 2, Nodes: need}, nil)
		if err != nil || !ok {
			t.Fatalf("trial %d: %d of %d free: %v %v", trial, need, c.FreeCount(), ok, err)
		}
		if err := c.Occupy(2, p.Nodes); err != nil || len(p.Nodes) != need {
			t.Fatalf("trial %d: placement %v: %v", trial, p.Nodes, err)
		}
		c.Release(2, p.Nodes)
		free := make([]int, len(c.leaves))
		for li, ns := range c.leaves {
			for _, v := range ns {
				if c.occ.available(v) {
					free[li]++
				}
			}
		}
		chosen := map[int]bool{}
		for _, v := range p.Nodes {
			chosen[c.leafOf[v]] = true
		}
		var got []int
		for li := range chosen {
			got = append(got, li)
		}
		// Brute force over all leaf sets.
		bestK, bestLevel := 99, 99
		for set := 1; set < 1<<len(free); set++ {
			if bits.OnesCount(uint(set)) > bestK {
				continue
			}
			var ls []int
			sum := 0
			for li := range free {
				if set&(1<<li) != 0 {
					ls = append(ls, li)
					sum += free[li]
				}
			}
			if sum < need || len(ls) > bestK {
				continue
			}
			lv := c.levelOf(ls)
			if len(ls) < bestK || lv < bestLevel {
				bestK, bestLevel = len(ls), lv
			}
		}
		if len(got) != bestK || c.levelOf(got) != bestLevel {
			t.Fatalf("trial %d: %d nodes on %d leaves at level %d; best is %d leaves at level %d (free %v)",
				trial, need, len(got), c.levelOf(got), bestK, bestLevel, free)
		}
	}
}

func TestFlatAndTreeAvoidAndFailures(t *testing.T) {
	f, _ := NewFlatMachine(8, []bool{false, true, false, false, false, false, false, false})
	p, ok, _ := f.Place(Job{Nodes: 3}, []int{2})
	if !ok || len(p.Nodes) != 3 || p.Nodes[0] != 0 || p.Nodes[1] != 3 || p.Nodes[2] != 4 {
		t.Errorf("flat placement %v, want [0 3 4] (1 failed, 2 avoided)", p.Nodes)
	}
	if _, ok, _ := f.Place(Job{Nodes: 8}, nil); ok {
		t.Error("8 nodes placed on 7 usable")
	}
	g, _ := topology.Parse("fattree:k=2,n=2")
	g2, err := g.ApplyFaults("", g.NodeName(g.Endpoints()[0]))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewTreeMachine(g2)
	if err != nil {
		t.Fatal(err)
	}
	if m.FreeCount() != m.Size()-1 {
		t.Errorf("failed end node counted free: %d of %d", m.FreeCount(), m.Size())
	}
	if _, err := NewTreeMachine(mustParse(t, "torus:4x4")); err == nil {
		t.Error("torus accepted as a switched fabric")
	}
}

func mustParse(t *testing.T, spec string) *topology.Graph {
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
