package sim

import (
	"github.com/icn-hpc/icn/topology"
)

// cand is one routing option for a head flit: an output port and the
// virtual channels it may take there.
type cand struct {
	gp     int32 // output global port
	lo, hi int16 // VC range [lo, hi)
	enter  bool  // bubble: entering a ring, room for one more maximal packet must stay
	adapt  bool  // adaptive option (chosen by free credits); others are escape options in order
	dir    int8  // torus direction code of the hop, -1 if none
	set    uint8 // flags to set when the head takes this option
}

// vcRange returns the VCs of class k out of classes (clamped so a forced
// run with too few VCs still has one).
func (c *Core) vcRange(k, classes int) (int16, int16) {
	V := c.V
	if classes <= 1 || V < classes {
		return 0, int16(V)
	}
	k = min(k, classes-1)
	per := V / classes
	lo := k * per
	hi := lo + per
	if k == classes-1 {
		hi = V
	}
	return int16(lo), int16(hi)
}

// route lists the options of the head f at router r (in w.cands).
func (c *Core) route(w *worker, r int, f *flit) []cand {
	n := c.n
	cs := w.cands[:0]
	if int(f.dst) == r {
		cs = append(cs, cand{gp: n.localGP[r], lo: 0, hi: int16(c.V), dir: -1})
		w.cands = cs
		return cs
	}
	cs = n.algo.route(c, w, cs, r, f)
	w.cands = cs
	return cs
}

// routeCoord routes on coordinates (dor, dirbit, adaptive): the
// dimension- or direction-order escape hop, after the adaptive options
// of Duato's routing.
func routeCoord(c *Core, _ *worker, cs []cand, r int, f *flit) []cand {
	n := c.n
	V := int16(c.V)
	base := n.portStart[r]
	t := int(f.dst)
	if !n.direct {
		if n.localGP[r] >= 0 { // an end node: up to its switch
			return append(cs, cand{gp: base, lo: 0, hi: V, dir: -1})
		}
		sw := int(n.switchOf[t])
		if r == sw {
			return append(cs, cand{gp: base + int32(n.attach[t]), lo: 0, hi: V, dir: -1})
		}
		t = sw
	}
	nd := n.nd
	cr := n.coord[r*nd : r*nd+nd]
	ct := n.coord[t*nd : t*nd+nd]
	dim := n.escapeDim(cr, ct, f.dirs)
	if n.algo.duato {
		cs = c.appendAdaptive(cs, r, cr, ct)
	}
	s := n.escapeSign(cr, ct, f.dirs, dim)
	code := 2*dim + s
	p := n.dirPort[r*2*nd+code]
	if p < 0 {
		return cs
	}
	cd := cand{gp: base + int32(p), lo: 0, hi: V, dir: int8(code)}
	c.escapeVCs(&cd, f, dim, s, cr, ct)
	return append(cs, cd)
}

// escapeSign is the direction (0 = +, 1 = −) of the dimension-order hop in
// dimension i: the packet's direction bit, or for adaptive routing the
// shorter way from here, since adaptive hops may take the other way round
// a ring at a tie (ties: the packet's direction bit).
func (n *Network) escapeSign(cr, ct []int16, dirs uint8, i int) int {
	if !n.algo.duato {
		return int(dirs>>uint(i)) & 1
	}
	if !n.wrap[i] {
		if ct[i] > cr[i] {
			return 0
		}
		return 1
	}
	k := n.dims[i]
	delta := (int(ct[i]) - int(cr[i]) + k) % k
	switch {
	case 2*delta < k:
		return 0
	case 2*delta > k:
		return 1
	}
	return int(dirs>>uint(i)) & 1
}

// escapeDim is the dimension of the dimension-order (escape) hop: the first
// unresolved one, or for dirbit routing the first unresolved positive one,
// then the first negative one.
func (n *Network) escapeDim(cr, ct []int16, dirs uint8) int {
	if n.algo.dirOrder {
		for pass := 0; pass < 2; pass++ {
			for i := range cr {
				if cr[i] != ct[i] && n.escapeSign(cr, ct, dirs, i) == pass {
					return i
				}
			}
		}
		return -1
	}
	for i := range cr {
		if cr[i] != ct[i] {
			return i
		}
	}
	return -1
}

// appendAdaptive adds the adaptive candidates at router r: every productive
// direction, on the VCs above the escape classes.
func (c *Core) appendAdaptive(cs []cand, r int, cr, ct []int16) []cand {
	n := c.n
	V := int16(c.V)
	aLo := int16(1)
	if n.fc == fcDateline {
		aLo = 2
	}
	if aLo >= V {
		return cs
	}
	base := n.portStart[r]
	nd := n.nd
	for i := 0; i < nd; i++ {
		if cr[i] == ct[i] {
			continue
		}
		k := n.dims[i]
		for s := 0; s < 2; s++ {
			productive := false
			if n.wrap[i] {
				delta := (int(ct[i]) - int(cr[i]) + k) % k
				productive = (s == 0 && 2*delta <= k) || (s == 1 && 2*delta >= k)
			} else {
				productive = (s == 0) == (ct[i] > cr[i])
			}
			if !productive {
				continue
			}
			code := 2*i + s
			p := n.dirPort[r*2*nd+code]
			if p < 0 {
				continue
			}
			cs = append(cs, cand{gp: base + int32(p), lo: aLo, hi: V, adapt: true, dir: int8(code)})
		}
	}
	return cs
}

// escapeVCs narrows the escape hop cd in dimension dim, direction s, to the
// VCs its flow control allows: the dateline class on a ring, the bubble
// rule (enter a ring only with room for one more packet), or VC 0 for
// adaptive routing off rings.
func (c *Core) escapeVCs(cd *cand, f *flit, dim, s int, cr, ct []int16) {
	n := c.n
	code := cd.dir
	if !n.wrap[dim] {
		if n.algo.duato {
			cd.lo, cd.hi = 0, 1
		}
		return
	}
	switch n.fc {
	case fcDateline:
		cls := c.ringClass(f, code, s, int(cr[dim]), int(ct[dim]))
		if n.algo.duato {
			cd.lo, cd.hi = int16(cls), int16(cls+1)
			if c.V < 2 {
				cd.lo, cd.hi = 0, 1
			}
		} else {
			cd.lo, cd.hi = c.vcRange(cls, 2)
		}
	case fcBubble:
		if n.algo.duato {
			cd.lo, cd.hi = 0, 1
			cd.enter = !(f.lastDir == code && f.vc == 0)
		} else if f.lastDir == code {
			cd.lo, cd.hi = int16(f.vc), int16(f.vc)+1
		} else {
			cd.enter = true
		}
	}
}

// ringClass returns the dateline VC class (0 or 1) of a hop in direction
// code (sign s) from ring position cur towards position dst.
//
// DatelineBookSim (BookSim's dim_order_torus): the class is chosen when
// the packet enters the ring and kept on every hop of it: 1 if its way
// round the ring crosses the wrap link, 0 if not. DatelineAhead (icn's
// earlier rule): 0 while the wrap link lies ahead, 1 after it and on
// rings the packet does not wrap.
func (c *Core) ringClass(f *flit, code int8, s, cur, dst int) int {
	ahead := (s == 0 && cur > dst) || (s == 1 && cur < dst)
	if c.n.dateline == dlAhead {
		if ahead {
			return 0
		}
		return 1
	}
	if f.lastDir == code {
		// Still on the ring: keep the class of the VC it arrived on
		// (for adaptive routing only if that was an escape VC).
		if c.n.algo.duato {
			if f.vc < 2 {
				return int(f.vc)
			}
		} else if lo, _ := c.vcRange(1, 2); int16(f.vc) >= lo {
			return 1
		} else {
			return 0
		}
	}
	if ahead {
		return 1
	}
	return 0
}

// routeTable takes the next step of the head's table route.
func routeTable(c *Core, _ *worker, cs []cand, r int, f *flit) []cand {
	n := c.n
	bt := n.tab
	k := int(f.route)
	i := int(bt.start[k]) + int(f.step)
	d := bt.dirs[i]
	p := n.dirPort[r*2*n.nd+int(d)]
	cd := cand{gp: n.portStart[r] + int32(p), lo: 0, hi: int16(c.V), dir: int8(d)}
	switch n.fc {
	case fcDateline:
		cd.lo, cd.hi = c.vcRange(int(bt.cls[i]), 2)
	case fcBubble:
		if f.lastDir == int8(d) {
			cd.lo, cd.hi = int16(f.vc), int16(f.vc)+1
		} else {
			cd.enter = true
		}
	}
	return append(cs, cd)
}

// routeMinhop routes minimally to the head's destination.
func routeMinhop(c *Core, w *worker, cs []cand, r int, f *flit) []cand {
	return c.routeMin(w, cs, r, int(f.dst), f)
}

// routeMin lists the minimal ports towards node d (adaptive choice).
func (c *Core) routeMin(w *worker, cs []cand, r, d int, f *flit) []cand {
	n := c.n
	if n.group != nil && n.group[r] != n.group[d] {
		w.ports = n.dfPorts(r, int(n.group[d]), w.ports[:0])
	} else {
		w.ports = n.minPorts(r, d, w.ports[:0])
	}
	lo, hi := c.vcRange(int(f.cls), n.classes)
	for _, gp := range w.ports {
		cs = append(cs, cand{gp: gp, lo: lo, hi: hi, adapt: true, dir: -1})
	}
	return cs
}

// routeUpDown lists the up*/down* ports on shortest legal paths.
func routeUpDown(c *Core, _ *worker, cs []cand, r int, f *flit) []cand {
	n := c.n
	ud := n.ud
	ti := int(n.termOf[f.dst])
	dist := ud.dist[ti*ud.R : (ti+1)*ud.R]
	down := ud.down[ti*ud.R : (ti+1)*ud.R]
	V := int16(c.V)
	base := int(n.portStart[r])
	for p := 0; p < n.deg(r); p++ {
		gp := base + p
		if !n.g.Up(int(n.gpChan[gp])) {
			continue
		}
		u := int(n.gpPeerN[gp])
		if u != int(f.dst) && !n.forwards[u] {
			continue
		}
		if ud.up[gp] {
			if f.flags&flDown == 0 && int(dist[u])+1 == int(dist[r]) {
				cs = append(cs, cand{gp: int32(gp), lo: 0, hi: V, adapt: true, dir: -1})
			}
			continue
		}
		want := int(dist[r])
		if f.flags&flDown != 0 {
			want = int(down[r])
		}
		if int(down[u])+1 == want && down[u] != topology.Unreachable {
			cs = append(cs, cand{gp: int32(gp), lo: 0, hi: V, adapt: true, dir: -1, set: flDown})
		}
	}
	return cs
}

// routeValiant routes minimally to the intermediate group, then minimally
// to the destination.
func routeValiant(c *Core, w *worker, cs []cand, r int, f *flit) []cand {
	return c.valiant(w, cs, r, f, false)
}

// routeUGAL routes as routeValiant but first chooses, at the source
// switch, between the minimal and the Valiant route by queue length ×
// hops (UGAL-L).
func routeUGAL(c *Core, w *worker, cs []cand, r int, f *flit) []cand {
	return c.valiant(w, cs, r, f, true)
}

// valiant is routeValiant, with UGAL's choice at the source switch if
// ugal.
func (c *Core) valiant(w *worker, cs []cand, r int, f *flit, ugal bool) []cand {
	n := c.n
	d := int(f.dst)
	if f.route >= 0 && f.flags&flPhase2 == 0 && n.group[r] == f.route {
		f.flags |= flPhase2
	}
	if ugal && f.route >= 0 && f.flags&flDecided == 0 && n.forwards[r] {
		f.flags |= flDecided
		gi := int(f.route)
		minC := c.routeMin(w, cs[:0], r, d, f)
		qMin := c.bestQueue(minC)
		hMin := n.cost(r, d)
		// After minC, which may have outgrown cs's array.
		valC := c.towardGroup(w, minC[len(minC):], r, gi, f)
		qVal := c.bestQueue(valC)
		hVal := int(n.distG[r*n.groups+gi]) + n.groupCost(gi, d)
		if qMin*hMin <= qVal*hVal {
			f.route = -1
		}
		cs = cs[:0]
	}
	if f.route < 0 || f.flags&flPhase2 != 0 {
		return c.routeMin(w, cs, r, d, f)
	}
	return c.towardGroup(w, cs, r, int(f.route), f)
}

// towardGroup lists the ports of r on dragonfly minimal routes to group
// gi (at most one global hop).
func (c *Core) towardGroup(w *worker, cs []cand, r, gi int, f *flit) []cand {
	n := c.n
	lo, hi := c.vcRange(int(f.cls), n.classes)
	w.ports = n.dfPorts(r, gi, w.ports[:0])
	for _, gp := range w.ports {
		cs = append(cs, cand{gp: gp, lo: lo, hi: hi, adapt: true, dir: -1})
	}
	return cs
}

// groupCost is the fewest hops from a switch of group gi to node d.
func (n *Network) groupCost(gi, d int) int {
	best := topology.Unreachable
	for _, s := range n.groupSw[gi] {
		best = min(best, n.cost(int(s), d))
	}
	return best
}

// bestQueue returns the smallest downstream occupancy (flits buffered or
// in flight) over the options' ports.
func (c *Core) bestQueue(cs []cand) int {
	best := 1 << 30
	for _, cd := range cs {
		q := 0
		for v := 0; v < c.V; v++ {
			q += c.B - int(c.credit[int(cd.gp)*c.V+v])
		}
		best = min(best, q)
	}
	return best
}

// creditOK reports whether output VC ovc can take the head f now.
func (c *Core) creditOK(ovc int, f *flit, enter bool) bool {
	cr := int(c.credit[ovc])
	switch c.n.sw {
	case swWormhole:
		return cr >= 1
	}
	need := int(f.size)
	if enter {
		need += c.n.maxP
	}
	return cr >= need
}

// chooseVC returns the output VC the head at input VC iv of router r asks
// for in cycle t (and the routing option it belongs to), or -1 if none is
// free. Adaptive options are ranked by free credits; escape options are
// tried in order only if no adaptive one is free. The head flit itself is
// read only when needed: a head waiting with a cached oblivious route
// under wormhole switching is decided from the compact per-VC arrays.
func (c *Core) chooseVC(w *worker, r, iv int, t int64) (int, cand) {
	var cs []cand
	var f *flit
	if cc := &c.ivCand[iv]; cc.gp >= 0 {
		cs = w.one[:]
		cs[0] = *cc
	} else {
		f = &c.buf[iv*c.B+int(c.bHead[iv])]
		if f.seq != 0 {
			w.st.err("cycle %d: body flit without a route at %s", t, c.portName(iv/c.V))
			return -1, cand{}
		}
		cs = c.route(w, r, f)
		if c.n.oblivious && len(cs) == 1 {
			*cc = cs[0]
		}
	}
	if f == nil && (len(cs) > 1 || c.n.sw != swWormhole) {
		f = &c.buf[iv*c.B+int(c.bHead[iv])]
	}
	V := c.V
	lgp := c.n.localGP[r]
	bestOVC, bestCred, bestK := -1, -1, -1
	// Adaptive options with equal credits are spread over packets (by
	// source and destination, like D-mod-k) rather than all taking the
	// first one.
	k0 := 0
	if len(cs) > 1 {
		k0 = int((uint32(f.dst)*2654435761 + uint32(f.src)*40503) % uint32(len(cs)))
	}
	for pass := 0; pass < 2 && bestOVC < 0; pass++ {
		for i := range cs {
			k := i
			if pass == 0 {
				k = (i + k0) % len(cs)
			}
			cd := &cs[k]
			if cd.adapt != (pass == 0) {
				continue
			}
			for v := int(cd.lo); v < int(cd.hi); v++ {
				ovc := int(cd.gp)*V + v
				if c.owner[ovc] >= 0 {
					continue
				}
				cr := 1 << 30
				if cd.gp != lgp {
					if !c.creditOK(ovc, f, cd.enter) {
						continue
					}
					cr = int(c.credit[ovc])
				}
				if cr > bestCred {
					bestOVC, bestCred, bestK = ovc, cr, k
				}
			}
			if pass == 1 && bestOVC >= 0 {
				break
			}
		}
	}
	if bestOVC < 0 {
		return -1, cand{}
	}
	return bestOVC, cs[bestK]
}

// grantVC gives output VC ovc (of option cd) to the head f at input VC iv
// of router r.
func (c *Core) grantVC(r, iv, ovc int, cd *cand, f *flit) {
	c.ivCand[iv].gp = -1
	c.owner[ovc] = int32(iv)
	c.ivOut[iv] = int32(ovc)
	c.ivOutGP[iv] = cd.gp
	if cd.gp != c.n.localGP[r] {
		f.step++
		f.lastDir = cd.dir
		f.flags |= cd.set
		if c.n.gpGlobal[cd.gp] {
			f.cls++
		}
	}
}

// sourceDirBits returns the direction bits of a coordinate-routed packet
// (dor, dirbit, adaptive): the shorter way round each ring, ties broken
// at random per packet so both directions carry half.
func sourceDirBits(n *Network, tm *terminal, _ int, dst int32) (dirs uint8, route int32) {
	s, d := int(n.switchOf[tm.node]), int(n.switchOf[dst])
	nd := n.nd
	for i := 0; i < nd; i++ {
		a, b := int(n.coord[s*nd+i]), int(n.coord[d*nd+i])
		if a == b {
			continue
		}
		if !n.wrap[i] {
			if b < a {
				dirs |= 1 << uint(i)
			}
			continue
		}
		k := n.dims[i]
		delta := (b - a + k) % k
		if 2*delta > k || (2*delta == k && tm.rng.IntN(2) == 1) {
			dirs |= 1 << uint(i)
		}
	}
	return dirs, -1
}

// sourceTable returns the packet's route in the routing table.
func sourceTable(n *Network, _ *terminal, ti int, dst int32) (dirs uint8, route int32) {
	a := len(n.tab.active)
	if di := n.termOf[dst]; int(di) != ti {
		return 0, n.tab.route[ti*a+int(di)]
	}
	return 0, -1
}

// sourceValiant draws the intermediate group of a packet that leaves its
// group (Valiant, UGAL): a random group other than the source's and the
// destination's.
func sourceValiant(n *Network, tm *terminal, _ int, dst int32) (dirs uint8, route int32) {
	sg, dg := n.group[tm.node], n.group[dst]
	if sg == dg {
		return 0, -1
	}
	gi := tm.rng.IntN(n.groups - 2)
	lo, hi := int(min(sg, dg)), int(max(sg, dg))
	if gi >= lo {
		gi++
	}
	if gi >= hi {
		gi++
	}
	return 0, int32(gi)
}
