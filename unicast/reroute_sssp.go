package unicast

import (
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// repairSSSP brings sssp's (or dfsssp's) tables to f2 by routing again
// only the destinations that lost their routes: those whose route from
// some live switch leaves through a link that is now down, and those that
// came back. Their old routes are taken off the link weights first and the
// new ones added, in the order of the last full run. layered: dfsssp's
// lanes are laid out again afterwards.
func (r *Rerouter) repairSSSP(f2 *Fabric, st *UpdateStats, layered bool) error {
	old, f1 := r.sp, r.f
	t1 := r.res.Tables
	S := len(f2.switches)
	for s := 0; s < S; s++ {
		if !f1.switchAlive(s) && f2.switchAlive(s) {
			st.Mode, st.Why, st.Exact = "full", "a switch came back", true
			return r.full(f2)
		}
	}
	o, err := r.o.withDefaults()
	if err != nil {
		return err
	}
	t := t1.cloneFor(f2)
	t.setLanes(nil, 1)
	var dead int64
	for s := 0; s < S; s++ {
		if f1.switchAlive(s) && !f2.switchAlive(s) {
			row := t.row(s)
			for i := range row {
				if row[i] != noPort {
					dead++
				}
				row[i] = noPort
			}
		}
	}
	// Destinations routed again: the order of the full run, then LIDs
	// that came back.
	inOrder := make([]bool, f2.maxLID+1)
	for _, d := range old.ds {
		inOrder[d.lid] = true
	}
	var extra []dest
	for _, d := range f2.dests() {
		if d.alive && !inOrder[d.lid] {
			extra = append(extra, d)
		}
	}
	adj2 := switchAdjacency(f2)
	todo, rows, cameUp := brokenDests(f1, f2, old, t1, adj2, extra, o.Workers)
	sp := &ssspState{S: S, weight: append([]int64(nil), old.weight...), srcCount: liveEndPortsPerSwitch(f2),
		adj: adj2, ds: old.ds, colT: append([]uint8(nil), old.colT...)}
	rp := newRepairer(sp, t, f2)
	adj1 := switchAdjacency(f1)
	rp.old, rp.oldAdj, rp.oldSrc = newFastLFT(t1, adj1), adj1, old.srcCount
	for s := 0; s < S; s++ {
		if rows[s] && f2.switchAlive(s) {
			rp.seeds = append(rp.seeds, int32(s))
		}
		if !f2.switchAlive(s) {
			for lid := 0; lid <= f2.maxLID; lid++ {
				sp.colT[lid*S+s] = noPort
			}
		}
	}
	rp.g2 = f2.G
	for _, d := range todo {
		rp.repair(d, cameUp || !inOrder[d.lid] || d.term >= 0 && !f1.termAlive(d.term) || d.term < 0 && !f1.switchAlive(d.sw))
	}
	st.Changed = rp.changed
	res := &Result{Tables: t, LanesNeeded: 1, Order: r.res.Order}
	if layered {
		if err := layerInto(res, o); err != nil {
			return err
		}
	}
	st.Mode, st.Rerouted = "repair", len(todo)
	st.Changed += dead
	r.res, r.sp, r.f = res, sp, f2
	return nil
}

// brokenDests lists the destinations repairSSSP routes again, in the
// order of the last full run (old) then those that came back (extra): a
// destination is broken when it came or went, or when some live switch's
// entry leaves through a link that is down now, or has none although the
// destination is in its component (joined again: only after something
// came up). rows marks the switches with a port whose link changed, and
// cameUp whether anything came up.
func brokenDests(f1, f2 *Fabric, old *ssspState, t1 *Tables, adj2 *swAdj, extra []dest, workers int) (todo []dest, rows []bool, cameUp bool) {
	g1, g2 := f1.G, f2.G
	S := len(f2.switches)
	comp := switchComponents(adj2)
	// A destination is broken when it came or went, or when some live
	// switch's entry leaves through a link that is down now, or has none
	// although the destination is in its component (joined again: only
	// after something came up). Only rows with a port that went down
	// can hold the former; the rows are scanned switch by switch (cache
	// order), per worker.
	cameUp = len(extra) > 0
	rows = make([]bool, S)
	for l := range g2.NumLinks() {
		up1, up2 := g1.Up(2*l), g2.Up(2*l)
		if up1 == up2 {
			continue
		}
		cameUp = cameUp || up2
		lk := g2.Link(l)
		for _, v := range []int32{lk.A, lk.B} {
			if sw := f2.swIndex[v]; sw >= 0 {
				rows[sw] = true
			}
		}
	}
	nw := par.Workers(workers)
	marks := make([][]bool, nw)
	for i := range marks {
		marks[i] = make([]bool, f2.maxLID+1)
	}
	par.For(S, nw, func(w, s int) {
		if !f2.switchAlive(s) || !rows[s] && !cameUp {
			return
		}
		v := int(f2.switches[s])
		var down [256]bool
		for p := 1; p <= g2.NumPorts(v); p++ {
			if c := g2.PortChannel(v, p); c >= 0 && !g2.Up(c) {
				down[p] = true
			}
		}
		row, m := t1.row(s), marks[w]
		for _, d := range old.ds {
			switch p := row[d.lid]; {
			case p == noPort:
				if cameUp && d.sw != s && comp[s] == comp[d.sw] && f2.switchAlive(d.sw) {
					m[d.lid] = true
				}
			case p != 0 && down[p]:
				m[d.lid] = true
			}
		}
	})
	for _, d := range old.ds {
		alive1, alive2 := f1.switchAlive(d.sw), f2.switchAlive(d.sw)
		if d.term >= 0 {
			alive1, alive2 = f1.termAlive(d.term), f2.termAlive(d.term)
		}
		broken := alive1 != alive2
		for _, m := range marks {
			broken = broken || alive2 && m[d.lid]
		}
		if broken {
			d.alive = alive2
			todo = append(todo, d)
		}
	}
	todo = append(todo, extra...)
	return todo, rows, cameUp
}

// repairer re-routes broken destinations one at a time, locally: a
// switch whose route still works keeps it (it is still a shortest path,
// as removing links only lengthens paths); the others (the broken set)
// are routed again as routeSSSP would route them, given the kept routes:
// hop counts by a search outwards from the working switches, then, layer
// by layer, the next hop of least cost among those one hop nearer.
type repairer struct {
	old     *fastLFT // the previous fabric's switch links (t: previous tables)
	oldAdj  *swAdj
	oldSrc  []int64 // sources per switch when the weights were added
	seeds   []int32 // live switches with a port that went down
	g2      *topology.Graph
	changed int64 // entries changed
	sp      *ssspState
	t       *Tables
	f       *Fabric
	fl      *fastLFT // the new fabric's switch links
	S       int
	col     []uint8
	state   []uint8 // per switch: 0 unknown, repOK, repBroken, repNone, repWalk
	hop     []int32
	cost    []int64
	walk    []int32
	bs      []int32   // the broken set
	bkt     [][]int32 // hop buckets
}

const (
	repOK = 1 + iota
	repBroken
	repNone // no route and none possible (another component, dead)
	repWalk // on the walk being resolved
)

func newRepairer(sp *ssspState, t *Tables, f *Fabric) *repairer {
	S := sp.S
	return &repairer{sp: sp, t: t, f: f, fl: newFastLFT(t, sp.adj), S: S, col: make([]uint8, S),
		state: make([]uint8, S), hop: make([]int32, S), cost: make([]int64, S)}
}

// repair routes destination d again. Without whole (only failures since
// the last tables), the broken switches are found from the switches whose
// entry leaves through a port that went down, searching upstream over the
// old routes (a switch whose route passes a broken one is broken);
// otherwise every switch's route is followed. The broken switches' old
// routes come off the weights, they are routed again, and their new
// routes go on the weights (the other routes do not change).
func (rp *repairer) repair(d dest, whole bool) {
	t, S, lid, sp := rp.t, rp.S, d.lid, rp.sp
	col := sp.colT[lid*S : (lid+1)*S]
	if !d.alive || d.sw < 0 {
		rp.walkOff(col, d.sw, nil)
		for s := 0; s < S; s++ {
			col[s] = noPort
			if e := &t.lft[s*t.stride+lid]; *e != noPort {
				rp.changed++
				*e = noPort
			}
		}
		return
	}
	copy(rp.col, col)
	rp.col[d.sw] = uint8(d.port) // 0 for a switch LID
	clear(rp.state)
	rp.state[d.sw], rp.hop[d.sw], rp.cost[d.sw] = repOK, 0, 0
	rp.bs = rp.bs[:0]
	if whole {
		for s := 0; s < S; s++ {
			rp.resolve(s)
		}
	} else {
		rp.upstream(d)
	}
	rp.walkOff(col, d.sw, rp.bs)
	rp.reroute()
	rp.bs = append(rp.bs, int32(d.sw))
	for _, x := range rp.bs {
		p := rp.col[x]
		col[x] = p
		if e := &t.lft[int(x)*t.stride+lid]; *e != p {
			rp.changed++
			*e = p
		}
	}
	// The rerouted sources on the weights.
	for _, s := range rp.bs {
		w := sp.srcCount[s]
		if w == 0 || rp.state[s] != repOK || int(s) == d.sw {
			continue
		}
		for x, steps := int(s), 0; x != d.sw && steps <= S; steps++ {
			k := x*256 + int(col[x])
			sp.weight[rp.fl.portCh[k]] += w
			x = int(rp.fl.portNb[k])
		}
	}
}

// walkOff takes the old routes of the sources srcs (nil: every switch)
// towards switch dst, as column col holds them, off the weights.
func (rp *repairer) walkOff(col []uint8, dst int, srcs []int32) {
	n := rp.S
	if srcs != nil {
		n = len(srcs)
	}
	for i := 0; i < n; i++ {
		s := i
		if srcs != nil {
			s = int(srcs[i])
		}
		w := rp.oldSrc[s]
		if w == 0 {
			continue
		}
		for x, steps := s, 0; x != dst && steps <= rp.S; steps++ {
			p := col[x]
			if p == noPort {
				break
			}
			k := x*256 + int(p)
			if rp.old.portCh[k] < 0 {
				break
			}
			rp.sp.weight[rp.old.portCh[k]] -= w
			x = int(rp.old.portNb[k])
		}
	}
}

// upstream marks the broken switches: those whose entry leaves through a
// port that is down now, and every switch routing into a broken one.
func (rp *repairer) upstream(d dest) {
	g2, f, col, adj := rp.g2, rp.f, rp.col, rp.oldAdj
	for _, x := range rp.seeds {
		p := col[x]
		if p == noPort || int(x) == d.sw {
			continue
		}
		if c := g2.PortChannel(int(f.switches[x]), int(p)); c >= 0 && !g2.Up(c) && rp.state[x] == 0 {
			rp.state[x] = repBroken
			rp.bs = append(rp.bs, x)
		}
	}
	for h := 0; h < len(rp.bs); h++ {
		x := rp.bs[h]
		for e := adj.start[x]; e < adj.start[x+1]; e++ {
			y := adj.nb[e]
			if rp.state[y] == 0 && col[y] == adj.rport[e] && f.switchAlive(int(y)) {
				rp.state[y] = repBroken
				rp.bs = append(rp.bs, y)
			}
		}
	}
}

// ok reports whether switch y's route works (following it as resolve
// does), setting its hop count and cost.
func (rp *repairer) ok(y int) bool {
	rp.resolve(y)
	return rp.state[y] == repOK
}

// resolve classifies switch s by following the column: OK (reaches the
// destination over working links; hop and cost set), broken (its route
// uses a link that is down, or it has none although its component holds
// the destination) or none.
func (rp *repairer) resolve(s int) {
	if rp.state[s] != 0 {
		return
	}
	f, fl, col := rp.f, rp.fl, rp.col
	walk := rp.walk[:0]
	x := s
	end := uint8(repBroken)
	for {
		if st := rp.state[x]; st != 0 {
			end = st
			if st == repWalk {
				end = repBroken // a loop
			}
			break
		}
		if !f.switchAlive(x) {
			end = repNone
			break
		}
		rp.state[x] = repWalk
		walk = append(walk, int32(x))
		p := col[x]
		if p == noPort {
			end = repBroken
			break
		}
		k := x*256 + int(p)
		if fl.portCh[k] < 0 {
			end = repBroken // the link or the next switch is down
			break
		}
		x = int(fl.portNb[k])
	}
	rp.walk = walk
	if end == repOK {
		for i := len(walk) - 1; i >= 0; i-- {
			u := int(walk[i])
			k := u*256 + int(col[u])
			v := int(fl.portNb[k])
			rp.state[u], rp.hop[u], rp.cost[u] = repOK, rp.hop[v]+1, rp.cost[v]+rp.sp.weight[fl.portCh[k]]
		}
		return
	}
	for _, u := range walk {
		rp.state[u] = end
		if end == repBroken {
			rp.bs = append(rp.bs, u)
		}
	}
}

// reroute gives every broken switch its hop count and next hop, or no
// route.
func (rp *repairer) reroute() {
	adj, sp := rp.sp.adj, rp.sp
	const inf = int32(1 << 30)
	for _, x := range rp.bs {
		rp.hop[x] = inf
		for e := adj.start[x]; e < adj.start[x+1]; e++ {
			if y := adj.nb[e]; rp.state[y] != repBroken && rp.ok(int(y)) {
				rp.hop[x] = min(rp.hop[x], rp.hop[y]+1)
			}
		}
	}
	for i := range rp.bkt {
		rp.bkt[i] = rp.bkt[i][:0]
	}
	push := func(x int32) {
		h := int(rp.hop[x])
		for len(rp.bkt) <= h {
			rp.bkt = append(rp.bkt, nil)
		}
		rp.bkt[h] = append(rp.bkt[h], x)
	}
	for _, x := range rp.bs {
		if rp.hop[x] < inf {
			push(x)
		}
	}
	// Hop counts outwards; each bucket is done before the next grows.
	var order []int32
	for h := 0; h < len(rp.bkt); h++ {
		for i := 0; i < len(rp.bkt[h]); i++ {
			x := rp.bkt[h][i]
			if int(rp.hop[x]) != h || rp.state[x] == repOK {
				continue // stale, or done
			}
			rp.state[x] = repOK // hop final; cost below
			order = append(order, x)
			for e := adj.start[x]; e < adj.start[x+1]; e++ {
				if z := adj.nb[e]; rp.state[z] == repBroken && rp.hop[z] > int32(h)+1 {
					rp.hop[z] = int32(h) + 1
					push(z)
				}
			}
		}
	}
	// Next hops in order of hops (as routeDest: least cost among the
	// neighbours one hop nearer, the first on ties).
	for _, x := range order {
		best, bestE := int64(1<<62), int32(-1)
		for e := adj.start[x]; e < adj.start[x+1]; e++ {
			y := adj.nb[e]
			if rp.state[y] != repOK || rp.hop[y] != rp.hop[x]-1 {
				continue
			}
			if c := rp.cost[y] + sp.weight[adj.ch[e]]; c < best {
				best, bestE = c, e
			}
		}
		rp.cost[x] = best
		rp.col[x] = adj.port[bestE]
	}
	for _, x := range rp.bs {
		if rp.state[x] != repOK {
			rp.col[x] = noPort
		}
	}
}

// switchComponents labels every switch with the smallest switch index of
// its component in adj.
func switchComponents(adj *swAdj) []int32 {
	S := len(adj.start) - 1
	comp := make([]int32, S)
	for i := range comp {
		comp[i] = -1
	}
	var q []int32
	for s := 0; s < S; s++ {
		if comp[s] >= 0 {
			continue
		}
		comp[s] = int32(s)
		q = append(q[:0], int32(s))
		for h := 0; h < len(q); h++ {
			for _, y := range adj.of(int(q[h])) {
				if comp[y] < 0 {
					comp[y] = int32(s)
					q = append(q, y)
				}
			}
		}
	}
	return comp
}
