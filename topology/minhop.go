package topology

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/par"
)

// HopTable holds minimum hop counts from every forwarding node (router) to
// every node, the min-hop table a subnet manager keeps per switch (OpenSM's
// "hops from each port to each LID", column 0 = minimum). Routers are the
// switches of an indirect network, or every node of a direct one.
//
// Storage is compact: hop counts between routers (uint8, routers²), plus for
// every non-router its attachment router when it is single-homed (distance
// +1). Multi-homed end nodes get their own columns. Per-port hops are
// derived on the fly: leaving router s through port p towards d costs
// 1 + hops(peer, d). Failed links and nodes are honoured.
type HopTable struct {
	g       *Graph
	routers []int32 // router index -> node
	rIndex  []int32 // node -> router index, or -1
	// col maps a destination node to its column and the hops added after
	// the column's router (0 for routers, 1 for single-homed end nodes);
	// multi-homed end nodes have their own column (colNode).
	col     []int32
	add     []uint8
	colNode []int32 // column -> node whose distances the column holds
	dist    []uint8 // [router * ncols + col]
	ncols   int
	// lazy (MinHopsLazy): columns computed on first use, each the hops
	// of every router to the column's node; dist is nil then.
	lazy []atomic.Pointer[[]uint8]
	// The lazy columns' BFS walks the working channels out of forwarding
	// nodes, gathered once (adjOff, adjDst: node v's neighbours are
	// adjDst[adjOff[v]:adjOff[v+1]]), with reusable buffers.
	adjOnce sync.Once
	adjOff  []int32
	adjDst  []int32
	bufs    sync.Pool
}

// Unreachable is the hop count reported when there is no path.
const Unreachable = 255

// MinHopsLazy returns the hop table of g with each destination's column
// computed (one BFS) when it is first asked for, for callers that ask
// about a few destinations of a large fabric (multicast groups on a
// 32 768-node torus: the full table is 1 GiB and minutes of BFS). Safe
// for concurrent use; answers equal MinHops's.
func MinHopsLazy(g *Graph) *HopTable {
	h := newHopIndex(g)
	h.lazy = make([]atomic.Pointer[[]uint8], h.ncols)
	return h
}

// Lazy reports whether the table computes its columns on first use
// (MinHopsLazy): a caller then asks for hops towards the few nodes whose
// columns it needs, Hops(any, d), not from them.
func (h *HopTable) Lazy() bool { return h.lazy != nil }

// column returns lazy column c, computing it on first use.
func (h *HopTable) column(c int) []uint8 {
	if p := h.lazy[c].Load(); p != nil {
		return *p
	}
	h.adjOnce.Do(h.buildAdjacency)
	b, _ := h.bufs.Get().(*bfsBuf)
	if b == nil {
		b = &bfsBuf{dist: make([]uint8, h.g.NumNodes()), queue: make([]int32, 0, h.g.NumNodes())}
	}
	// Breadth first from the column's node over working channels: the
	// source always expands, other nodes only if they forward.
	dist := b.dist
	for i := range dist {
		dist[i] = Unreachable
	}
	src := h.colNode[c]
	dist[src] = 0
	q := append(b.queue[:0], src)
	head := 0
	if h.rIndex[src] < 0 {
		// An end node (a multi-homed one has a column) expands only as
		// the source: its working channels are not in the adjacency.
		head = 1
		for _, ch := range h.g.Out(int(src)) {
			if w := int32(h.g.Dst(int(ch))); h.g.Up(int(ch)) && dist[w] == Unreachable {
				dist[w] = 1
				q = append(q, w)
			}
		}
	}
	for ; head < len(q); head++ {
		v := q[head]
		d := dist[v] + 1
		if d >= Unreachable {
			break
		}
		for _, w := range h.adjDst[h.adjOff[v]:h.adjOff[v+1]] {
			if dist[w] == Unreachable {
				dist[w] = d
				q = append(q, w)
			}
		}
	}
	col := make([]uint8, len(h.routers))
	for ri, r := range h.routers {
		col[ri] = dist[r]
	}
	b.queue = q
	h.bufs.Put(b)
	if h.lazy[c].CompareAndSwap(nil, &col) {
		return col
	}
	return *h.lazy[c].Load()
}

// buildAdjacency gathers the working channels out of every router.
func (h *HopTable) buildAdjacency() {
	g := h.g
	n := g.NumNodes()
	h.adjOff = make([]int32, n+1)
	for v := 0; v < n; v++ {
		h.adjOff[v+1] = h.adjOff[v]
		if h.rIndex[v] < 0 {
			continue
		}
		for _, ch := range g.Out(v) {
			if g.Up(int(ch)) {
				h.adjDst = append(h.adjDst, int32(g.Dst(int(ch))))
				h.adjOff[v+1]++
			}
		}
	}
}

type bfsBuf struct {
	dist  []uint8
	queue []int32
}

// lazyHops is the hop count from router s (row ri) to the column of d.
// Links are symmetric, so between two routers whose own columns they
// are, the column already computed serves both directions: a caller
// that asks about a few nodes to and from everywhere computes only
// those nodes' columns.
func (h *HopTable) lazyHops(ri, s, d int) int {
	c := int(h.col[d])
	if p := h.lazy[c].Load(); p != nil {
		return int((*p)[ri])
	}
	if rd := h.rIndex[d]; rd >= 0 && h.colNode[c] == int32(d) && h.colNode[h.col[s]] == int32(s) {
		if p := h.lazy[h.col[s]].Load(); p != nil {
			return int((*p)[rd])
		}
	}
	return int(h.column(c)[ri])
}

// newHopIndex sets up a hop table's routers and columns, without hops.
func newHopIndex(g *Graph) *HopTable {
	n := g.NumNodes()
	direct := g.Direct()
	h := &HopTable{g: g, rIndex: make([]int32, n), col: make([]int32, n), add: make([]uint8, n)}
	for v := 0; v < n; v++ {
		h.rIndex[v] = -1
		if direct || g.Kind(v) == Switch {
			h.rIndex[v] = int32(len(h.routers))
			h.routers = append(h.routers, int32(v))
		}
	}
	// Columns: one per router, then one per multi-homed end node.
	for _, r := range h.routers {
		h.col[r] = int32(len(h.colNode))
		h.colNode = append(h.colNode, r)
	}
	for v := 0; v < n; v++ {
		if h.rIndex[v] >= 0 {
			continue
		}
		att, links := -1, 0
		for _, c := range g.Out(v) {
			if !g.Up(int(c)) {
				continue
			}
			links++
			att = g.Dst(int(c))
		}
		if links == 1 && h.rIndex[att] >= 0 {
			h.col[v] = h.col[att]
			h.add[v] = 1
			continue
		}
		h.col[v] = int32(len(h.colNode))
		h.colNode = append(h.colNode, int32(v))
	}
	h.ncols = len(h.colNode)
	return h
}

// MinHops computes the hop table of g on all cores (workers 0 = all).
func MinHops(g *Graph, workers int) (*HopTable, error) {
	h := newHopIndex(g)
	n := g.NumNodes()
	if float64(len(h.routers))*float64(h.ncols) > 4e9 {
		return nil, fmt.Errorf("hop table of %d routers × %d destinations is too large", len(h.routers), h.ncols)
	}
	h.dist = make([]uint8, len(h.routers)*h.ncols)
	type scratch struct {
		d     []int32
		queue []int32
		_     [64]byte // per worker: keeps what workers write off each other's cache lines
	}
	ws := par.Workers(workers)
	sc := make([]scratch, ws)
	for i := range sc {
		sc[i].d = make([]int32, n)
	}
	// Links are symmetric, so the BFS *from* a column's node gives the
	// distances *to* it. Only routers forward; the column node itself is
	// expanded even if it is an end node.
	par.For(h.ncols, ws, func(w, c int) {
		s := &sc[w]
		s.queue = BFS(g, int(h.colNode[c]), s.d, s.queue)
		for ri, r := range h.routers {
			d := s.d[r]
			if d < 0 || d >= Unreachable {
				d = Unreachable
			}
			h.dist[ri*h.ncols+c] = uint8(d)
		}
	})
	return h, nil
}

// Graph returns the network the table was computed for.
func (h *HopTable) Graph() *Graph { return h.g }

// Routers returns the forwarding nodes in table order.
func (h *HopTable) Routers() []int32 { return h.routers }

// RouterIndex returns the row of node v, or -1 if v does not forward.
func (h *HopTable) RouterIndex(v int) int { return int(h.rIndex[v]) }

// Hops returns the minimum hops from router s to node d (Unreachable if
// none; 0 if s == d).
func (h *HopTable) Hops(s, d int) int {
	if s == d {
		return 0
	}
	ri := h.rIndex[s]
	if ri < 0 {
		panic("topology: Hops from a node that does not forward")
	}
	var v int
	if h.lazy != nil {
		v = h.lazyHops(int(ri), s, d)
	} else {
		v = int(h.dist[int(ri)*h.ncols+int(h.col[d])])
	}
	if v == Unreachable {
		return Unreachable
	}
	return v + int(h.add[d])
}

// PortHops returns the hops to d when router s sends through port p (1 if
// the port leads to d itself), or Unreachable if the port is unconnected,
// down, or leads to a non-router that is not d.
func (h *HopTable) PortHops(s, p, d int) int {
	c := h.g.PortChannel(s, p)
	if c < 0 || !h.g.Up(c) {
		return Unreachable
	}
	peer := h.g.Dst(c)
	if peer == d {
		return 1
	}
	if h.rIndex[peer] < 0 {
		return Unreachable
	}
	x := h.Hops(peer, d)
	if x == Unreachable {
		return Unreachable
	}
	return x + 1
}

// MinPorts appends to buf the ports of router s that lie on a shortest
// path to d, in increasing port order.
func (h *HopTable) MinPorts(s, d int, buf []int) []int {
	buf = buf[:0]
	best := h.Hops(s, d)
	if best == Unreachable || best == 0 {
		return buf
	}
	for _, c := range h.g.Out(s) {
		p := h.g.SrcPort(int(c))
		if h.PortHops(s, p, d) == best {
			buf = append(buf, p)
		}
	}
	return buf
}

// Bytes returns the memory held by the table's hop counts.
func (h *HopTable) Bytes() int {
	n := len(h.dist) + 9*len(h.col) + 4*len(h.colNode) + 4*len(h.routers)
	for c := range h.lazy {
		if p := h.lazy[c].Load(); p != nil {
			n += len(*p)
		}
	}
	return n
}
