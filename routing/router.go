package routing

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/icn-hpc/icn/topology"
)

// Router answers routing questions on one torus (with its failures) under
// one rule. It precomputes the torus index, the rule automaton and, for
// angara*, the accepted order-violating dependencies once; reachability
// and table construction then reuse pooled scratch space, so keep one
// Router per network and rule. A Router is safe for concurrent use.
type Router struct {
	t     *torus
	rule  Rule
	order Order
	a     *automaton
	plan  *bfsPlan
	up    []bool
	star  *starResult // angara* only
	// moves lists, per automaton state, the transitions searches follow
	// (not dominated, not the self-loop, and for angara* not
	// conditional when no order-violating dependency was accepted):
	// moves[moveStart[q]:moveStart[q+1]].
	moves     []move
	moveStart []int32
	// ra is the automaton reachability follows: the same moves with
	// equivalent states merged (reachAuto).
	ra reachAuto
	// upOut has, per node, bit d set when a live channel leaves it in
	// direction d; inExtra, per node v and direction d (v*nd+d), the
	// R_A* extras of the channel entering v moving in direction d (0
	// where none does): openMask and condOK in one load each
	// (compileMasks, again whenever up changes).
	upOut   []uint16
	inExtra []uint16
	// free holds scratch spaces for reuse (a few, kept across GCs: they
	// are sized by the torus, megabytes for thousands of nodes).
	mu   sync.Mutex
	free []*scratch
	// tune holds the thresholds of this router (defaultTuning unless a
	// test moved them to reach another code path).
	tune tuning
}

// tuning holds the thresholds that choose between code paths giving the
// same tables; tests move them per router (never package-wide) to reach
// every path.
type tuning struct {
	// idOrder numbers a set's nodes by id instead of from where the set
	// starts (newLocalSet).
	idOrder bool
	// noGeodesicPrune turns the geodesic pruning of box sets off.
	noGeodesicPrune bool
	// noSimulation makes sweeps visit every vertex, also those where a
	// state simulating theirs has reached their node (reachAuto.sim).
	noSimulation bool
	// maxOrderNodes bounds the active nodes for which the exact order of
	// heuristic 1 is computed up front (an m×m byte matrix of distances).
	maxOrderNodes int
	// cheapOrderNodes: up to this many active nodes the exact order is
	// computed by default (the distance searches cost about a quarter of
	// the table; above, unless asked for, interleaved chains).
	cheapOrderNodes int
	// poolMinRoutes: tables of fewer routes are built by one worker.
	poolMinRoutes int
	// closureLimit bounds the condensed vertex count for the bit-set
	// closure of the R_A* construction (searches above it).
	closureLimit int
	// star is the R_A* construction variant (experiments only).
	star starVariant
	// noSharedWalk makes table verification walk every route on its own
	// (routeChecker.quickShared is not used).
	noSharedWalk bool
}

func defaultTuning() tuning {
	return tuning{maxOrderNodes: 8192, cheapOrderNodes: 1024, poolMinRoutes: defaultPoolMinRoutes, closureLimit: 8192}
}

// NewRouter prepares routing on g (a torus from topology.Parse, possibly
// with failures) under rule.
func NewRouter(g *topology.Graph, rule Rule) (*Router, error) {
	t, err := newTorus(g)
	if err != nil {
		return nil, err
	}
	return newRouter(t, t.up, rule, defaultTuning())
}

// newTunedRouter is NewRouter with thresholds moved by set (tests).
func newTunedRouter(g *topology.Graph, rule Rule, set func(*tuning)) (*Router, error) {
	t, err := newTorus(g)
	if err != nil {
		return nil, err
	}
	tu := defaultTuning()
	set(&tu)
	return newRouter(t, t.up, rule, tu)
}

func newRouter(t *torus, up []bool, rule Rule, tu tuning) (*Router, error) {
	order := rule.OrderFor(t.n)
	if err := order.valid(t.n); err != nil {
		return nil, err
	}
	if rule.Kind > AngaraStar {
		return nil, fmt.Errorf("unknown routing rule kind %d", rule.Kind)
	}
	r := &Router{t: t, rule: Rule{Kind: rule.Kind, Order: order}, order: order, up: up, tune: tu}
	r.a = compile(rule.Kind, order, t.n)
	r.plan = newBFSPlan(r.a)
	if rule.Kind == AngaraStar {
		sb := starBuilder{variant: tu.star, closureLimit: tu.closureLimit}
		st, err := sb.build(t, up, r.a.rank)
		if err != nil {
			return nil, err
		}
		r.star = &st
	}
	r.compileMoves()
	return r, nil
}

// compileMasks fills r.upOut and r.inExtra from r.up and r.star.
func (r *Router) compileMasks() {
	t := r.t
	r.upOut = slices.Grow(r.upOut[:0], t.nodes)[:t.nodes]
	for v := range t.nodes {
		var m uint16
		for d := range t.nd {
			if live(r.up, t.ch[v*t.nd+d]) {
				m |= 1 << d
			}
		}
		r.upOut[v] = m
	}
	if r.star == nil || len(r.star.extra) == 0 {
		r.inExtra = nil
		return
	}
	r.inExtra = slices.Grow(r.inExtra[:0], t.nodes*t.nd)[:t.nodes*t.nd]
	for v := range t.nodes {
		for d := range t.nd {
			var x uint16
			if in := t.inCh(v, Dir(d)); in >= 0 {
				x = r.star.extra[in]
			}
			r.inExtra[v*t.nd+d] = x
		}
	}
}

// move is one transition reachability follows.
type move struct {
	dir  Dir
	cond bool // allowed only where R_A* accepted the dependency
	to   int32
}

// compileMoves fills r.moves and r.ra from the automaton, and the masks
// of the live channels.
func (r *Router) compileMoves() {
	a := r.a
	condNever := r.star == nil || r.star.accepted == 0
	start := make([]int32, a.nstates+1)
	var moves []move
	for q := 0; q < a.nstates; q++ {
		start[q] = int32(len(moves))
		for k := a.tstart[q]; k < a.tstart[q+1]; k++ {
			if a.tskip[k] || a.tto[k] == int32(q) || a.tcond[k] && condNever {
				continue
			}
			moves = append(moves, move{dir: a.tdir[k], cond: a.tcond[k], to: a.tto[k]})
		}
	}
	start[a.nstates] = int32(len(moves))
	r.moves, r.moveStart = moves, start
	r.ra = mergeStates(a, start, moves)
	r.compileMasks()
}

// Rule returns the router's rule (with its order filled in).
func (r *Router) Rule() Rule { return r.rule }

// Graph returns the network.
func (r *Router) Graph() *topology.Graph { return r.t.g }

// Dims returns the torus sizes.
func (r *Router) Dims() []int { return r.t.dims }

// ExtraDependencies reports, for angara*, how many order-violating FS/LS
// dependencies were offered and how many were accepted (0, 0 for other
// rules).
func (r *Router) ExtraDependencies() (offered, accepted int) {
	if r.star == nil {
		return 0, 0
	}
	return r.star.candidates, r.star.accepted
}

// ExtrasRingInvariant reports whether, under angara*, the accepted
// dependencies are the same at every translate along the ring dimensions,
// so that the rule, like the others, looks only at directions and at the
// positions along mesh dimensions (true for the other rules). The
// answers of such a router on a network without failures depend only on
// the set up to a translation along the rings.
func (r *Router) ExtrasRingInvariant() bool {
	return r.star == nil || r.star.accepted == 0 || r.star.ringInvariant
}

// ExtraAllowed reports whether, under angara*, a packet that entered
// node Dst(c) through channel c may continue in direction d although d is
// below c's direction in the order (an accepted FS/LS dependency). It is
// false for the other rules.
func (r *Router) ExtraAllowed(c int, d Dir) bool {
	return r.star != nil && c >= 0 && c < len(r.star.extra) && r.star.extra[c]&(1<<d) != 0
}

// condOK reports whether the conditional transition in direction d may
// be taken from vertex (v, q) of the automaton r.a: R_A* accepted the
// dependency from the channel entering q to d.
func (r *Router) condOK(v, q int, d Dir) bool { return r.turnOK(v, r.a.in[q], d) }

// moveOK is condOK for state q of r.ra.
func (r *Router) moveOK(v, q int, d Dir) bool { return r.turnOK(v, r.ra.in[q], d) }

// turnOK reports whether R_A* accepted the turn at node v from the
// channel entering it in direction in to direction d.
func (r *Router) turnOK(v int, in int8, d Dir) bool {
	return r.inExtra[v*r.t.nd+int(in)]&(1<<d) != 0
}

// ---- scratch ----

type scratch struct {
	// stop, when not nil, is asked between batches of sources of
	// reachSet; stopped records that it ended the check.
	stop    func() bool
	stopped bool
	// sourceOrder's scratch (holesFirst): candidate sources, and the
	// set's node count per position of each dimension
	cands      []int32
	layerOff   []int
	layerCount []int32
	// sweep: per node (index of the reachability arrays), == endedEpoch
	// when the sweep reached it where a route may end
	ended      []uint32
	endedEpoch uint32
	seenBits   []uint64
	setStamp   []uint32 // per node: == setEpoch when in M_{a,t}
	setEpoch   uint32
	actIdx     []int32  // per node: index in the sorted active list, valid when in set and active
	loc        []int32  // per node: local index in the set (newLocalSet), valid for set nodes
	open       []uint16 // per node in the set: bit d set when the channel in direction d is alive and leads into the set
	// openStamp[v] == setEpoch when open[v] is computed for the set
	openStamp []uint32
	isAct     []uint32
	// mloc[v]: node v's index in the marked set (valid for set nodes),
	// and mnode the set's nodes in that order: the reachability arrays
	// below are sized by the set, not by the network, so a question
	// about a small set on a large torus costs little memory
	mloc  []int32
	mnode []int32
	// dense: the arrays are indexed by node id instead (a network small
	// enough, denseEntries), which saves the lookup in the inner loops;
	// width is the number of indices per state either way
	dense bool
	width int
	// lopen and lnb (not dense): per set index, the open mask and the
	// set index of the neighbour in each open direction
	lopen []uint16
	lnb   []int32
	// per RG vertex (reachability), in state-major order (vertex (v, q)
	// at q·width + at(v))
	mask []uint64
	// live[q]: the indices (at) of the set nodes whose mask in state q
	// is not zero, in the order they got their first bit (reachability)
	live [][]int32
	// single-pair searches (pairReach): per RG vertex (at(v)·states +
	// q), == seenEpoch when visited
	seen      []uint32
	seenEpoch uint32
	stack     []int32
	// tables
	act   []int32
	trans []int32
	// reachSet's order of the sources (indices into act) and each
	// one's position in it
	order, pos []int32
	hint       []int    // ReachableWithHints's nodes of the pairs
	got        []uint64 // batchMisses: per node, the sources that reached it
	// LegalPath: per node, == setEpoch when a free node (extra); per
	// vertex (index as seen), the best label found
	costly []uint32
	label  []pathLabel
}

func (r *Router) getScratch() *scratch {
	r.mu.Lock()
	if n := len(r.free); n > 0 {
		s := r.free[n-1]
		r.free = r.free[:n-1]
		r.mu.Unlock()
		return s
	}
	r.mu.Unlock()
	return newScratch(r.t.nodes, 0, len(r.up)) // the masks grow with the sets asked about
}

// putScratch keeps a scratch for the next question. A scratch is sized
// by the network (per node and automaton state), so on a large torus one
// costs tens of MB: as many are kept as questions run at once on all
// cores (and a nested few), rather than made again for each question.
func (r *Router) putScratch(s *scratch) {
	r.mu.Lock()
	if len(r.free) < runtime.GOMAXPROCS(0)+2 {
		r.free = append(r.free, s)
	}
	r.mu.Unlock()
}

// newEpoch advances a stamp counter, clearing the stamps on wrap-around.
func newEpoch(e *uint32, stamps []uint32) uint32 {
	*e++
	if *e == 0 {
		clear(stamps)
		*e = 1
	}
	return *e
}

// prepareSet validates active and transit, marks M_{a,t} in s and returns
// the active nodes sorted by id (in s.act) and the transit nodes (sorted).
func (r *Router) prepareSet(s *scratch, active, transit []int) error {
	if err := r.markSet(s, active, transit); err != nil {
		return err
	}
	r.indexSet(s)
	return nil
}

// markSet validates active and transit and marks M_{a,t} in s (setStamp,
// isAct; s.act and s.trans list the nodes unsorted).
func (r *Router) markSet(s *scratch, active, transit []int) error {
	if len(active) == 0 {
		return fmt.Errorf("no active nodes")
	}
	ep := newEpoch(&s.setEpoch, s.setStamp)
	// isAct and openStamp use the same epoch value space as setStamp.
	if ep == 1 {
		clear(s.isAct)
		clear(s.openStamp)
		clear(s.costly)
	}
	s.act = s.act[:0]
	s.trans = s.trans[:0]
	s.mnode = s.mnode[:0]
	s.dense = r.t.nodes*r.ra.nstates <= denseEntries
	if !s.dense && len(s.mloc) < r.t.nodes {
		s.mloc = make([]int32, r.t.nodes)
	}
	for k, list := range [2][]int{active, transit} {
		for _, v := range list {
			if v < 0 || v >= r.t.nodes {
				return fmt.Errorf("node id %d is outside the torus (0..%d)", v, r.t.nodes-1)
			}
			if s.setStamp[v] == ep {
				if k == 1 && s.isAct[v] == ep {
					return fmt.Errorf("node %s is both active and transit", r.t.name(v))
				}
				return fmt.Errorf("node %s listed twice", r.t.name(v))
			}
			if !r.t.nodeUp[v] {
				return fmt.Errorf("node %s is failed and cannot be in the set", r.t.name(v))
			}
			s.setStamp[v] = ep
			if !s.dense {
				s.mloc[v] = int32(len(s.mnode))
				s.mnode = append(s.mnode, int32(v))
			}
			if k == 0 {
				s.isAct[v] = ep
				s.act = append(s.act, int32(v))
			} else {
				s.trans = append(s.trans, int32(v))
			}
		}
	}
	s.width = len(s.mnode)
	if s.dense {
		s.width = r.t.nodes
	}
	return nil
}

// denseEntries bounds the vertices (node, state) of a network whose
// reachability arrays are indexed by node id: above it they are sized by
// the set asked about (a variable for tests).
var denseEntries = 1 << 22

// at is node v's index in the reachability arrays of the marked set.
func (s *scratch) at(v int32) int32 {
	if s.dense {
		return v
	}
	return s.mloc[v]
}

// indexSet completes prepareSet for a set marked by markSet: sorts the
// lists, indexes the active nodes and computes the open masks.
func (r *Router) indexSet(s *scratch) {
	slices.Sort(s.act)
	slices.Sort(s.trans)
	for i, v := range s.act {
		s.actIdx[v] = int32(i)
	}
	for _, list := range [2][]int32{s.act, s.trans} {
		for _, v := range list {
			r.openOf(s, v)
		}
	}
	if s.dense {
		return
	}
	t := r.t
	n := len(s.mnode)
	s.lopen = slices.Grow(s.lopen[:0], n)[:n]
	s.lnb = slices.Grow(s.lnb[:0], n*t.nd)[:n*t.nd]
	for i, v := range s.mnode {
		open := s.open[v]
		s.lopen[i] = open
		for d := range t.nd {
			if open&(1<<d) != 0 {
				s.lnb[i*t.nd+d] = s.mloc[t.nb[int(v)*t.nd+d]]
			}
		}
	}
}

// graph returns the set's neighbour table and open masks in the index
// space of the reachability arrays (at): the network's, by node id, or
// the set's own.
func (r *Router) graph(s *scratch) (nb []int32, open []uint16) {
	if s.dense {
		return r.t.nb, s.open
	}
	return s.lnb, s.lopen
}

// node is the node id of index i of the reachability arrays.
func (s *scratch) node(i int32) int32 {
	if s.dense {
		return i
	}
	return s.mnode[i]
}

// openOf returns s.open[v], the open mask of node v of the marked set,
// computing it the first time it is asked for the set.
func (r *Router) openOf(s *scratch, v int32) uint16 {
	if len(s.open) < r.t.nodes {
		s.open = make([]uint16, r.t.nodes)
		s.openStamp = make([]uint32, r.t.nodes)
	}
	if s.openStamp[v] != s.setEpoch {
		s.open[v] = r.openMask(s, v)
		s.openStamp[v] = s.setEpoch
	}
	return s.open[v]
}

// openMask has bit d set when the channel leaving v in direction d is
// alive and leads into the marked set.
func (r *Router) openMask(s *scratch, v int32) uint16 {
	t := r.t
	mask := r.upOut[v]
	base := int(v) * t.nd
	for m := mask; m != 0; m &= m - 1 {
		d := bits.TrailingZeros16(m)
		if s.setStamp[t.nb[base+d]] != s.setEpoch {
			mask &^= 1 << d
		}
	}
	return mask
}

// ---- reachability ----

// Reachable reports whether every ordered pair of active nodes has a legal
// route whose transit nodes all lie in active ∪ transit (the set M_{a,t}
// of seed 001 §2.4). It has the signature alloc.Router expects.
func (r *Router) Reachable(active, transit []int) (bool, error) {
	s := r.getScratch()
	defer r.putScratch(s)
	if err := r.prepareSet(s, active, transit); err != nil {
		return false, err
	}
	ok, _ := r.reachSet(s, nil, true)
	return ok, nil
}

// ReachableFirst is Reachable that also returns one unreachable pair (source,
// destination node ids; the smallest source, then the smallest
// destination) when the set is not reachable.
func (r *Router) ReachableFirst(active, transit []int) (ok bool, bad [2]int, err error) {
	return r.ReachableFrom(active, transit, nil)
}

// reachSet answers reachability for the set prepared in s: the RG is
// restricted to the vertices of M_{a,t} and the sources are propagated 64
// at a time as bit masks. The rule automaton is acyclic apart from one
// self-loop per state (repeating the last direction), so the states are
// taken in topological order: each state's masks are first closed along
// its self-loop direction (walks along the rings), then pushed over the
// other transitions; every vertex is handled a bounded number of times.
// Each state visits only the nodes its masks reached (s.live), not the
// whole set: the closures and pushes are unions, so the masks are the
// same whatever the order.
//
// The sources are taken in the order of the active list, except that the
// active nodes in first (at most maxFirst, when there is more than one
// batch) go into the first batch: a set that is not reachable is rejected
// after the batch holding a source without a route to some destination,
// and callers name the nodes that lacked a route in similar sets. The
// pair returned is the missing one whose source comes first in that
// order, then the smallest destination. With holes, the nodes in the most
// partial layers of the set come next, in the first batches
// (holesFirst); without first and holes the pair is the one with the
// smallest source, then the smallest destination.
func (r *Router) reachSet(s *scratch, first []int, holes bool) (bool, [2]int) {
	r.sourceOrder(s, first, holes)
	missing, bad := r.passes(s, false)
	return !s.stopped && len(missing) == 0, bad
}

// passes takes the sources of s.order through the set's routing graph 64
// at a time (propagate) and returns those that miss some active node, in
// that order, and the missing pair of the first of them with its
// smallest destination ({-1, -1} when none). With all false it stops
// after the first batch with a miss; it also stops, missing nothing, when
// s.stop says so (s.stopped).
func (r *Router) passes(s *scratch, all bool) (missing []int, bad [2]int) {
	bad = [2]int{-1, -1}
	for b0 := 0; b0 < len(s.order); b0 += 64 {
		if s.stop != nil && s.stop() {
			s.stopped = true
			return nil, [2]int{-1, -1}
		}
		b1 := min(b0+64, len(s.order))
		r.propagate(s, b0, b1)
		union, src, dst := r.batchMisses(s, b0, b1)
		r.clearBatch(s)
		if src >= 0 && bad[0] < 0 {
			bad = [2]int{int(s.act[src]), int(s.act[dst])}
		}
		for ; union != 0; union &= union - 1 {
			missing = append(missing, int(s.act[s.order[b0+bitsTrailing(union)]]))
		}
		if !all && len(missing) > 0 {
			break
		}
	}
	return missing, bad
}

// propagate takes the sources at positions b0..b1-1 of s.order (at most
// 64) through the set's routing graph: bit p-b0 of a vertex's mask is set
// when the source at position p reaches it (see reachSet).
func (r *Router) propagate(s *scratch, b0, b1 int) {
	S := r.ra.nstates
	if len(s.live) < S {
		s.live = make([][]int32, S)
	}
	if len(s.mask) < S*s.width {
		s.mask = make([]uint64, S*s.width) // zero outside a check: each pass clears what it set
	}
	begin := r.ra.begin
	for p := b0; p < b1; p++ {
		r.orMask(s, s.at(s.act[s.order[p]]), begin, 1<<uint(p-b0))
	}
	for _, q := range r.ra.topo {
		if sd := r.ra.self[q]; sd >= 0 {
			r.closeSelfLoop(s, q, sd)
		}
		r.pushTransitions(s, q)
	}
}

// clearBatch clears the masks a pass (propagate) set.
func (r *Router) clearBatch(s *scratch) {
	N := s.width
	for q, list := range s.live[:r.ra.nstates] {
		m := s.mask[q*N : (q+1)*N]
		for _, v := range list {
			m[v] = 0
		}
		s.live[q] = list[:0]
	}
}

// MissingFrom checks the legal routes inside the set M_{a,t} (active ∪
// transit) from the given sources (active node ids; every active node
// when sources is nil) to every active node. It returns the sources that
// lack a route to some active node, in the order given (ascending for
// nil), and the missing pair of the first of them with its smallest
// destination ({-1, -1} when there is none): for all sources, the pair
// ReachableFirst returns.
//
// Legal routes only grow with the set (the rule's turns depend on the
// fabric, not on the set), so a caller that adds transit nodes to a set
// asks again only from the sources that missed before, and one that
// removes some of what it added, only from those that missed before the
// first addition.
func (r *Router) MissingFrom(active, transit, sources []int) (missing []int, bad [2]int, err error) {
	return r.checkFrom(active, transit, sources, true)
}

// ReachableFrom is MissingFrom that stops after the first batch of 64
// sources with a missing pair and returns that pair: the one whose
// source comes first in the order of sources, then the smallest
// destination. Every source before it in that order has a route to
// every active node. Sources likely to miss go first, and a set that
// misses is told at the cost of one batch.
func (r *Router) ReachableFrom(active, transit, sources []int) (ok bool, bad [2]int, err error) {
	missing, bad, err := r.checkFrom(active, transit, sources, false)
	return err == nil && len(missing) == 0, bad, err
}

// checkFrom is MissingFrom, or with all false ReachableFrom (missing
// then holds the sources that missed in the batch it stopped after).
func (r *Router) checkFrom(active, transit, sources []int, all bool) (missing []int, bad [2]int, err error) {
	s := r.getScratch()
	defer r.putScratch(s)
	bad = [2]int{-1, -1}
	if err := r.prepareSet(s, active, transit); err != nil {
		return nil, bad, err
	}
	m := len(s.act)
	s.pos = slices.Grow(s.pos[:0], m)[:m]
	s.order = s.order[:0]
	if sources == nil {
		for i := range int32(m) {
			s.pos[i] = i
			s.order = append(s.order, i)
		}
	} else {
		for i := range s.pos {
			s.pos[i] = -1
		}
		for _, v := range sources {
			if v < 0 || v >= r.t.nodes {
				return nil, bad, fmt.Errorf("source node id %d is outside the torus (0..%d)", v, r.t.nodes-1)
			}
			if !r.isActive(s, v) {
				return nil, bad, fmt.Errorf("source %s is not an active node of the set", r.t.name(v))
			}
			if i := s.actIdx[v]; s.pos[i] < 0 {
				s.pos[i] = int32(len(s.order))
				s.order = append(s.order, i)
			}
		}
	}
	missing, bad = r.passes(s, all)
	return missing, bad, nil
}

// maxFirst bounds the sources reachSet moves into its first batch.
const maxFirst = 32

// sourceOrder fills s.order with the indices of the active nodes in the
// order reachSet takes them as sources (see reachSet): the active nodes of
// first, then with holes those holesFirst picks, then the others in the
// order of the active list; and s.pos with each one's position in it.
func (r *Router) sourceOrder(s *scratch, first []int, holes bool) {
	m := len(s.act)
	s.order = slices.Grow(s.order[:0], m)[:m]
	s.pos = slices.Grow(s.pos[:0], m)[:m]
	for i := range m {
		s.order[i], s.pos[i] = int32(i), int32(i)
	}
	if m <= 64 || len(first) == 0 && !holes {
		return // one batch (the order changes nothing), or the list's order
	}
	s.order = s.order[:0]
	for i := range s.pos {
		s.pos[i] = -1
	}
	add := func(v int) {
		if i := s.actIdx[v]; s.pos[i] < 0 {
			s.pos[i] = int32(len(s.order))
			s.order = append(s.order, i)
		}
	}
	for _, v := range first {
		if len(s.order) == maxFirst || !r.isActive(s, v) {
			continue
		}
		add(v)
	}
	if holes {
		r.holesFirst(s, add)
	}
	for i := range int32(m) {
		if s.pos[i] < 0 {
			s.pos[i] = int32(len(s.order))
			s.order = append(s.order, i)
		}
	}
}

// holeSources bounds the sources holesFirst puts first (four batches).
const holeSources = 256

// holesFirst adds to the first batches of sources (up to holeSources in
// all) the
// active nodes that lie in the most partial layers of the set: a layer is
// the set's bounding box (cyclic intervals on rings) cut at one position
// of one dimension, partial when the set does not fill it. A box has no
// partial layer. In a box with a part cut away, the routes that must
// detour around the hole start in the layers through it, the more of
// them the likelier, so a set that is not reachable is usually found so
// in the first batches rather than after most of them. The order changes
// only how soon a failing source is met, never the answer.
func (r *Router) holesFirst(s *scratch, add func(v int)) {
	room := holeSources - len(s.order)
	t := r.t
	if room <= 0 {
		return
	}
	// count[off[i]+c]: the set's nodes at position c of dimension i.
	off := s.layerOff[:0]
	total := 0
	for _, d := range t.dims {
		off = append(off, total)
		total += d
	}
	s.layerOff = off
	count := slices.Grow(s.layerCount[:0], total)[:total]
	clear(count)
	s.layerCount = count
	coordOf := func(v int32, i int) int { return int(v) / t.stride[i] % t.dims[i] }
	for _, list := range [2][]int32{s.act, s.trans} {
		for _, v := range list {
			for i := range t.dims {
				count[off[i]+coordOf(v, i)]++
			}
		}
	}
	// The bounding box's extent along each dimension, and the size of a
	// layer across it.
	span := make([]int, len(t.dims))
	vol := 1
	for i, d := range t.dims {
		span[i] = boxExtent(count[off[i]:off[i]+d], t.wrap[i])
		vol *= span[i]
	}
	score := func(v int32) int {
		k := 0
		for i := range t.dims {
			if c := count[off[i]+coordOf(v, i)]; int(c)*span[i] < vol {
				k++
			}
		}
		return k
	}
	// The best-scored unpicked nodes, evenly spread along the active
	// list within the last score taken.
	var byScore [MaxDims + 1]int
	for _, v := range s.act {
		if s.pos[s.actIdx[v]] < 0 {
			byScore[score(v)]++
		}
	}
	least := len(t.dims) + 1
	for k, left := len(t.dims), room; k > 0 && left > 0; k-- {
		least, left = k, left-byScore[k]
	}
	if least > len(t.dims) {
		return
	}
	s.cands = s.cands[:0]
	for _, v := range s.act {
		if s.pos[s.actIdx[v]] < 0 && score(v) > least {
			s.cands = append(s.cands, v)
		}
	}
	slices.SortStableFunc(s.cands, func(a, b int32) int { return score(b) - score(a) })
	for _, v := range s.cands {
		add(int(v))
	}
	room -= len(s.cands)
	s.cands = s.cands[:0]
	for _, v := range s.act {
		if s.pos[s.actIdx[v]] < 0 && score(v) == least {
			s.cands = append(s.cands, v)
		}
	}
	n := len(s.cands)
	for k := range min(room, n) {
		add(int(s.cands[k*n/min(room, n)]))
	}
}

// boxExtent is the length of the shortest interval (cyclic when ring)
// holding every position whose count is not zero.
func boxExtent(count []int32, ring bool) int {
	d := len(count)
	lo, hi := -1, -1
	for c, k := range count {
		if k > 0 {
			if lo < 0 {
				lo = c
			}
			hi = c
		}
	}
	if lo < 0 {
		return 0
	}
	if !ring {
		return hi - lo + 1
	}
	// The longest run of empty positions, around the ring, is outside.
	gap, run := 0, 0
	for k := 0; k < 2*d; k++ {
		if count[k%d] == 0 {
			run++
			gap = max(gap, min(run, d))
		} else {
			run = 0
		}
	}
	return d - gap
}

// orMask adds bits m to the mask of vertex (v, q) (v an index of the
// arrays, at), listing v in s.live[q] when the mask was empty.
func (r *Router) orMask(s *scratch, v, q int32, m uint64) {
	y := int(q)*s.width + int(v)
	if s.mask[y] == 0 {
		s.live[q] = append(s.live[q], v)
	}
	s.mask[y] |= m
}

// closeSelfLoop closes the masks of state q along its self-loop direction
// sd: each source set walks on along the ring while the channels are open
// and it adds new sources. Nodes a walk reaches first are appended to the
// list being walked and need no walk of their own.
func (r *Router) closeSelfLoop(s *scratch, q int32, sd int8) {
	nd := r.t.nd
	nb, open := r.graph(s)
	bit := uint16(1) << sd
	N := s.width
	masks := s.mask[int(q)*N : (int(q)+1)*N]
	starts := len(s.live[q])
	for k := 0; k < starts; k++ {
		v := s.live[q][k]
		carry := masks[v]
		for u := v; open[u]&bit != 0; {
			u = nb[int(u)*nd+int(sd)]
			old := masks[u]
			nm := old | carry
			if nm == old {
				break
			}
			if old == 0 {
				s.live[q] = append(s.live[q], u)
			}
			masks[u], carry = nm, nm
		}
	}
}

// pushTransitions pushes the masks of state q over its other transitions
// to the neighbours' successor states.
func (r *Router) pushTransitions(s *scratch, q int32) {
	moves := r.ra.moves[r.ra.moveStart[q]:r.ra.moveStart[q+1]]
	if len(moves) == 0 {
		return
	}
	nd := r.t.nd
	nb, opens := r.graph(s)
	N := s.width
	masks := s.mask[int(q)*N : (int(q)+1)*N]
	from := s.live[q]
	// Move by move: the target state's masks and list stay in hand.
	for _, mv := range moves {
		to := s.mask[int(mv.to)*N : (int(mv.to)+1)*N]
		list := s.live[mv.to]
		bit := uint16(1) << mv.dir
		for _, v := range from {
			if opens[v]&bit == 0 || mv.cond && !r.moveOK(int(s.node(v)), int(q), mv.dir) {
				continue
			}
			u := nb[int(v)*nd+int(mv.dir)]
			if to[u] == 0 {
				list = append(list, u)
			}
			to[u] |= masks[v]
		}
		s.live[mv.to] = list
	}
}

// batchMisses checks every destination against the batch of sources at
// positions b0..b1-1 of s.order. It returns the sources that miss some
// destination (bit p-b0 for position p), and the indices (into act) of
// the missing pair whose source comes first in the batch, then the
// smallest destination, or -1, -1 when every pair is joined. The sources
// that reached each node in a state where a route may end are gathered
// state by state from the nodes the pass listed (s.live), so the masks
// are read in the order they lie in memory.
func (r *Router) batchMisses(s *scratch, b0, b1 int) (union uint64, src, dst int) {
	a := &r.ra
	N := s.width
	if len(s.got) < N {
		s.got = make([]uint64, N)
	}
	for _, v := range s.act {
		s.got[s.at(v)] = 0
	}
	for q, end := range a.canEnd {
		if !end {
			continue
		}
		m := s.mask[q*N : (q+1)*N]
		for _, v := range s.live[q] {
			s.got[v] |= m[v]
		}
	}
	full := uint64(1)<<uint(b1-b0) - 1
	if b1-b0 == 64 {
		full = ^uint64(0)
	}
	missBit, missDst := 64, -1
	for j, dst := range s.act {
		want := full
		if p := int(s.pos[j]); p >= b0 && p < b1 {
			want &^= 1 << uint(p-b0)
		}
		if miss := want &^ s.got[s.at(dst)]; miss != 0 {
			union |= miss
			if bit := bitsTrailing(miss); bit < missBit {
				missBit, missDst = bit, j
			}
		}
	}
	if missDst < 0 {
		return 0, -1, -1
	}
	return union, int(s.order[b0+missBit]), missDst
}

// ---- single pairs ----

// ReachableWithHints is ReachableFirst that first tries the given ordered pairs of active
// nodes (node ids) on their own, each with a search from its source that
// stops at its destination. When one of them has no route inside the set,
// the set is not reachable: that pair is returned at once, without the
// full check (so bad may differ from ReachableFirst's). Pairs not both active are
// ignored. Callers pass the pairs that failed on similar sets: most sets
// that are not reachable are rejected at a fraction of the full check's
// cost. When every pair has a route, the full check takes the pairs' nodes
// as the first of its sources (see reachSet): in a set of more than 64
// active nodes that is not reachable, nodes that lacked a route in similar
// sets usually lack one here too, with another destination, and the check
// then stops after its first batch of sources.
func (r *Router) ReachableWithHints(active, transit []int, pairs [][2]int) (ok bool, bad [2]int, err error) {
	return r.ReachableWithHintsUntil(active, transit, pairs, nil)
}

// Above sweepAbove active nodes the hinted pairs are not searched one by
// one: each distinct source among them (up to maxSweeps) is searched
// once, to every vertex it reaches, and every active node is checked
// against what it reached (sweepHinted). In large sets a source that
// lacked a route in a similar set usually lacks one here too, but to
// another destination, and a search that finds its route costs nearly as
// much as one that does not.
const (
	sweepAbove = 64
	maxSweeps  = 4
)

// ErrStopped is returned by ReachableWithHintsUntil when its stop function
// ended the check before an answer.
var ErrStopped = errors.New("reachability check stopped")

// ReachableWithHintsUntil is ReachableWithHints that asks stop (when not
// nil) between batches of 64 sources and gives up with ErrStopped when it
// reports true, so that a caller with a deadline is not held by a check
// of a large set.
func (r *Router) ReachableWithHintsUntil(active, transit []int, pairs [][2]int, stop func() bool) (ok bool, bad [2]int, err error) {
	s := r.getScratch()
	s.stop, s.stopped = stop, false
	defer func() {
		// The scratch goes back to the pool as other checks expect it:
		// reachSet answers false after a stop.
		s.stop, s.stopped = nil, false
		r.putScratch(s)
	}()
	if err := r.markSet(s, active, transit); err != nil {
		return false, [2]int{-1, -1}, err
	}
	if len(active) <= sweepAbove {
		for _, p := range pairs {
			if p[0] == p[1] || !r.isActive(s, p[0]) || !r.isActive(s, p[1]) {
				continue
			}
			if !r.straightRoute(s, p[0], p[1]) && !r.pairReach(s, int32(p[0]), int32(p[1])) {
				return false, p, nil
			}
		}
	} else if bad, ok := r.sweepHinted(s, pairs); !ok {
		return false, bad, nil
	}
	r.indexSet(s)
	s.hint = s.hint[:0]
	for _, p := range pairs {
		s.hint = append(s.hint, p[0], p[1])
	}
	ok, bad = r.reachSet(s, s.hint, true)
	if s.stopped {
		return false, [2]int{-1, -1}, ErrStopped
	}
	return ok, bad, nil
}

// isActive reports whether node v is an active node of the set prepared
// in s.
func (r *Router) isActive(s *scratch, v int) bool {
	return v >= 0 && v < r.t.nodes && s.setStamp[v] == s.setEpoch && s.isAct[v] == s.setEpoch
}

// pairReach reports whether the set marked in s has a legal route from
// src to dst: a depth-first search over the vertices (node, automaton
// state) of the set's routing graph, with the transitions reachSet takes.
func (r *Router) pairReach(s *scratch, src, dst int32) bool {
	a, t := &r.ra, r.t
	S := int32(a.nstates)
	if n := s.width * int(S); len(s.seen) < n {
		s.seen = make([]uint32, max(n, 2*len(s.seen)))
		s.seenEpoch = 0
	}
	ep := newEpoch(&s.seenEpoch, s.seen)
	start := s.at(src)*S + int32(a.begin)
	s.seen[start] = ep
	s.stack = append(s.stack[:0], start)
	for len(s.stack) > 0 {
		x := s.stack[len(s.stack)-1]
		s.stack = s.stack[:len(s.stack)-1]
		v, q := x/S, x%S
		if !s.dense {
			v = s.mnode[v]
		}
		base := int(v) * t.nd
		open := r.openOf(s, v)
		if sd := a.self[q]; sd >= 0 && open&(1<<sd) != 0 && r.pairStep(s, t.nb[base+int(sd)], q, dst, ep) {
			return true
		}
		for _, mv := range r.ra.moves[r.ra.moveStart[q]:r.ra.moveStart[q+1]] {
			if open&(1<<mv.dir) == 0 || mv.cond && !r.moveOK(int(v), int(q), mv.dir) {
				continue
			}
			if r.pairStep(s, t.nb[base+int(mv.dir)], mv.to, dst, ep) {
				return true
			}
		}
	}
	return false
}

// sweepHinted searches, from each distinct active source of pairs (the
// first maxSweeps), every vertex of the set's routing graph it reaches,
// and reports a pair without a route (the hinted destination first, else
// the first active node not reached where a route may end), or ok.
func (r *Router) sweepHinted(s *scratch, pairs [][2]int) (bad [2]int, ok bool) {
	done := 0
	for k, p := range pairs {
		if done == maxSweeps {
			break
		}
		src := p[0]
		if !r.isActive(s, src) || slices.ContainsFunc(pairs[:k], func(q [2]int) bool { return q[0] == src }) {
			continue
		}
		done++
		ep := r.sweep(s, int32(src))
		missing := func(v int) bool { return v != src && r.isActive(s, v) && s.ended[s.at(int32(v))] != ep }
		for _, q := range pairs[k:] {
			if q[0] == src && missing(q[1]) {
				return q, false
			}
		}
		for _, v := range s.act {
			if missing(int(v)) {
				return [2]int{src, int(v)}, false
			}
		}
	}
	return [2]int{-1, -1}, true
}

// sweep is pairReach without a destination: it visits every vertex the
// set's routing graph reaches from src and stamps, in s.ended, the nodes
// reached in a state where a route may end; it returns the stamp.
func (r *Router) sweep(s *scratch, src int32) uint32 {
	a, t := &r.ra, r.t
	// A vertex is its node's index shifted by sh, or its state: a shift
	// and a mask decode it where a division by the state count would.
	sh := uint(bits.Len(uint(a.nstates - 1)))
	qmask := int32(1)<<sh - 1
	// The vertices seen, one bit each: a few MB where stamps would take
	// tens, so the search stays in cache.
	n := (s.width<<sh + 63) / 64
	if cap(s.seenBits) < n {
		s.seenBits = make([]uint64, n)
	}
	seen := s.seenBits[:n]
	clear(seen)
	if len(s.ended) < s.width {
		s.ended = make([]uint32, max(s.width, 2*len(s.ended)))
		s.endedEpoch = 0
	}
	end := newEpoch(&s.endedEpoch, s.ended)
	// A vertex (u, q) is skipped when u was reached in a state that
	// simulates q: that vertex has every walk (u, q) has
	// (reachAuto.simulate).
	sim := a.hasSim
	if r.tune.noSimulation {
		sim = nil
	}
	visit := func(u, q int32) {
		i := s.at(u)
		if y := i<<sh | q; seen[y>>6]&(1<<(y&63)) == 0 && !(sim != nil && sim[q] && r.simulated(seen, i, q, sh)) {
			seen[y>>6] |= 1 << (y & 63)
			s.stack = append(s.stack, y)
			if a.canEnd[q] {
				s.ended[i] = end
			}
		}
	}
	s.stack = s.stack[:0]
	visit(src, int32(a.begin))
	s.ended[s.at(src)] = 0 // reached only by a route that left it
	for len(s.stack) > 0 {
		x := s.stack[len(s.stack)-1]
		s.stack = s.stack[:len(s.stack)-1]
		v, q := x>>sh, x&qmask
		if !s.dense {
			v = s.mnode[v]
		}
		// The channels are checked as the moves need them: a node is
		// seldom reached in more than one state, and its state allows a
		// few of its directions.
		base := int(v) * t.nd
		up := r.upOut[v]
		if sd := a.self[q]; sd >= 0 && up&(1<<sd) != 0 {
			if u := t.nb[base+int(sd)]; s.setStamp[u] == s.setEpoch {
				visit(u, q)
			}
		}
		for _, mv := range r.ra.moves[r.ra.moveStart[q]:r.ra.moveStart[q+1]] {
			if up&(1<<mv.dir) == 0 || mv.cond && !r.moveOK(int(v), int(q), mv.dir) {
				continue
			}
			if u := t.nb[base+int(mv.dir)]; s.setStamp[u] == s.setEpoch {
				visit(u, mv.to)
			}
		}
	}
	return end
}

// simulated reports whether a state that simulates q (reachAuto.sim)
// is seen at the node of index i in a sweep's bits (sh bits per node).
func (r *Router) simulated(seen []uint64, i, q int32, sh uint) bool {
	a := &r.ra
	m := a.sim[int(q)*a.simW : int(q+1)*a.simW]
	if sh < 6 {
		y := i << sh
		return (seen[y>>6]>>(y&63))&m[0] != 0
	}
	w := seen[int(i)<<(sh-6):]
	for k, x := range m {
		if w[k]&x != 0 {
			return true
		}
	}
	return false
}

// pairStep visits vertex (u, q) of pairReach's search: it reports
// whether u is the destination in a state where a route may end, and
// otherwise stacks the vertex if it is new.
func (r *Router) pairStep(s *scratch, u, q, dst int32, ep uint32) bool {
	if u == dst && r.ra.canEnd[q] {
		return true
	}
	if y := s.at(u)*int32(r.ra.nstates) + q; s.seen[y] != ep {
		s.seen[y] = ep
		s.stack = append(s.stack, y)
	}
	return false
}

// straightRoute reports whether the set marked in s holds one of the
// direction-ordered routes from src to dst that move in each dimension
// one way only, straight to the destination's coordinate (in the order of
// the rule's direction ranks; along a mesh dimension the one way there
// is). Every rule allows these routes, so true proves the pair reachable;
// false proves nothing.
func (r *Router) straightRoute(s *scratch, src, dst int) bool {
	t := r.t
	n := t.n
	if n > 8 {
		return false
	}
	var dirs [8]Dir
	var steps [8]int
	var diff [8]int // per dimension: + distance (0 when equal)
	var way [8]int  // per mesh dimension: 1 when the destination lies on the − side
	a, b := src, dst
	for i, d := range t.dims {
		diff[i] = ((b%d - a%d) + d) % d
		if !t.wrap[i] && b%d < a%d {
			way[i] = 1
		}
		a, b = a/d, b/d
	}
	for signs := 0; signs < 1<<n; signs++ {
		k := 0
		for i := 0; i < n; i++ {
			neg := signs>>i&1 == 1
			if diff[i] == 0 || !t.wrap[i] && signs>>i&1 != way[i] {
				if neg || diff[i] != 0 {
					k = -1 // each sign pattern once; mesh dimensions one way
					break
				}
				continue
			}
			dirs[k], steps[k] = Plus(i), diff[i]
			if neg {
				dirs[k], steps[k] = Minus(i), t.dims[i]-diff[i]
			}
			k++
		}
		if k < 0 {
			continue
		}
		r.sortByRank(dirs[:k], steps[:k])
		if r.walk(s, int32(src), dirs[:k], steps[:k]) {
			return true
		}
	}
	return false
}

// sortByRank orders the directions (and their step counts) by the rule's
// direction ranks (insertion sort: at most a few entries).
func (r *Router) sortByRank(dirs []Dir, steps []int) {
	for i := 1; i < len(dirs); i++ {
		for j := i; j > 0 && r.a.rank[dirs[j]] < r.a.rank[dirs[j-1]]; j-- {
			dirs[j], dirs[j-1] = dirs[j-1], dirs[j]
			steps[j], steps[j-1] = steps[j-1], steps[j]
		}
	}
}

// walk reports whether the route from v taking steps[i] moves in
// direction dirs[i], in turn, stays on open channels of the marked set.
func (r *Router) walk(s *scratch, v int32, dirs []Dir, steps []int) bool {
	t := r.t
	for i, d := range dirs {
		for k := 0; k < steps[i]; k++ {
			if r.openOf(s, v)&(1<<d) == 0 {
				return false
			}
			v = t.nb[int(v)*t.nd+int(d)]
		}
	}
	return true
}

// LegalPath returns the nodes of a legal route from src to dst (src
// first, dst last) through the nodes of set and extra, or nil when there
// is none: of all such routes, one with the fewest nodes of extra, and of
// those, the fewest hops. It searches (node, rule state) pairs with the
// transitions Reachable follows. The fabric manager uses it to find the
// free nodes (extra) a job (set) needs as transit nodes when a failure
// leaves a pair of its nodes without a legal route.
func (r *Router) LegalPath(src, dst int, set, extra []int) ([]int, error) {
	s := r.getScratch()
	defer r.putScratch(s)
	var transit []int
	for _, list := range [][]int{set, extra} {
		for _, v := range list {
			if v != src && v != dst {
				transit = append(transit, v)
			}
		}
	}
	// The search asks for the open channels of the nodes it reaches
	// only (openOf), so the set is marked, not indexed.
	if err := r.markSet(s, []int{src, dst}, transit); err != nil {
		return nil, err
	}
	if src == dst {
		return []int{src}, nil
	}
	t := r.t
	if len(s.costly) < t.nodes {
		s.costly = make([]uint32, t.nodes)
	}
	for _, v := range extra {
		s.costly[v] = s.setEpoch
	}
	// Labels per vertex (node, state) of the set's routing graph, at
	// index at(v)·S + q; a vertex has one when seen[x] == ep.
	S := int32(r.ra.nstates)
	if n := s.width * int(S); len(s.seen) < n {
		s.seen = make([]uint32, max(n, 2*len(s.seen)))
		s.seenEpoch = 0
	}
	if len(s.label) < len(s.seen) {
		s.label = make([]pathLabel, len(s.seen))
	}
	ep := newEpoch(&s.seenEpoch, s.seen)
	start := s.at(int32(src))*S + r.ra.begin
	s.seen[start], s.label[start] = ep, pathLabel{prev: start}
	q := pathQueue{{at: start}}
	for len(q) > 0 {
		it := q.pop()
		cur := it.at
		if l := s.label[cur]; l.added != it.added || l.hops != it.hops {
			continue // a better label came first
		}
		v, cq := s.node(cur/S), cur%S
		if v == int32(dst) && r.ra.canEnd[cq] {
			var path []int
			for x := cur; ; x = s.label[x].prev {
				path = append(path, int(s.node(x/S)))
				if x == start {
					break
				}
			}
			slices.Reverse(path)
			return path, nil
		}
		open := r.openOf(s, v)
		base := int(v) * t.nd
		step := func(d Dir, to int32) {
			w := t.nb[base+int(d)]
			n := pathItem{at: s.at(w)*S + to, added: it.added, hops: it.hops + 1}
			if s.costly[w] == s.setEpoch {
				n.added++
			}
			if l := s.label[n.at]; s.seen[n.at] == ep && (l.added < n.added || l.added == n.added && l.hops <= n.hops) {
				return
			}
			s.seen[n.at], s.label[n.at] = ep, pathLabel{n.added, n.hops, cur}
			q.push(n)
		}
		if sd := r.ra.self[cq]; sd >= 0 && open&(1<<sd) != 0 {
			step(Dir(sd), cq)
		}
		for _, mv := range r.ra.moves[r.ra.moveStart[cq]:r.ra.moveStart[cq+1]] {
			if open&(1<<mv.dir) == 0 || mv.cond && !r.moveOK(int(v), int(cq), mv.dir) {
				continue
			}
			step(mv.dir, mv.to)
		}
	}
	return nil, nil
}

// pathLabel is LegalPath's best label of a vertex: the free nodes and
// hops of the route found to it, and the vertex before it.
type pathLabel struct{ added, hops, prev int32 }

// pathItem is a vertex of LegalPath's search (at(v)·S + q) with the
// label it was queued with.
type pathItem struct{ at, added, hops int32 }

// pathQueue is LegalPath's binary heap, ordered by added nodes, then
// hops.
type pathQueue []pathItem

func (p pathQueue) less(i, j int) bool {
	return p[i].added < p[j].added || p[i].added == p[j].added && p[i].hops < p[j].hops
}

func (p *pathQueue) push(x pathItem) {
	*p = append(*p, x)
	h := *p
	for j := len(h) - 1; j > 0; {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (p *pathQueue) pop() pathItem {
	h := *p
	n := len(h) - 1
	h[0], h[n] = h[n], h[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && h.less(j2, j) {
			j = j2
		}
		if !h.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
	x := h[n]
	*p = h[:n]
	return x
}
