package routing

import (
	"context"
	"fmt"
	"slices"

	"github.com/icn-hpc/icn/internal/par"
)

// The BFS table algorithm (seed 001 §3.2) on a compact, set-local copy of
// the routing graph.
//
// The set M_{a,t} is renumbered locally (active nodes 0..m−1 in the
// order of the set's own frame, see setFrame, then the transit nodes),
// with one neighbour per local node and direction (−1 when the channel
// is failed or leaves the set). A search from one
// source marks visited RG vertices in a bit set of ⌈S/64⌉ words per local
// node (S automaton states), so the dominance test of a vertex is one AND
// per word with a precomputed mask. Vertices are appended to one entry
// array, layer after layer, with the index of their parent entry; each
// layer is visited in order of increasing load of its entering channel
// (a stable LSD radix sort of 64-bit keys load<<32 | position). After the
// search, the loads are updated from subtree counts (how many chosen
// routes pass through each entry) instead of walking every route.
//
// Heuristic 2 makes every source depend on the loads left by the ones
// before it. Sources are therefore processed in rounds of B (tableBatch,
// a function of the number of active nodes only): all searches of a round
// see the loads at its start and are independent, so a round runs on all
// cores; their load increments are added when the round ends (integer
// sums, so the result does not depend on the number of workers).
// Heuristic 1 needs only distances, which do not depend on the loads, so
// the sources are taken in exactly the sequential order, computed up
// front by distance searches on all cores (above maxOrderNodes active
// nodes, or above cheapOrderNodes unless BuildOptions.ExactOrder: B
// interleaved chains, the k-th source of a round being the unprocessed
// node farthest from the k-th source of the previous round).
// With B = 1 (fewer than 256 active nodes) this is exactly the sequential
// algorithm.

// tableBatch returns the number of sources whose searches share one load
// snapshot: 1 below 256 active nodes, then m/128, at most 8.
func tableBatch(m int) int { return min(8, max(1, m/128)) }

// bfsPlan is the rule automaton in the form the search needs: transitions
// without the dominated ones, and per-state dominator bit masks.
type bfsPlan struct {
	S, W   int
	begin  int
	canEnd []bool
	skind  []stateKind
	in     []int8
	rank   []int8
	tstart []int32
	tdir   []uint8
	tto    []uint16
	tcond  []bool
	hasDom []bool
	dom    []uint64 // state q: dom[q·W : (q+1)·W]
}

func newBFSPlan(a *automaton) *bfsPlan {
	p := &bfsPlan{S: a.nstates, W: (a.nstates + 63) / 64, begin: a.begin, canEnd: a.canEnd, skind: a.skind, in: a.in, rank: a.rank}
	p.tstart = make([]int32, a.nstates+1)
	p.hasDom = make([]bool, a.nstates)
	p.dom = make([]uint64, a.nstates*p.W)
	for q := 0; q < a.nstates; q++ {
		for k := a.tstart[q]; k < a.tstart[q+1]; k++ {
			if a.tskip[k] {
				continue
			}
			p.tdir = append(p.tdir, uint8(a.tdir[k]))
			p.tto = append(p.tto, uint16(a.tto[k]))
			p.tcond = append(p.tcond, a.tcond[k])
		}
		p.tstart[q+1] = int32(len(p.tdir))
		for _, x := range a.dom[a.domStart[q]:a.domStart[q+1]] {
			p.dom[q*p.W+int(x)>>6] |= 1 << (uint(x) & 63)
			p.hasDom[q] = true
		}
	}
	return p
}

// localSet is the set M_{a,t} numbered locally: active nodes 0..m−1,
// then the transit nodes, each sorted by id or, for the table search, by
// their key in the set's frame (setFrame). The local index of an active
// node breaks the ties of heuristic 1, so numbering in the frame gives
// translates of a set the same table; the table itself keeps its
// id-sorted indexing (tix maps one to the other).
type localSet struct {
	m, n, nd int
	node     []int32  // local → torus node
	tix      []int32  // local active index → table index (index in s.act); nil when they are equal
	nb       []int32  // local·nd+d → local neighbour, −1 if the channel is failed or leaves the set
	ch       []int32  // local·nd+d → topology channel
	extra    []uint16 // per local channel: accepted R_A* dependencies (nil unless angara*)
}

// newLocalSet numbers the set prepared in s (s.loc is used as the
// node → local index map, valid for set nodes only): in the set's frame
// when relative is set, else by id. Sets whose frame does not wrap
// around a ring (most, and every whole torus) are numbered by id either
// way, at no extra cost.
func (r *Router) newLocalSet(s *scratch, relative bool) *localSet {
	t := r.t
	m := len(s.act)
	n := m + len(s.trans)
	ls := &localSet{m: m, n: n, nd: t.nd}
	ls.node = make([]int32, 0, n)
	ls.node = append(append(ls.node, s.act...), s.trans...)
	if relative && !r.tune.idOrder {
		if start, identity := r.setFrame(s); !identity {
			t.sortRelative(ls.node[:m], start)
			t.sortRelative(ls.node[m:], start)
			ls.tix = make([]int32, m)
			for i, v := range ls.node[:m] {
				ls.tix[i] = s.actIdx[v]
			}
		}
	}
	if len(s.loc) < t.nodes {
		s.loc = make([]int32, t.nodes)
	}
	for i, v := range ls.node {
		s.loc[v] = int32(i)
	}
	ls.nb = make([]int32, n*t.nd)
	ls.ch = make([]int32, n*t.nd)
	if r.star != nil {
		ls.extra = make([]uint16, n*t.nd)
	}
	for i, v := range ls.node {
		for d := 0; d < t.nd; d++ {
			k := int(v)*t.nd + d
			c := t.ch[k]
			ls.ch[i*t.nd+d] = c
			ls.nb[i*t.nd+d] = -1
			if s.open[v]&(1<<d) != 0 {
				ls.nb[i*t.nd+d] = s.loc[t.nb[k]]
			}
			if ls.extra != nil && c >= 0 {
				ls.extra[i*t.nd+d] = r.star.extra[c]
			}
		}
	}
	return ls
}

// tableIndex returns the index in the table's Active list of local
// active node i.
func (ls *localSet) tableIndex(i int) int {
	if ls.tix == nil {
		return i
	}
	return int(ls.tix[i])
}

// bent is one visited RG vertex of a search: local node, state, the entry
// of its parent and the local channel that enters it.
type bent struct {
	li, par, lc int32
	q           uint16
}

// bfsWorker is the scratch space of one search.
type bfsWorker struct {
	_       [64]byte // workers write their fields for every search: no cache line shared with another worker
	vis     []uint64
	ents    []bent
	keys    []uint64
	ktmp    []uint64
	cnt     []int32
	codes   []uint16 // per entry on a chosen route: FS+1, LS+1, steps per direction rank
	endE    []int32  // per active node: entry where its route ends
	dist    []int32  // per active node: route length (−1 unreached)
	reach   []int32  // per local node: depth+1 of its first arrival (0: none), when geodesic
	delta   []int32  // per local channel: load added by this worker's sources
	touched []int32
	_       [64]byte
}

// bfsSearch runs searches on one local set.
type bfsSearch struct {
	p  *bfsPlan
	ls *localSet
	// translate is set on a whole fault-free torus with every node
	// active (distances are translation-invariant there)
	translate *torusShift
	// geodesic is set when every legal distance between set nodes is
	// their distance in the set's graph (see geodesicSet): a vertex
	// reached at a node later than the node's first arrival then lies on
	// no chosen route and is not expanded.
	geodesic bool
	tune     *tuning
}

func (b *bfsSearch) newWorker() *bfsWorker {
	return &bfsWorker{
		vis:   make([]uint64, b.ls.n*b.p.W),
		endE:  make([]int32, b.ls.m),
		dist:  make([]int32, b.ls.m),
		delta: make([]int32, b.ls.n*b.ls.nd),
		reach: make([]int32, b.ls.n),
	}
}

// run searches from active node si. With load nil the layers are visited
// in discovery order (for distances only); otherwise each layer is sorted
// by the load of its entering channels. It reports false when some active
// node is not reached.
func (b *bfsSearch) run(w *bfsWorker, si int, load []int32) bool {
	p, ls := b.p, b.ls
	clear(w.vis)
	for j := range w.dist {
		w.dist[j] = -1
	}
	w.dist[si] = 0
	if b.geodesic {
		clear(w.reach)
		w.reach[si] = 1
	}
	remaining := ls.m - 1
	w.ents = append(w.ents[:0], bent{li: int32(si), par: -1, lc: -1, q: uint16(p.begin)})
	w.setVisited(p, int32(si), uint16(p.begin))
	lo, hi := 0, 1
	for depth := int32(1); lo < hi && remaining > 0; depth++ {
		order := w.layerOrder(p, lo, hi, load, depth > 1)
		for k := 0; k < len(order) && remaining > 0; k++ {
			remaining = b.expand(w, lo+int(uint32(order[k])), depth, remaining)
		}
		lo, hi = hi, len(w.ents)
	}
	return remaining == 0
}

func (w *bfsWorker) setVisited(p *bfsPlan, li int32, q uint16) {
	bit := int(li)*p.W*64 + int(q)
	w.vis[bit>>6] |= 1 << (uint(bit) & 63)
}

// layerOrder returns the entries of layer [lo, hi) to expand, as keys
// whose low 32 bits are positions in the layer, in the order of
// heuristic 2 when sorted is set (increasing load of the entering channel,
// ties in discovery order), else in discovery order. It leaves out entries
// without transitions and dominated ones: a dominating vertex of the same
// node reached at the same depth or earlier has every continuation they
// have.
func (w *bfsWorker) layerOrder(p *bfsPlan, lo, hi int, load []int32, sorted bool) []uint64 {
	W := p.W
	keys := w.keys[:0]
	if !sorted {
		load = nil
	}
	var mn, mx uint32 = ^uint32(0), 0
	for k, e := range w.ents[lo:hi] {
		if p.tstart[e.q] == p.tstart[e.q+1] {
			continue
		}
		if p.hasDom[e.q] && dominated(w.vis[int(e.li)*W:int(e.li+1)*W], p.dom[int(e.q)*W:int(e.q+1)*W]) {
			continue
		}
		var l uint32
		if load != nil {
			l = uint32(load[e.lc])
			mn, mx = min(mn, l), max(mx, l)
		}
		keys = append(keys, uint64(l)<<32|uint64(k))
	}
	w.keys = keys
	if load == nil || len(keys) < 2 || mn == mx {
		return keys
	}
	if len(keys) < 64 {
		slices.Sort(keys)
		return keys
	}
	w.ktmp = slices.Grow(w.ktmp[:0], len(keys))[:len(keys)]
	src, dst := keys, w.ktmp
	span := mx - mn
	for shift := uint(0); shift < 32 && span>>shift > 0; shift += 8 {
		var cnt [257]int32
		for _, x := range src {
			cnt[((uint32(x>>32)-mn)>>shift)&0xff+1]++
		}
		for i := 1; i < len(cnt); i++ {
			cnt[i] += cnt[i-1]
		}
		for _, x := range src {
			b := ((uint32(x>>32) - mn) >> shift) & 0xff
			dst[cnt[b]] = x
			cnt[b]++
		}
		src, dst = dst, src
	}
	w.keys, w.ktmp = src, dst
	return src
}

func dominated(row, mask []uint64) bool {
	for k, x := range row {
		if x&mask[k] != 0 {
			return true
		}
	}
	return false
}

// expand pushes the successors of entry i (at depth−1) and returns the
// number of active nodes still unreached.
func (b *bfsSearch) expand(w *bfsWorker, i int, depth int32, remaining int) int {
	e := w.ents[i]
	p, ls := b.p, b.ls
	W64 := p.W * 64
	base := int(e.li) * ls.nd
	for k := p.tstart[e.q]; k < p.tstart[e.q+1]; k++ {
		d := int(p.tdir[k])
		wl := ls.nb[base+d]
		if wl < 0 {
			continue
		}
		if b.geodesic {
			// depth+1 > first arrival+1: not on a shortest walk
			if r := w.reach[wl]; r != 0 && r <= depth {
				continue
			}
			w.reach[wl] = depth + 1
		}
		if p.tcond[k] && ls.extra[e.lc]&(1<<d) == 0 {
			continue
		}
		to := p.tto[k]
		bit := int(wl)*W64 + int(to)
		word, mb := bit>>6, uint64(1)<<(uint(bit)&63)
		if w.vis[word]&mb != 0 {
			continue
		}
		w.vis[word] |= mb
		if p.hasDom[to] && dominated(w.vis[int(wl)*p.W:int(wl+1)*p.W], p.dom[int(to)*p.W:int(to+1)*p.W]) {
			// a dominating vertex of wl is reached no later: it has
			// every continuation of this one and has already ended a
			// route at wl if wl is active.
			continue
		}
		w.ents = append(w.ents, bent{li: wl, par: int32(i), lc: int32(base + d), q: to})
		if int(wl) < ls.m && p.canEnd[to] && w.dist[wl] < 0 {
			w.dist[wl] = depth
			w.endE[wl] = int32(len(w.ents) - 1)
			if remaining--; remaining == 0 {
				return 0
			}
		}
	}
	return remaining
}

// addLoads adds, for every chosen route of the last search (from si), one
// unit of load to each channel it uses, by counting the routes through
// every entry (children come after their parents in the entry array).
func (w *bfsWorker) addLoads(si int) {
	n := len(w.ents)
	w.cnt = slices.Grow(w.cnt[:0], n)[:n]
	clear(w.cnt)
	for j, e := range w.endE {
		if j != si {
			w.cnt[e]++
		}
	}
	for i := n - 1; i > 0; i-- {
		c := w.cnt[i]
		if c == 0 {
			continue
		}
		e := &w.ents[i]
		if w.delta[e.lc] == 0 {
			w.touched = append(w.touched, e.lc)
		}
		w.delta[e.lc] += c
		w.cnt[e.par] += c
	}
}

// prefixCodes computes, for every entry on a chosen route (w.cnt > 0,
// so addLoads must run first), the route prefix from the source as FS+1,
// LS+1 and a step count per direction rank, parents before children.
func (b *bfsSearch) prefixCodes(w *bfsWorker) {
	p := b.p
	st := b.ls.nd + 2
	n := len(w.ents)
	w.codes = slices.Grow(w.codes[:0], n*st)[:n*st]
	clear(w.codes[:st])
	for i := 1; i < n; i++ {
		if w.cnt[i] == 0 {
			continue
		}
		e := &w.ents[i]
		c := w.codes[i*st : (i+1)*st]
		copy(c, w.codes[int(e.par)*st:int(e.par+1)*st])
		d := p.in[e.q]
		switch p.skind[e.q] {
		case sFS:
			c[0] = uint16(d) + 1
		case sLS:
			c[1] = uint16(d) + 1
		default:
			c[2+int(p.rank[d])]++
		}
	}
}

// encode returns the route to active node j of the last search (after
// prefixCodes).
func (b *bfsSearch) encode(w *bfsWorker, j int, a *automaton) routeEnc {
	st := b.ls.nd + 2
	c := w.codes[int(w.endE[j])*st : int(w.endE[j]+1)*st]
	e := routeEnc{fs: int(c[0]), ls: int(c[1])}
	for k := 0; k < b.ls.nd; k++ {
		e.cnt[k] = int(c[2+k])
	}
	e.canonical(a)
	return e
}

// geodesicSet reports whether the set prepared in s is a fault-free box
// (it fills a rectangle of the torus without a failed link inside). Then
// every rule gives each pair of set nodes a legal route as short as their
// distance in the set's graph: per dimension, the short way round a whole
// ring or the only way along a partial side or a mesh dimension, the
// directions taken in the
// rule's order, each dimension in one direction only. A shortest legal
// route is then a shortest walk in the graph, and so is each of its
// prefixes: a search vertex at node v deeper than v's first arrival is on
// no shortest route and can be left out without changing any route,
// distance, discovery order or dominance test of the vertices that are.
func (r *Router) geodesicSet(s *scratch) bool {
	if r.tune.noGeodesicPrune {
		return false
	}
	box := make([]int32, 0, len(s.act)+len(s.trans))
	box = append(append(box, s.act...), s.trans...)
	if _, _, err := r.t.boxExtent(box); err != nil {
		return false
	}
	return r.checkBoxFaultFree(s, box) == nil
}

// storeRoute stores route i of the table, the route to active node j of
// the last search (after prefixCodes): with one byte per count, straight
// from the prefix code (canonicalByte), else through encode and store.
func (bs *bfsSearch) storeRoute(w *bfsWorker, tb *Table, i, j int, a *automaton) error {
	st := bs.ls.nd + 2
	c := w.codes[int(w.endE[j])*st : int(w.endE[j]+1)*st]
	if !tb.wide && canonicalByte(tb.code(i), c, a) {
		return nil
	}
	e := bs.encode(w, j, a)
	return tb.store(i, &e)
}

// canonicalByte writes prefix code c (FS+1, LS+1, a count per direction
// rank) in canonical form (routeEnc.canonical) into a one-byte-per-count
// table code, and reports false when a count does not fit a byte.
func canonicalByte(dst []byte, c []uint16, a *automaton) bool {
	nd := a.nd
	var cnt [2 * MaxDims]uint16
	copy(cnt[:nd], c[2:2+nd])
	fs, ls := int(c[0]), int(c[1])
	standard := func(d Dir) bool { return a.kind == DOR || cnt[a.rank[d.Opp()]] == 0 }
	if fs != 0 {
		f := Dir(fs - 1)
		ok := standard(f)
		first := -1
		for k := 0; k < nd; k++ {
			if cnt[k] > 0 {
				first = k
				break
			}
		}
		switch {
		case first >= 0:
			ok = ok && int(a.rank[f]) <= first
		case ls != 0:
			ok = ok && a.rank[Dir(ls-1)] >= a.rank[f]
		}
		if ok {
			cnt[a.rank[f]]++
			fs = 0
		}
	}
	if ls != 0 {
		l := Dir(ls - 1)
		last := -1
		for k := nd - 1; k >= 0; k-- {
			if cnt[k] > 0 {
				last = k
				break
			}
		}
		ok := standard(l) && (last < 0 || int(a.rank[l]) >= last)
		if last < 0 && fs != 0 {
			ok = ok && a.rank[l] >= a.rank[Dir(fs-1)]
		}
		if ok {
			cnt[a.rank[l]]++
			ls = 0
		}
	}
	var big uint16
	for k := 0; k < nd; k++ {
		big |= cnt[k]
		dst[2+k] = byte(cnt[k])
	}
	dst[0], dst[1] = byte(fs), byte(ls)
	return big <= 0xff
}

// tableRun tunes one table construction.
type tableRun struct {
	progress func(done, total int)
	workers  int
	batch    int  // sources per load snapshot; 0 = tableBatch(m)
	exact    bool // compute the exact order of heuristic 1 for any set size
	// ctx, if set, stops the construction between rounds when it ends.
	ctx context.Context
	// verify, if set, asks for the verification of the stored routes
	// during the construction; it receives the checker and its workers.
	verify *builtCheck
}

// builtCheck is the verification done while a table is built.
type builtCheck struct {
	rc *routeChecker
	ws []*verifyWorker
}

// buildBFS is the seed's BFS algorithm with both heuristics, in rounds
// (see tableJob); with o.verify set, the stored routes are verified on
// the cores the rounds leave idle.
func (r *Router) buildBFS(s *scratch, tb *Table, o tableRun) error {
	ls := r.newLocalSet(s, true)
	m := ls.m
	if m < 2 {
		return nil
	}
	bs := &bfsSearch{p: r.plan, ls: ls, geodesic: r.geodesicSet(s), tune: &r.tune}
	// (every node active: the frame starts at 0, the numbering is by id
	// as translatedNext needs; every dimension a ring, so translations
	// are symmetries)
	if ls.n == r.t.nodes && ls.m == ls.n && ls.tix == nil && r.t.rings && !slices.Contains(r.up, false) {
		bs.translate = newTorusShift(r.t)
	}
	B := o.batch
	if B <= 0 {
		B = tableBatch(m)
	}
	B = min(B, m)
	nw := tableWorkers(o.workers, m, r.tune.poolMinRoutes)
	if o.verify == nil {
		nw = min(nw, max(B, 2)) // searches, and storing beside them
	}
	j := &tableJob{r: r, bs: bs, tb: tb, o: o, a: r.a, B: B, load: make([]int32, ls.n*ls.nd)}
	j.ws = make([]*bfsWorker, nw)
	for i := range j.ws {
		j.ws[i] = bs.newWorker()
	}
	if B > 1 {
		if next := bs.orderNext(j.ws, o.exact); next != nil {
			j.feed = newOrderFeed(m, next)
		}
	}
	if j.feed == nil {
		j.scheduled = make([]bool, m)
		j.scheduled[0] = true
	}
	if o.verify != nil {
		j.rc = r.tableChecker(tb)
		j.vws = make([]*verifyWorker, nw)
		for i := range j.vws {
			j.vws[i] = j.rc.newWorker()
		}
	}
	if o.ctx != nil && o.ctx.Err() != nil {
		if j.feed != nil {
			j.feed.close()
		}
		return context.Cause(o.ctx)
	}
	if err := j.run([]int{0}, nw); err != nil {
		return err
	}
	for lc, l := range j.load {
		if l != 0 {
			tb.loads[ls.ch[lc]] = l
		}
	}
	if o.verify != nil {
		o.verify.ws = j.vws
		o.verify.rc = j.rc
	}
	return nil
}

// orderNext returns the step of the order in which the sequential
// algorithm takes the sources (heuristic 1 needs only distances, which
// do not depend on the loads): next(cur, done) is the unprocessed node
// farthest from cur (the smallest index among equals), from distance
// searches from every source on all cores. It returns nil (use
// interleaved chains) above maxOrderNodes, for distances above 255, or
// when some pair is unreachable (the rounds then report it).
func (bs *bfsSearch) orderNext(workers []*bfsWorker, exact bool) func(cur int, done []bool) int {
	m := bs.ls.m
	if bs.translate != nil {
		return bs.translatedNext(workers[0])
	}
	if m > bs.tune.maxOrderNodes || (m > bs.tune.cheapOrderNodes && !exact) {
		return nil
	}
	dist := make([]uint8, m*m)
	ok := make([]bool, len(workers))
	for i := range ok {
		ok[i] = true
	}
	par.For(m, len(workers), func(wi, si int) {
		w := workers[wi]
		if !bs.run(w, si, nil) {
			ok[wi] = false
			return
		}
		for j, d := range w.dist {
			if d > 255 {
				ok[wi] = false
			}
			dist[si*m+j] = uint8(d)
		}
	})
	for _, x := range ok {
		if !x {
			return nil
		}
	}
	return func(cur int, done []bool) int {
		next, far := -1, -1
		for j, d := range dist[cur*m : (cur+1)*m] {
			if !done[j] && int(d) > far {
				next, far = j, int(d)
			}
		}
		return next
	}
}

// translatedNext is orderNext on a whole fault-free torus (every
// dimension a ring) with every node active: the rule is the same at every node, so the distance from
// u to v is the distance from node 0 to v − u (coordinate-wise), and one
// search gives every row. Nodes are scanned in id order (X fastest) with
// v − u summed from one offset table per dimension; the scan stops at
// the first node at the largest distance of the row.
func (bs *bfsSearch) translatedNext(w *bfsWorker) func(cur int, done []bool) int {
	if !bs.run(w, 0, nil) {
		return nil
	}
	row0 := append([]int32(nil), w.dist...)
	top := slices.Max(row0)
	tr := bs.translate
	n := len(tr.dims)
	offs := make([][]int32, n)
	for i, d := range tr.dims {
		offs[i] = make([]int32, d)
	}
	odo := make([]int, n)
	return func(cur int, done []bool) int {
		mul := int32(1)
		for i, d := range tr.dims {
			cu := int(tr.coord[cur][i])
			for c := range d {
				offs[i][c] = int32((c-cu+d)%d) * mul
			}
			mul *= int32(d)
		}
		clear(odo)
		inner, off0 := tr.dims[0], offs[0]
		next, far := -1, int32(-1)
		for j0 := 0; j0 < len(row0); j0 += inner {
			outer := int32(0)
			for i := 1; i < n; i++ {
				outer += offs[i][odo[i]]
			}
			for x, o := range off0 {
				if !done[j0+x] {
					if d := row0[outer+o]; d > far {
						next, far = j0+x, d
						if d == top {
							return next
						}
					}
				}
			}
			for i := 1; i < n; i++ {
				if odo[i]++; odo[i] < tr.dims[i] {
					break
				}
				odo[i] = 0
			}
		}
		return next
	}
}

// torusShift holds the coordinates of every node of a torus.
type torusShift struct {
	dims  []int
	coord [][]int32 // per node
}

func newTorusShift(t *torus) *torusShift {
	ts := &torusShift{dims: t.dims, coord: make([][]int32, t.nodes)}
	for v := range ts.coord {
		ts.coord[v] = make([]int32, t.n)
		for i := range t.n {
			ts.coord[v][i] = int32(t.g.CoordAt(v, i))
		}
	}
	return ts
}

// minimalSum returns Σ over ordered active pairs of the shortest legal
// route length inside the set, searching from every source on all cores.
func (r *Router) minimalSum(active, transit []int, workers int) (int, error) {
	s := r.getScratch()
	defer r.putScratch(s)
	if err := r.prepareSet(s, active, transit); err != nil {
		return 0, err
	}
	// numbered by id: the sum does not depend on the numbering, and the
	// unreachable source reported is the one with the smallest id
	ls := r.newLocalSet(s, false)
	bs := &bfsSearch{p: r.plan, ls: ls, geodesic: r.geodesicSet(s), tune: &r.tune}
	if ls.n == r.t.nodes && ls.m == ls.n && r.t.rings && !slices.Contains(r.up, false) {
		// a whole fault-free torus: every source sees the same distances
		// (translated), so one search gives the sum
		w := bs.newWorker()
		if !bs.run(w, 0, nil) {
			return 0, fmt.Errorf("the set is not reachable from %s", r.t.name(0))
		}
		sum := 0
		for _, d := range w.dist {
			sum += int(d)
		}
		return sum * ls.m, nil
	}
	nw := par.Workers(workers)
	ws := make([]*bfsWorker, nw)
	sums := make([]int, nw)
	bad := make([]int, nw)
	for i := range ws {
		ws[i] = bs.newWorker()
		bad[i] = -1
	}
	par.For(ls.m, nw, func(wi, si int) {
		w := ws[wi]
		if !bs.run(w, si, nil) {
			if bad[wi] < 0 || si < bad[wi] {
				bad[wi] = si
			}
			return
		}
		for _, d := range w.dist {
			sums[wi] += int(d)
		}
	})
	sum := 0
	for i := range ws {
		if bad[i] >= 0 {
			return 0, fmt.Errorf("the set is not reachable from %s", r.t.name(int(ls.node[bad[i]])))
		}
		sum += sums[i]
	}
	return sum, nil
}
