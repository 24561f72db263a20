package unicast

import (
	"math"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/par"
)

// routeSSSP is single-source-shortest-path routing after OpenSM's sssp:
// destinations one after the other, each routed by a shortest-path tree
// whose link weights are the end-port routes the link already carries;
// after routing a destination every channel on the new routes gains the
// number of end ports whose route uses it. Unlike OpenSM (whose weights
// start at 1, so a detour over idle links can win), a route never takes
// more hops than necessary: the weight of a path is (hops, load) compared
// lexicographically, the convention SPEC §4 gives for SSSP-MC ("plus a
// large constant so longer paths never win"). On dragonfly:a=12,p=6,h=6
// this cut the balance factor from 41% to 15%, the longest route from 14
// links to 5, and dfsssp's lanes from more than 8 to 6. Destinations are
// end ports (round-robin over switches, busiest switches first), then
// switch LIDs. Each tree sees the weights of all earlier routes, so
// destinations are routed in sequence (an earlier version that let
// parallel destinations share a weight snapshot lost balance: 180 → 236
// routes on the busiest link of fattree:m=8,n=3). The parallelism is
// elsewhere: the two destination orders run at the same time, and with
// more workers than orders each destination's tree is split over a team
// of workers, switch by switch within a BFS layer; either way the tables
// are those of the sequential loop.
//
// Because only shortest paths are allowed, the tree is found by a BFS from
// the destination switch followed by a pass over the BFS layers that keeps,
// for every switch, the next hop minimising load; this is Dijkstra with
// lexicographic weights, in O(links) per destination and without a heap.
func routeSSSP(f *Fabric, o Options, ds []dest) (*Tables, error) {
	t, _, err := routeSSSPState(f, o, ds)
	return t, err
}

// routeSSSPState is routeSSSP, also returning its final state.
func routeSSSPState(f *Fabric, o Options, ds []dest) (*Tables, *ssspState, error) {
	adj := switchAdjacency(f)
	w := par.Workers(o.Workers)
	return routeSSSPWith(f, o, ds, adj, ssspTrees(f, adj, o.Workers, o.ssspLimits().treesMaxBytes, o.ssspTeam(len(f.switches), w)), w)
}

// ssspTrees returns the BFS layers from every live switch, computed on all
// cores, or nil when they would not fit in memory (routeDest then searches
// per destination). They depend only on the destination switch, so the
// destination orders share them. With team ≥ 2 every layer is sorted by
// the numbers a team of that size gives the switches (teamPerm), so each
// member's switches of a layer are adjacent; the order within a layer
// does not change the routes.
func ssspTrees(f *Fabric, adj *swAdj, workers int, maxBytes float64, team int) []bfsTree {
	S := len(f.switches)
	if float64(S)*float64(S)*8 > maxBytes {
		return nil
	}
	var perm []int32
	if team >= 2 {
		perm, _ = teamPerm(S, team)
	}
	trees := make([]bfsTree, S)
	par.For(S, workers, func(_, x int) {
		if f.switchAlive(x) {
			trees[x] = bfsLayers(adj, x, nil)
			if perm != nil {
				trees[x].sortLayers(perm, team)
			}
		}
	})
	return trees
}

// sortLayers sorts every layer of tr by perm and records the team size.
func (tr *bfsTree) sortLayers(perm []int32, team int) {
	for h := 0; h+1 < len(tr.bounds); h++ {
		slices.SortFunc(tr.order[tr.bounds[h]:tr.bounds[h+1]], func(a, b int32) int { return int(perm[a]) - int(perm[b]) })
	}
	tr.team = int32(team)
}

// ssspTeam is the size of the team that routes one destination order
// with workers workers on a fabric of S switches (1: no team).
func (o Options) ssspTeam(S, workers int) int {
	// A team larger than GOMAXPROCS would wait at every barrier for a
	// member that has no processor. (Members are numbered in a byte.)
	n := min(workers, runtime.GOMAXPROCS(0), 256)
	if n < 2 || S < o.ssspLimits().teamMinSwitches {
		return 1
	}
	return n
}

// ssspLimits are sssp's thresholds (Options.sssp; nil: the defaults).
// They choose between code paths that give the same tables; tests move
// them to reach every path.
type ssspLimits struct {
	// teamMinSwitches is the fabric size from which sssp splits each
	// destination over several workers (below it the barriers cost more
	// than the work they share).
	teamMinSwitches int
	// treesMaxBytes bounds the memory of the BFS layers kept per switch.
	treesMaxBytes float64
}

var defaultSSSPLimits = ssspLimits{teamMinSwitches: 64, treesMaxBytes: 1 << 30}

func (o Options) ssspLimits() ssspLimits {
	if o.sssp != nil {
		return *o.sssp
	}
	return defaultSSSPLimits
}

// routeSSSPWith routes the destinations ds in order with the given
// adjacency and BFS layers (nil: searched per destination) on workers
// goroutines. The tables do not depend on workers: a destination's routes
// are split over the workers switch by switch, each switch's choice reads
// only the weights and the nearer switches' costs, and the weights grow
// by sums, whose order does not matter.
func routeSSSPWith(f *Fabric, o Options, ds []dest, adj *swAdj, trees []bfsTree, workers int) (*Tables, *ssspState, error) {
	S := len(f.switches)
	t := NewTables(f, o.Engine)
	fillLocal(t)
	st := &ssspState{adj: adj, S: S, weight: make([]int64, f.G.NumChannels()), srcCount: liveEndPortsPerSwitch(f), trees: trees}
	n := o.ssspTeam(S, workers)
	st.split(n)
	st.wE = make([]int64, len(st.in.nb))
	st.next, st.acc = make([]int32, S), make([]int64, S)
	for i := range st.cost {
		st.cost[i] = make([]int64, S)
		for s := range st.cost[i] {
			st.cost[i][s] = costUnset
		}
	}
	// Routes are written LID-major (one destination touches every switch)
	// and transposed at the end.
	col := make([]uint8, t.stride*S)
	par.For(S, workers, func(_, s int) {
		for lid := range t.stride {
			col[lid*S+s] = noPort
		}
	})
	var err error
	if n == 1 {
		err = st.routeAll(o, ds, col)
	} else {
		err = st.routeAllTeams(o, ds, col)
	}
	if err != nil {
		return nil, nil, err
	}
	// Back to switch indices: the weights by channel, the columns by
	// switch.
	for e, w := range st.wE {
		st.weight[st.in.ch[e]] = w
	}
	if n > 1 {
		scratch := make([][]uint8, par.Workers(workers))
		par.For(t.stride, workers, func(w, lid int) {
			if scratch[w] == nil {
				scratch[w] = make([]uint8, S)
			}
			c := col[lid*S : (lid+1)*S]
			copy(scratch[w], c)
			for u, p := range st.perm {
				c[u] = scratch[w][p]
			}
		})
	}
	par.For(S, workers, func(_, s int) {
		row := t.lft[s*t.stride : (s+1)*t.stride]
		for lid := range row {
			if p := col[lid*S+s]; p != noPort {
				row[lid] = p
			}
		}
	})
	st.ds, st.trees, st.tmp, st.colT = ds, nil, bfsTree{}, col
	st.in, st.perm, st.src, st.wE, st.cost, st.next, st.acc = nil, nil, nil, nil, [2][]int64{}, nil, nil
	return t, st, nil
}

// split deals the switches to n members in blocks of ownBlock, round
// robin, and numbers them member by member (st.perm), so that what a
// member writes (its switches' costs, next hops, sources, link weights
// and table entries) lies in one range of memory that no other member
// writes. st.in is the adjacency in that numbering, st.src the end ports
// per switch; with n = 1 the numbering is the switch indices.
func (st *ssspState) split(n int) {
	S := st.S
	st.perm, st.lo = teamPerm(S, n)
	if n == 1 {
		st.in, st.src = st.adj, st.srcCount
		return
	}
	in := &swAdj{start: make([]int32, S+1)}
	inv := make([]int32, S)
	for u, p := range st.perm {
		inv[p] = int32(u)
	}
	st.src = make([]int64, S)
	for p, u := range inv {
		st.src[p] = st.srcCount[u]
		for e := st.adj.start[u]; e < st.adj.start[u+1]; e++ {
			in.nb = append(in.nb, st.perm[st.adj.nb[e]])
			in.port = append(in.port, st.adj.port[e])
			in.ch = append(in.ch, st.adj.ch[e])
		}
		in.start[p+1] = int32(len(in.nb))
	}
	st.in = in
}

// teamPerm numbers S switches for a team of n members: blocks of
// ownBlock switches dealt round robin, numbered member by member; member
// w owns numbers lo[w]..lo[w+1]-1.
func teamPerm(S, n int) (perm, lo []int32) {
	perm, lo = make([]int32, S), make([]int32, n+1)
	k := int32(0)
	for w := range n {
		lo[w] = k
		for b := w * ownBlock; b < S; b += n * ownBlock {
			for u := b; u < min(b+ownBlock, S); u++ {
				perm[u], k = k, k+1
			}
		}
	}
	lo[n] = k
	return perm, lo
}

// ownBlock is how many switches of consecutive index a member owns: a
// multiple of the int64 entries in a cache line.
const ownBlock = 16

// routeAll routes ds one after the other on the calling goroutine.
func (st *ssspState) routeAll(o Options, ds []dest, col []uint8) error {
	S := st.S
	for k, d := range ds {
		st.routeDest(d, col[d.lid*S:(d.lid+1)*S])
		if k%64 == 63 {
			o.Progress(64)
			if o.ctx != nil && o.ctx.Err() != nil {
				return o.ctx.Err()
			}
		}
	}
	return nil
}

// liveEndPortsPerSwitch counts the live end ports of every switch.
func liveEndPortsPerSwitch(f *Fabric) []int64 {
	srcCount := make([]int64, len(f.switches))
	for s := range srcCount {
		for _, ti := range f.termsOf(s) {
			if f.termAlive(int(ti)) {
				srcCount[s]++
			}
		}
	}
	return srcCount
}

// ssspState is routeSSSP's state across destinations: the link weights
// (routes so far) and, while routing, per-switch scratch. While routing,
// switches are numbered by st.perm (see split) and the scratch is
// indexed that way.
type ssspState struct {
	adj      *swAdj // switch adjacency by switch index
	S        int
	weight   []int64   // per channel (after routing)
	srcCount []int64   // per switch, its live end ports
	trees    []bfsTree // per switch: its BFS layers (nil: per destination)
	tmp      bfsTree   // the layers of the current destination when trees is nil
	ds       []dest    // the destination order used
	colT     []uint8   // the tables LID-major ([lid*S+s]), for repairs

	// While routing:
	perm  []int32    // per switch index, its number
	lo    []int32    // member w owns numbers lo[w]..lo[w+1]-1
	in    *swAdj     // the adjacency by number
	src   []int64    // srcCount by number
	wE    []int64    // per entry of in: the link's weight
	cost  [2][]int64 // per number: the cost to the destination, by parity of the hop count
	next  []int32    // entry of in of the chosen link
	acc   []int64    // sources routed through the switch
	boxes []teamBox  // per team member, its messages
	owner []uint8    // per number, its member
	stop  atomic.Bool
}

// tree returns the BFS layers from switch x, searching them into st.tmp
// when they are not kept.
func (st *ssspState) tree(x int) *bfsTree {
	if st.trees != nil {
		return &st.trees[x]
	}
	st.tmp = bfsLayers(st.adj, x, &st.tmp)
	return &st.tmp
}

// routeDest routes every switch to destination d (its port into out) and
// adds the routes' sources to the weights of the links they use. Called
// with one member, where numbers are switch indices.
func (st *ssspState) routeDest(d dest, out []uint8) {
	tr := st.tree(d.sw)
	order, b := tr.order, tr.bounds
	// Cheapest next hop, layer by layer.
	for h := 1; h < len(b)-1; h++ {
		for _, u := range order[b[h]:b[h+1]] {
			st.chooseNext(u, h, int32(d.sw), out)
		}
	}
	// Accumulate sources from the far end of the tree inwards.
	in, acc := st.in, st.acc
	for i := len(order) - 1; i >= 1; i-- {
		u := order[i]
		acc[u] += st.src[u]
		e := st.next[u]
		st.wE[e] += acc[u]
		acc[in.nb[e]] += acc[u]
		st.cost[tr.hop[u]&1][u] = costUnset
	}
	for _, u := range order {
		acc[u] = 0
	}
}

// costUnset is the cost of a switch not (yet) in the current layer
// pair: above any real cost plus weight, with room to add a weight.
const costUnset = math.MaxInt64 / 4

// chooseNext sets switch p's next hop (and its port in out) to the link
// towards a switch one hop nearer the destination dst whose cost plus
// the link's weight is least (the first such link on ties), and p's
// cost; p and dst are numbers (st.perm). p is h hops from dst. The costs
// of layer h are kept in st.cost[h&1], and every other entry of both
// arrays is costUnset, so the least sum over all of p's links is over
// the links one hop nearer: the loop needs no test of hop counts, and
// the switches of layer h, whose costs are being written, are not read.
func (st *ssspState) chooseNext(p int32, h int, dst int32, out []uint8) {
	in := st.in
	e0, e1 := in.start[p], in.start[p+1]
	nb := in.nb[e0:e1]
	wE := st.wE[e0:e1]
	wE = wE[:len(nb)]
	best, bestI := int64(math.MaxInt64), -1
	if h == 1 {
		for i, x := range nb {
			if x == dst && wE[i] < best {
				best, bestI = wE[i], i
			}
		}
	} else {
		prev := st.cost[(h-1)&1]
		for i, x := range nb {
			if c := wE[i] + prev[x]; c < best {
				best, bestI = c, i
			}
		}
	}
	bestE := e0 + int32(bestI)
	st.cost[h&1][p], st.next[p] = best, bestE
	out[p] = in.port[bestE]
}

// bfsTree is the BFS layers from a switch: the switches it reaches in BFS
// order, layer h being order[bounds[h]:bounds[h+1]], and every switch's
// hop count (-1 unreached).
type bfsTree struct {
	order, hop, bounds []int32
	team               int32 // layers sorted by teamPerm for a team of this size (0: BFS order)
}

// bfsLayers returns the BFS layers from x, reusing reuse's memory if not
// nil.
func bfsLayers(adj *swAdj, x int, reuse *bfsTree) bfsTree {
	S := len(adj.start) - 1
	var tr bfsTree
	if reuse != nil {
		tr = bfsTree{order: reuse.order[:0], hop: reuse.hop, bounds: reuse.bounds[:0]}
	}
	if len(tr.hop) != S {
		tr.hop = make([]int32, S)
	}
	for i := range tr.hop {
		tr.hop[i] = -1
	}
	order, hop := append(tr.order, int32(x)), tr.hop
	hop[x] = 0
	bounds := append(tr.bounds, 0)
	for h := 0; h < len(order); h++ {
		y := order[h]
		if int(hop[y]) == len(bounds) {
			bounds = append(bounds, int32(h))
		}
		for e := adj.start[y]; e < adj.start[y+1]; e++ {
			if u := adj.nb[e]; hop[u] < 0 {
				hop[u] = hop[y] + 1
				order = append(order, u)
			}
		}
	}
	bounds = append(bounds, int32(len(order)))
	if reuse == nil {
		// Kept per switch: trim the slack.
		order = append([]int32(nil), order...)
		bounds = append([]int32(nil), bounds...)
	}
	return bfsTree{order: order, hop: hop, bounds: bounds}
}
