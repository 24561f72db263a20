package topology

import (
	"math"
	"sync"

	"github.com/icn-hpc/icn/internal/par"
)

// Exact distances of a torus with a few failures.
//
// In a direct network whose coordinate translations are automorphisms (a
// torus, with parallel rings or multiring steps), the fault-free distance
// from u to v is d0(v − u), d0 being one BFS from node 0. Failed links and
// nodes only lengthen distances, and only those of nodes all of whose
// shortest paths from u cross a failure. Per source u, translationDistances
// finds exactly those nodes, level by level of the fault-free distance (a
// node is affected when no live neighbour one level closer is unaffected),
// and gives them their new distances by a BFS of the affected region
// seeded from its unaffected neighbours (Dial's buckets). The sums over
// the unaffected nodes come from the fault-free distance profile. With one
// failed link of a 3D torus a source has at most a few affected nodes, so
// every source costs a few dozen steps instead of a BFS of the network.
// A source whose affected region grows past a share of the network is
// measured by a plain BFS instead, so no source costs much more than one.

// translationGraph is what translationDistances needs of g: the
// fault-free distance profile and the failures.
type translationGraph struct {
	g      *Graph
	nd     int
	dims   []int32
	stride []int32
	d0     []int32 // fault-free distance from node 0 to each node
	hist0  []int64 // nodes at each fault-free distance from any node
	sum0   int64   // sum of the fault-free distances from any node
	maxD   int     // fault-free eccentricity (the diameter)
	dead   []int32 // channels down: failed links, links of failed nodes
	failed []int32 // failed nodes
}

// translationInvariant reports whether g is a direct network whose node
// ids are its mixed-radix coordinates (X fastest) and whose every node
// has, channel by channel, the same coordinate offsets as node 0: then
// every translation of the coordinates is an automorphism.
func translationInvariant(g *Graph) bool {
	n, nd := g.NumNodes(), len(g.dims)
	if nd == 0 || n < 2 || !g.Direct() {
		return false
	}
	total := 1
	for _, d := range g.dims {
		// (a mesh dimension passes the test below only with at most 2
		// nodes, where it is a single link, symmetric too)
		if d < 1 {
			return false
		}
		total *= d
	}
	if total != n {
		return false
	}
	off := func(v, w, i int) int {
		return (int(g.coord[w*nd+i]) - int(g.coord[v*nd+i]) + g.dims[i]) % g.dims[i]
	}
	ref := g.Out(0)
	for v := 0; v < n; v++ {
		id, mul := 0, 1
		for i, d := range g.dims {
			id += int(g.coord[v*nd+i]) * mul
			mul *= d
		}
		out := g.Out(v)
		if id != v || len(out) != len(ref) {
			return false
		}
		for k, c := range out {
			w, w0 := g.Dst(int(c)), g.Dst(int(ref[k]))
			for i := range nd {
				if off(v, w, i) != off(0, w0, i) {
					return false
				}
			}
		}
	}
	return true
}

func newTranslationGraph(g *Graph) *translationGraph {
	n, nd := g.NumNodes(), len(g.dims)
	t := &translationGraph{g: g, nd: nd, dims: make([]int32, nd), stride: make([]int32, nd)}
	for i, mul := 0, 1; i < nd; i++ {
		t.dims[i], t.stride[i] = int32(g.dims[i]), int32(mul)
		mul *= g.dims[i]
	}
	t.d0 = make([]int32, n)
	BFS(g.WithoutFaults(), 0, t.d0, nil)
	for _, d := range t.d0 {
		t.maxD = max(t.maxD, int(d))
	}
	t.hist0 = make([]int64, t.maxD+2)
	for _, d := range t.d0 {
		t.hist0[d]++
		t.sum0 += int64(d)
	}
	for c := 0; c < g.NumChannels(); c++ {
		if !g.Up(c) {
			t.dead = append(t.dead, int32(c))
		}
	}
	for _, v := range g.FailedNodes() {
		t.failed = append(t.failed, int32(v))
	}
	return t
}

// dist is the fault-free distance from the node at coordinates cu to v.
func (t *translationGraph) dist(cu []int32, v int32) int32 {
	coord, nd := t.g.coord[int(v)*t.nd:int(v)*t.nd+t.nd], t.nd
	idx := int32(0)
	for i := 0; i < nd; i++ {
		x := int32(coord[i]) - cu[i]
		if x < 0 {
			x += t.dims[i]
		}
		idx += x * t.stride[i]
	}
	return t.d0[idx]
}

// translationScratch is one worker's state; stamps mark what belongs to
// the current source, so nothing is cleared between sources.
type translationScratch struct {
	stamp     int32
	seen      []int32 // queued as a candidate
	aff       []int32 // affected: its distance grows
	fin       []int32 // new distance final
	nd        []int32 // new distance (tentative until fin)
	cu        []int32
	levels    [][]int32 // candidates per fault-free distance
	buckets   [][]int32 // affected nodes per tentative new distance
	affected  []int32
	removedAt []int64 // affected or failed nodes per fault-free distance
	dist      []int32 // plain BFS of a source with a large affected region
	queue     []int32
	acc       distAcc
	_         [64]byte // keeps workers' writes off each other's cache lines
}

func (t *translationGraph) scratch() *translationScratch {
	n := t.g.NumNodes()
	return &translationScratch{seen: make([]int32, n), aff: make([]int32, n), fin: make([]int32, n),
		nd: make([]int32, n), cu: make([]int32, t.nd), levels: make([][]int32, t.maxD+2),
		removedAt: make([]int64, t.maxD+2)}
}

// source adds the distances from terminal u to every terminal to x.acc
// and returns the work done (nodes and channels looked at).
func (t *translationGraph) source(u int, x *translationScratch, weight []int64) int64 {
	g := t.g
	for i := range t.nd {
		x.cu[i] = int32(g.coord[u*t.nd+i])
	}
	x.stamp++
	st := x.stamp
	work := int64(len(t.dead))
	limit := g.NumNodes() / 8
	affected, ok := t.affected(int32(u), x, limit, &work)
	if !ok {
		// A large region: a plain BFS costs less.
		x.queue = BFS(g, u, x.dist, x.queue)
		sum, pairs, unreach, diam := sourceDistances(g, distSource{node: u, count: 1}, x.dist, weight)
		x.acc.sum, x.acc.pairs, x.acc.unreach = x.acc.sum+sum, x.acc.pairs+pairs, x.acc.unreach+unreach
		x.acc.diam = max(x.acc.diam, diam)
		return work + int64(2*g.NumLinks()+g.NumNodes())
	}
	t.redistance(affected, x, &work)
	sum, pairs, unreach, diam := t.sum0, int64(g.NumNodes()-1), int64(0), 0
	for _, v := range affected {
		d := t.dist(x.cu, v)
		sum -= int64(d)
		x.removedAt[d]++
		if x.fin[v] == st {
			sum += int64(x.nd[v])
			diam = max(diam, int(x.nd[v]))
		} else {
			pairs--
			unreach++
		}
	}
	for _, v := range t.failed {
		if int(v) != u {
			d := t.dist(x.cu, v)
			sum -= int64(d)
			x.removedAt[d]++
			pairs--
		}
	}
	for k := t.maxD; k >= 1; k-- {
		if t.hist0[k] > x.removedAt[k] {
			diam = max(diam, k)
			break
		}
	}
	clear(x.removedAt)
	x.acc.sum, x.acc.pairs, x.acc.unreach = x.acc.sum+sum, x.acc.pairs+pairs, x.acc.unreach+unreach
	x.acc.diam = max(x.acc.diam, diam)
	return work
}

// affected returns the live nodes whose distance from u grows with the
// failures (marked in x.aff), or false once there are more than limit.
func (t *translationGraph) affected(u int32, x *translationScratch, limit int, work *int64) ([]int32, bool) {
	g, st := t.g, x.stamp
	for i := range x.levels {
		x.levels[i] = x.levels[i][:0]
	}
	push := func(v int32, lv int32) {
		if x.seen[v] != st && v != u && !g.NodeFailed(int(v)) {
			x.seen[v] = st
			x.levels[lv] = append(x.levels[lv], v)
		}
	}
	for _, c := range t.dead {
		a, b := int32(g.Dst(int(c)^1)), int32(g.Dst(int(c)))
		if db := t.dist(x.cu, b); db == t.dist(x.cu, a)+1 {
			push(b, db)
		}
	}
	affected := x.affected[:0]
	// Levels in increasing order: a node's parents one level closer have
	// their final state when it is looked at.
	for lv := int32(1); int(lv) <= t.maxD; lv++ {
		for _, v := range x.levels[lv] {
			out := g.Out(int(v))
			*work += int64(len(out))
			supported := false
			for _, c := range out {
				if w := int32(g.Dst(int(c))); g.Up(int(c)) && x.aff[w] != st && t.dist(x.cu, w) == lv-1 {
					supported = true
					break
				}
			}
			if supported {
				continue
			}
			x.aff[v] = st
			if affected = append(affected, v); len(affected) > limit {
				x.affected = affected
				return nil, false
			}
			for _, c := range out {
				if w := int32(g.Dst(int(c))); t.dist(x.cu, w) == lv+1 {
					push(w, lv+1)
				}
			}
		}
	}
	x.affected = affected
	return affected, true
}

// redistance gives the affected nodes their distances from the source
// (x.nd, final where x.fin is set; the others are unreachable): a BFS of
// the affected region from its unaffected live neighbours, whose
// distances are the fault-free ones.
func (t *translationGraph) redistance(affected []int32, x *translationScratch, work *int64) {
	g, st := t.g, x.stamp
	const inf = math.MaxInt32
	top := 0
	push := func(v, d int32) {
		for int(d) >= len(x.buckets) {
			x.buckets = append(x.buckets, nil)
		}
		x.buckets[d] = append(x.buckets[d], v)
		top = max(top, int(d)+1)
	}
	for _, v := range affected {
		best := int32(inf)
		for _, c := range g.Out(int(v)) {
			if w := int32(g.Dst(int(c))); g.Up(int(c)) && x.aff[w] != st {
				best = min(best, t.dist(x.cu, w)+1)
			}
		}
		x.nd[v] = best
		if best != inf {
			push(v, best)
		}
	}
	for d := 0; d < top; d++ {
		for i := 0; i < len(x.buckets[d]); i++ {
			v := x.buckets[d][i]
			if x.fin[v] == st || x.nd[v] != int32(d) {
				continue
			}
			x.fin[v] = st
			out := g.Out(int(v))
			*work += int64(len(out))
			for _, c := range out {
				w := int32(g.Dst(int(c)))
				if g.Up(int(c)) && x.aff[w] == st && x.fin[w] != st && x.nd[w] > int32(d)+1 {
					x.nd[w] = int32(d) + 1
					push(w, int32(d)+1)
				}
			}
		}
		x.buckets[d] = x.buckets[d][:0]
	}
}

// translationPilot is how many sources translationDistances measures
// first to project its work against the distance budget.
const translationPilot = 64

// translationDistances measures terminal distances of g exactly with the
// translated BFS repaired around the failures (see above); ok is false
// when g's translations are not automorphisms, or when the projected work
// is over the distance budget.
func translationDistances(g *Graph, terms []int, o MetricsOptions) (DistanceStats, bool) {
	if !translationInvariant(g) {
		return DistanceStats{}, false
	}
	t := newTranslationGraph(g)
	weight := make([]int64, g.NumNodes())
	for _, v := range terms {
		weight[v] = 1
	}
	budget := o.DistanceBudget
	if budget == 0 {
		budget = defaultDistanceBudget
	}
	workers := par.Workers(o.Workers)
	sc := make([]*translationScratch, workers)
	for i := range sc {
		sc[i] = t.scratch()
		sc[i].dist = make([]int32, g.NumNodes())
	}
	// The pilot: evenly spread sources, their work projected to all.
	pilot := min(translationPilot, len(terms))
	var pilotWork int64
	for i := range pilot {
		pilotWork += t.source(terms[i*len(terms)/pilot], sc[0], weight)
	}
	if float64(pilotWork)/float64(pilot)*float64(len(terms)) > budget {
		return DistanceStats{}, false
	}
	sc[0].acc = distAcc{}
	var mu sync.Mutex
	done := 0
	par.For(len(terms), workers, func(w, i int) {
		if o.cancelled() {
			return
		}
		t.source(terms[i], sc[w], weight)
		if o.Progress != nil {
			mu.Lock()
			done++
			o.Progress(done, len(terms))
			mu.Unlock()
		}
	})
	st := DistanceStats{Terminals: len(terms), Exact: true,
		Method: "one BFS translated to every source, repaired around the failures (translations are automorphisms)"}
	var sum, pairs int64
	for _, x := range sc {
		sum += x.acc.sum
		pairs += x.acc.pairs
		st.Unreachable += x.acc.unreach
		st.Diameter = max(st.Diameter, x.acc.diam)
	}
	if pairs > 0 {
		st.Average = float64(sum) / float64(pairs)
	}
	return st, true
}
