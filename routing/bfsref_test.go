package routing

import (
	"slices"
)

// refState is the per-vertex and per-channel state of the reference.
type refState struct {
	vstamp []uint32
	vepoch uint32
	parent []int32
	vdist  []int32
	lq     []qent
	nq     []qent
	tq     []qent
	load   []int32
	cstmp  []uint32
	cep    uint32
	endV   []int32
	dist   []int32
}

// qent is a queued RG vertex: its id, node, state and entering channel.
type qent struct {
	x, v, q, c int32
}

func newRefState(r *Router) *refState {
	nv := r.t.nodes * r.a.nstates
	return &refState{vstamp: make([]uint32, nv), parent: make([]int32, nv), vdist: make([]int32, nv), load: make([]int32, len(r.up)), cstmp: make([]uint32, len(r.up))}
}

// buildRef builds a table with the reference algorithm (not verified).
func (r *Router) buildRef(active, transit []int) (*Table, error) {
	s := r.getScratch()
	defer r.putScratch(s)
	if err := r.prepareSet(s, active, transit); err != nil {
		return nil, err
	}
	tb := r.newTable(s, BFS)
	if err := r.buildBFSRef(s, newRefState(r), tb); err != nil {
		return nil, err
	}
	r.finishStats(s, tb)
	return tb, nil
}

// The sequential BFS table algorithm as it was before the set-local
// search (bfs.go): kept as the reference the fast one must match exactly
// with one source per round.

// buildBFS is the seed's BFS algorithm with both heuristics.
func (r *Router) buildBFSRef(s *scratch, rs *refState, tb *Table) error {
	t, a := r.t, r.a
	S := a.nstates
	m := len(s.act)
	if m < 2 {
		return nil
	}
	clear(rs.load)
	done := make([]bool, m)
	rs.endV = slices.Grow(rs.endV[:0], m)[:m]
	rs.dist = slices.Grow(rs.dist[:0], m)[:m]
	// ties are broken by the active nodes' rank in the set's frame
	rank := refRanks(r.t, s.act, s.trans)
	cur := slices.Index(rank, 0)
	var e routeEnc
	for iter := 0; iter < m; iter++ {
		src := int(s.act[cur])
		if err := r.bfsFrom(s, rs, src, cur); err != nil {
			return err
		}
		x0 := int32(src*S + a.begin)
		for j := 0; j < m; j++ {
			if j == cur {
				continue
			}
			e = routeEnc{}
			cep := newEpoch(&rs.cep, rs.cstmp)
			for y := rs.endV[j]; y != x0; y = rs.parent[y] {
				v, q := int(y)/S, int(y)%S
				d := Dir(a.in[q])
				c := t.inCh(v, d)
				if rs.cstmp[c] != cep {
					rs.cstmp[c] = cep
					rs.load[c]++
				}
				switch a.skind[q] {
				case sFS:
					e.fs = int(d) + 1
				case sLS:
					e.ls = int(d) + 1
				default:
					e.cnt[a.rank[d]]++
				}
			}
			e.canonical(a)
			if err := tb.store(pairIndex(m, cur, j), &e); err != nil {
				return err
			}
			tb.SumLength += int(rs.dist[j])
			tb.Figures.Diameter = max(tb.Figures.Diameter, int(rs.dist[j]))
		}
		done[cur] = true
		// heuristic 1: the next source is the one farthest from this one
		// (the first in the frame among equals).
		next, far := -1, int32(-1)
		for j := 0; j < m; j++ {
			if !done[j] && (rs.dist[j] > far || rs.dist[j] == far && rank[j] < rank[next]) {
				next, far = j, rs.dist[j]
			}
		}
		cur = next
	}
	copy(tb.loads, rs.load)
	return nil
}

// bfsFrom runs the BFS from src (active index si) in the RG restricted to
// the set, visiting every layer in order of increasing load of the links
// entering its vertices (a stable sort, so ties keep discovery order),
// until every active node is reached. It fills rs.parent, rs.endV and
// rs.dist.
func (r *Router) bfsFrom(s *scratch, rs *refState, src, si int) error {
	t, a := r.t, r.a
	S := int32(a.nstates)
	nd := t.nd
	ep := s.setEpoch
	m := len(s.act)
	_ = ep
	for j := range rs.dist {
		rs.dist[j] = -1
	}
	rs.dist[si] = 0
	remaining := m - 1
	vep := newEpoch(&rs.vepoch, rs.vstamp)
	x0 := int32(src)*S + int32(a.begin)
	rs.vstamp[x0] = vep
	rs.vdist[x0] = 0
	rs.parent[x0] = -1
	layer := append(rs.lq[:0], qent{x0, int32(src), int32(a.begin), -1})
	next := rs.nq[:0]
	for depth := int32(1); len(layer) > 0 && remaining > 0; depth++ {
		if depth > 1 && len(layer) > 1 {
			rs.tq = sortByLoad(layer, rs.tq, rs.load)
		}
		next = next[:0]
	expand:
		for _, e := range layer {
			q := e.q
			if a.domStart[q] < a.domStart[q+1] {
				vb := e.v * S
				dominated := false
				for _, p := range a.dom[a.domStart[q]:a.domStart[q+1]] {
					if y := vb + p; rs.vstamp[y] == vep && rs.vdist[y] < depth {
						dominated = true
						break
					}
				}
				if dominated {
					continue
				}
			}
			base := int(e.v) * nd
			open := s.open[e.v]
			for k := a.tstart[q]; k < a.tstart[q+1]; k++ {
				d := a.tdir[k]
				if open&(1<<d) == 0 || a.tskip[k] {
					continue
				}
				if a.tcond[k] && r.star.extra[e.c]&(1<<d) == 0 {
					continue
				}
				w := t.nb[base+int(d)]
				to := a.tto[k]
				y := w*S + to
				if rs.vstamp[y] == vep {
					continue
				}
				rs.vstamp[y] = vep
				rs.vdist[y] = depth
				rs.parent[y] = e.x
				next = append(next, qent{y, w, to, t.ch[base+int(d)]})
				if a.canEnd[to] && s.isAct[w] == ep {
					if j := s.actIdx[w]; rs.dist[j] < 0 {
						rs.dist[j] = depth
						rs.endV[j] = y
						if remaining--; remaining == 0 {
							break expand
						}
					}
				}
			}
		}
		layer, next = next, layer
	}
	rs.lq, rs.nq = layer[:0], next[:0]
	if remaining > 0 {
		for j := 0; j < m; j++ {
			if rs.dist[j] < 0 {
				return &UnreachableError{Src: src, Dst: int(s.act[j]), g: t.g}
			}
		}
	}
	return nil
}

// sortByLoad sorts the layer stably by the load of each vertex's entering
// channel (LSD radix sort on bytes; tmp is scratch space, returned grown).
func sortByLoad(layer, tmp []qent, load []int32) []qent {
	if len(layer) < 32 {
		for i := 1; i < len(layer); i++ {
			e := layer[i]
			k := load[e.c]
			j := i
			for ; j > 0 && load[layer[j-1].c] > k; j-- {
				layer[j] = layer[j-1]
			}
			layer[j] = e
		}
		return tmp
	}
	var mx int32
	for _, e := range layer {
		mx = max(mx, load[e.c])
	}
	tmp = slices.Grow(tmp[:0], len(layer))[:len(layer)]
	src, dst := layer, tmp
	passes := 0
	for shift := uint(0); shift < 32 && mx>>shift > 0; shift += 8 {
		var cnt [257]int
		for _, e := range src {
			cnt[(load[e.c]>>shift)&0xff+1]++
		}
		for i := 1; i < 257; i++ {
			cnt[i] += cnt[i-1]
		}
		for _, e := range src {
			b := (load[e.c] >> shift) & 0xff
			dst[cnt[b]] = e
			cnt[b]++
		}
		src, dst = dst, src
		passes++
	}
	if passes%2 == 1 {
		copy(layer, src)
	}
	return tmp
}

// refFrame is setFrame by its definition: per dimension, each coordinate
// that starts a cyclic interval of the projection (used, its predecessor
// not) is a candidate, with the length of the run of unused coordinates
// before it; the candidate with the longest run wins, first among the set
// nodes' projection, then among the active nodes'; where neither has a
// single winner the frame starts at 0 (decided false).
func refFrame(t *torus, act, trans []int32) (start []int, decided []bool) {
	start, decided = make([]int, t.n), make([]bool, t.n)
	for i, d := range t.dims {
		for _, nodes := range [][]int32{append(slices.Clone(act), trans...), act} {
			used := make([]bool, d)
			for _, v := range nodes {
				used[t.g.CoordAt(int(v), i)] = true
			}
			best, winners := 0, []int(nil)
			for x := 0; x < d; x++ {
				if !used[x] {
					continue
				}
				run := 0
				for run < d && !used[(x-run-1+2*d)%d] {
					run++
				}
				switch {
				case run == 0:
				case run > best:
					best, winners = run, []int{x}
				case run == best:
					winners = append(winners, x)
				}
			}
			if len(winners) == 1 {
				start[i], decided[i] = winners[0], true
				break
			}
		}
	}
	return start, decided
}

// refRanks returns, per active node (in act order), its rank among the
// active nodes in the order of their coordinates relative to refFrame's
// start, the highest dimension first.
func refRanks(t *torus, act, trans []int32) []int {
	start, _ := refFrame(t, act, trans)
	rel := func(v int32) []int {
		c := make([]int, t.n)
		for i, d := range t.dims {
			c[i] = ((t.g.CoordAt(int(v), i)-start[i])%d + d) % d
		}
		return c
	}
	idx := make([]int, len(act))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		ca, cb := rel(act[a]), rel(act[b])
		for i := t.n - 1; i >= 0; i-- {
			if ca[i] != cb[i] {
				return ca[i] - cb[i]
			}
		}
		return 0
	})
	rank := make([]int, len(act))
	for k, i := range idx {
		rank[i] = k
	}
	return rank
}
