package routing

import "fmt"

// RoutingGraph is the routing graph RG of seed 001 §2.2 for one torus and
// rule: every node i has one vertex per routing history (U_begin^i, U_FS^i
// per positive direction, U_Dirbit^i per non-empty set of directions that
// obeys the direction bits, U_LS^i per negative direction, U_end^i for the
// Angara rules), and an edge joins U_X^i to U_Y^{i+D} when a packet with
// history X at i may step in direction D over a live link (never across
// the ends of a mesh dimension, where there is none) and then has
// history Y; every history that may end a route has an edge to U_end^i.
// A route from a to b exists iff RG has a path U_begin^a → U_end^b.
//
// The graph is implicit: it is the product of the torus and the rule
// automaton, so it takes a few kilobytes whatever the torus size (see
// Bytes), and its vertices are numbered node·StatesPerNode() + state.
type RoutingGraph struct {
	r *Router
}

// RG returns the routing graph of the router's torus and rule.
func (r *Router) RG() *RoutingGraph { return &RoutingGraph{r} }

// StatesPerNode returns the number of RG vertices per torus node: 3^n+2n+1
// for the Angara rules, 3^n+1 for dirbit, 2n+2 for dor.
func (rg *RoutingGraph) StatesPerNode() int { return rg.r.a.nstates }

// NumVertices returns |V| = nodes · StatesPerNode().
func (rg *RoutingGraph) NumVertices() int { return rg.r.t.nodes * rg.r.a.nstates }

// Begin returns U_begin of node v.
func (rg *RoutingGraph) Begin(v int) int { return v*rg.r.a.nstates + rg.r.a.begin }

// End returns U_end of node v.
func (rg *RoutingGraph) End(v int) int { return v*rg.r.a.nstates + rg.r.a.end }

// Node returns the torus node of vertex x.
func (rg *RoutingGraph) Node(x int) int { return x / rg.r.a.nstates }

// StateName names the history of vertex x ("begin", "FS+X", "{+X,-Y}",
// "LS-Z", "last+Y", "end").
func (rg *RoutingGraph) StateName(x int) string { return rg.r.a.stateName(x % rg.r.a.nstates) }

// VertexName names vertex x as "U_<history>^<node>".
func (rg *RoutingGraph) VertexName(x int) string {
	return fmt.Sprintf("U_%s^%s", rg.StateName(x), rg.r.t.name(rg.Node(x)))
}

// Edge is an edge of RG: a step in direction Dir to vertex To, or (Step
// false) the ejection edge to U_end of the same node.
type Edge struct {
	To   int
	Dir  Dir
	Step bool
}

// Succ appends the out-edges of vertex x to buf.
func (rg *RoutingGraph) Succ(x int, buf []Edge) []Edge {
	r := rg.r
	a := r.a
	S := a.nstates
	v, q := x/S, x%S
	if a.canEnd[q] && r.t.nodeUp[v] {
		buf = append(buf, Edge{To: v*S + a.end})
	}
	for k := a.tstart[q]; k < a.tstart[q+1]; k++ {
		d := a.tdir[k]
		if !live(r.up, r.t.chAt(v, d)) {
			continue
		}
		if a.tcond[k] && !r.condOK(v, q, d) {
			continue
		}
		buf = append(buf, Edge{To: int(r.t.nbAt(v, d))*S + int(a.tto[k]), Dir: d, Step: true})
	}
	return buf
}

// NumEdges counts the edges of RG (steps over live links and ejection
// edges at live nodes).
func (rg *RoutingGraph) NumEdges() int {
	var buf []Edge
	n := 0
	for x := 0; x < rg.NumVertices(); x++ {
		buf = rg.Succ(x, buf[:0])
		n += len(buf)
	}
	return n
}

// Bytes is the memory the implicit RG holds beyond the torus itself: the
// automaton tables plus, for angara*, one 16-bit mask of accepted
// dependencies per channel.
func (rg *RoutingGraph) Bytes() int {
	a := rg.r.a
	b := len(a.skind) + len(a.in) + len(a.canEnd) + 4*len(a.set) + 4*len(a.tstart) + len(a.tdir) + 4*len(a.tto) + len(a.tcond)
	if rg.r.star != nil {
		b += 2 * len(rg.r.star.extra)
	}
	return b
}

// TorusBytes is the memory of the torus index the RG is built on
// (neighbour and channel tables, channel directions and liveness).
func (rg *RoutingGraph) TorusBytes() int {
	t := rg.r.t
	return 4*len(t.nb) + 4*len(t.ch) + 4*len(t.chSrc) + len(t.chDir) + len(t.up) + len(t.nodeUp)
}

// ExplicitBytes is what the same RG would take stored explicitly as a
// compressed adjacency list (int32 offsets per vertex, int32 target per
// edge), for comparison with Bytes.
func (rg *RoutingGraph) ExplicitBytes() int {
	return 4*(rg.NumVertices()+1) + 4*rg.NumEdges()
}

// ScratchBytes is the per-worker working memory of reachability on the
// whole torus (one 64-bit source mask per vertex, per-node stamps and
// indices). A table search needs less: one bit per vertex of the set and
// 16 bytes per vertex it reaches.
func (rg *RoutingGraph) ScratchBytes() int {
	return rg.NumVertices()*8 + rg.r.t.nodes*(4+4+4+4+2)
}
