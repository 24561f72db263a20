package topology

import (
	"math"
	"slices"
	"sort"

	"github.com/icn-hpc/icn/internal/par"
)

// ---- edge connectivity ----

// EdgeConnectivity returns the fewest links whose removal disconnects the
// live network, whether that value is exact, and the method used. Exact
// methods: 0 if already disconnected; the degree for fault-free
// vertex-transitive graphs (Mader's theorem); otherwise unit-capacity
// max-flow from a minimum-degree node to every other node (λ = min over t
// of maxflow(s, t)), in parallel. Beyond the work budget the minimum degree
// is returned as an upper bound.
func EdgeConnectivity(g *Graph, o MetricsOptions) (int, bool, string) {
	live := liveNodes(g)
	if len(live) <= 1 {
		return 0, true, "trivial"
	}
	if !connectedLive(g, live) {
		return 0, true, "disconnected"
	}
	s, delta := -1, math.MaxInt
	for _, v := range live {
		if d := liveDegree(g, v); d < delta {
			s, delta = v, d
		}
	}
	if delta == 1 {
		return 1, true, "a connected network with a node of degree 1"
	}
	if !o.ForceGeneric && plainGrid(g) && !g.HasFaults() {
		return gridConnectivity(g), true, "closed form (product of rings and lines: λ(G□H) = min(δ(G)+δ(H), λ(G)·|H|, λ(H)·|G|))"
	}
	if !o.ForceGeneric && g.Shape().VertexTransitive && !g.HasFaults() && simple(g) {
		return delta, true, "degree (vertex-transitive graph, Mader's theorem)"
	}
	if !o.ForceGeneric && torusFewFaults(g, delta) {
		return delta, true, "minimum degree (a torus with few failures: no cut of two or more nodes a side is smaller)"
	}
	budget := o.ConnectivityBudget
	if budget == 0 {
		budget = defaultConnectivityBudget
	}
	work := float64(len(live)) * float64(delta) * float64(2*g.NumLinks()+g.NumNodes())
	if work > budget {
		return delta, false, "minimum degree (upper bound; max-flow over budget)"
	}
	workers := par.Workers(o.Workers)
	type scratch struct {
		flow    []int8
		touched []int32
		prev    []int32 // channel used to reach node, -1
		seen    []int32 // BFS stamp
		stamp   int32
		queue   []int32
		_       [64]byte // per worker: keeps what workers write off each other's cache lines
	}
	sc := make([]scratch, workers)
	for i := range sc {
		sc[i].flow = make([]int8, g.NumLinks())
		sc[i].prev = make([]int32, g.NumNodes())
		sc[i].seen = make([]int32, g.NumNodes())
	}
	best := int64(delta)
	var bestMu = make(chan struct{}, 1)
	bestMu <- struct{}{}
	getBest := func() int {
		<-bestMu
		b := best
		bestMu <- struct{}{}
		return int(b)
	}
	par.For(len(live), workers, func(w, i int) {
		t := live[i]
		if t == s || o.cancelled() {
			return
		}
		x := &sc[w]
		limit := getBest()
		f := maxFlowUnit(g, s, t, limit, x.flow, &x.touched, x.prev, x.seen, &x.stamp, &x.queue)
		if f < limit {
			<-bestMu
			if int64(f) < best {
				best = int64(f)
			}
			bestMu <- struct{}{}
		}
	})
	return int(best), true, "max-flow from a minimum-degree node to every node"
}

// gridConnectivity is the edge connectivity of a fault-free plain grid,
// the Cartesian product of its dimensions: a ring (two links per node,
// both to the one neighbour on a ring of 2) has λ = δ = 2, a line λ = δ =
// 1, and λ(G□H) = min(δ(G)+δ(H), λ(G)·|H|, λ(H)·|G|) for connected G, H
// of at least two nodes (Špacapan, 2008). Each term is a cut (a node's
// links, a cut of G in every copy, a cut of H in every copy), and it is
// not always the degree: torus:2x2:mesh=Y has degree 3 and connectivity 2.
func gridConnectivity(g *Graph) int {
	lam, delta, size := 0, 0, 1
	for i, d := range g.Dims() {
		if d < 2 {
			continue // a single node: the product is unchanged
		}
		f := 1
		if g.Wrap()[i] {
			f = 2
		}
		if size == 1 {
			lam, delta, size = f, f, d
			continue
		}
		lam = min(delta+f, lam*d, f*size)
		delta += f
		size *= d
	}
	return lam
}

// simple reports whether g has no parallel links (Mader's theorem is
// about simple graphs: a torus with a ring of 2 and a line of 2, two links
// between the same pair of nodes, is vertex-transitive of degree 3 and
// connectivity 2).
func simple(g *Graph) bool {
	seen := map[int]int{}
	for v := range g.NumNodes() {
		for _, c := range g.Out(v) {
			w := g.Dst(int(c))
			if w == v || seen[w] == v+1 {
				return false
			}
			seen[w] = v + 1
		}
	}
	return true
}

// torusFewFaults reports whether the failures of a plain torus (one ring
// per dimension, every size ≥ 3) are too few to make any cut with two or
// more live nodes on each side smaller than delta, the minimum live
// degree; the edge connectivity is then delta.
//
// In such a torus of d dimensions every set S with |S| ≥ 2 and
// |V∖S| ≥ 2 has at least 4d−2 links leaving it. By induction on d (the
// ring, d = 1, has 2): cut the torus into n ≥ 3 layers (copies of the
// (d−1)-torus H, whose edge connectivity is its degree 2(d−1)) crossed by
// |H| rings. A layer S cuts partly costs ≥ 2(d−1), a ring it cuts partly
// ≥ 2. Three partial layers cost ≥ 6(d−1) ≥ 4d−2; two, plus a partial
// ring, ≥ 4d−2 (two partial layers and no partial ring would make S a
// union of rings, cutting all n layers); none makes S a union of layers,
// cutting all |H| ≥ 2d−1 rings; one, with a full and an empty layer
// elsewhere, cuts all |H| rings; one with all other layers empty holds
// S: 2 ≤ |S| ≤ |H|−2 costs 4d−6 in the layer (induction) and 2 for each
// of |S| ≥ 2 rings, |S| = |H|−1 costs 2(d−1) + 2(|H|−1) ≥ 4d−2 (all
// other layers full: the same for V∖S).
//
// A cut of the live nodes with two or more on each side, with every
// failed node put on the side of most of its live neighbours, is such a
// set: the failures remove at most the failed links between live nodes,
// half the live links of each failed node and the links between failed
// nodes from its 4d−2, so it keeps at least 4d−2 − that.
func torusFewFaults(g *Graph, delta int) bool {
	dims := g.Dims()
	if g.Shape().Family != "torus" || !g.Direct() {
		return false
	}
	for _, n := range dims {
		if n < 3 {
			return false
		}
	}
	lost := 0
	for _, l := range g.FailedLinks() {
		if lk := g.Link(l); !g.NodeFailed(int(lk.A)) && !g.NodeFailed(int(lk.B)) {
			lost++
		}
	}
	for _, x := range g.FailedNodes() {
		live := 0
		for _, c := range g.Out(x) {
			if w := g.Dst(int(c)); g.NodeFailed(w) {
				if w > x {
					lost++ // a link between failed nodes, counted once
				}
			} else {
				live++
			}
		}
		lost += live / 2
	}
	return 4*len(dims)-2-lost >= delta
}

// maxFlowUnit computes min(limit, maxflow(s,t)) with unit link capacities
// by BFS augmenting paths. flow must be zero on entry and is zero on exit.
func maxFlowUnit(g *Graph, s, t, limit int, flow []int8, touched *[]int32, prev, seen []int32, stamp *int32, queue *[]int32) int {
	f := 0
	for f < limit {
		*stamp++
		st := *stamp
		q := append((*queue)[:0], int32(s))
		seen[s] = st
		found := false
		for head := 0; head < len(q) && !found; head++ {
			v := int(q[head])
			for _, c := range g.Out(v) {
				ci := int(c)
				if !g.Up(ci) {
					continue
				}
				fl := flow[ci>>1]
				if (ci&1 == 0 && fl >= 1) || (ci&1 == 1 && fl <= -1) {
					continue // no residual capacity
				}
				w := g.Dst(ci)
				if seen[w] == st {
					continue
				}
				seen[w] = st
				prev[w] = c
				if w == t {
					found = true
					break
				}
				q = append(q, int32(w))
			}
		}
		*queue = q
		if !found {
			break
		}
		for v := t; v != s; {
			c := int(prev[v])
			l := c >> 1
			if flow[l] == 0 {
				*touched = append(*touched, int32(l))
			}
			if c&1 == 0 {
				flow[l]++
			} else {
				flow[l]--
			}
			v = g.Src(c)
		}
		f++
	}
	for _, l := range *touched {
		flow[l] = 0
	}
	*touched = (*touched)[:0]
	return f
}

func liveNodes(g *Graph) []int {
	var out []int
	for v := 0; v < g.NumNodes(); v++ {
		if !g.NodeFailed(v) {
			out = append(out, v)
		}
	}
	return out
}

// connectedLive reports whether the live nodes form one component (all
// nodes may forward here: this is about the cable graph).
func connectedLive(g *Graph, live []int) bool {
	seen := make([]bool, g.NumNodes())
	stack := []int{live[0]}
	seen[live[0]] = true
	count := 1
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range g.Out(v) {
			if !g.Up(int(c)) {
				continue
			}
			w := g.Dst(int(c))
			if !seen[w] {
				seen[w] = true
				count++
				stack = append(stack, w)
			}
		}
	}
	return count == len(live)
}

// ---- bisection ----

// Bisection returns the fewest live links whose removal splits the
// terminals into halves of ⌊T/2⌋ and ⌈T/2⌉ (switches may go to either side),
// whether the value is exact, and the method. Exact: closed forms for
// fault-free tori/meshes whose largest dimension is even, hypercubes,
// complete graphs, rings and complete binary trees; branch and bound for
// small networks. Otherwise the best of several heuristic partitions
// (straight coordinate cuts, id and BFS orders, refined by local search), an
// upper bound.
func Bisection(g *Graph, o MetricsOptions) (int, bool, string) {
	terms := Terminals(g)
	if len(terms) < 2 {
		return 0, true, "trivial"
	}
	if !o.ForceGeneric && !g.HasFaults() {
		if w, ok := closedBisection(g); ok {
			return w, true, "closed form"
		}
	}
	var straight int
	straightOK := false
	if !o.ForceGeneric && g.HasFaults() {
		var exact bool
		if straight, exact, straightOK = straightCutThroughFailures(g); exact {
			return straight, true, "closed form less the failed links (a straight cut crosses them all)"
		}
	}
	ub, side := heuristicBisection(g, terms, o)
	if straightOK && straight < ub {
		ub, side = straight, nil
	}
	budget := o.BisectionBudget
	if budget == 0 {
		budget = defaultBisectionBudget
	}
	if w, ok := exactBisection(g, terms, ub, side, budget, o.cancelled); ok {
		return w, true, "branch and bound"
	}
	return ub, false, "upper bound (heuristic partition with local search)"
}

// straightCutThroughFailures: in a plain torus with failed links (no
// failed node) whose bisection width w0 without failures has a closed
// form, every balanced cut keeps at least w0 − k of its links (k failed
// links), and a straight cut across a largest dimension keeps w0 less the
// failed links it crosses. It returns the best such cut placed through a
// failed link, whether it meets the bound w0 − k (then it is the
// bisection width), and ok false where none applies.
func straightCutThroughFailures(g *Graph) (width int, exact, ok bool) {
	failed := g.FailedLinks()
	if g.Shape().Family != "torus" || len(g.FailedNodes()) > 0 || len(failed) == 0 {
		return 0, false, false
	}
	w0, ok := closedBisection(g)
	if !ok {
		return 0, false, false
	}
	dims := g.Dims()
	dmax := slices.Max(dims)
	best := 0
	for _, l := range failed {
		lk := g.Link(l)
		i := int(lk.Dim)
		if i < 0 || dims[i] != dmax {
			continue
		}
		// The cut between x0−1 and x0 and between x0+n/2−1 and x0+n/2
		// along dimension i.
		x0, crossing := g.CoordAt(int(lk.B), i), 0
		for _, f := range failed {
			fk := g.Link(f)
			if int(fk.Dim) != i {
				continue
			}
			if rel := (g.CoordAt(int(fk.B), i) - x0 + dmax) % dmax; rel == 0 || rel == dmax/2 {
				crossing++
			}
		}
		best = max(best, crossing)
	}
	if best == 0 {
		return 0, false, false
	}
	return w0 - best, best == len(failed), true
}

func closedBisection(g *Graph) (int, bool) {
	n := g.NumNodes()
	sh := g.Shape()
	switch sh.Family {
	case "torus", "mesh", "mixed":
		return gridBisection(g)
	case "hypercube":
		return n / 2, true
	case "complete":
		return (n / 2) * ((n + 1) / 2), true
	case "tree":
		if n >= 3 && (n+1)&n == 0 { // n = 2^k - 1
			return 1, true
		}
	}
	return 0, false
}

// gridBisection is the bisection width of a fault-free plain grid when
// a lower bound meets a straight cut. A straight cut across a dimension
// of even size k splits the nodes in halves and cuts c·N/k links, c = 2
// on a ring (it crosses it twice), 1 on a line. Lower bound: route every
// ordered pair of nodes dimension by dimension, the short way round
// rings (both ways, half each, at a tie). Dimension i then carries, on
// its most loaded channel, L_i = (N/k)·k²/8 on a ring of even k,
// (N/k)(k²−1)/8 of odd k, (N/k)⌊k²/4⌋ on a line (its middle channel). The
// N²/4 pairs from one half to the other all cross a balanced cut, and a
// cut link carries at most max L_i of them, so a cut has at least
// ⌈N²/(4 max L_i)⌉ links: 2N/k for a ring of even k, N/k for a line of
// even k. The width is exact when the best straight cut meets that bound
// (always for a torus or a mesh whose largest dimension is even, and
// Tofu's 24x23x24x2x3x2 with W, U meshes).
func gridBisection(g *Graph) (int, bool) {
	n := g.NumNodes()
	dims, wrap := g.Dims(), g.Wrap()
	if len(dims) == 1 {
		if wrap[0] {
			return 2, true
		}
		return 1, true
	}
	best := -1 // best straight cut
	// the bound as a fraction num/den, compared exactly: N²/(4 L_i) over
	// the dimension with the largest load (k < 2^15, N < 2^22)
	bNum, bDen := int64(-1), int64(1)
	for i, k := range dims {
		if k < 2 {
			continue
		}
		c, kk := int64(2), int64(k)
		if !wrap[i] {
			c = 1
		}
		if k%2 == 0 {
			if w := int(c) * n / k; best < 0 || w < best {
				best = w
			}
		}
		// N²/(4 L_i) = N·num/den
		var num, den int64
		switch {
		case wrap[i] && k%2 == 0:
			num, den = 2, kk
		case wrap[i]:
			num, den = 2*kk, kk*kk-1
		case k%2 == 0:
			num, den = 1, kk
		default:
			num, den = kk, kk*kk-1
		}
		if bNum < 0 || num*bDen < bNum*den {
			bNum, bDen = num, den
		}
	}
	if best < 0 || bNum < 0 {
		return 0, false
	}
	lb := (int64(n)*bNum + bDen - 1) / bDen
	return best, int64(best) == lb
}

// cutSize counts live links between the two sides (side[v] in {0,1}).
func cutSize(g *Graph, side []int8) int {
	cut := 0
	for l, lk := range g.links {
		if !g.LinkFailed(l) && side[lk.A] != side[lk.B] {
			cut++
		}
	}
	return cut
}

// heuristicBisection returns an upper bound and its partition.
func heuristicBisection(g *Graph, terms []int, o MetricsOptions) (int, []int8) {
	n := g.NumNodes()
	half := len(terms) / 2
	var orders [][]int
	orders = append(orders, terms)
	if g.HasCoords() {
		for d := range g.Dims() {
			ord := append([]int(nil), terms...)
			sort.SliceStable(ord, func(i, j int) bool { return g.CoordAt(ord[i], d) < g.CoordAt(ord[j], d) })
			orders = append(orders, ord)
		}
	}
	// BFS order from the first terminal.
	dist := make([]int32, n)
	BFS(g, terms[0], dist, nil)
	ord := append([]int(nil), terms...)
	sort.SliceStable(ord, func(i, j int) bool { return dist[ord[i]] < dist[ord[j]] })
	orders = append(orders, ord)

	best := math.MaxInt
	var bestSide []int8
	for _, ord := range orders {
		side := make([]int8, n)
		for i := range side {
			side[i] = -1
		}
		for i, v := range ord {
			if i < half {
				side[v] = 0
			} else {
				side[v] = 1
			}
		}
		placeFree(g, side)
		refine(g, side, terms, n <= 2000)
		if c := cutSize(g, side); c < best {
			best, bestSide = c, side
		}
	}
	return best, bestSide
}

// placeFree assigns non-terminal nodes (switches of an indirect network,
// failed nodes, and any node still at -1): first by spreading outwards from
// the decided terminals (majority of decided neighbours), then by moving a
// node to the other side while that strictly lowers the cut.
func placeFree(g *Graph, side []int8) {
	direct := g.Direct()
	var free []int
	for v := range side {
		if side[v] < 0 || (!direct && g.Kind(v) == Switch) || g.NodeFailed(v) {
			free = append(free, v)
			side[v] = -1
		}
	}
	for changed := true; changed; {
		changed = false
		for _, v := range free {
			if side[v] >= 0 {
				continue
			}
			cnt := [2]int{}
			for _, c := range g.Out(v) {
				if s := side[g.Dst(int(c))]; s >= 0 && g.Up(int(c)) {
					cnt[s]++
				}
			}
			if cnt[0]+cnt[1] > 0 {
				side[v] = 0
				if cnt[1] > cnt[0] {
					side[v] = 1
				}
				changed = true
			}
		}
	}
	for _, v := range free {
		if side[v] < 0 {
			side[v] = 0
		}
	}
	for pass := 0; pass < 20; pass++ {
		changed := false
		for _, v := range free {
			cnt := [2]int{}
			for _, c := range g.Out(v) {
				if g.Up(int(c)) {
					cnt[side[g.Dst(int(c))]]++
				}
			}
			if cnt[1-side[v]] > cnt[side[v]] {
				side[v] = 1 - side[v]
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// refine improves a balanced partition by swapping terminal pairs with
// positive gain (Kernighan–Lin style, greedy), re-placing free nodes.
func refine(g *Graph, side []int8, terms []int, enabled bool) {
	if !enabled {
		return
	}
	gain := func(v int) int {
		ext, in := 0, 0
		for _, c := range g.Out(v) {
			if !g.Up(int(c)) {
				continue
			}
			if side[g.Dst(int(c))] != side[v] {
				ext++
			} else {
				in++
			}
		}
		return ext - in
	}
	cur := cutSize(g, side)
	for pass := 0; pass < 8; pass++ {
		improved := false
		var a, b []int
		for _, v := range terms {
			if side[v] == 0 {
				a = append(a, v)
			} else {
				b = append(b, v)
			}
		}
		sort.Slice(a, func(i, j int) bool { return gain(a[i]) > gain(a[j]) })
		sort.Slice(b, func(i, j int) bool { return gain(b[i]) > gain(b[j]) })
		lim := min(len(a), len(b), 16)
		for i := 0; i < lim; i++ {
			for j := 0; j < lim; j++ {
				x, y := a[i], b[j]
				if side[x] != 0 || side[y] != 1 {
					continue
				}
				side[x], side[y] = 1, 0
				placeFree(g, side)
				if c := cutSize(g, side); c < cur {
					cur = c
					improved = true
				} else {
					side[x], side[y] = 0, 1
					placeFree(g, side)
				}
			}
		}
		if !improved {
			return
		}
	}
}

// exactBisection runs branch and bound with the given upper bound. It gives
// up (ok=false) when the search exceeds budget node expansions or when
// cancelled says so.
func exactBisection(g *Graph, terms []int, ub int, _ []int8, budget float64, cancelled func() bool) (int, bool) {
	live := liveNodes(g)
	if len(live) > 64 {
		return 0, false
	}
	n := g.NumNodes()
	s := &bisectionSearch{
		isTerm:    make([]bool, n),
		side:      make([]int8, n),
		lo:        len(terms) / 2,
		hi:        (len(terms) + 1) / 2,
		best:      ub + 1, // find anything ≤ ub
		budget:    budget,
		cancelled: cancelled,
	}
	for _, t := range terms {
		s.isTerm[t] = true
	}
	s.order = bfsOrder(g, live)
	s.earlier = earlierNeighbours(g, s.order)
	s.branch(0, 0, 0, 0)
	if s.aborted {
		return 0, false
	}
	if s.best > ub {
		return ub, true // the heuristic value was optimal
	}
	return s.best, true
}

// bfsOrder orders the live nodes breadth first from each unseen one in
// turn, so that neighbours are assigned early in the search.
func bfsOrder(g *Graph, live []int) []int {
	order := make([]int, 0, len(live))
	seen := make([]bool, g.NumNodes())
	for _, start := range live {
		if seen[start] {
			continue
		}
		q := []int{start}
		seen[start] = true
		for h := 0; h < len(q); h++ {
			v := q[h]
			order = append(order, v)
			for _, c := range g.Out(v) {
				if !g.Up(int(c)) {
					continue
				}
				if w := g.Dst(int(c)); !seen[w] {
					seen[w] = true
					q = append(q, w)
				}
			}
		}
	}
	return order
}

// earlierNeighbours lists, for each node, its live neighbours that come
// earlier in order (one entry per channel).
func earlierNeighbours(g *Graph, order []int) [][]int {
	n := g.NumNodes()
	pos := make([]int, n)
	for i, v := range order {
		pos[v] = i
	}
	earlier := make([][]int, n)
	for _, v := range order {
		for _, c := range g.Out(v) {
			if !g.Up(int(c)) {
				continue
			}
			w := g.Dst(int(c))
			if pos[w] < pos[v] {
				earlier[v] = append(earlier[v], w)
			}
		}
	}
	return earlier
}

// bisectionSearch is the state of the branch and bound over side
// assignments in BFS order.
type bisectionSearch struct {
	order      []int
	earlier    [][]int
	isTerm     []bool
	side       []int8
	lo, hi     int // terminals on each side of a balanced cut
	best       int
	budget     float64
	expansions float64
	aborted    bool
	cancelled  func() bool // asked every 4 096 expansions
}

// branch assigns order[i] to each side in turn, given the cut so far and
// the terminals t0, t1 already on sides 0 and 1, pruning at the best cut
// found and at imbalance; it aborts past the expansion budget.
func (s *bisectionSearch) branch(i, cut, t0, t1 int) {
	if s.aborted {
		return
	}
	s.expansions++
	if s.expansions > s.budget || (int64(s.expansions)%4096 == 0 && s.cancelled()) {
		s.aborted = true
		return
	}
	if cut >= s.best {
		return
	}
	if i == len(s.order) {
		if (t0 == s.lo && t1 == s.hi) || (t0 == s.hi && t1 == s.lo) {
			s.best = cut
		}
		return
	}
	// Balance feasibility.
	if t0 > s.hi || t1 > s.hi {
		return
	}
	v := s.order[i]
	for sd := int8(0); sd < 2; sd++ {
		if i == 0 && sd == 1 {
			break // symmetry: first node on side 0
		}
		add := 0
		for _, w := range s.earlier[v] {
			if s.side[w] != sd {
				add++
			}
		}
		s.side[v] = sd
		nt0, nt1 := t0, t1
		if s.isTerm[v] {
			if sd == 0 {
				nt0++
			} else {
				nt1++
			}
		}
		s.branch(i+1, cut+add, nt0, nt1)
	}
}
