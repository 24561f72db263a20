package unicast

import (
	"fmt"

	"github.com/icn-hpc/icn/internal/par"
)

// Virtual-lane layering (DFSSSP, Domke et al.).
//
// A path is identified by its source switch and destination LID: every end
// port cabled to a switch starts its routes there, so all of them share the
// path and its lane. All paths start on lane 0. For lane l = 0, 1, …: while
// the channel dependency graph of lane l has a cycle, take the cycle's edge
// (turn) used by the fewest end-port pairs and move every lane-l path that
// makes that turn to lane l+1. When lane l is acyclic the next lane is
// processed. Only switch-to-switch turns are counted: injection and
// ejection channels can never lie on a cycle.
//
// The cycle search is a depth-first search whose finished ("black")
// channels stay finished while the lane is processed: moving paths away
// only removes edges, so nothing reachable from a finished channel can
// become cyclic.

type layerResult struct {
	needed int
	limit  bool // the last lane still has a cycle
	breaks int  // cycles broken
	moved  int64
}

// turnIndex numbers the turns (channel into a switch, output port).
type turnIndex struct {
	base   []int32 // per channel, -1 unless switch→switch
	nslots int
}

func newTurnIndex(f *Fabric) (*turnIndex, error) {
	g := f.G
	ti := &turnIndex{base: make([]int32, g.NumChannels())}
	n := 0
	for c := range ti.base {
		ti.base[c] = -1
		if f.swIndex[g.Src(c)] >= 0 && f.swIndex[g.Dst(c)] >= 0 {
			ti.base[c] = int32(n)
			n += g.NumPorts(g.Dst(c))
			if n > 1<<30 {
				return nil, fmt.Errorf("too many turns for a dependency graph")
			}
		}
	}
	ti.nslots = n
	return ti, nil
}

// sourceWeights returns per switch the number of live end ports cabled to
// it (the pairs a path from that switch stands for).
func sourceWeights(f *Fabric) []uint32 {
	w := make([]uint32, len(f.switches))
	for s := range w {
		for _, ti := range f.termsOf(s) {
			if f.termAlive(int(ti)) {
				w[s]++
			}
		}
	}
	return w
}

// fastLFT answers "which switch does s forward lid to" without the
// checks of Tables.next for switch-to-switch hops: a per-port table of the
// live switch links.
type fastLFT struct {
	t      *Tables
	portCh []int32 // [s*256+port] channel to a live switch, -1 otherwise
	portNb []int32 // [s*256+port] that switch
}

func newFastLFT(t *Tables, adj *swAdj) *fastLFT {
	S := len(t.F.switches)
	fl := &fastLFT{t: t, portCh: make([]int32, S*256), portNb: make([]int32, S*256)}
	for i := range fl.portCh {
		fl.portCh[i] = -1
	}
	for s := 0; s < S; s++ {
		for e := adj.start[s]; e < adj.start[s+1]; e++ {
			k := s*256 + int(adj.port[e])
			fl.portCh[k], fl.portNb[k] = adj.ch[e], adj.nb[e]
		}
	}
	return fl
}

// next is Tables.next, fast for switch-to-switch hops.
func (fl *fastLFT) next(s, lid int) int {
	p := fl.t.lft[s*fl.t.stride+lid]
	if p != noPort {
		if k := s*256 + int(p); fl.portCh[k] >= 0 {
			return int(fl.portNb[k])
		}
	}
	return fl.t.next(s, lid)
}

// treeOrder fills nxt with every switch's next hop towards lid and returns
// the switches whose route reaches the destination, farthest first; depth
// gets each switch's hop count to the delivering switch (-1 for switches
// whose route is dropped or loops).
func (fl *fastLFT) treeOrder(lid int, nxt, depth []int32, buckets [][]int32) ([]int32, [][]int32) {
	S := len(fl.t.F.switches)
	for s := 0; s < S; s++ {
		nxt[s] = int32(fl.next(s, lid))
		depth[s] = -2 // unknown
	}
	maxD := 0
	var stack []int32
	for s := 0; s < S; s++ {
		if depth[s] != -2 {
			continue
		}
		stack = stack[:0]
		x := int32(s)
		for depth[x] == -2 {
			depth[x] = -3 // on the current walk
			stack = append(stack, x)
			n := nxt[x]
			if n < 0 {
				break
			}
			x = n
		}
		var d int32
		switch {
		case depth[x] >= 0:
			d = depth[x]
		case depth[x] == -3 && nxt[x] == atDest:
			d = -1 // x delivers: depth 0 below
		default:
			d = -100 // dropped or looping
		}
		for i := len(stack) - 1; i >= 0; i-- {
			y := stack[i]
			if d == -100 {
				depth[y] = -1
				continue
			}
			d++
			depth[y] = d
			maxD = max(maxD, int(d))
		}
	}
	for len(buckets) <= maxD {
		buckets = append(buckets, nil)
	}
	for i := range buckets {
		buckets[i] = buckets[i][:0]
	}
	for s := 0; s < S; s++ {
		if depth[s] >= 0 {
			buckets[depth[s]] = append(buckets[depth[s]], int32(s))
		}
	}
	var order []int32
	for d := maxD; d >= 0; d-- {
		order = append(order, buckets[d]...)
	}
	return order, buckets
}

// layer assigns lanes to the paths of t so that every lane's dependency
// graph is acyclic, using at most maxLanes lanes.
func layer(t *Tables, maxLanes int, progress func(int)) (layerResult, error) {
	f := t.F
	g := f.G
	S := len(f.switches)
	ti, err := newTurnIndex(f)
	if err != nil {
		return layerResult{}, err
	}
	srcW := sourceWeights(f)
	var lids []int
	for _, d := range f.dests() {
		if d.alive {
			lids = append(lids, d.lid)
		}
	}
	adj := switchAdjacency(f)
	fl := newFastLFT(t, adj)
	stride := t.stride
	lft := t.lft
	nw := par.Workers(0)

	// Inverse index: the LIDs each (switch, port) forwards.
	byStart := make([]int32, S*256+1)
	par.For(S, nw, func(_, s int) {
		for _, lid := range lids {
			if p := lft[s*stride+lid]; p != noPort {
				byStart[s*256+int(p)+1]++
			}
		}
	})
	for i := 1; i < len(byStart); i++ {
		byStart[i] += byStart[i-1]
	}
	byLID := make([]uint16, byStart[S*256])
	par.For(S, nw, func(_, s int) {
		var fill [256]int32
		for p := range fill {
			fill[p] = byStart[s*256+p]
		}
		for _, lid := range lids {
			if p := lft[s*stride+lid]; p != noPort {
				byLID[fill[p]] = uint16(lid)
				fill[p]++
			}
		}
	})

	// Lane 0 holds every path: count the pairs on each turn.
	type scratch struct {
		cnt     []uint32
		nxt     []int32
		depth   []int32
		acc     []uint64
		buckets [][]int32
	}
	scr := make([]scratch, nw)
	for i := range scr {
		scr[i].cnt = make([]uint32, ti.nslots)
		scr[i].nxt = make([]int32, S)
		scr[i].depth = make([]int32, S)
		scr[i].acc = make([]uint64, S)
	}
	par.For(len(lids), nw, func(w, k int) {
		sc := &scr[w]
		lid := lids[k]
		var order []int32
		order, sc.buckets = fl.treeOrder(lid, sc.nxt, sc.depth, sc.buckets)
		for _, u := range order {
			sc.acc[u] = uint64(srcW[u])
		}
		for _, u := range order {
			if v := sc.nxt[u]; v >= 0 {
				sc.acc[v] += sc.acc[u]
			}
		}
		for _, u := range order {
			v := sc.nxt[u]
			if v < 0 || sc.acc[u] == 0 || sc.nxt[v] < 0 {
				continue
			}
			c1 := fl.portCh[int(u)*256+int(lft[int(u)*stride+lid])]
			p2 := int32(lft[int(v)*stride+lid])
			sc.cnt[ti.base[c1]+p2-1] += uint32(sc.acc[u])
		}
	})
	counts := [][]uint32{scr[0].cnt}
	for i := 1; i < nw; i++ {
		for k, v := range scr[i].cnt {
			counts[0][k] += v
		}
		scr[i].cnt = nil
	}

	// The moves below follow one LID across many switches: a LID-major
	// copy of the tables keeps those reads in one cache-friendly row.
	lftT := make([]uint8, (stride)*S)
	par.For(S, nw, func(_, s int) {
		row := lft[s*stride : (s+1)*stride]
		for lid, p := range row {
			lftT[lid*S+s] = p
		}
	})
	lanesT := make([]uint8, stride*S) // LID-major while layering
	finish := func(n int) {
		lanes := make([]uint8, S*stride)
		par.For(S, nw, func(_, s int) {
			for lid := 0; lid < stride; lid++ {
				lanes[s*stride+lid] = lanesT[lid*S+s]
			}
		})
		t.setLanes(lanes, n)
	}
	res := layerResult{needed: 1}
	var bfs, bfsUp, bfsIn []int32
	var agg []uint32
	// move shifts every lane-l path that enters switch v through c1 and
	// leaves it through port to lane l+1. The turn's pair count says how
	// many remain, so the search stops as soon as it reaches zero. Routes
	// to one LID form a tree: a search from u over the switches routing
	// into it finds the sources, and the pairs moved are summed up the
	// tree so each turn is updated once per LID.
	move := func(l int, c1 int32, port int) {
		u := int(f.swIndex[g.Src(int(c1))])
		vs := int(f.swIndex[g.Dst(int(c1))])
		pu := g.SrcPort(int(c1))
		from, to := counts[l], counts[l+1]
		slot := ti.base[c1] + int32(port-1)
		for _, lid16 := range byLID[byStart[u*256+pu]:byStart[u*256+pu+1]] {
			if from[slot] == 0 {
				return
			}
			lid := int(lid16)
			if int(lft[vs*stride+lid]) != port {
				continue
			}
			col := lftT[lid*S : (lid+1)*S]
			bfs, bfsUp, bfsIn = append(bfs[:0], int32(u)), append(bfsUp[:0], -1), append(bfsIn[:0], -1)
			for h := 0; h < len(bfs) && h < S; h++ {
				x := bfs[h]
				for e := adj.start[x]; e < adj.start[x+1]; e++ {
					y := adj.nb[e]
					if col[y] == adj.rport[e] {
						bfs = append(bfs, y)
						bfsUp = append(bfsUp, int32(h))
						bfsIn = append(bfsIn, adj.ch[e]^1) // y→x
					}
				}
			}
			if cap(agg) < len(bfs) {
				agg = make([]uint32, len(bfs), 2*len(bfs))
			}
			agg = agg[:len(bfs)]
			clear(agg)
			for h := len(bfs) - 1; h >= 0; h-- {
				x := int(bfs[h])
				if w := srcW[x]; w > 0 && lanesT[lid*S+x] == uint8(l) {
					lanesT[lid*S+x] = uint8(l + 1)
					agg[h] += w
					res.moved++
				}
				a := agg[h]
				if a == 0 {
					continue
				}
				if up := bfsUp[h]; up >= 0 {
					agg[up] += a
					xp := int(bfs[up])
					pp := int(col[xp])
					if fl.portCh[xp*256+pp] >= 0 {
						k := ti.base[bfsIn[h]] + int32(pp-1)
						from[k] -= a
						to[k] += a
					}
				}
			}
			total := agg[0]
			if total == 0 {
				continue
			}
			// The common part of the routes, from u on.
			prev := c1
			y := vs
			for steps := 0; steps <= S; steps++ {
				p := int(col[y])
				c := fl.portCh[y*256+p]
				if c < 0 {
					break
				}
				k := ti.base[prev] + int32(p-1)
				from[k] -= total
				to[k] += total
				prev = c
				y = int(fl.portNb[y*256+p])
			}
		}
	}

	// Depth-first cycle search per lane.
	color := make([]uint8, g.NumChannels()) // 0 white, 1 gray, 2 black
	pos := make([]int32, g.NumChannels())
	type frame struct {
		c int32
		p int32 // next output port to try
	}
	var stack []frame
	edgeSlot := func(k int) int32 { // slot of the stack edge k → k+1
		return ti.base[stack[k].c] + int32(g.SrcPort(int(stack[k+1].c))-1)
	}
	unwind := func(k int) { // keep frames 0..k
		for _, fr := range stack[k+1:] {
			color[fr.c] = 0
		}
		stack = stack[:k+1]
	}
	for l := 0; l < maxLanes && l < len(counts); l++ {
		cnt := counts[l]
		clear(color)
		for root := 0; root < g.NumChannels(); root++ {
			if ti.base[root] < 0 || color[root] != 0 || !g.Up(root) {
				continue
			}
			stack = append(stack[:0], frame{int32(root), 1})
			color[root], pos[root] = 1, 0
			for len(stack) > 0 {
				i := len(stack) - 1
				c := stack[i].c
				vs := int(f.swIndex[g.Dst(int(c))])
				np := int32(g.NumPorts(g.Dst(int(c))))
				moved := false
				for !moved && stack[i].p <= np {
					p := stack[i].p
					stack[i].p++
					if cnt[ti.base[c]+p-1] == 0 {
						continue
					}
					c2 := fl.portCh[vs*256+int(p)]
					if c2 < 0 {
						continue
					}
					switch color[c2] {
					case 0:
						color[c2], pos[c2] = 1, int32(len(stack))
						stack = append(stack, frame{c2, 1})
						moved = true
					case 1:
						moved = true
						// A stack edge may have lost its last path to an
						// earlier move: then this is no cycle any more.
						z := -1
						for k := int(pos[c2]); k < i; k++ {
							if cnt[edgeSlot(k)] == 0 {
								z = k
								break
							}
						}
						if z >= 0 {
							unwind(z)
							break
						}
						if l == maxLanes-1 {
							res.limit, res.needed = true, maxLanes
							finish(maxLanes)
							return res, nil
						}
						if l+1 >= len(counts) {
							counts = append(counts, make([]uint32, ti.nslots))
						}
						// Weakest edge: the closing one, or a stack edge.
						weakK, weakSlot := i, ti.base[c]+p-1
						for k := int(pos[c2]); k < i; k++ {
							if s := edgeSlot(k); cnt[s] < cnt[weakSlot] {
								weakK, weakSlot = k, s
							}
						}
						if weakK == i {
							move(l, c, int(p))
						} else {
							move(l, stack[weakK].c, g.SrcPort(int(stack[weakK+1].c)))
							unwind(weakK)
						}
						if cnt[weakSlot] != 0 {
							return res, fmt.Errorf("internal error: layering left %d pairs on a broken turn", cnt[weakSlot])
						}
						res.needed = max(res.needed, l+2)
						res.breaks++
						if res.breaks%256 == 0 {
							progress(256)
						}
					}
				}
				if !moved {
					color[c] = 2
					stack = stack[:i]
				}
			}
		}
	}
	finish(res.needed)
	return res, nil
}
