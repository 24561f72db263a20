package unicast

import (
	"math"
	"runtime"
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
	return routeSSSPWith(f, o, ds, adj, ssspTrees(f, adj, o.Workers, o.ssspLimits().treesMaxBytes), par.Workers(o.Workers))
}

// ssspTrees returns the BFS layers from every live switch, computed on all
// cores, or nil when they would not fit in memory (routeDest then searches
// per destination). They depend only on the destination switch, so the
// destination orders share them.
func ssspTrees(f *Fabric, adj *swAdj, workers int, maxBytes float64) []bfsTree {
	S := len(f.switches)
	if float64(S)*float64(S)*8 > maxBytes {
		return nil
	}
	trees := make([]bfsTree, S)
	par.For(S, workers, func(_, x int) {
		if f.switchAlive(x) {
			trees[x] = bfsLayers(adj, x, nil)
		}
	})
	return trees
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
	st := &ssspState{adj: adj, S: S, weight: make([]int64, f.G.NumChannels()), srcCount: liveEndPortsPerSwitch(f),
		cost: make([]int64, S), next: make([]int32, S), acc: make([]int64, S), trees: trees}
	// Routes are written LID-major (one destination touches every switch)
	// and transposed at the end.
	col := make([]uint8, t.stride*S)
	par.For(S, workers, func(_, s int) {
		for lid := range t.stride {
			col[lid*S+s] = noPort
		}
	})
	// A team larger than GOMAXPROCS would wait at every barrier for a
	// member that has no processor.
	var err error
	if n := min(workers, runtime.GOMAXPROCS(0)); n < 2 || S < o.ssspLimits().teamMinSwitches {
		err = st.routeAll(o, ds, col)
	} else {
		err = newTeam(n).run(func(m *member) error { return st.routeAllTeam(m, o, ds, col) })
	}
	if err != nil {
		return nil, nil, err
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
	return t, st, nil
}

// routeAll routes ds one after the other on the calling goroutine.
func (st *ssspState) routeAll(o Options, ds []dest, col []uint8) error {
	S := st.S
	for k, d := range ds {
		st.routeDest(d, col[d.lid*S:(d.lid+1)*S])
		if k%64 == 63 {
			o.Progress(64)
			if o.Context != nil && o.Context.Err() != nil {
				return o.Context.Err()
			}
		}
	}
	return nil
}

// routeAllTeam is routeAll for one member of a team: every member walks
// the same destinations and takes its share of each.
func (st *ssspState) routeAllTeam(m *member, o Options, ds []dest, col []uint8) error {
	S := st.S
	for k, d := range ds {
		st.routeDestTeam(m, d, col[d.lid*S:(d.lid+1)*S])
		if k%64 == 63 {
			if m.w == 0 {
				o.Progress(64)
				if o.Context != nil && o.Context.Err() != nil {
					st.stop.Store(true)
				}
			}
			m.barrier()
			if st.stop.Load() {
				return o.Context.Err()
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
// (routes so far) and per-switch scratch.
type ssspState struct {
	adj      *swAdj
	S        int
	weight   []int64
	srcCount []int64
	trees    []bfsTree // per switch: its BFS layers (nil: per destination)
	tmp      bfsTree   // the layers of the current destination when trees is nil
	cost     []int64
	next     []int32 // adjacency index of the chosen link, -1 none
	acc      []int64
	stop     atomic.Bool // a team stops (the context ended)
	ds       []dest      // the destination order used
	colT     []uint8     // the tables LID-major ([lid*S+s]), for repairs
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
// adds the routes' sources to the weights of the links they use.
func (st *ssspState) routeDest(d dest, out []uint8) {
	tr := st.tree(d.sw)
	order := tr.order
	st.cost[d.sw], st.next[d.sw] = 0, -1
	// Cheapest next hop, layer by layer.
	for _, u := range order[1:] {
		st.chooseNext(u, tr.hop, out)
	}
	// Accumulate sources from the far end of the tree inwards.
	adj, acc := st.adj, st.acc
	for i := len(order) - 1; i >= 1; i-- {
		u := order[i]
		acc[u] += st.srcCount[u]
		e := st.next[u]
		st.weight[adj.ch[e]] += acc[u]
		acc[adj.nb[e]] += acc[u]
	}
	for _, u := range order {
		acc[u] = 0
	}
}

// chooseNext sets switch u's next hop (and its port in out) to the link
// towards a switch one hop nearer the destination whose cost plus the
// link's weight is least (the first such link on ties), and u's cost.
func (st *ssspState) chooseNext(u int32, hop []int32, out []uint8) {
	adj := st.adj
	best, bestE := int64(math.MaxInt64), int32(-1)
	hu := hop[u]
	for e := adj.start[u]; e < adj.start[u+1]; e++ {
		x := adj.nb[e]
		if hop[x] != hu-1 {
			continue
		}
		c := st.weight[adj.ch[e]]
		if hu > 1 {
			c += st.cost[x] // the destination's own cost is 0
		}
		if c < best {
			best, bestE = c, e
		}
	}
	st.cost[u], st.next[u] = best, bestE
	out[u] = adj.port[bestE]
}

// routeDestTeam is routeDest for one member of a team. Layer by layer
// outwards, the members share the layer's switches and choose their next
// hops; then layer by layer inwards they add each switch's sources (its
// own and those its tree children passed on) to the weight of its link
// and pass them on to its parent. The farthest layer does both in one
// step. Each step ends with a barrier.
func (st *ssspState) routeDestTeam(m *member, d dest, out []uint8) {
	var tr *bfsTree
	if st.trees != nil {
		tr = &st.trees[d.sw]
	} else {
		if m.w == 0 {
			st.tree(d.sw)
		}
		m.barrier()
		tr = &st.tmp
	}
	order, hop, b := tr.order, tr.hop, tr.bounds
	L := len(b) - 1 // layers, the destination's included
	if L < 2 && st.trees == nil {
		m.barrier() // all have read st.tmp before member 0 searches again
	}
	for h := 1; h < L; h++ {
		layer := order[b[h]:b[h+1]]
		last := h == L-1
		m.chunks(len(layer), func(i0, i1 int) {
			for _, u := range layer[i0:i1] {
				st.chooseNext(u, hop, out)
				st.acc[u] = 0
			}
			if last {
				for _, u := range layer[i0:i1] {
					st.passOn(u, h)
				}
			}
		})
		m.barrier()
	}
	for h := L - 2; h >= 1; h-- {
		layer := order[b[h]:b[h+1]]
		m.chunks(len(layer), func(i0, i1 int) {
			for _, u := range layer[i0:i1] {
				st.passOn(u, h)
			}
		})
		m.barrier()
	}
}

// passOn adds the sources routed through switch u (h hops from the
// destination) to the weight of u's link and passes them to the next
// switch, unless that is the destination.
func (st *ssspState) passOn(u int32, h int) {
	a := atomic.LoadInt64(&st.acc[u]) + st.srcCount[u]
	e := st.next[u]
	st.weight[st.adj.ch[e]] += a
	if h > 1 {
		atomic.AddInt64(&st.acc[st.adj.nb[e]], a)
	}
}

// bfsTree is the BFS layers from a switch: the switches it reaches in BFS
// order, layer h being order[bounds[h]:bounds[h+1]], and every switch's
// hop count (-1 unreached).
type bfsTree struct {
	order, hop, bounds []int32
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
