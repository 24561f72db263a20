package sched

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/icn-hpc/icn/topology"
)

// occupancy records which job holds each node.
type occupancy struct {
	owner  []int32 // job id per node (0 = free)
	failed []bool
	free   int
}

func newOccupancy(n int, failed []bool) occupancy {
	o := occupancy{owner: make([]int32, n), failed: failed, free: n}
	for _, f := range failed {
		if f {
			o.free--
		}
	}
	return o
}

func (o *occupancy) available(v int) bool { return o.owner[v] == 0 && !o.failed[v] }

func (o *occupancy) occupy(id int, nodes []int) error {
	for i, v := range nodes {
		if v < 0 || v >= len(o.owner) || !o.available(v) {
			for _, u := range nodes[:i] {
				o.owner[u] = 0
			}
			o.free += i
			return fmt.Errorf("node %d is not available", v)
		}
		o.owner[v] = int32(id)
		o.free--
	}
	return nil
}

func (o *occupancy) release(id int, nodes []int) {
	for _, v := range nodes {
		if o.owner[v] == int32(id) {
			o.owner[v] = 0
			o.free++
		}
	}
}

func (o occupancy) clone() occupancy {
	o.owner = slices.Clone(o.owner)
	return o
}

// mask marks the nodes of avoid in a reusable buffer.
func mask(buf []bool, avoid []int) []bool {
	clear(buf)
	for _, v := range avoid {
		buf[v] = true
	}
	return buf
}

// FlatMachine has no network constraint: any free nodes will do (the
// lowest-numbered ones are taken). It stands for a machine whose network
// the scheduler ignores.
type FlatMachine struct {
	occ  occupancy
	skip []bool
}

// NewFlatMachine returns a machine of n nodes; failed (may be nil) marks
// nodes that never run jobs.
func NewFlatMachine(n int, failed []bool) (*FlatMachine, error) {
	if n < 1 || n > topology.MaxSpecNodes {
		return nil, fmt.Errorf("flat machine: node count must be 1..%d, got %d", topology.MaxSpecNodes, n)
	}
	if failed == nil {
		failed = make([]bool, n)
	}
	if len(failed) != n {
		return nil, fmt.Errorf("flat machine: %d failure flags for %d nodes", len(failed), n)
	}
	return &FlatMachine{occ: newOccupancy(n, failed), skip: make([]bool, n)}, nil
}

func (m *FlatMachine) Describe() string {
	return fmt.Sprintf("flat:%d, any free nodes", len(m.occ.owner))
}
func (m *FlatMachine) Size() int                        { return len(m.occ.owner) }
func (m *FlatMachine) FreeCount() int                   { return m.occ.free }
func (m *FlatMachine) Available(v int) bool             { return m.occ.available(v) }
func (m *FlatMachine) Coord(int) []int                  { return nil }
func (m *FlatMachine) NodeName(v int) string            { return fmt.Sprintf("n%d", v) }
func (m *FlatMachine) Occupy(id int, nodes []int) error { return m.occ.occupy(id, nodes) }
func (m *FlatMachine) Release(id int, nodes []int)      { m.occ.release(id, nodes) }
func (m *FlatMachine) Clone() Machine {
	return &FlatMachine{occ: m.occ.clone(), skip: make([]bool, len(m.skip))}
}

func (m *FlatMachine) Unplaceable(j Job) string {
	usable := 0
	for _, f := range m.occ.failed {
		if !f {
			usable++
		}
	}
	return fmt.Sprintf("needs %d nodes, %d are usable", j.Nodes, usable)
}

func (m *FlatMachine) Place(j Job, avoid []int) (Placement, bool, error) {
	if j.Nodes > m.occ.free {
		return Placement{}, false, nil
	}
	skip := mask(m.skip, avoid)
	nodes := make([]int, 0, j.Nodes)
	for v := 0; v < len(m.occ.owner) && len(nodes) < j.Nodes; v++ {
		if m.occ.available(v) && !skip[v] {
			nodes = append(nodes, v)
		}
	}
	if len(nodes) < j.Nodes {
		return Placement{}, false, nil
	}
	return Placement{Nodes: nodes, Active: j.Nodes}, true, nil
}

// TreeMachine places jobs on a switched fabric as Slurm's topology/tree
// plugin does: on the fewest leaf switches, and among node sets on that
// many leaves, under the lowest common switch level (the fewest spine
// hops between its leaves); among equal choices the group and the last
// leaf with the fewest free nodes that suffice (best fit).
type TreeMachine struct {
	g      *topology.Graph
	occ    occupancy
	nodes  []int   // graph vertex of each node (end node)
	leafOf []int   // leaf index of each node
	leaves [][]int // nodes under each leaf switch, ascending
	leafSw []int   // graph vertex of each leaf switch
	// groups[k] partitions the leaves into sets whose pairwise hop
	// distance is at most 2k (k = 0: single leaves).
	groups [][][]int
	skip   []bool
}

// NewTreeMachine builds the placement structure of a switched fabric
// (fat tree, ibnetdiscover file, …): every end node hangs off one leaf
// switch; failed end nodes and end nodes whose link failed never run jobs.
func NewTreeMachine(g *topology.Graph) (*TreeMachine, error) {
	m := &TreeMachine{g: g}
	swIndex := map[int]int{}
	var failed []bool
	for _, v := range g.Endpoints() {
		leaf, up := -1, false
		for _, c := range g.Out(v) {
			if w := g.Dst(int(c)); g.Kind(w) == topology.Switch {
				leaf, up = w, g.Up(int(c))
				break
			}
		}
		if leaf < 0 {
			continue // an end node without a switch is not part of the machine
		}
		li, ok := swIndex[leaf]
		if !ok {
			li = len(m.leafSw)
			swIndex[leaf] = li
			m.leafSw = append(m.leafSw, leaf)
			m.leaves = append(m.leaves, nil)
		}
		id := len(m.nodes)
		m.nodes = append(m.nodes, v)
		m.leafOf = append(m.leafOf, li)
		m.leaves[li] = append(m.leaves[li], id)
		failed = append(failed, g.NodeFailed(v) || !up)
	}
	if len(m.nodes) == 0 {
		return nil, fmt.Errorf("%s has no end nodes attached to switches (tree placement needs a switched fabric)", g.Name())
	}
	m.occ = newOccupancy(len(m.nodes), failed)
	m.skip = make([]bool, len(m.nodes))
	m.groups = leafGroups(g, m.leafSw)
	return m, nil
}

// leafGroups clusters leaf switches by hop distance through switches:
// level k joins leaves at most 2k hops apart (nested partitions).
func leafGroups(g *topology.Graph, leafSw []int) [][][]int {
	idx := map[int]int{}
	for i, s := range leafSw {
		idx[s] = i
	}
	n := len(leafSw)
	dist := make([][]int, n)
	maxD := 0
	for i, s := range leafSw {
		dist[i] = switchHops(g, s, idx, n)
		for _, d := range dist[i] {
			if d < math.MaxInt && d > maxD {
				maxD = d
			}
		}
	}
	var levels [][][]int
	for k := 0; ; k++ {
		parent := make([]int, n)
		for i := range parent {
			parent[i] = i
		}
		find := func(x int) int {
			for parent[x] != x {
				parent[x] = parent[parent[x]]
				x = parent[x]
			}
			return x
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				if dist[i][j] <= 2*k {
					parent[find(i)] = find(j)
				}
			}
		}
		byRoot := map[int][]int{}
		var roots []int
		for i := range n {
			r := find(i)
			if _, ok := byRoot[r]; !ok {
				roots = append(roots, r)
			}
			byRoot[r] = append(byRoot[r], i)
		}
		var level [][]int
		for _, r := range roots {
			level = append(level, byRoot[r])
		}
		levels = append(levels, level)
		if 2*k >= maxD {
			return levels
		}
	}
}

// switchHops returns the hop distance from switch s to every leaf switch
// through working links between switches.
func switchHops(g *topology.Graph, s int, idx map[int]int, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = math.MaxInt
	}
	d := map[int]int{s: 0}
	q := []int{s}
	for len(q) > 0 {
		v := q[0]
		q = q[1:]
		if i, ok := idx[v]; ok {
			out[i] = d[v]
		}
		for _, c := range g.Out(v) {
			w := g.Dst(int(c))
			if g.Kind(w) != topology.Switch || !g.Up(int(c)) || g.NodeFailed(w) {
				continue
			}
			if _, seen := d[w]; !seen {
				d[w] = d[v] + 1
				q = append(q, w)
			}
		}
	}
	return out
}

func (m *TreeMachine) Describe() string {
	return fmt.Sprintf("%s, tree placement (fewest leaf switches, then fewest spine hops)", m.g.Name())
}
func (m *TreeMachine) Size() int                        { return len(m.nodes) }
func (m *TreeMachine) FreeCount() int                   { return m.occ.free }
func (m *TreeMachine) Available(v int) bool             { return m.occ.available(v) }
func (m *TreeMachine) Coord(int) []int                  { return nil }
func (m *TreeMachine) NodeName(v int) string            { return m.g.NodeName(m.nodes[v]) }
func (m *TreeMachine) Vertex(v int) int                 { return m.nodes[v] }
func (m *TreeMachine) Occupy(id int, nodes []int) error { return m.occ.occupy(id, nodes) }
func (m *TreeMachine) Release(id int, nodes []int)      { m.occ.release(id, nodes) }
func (m *TreeMachine) Clone() Machine {
	c := *m
	c.occ = m.occ.clone()
	c.skip = make([]bool, len(m.skip))
	return &c
}

// LeafOf returns the leaf switch (graph vertex) of node v.
func (m *TreeMachine) LeafOf(v int) int { return m.leafSw[m.leafOf[v]] }

// Leaves returns how many leaf switches a node set spans.
func (m *TreeMachine) Leaves(nodes []int) int {
	seen := map[int]bool{}
	for _, v := range nodes {
		seen[m.leafOf[v]] = true
	}
	return len(seen)
}

func (m *TreeMachine) Unplaceable(j Job) string {
	return fmt.Sprintf("needs %d nodes, no connected group of leaf switches has that many usable nodes", j.Nodes)
}

func (m *TreeMachine) Place(j Job, avoid []int) (Placement, bool, error) {
	if j.Nodes > m.occ.free {
		return Placement{}, false, nil
	}
	skip := mask(m.skip, avoid)
	free := make([]int, len(m.leaves))
	for li, ns := range m.leaves {
		for _, v := range ns {
			if m.occ.available(v) && !skip[v] {
				free[li]++
			}
		}
	}
	leaves := m.chooseLeaves(free, j.Nodes)
	if leaves == nil {
		return Placement{}, false, nil
	}
	nodes := make([]int, 0, j.Nodes)
	for _, li := range leaves {
		for _, v := range m.leaves[li] {
			if len(nodes) < j.Nodes && m.occ.available(v) && !skip[v] {
				nodes = append(nodes, v)
			}
		}
	}
	return Placement{Nodes: nodes, Active: j.Nodes}, true, nil
}

// chooseLeaves picks the leaves for a job of need nodes given the free
// count per leaf, or nil if no connected group has enough.
func (m *TreeMachine) chooseLeaves(free []int, need int) []int {
	for k := minLeaves(free, need); k > 0 && k <= len(free); k++ {
		for _, level := range m.groups {
			best, bestFree := -1, 0
			for gi, grp := range level {
				top, total := topFree(grp, free, k)
				if top >= need && (best < 0 || total < bestFree) {
					best, bestFree = gi, total
				}
			}
			if best >= 0 {
				return pickLeaves(level[best], free, k, need)
			}
		}
	}
	return nil
}

// minLeaves is the fewest leaves whose free nodes add up to need
// (0 if all together have too few).
func minLeaves(free []int, need int) int {
	s := slices.Clone(free)
	sort.Sort(sort.Reverse(sort.IntSlice(s)))
	sum := 0
	for i, f := range s {
		sum += f
		if sum >= need {
			return i + 1
		}
	}
	return 0
}

// topFree returns the free nodes on the k emptiest leaves of grp and on
// all of its leaves.
func topFree(grp []int, free []int, k int) (top, total int) {
	fs := make([]int, len(grp))
	for i, li := range grp {
		fs[i] = free[li]
		total += fs[i]
	}
	sort.Sort(sort.Reverse(sort.IntSlice(fs)))
	for i := 0; i < k && i < len(fs); i++ {
		top += fs[i]
	}
	return top, total
}

// pickLeaves takes the k−1 leaves of grp with the most free nodes and, for
// the rest, the leaf with the fewest free nodes that suffice.
func pickLeaves(grp []int, free []int, k, need int) []int {
	order := slices.Clone(grp)
	sort.SliceStable(order, func(a, b int) bool { return free[order[a]] > free[order[b]] })
	out := slices.Clone(order[:k-1])
	rest := need
	for _, li := range out {
		rest -= free[li]
	}
	last := -1
	for _, li := range order[k-1:] {
		if free[li] >= rest && (last < 0 || free[li] < free[last]) {
			last = li
		}
	}
	return append(out, last)
}
