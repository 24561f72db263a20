package unicast

import (
	"fmt"
	"sort"
	"strings"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// Up*/down* routing.
//
// Every live switch gets a key (rank, GUID): rank is the BFS distance from
// the nearest root. A channel u→v goes up when key(v) < key(u). Keys are a
// strict total order, so up channels form a DAG and a route that goes up*
// then down* can never close a dependency cycle.
//
// Per destination switch t the engine computes, for every switch s, a mode
// and a distance: mode D when s reaches t going only down (then its route
// is the shortest all-down path), otherwise mode A, whose route goes up to
// the neighbour with the shortest continuation. A D switch only forwards to
// D switches, so a packet that has gone down never goes up again; and every
// switch that has any legal up*/down* route gets one.

const (
	udUnreach = 0xFFFF
	udDown    = 0x8000
	udDist    = 0x7FFF
)

// upDownTable holds mode and distance for every (target t, switch s) at
// [t*S+s].
type upDownTable struct {
	S     int
	key   []int64 // rank<<40 | guid order index, smaller = higher
	cell  []uint16
	rank  []int
	order []int // live switches by increasing key (top first)
}

// newUpDown computes the table for switch ranks rank (-1 = dead switch).
func newUpDown(f *Fabric, adj *swAdj, rank []int, workers int, progress func(int)) (*upDownTable, error) {
	S := len(f.switches)
	if float64(S)*float64(S) > 4e8 {
		return nil, fmt.Errorf("up*/down* table of %d×%d switches is too large", S, S)
	}
	g := f.G
	// GUID order index so keys stay in int64.
	byGUID := make([]int, S)
	for i := range byGUID {
		byGUID[i] = i
	}
	sort.Slice(byGUID, func(a, b int) bool {
		return g.GUID(int(f.switches[byGUID[a]])) < g.GUID(int(f.switches[byGUID[b]]))
	})
	u := &upDownTable{S: S, key: make([]int64, S), cell: make([]uint16, S*S)}
	for i, s := range byGUID {
		u.key[s] = int64(rank[s])<<40 | int64(i)
	}
	order := make([]int, 0, S) // live switches by increasing key (top first)
	for s := 0; s < S; s++ {
		if rank[s] >= 0 {
			order = append(order, s)
		}
	}
	sort.Slice(order, func(a, b int) bool { return u.key[order[a]] < u.key[order[b]] })
	u.order, u.rank = order, rank
	nw := par.Workers(workers)
	queues := make([][]int32, nw)
	par.For(S, nw, func(w, t int) {
		queues[w] = u.fillColumn(adj, t, queues[w])
		if t%64 == 63 {
			progress(64)
		}
	})
	return u, nil
}

// fillColumn computes the column of target switch t over the live
// switch adjacency adj; q is scratch, returned for reuse.
func (u *upDownTable) fillColumn(adj *swAdj, t int, q []int32) []int32 {
	S := u.S
	col := u.cell[t*S : (t+1)*S]
	for i := range col {
		col[i] = udUnreach
	}
	if u.rank[t] < 0 {
		return q
	}
	// All-down distances: BFS from t backwards over down moves.
	q = append(q[:0], int32(t))
	col[t] = udDown
	for h := 0; h < len(q); h++ {
		x := int(q[h])
		d := col[x] & udDist
		for _, y := range adj.of(x) {
			yi := int(y)
			if col[yi] == udUnreach && u.key[yi] < u.key[x] { // y→x goes down
				col[yi] = udDown | (d + 1)
				q = append(q, y)
			}
		}
	}
	// Others go up first: keys ascending, up-neighbours are done.
	for _, s := range u.order {
		if col[s] != udUnreach {
			continue
		}
		best := uint16(udUnreach)
		for _, y := range adj.of(s) {
			yi := int(y)
			if u.key[yi] < u.key[s] && col[yi] != udUnreach {
				if d := col[yi] & udDist; d < best {
					best = d
				}
			}
		}
		if best != udUnreach && best+1 < udDist {
			col[s] = best + 1
		}
	}
	return q
}

// complete reports whether every live switch with end ports (a traffic
// source) has a legal route to every live switch of its component.
func (u *upDownTable) complete(f *Fabric, adj *swAdj) bool {
	S := u.S
	comp := switchComponents(adj) // a dead switch is alone in its own
	for t := 0; t < S; t++ {
		if !f.switchAlive(t) {
			continue
		}
		col := u.cell[t*S : (t+1)*S]
		for s := 0; s < S; s++ {
			if comp[s] == comp[t] && col[s] == udUnreach && len(f.termsOf(s)) > 0 {
				return false
			}
		}
	}
	return true
}

// candidates of s towards t under up*/down*.
func (u *upDownTable) cand(adj *swAdj, s, t int, buf []uint8) []uint8 {
	col := u.cell[t*u.S : (t+1)*u.S]
	c := col[s]
	if c == udUnreach {
		return buf
	}
	d := c & udDist
	down := c&udDown != 0
	for e := adj.start[s]; e < adj.start[s+1]; e++ {
		y := adj.nb[e]
		cy := col[y]
		if cy == udUnreach || cy&udDist != d-1 {
			continue
		}
		if down {
			if u.key[y] > u.key[s] && cy&udDown != 0 {
				buf = append(buf, adj.port[e])
			}
		} else if u.key[y] < u.key[s] {
			buf = append(buf, adj.port[e])
		}
	}
	return buf
}

// swAdj is the live switch-to-switch adjacency in port order (CSR;
// parallel links appear once each): neighbour switch index, local port and
// channel.
type swAdj struct {
	start []int32
	nb    []int32
	port  []uint8
	rport []uint8 // port of the neighbour on the same link
	ch    []int32
}

func (a *swAdj) of(s int) []int32 { return a.nb[a.start[s]:a.start[s+1]] }

func switchAdjacency(f *Fabric) *swAdj {
	g := f.G
	S := len(f.switches)
	a := &swAdj{start: make([]int32, S+1)}
	for s, v := range f.switches {
		if g.NodeFailed(int(v)) {
			a.start[s+1] = int32(len(a.nb))
			continue
		}
		for _, c := range g.Out(int(v)) {
			ci := int(c)
			if !g.Up(ci) {
				continue
			}
			if y := f.swIndex[g.Dst(ci)]; y >= 0 {
				a.nb = append(a.nb, y)
				a.port = append(a.port, uint8(g.SrcPort(ci)))
				a.rport = append(a.rport, uint8(g.DstPort(ci)))
				a.ch = append(a.ch, int32(ci))
			}
		}
		a.start[s+1] = int32(len(a.nb))
	}
	return a
}

// bfsRanks returns the BFS distance of every live switch from the roots
// (switch indices); switches the roots do not reach seed further BFS runs
// from their smallest GUID, so every component is ranked. Dead switches get
// -1.
func bfsRanks(f *Fabric, adj *swAdj, roots []int) []int {
	S := len(f.switches)
	rank := make([]int, S)
	for i := range rank {
		rank[i] = -1
	}
	var q []int
	run := func() {
		for h := 0; h < len(q); h++ {
			x := q[h]
			for _, y := range adj.of(x) {
				if rank[y] < 0 {
					rank[y] = rank[x] + 1
					q = append(q, int(y))
				}
			}
		}
	}
	for _, r := range roots {
		if f.switchAlive(r) && rank[r] < 0 {
			rank[r] = 0
			q = append(q, r)
		}
	}
	run()
	for _, s := range f.switchesByGUID() {
		if rank[s] < 0 && f.switchAlive(s) {
			q = append(q[:0], s)
			rank[s] = 0
			run()
		}
	}
	return rank
}

// autoRoots picks the up*/down* roots: the live switches whose farthest
// end port is nearest (the centre of the fabric as seen from the end
// nodes), in GUID order. On a fat tree these are the top switches. When
// every switch ties (tori, dragonflies, rings) a single root, the one with
// the smallest GUID, is used (measured
// on dragonfly:a=8,p=4,h=4: a whole group as roots balances worse, 22 332
// vs 21 284 routes on the busiest link).
func autoRoots(f *Fabric, workers int) ([]int, error) {
	h, err := topology.MinHops(f.G, workers)
	if err != nil {
		return nil, err
	}
	S := len(f.switches)
	var targets []int
	for s := 0; s < S; s++ {
		if len(f.termsOf(s)) > 0 && f.switchAlive(s) {
			targets = append(targets, s)
		}
	}
	if len(targets) == 0 {
		for s := 0; s < S; s++ {
			if f.switchAlive(s) {
				targets = append(targets, s)
			}
		}
	}
	ecc := make([]int, S)
	par.For(S, workers, func(_, s int) {
		ecc[s] = -1
		if !f.switchAlive(s) {
			return
		}
		e := 0
		for _, t := range targets {
			d := h.Hops(int(f.switches[s]), int(f.switches[t]))
			if d != topology.Unreachable && d > e {
				e = d
			}
		}
		ecc[s] = e
	})
	best, live := -1, 0
	for s := 0; s < S; s++ {
		if ecc[s] < 0 {
			continue
		}
		live++
		if best < 0 || ecc[s] < best {
			best = ecc[s]
		}
	}
	var roots []int
	for _, s := range f.switchesByGUID() {
		if ecc[s] == best && best >= 0 {
			roots = append(roots, s)
		}
	}
	if len(roots) == live && len(roots) > 1 {
		roots = roots[:1]
	}
	return roots, nil
}

// routeUpDn is the updn engine: up*/down* ranks from the given roots (or
// autoRoots), then every destination balanced over the legal ports, in the
// better of the two destination orders.
func routeUpDn(f *Fabric, o Options) (*Result, engineState, error) {
	adj := switchAdjacency(f)
	var roots []int
	if o.Roots != nil {
		for _, v := range o.Roots {
			if v < 0 || v >= f.G.NumNodes() || f.swIndex[v] < 0 {
				return nil, engineState{}, fmt.Errorf("root %d is not a switch", v)
			}
			s := int(f.swIndex[v])
			if !f.switchAlive(s) {
				return nil, engineState{}, fmt.Errorf("root %s is a failed switch", f.G.NodeName(v))
			}
			roots = append(roots, s)
		}
		if len(roots) == 0 {
			return nil, engineState{}, fmt.Errorf("no roots given")
		}
	} else {
		var err error
		if roots, err = autoRoots(f, o.Workers); err != nil {
			return nil, engineState{}, err
		}
	}
	rank := bfsRanks(f, adj, roots)
	u, err := newUpDown(f, adj, rank, o.Workers, o.Progress)
	if err != nil {
		return nil, engineState{}, err
	}
	if o.Roots == nil && len(roots) > 1 && !u.complete(f, adj) {
		// Several roots can leave a root with no legal route to switches
		// that only another root reaches going down; one root never does.
		roots = roots[:1]
		rank = bfsRanks(f, adj, roots)
		if u, err = newUpDown(f, adj, rank, o.Workers, o.Progress); err != nil {
			return nil, engineState{}, err
		}
	}
	t, order, err := bestOrder(f, o, func(ds []dest) (*Tables, error) {
		t := NewTables(f, o.Engine)
		fillLocal(t)
		balanced(t, ds, func(_, s, tt int, buf []uint8) []uint8 { return u.cand(adj, s, tt, buf) }, o.Workers, o.Progress)
		return t, nil
	})
	if err != nil {
		return nil, engineState{}, err
	}
	nodes := make([]int, len(roots))
	for i, r := range roots {
		nodes[i] = int(f.switches[r])
	}
	return &Result{Tables: t, Roots: sortedInts(nodes), LanesNeeded: 1, Order: order}, engineState{}, nil
}

// ParseRoots resolves a list of root switches: node names or GUIDs
// ("0x0002c90000001d18"), separated by commas, white space or new lines;
// '#' starts a comment (so an OpenSM root GUID file works as is).
func ParseRoots(g *topology.Graph, s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, item := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			v := g.NodeByName(item)
			if v < 0 {
				if guid, ok := parseHexGUID(item); ok && (strings.HasPrefix(item, "0x") || strings.HasPrefix(item, "0X")) {
					for w := 0; w < g.NumNodes(); w++ {
						if g.GUID(w) == guid {
							v = w
							break
						}
					}
					if v < 0 {
						return nil, fmt.Errorf("no node has GUID %s", item)
					}
				} else {
					return nil, fmt.Errorf("unknown switch %q", item)
				}
			}
			if g.Kind(v) != topology.Switch {
				return nil, fmt.Errorf("%s is not a switch", g.NodeName(v))
			}
			if seen[v] {
				return nil, fmt.Errorf("switch %s listed twice", g.NodeName(v))
			}
			seen[v] = true
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no root switches listed")
	}
	return out, nil
}
