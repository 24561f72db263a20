package topology

import (
	"fmt"
	"math/bits"
)

// Embedding maps the nodes of a guest (logical) network onto the nodes of a
// host (physical) network; every guest link is carried by a shortest host
// path (lowest-numbered port first on ties).
type Embedding struct {
	Guest, Host *Graph
	Place       []int // guest node -> host node
}

// EmbeddingStats are the quality figures of seed 002 §3.4.
type EmbeddingStats struct {
	// Congestion is the most guest links carried by one host link.
	Congestion int `json:"congestion"`
	// Dilation is the longest host path of a guest link.
	Dilation int `json:"dilation"`
	// Expansion is host nodes / guest nodes.
	Expansion float64 `json:"expansion"`
	// Load is the most guest nodes placed on one host node.
	Load int `json:"load"`
}

// Measure computes congestion, dilation, expansion and load.
func (e *Embedding) Measure() (EmbeddingStats, error) {
	g, h := e.Guest, e.Host
	if len(e.Place) != g.NumNodes() {
		return EmbeddingStats{}, fmt.Errorf("placement has %d entries for %d guest nodes", len(e.Place), g.NumNodes())
	}
	st := EmbeddingStats{Expansion: float64(h.NumNodes()) / float64(g.NumNodes())}
	load := make([]int, h.NumNodes())
	for v, p := range e.Place {
		if p < 0 || p >= h.NumNodes() {
			return st, fmt.Errorf("guest node %s placed on missing host node %d", g.NodeName(v), p)
		}
		load[p]++
		st.Load = max(st.Load, load[p])
	}
	onLink := make([]int, h.NumLinks())
	dist := make([]int32, h.NumNodes())
	var queue []int32
	// BFS from each host node that carries a guest node (cached per source).
	cache := map[int][]int32{}
	for l := 0; l < g.NumLinks(); l++ {
		lk := g.Link(l)
		a, b := e.Place[lk.A], e.Place[lk.B]
		if a == b {
			continue
		}
		d, ok := cache[b]
		if !ok {
			queue = BFS(h, b, dist, queue)
			d = append([]int32(nil), dist...)
			cache[b] = d
		}
		if d[a] < 0 {
			return st, fmt.Errorf("host nodes %s and %s are not connected", h.NodeName(a), h.NodeName(b))
		}
		st.Dilation = max(st.Dilation, int(d[a]))
		// Walk from a towards b along decreasing distance.
		for v := a; v != b; {
			for _, c := range h.Out(v) {
				w := h.Dst(int(c))
				if h.Up(int(c)) && d[w] == d[v]-1 {
					onLink[int(c)>>1]++
					st.Congestion = max(st.Congestion, onLink[int(c)>>1])
					v = w
					break
				}
			}
		}
	}
	return st, nil
}

// Gray returns the i-th reflected binary Gray code.
func Gray(i int) int { return i ^ (i >> 1) }

// GrayEmbedding places a ring, mesh or torus whose sizes are powers of two
// onto the hypercube of matching dimension: coordinate x_i is written as
// the Gray code of x_i in its own bit field, so neighbours differ in one bit
// (congestion = dilation = 1).
func GrayEmbedding(guest, host *Graph) (*Embedding, error) {
	if !guest.HasCoords() {
		return nil, fmt.Errorf("guest %s has no coordinates (want a ring, mesh or torus)", guest.Name())
	}
	if host.Shape().Family != "hypercube" {
		return nil, fmt.Errorf("host %s is not a hypercube", host.Name())
	}
	total := 0
	shift := make([]int, len(guest.Dims()))
	for i, d := range guest.Dims() {
		if d&(d-1) != 0 {
			return nil, fmt.Errorf("guest dimension %s has size %d, not a power of two", DimName(i), d)
		}
		shift[i] = total
		total += bits.Len(uint(d)) - 1
	}
	if hd := len(host.Dims()); hd != total && !(total == 0 && host.NumNodes() == 1) {
		return nil, fmt.Errorf("guest needs a %d-dimensional hypercube, host has %d dimensions", total, hd)
	}
	place := make([]int, guest.NumNodes())
	for v := range place {
		code := 0
		for i := range guest.Dims() {
			code |= Gray(guest.CoordAt(v, i)) << shift[i]
		}
		place[v] = code // hypercube node id = its bit pattern
	}
	return &Embedding{Guest: guest, Host: host, Place: place}, nil
}

// IdentityEmbedding places guest node i on host node i (the naive binary
// order, for comparison with the Gray code).
func IdentityEmbedding(guest, host *Graph) (*Embedding, error) {
	if guest.NumNodes() > host.NumNodes() {
		return nil, fmt.Errorf("guest has %d nodes, host only %d", guest.NumNodes(), host.NumNodes())
	}
	place := make([]int, guest.NumNodes())
	for i := range place {
		place[i] = i
	}
	return &Embedding{Guest: guest, Host: host, Place: place}, nil
}
