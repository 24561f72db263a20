package unicast

import "slices"

// sssp with teams: each destination's routes are split over the members
// of a team, switch by switch.

// routeAllTeams routes ds on a team of len(st.lo)-1 members.
func (st *ssspState) routeAllTeams(o Options, ds []dest, col []uint8) error {
	n := len(st.lo) - 1
	st.owner = make([]uint8, st.S)
	for w := range n {
		for p := st.lo[w]; p < st.lo[w+1]; p++ {
			st.owner[p] = uint8(w)
		}
	}
	st.boxes = make([]teamBox, n)
	for i := range st.boxes {
		for par := range st.boxes[i].out {
			st.boxes[i].out[par] = make([][]accMsg, n)
		}
	}
	defer func() { st.boxes, st.owner = nil, nil }()
	return newTeam(n).run(func(m *member) error { return st.routeAllTeam(m, o, ds, col) })
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
				if o.ctx != nil && o.ctx.Err() != nil {
					st.stop.Store(true)
				}
			}
			m.barrier()
			if st.stop.Load() {
				return o.ctx.Err()
			}
		}
	}
	return nil
}

// routeDestTeam is routeDest for one member of a team. Layer by layer
// outwards, the members choose the next hops of the layer's switches
// they own; then layer by layer inwards they add each switch's sources
// (its own and those its tree children passed on) to the weight of its
// link and send them to the owner of the next switch. The farthest layer
// does both in one step. Each step ends with a barrier. A step reads the
// costs of one layer and writes those of the next, which live in the
// other array; it reads the messages of the step before and writes its
// own into the other set of boxes. A member writes only data of the
// switches it owns.
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
	order, b := tr.order, tr.bounds
	L := len(b) - 1 // layers, the destination's included
	if L < 2 && st.trees == nil {
		m.barrier() // all have read st.tmp before member 0 searches again
	}
	perm, lo, hi := st.perm, st.lo[m.w], st.lo[m.w+1]
	dst := perm[d.sw]
	box := &st.boxes[m.w]
	// mine returns this member's switches of layer h: a range of the
	// layer when it is sorted for this team, else the whole layer (and
	// the loops skip the others' switches).
	sorted := int(tr.team) == len(st.boxes)
	mine := func(h int) []int32 {
		layer := order[b[h]:b[h+1]]
		if !sorted {
			return layer
		}
		i0, _ := slices.BinarySearchFunc(layer, lo, func(u, p int32) int { return int(perm[u]) - int(p) })
		i1, _ := slices.BinarySearchFunc(layer, hi, func(u, p int32) int { return int(perm[u]) - int(p) })
		return layer[i0:i1]
	}
	for h := 1; h < L; h++ {
		last := h == L-1
		if last {
			box.clear(h)
		}
		for _, u := range mine(h) {
			if p := perm[u]; p >= lo && p < hi {
				st.chooseNext(p, h, dst, out)
				if last {
					st.passOnTeam(box, p, h)
				}
			}
		}
		m.barrier()
	}
	for h := L - 2; h >= 1; h-- {
		for from := range st.boxes {
			for _, msg := range st.boxes[from].out[(h+1)&1][m.w] {
				st.acc[msg.sw] += msg.n
			}
		}
		box.clear(h)
		for _, u := range mine(h) {
			if p := perm[u]; p >= lo && p < hi {
				st.passOnTeam(box, p, h)
			}
		}
		m.barrier()
	}
}

// passOnTeam adds the sources routed through switch p (h hops from the
// destination) to the weight of p's link and sends them to the owner of
// the next switch, unless that is the destination. p's cost and sources
// are no longer needed.
func (st *ssspState) passOnTeam(box *teamBox, p int32, h int) {
	st.cost[h&1][p] = costUnset
	a := st.acc[p] + st.src[p]
	st.acc[p] = 0
	e := st.next[p]
	st.wE[e] += a
	if h > 1 {
		x := st.in.nb[e]
		to := st.owner[x]
		box.out[h&1][to] = append(box.out[h&1][to], accMsg{sw: x, n: a})
	}
}

// teamBox is one member's outgoing messages: by parity of the step that
// wrote them and by receiving member.
type teamBox struct {
	out [2][][]accMsg
	_   [64]byte
}

// accMsg passes n sources on to switch sw.
type accMsg struct {
	sw int32
	n  int64
}

// clear empties the boxes written in steps of h's parity (read in the
// step before this one).
func (b *teamBox) clear(h int) {
	for to := range b.out[h&1] {
		b.out[h&1][to] = b.out[h&1][to][:0]
	}
}
