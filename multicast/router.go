package multicast

import (
	"fmt"
	"slices"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// Tree is one multicast tree: its root switch and its edges as channels
// directed away from the root (parent → child), in construction order.
type Tree struct {
	Root  int32
	Edges []int32
}

// Router builds multicast trees one group at a time with one engine and
// keeps the per-link and per-switch load (groups using them) across groups,
// so later groups are balanced against earlier ones. A Router is not safe
// for concurrent use; Manager serialises access to it.
//
// All scratch space is allocated once and reused with epoch stamps, so the
// cost of a group does not include clearing arrays of the fabric's size:
// FULB is O(|E|+|N|) per group in the worst case and usually proportional
// to the members times the tree height.
type Router struct {
	g    *topology.Graph
	h    *topology.HopTable
	algo Algo
	opt  Options

	routers []int32 // router index -> node
	// router adjacency: up channels from a router to a router, port order
	adjStart []int32
	adjChan  []int32
	adjDst   []int32 // router index of each adjChan's far end
	adj      []hop   // adjChan and adjDst side by side, for FULB's walk
	// chanDstRI: per channel, the router index of its far end or -1 (a
	// compact copy of the graph's links for accounting).
	chanDstRI []int32
	global    []bool // per link, only with OneGlobal

	linkLoad []int32 // groups whose tree uses the link
	swLoad   []int32 // groups whose tree contains the node (routers)
	maxLoad  int32

	// scratch
	epoch  uint32
	stamp  []uint32 // per node: in the current tree
	gstamp []uint32 // per node: gmin valid
	gmin   []uint8
	dstamp []uint32 // per router index: Dijkstra label valid
	dist   []int64
	parent []int32 // per router index: channel from the parent
	done   []uint32
	heap   []heapItem
	pairs  []pair
	cand   []int32
	// rd, per router index: epoch<<8 | hops to the current group's root
	// (valid when the epoch is the current one).
	rd     []uint64
	candHR []hop
	pivot  int
	// root choice
	// attach, per node: the switch a single-homed end node hangs off and
	// the channel from the node to it, else -1, -1.
	attach  []attachment
	ebuf    []int32 // edges of the tree being built
	targets []target
	t0      int     // index of the first target with a router, or -1
	tfor    []int32 // the member list the targets were made for
	tepoch  uint32
	tslot   []uint64 // per node: tepoch<<32 | its target's index
	bstamp  []uint32 // per router index: visited by the ball search
	queue   []int32
}

type heapItem struct {
	key int64
	v   int32
}

type pair struct {
	key int32
	m   int32
}

// NewRouter prepares an engine on the fabric of hop table h.
func NewRouter(h *topology.HopTable, a Algo, o Options) *Router {
	g := h.Graph()
	n := g.NumNodes()
	r := &Router{g: g, h: h, algo: a, opt: o, routers: h.Routers()}
	nr := len(r.routers)
	r.adjStart = make([]int32, nr+1)
	for i, v := range r.routers {
		for _, c := range g.Out(int(v)) {
			if g.Up(int(c)) && h.RouterIndex(g.Dst(int(c))) >= 0 {
				r.adjChan = append(r.adjChan, c)
				r.adjDst = append(r.adjDst, int32(h.RouterIndex(g.Dst(int(c)))))
				r.adj = append(r.adj, hop{c, int32(h.RouterIndex(g.Dst(int(c))))})
			}
		}
		r.adjStart[i+1] = int32(len(r.adjChan))
	}
	if a.OneGlobal {
		r.global = make([]bool, g.NumLinks())
		for l := range r.global {
			r.global[l] = g.Link(l).Class == topology.Global
		}
		r.gstamp = make([]uint32, n)
		r.gmin = make([]uint8, n)
	}
	r.chanDstRI = make([]int32, g.NumChannels())
	for c := range r.chanDstRI {
		r.chanDstRI[c] = int32(h.RouterIndex(g.Dst(c)))
	}
	r.attach = make([]attachment, n)
	for v := range r.attach {
		r.attach[v] = attachment{-1, -1}
		if h.RouterIndex(v) >= 0 {
			continue
		}
		links, att, ac := 0, -1, int32(-1)
		for _, c := range g.Out(v) {
			if g.Up(int(c)) {
				links++
				att, ac = g.Dst(int(c)), c
			}
		}
		if links == 1 && h.RouterIndex(att) >= 0 {
			r.attach[v] = attachment{int32(att), ac}
		}
	}
	r.tslot = make([]uint64, n)
	r.bstamp = make([]uint32, nr)
	r.linkLoad = make([]int32, g.NumLinks())
	r.swLoad = make([]int32, n)
	r.stamp = make([]uint32, n)
	r.rd = make([]uint64, nr)
	if a.Kind == SSSP {
		r.dstamp = make([]uint32, nr)
		r.dist = make([]int64, nr)
		r.parent = make([]int32, nr)
		r.done = make([]uint32, nr)
	}
	return r
}

// Algo returns the engine configuration.
func (r *Router) Algo() Algo { return r.algo }

// HopTable returns the min-hop table the router works on.
func (r *Router) HopTable() *topology.HopTable { return r.h }

// LinkLoad returns the number of groups currently routed over link l.
func (r *Router) LinkLoad(l int) int { return int(r.linkLoad[l]) }

// SwitchLoad returns the number of groups whose tree contains node v.
func (r *Router) SwitchLoad(v int) int { return int(r.swLoad[v]) }

// Bytes returns the memory held by the router's state and scratch space.
func (r *Router) Bytes() int {
	return 4*(len(r.adjStart)+len(r.adjChan)+len(r.adjDst)+len(r.chanDstRI)+2*len(r.rd)+2*len(r.adj)+len(r.linkLoad)+len(r.swLoad)+len(r.stamp)+
		len(r.gstamp)+len(r.dstamp)+len(r.parent)+len(r.done)+2*len(r.attach)+2*len(r.tslot)+
		len(r.bstamp)) + len(r.global) + len(r.gmin) + 8*len(r.dist)
}

func (r *Router) nextEpoch() {
	r.epoch++
	if r.epoch == 0 { // wrapped: clear the stamps once every 4 billion groups
		clear(r.stamp)
		clear(r.gstamp)
		clear(r.dstamp)
		clear(r.done)
		clear(r.rd)
		r.epoch = 1
	}
}

// CheckMembers validates a member list: non-empty, ids in range, no failed
// or repeated nodes.
func CheckMembers(g *topology.Graph, members []int32) error {
	return newMemberChecker(g).check(members)
}

// memberChecker checks many member lists with one epoch-stamped array.
type memberChecker struct {
	g     *topology.Graph
	seen  []uint32
	epoch uint32
}

func newMemberChecker(g *topology.Graph) *memberChecker {
	return &memberChecker{g: g, seen: make([]uint32, g.NumNodes())}
}

func (mc *memberChecker) check(members []int32) error {
	g := mc.g
	if len(members) == 0 {
		return fmt.Errorf("empty group")
	}
	mc.epoch++
	for _, m := range members {
		if m < 0 || int(m) >= g.NumNodes() {
			return fmt.Errorf("member id %d is not a node of the fabric (0..%d)", m, g.NumNodes()-1)
		}
		if g.NodeFailed(int(m)) {
			return fmt.Errorf("member %s is a failed node", g.NodeName(int(m)))
		}
		if mc.seen[m] == mc.epoch {
			return fmt.Errorf("member %s listed twice", g.NodeName(int(m)))
		}
		mc.seen[m] = mc.epoch
	}
	return nil
}

// Route builds the tree of one group, adds it to the link and switch loads
// and returns it. Members are node ids (end nodes or switches); the caller
// must pass a list accepted by CheckMembers (Run and Manager do).
func (r *Router) Route(members []int32) (Tree, error) {
	root, err := r.ChooseRoot(members)
	if err != nil {
		return Tree{}, err
	}
	t := r.BuildTree(root, members)
	r.Add(t)
	return t, nil
}

// Add counts a tree in the link and switch loads.
func (r *Router) Add(t Tree) { r.account(t, 1) }

// Release removes a tree from the link and switch loads (the group was
// destroyed).
func (r *Router) Release(t Tree) { r.account(t, -1) }

func (r *Router) account(t Tree, d int32) {
	r.swLoad[t.Root] += d
	for _, c := range t.Edges {
		l := c >> 1
		r.linkLoad[l] += d
		if r.linkLoad[l] > r.maxLoad {
			r.maxLoad = r.linkLoad[l]
		}
		if ri := r.chanDstRI[c]; ri >= 0 {
			r.swLoad[r.routers[ri]] += d
		}
	}
}

// ChooseRoot returns the root switch of a group: among all switches the
// ones with the smallest maximum (or total) min-hop distance to the members;
// the first of them in switch order, or with root rotation the least
// loaded (fewest trees through it), the first on ties.
//
// Members are first folded into targets: end nodes hanging off the same
// switch share one (distance to the switch + 1). The search then walks
// breadth-first from the switch of the first target: a switch k hops from
// it is at least k hops from that target, so the walk stops at the first
// layer that cannot hold a root as good as the best found. A switch is
// abandoned as soon as its partial score is too large, starting at the
// target that ruled out the previous switch. In the fat trees of the seed
// this touches a handful of switches per group instead of all of them.
func (r *Router) ChooseRoot(members []int32) (int32, error) {
	if len(members) == 0 {
		return -1, fmt.Errorf("empty group")
	}
	r.makeTargets(members)
	var best int64
	if r.t0 >= 0 {
		best = r.ballSearch()
	} else {
		best = r.fullSearch()
	}
	if best >= unreachableScore {
		return -1, r.unreachableError(members)
	}
	// r.cand holds every switch that may tie with best: the answer is
	// the first (or least loaded, then first) that does, so suspects are
	// confirmed in that order and the first confirmed one wins.
	root := r.confirmSuspects(best)
	if root < 0 {
		return -1, r.unreachableError(members)
	}
	return root, nil
}

// confirmSuspects returns the first suspect in r.cand, in the order of
// sortSuspects, whose score is best (-1 if none). The first few are picked
// by a linear scan (usually the first one is confirmed), the rest sorted.
func (r *Router) confirmSuspects(best int64) int32 {
	for try := 0; len(r.cand) > 0; try++ {
		if try == 4 {
			r.sortSuspects()
			for _, s := range r.cand {
				if _, ok := r.rootScore(s, best, false); ok {
					return s
				}
			}
			return -1
		}
		i := 0
		for j := 1; j < len(r.cand); j++ {
			if r.suspectBefore(r.cand[j], r.cand[i]) {
				i = j
			}
		}
		s := r.cand[i]
		if _, ok := r.rootScore(s, best, false); ok {
			return s
		}
		r.cand[i] = r.cand[len(r.cand)-1]
		r.cand = r.cand[:len(r.cand)-1]
	}
	return -1
}

// suspectBefore reports whether switch a is preferred to b as a root on
// equal scores: lower id, or with root rotation lower load, then lower id.
func (r *Router) suspectBefore(a, b int32) bool {
	if r.algo.Rotate {
		if la, lb := r.swLoad[a], r.swLoad[b]; la != lb {
			return la < lb
		}
	}
	return a < b
}

// sortSuspects orders r.cand by switch id, or with root rotation by load,
// then id.
func (r *Router) sortSuspects() {
	if !r.algo.Rotate {
		slices.Sort(r.cand)
		return
	}
	slices.SortFunc(r.cand, func(a, b int32) int {
		if la, lb := r.swLoad[a], r.swLoad[b]; la != lb {
			return int(la - lb)
		}
		return int(a - b)
	})
}

// target is a switch the members hang off (router >= 0), or a member that
// is neither a switch nor single-homed (node, router = -1).
type target struct {
	router int32 // router node, or -1
	node   int32 // the member itself when router < 0
	add    int32 // largest extra hops after the router (0 or 1)
	count  int32 // members folded into the target
	addSum int32 // total extra hops of the folded members
}

func (r *Router) makeTargets(members []int32) {
	r.nextTarget()
	r.targets = r.targets[:0]
	ep := uint64(r.tepoch) << 32
	for _, m := range members {
		rt, add := r.attach[m].sw, int32(1)
		if rt < 0 {
			if r.h.RouterIndex(int(m)) < 0 {
				r.targets = append(r.targets, target{router: -1, node: m, count: 1})
				continue
			}
			rt, add = m, 0
		}
		if v := r.tslot[rt]; v&^0xffffffff == ep {
			t := &r.targets[uint32(v)]
			t.add = max(t.add, add)
			t.count++
			t.addSum += add
			continue
		}
		r.tslot[rt] = ep | uint64(len(r.targets))
		r.targets = append(r.targets, target{router: rt, add: add, count: 1, addSum: add})
	}
	// The ball search starts from the first single-homed or switch target.
	r.t0 = -1
	for i := range r.targets {
		if r.targets[i].router >= 0 {
			r.t0 = i
			break
		}
	}
	r.tfor = members
}

// targetsFor reports whether r.targets were made for this member list.
func (r *Router) targetsFor(members []int32) bool {
	return len(members) > 0 && len(r.tfor) == len(members) && &r.tfor[0] == &members[0]
}

func (r *Router) nextTarget() {
	r.tepoch++
	if r.tepoch == 0 {
		clear(r.tslot)
		clear(r.bstamp)
		r.tepoch = 1
	}
}

// unreachableScore marks a member no switch path reaches.
const unreachableScore = int64(1) << 40

// consider scores switch s against the best score so far: a better switch
// becomes the only suspect, one abandoned exactly at the bound may tie and
// joins the suspects in r.cand.
func (r *Router) consider(s int32, best int64) int64 {
	score, ok := r.rootScore(s, best, true)
	switch {
	case ok:
		r.cand = append(r.cand[:0], s)
		return score
	case score == best:
		r.cand = append(r.cand, s)
	}
	return best
}

// ballSearch finds the best score and collects the switches that may tie
// with it in r.cand by a breadth-first walk from the first target's switch.
func (r *Router) ballSearch() int64 {
	t0 := r.targets[r.t0]
	start := int32(r.h.RouterIndex(int(t0.router)))
	ep := r.tepoch
	r.bstamp[start] = ep
	r.queue = append(r.queue[:0], start)
	r.cand = r.cand[:0]
	best := unreachableScore
	// A switch k hops from the first target's switch has score at least
	// lower(k): k + add for the largest distance, k·count + addSum for
	// the total.
	mean := r.opt.Root == RootMean
	lower := func(k int64) int64 {
		if mean {
			return k*int64(t0.count) + int64(t0.addSum)
		}
		return k + int64(t0.add)
	}
	head := 0
	for k := int64(0); head < len(r.queue) && lower(k) <= best; k++ {
		end := len(r.queue)
		for i := head; i < end; i++ {
			ri := r.queue[i]
			s := r.routers[ri]
			if lower(k) < best {
				best = r.consider(s, best)
			} else if !r.g.NodeFailed(int(s)) {
				r.cand = append(r.cand, s) // can only tie
			}
			if lower(k+1) > best {
				continue // the next layer cannot hold a root: do not queue it
			}
			for _, x := range r.adjDst[r.adjStart[ri]:r.adjStart[ri+1]] {
				if r.bstamp[x] != ep {
					r.bstamp[x] = ep
					r.queue = append(r.queue, x)
				}
			}
		}
		if len(r.queue) > len(r.routers)/4 && lower(k+1) <= best {
			// The ball covers much of the fabric (small diameter):
			// scanning the remaining switches is cheaper than walking.
			return r.scanRest(end, best)
		}
		head = end
	}
	return best
}

// scanRest finishes a ball search that grew too large: the switches
// scored so far keep their verdicts, every
// other switch is scored against the best score found. Layers from
// queue[from] on were queued but not scored.
func (r *Router) scanRest(from int, best int64) int64 {
	ep := r.tepoch
	// Unmark the queued but unscored layer so the scan scores it.
	for _, ri := range r.queue[from:] {
		r.bstamp[ri] = 0
	}
	for ri, s := range r.routers {
		if r.bstamp[ri] != ep {
			best = r.consider(s, best)
		}
	}
	return best
}

// fullSearch scores every switch (used when no member is a switch or a
// single-homed end node, or when the ball is most of the fabric).
func (r *Router) fullSearch() int64 {
	best := unreachableScore
	r.cand = r.cand[:0]
	for _, s := range r.routers {
		best = r.consider(s, best)
	}
	return best
}

// rootScore returns the score of switch s over the current targets
// (largest or total distance to the members). It gives up (ok = false)
// once the partial score reaches bound (strict) or exceeds it (!strict).
func (r *Router) rootScore(s int32, bound int64, strict bool) (int64, bool) {
	sv := int(s)
	if r.g.NodeFailed(sv) {
		return 0, false
	}
	n := len(r.targets)
	if r.pivot >= n {
		r.pivot = 0
	}
	mean := r.opt.Root == RootMean
	var score int64
	for k := 0; k < n; k++ {
		i := r.pivot + k
		if i >= n {
			i -= n
		}
		t := &r.targets[i]
		var d int64
		if t.router >= 0 && k == 0 && !r.h.Lazy() {
			// Distances between switches are symmetric; reading the
			// pivot target's row keeps consecutive switches in one
			// cache line while switches are screened. (A lazy table
			// would compute the switch's own column for it: there the
			// targets' columns are read.)
			d = int64(r.h.Hops(int(t.router), sv))
		} else if t.router >= 0 {
			// Past the pivot the switch's own row holds every target.
			d = int64(r.h.Hops(sv, int(t.router)))
		} else {
			d = int64(r.h.Hops(sv, int(t.node)))
		}
		if d >= topology.Unreachable {
			d = unreachableScore
		}
		if mean {
			score += d*int64(t.count) + int64(t.addSum)
		} else if d+int64(t.add) > score {
			score = d + int64(t.add)
		}
		if score > bound || (strict && score >= bound) {
			r.pivot = i
			return score, false
		}
	}
	return score, true
}

// unreachableError names the members that no single switch reaches: those
// unreachable from the switch that reaches the most members.
func (r *Router) unreachableError(members []int32) error {
	bestSw, bestCount := int32(-1), -1
	for _, s := range r.routers {
		if r.g.NodeFailed(int(s)) {
			continue
		}
		c := 0
		for _, m := range members {
			if r.h.Hops(int(s), int(m)) < topology.Unreachable {
				c++
			}
		}
		if c > bestCount {
			bestSw, bestCount = s, c
		}
	}
	if bestSw < 0 {
		return fmt.Errorf("the fabric has no working switch")
	}
	var names []string
	for _, m := range members {
		if r.h.Hops(int(bestSw), int(m)) >= topology.Unreachable {
			names = append(names, r.g.NodeName(int(m)))
		}
	}
	more := ""
	if len(names) > 8 {
		more = fmt.Sprintf(" and %d more", len(names)-8)
		names = names[:8]
	}
	return fmt.Errorf("fabric is disconnected: members %s%s cannot be reached from switch %s, which reaches the most members (%d of %d)",
		strings.Join(names, ", "), more, r.g.NodeName(int(bestSw)), bestCount, len(members))
}

// BuildTree builds the tree of a group from the given root with the
// router's engine, using the current loads. It does not change the loads.
func (r *Router) BuildTree(root int32, members []int32) Tree {
	t := r.buildTree(root, members)
	t.Edges = slices.Clone(t.Edges)
	return t
}

// buildTree is BuildTree with the edges in the router's scratch buffer,
// valid until the next call.
func (r *Router) buildTree(root int32, members []int32) Tree {
	r.nextEpoch()
	t := Tree{Root: root}
	switch r.algo.Kind {
	case MinHop:
		t.Edges = r.minhop(root, members)
	case SSSP:
		t.Edges = r.sssp(root, members)
	default:
		t.Edges = r.fulb(root, members)
	}
	return t
}

// hopsTo returns the min-hop distance from node v to the root switch.
func (r *Router) hopsTo(v, root int32) int {
	if r.h.RouterIndex(int(v)) >= 0 {
		return r.h.Hops(int(v), int(root))
	}
	return r.h.Hops(int(root), int(v))
}

// ---- MINHOP-MC: top-down over the min-hop table ----

func (r *Router) minhop(root int32, members []int32) []int32 {
	r.pairs = r.pairs[:0]
	for _, m := range members {
		r.pairs = append(r.pairs, pair{m: m})
	}
	edges := r.ebuf[:0]
	r.stamp[root] = r.epoch
	r.branch(root, r.pairs, &edges)
	r.ebuf = edges
	return edges
}

// branch routes the members in seg from switch s: every member goes to the
// lowest-numbered port with the fewest hops to it, then each port's subset
// is routed from the switch behind the port.
func (r *Router) branch(s int32, seg []pair, edges *[]int32) {
	for i := range seg {
		seg[i].key = r.firstMinChannel(s, seg[i].m)
	}
	slices.SortFunc(seg, func(a, b pair) int {
		if a.key != b.key {
			return int(a.key - b.key)
		}
		return int(a.m - b.m)
	})
	for i := 0; i < len(seg); {
		j := i + 1
		for j < len(seg) && seg[j].key == seg[i].key {
			j++
		}
		c := seg[i].key
		if c >= 0 {
			x := int32(r.g.Dst(int(c)))
			*edges = append(*edges, c)
			r.stamp[x] = r.epoch
			if r.h.RouterIndex(int(x)) >= 0 {
				r.branch(x, seg[i:j], edges)
			}
		}
		i = j
	}
}

// firstMinChannel returns the channel of the lowest port of switch s on a
// shortest path to m, or -1 if m is s.
func (r *Router) firstMinChannel(s, m int32) int32 {
	if s == m {
		return -1
	}
	g, h := r.g, r.h
	d := h.Hops(int(s), int(m))
	for _, c := range g.Out(int(s)) {
		if !g.Up(int(c)) {
			continue
		}
		x := g.Dst(int(c))
		if x == int(m) {
			return c
		}
		if d > 1 && h.RouterIndex(x) >= 0 && h.Hops(x, int(m)) == d-1 {
			return c
		}
	}
	panic("multicast: no min-hop port toward a reachable member")
}

// ---- FULB-MC: bottom-up with link rotation ----

func (r *Router) fulb(root int32, members []int32) []int32 {
	if !r.targetsFor(members) {
		r.makeTargets(members)
	}
	edges := r.ebuf[:0]
	ep := r.epoch
	r.stamp[root] = ep
	// A single-homed end node has one way up: the edge from its switch.
	// Members are distinct, so these edges need no stamps.
	for _, m := range members {
		if a := r.attach[m]; a.c >= 0 {
			edges = append(edges, a.c^1)
		}
	}
	// Then one walk per switch the members hang off (or switch member)
	// and per multi-homed member, in the order of the members.
	for i := range r.targets {
		cur := r.targets[i].router
		if cur < 0 {
			cur = r.targets[i].node
		}
		if r.stamp[cur] == ep {
			continue
		}
		r.stamp[cur] = ep
		edges = r.fulbWalk(cur, root, edges)
	}
	r.ebuf = edges
	return edges
}

// fulbWalk walks from cur (just added to the tree) toward the root, one
// hop closer at every step over the least-loaded link, until it meets the
// tree, and appends the edges (directed away from the root).
func (r *Router) fulbWalk(cur, root int32, edges []int32) []int32 {
	h := r.h
	ep := r.epoch
	rootRI := int32(h.RouterIndex(int(root)))
	var d int32
	if ri := h.RouterIndex(int(cur)); ri >= 0 {
		d = r.rootDist(int32(ri), root)
	} else {
		d = int32(h.Hops(int(root), int(cur)))
	}
	for cur != root {
		best, bestX := int32(-1), int32(-1)
		var bestLoad int32
		bestIn := false
		var bestG uint8
		if r.algo.OneGlobal {
			bestG = r.gminOf(cur, root)
		}
		// A memo entry equal to want says "one hop closer to the root".
		want := uint64(ep)<<8 | uint64(d-1)
		for _, hp := range r.nextHopsRI(cur) {
			c, xi := hp.c, hp.x
			switch {
			case xi < 0:
				continue
			case d == 1:
				if xi != rootRI {
					continue
				}
			case r.rd[xi] != want:
				if uint32(r.rd[xi]>>8) == ep || r.rootDist(xi, root) != d-1 {
					continue
				}
			}
			x := r.routers[xi]
			if r.algo.OneGlobal {
				gx := r.gminOf(x, root)
				if r.global[c>>1] {
					gx++
				}
				if gx != bestG {
					continue
				}
			}
			load := r.linkLoad[c>>1]
			if best >= 0 && (load > bestLoad || (load == bestLoad && bestIn)) {
				continue
			}
			in := r.stamp[x] == ep
			if best < 0 || load < bestLoad || in {
				best, bestX, bestLoad, bestIn = c, x, load, in
			}
		}
		x := bestX
		edges = append(edges, best^1)
		if bestIn {
			break
		}
		r.stamp[x] = ep
		cur = x
		d--
	}
	return edges
}

// rootDist returns the min-hop distance between router xi and the root
// switch, memoised for the current group (distances between switches are
// symmetric; the root's row keeps the lookups in one place).
func (r *Router) rootDist(xi, root int32) int32 {
	if v := r.rd[xi]; uint32(v>>8) == r.epoch {
		return int32(v & 0xff)
	}
	// Links are symmetric: asking from x to the root reads the root's
	// own column, so a lazy hop table computes one column per tree
	// rather than one per switch the walk visits.
	d := uint64(r.h.Hops(int(r.routers[xi]), int(root)))
	r.rd[xi] = uint64(r.epoch)<<8 | d
	return int32(d)
}

// attachment is the switch a single-homed end node hangs off and the
// channel from the node to it.
type attachment struct{ sw, c int32 }

// hop is a channel and the router index of its far end (-1 for a node
// that does not forward).
type hop struct{ c, x int32 }

// nextHopsRI lists the candidate channels out of v with the router index
// of their far end: router-to-router channels for a router, every working
// channel for an end node.
func (r *Router) nextHopsRI(v int32) []hop {
	if ri := r.h.RouterIndex(int(v)); ri >= 0 {
		return r.adj[r.adjStart[ri]:r.adjStart[ri+1]]
	}
	r.candHR = r.candHR[:0]
	for _, c := range r.g.Out(int(v)) {
		if r.g.Up(int(c)) {
			r.candHR = append(r.candHR, hop{c, int32(r.h.RouterIndex(r.g.Dst(int(c))))})
		}
	}
	return r.candHR
}

// gminOf returns the fewest global links on a shortest path from v to the
// root, memoised for the current group.
func (r *Router) gminOf(v, root int32) uint8 {
	if v == root {
		return 0
	}
	if r.gstamp[v] == r.epoch {
		return r.gmin[v]
	}
	d := r.hopsTo(v, root)
	best := uint8(255)
	var hops []int32
	if ri := r.h.RouterIndex(int(v)); ri >= 0 {
		hops = r.adjChan[r.adjStart[ri]:r.adjStart[ri+1]]
	} else {
		hops = r.g.Out(int(v))
	}
	for _, c := range hops {
		if !r.g.Up(int(c)) {
			continue
		}
		x := int32(r.g.Dst(int(c)))
		if x != root && (r.h.RouterIndex(int(x)) < 0 || r.h.Hops(int(x), int(root)) != d-1) {
			continue
		}
		gx := r.gminOf(x, root)
		if r.global[c>>1] && gx < 255 {
			gx++
		}
		best = min(best, gx)
	}
	r.gstamp[v] = r.epoch
	r.gmin[v] = best
	return best
}

// ---- SSSP-MC: Dijkstra from the root over all switches ----

func (r *Router) sssp(root int32, members []int32) []int32 {
	wt := r.ssspWeights()
	r.dijkstra(root, wt)
	return r.ssspTree(root, members, wt)
}

// ssspWeight is the link weight of SSSP-MC: hops dominate globals (with
// +1g), which dominate load, so a longer path never wins and loads only
// break ties among minimal paths (a path has at most 255 links).
type ssspWeight struct{ big, gw int64 }

func (r *Router) ssspWeights() ssspWeight {
	loadSpan := int64(r.maxLoad+1) * 256
	wt := ssspWeight{big: loadSpan}
	if r.algo.OneGlobal {
		wt.gw = loadSpan
		wt.big = 256*wt.gw + loadSpan
	}
	return wt
}

// of returns the weight of channel c.
func (wt ssspWeight) of(r *Router, c int32) int64 {
	w := wt.big + int64(r.linkLoad[c>>1])
	if wt.gw != 0 && r.global[c>>1] {
		w += wt.gw
	}
	return w
}

// dijkstra labels every switch reachable from root (a switch) with its
// distance and the channel it is reached by (done, dist, parent of this
// epoch).
func (r *Router) dijkstra(root int32, wt ssspWeight) {
	g, h := r.g, r.h
	ep := r.epoch
	ri := int32(h.RouterIndex(int(root)))
	r.dstamp[ri], r.dist[ri], r.parent[ri] = ep, 0, -1
	r.heap = append(r.heap[:0], heapItem{0, ri})
	for len(r.heap) > 0 {
		it := r.pop()
		u := it.v
		if r.done[u] == ep || it.key != r.dist[u] {
			continue
		}
		r.done[u] = ep
		for _, c := range r.adjChan[r.adjStart[u]:r.adjStart[u+1]] {
			v := int32(h.RouterIndex(g.Dst(int(c))))
			if r.done[v] == ep {
				continue
			}
			nd := it.key + wt.of(r, c)
			if r.dstamp[v] != ep || nd < r.dist[v] {
				r.dstamp[v], r.dist[v], r.parent[v] = ep, nd, c
				r.push(heapItem{nd, v})
			}
		}
	}
}

// ssspTree returns the edges of the tree: the union of the shortest-path
// tree's paths from root to every member, each path followed back until it
// meets one already taken.
func (r *Router) ssspTree(root int32, members []int32, wt ssspWeight) []int32 {
	g, h := r.g, r.h
	ep := r.epoch
	edges := r.ebuf[:0]
	r.stamp[root] = ep
	for _, m := range members {
		if r.stamp[m] == ep {
			continue
		}
		r.stamp[m] = ep
		cur := m
		if h.RouterIndex(int(m)) < 0 {
			best := r.endNodeUplink(m, wt)
			x := int32(g.Dst(int(best)))
			edges = append(edges, best^1)
			if r.stamp[x] == ep {
				continue
			}
			r.stamp[x] = ep
			cur = x
		}
		for cur != root {
			c := r.parent[h.RouterIndex(int(cur))]
			edges = append(edges, c)
			p := int32(g.Src(int(c)))
			if r.stamp[p] == ep {
				break
			}
			r.stamp[p] = ep
			cur = p
		}
	}
	r.ebuf = edges
	return edges
}

// endNodeUplink returns the channel from end node m to the neighbouring
// switch with the smallest label (first port on ties); m hangs off it.
func (r *Router) endNodeUplink(m int32, wt ssspWeight) int32 {
	g, h := r.g, r.h
	ep := r.epoch
	best, bestKey := int32(-1), int64(0)
	for _, c := range g.Out(int(m)) {
		if !g.Up(int(c)) {
			continue
		}
		x := h.RouterIndex(g.Dst(int(c)))
		if x < 0 || r.done[x] != ep {
			continue
		}
		k := r.dist[x] + wt.of(r, c)
		if best < 0 || k < bestKey {
			best, bestKey = c, k
		}
	}
	return best
}

func (r *Router) push(it heapItem) {
	r.heap = append(r.heap, it)
	i := len(r.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if r.heap[p].key <= it.key {
			break
		}
		r.heap[i] = r.heap[p]
		i = p
	}
	r.heap[i] = it
}

func (r *Router) pop() heapItem {
	top := r.heap[0]
	last := r.heap[len(r.heap)-1]
	r.heap = r.heap[:len(r.heap)-1]
	n := len(r.heap)
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && r.heap[c+1].key < r.heap[c].key {
			c++
		}
		if r.heap[c].key >= last.key {
			break
		}
		r.heap[i] = r.heap[c]
		i = c
	}
	r.heap[i] = last
	return top
}
