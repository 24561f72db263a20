package multicast

import (
	"fmt"

	"github.com/icn-hpc/icn/topology"
)

// Verifier checks multicast trees against the fabric. It keeps scratch
// space of the fabric's size and reuses it with epoch stamps, so checking
// many trees costs only their size. Not safe for concurrent use.
type Verifier struct {
	g      *topology.Graph
	h      *topology.HopTable
	epoch  uint32
	stamp  []uint32 // node is in the tree
	parent []int32  // channel into the node from its parent
	dstamp []uint32 // depth known
	depth  []int32
	wstamp []uint32 // node seen by the current depth walk
	walk   []int32
	stack  []int32
}

// NewVerifier prepares a verifier for the fabric of hop table h.
func NewVerifier(h *topology.HopTable) *Verifier {
	n := h.Graph().NumNodes()
	return &Verifier{g: h.Graph(), h: h, stamp: make([]uint32, n), parent: make([]int32, n),
		dstamp: make([]uint32, n), depth: make([]int32, n), wstamp: make([]uint32, n), walk: make([]int32, n)}
}

// Verify checks that t is a tree rooted at a working switch whose edges are
// working links, in which only switches forward, that reaches every member,
// and whose height equals the minimum possible for its root (the largest
// min-hop distance from the root to a member). It also checks that every
// node sits at its min-hop distance from the root, which all engines
// guarantee. It returns the tree's height.
func (v *Verifier) Verify(members []int32, t Tree) (int, error) {
	v.nextEpoch()
	root := int(t.Root)
	if err := v.checkRoot(root); err != nil {
		return 0, err
	}
	if err := v.linkParents(root, t.Edges); err != nil {
		return 0, err
	}
	if err := v.assignDepths(root, t.Edges); err != nil {
		return 0, err
	}
	height, err := v.checkMinHopDepths(root, t.Edges)
	if err != nil {
		return 0, err
	}
	g, h := v.g, v.h
	minHeight := 0
	for _, m := range members {
		if v.stamp[m] != v.epoch {
			return 0, fmt.Errorf("member %s is not reached", g.NodeName(int(m)))
		}
		minHeight = max(minHeight, hopsBetween(h, root, int(m)))
	}
	if height != minHeight {
		return 0, fmt.Errorf("tree height %d, the minimum for root %s is %d", height, g.NodeName(root), minHeight)
	}
	return height, nil
}

// VerifyShape checks what Verify checks except the min-hop depths and
// height: a tree rooted at a working switch, over working links, in which
// only switches forward, reaching every member. It needs no hop counts.
// A tree that passed Verify on a fabric that has since only lost links or
// nodes and passes VerifyShape passes Verify too: no distance shrank, and
// the tree's own paths still bound each distance from above.
func (v *Verifier) VerifyShape(members []int32, t Tree) error {
	v.nextEpoch()
	root := int(t.Root)
	if err := v.checkRoot(root); err != nil {
		return err
	}
	if err := v.linkParents(root, t.Edges); err != nil {
		return err
	}
	if err := v.assignDepths(root, t.Edges); err != nil {
		return err
	}
	for _, m := range members {
		if v.stamp[m] != v.epoch {
			return fmt.Errorf("member %s is not reached", v.g.NodeName(int(m)))
		}
	}
	return nil
}

// nextEpoch starts a new verification, clearing the stamps when the epoch
// counter wraps.
func (v *Verifier) nextEpoch() {
	v.epoch++
	if v.epoch == 0 {
		clear(v.stamp)
		clear(v.dstamp)
		clear(v.wstamp)
		v.epoch = 1
	}
}

// checkRoot checks the root is a working switch and gives it depth 0.
func (v *Verifier) checkRoot(root int) error {
	g := v.g
	if root < 0 || root >= g.NumNodes() {
		return fmt.Errorf("root id %d is not a node", root)
	}
	if v.h.RouterIndex(root) < 0 {
		return fmt.Errorf("root %s is not a switch", g.NodeName(root))
	}
	if g.NodeFailed(root) {
		return fmt.Errorf("root %s is a failed node", g.NodeName(root))
	}
	ep := v.epoch
	v.stamp[root], v.parent[root] = ep, -1
	v.dstamp[root], v.depth[root] = ep, 0
	return nil
}

// linkParents records the parent edge of every edge's head, checking each
// edge is a working link out of a switch, never into the root, and that no
// node has two parents.
func (v *Verifier) linkParents(root int, edges []int32) error {
	g, h := v.g, v.h
	ep := v.epoch
	for _, c := range edges {
		if c < 0 || int(c) >= g.NumChannels() {
			return fmt.Errorf("edge channel %d out of range", c)
		}
		p, x := g.Src(int(c)), g.Dst(int(c))
		if !g.Up(int(c)) {
			return fmt.Errorf("edge %s→%s uses a failed link", g.NodeName(p), g.NodeName(x))
		}
		if x == root {
			return fmt.Errorf("edge %s→%s enters the root (cycle)", g.NodeName(p), g.NodeName(x))
		}
		if h.RouterIndex(p) < 0 {
			return fmt.Errorf("end node %s forwards to %s", g.NodeName(p), g.NodeName(x))
		}
		if v.stamp[x] == ep {
			return fmt.Errorf("node %s has two parents (%s and %s): not a tree", g.NodeName(x),
				g.NodeName(g.Src(int(v.parent[x]))), g.NodeName(p))
		}
		v.stamp[x], v.parent[x] = ep, c
	}
	return nil
}

// assignDepths gives every node of the tree its depth: follow parents up
// to a node of known depth; a walk longer than the tree or ending outside
// it means a cycle or a detached edge.
func (v *Verifier) assignDepths(root int, edges []int32) error {
	g := v.g
	ep := v.epoch
	for k, c := range edges {
		x := int32(g.Dst(int(c)))
		v.stack = v.stack[:0]
		for v.dstamp[x] != ep {
			if v.wstamp[x] == ep && v.walk[x] == int32(k) {
				return fmt.Errorf("edges around %s form a cycle not connected to the root", g.NodeName(int(x)))
			}
			v.wstamp[x], v.walk[x] = ep, int32(k)
			v.stack = append(v.stack, x)
			p := int32(g.Src(int(v.parent[x])))
			if v.stamp[p] != ep {
				return fmt.Errorf("edge %s→%s is not connected to the root %s", g.NodeName(int(p)), g.NodeName(int(x)), g.NodeName(root))
			}
			x = p
		}
		d := v.depth[x]
		for i := len(v.stack) - 1; i >= 0; i-- {
			d++
			y := v.stack[i]
			v.dstamp[y], v.depth[y] = ep, d
		}
	}
	return nil
}

// checkMinHopDepths checks every node sits at its min-hop distance from
// the root and returns the tree's height.
func (v *Verifier) checkMinHopDepths(root int, edges []int32) (int, error) {
	g := v.g
	height := 0
	for _, c := range edges {
		x := g.Dst(int(c))
		d := int(v.depth[x])
		height = max(height, d)
		if want := hopsBetween(v.h, root, x); d != want {
			return 0, fmt.Errorf("%s is %d hops from root %s in the tree, %d by the shortest path", g.NodeName(x), d, g.NodeName(root), want)
		}
	}
	return height, nil
}

// hopsBetween is the min-hop distance from the root to x. Links are
// symmetric: for a switch x it reads the root's own column, so a lazy hop
// table computes one column per tree checked.
func hopsBetween(h *topology.HopTable, root, x int) int {
	if h.RouterIndex(x) >= 0 {
		return h.Hops(x, root)
	}
	return h.Hops(root, x)
}

// LinkEFI counts, for every link, the trees that use it (the edge
// forwarding index), from the trees themselves.
func LinkEFI(g *topology.Graph, trees []Tree) []int32 {
	efi := make([]int32, g.NumLinks())
	for _, t := range trees {
		for _, c := range t.Edges {
			efi[c>>1]++
		}
	}
	return efi
}

// EFIStats summarises per-link EFI.
type EFIStats struct {
	Max int `json:"max_efi"`
	// Mean is over the links used by at least one tree.
	Mean float64 `json:"mean_efi"`
	// MaxSwitch is the largest EFI of a link between two switches (end-node
	// links carry every group of their node whatever the engine does).
	MaxSwitch int `json:"max_efi_switch"`
	// MaxGlobal is the largest EFI of a global (dragonfly) link, if any.
	MaxGlobal int `json:"max_efi_global,omitempty"`
	LinksUsed int `json:"links_used"`
	Edges     int `json:"tree_edges"`
}

// SummariseEFI computes the EFI statistics of per-link counts.
func SummariseEFI(h *topology.HopTable, efi []int32) EFIStats {
	g := h.Graph()
	var s EFIStats
	for l, e := range efi {
		if e == 0 {
			continue
		}
		s.LinksUsed++
		s.Edges += int(e)
		s.Max = max(s.Max, int(e))
		lk := g.Link(l)
		if h.RouterIndex(int(lk.A)) >= 0 && h.RouterIndex(int(lk.B)) >= 0 {
			s.MaxSwitch = max(s.MaxSwitch, int(e))
		}
		if lk.Class == topology.Global {
			s.MaxGlobal = max(s.MaxGlobal, int(e))
		}
	}
	if s.LinksUsed > 0 {
		s.Mean = float64(s.Edges) / float64(s.LinksUsed)
	}
	return s
}
