package multicast

import (
	"fmt"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// Group is a multicast group: a name and its member nodes (end nodes or
// switches), each listed once.
type Group struct {
	Name    string
	Members []int32
}

// Result is what one engine produced for a workload.
type Result struct {
	Algo     string `json:"algo"`
	Topo     string `json:"topo,omitempty"`
	Workload string `json:"workload,omitempty"`
	Groups   int    `json:"groups"`
	Members  int    `json:"members"`
	EFIStats
	MaxHeight  int     `json:"max_height"`
	MeanHeight float64 `json:"mean_height"`
	// Seconds is the route computation: root choice plus tree building.
	Seconds float64 `json:"seconds"`
	// TreeSeconds is tree building alone, the seed's "route time" (which
	// leaves out root choice); RootSeconds is the root choice.
	TreeSeconds float64 `json:"tree_seconds"`
	RootSeconds float64 `json:"root_seconds"`
	// Verified is true when every tree passed Verifier.Verify.
	Verified bool `json:"verified"`
	// StateBytes is the memory of the engine's load and scratch arrays.
	StateBytes int `json:"state_bytes"`
	// HopTableBytes is the memory of the shared min-hop table (set by
	// callers that own it).
	HopTableBytes int `json:"hop_table_bytes,omitempty"`

	Trees   []Tree  `json:"-"`
	Heights []int   `json:"-"`
	EFI     []int32 `json:"-"`
}

// Run routes the groups in the given order with one engine on a fresh
// Router, times it, verifies every tree and computes the EFI from the
// trees. progress (may be nil) is called after every group.
func Run(h *topology.HopTable, a Algo, groups []Group, o Options, progress func(done int)) (*Result, error) {
	g := h.Graph()
	ck := newMemberChecker(g)
	for i := range groups {
		if err := ck.check(groups[i].Members); err != nil {
			return nil, fmt.Errorf("group %s: %v", groups[i].Name, err)
		}
	}
	r := NewRouter(h, a, o)
	res := &Result{Algo: a.String(), Groups: len(groups), Trees: make([]Tree, len(groups))}
	var rootTime, treeTime time.Duration
	for i := range groups {
		res.Members += len(groups[i].Members)
	}
	// Trees have one edge per end-node member plus the switches above
	// them: reserve half as many again.
	slab := make([]int32, 0, res.Members+res.Members/2+4*len(groups)+1024)
	for i := range groups {
		m := groups[i].Members
		t0 := time.Now()
		root, err := r.ChooseRoot(m)
		t1 := time.Now()
		if err != nil {
			return nil, fmt.Errorf("group %s: %v", groups[i].Name, err)
		}
		t := r.buildTree(root, m)
		// Edges of all trees share one growing slab: few allocations, so
		// the timing measures routing rather than the garbage collector.
		start := len(slab)
		slab = append(slab, t.Edges...)
		t.Edges = slab[start:len(slab):len(slab)]
		r.Add(t)
		t2 := time.Now()
		rootTime += t1.Sub(t0)
		treeTime += t2.Sub(t1)
		res.Trees[i] = t
		if progress != nil {
			progress(i + 1)
		}
	}
	res.RootSeconds = rootTime.Seconds()
	res.TreeSeconds = treeTime.Seconds()
	res.Seconds = res.RootSeconds + res.TreeSeconds
	res.StateBytes = r.Bytes()
	if err := res.verify(h, groups); err != nil {
		return nil, fmt.Errorf("engine %s produced a bad tree: %v", a, err)
	}
	return res, nil
}

func (res *Result) verify(h *topology.HopTable, groups []Group) error {
	v := NewVerifier(h)
	res.Heights = make([]int, len(groups))
	sum := 0
	for i := range groups {
		ht, err := v.Verify(groups[i].Members, res.Trees[i])
		if err != nil {
			return fmt.Errorf("group %s: %v", groups[i].Name, err)
		}
		res.Heights[i] = ht
		res.MaxHeight = max(res.MaxHeight, ht)
		sum += ht
	}
	if len(groups) > 0 {
		res.MeanHeight = float64(sum) / float64(len(groups))
	}
	res.EFI = LinkEFI(h.Graph(), res.Trees)
	res.EFIStats = SummariseEFI(h, res.EFI)
	res.Verified = true
	return nil
}
