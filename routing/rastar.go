package routing

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// R_A* construction (seed 001 §2.3).
//
// The channel dependency graph (CDG) of R_DOR on the live channels has an
// edge (u,Di) → (u+Di,Dj) for every Dj not below Di in the direction
// order. Turns go strictly up the order, so the only cycles are the rings
// themselves, which bubble flow control makes harmless. R_A* then offers
// every order-violating dependency a = (ui,Di) → b = (uj,Dj), uj = ui+Di,
// rank(Dj) < rank(Di), that an FS step (Di positive) or an LS step (Dj
// negative) could use, one by one in a fixed order, and accepts it when it
// closes no cycle, i.e. when a is not reachable from b in the CDG built so
// far. (The seed's sufficient test Di ∉ B(uj,Dj) accepts a subset of
// these: a path b ⇝ a would put Di into B(uj,Dj).)
//
// Reachability is answered on the condensation of the CDG in which every
// intact ring (all of its channels in one direction alive) is one vertex;
// the condensation is a DAG and stays one. With few enough condensed
// vertices its transitive closure is kept as bit sets (O(1) per test,
// O(V²/64) per accepted edge); otherwise a topological order of the
// condensation is kept up to date as edges are accepted (Pearce and
// Kelly's dynamic topological sort): a dependency a → b with a before b
// closes no cycle, and otherwise only the vertices between b and a in the
// order are searched (forward from b for a, then backward from a), and
// reordered when it is accepted. On a torus with mesh dimensions, whose
// lines close no ring, many candidates are accepted: a plain search from
// b for each of them visits most of the graph.

// starResult is the outcome of the R_A* construction: extra[c] has bit d
// set when the dependency from channel c to the channel leaving its
// destination in direction d was accepted.
type starResult struct {
	extra      []uint16
	candidates int
	accepted   int
	// ringInvariant: extra is the same at every translate along the ring
	// dimensions (see extrasRingInvariant).
	ringInvariant bool
}

// starBuilder holds scratch space reused across constructions on tori of
// one size (the fault experiment rebuilds R_A* after every failure).
type starBuilder struct {
	comp   []int32
	start  []int32
	adj    []int32
	indeg  []int32
	topo   []int32
	reach  []uint64
	words  int
	stamp  []uint32
	epoch  uint32
	stack  []int32
	extraA [][]int32 // search mode: accepted edges per condensed vertex
	// Search mode keeps a topological order of the condensed graph with
	// its accepted edges (Pearce–Kelly): ord[v] is v's position; radj
	// (CSR radjStart) and extraR are the edges backwards; fwd and bwd
	// collect a search's vertices.
	ord       []int32
	radjStart []int32
	radj      []int32
	extraR    [][]int32
	fwd, bwd  []int32
	keys      []uint64 // (position, vertex) of a reordered region
	pos       []int32  // its positions, sorted
	dirOf     []Dir    // direction of every condensed vertex
	layer     []int32  // mesh layer of every condensed vertex (meshLayer)
	// layered: the torus has mesh dimensions, the topological order goes
	// by mesh layer
	layered bool
	// useClosure: the closure rows answer reachability (else searches)
	useClosure bool
	variant    starVariant
	// closureLimit bounds the condensed vertex count for the closure rows
	closureLimit int
	// pre, when set, lists dependencies (as in starResult.extra) offered
	// before all others (incremental variant).
	pre []uint16
}

func (sb *starBuilder) build(t *torus, up []bool, rank []int8) (starResult, error) {
	res := starResult{extra: make([]uint16, len(up))}
	nv := sb.condense(t, up)
	sb.condensedEdges(t, up, rank, nv)
	if !sb.topoOrder(nv) {
		return res, fmt.Errorf("internal error: the direction-order dependency graph has a cycle with a turn")
	}
	sb.useClosure = int(nv) <= sb.closureLimit || sb.variant.bTest != "" // the B test reads the closure rows
	if sb.useClosure {
		sb.closure(nv)
	} else {
		if cap(sb.stamp) < int(nv) {
			sb.stamp = make([]uint32, nv)
			sb.epoch = 0
		}
		sb.extraA = make([][]int32, nv)
		sb.dynamicOrder(nv)
	}
	sb.offerCandidates(t, up, rank, nv, &res)
	res.ringInvariant = extrasRingInvariant(t, res.extra)
	return res, nil
}

// extrasRingInvariant reports whether the accepted dependencies are the
// same at every translate along the ring dimensions: the channel leaving
// a node in a direction and the one leaving its neighbour one step along
// a ring, in the same direction, accept the same continuations. The steps
// of +1 along each ring generate every ring translation, so checking them
// is enough. On a fault-free torus with mesh dimensions the construction's
// fixed order of candidates was found to accept such a pattern (every
// mixed torus of the tests and Tofu-D), but nothing in the construction
// promises it, so it is checked, in one pass over the channels.
func extrasRingInvariant(t *torus, extra []uint16) bool {
	for v := 0; v < t.nodes; v++ {
		for i, ring := range t.wrap {
			if !ring {
				continue
			}
			w := int(t.nb[v*t.nd+int(Plus(i))])
			if w < 0 {
				return false
			}
			for d := Dir(0); int(d) < t.nd; d++ {
				c, c2 := t.ch[v*t.nd+int(d)], t.ch[w*t.nd+int(d)]
				if (c < 0) != (c2 < 0) {
					return false
				}
				if c >= 0 && extra[c] != extra[c2] {
					return false
				}
			}
		}
	}
	return true
}

// condense numbers the condensed vertices: one per intact ring direction
// (all its channels alive), one per other live channel; it returns their
// count and leaves the vertex of every channel in sb.comp (−1 if dead).
func (sb *starBuilder) condense(t *torus, up []bool) int32 {
	nc := len(up)
	if cap(sb.comp) < nc {
		sb.comp = make([]int32, nc)
	}
	comp := sb.comp[:nc]
	for i := range comp {
		comp[i] = -1
	}
	nv := int32(0)
	sb.dirOf = sb.dirOf[:0]
	sb.layer = sb.layer[:0]
	sb.layered = !t.rings
	for v := 0; v < t.nodes; v++ {
		for d := Dir(0); int(d) < t.nd; d++ {
			c := t.chAt(v, d)
			if !live(up, c) || comp[c] >= 0 {
				continue
			}
			sb.dirOf = append(sb.dirOf, d)
			sb.layer = append(sb.layer, meshLayer(t, v, d))
			if ringIntact(t, up, v, d) && (!sb.variant.minimalCDG || t.dims[d.Dim()] >= 4) {
				for w, k := v, 0; k < t.dims[d.Dim()]; k++ {
					comp[t.chAt(w, d)] = nv
					w = int(t.nbAt(w, d))
				}
			} else {
				comp[c] = nv
			}
			nv++
		}
	}
	sb.comp = comp
	return nv
}

// meshLayer is the key by which the topological order of the
// condensation on a torus with mesh dimensions places channel (v, d)
// among those ready at the same time: positive channels first, each by
// the sum of v's coordinates along the mesh dimensions, then negative
// ones by the sum counted from the far ends. The dependencies that R_A*
// accepts there lead from a channel to one a layer further (an FS step
// +W followed by +X at W = 1, an LS step −W followed by −X at W = 0), and
// under an order that ranks every positive direction below every negative
// one (the default) so do the direction-order ones, or they stay in the
// layer: the order is then by layer, and accepting a dependency seldom
// moves anything. The key only speeds the search mode; the accepted set
// does not depend on it.
func meshLayer(t *torus, v int, d Dir) int32 {
	key := int32(0)
	far := int32(1) // the first negative layer
	for i, w := range t.wrap {
		if w {
			continue
		}
		x := t.g.CoordAt(v, i)
		if d.Neg() {
			x = t.dims[i] - 1 - x
		}
		key += int32(x)
		far += int32(t.dims[i] - 1)
	}
	if d.Neg() {
		key += far
	}
	return key
}

// ringIntact reports whether every channel of the ring through v in
// direction d is alive (a mesh dimension has no ring).
func ringIntact(t *torus, up []bool, v int, d Dir) bool {
	if !t.wrap[d.Dim()] {
		return false
	}
	for w, k := v, 0; k < t.dims[d.Dim()]; k++ {
		if !up[t.chAt(w, d)] {
			return false
		}
		w = int(t.nbAt(w, d))
	}
	return true
}

// condensedEdges builds the condensed edges of the R_DOR CDG (CSR in
// sb.start/sb.adj): (u,Di) → (u+Di,Dj) for every Dj not below Di.
func (sb *starBuilder) condensedEdges(t *torus, up []bool, rank []int8, nv int32) {
	comp := sb.comp
	if cap(sb.start) < int(nv)+1 {
		sb.start = make([]int32, nv+1)
	}
	start := sb.start[:nv+1]
	clear(start)
	forEachDep := func(f func(a, b int32)) {
		for c := range up {
			if !up[c] {
				continue
			}
			di := t.chDir[c]
			w := int(t.nbAt(int(t.chSrc[c]), di))
			for dj := Dir(0); int(dj) < t.nd; dj++ {
				if rank[dj] < rank[di] {
					continue
				}
				if (sb.variant.noReversal || sb.variant.minimalCDG) && dj == di.Opp() {
					continue
				}
				if sb.variant.minimalCDG && dj == di && t.dims[di.Dim()] < 4 {
					continue
				}
				b := t.chAt(w, dj)
				if live(up, b) && comp[b] != comp[c] {
					f(comp[c], comp[b])
				}
			}
		}
	}
	forEachDep(func(a, b int32) { start[a+1]++ })
	for i := int32(0); i < nv; i++ {
		start[i+1] += start[i]
	}
	adj := sb.adj[:0]
	if cap(adj) < int(start[nv]) {
		adj = make([]int32, start[nv])
	}
	adj = adj[:start[nv]]
	fill := append([]int32(nil), start[:nv]...)
	forEachDep(func(a, b int32) { adj[fill[a]] = b; fill[a]++ })
	sb.start, sb.adj = start, adj
}

// topoOrder puts the condensed vertices in topological order (Kahn) in
// sb.topo; it reports false if the graph has a cycle.
func (sb *starBuilder) topoOrder(nv int32) bool {
	start, adj := sb.start, sb.adj
	if cap(sb.indeg) < int(nv) {
		sb.indeg = make([]int32, nv)
		sb.topo = make([]int32, 0, nv)
	}
	indeg := sb.indeg[:nv]
	clear(indeg)
	for _, b := range adj {
		indeg[b]++
	}
	topo := sb.topo[:0]
	if sb.layered {
		topo = sb.layeredOrder(nv, indeg, topo)
		sb.topo = topo
		return len(topo) == int(nv)
	}
	for v := int32(0); v < nv; v++ {
		if indeg[v] == 0 {
			topo = append(topo, v)
		}
	}
	for i := 0; i < len(topo); i++ {
		v := topo[i]
		for _, b := range adj[start[v]:start[v+1]] {
			if indeg[b]--; indeg[b] == 0 {
				topo = append(topo, b)
			}
		}
	}
	sb.topo = topo
	return len(topo) == int(nv)
}

// layeredOrder is Kahn's algorithm taking, among the vertices ready, one
// of the lowest mesh layer first (see meshLayer), in the order they
// became ready.
func (sb *starBuilder) layeredOrder(nv int32, indeg, topo []int32) []int32 {
	var buckets [][]int32
	push := func(v int32) {
		k := int(sb.layer[v])
		for len(buckets) <= k {
			buckets = append(buckets, nil)
		}
		buckets[k] = append(buckets[k], v)
	}
	for v := int32(0); v < nv; v++ {
		if indeg[v] == 0 {
			push(v)
		}
	}
	heads := make([]int, 0, 8)
	for {
		k := 0
		for len(heads) < len(buckets) {
			heads = append(heads, 0)
		}
		for k < len(buckets) && heads[k] == len(buckets[k]) {
			k++
		}
		if k == len(buckets) {
			return topo
		}
		v := buckets[k][heads[k]]
		heads[k]++
		topo = append(topo, v)
		for _, b := range sb.adj[sb.start[v]:sb.start[v+1]] {
			if indeg[b]--; indeg[b] == 0 {
				push(b)
			}
		}
	}
}

// closure computes the transitive closure as bit rows, in reverse
// topological order.
func (sb *starBuilder) closure(nv int32) {
	sb.words = (int(nv) + 63) / 64
	need := int(nv) * sb.words
	if cap(sb.reach) < need {
		sb.reach = make([]uint64, need)
	}
	sb.reach = sb.reach[:need]
	clear(sb.reach)
	for i := len(sb.topo) - 1; i >= 0; i-- {
		v := sb.topo[i]
		rv := sb.row(v)
		for _, b := range sb.adj[sb.start[v]:sb.start[v+1]] {
			rb := sb.row(b)
			for k := range rv {
				rv[k] |= rb[k]
			}
			rv[b>>6] |= 1 << (uint(b) & 63)
		}
	}
}

// offerCandidates offers the order-violating FS/LS dependencies one by
// one (by node uj, then Di, then Dj in the direction order) and accepts
// those that close no cycle.
func (sb *starBuilder) offerCandidates(t *torus, up []bool, rank []int8, nv int32, res *starResult) {
	ord := orderOf(rank)
	prePass := sb.pre != nil
	offer := func(uj int, di, dj Dir) {
		if rank[dj] >= rank[di] || (di.Neg() && !dj.Neg() && !sb.variant.allCandidates) {
			return // not order-violating, or neither an FS (positive first) nor an LS (negative last) transition
		}
		a, b := t.inCh(uj, di), t.chAt(uj, dj)
		if !live(up, a) || !live(up, b) || res.extra[a]&(1<<dj) != 0 {
			return
		}
		if prePass && sb.pre[a]&(1<<dj) == 0 {
			return
		}
		res.candidates++
		if sb.tryAccept(sb.comp[a], sb.comp[b], nv) {
			res.extra[a] |= 1 << dj
			res.accepted++
		}
	}
	if prePass { // incremental variant: the previous failure set's first
		forEachByNode(t.nodes, ord, offer)
		prePass = false
	}
	switch {
	case sb.variant.byDirection:
		for _, di := range ord {
			for _, dj := range ord {
				for uj := 0; uj < t.nodes; uj++ {
					offer(uj, di, dj)
				}
			}
		}
	case sb.variant.shuffle != 0:
		type cand struct {
			uj     int
			di, dj Dir
		}
		var cs []cand
		forEachByNode(t.nodes, ord, func(uj int, di, dj Dir) { cs = append(cs, cand{uj, di, dj}) })
		rng := rand.New(rand.NewPCG(sb.variant.shuffle, uint64(len(up))))
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		for _, c := range cs {
			offer(c.uj, c.di, c.dj)
		}
	default:
		forEachByNode(t.nodes, ord, offer)
	}
}

// forEachByNode calls f for every node uj and pair of directions, by node,
// then Di, then Dj in the order ord.
func forEachByNode(nodes int, ord []Dir, f func(uj int, di, dj Dir)) {
	for uj := 0; uj < nodes; uj++ {
		for _, di := range ord {
			for _, dj := range ord {
				f(uj, di, dj)
			}
		}
	}
}

// tryAccept adds the condensed edge ca → cb unless cb already reaches ca
// (a cycle through a turn); it reports whether it was added.
func (sb *starBuilder) tryAccept(ca, cb, nv int32) bool {
	if sb.variant.bTest != "" {
		return sb.tryAcceptB(ca, cb, nv)
	}
	if sb.variant.static {
		return !sb.reachesBase(cb, ca)
	}
	return sb.acceptUnlessCycle(ca, cb, nv)
}

// acceptUnlessCycle is the exact test: it adds ca → cb unless cb already
// reaches ca, keeping the closure rows (or the accepted edges and the
// topological order) up to date.
func (sb *starBuilder) acceptUnlessCycle(ca, cb, nv int32) bool {
	if !sb.useClosure {
		if ca == cb || sb.ord[ca] > sb.ord[cb] && sb.reorder(ca, cb) {
			return false
		}
		sb.extraA[ca] = append(sb.extraA[ca], cb)
		sb.extraR[cb] = append(sb.extraR[cb], ca)
		return true
	}
	if sb.row(cb)[ca>>6]&(1<<(uint(ca)&63)) != 0 {
		return false // b ⇝ a: a cycle through a turn
	}
	// accept: everything reaching a (and a) now reaches b and its
	// closure; rows that already reach b already hold b's closure (the
	// rows are transitively closed).
	rb := sb.row(cb)
	wa, ba := ca>>6, uint64(1)<<(uint(ca)&63)
	wb, bb := cb>>6, uint64(1)<<(uint(cb)&63)
	for x := int32(0); x < nv; x++ {
		rx := sb.reach[int(x)*sb.words : int(x+1)*sb.words]
		if (x != ca && rx[wa]&ba == 0) || rx[wb]&bb != 0 {
			continue
		}
		for k, w := range rb {
			rx[k] |= w
		}
		rx[wb] |= bb
	}
	return true
}

// dynamicOrder prepares the search mode: the positions of the
// topological order sb.topo, the reverse edges, no accepted edge yet.
func (sb *starBuilder) dynamicOrder(nv int32) {
	sb.ord = slices.Grow(sb.ord[:0], int(nv))[:nv]
	for i, v := range sb.topo {
		sb.ord[v] = int32(i)
	}
	sb.radjStart = slices.Grow(sb.radjStart[:0], int(nv)+1)[:nv+1]
	clear(sb.radjStart)
	for _, b := range sb.adj {
		sb.radjStart[b+1]++
	}
	for i := int32(0); i < nv; i++ {
		sb.radjStart[i+1] += sb.radjStart[i]
	}
	sb.radj = slices.Grow(sb.radj[:0], len(sb.adj))[:len(sb.adj)]
	fill := append([]int32(nil), sb.radjStart[:nv]...)
	for a := int32(0); a < nv; a++ {
		for _, b := range sb.adj[sb.start[a]:sb.start[a+1]] {
			sb.radj[fill[b]] = a
			fill[b]++
		}
	}
	sb.extraR = make([][]int32, nv)
}

// reorder handles a dependency ca → cb against the topological order
// (ca after cb): it reports true when cb reaches ca (the dependency would
// close a cycle), else it moves the vertices that reach ca and lie after
// cb ahead of those cb reaches that lie before ca, so that the order
// stays topological once ca → cb is added. Only vertices between the two
// in the order are visited.
func (sb *starBuilder) reorder(ca, cb int32) bool {
	lo, hi := sb.ord[cb], sb.ord[ca]
	ep := sb.nextEpoch()
	// forward from cb, among the vertices before ca
	sb.fwd = append(sb.fwd[:0], cb)
	sb.stamp[cb] = ep
	for i := 0; i < len(sb.fwd); i++ {
		v := sb.fwd[i]
		for _, list := range [2][]int32{sb.adj[sb.start[v]:sb.start[v+1]], sb.extraA[v]} {
			for _, w := range list {
				if w == ca {
					return true
				}
				if sb.stamp[w] != ep && sb.ord[w] < hi {
					sb.stamp[w] = ep
					sb.fwd = append(sb.fwd, w)
				}
			}
		}
	}
	// backward from ca, among the vertices after cb (none of them is
	// in the forward set: cb would reach ca)
	ep = sb.nextEpoch()
	sb.bwd = append(sb.bwd[:0], ca)
	sb.stamp[ca] = ep
	for i := 0; i < len(sb.bwd); i++ {
		v := sb.bwd[i]
		for _, list := range [2][]int32{sb.radj[sb.radjStart[v]:sb.radjStart[v+1]], sb.extraR[v]} {
			for _, w := range list {
				if sb.stamp[w] != ep && sb.ord[w] > lo {
					sb.stamp[w] = ep
					sb.bwd = append(sb.bwd, w)
				}
			}
		}
	}
	// the backward set takes the first of their positions, in its own
	// order, then the forward set in its own
	keys := sb.keys[:0]
	for _, v := range sb.bwd {
		keys = append(keys, uint64(sb.ord[v])<<32|uint64(v))
	}
	nb := len(keys)
	for _, v := range sb.fwd {
		keys = append(keys, uint64(sb.ord[v])<<32|uint64(v))
	}
	slices.Sort(keys[:nb])
	slices.Sort(keys[nb:])
	pos := sb.pos[:0]
	for _, k := range keys {
		pos = append(pos, int32(k>>32))
	}
	slices.Sort(pos)
	for i, k := range keys {
		sb.ord[uint32(k)] = pos[i]
	}
	sb.keys, sb.pos = keys, pos
	return false
}

// nextEpoch advances the search stamp.
func (sb *starBuilder) nextEpoch() uint32 {
	sb.epoch++
	if sb.epoch == 0 {
		clear(sb.stamp)
		sb.epoch = 1
	}
	return sb.epoch
}

func (sb *starBuilder) row(v int32) []uint64 {
	return sb.reach[int(v)*sb.words : int(v+1)*sb.words]
}

// reaches reports whether condensed vertex to is reachable from from
// (search mode), following base and accepted edges.
func (sb *starBuilder) reaches(from, to int32) bool {
	if from == to {
		return true
	}
	sb.epoch++
	if sb.epoch == 0 {
		clear(sb.stamp)
		sb.epoch = 1
	}
	st := append(sb.stack[:0], from)
	sb.stamp[from] = sb.epoch
	found := false
	for len(st) > 0 && !found {
		v := st[len(st)-1]
		st = st[:len(st)-1]
		visit := func(b int32) {
			if b == to {
				found = true
			}
			if sb.stamp[b] != sb.epoch {
				sb.stamp[b] = sb.epoch
				st = append(st, b)
			}
		}
		for _, b := range sb.adj[sb.start[v]:sb.start[v+1]] {
			visit(b)
		}
		for _, b := range sb.extraA[v] {
			visit(b)
		}
	}
	sb.stack = st
	return found
}

// tryAcceptB is the seed's test Di ∉ B(uj,Dj) on the closure rows
// (variant bTest): no vertex of a's direction reaches or is reached from b.
func (sb *starBuilder) tryAcceptB(ca, cb, nv int32) bool {
	di := sb.dirOf[ca]
	rb := sb.row(cb)
	for x := int32(0); x < nv; x++ {
		if sb.dirOf[x] != di {
			continue
		}
		if rb[x>>6]&(1<<(uint(x)&63)) != 0 || sb.row(x)[cb>>6]&(1<<(uint(cb)&63)) != 0 {
			return false
		}
	}
	if sb.variant.bTest == "static" {
		return true
	}
	return sb.acceptUnlessCycle(ca, cb, nv) // updates the closure; cannot fail
}

// reachesBase reports whether condensed vertex to is reachable from from
// in the R_DOR CDG alone (static variant): the closure as first built, or
// a search without accepted edges.
func (sb *starBuilder) reachesBase(from, to int32) bool {
	if sb.useClosure {
		return sb.row(from)[to>>6]&(1<<(uint(to)&63)) != 0
	}
	extra := sb.extraA
	sb.extraA = make([][]int32, len(extra))
	defer func() { sb.extraA = extra }()
	return sb.reaches(from, to)
}

// orderOf returns the directions sorted by rank.
func orderOf(rank []int8) []Dir {
	o := make([]Dir, len(rank))
	for d, r := range rank {
		o[r] = Dir(d)
	}
	return o
}
