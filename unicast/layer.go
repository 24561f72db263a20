package unicast

import (
	"context"
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

// treeScratch holds treeOrder's results and buffers for one worker.
type treeScratch struct {
	nxt, depth []int32
	buckets    [][]int32
	order      []int32
	stack      []int32
}

func newTreeScratch(S int) treeScratch {
	return treeScratch{nxt: make([]int32, S), depth: make([]int32, S)}
}

// treeOrder fills sc.nxt with every switch's next hop towards lid and
// returns the switches whose route reaches the destination, farthest
// first; sc.depth gets each switch's hop count to the delivering switch
// (-1 for switches whose route is dropped or loops). The result lives in
// sc until the next call.
func (fl *fastLFT) treeOrder(lid int, sc *treeScratch) []int32 {
	S := len(fl.t.F.switches)
	nxt, depth := sc.nxt, sc.depth
	for s := 0; s < S; s++ {
		nxt[s] = int32(fl.next(s, lid))
		depth[s] = -2 // unknown
	}
	maxD := 0
	for s := 0; s < S; s++ {
		if depth[s] != -2 {
			continue
		}
		stack := sc.stack[:0]
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
		sc.stack = stack
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
	for len(sc.buckets) <= maxD {
		sc.buckets = append(sc.buckets, nil)
	}
	for i := range sc.buckets {
		sc.buckets[i] = sc.buckets[i][:0]
	}
	for s := 0; s < S; s++ {
		if depth[s] >= 0 {
			sc.buckets[depth[s]] = append(sc.buckets[depth[s]], int32(s))
		}
	}
	order := sc.order[:0]
	for d := maxD; d >= 0; d-- {
		order = append(order, sc.buckets[d]...)
	}
	sc.order = order
	return order
}

// layer assigns lanes to the paths of t so that every lane's dependency
// graph is acyclic, using at most maxLanes lanes, on workers goroutines
// (0 = all cores; the result does not depend on it).
func layer(t *Tables, maxLanes, workers int, progress func(int)) (layerResult, error) {
	return layerContext(context.Background(), t, maxLanes, workers, progress)
}

// layerContext is layer, stopped with ctx's error when ctx ends.
func layerContext(ctx context.Context, t *Tables, maxLanes, workers int, progress func(int)) (layerResult, error) {
	ly, err := newLayering(t, workers, progress)
	if err != nil {
		return layerResult{}, err
	}
	ly.ctx = ctx
	ly.indexByPort()
	ly.countLane0()
	ly.transpose()
	for l := 0; l < maxLanes && l < len(ly.counts); l++ {
		done, err := ly.breakCycles(l, maxLanes)
		if err != nil || done {
			return ly.res, err
		}
	}
	ly.finish(ly.res.needed)
	return ly.res, nil
}

// layering is the state of one layer run.
type layering struct {
	ctx      context.Context
	t        *Tables
	f        *Fabric
	S        int
	ti       *turnIndex
	srcW     []uint32
	lids     []int
	adj      *swAdj
	fl       *fastLFT
	stride   int
	lft      []uint8
	nw       int
	progress func(int)

	byStart []int32    // [s*256+port] start of the LIDs (s, port) forwards
	byLID   []uint16   // those LIDs
	counts  [][]uint32 // per lane, pairs per turn slot
	lftT    []uint8    // LID-major copy of the tables
	lanesT  []uint8    // LID-major lanes while layering
	res     layerResult

	bfs, bfsUp, bfsIn []int32 // move's search buffers
	agg               []uint32

	// Depth-first search state.
	color []uint8 // per channel: 0 white, 1 gray, 2 black
	pos   []int32 // stack position of a gray channel
	stack []layerFrame
}

type layerFrame struct {
	c int32
	p int32 // next output port to try
}

func newLayering(t *Tables, workers int, progress func(int)) (*layering, error) {
	f := t.F
	ti, err := newTurnIndex(f)
	if err != nil {
		return nil, err
	}
	ly := &layering{t: t, f: f, S: len(f.switches), ti: ti, srcW: sourceWeights(f), adj: switchAdjacency(f),
		stride: t.stride, lft: t.lft, nw: par.Workers(workers), progress: progress, res: layerResult{needed: 1}}
	ly.fl = newFastLFT(t, ly.adj)
	for _, d := range f.dests() {
		if d.alive {
			ly.lids = append(ly.lids, d.lid)
		}
	}
	ly.color = make([]uint8, f.G.NumChannels())
	ly.pos = make([]int32, f.G.NumChannels())
	return ly, nil
}

// indexByPort builds the inverse index: the LIDs each (switch, port)
// forwards.
func (ly *layering) indexByPort() {
	S, stride, lft, lids := ly.S, ly.stride, ly.lft, ly.lids
	byStart := make([]int32, S*256+1)
	par.For(S, ly.nw, func(_, s int) {
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
	par.For(S, ly.nw, func(_, s int) {
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
	ly.byStart, ly.byLID = byStart, byLID
}

// countLane0 puts every path on lane 0 and counts the pairs on each turn.
func (ly *layering) countLane0() {
	S, stride, lft, fl, ti := ly.S, ly.stride, ly.lft, ly.fl, ly.ti
	type scratch struct {
		treeScratch
		cnt []uint32
		acc []uint64
		_   [64]byte // per worker: keeps what workers write off each other's cache lines
	}
	scr := make([]scratch, ly.nw)
	for i := range scr {
		scr[i].treeScratch = newTreeScratch(S)
		scr[i].cnt = make([]uint32, ti.nslots)
		scr[i].acc = make([]uint64, S)
	}
	par.For(len(ly.lids), ly.nw, func(w, k int) {
		sc := &scr[w]
		lid := ly.lids[k]
		order := fl.treeOrder(lid, &sc.treeScratch)
		for _, u := range order {
			sc.acc[u] = uint64(ly.srcW[u])
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
	ly.counts = [][]uint32{scr[0].cnt}
	for i := 1; i < ly.nw; i++ {
		for k, v := range scr[i].cnt {
			ly.counts[0][k] += v
		}
		scr[i].cnt = nil
	}
}

// transpose makes the LID-major copy of the tables the moves read (they
// follow one LID across many switches) and the LID-major lane table.
func (ly *layering) transpose() {
	S, stride, lft := ly.S, ly.stride, ly.lft
	ly.lftT = make([]uint8, stride*S)
	par.For(S, ly.nw, func(_, s int) {
		row := lft[s*stride : (s+1)*stride]
		for lid, p := range row {
			ly.lftT[lid*S+s] = p
		}
	})
	ly.lanesT = make([]uint8, stride*S)
}

// finish attaches the lanes (switch-major) to the tables.
func (ly *layering) finish(n int) {
	S, stride := ly.S, ly.stride
	lanes := make([]uint8, S*stride)
	par.For(S, ly.nw, func(_, s int) {
		for lid := 0; lid < stride; lid++ {
			lanes[s*stride+lid] = ly.lanesT[lid*S+s]
		}
	})
	ly.t.setLanes(lanes, n)
}

// move shifts every lane-l path that enters switch v through c1 and leaves
// it through port to lane l+1. The turn's pair count says how many remain,
// so the search stops as soon as it reaches zero. Routes to one LID form a
// tree: a search from u over the switches routing into it finds the
// sources, and the pairs moved are summed up the tree so each turn is
// updated once per LID.
func (ly *layering) move(l int, c1 int32, port int) {
	f, g, S, stride, ti, adj, fl := ly.f, ly.f.G, ly.S, ly.stride, ly.ti, ly.adj, ly.fl
	u := int(f.swIndex[g.Src(int(c1))])
	vs := int(f.swIndex[g.Dst(int(c1))])
	pu := g.SrcPort(int(c1))
	from, to := ly.counts[l], ly.counts[l+1]
	slot := ti.base[c1] + int32(port-1)
	for _, lid16 := range ly.byLID[ly.byStart[u*256+pu]:ly.byStart[u*256+pu+1]] {
		if from[slot] == 0 {
			return
		}
		lid := int(lid16)
		if int(ly.lft[vs*stride+lid]) != port {
			continue
		}
		col := ly.lftT[lid*S : (lid+1)*S]
		ly.bfs, ly.bfsUp, ly.bfsIn = append(ly.bfs[:0], int32(u)), append(ly.bfsUp[:0], -1), append(ly.bfsIn[:0], -1)
		for h := 0; h < len(ly.bfs) && h < S; h++ {
			x := ly.bfs[h]
			for e := adj.start[x]; e < adj.start[x+1]; e++ {
				y := adj.nb[e]
				if col[y] == adj.rport[e] {
					ly.bfs = append(ly.bfs, y)
					ly.bfsUp = append(ly.bfsUp, int32(h))
					ly.bfsIn = append(ly.bfsIn, adj.ch[e]^1) // y→x
				}
			}
		}
		if cap(ly.agg) < len(ly.bfs) {
			ly.agg = make([]uint32, len(ly.bfs), 2*len(ly.bfs))
		}
		agg := ly.agg[:len(ly.bfs)]
		clear(agg)
		for h := len(ly.bfs) - 1; h >= 0; h-- {
			x := int(ly.bfs[h])
			if w := ly.srcW[x]; w > 0 && ly.lanesT[lid*S+x] == uint8(l) {
				ly.lanesT[lid*S+x] = uint8(l + 1)
				agg[h] += w
				ly.res.moved++
			}
			a := agg[h]
			if a == 0 {
				continue
			}
			if up := ly.bfsUp[h]; up >= 0 {
				agg[up] += a
				xp := int(ly.bfs[up])
				pp := int(col[xp])
				if fl.portCh[xp*256+pp] >= 0 {
					k := ti.base[ly.bfsIn[h]] + int32(pp-1)
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

// edgeSlot is the turn slot of the stack edge k → k+1.
func (ly *layering) edgeSlot(k int) int32 {
	return ly.ti.base[ly.stack[k].c] + int32(ly.f.G.SrcPort(int(ly.stack[k+1].c))-1)
}

// unwind keeps stack frames 0..k.
func (ly *layering) unwind(k int) {
	for _, fr := range ly.stack[k+1:] {
		ly.color[fr.c] = 0
	}
	ly.stack = ly.stack[:k+1]
}

// breakCycles runs the depth-first cycle search on lane l, moving paths to
// lane l+1 until lane l is acyclic. It reports done when the lane budget
// ran out (the result is then final).
func (ly *layering) breakCycles(l, maxLanes int) (bool, error) {
	g := ly.f.G
	clear(ly.color)
	for root := 0; root < g.NumChannels(); root++ {
		if ly.ti.base[root] < 0 || ly.color[root] != 0 || !g.Up(root) {
			continue
		}
		if root%1024 == 0 && ly.ctx.Err() != nil {
			return true, ly.ctx.Err()
		}
		ly.stack = append(ly.stack[:0], layerFrame{int32(root), 1})
		ly.color[root], ly.pos[root] = 1, 0
		for len(ly.stack) > 0 {
			done, err := ly.step(l, maxLanes)
			if err != nil || done {
				return done, err
			}
		}
	}
	return false, nil
}

// step advances the search from the top of the stack by one edge: down a
// white channel, or onto a gray one (a cycle, which it breaks), or back.
func (ly *layering) step(l, maxLanes int) (bool, error) {
	f, g, ti := ly.f, ly.f.G, ly.ti
	cnt := ly.counts[l]
	i := len(ly.stack) - 1
	c := ly.stack[i].c
	vs := int(f.swIndex[g.Dst(int(c))])
	np := int32(g.NumPorts(g.Dst(int(c))))
	for ly.stack[i].p <= np {
		p := ly.stack[i].p
		ly.stack[i].p++
		if cnt[ti.base[c]+p-1] == 0 {
			continue
		}
		c2 := ly.fl.portCh[vs*256+int(p)]
		if c2 < 0 {
			continue
		}
		switch ly.color[c2] {
		case 0:
			ly.color[c2], ly.pos[c2] = 1, int32(len(ly.stack))
			ly.stack = append(ly.stack, layerFrame{c2, 1})
			return false, nil
		case 1:
			return ly.breakCycle(l, maxLanes, c, p, c2)
		}
	}
	ly.color[c] = 2
	ly.stack = ly.stack[:i]
	return false, nil
}

// breakCycle handles the cycle closed by the turn (c, p) onto the gray
// channel c2: it moves the paths of its weakest turn to the next lane.
func (ly *layering) breakCycle(l, maxLanes int, c, p, c2 int32) (bool, error) {
	cnt := ly.counts[l]
	i := len(ly.stack) - 1
	// A stack edge may have lost its last path to an earlier move: then
	// this is no cycle any more.
	for k := int(ly.pos[c2]); k < i; k++ {
		if cnt[ly.edgeSlot(k)] == 0 {
			ly.unwind(k)
			return false, nil
		}
	}
	if l == maxLanes-1 {
		ly.res.limit, ly.res.needed = true, maxLanes
		ly.finish(maxLanes)
		return true, nil
	}
	if l+1 >= len(ly.counts) {
		ly.counts = append(ly.counts, make([]uint32, ly.ti.nslots))
	}
	// Weakest edge: the closing one, or a stack edge.
	weakK, weakSlot := i, ly.ti.base[c]+p-1
	for k := int(ly.pos[c2]); k < i; k++ {
		if s := ly.edgeSlot(k); cnt[s] < cnt[weakSlot] {
			weakK, weakSlot = k, s
		}
	}
	if weakK == i {
		ly.move(l, c, int(p))
	} else {
		ly.move(l, ly.stack[weakK].c, ly.f.G.SrcPort(int(ly.stack[weakK+1].c)))
		ly.unwind(weakK)
	}
	if cnt[weakSlot] != 0 {
		return true, fmt.Errorf("internal error: layering left %d pairs on a broken turn", cnt[weakSlot])
	}
	ly.res.needed = max(ly.res.needed, l+2)
	ly.res.breaks++
	if ly.res.breaks%256 == 0 {
		ly.progress(256)
	}
	return false, nil
}
