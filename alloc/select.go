package alloc

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// Router answers the routing questions node selection asks about a set
// M_{a,t} = active ∪ transit on the state's network (with its failures).
// The routing package provides the implementation (Angara rules).
type Router interface {
	// Reachable reports whether every ordered pair of active nodes has a
	// legal route whose nodes all lie in active ∪ transit.
	Reachable(active, transit []int) (bool, error)
	// Table builds a verified, deadlock-free routing table for a reachable
	// set with the given algorithm ("bfs" or "baseline") and returns its
	// figures.
	Table(active, transit []int, algo string) (TableFigures, error)
}

// TableFigures are the routing-table figures used to rank candidates.
type TableFigures struct {
	Diameter      int     `json:"diameter"`
	PiMax         float64 `json:"pi_max"`
	PiPerfect     float64 `json:"pi_perfect"`
	BalanceFactor float64 `json:"balance_factor"`
}

// Algo names a node-selection algorithm.
type Algo string

const (
	// Improved enumerates all rectangle sizes m ≤ |P| ≤ m+T and all
	// placements, allows unavailable nodes inside if the rest stays
	// reachable, and drops unneeded transit nodes (non-rectangular sets);
	// candidates are ranked by the four criteria of seed 001 ch. 4.
	Improved Algo = "improved"
	// Baseline is the older Angara algorithm: sizes 1 ≤ p_i ≤ ⌈d_i/2⌉ or
	// p_i = d_i, rectangles of available nodes only, fault-free, the
	// whole rectangle allocated; the first rectangle with the fewest
	// transit nodes is taken (it has no fragmentation estimate).
	Baseline Algo = "baseline"
)

// ParseAlgo checks an algorithm name.
func ParseAlgo(s string) (Algo, error) {
	switch Algo(s) {
	case Improved, Baseline:
		return Algo(s), nil
	}
	return "", fmt.Errorf("unknown node-selection algorithm %q (want improved or baseline)", s)
}

// Request asks for Nodes active nodes and at most Transit transit nodes.
type Request struct {
	Nodes   int  `json:"nodes"`
	Transit int  `json:"transit"`
	Algo    Algo `json:"algo"`
	// CountOnly enumerates and counts candidates without ranking them or
	// building tables (for the "solutions found" experiment).
	CountOnly bool `json:"-"`
	// Fast skips the reachability question for placements that can no
	// longer win on criterion 1; the choice is the same, but Found then
	// counts only the placements examined, which depends on timing.
	// For simulations that do not report Found.
	Fast bool `json:"-"`
	// MaxTables bounds how many distinct routing tables are built to break
	// ties on diameter and π_max (0 = 64).
	MaxTables int `json:"-"`
}

// Candidate is one reachable node set.
type Candidate struct {
	Active  []int         `json:"active"`
	Transit []int         `json:"transit"`
	Rect    Rect          `json:"rect"`
	Holes   int           `json:"holes"` // unavailable nodes inside the rectangle
	Frag    Fragmentation `json:"fragmentation_after"`
	Figures *TableFigures `json:"table,omitempty"`
	// iso names the candidate's translation class when it is known to
	// have one: sets from blocks (rectangles without unavailable nodes
	// or failed links inside) of one size, reduced the same way, are
	// translations of each other and have isomorphic routing tables.
	iso   string
	order int
}

// Result is the answer to a Request.
type Result struct {
	Request Request `json:"request"`
	// Chosen is nil if no candidate exists; Reason then says why.
	Chosen *Candidate `json:"chosen,omitempty"`
	Reason string     `json:"reason,omitempty"`
	// Found counts the rectangle placements that gave a reachable set
	// (the "solutions found" of seed 001 table 1); Distinct counts the
	// different node sets with the fewest transit nodes among them, after
	// unneeded transit nodes were dropped.
	Found    int `json:"candidates_found"`
	Distinct int `json:"distinct_sets"`
	// Ranked counts candidates tied on the first criterion whose φ was
	// computed; Tables counts routing tables built for tie-breaks.
	Ranked  int     `json:"ranked"`
	Tables  int     `json:"tables_built"`
	Seconds float64 `json:"seconds"`
}

// Selector selects node sets on one torus; it caches per-torus data, so
// keep one per network and reuse it (not safe for concurrent use).
type Selector struct {
	// Workers bounds the goroutines one decision uses (0 = all cores).
	Workers int

	dims   []int
	wrap   []bool
	shapes [][]int
	grid   *grid
	// faultDirs[v] has bit k set if the link leaving v in direction k
	// (2·dim + (0 for +, 1 for −)) is failed.
	faultDirs []uint16
}

// NewSelector prepares a selector for the state's torus.
func NewSelector(s *State) *Selector {
	sel := &Selector{dims: s.dims, wrap: s.wrap, shapes: Shapes(s.dims)}
	return sel
}

func (sel *Selector) prepare(s *State) {
	if sel.grid == nil {
		sel.grid = newGrid(s)
	} else {
		sel.grid.fill(s)
	}
	g := s.g
	if len(sel.faultDirs) != s.N() {
		sel.faultDirs = make([]uint16, s.N())
	}
	clear(sel.faultDirs)
	for v := 0; v < s.N(); v++ {
		for _, c := range g.Out(v) {
			if g.Up(int(c)) {
				continue
			}
			d, sign := g.Dir(int(c))
			if d < 0 {
				continue
			}
			k := 2 * d
			if sign < 0 {
				k++
			}
			sel.faultDirs[v] |= 1 << k
		}
	}
}

// internalFault reports whether a failed link joins two nodes of r.
func (sel *Selector) internalFault(r Rect, nodes []int) bool {
	c := make([]int, len(sel.dims))
	for _, v := range nodes {
		f := sel.faultDirs[v]
		if f == 0 {
			continue
		}
		dec(v, sel.dims, c)
		for d := range sel.dims {
			for sgn := 0; sgn < 2; sgn++ {
				if f&(1<<(2*d+sgn)) == 0 {
					continue
				}
				// Neighbour inside r along this direction?
				off := (c[d] - r.Start[d] + sel.dims[d]) % sel.dims[d]
				if r.Size[d] == sel.dims[d] {
					return true
				}
				if sgn == 0 && off+1 < r.Size[d] || sgn == 1 && off > 0 {
					return true
				}
			}
		}
	}
	return false
}

// Select answers a request on state s.
func (sel *Selector) Select(s *State, rt Router, req Request) (*Result, error) {
	start := time.Now()
	res := &Result{Request: req}
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	if req.Nodes < 1 {
		return nil, fmt.Errorf("a job needs at least one node, got %d", req.Nodes)
	}
	if req.Transit < 0 {
		return nil, fmt.Errorf("transit limit %d is negative", req.Transit)
	}
	if req.Algo == "" {
		req.Algo = Improved
		res.Request.Algo = Improved
	}
	if _, err := ParseAlgo(string(req.Algo)); err != nil {
		return nil, err
	}
	if free := s.FreeCount(); req.Nodes > free {
		res.Reason = fmt.Sprintf("the job needs %d nodes but only %d of %d are available", req.Nodes, free, s.N())
		return res, nil
	}
	sel.prepare(s)
	m, T := req.Nodes, req.Transit
	var sizes [][]int
	for _, size := range sel.shapes {
		if v := vol(size); v < m || v > m+T {
			continue
		}
		if req.Algo == Baseline && !baselineShape(size, sel.dims) {
			continue
		}
		sizes = append(sizes, size)
	}
	// Enumerate sizes on all cores; merge in size order so the result
	// does not depend on scheduling.
	type shapeResult struct {
		found int
		cands []*Candidate
		err   error
	}
	results := make([]shapeResult, len(sizes))
	var bestT atomic.Int64 // fewest transit nodes of a candidate so far
	bestT.Store(int64(T))
	lowerBest := func(t int) {
		for {
			cur := bestT.Load()
			if int64(t) >= cur || bestT.CompareAndSwap(cur, int64(t)) {
				return
			}
		}
	}
	// Work through the sizes smallest first: they need the fewest transit
	// nodes, so the bound on criterion 1 tightens early and prunes the
	// larger rectangles (results stay indexed by size, so the outcome does
	// not depend on this order).
	work := make([]int, len(sizes))
	for i := range work {
		work[i] = i
	}
	slices.SortStableFunc(work, func(a, b int) int { return cmp.Compare(vol(sizes[a]), vol(sizes[b])) })
	var memo onceMap // answers shared by placements (see below)
	// alone reports whether the active nodes are reachable without transit
	// nodes. A fault-free block of available nodes is; blocks of one size
	// share the answer, and so do placements with the same active set.
	alone := func(active, size []int, block bool) (bool, error) {
		if block && leadingBlock(size, m) != nil {
			return true, nil
		}
		key := "a" + nodeKey(active)
		if block {
			key = "b" + fmt.Sprint(size)
		}
		ok, err := memo.get(key, func() (any, error) { return rt.Reachable(active, nil) })
		if err != nil {
			return false, err
		}
		return ok.(bool), nil
	}
	bufs := make([][]int, par.Workers(sel.Workers))
	conn := make([]connScratch, len(bufs))
	par.For(len(sizes), sel.Workers, func(w, wi int) {
		si := work[wi]
		size := sizes[si]
		v := vol(size)
		lead := leadingBlock(size, m)
		out := &results[si]
		placements(sel.dims, sel.wrap, size, func(st []int) bool {
			holes := sel.grid.unavailable(st, size)
			if v-holes < m || (req.Algo == Baseline && holes > 0) {
				return true
			}
			r := Rect{Start: st, Size: size}
			bufs[w] = r.Nodes(sel.dims, bufs[w][:0])
			var avail []int
			for _, x := range bufs[w] {
				if s.Available(x) {
					avail = append(avail, x)
				}
			}
			fault := sel.internalFault(r, bufs[w])
			if req.Algo == Baseline && fault {
				return true
			}
			active := append([]int(nil), avail[:m]...)
			transit := append([]int(nil), avail[m:]...)
			block := holes == 0 && !fault
			simple := block
			if !simple {
				// Routes stay inside the set, so active nodes in
				// different components of it are unreachable (a cheap
				// test before the router's).
				if !conn[w].joins(s.g, avail, active) {
					return true
				}
				if req.Fast && req.Algo == Improved && bestT.Load() == 0 {
					// Only a set without transit nodes can still win:
					// ask about the active nodes alone (if they are
					// reachable, so is the whole set).
					ok, err := alone(active, size, false)
					if err != nil {
						out.err = err
						return false
					}
					if !ok {
						return true
					}
				} else {
					ok, err := rt.Reachable(active, transit)
					if err != nil {
						out.err = err
						return false
					}
					if !ok {
						return true
					}
				}
			}
			out.found++
			if req.CountOnly {
				return true
			}
			if req.Algo == Improved && len(transit) > 0 {
				// Drop transit nodes the set does not need (the set may
				// become non-rectangular); each stays free for others.
				// Criterion 1 ranks first by the transit count, so a
				// candidate that must keep more than the best so far is
				// dropped as soon as that is certain. In a block (no
				// unavailable node, no failed link inside) the outcome
				// depends only on the size: blocks of one size are
				// translations of each other, and routes never leave the
				// set. Such answers, and those for active sets that recur
				// across placements, are computed once per decision.
				var keep []int // indices into transit of the nodes kept
				switch bound := bestT.Load(); {
				case bound == 0:
					// Only a set without transit nodes can still win, and
					// reachability only grows with the transit set, so
					// the greedy ends at none exactly when the active
					// nodes alone are reachable: one question.
					ok, err := alone(active, size, block)
					if err != nil {
						out.err = err
						return false
					}
					if !ok {
						return true
					}
				case block:
					// Pruned (nil) stays pruned: the bound only falls.
					k, err := memo.get("g"+fmt.Sprint(size), func() (any, error) { return dropTransit(rt, active, transit, int(bound)) })
					if err != nil {
						out.err = err
						return false
					}
					if k.([]int) == nil {
						return true
					}
					keep = k.([]int)
				default:
					k, err := dropTransit(rt, active, transit, int(bound))
					if err != nil {
						out.err = err
						return false
					}
					if k == nil {
						return true
					}
					keep = k
				}
				if len(keep) < len(transit) {
					kept := make([]int, len(keep))
					for i, x := range keep {
						kept[i] = transit[x]
					}
					transit, simple = kept, false
				}
			}
			if req.Algo == Improved && int64(len(transit)) > bestT.Load() {
				return true
			}
			lowerBest(len(transit))
			c := &Candidate{Active: active, Transit: transit,
				Rect:  Rect{Start: append([]int(nil), st...), Size: append([]int(nil), size...)},
				Holes: holes}
			switch {
			case simple:
				c.iso = "r" + fmt.Sprint(size)
			case !block:
			case len(transit) > 0:
				c.iso = "g" + fmt.Sprint(size)
			case lead != nil:
				c.iso = "r" + fmt.Sprint(lead)
			default:
				c.iso = "a" + fmt.Sprint(size)
			}
			out.cands = append(out.cands, c)
			return true
		})
	})
	var cands []*Candidate
	seen := map[string]bool{}
	minT := int(bestT.Load())
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		res.Found += r.found
		for _, c := range r.cands {
			if req.Algo == Improved && len(c.Transit) > minT {
				continue // beaten on criterion 1 by a candidate found elsewhere
			}
			key := setKey(c.Active, c.Transit)
			if seen[key] {
				continue
			}
			seen[key] = true
			c.order = len(cands)
			cands = append(cands, c)
		}
	}
	if res.Found == 0 {
		res.Reason = fmt.Sprintf("no reachable set of %d active nodes with at most %d transit nodes fits the available nodes", m, T)
		if req.Algo == Baseline {
			res.Reason += " (baseline: whole fault-free rectangles with sides ≤ ⌈d/2⌉ or = d)"
		}
		return res, nil
	}
	res.Distinct = len(cands)
	if req.CountOnly {
		return res, nil
	}
	// Criterion 1: fewest transit nodes.
	minT = len(cands[0].Transit)
	for _, c := range cands {
		minT = min(minT, len(c.Transit))
	}
	var best []*Candidate
	for _, c := range cands {
		if len(c.Transit) == minT {
			best = append(best, c)
		}
	}
	if req.Algo == Baseline {
		c := best[0]
		fig, err := rt.Table(c.Active, c.Transit, "baseline")
		if err != nil {
			return nil, err
		}
		c.Figures = &fig
		c.Frag = newLevelCache(sel, s).after(c)
		res.Chosen, res.Ranked, res.Tables = c, 1, 1
		return res, nil
	}
	// Criterion 2: largest φ after allocation. Allocating only removes
	// free rectangles, so the free rectangles afterwards are today's free
	// rectangles that miss the candidate's nodes: walk today's free
	// rectangles volume level by volume level (each level found once per
	// decision and shared by all candidates) until a level keeps some.
	res.Ranked = len(best)
	levels := newLevelCache(sel, s)
	for _, c := range best {
		c.Frag = levels.after(c)
	}
	maxPhi := best[0].Frag.Phi
	for _, c := range best {
		maxPhi = max(maxPhi, c.Frag.Phi)
	}
	var tied []*Candidate
	for _, c := range best {
		if c.Frag.Phi == maxPhi {
			tied = append(tied, c)
		}
	}
	// Criteria 3 and 4: routing-table diameter, then π_max.
	limit := req.MaxTables
	if limit <= 0 {
		limit = 64
	}
	// One table per translation class; the first limit classes (in
	// candidate order) are built, on all cores.
	class := map[string]int{}
	var reps []*Candidate // the first candidate of each class
	var ranked []*Candidate
	for _, c := range tied {
		k := c.iso
		if k == "" {
			k = fmt.Sprint("#", c.order)
		}
		if _, ok := class[k]; !ok {
			if len(reps) >= limit {
				continue
			}
			class[k] = len(reps)
			reps = append(reps, c)
		}
		ranked = append(ranked, c)
	}
	figs := make([]TableFigures, len(reps))
	errs := make([]error, len(reps))
	par.For(len(reps), sel.Workers, func(_, i int) {
		figs[i], errs[i] = rt.Table(reps[i].Active, reps[i].Transit, "bfs")
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res.Tables = len(reps)
	for _, c := range ranked {
		k := c.iso
		if k == "" {
			k = fmt.Sprint("#", c.order)
		}
		c.Figures = &figs[class[k]]
	}
	slices.SortStableFunc(ranked, func(a, b *Candidate) int {
		if x := cmp.Compare(a.Figures.Diameter, b.Figures.Diameter); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Figures.PiMax, b.Figures.PiMax); x != 0 {
			return x
		}
		return cmp.Compare(a.order, b.order)
	})
	res.Chosen = ranked[0]
	return res, nil
}

// leadingBlock returns the size of the block that the first m nodes of a
// rectangle of the given size form in X-fastest order, or nil if they do
// not form a rectangle: m must be p_0·…·p_{k-1}·q with q ≤ p_k.
func leadingBlock(size []int, m int) []int {
	prefix := 1
	for k, p := range size {
		if m%prefix == 0 && m/prefix <= p {
			out := make([]int, len(size))
			copy(out, size[:k])
			out[k] = m / prefix
			for i := k + 1; i < len(out); i++ {
				out[i] = 1
			}
			return out
		}
		prefix *= p
	}
	return nil
}

func baselineShape(size, dims []int) bool {
	for i, p := range size {
		if p != dims[i] && p > (dims[i]+1)/2 {
			return false
		}
	}
	return true
}

// dropTransit drops, last first, every transit node the set stays
// reachable without (the set with all of them must be reachable), and
// returns the indices of the nodes kept, ascending. With bound ≥ 0 it
// gives up (nil) as soon as more than bound must stay.
//
// Reachability only grows with the transit set, so a run of drops ends
// at the first node whose removal breaks it, and that node is found by
// bisection: O(kept · log |transit|) questions instead of |transit|, with
// exactly the one-by-one greedy's outcome.
func dropTransit(rt Router, active, transit []int, bound int) ([]int, error) {
	var kept []int // indices kept, descending
	try := make([]int, 0, len(transit))
	reach := func(j int) (bool, error) { // transit[:j] plus the kept ones
		try = append(try[:0], transit[:j]...)
		for _, k := range kept {
			try = append(try, transit[k])
		}
		return rt.Reachable(active, try)
	}
	for i := len(transit); i > 0; {
		// transit[:i] ∪ kept is reachable; find the least j ≤ i for
		// which transit[:j] ∪ kept still is.
		lo, hi := 0, i
		for lo < hi {
			mid := (lo + hi) / 2
			ok, err := reach(mid)
			if err != nil {
				return nil, err
			}
			if ok {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if lo == 0 {
			break
		}
		kept = append(kept, lo-1)
		if bound >= 0 && len(kept) > bound {
			return nil, nil
		}
		i = lo - 1
	}
	slices.Reverse(kept)
	if kept == nil {
		kept = []int{}
	}
	return kept, nil
}

// connScratch holds one worker's marks for joins.
type connScratch struct {
	mark  []uint32 // stamp: 2·pass = in the set, 2·pass+1 = reached
	pass  uint32
	queue []int
}

// joins reports whether all of active lie in one connected component of
// the subgraph induced by set (live links only).
func (cs *connScratch) joins(g *topology.Graph, set, active []int) bool {
	if len(active) < 2 {
		return true
	}
	if len(cs.mark) != g.NumNodes() || cs.pass >= 1<<31-2 {
		cs.mark, cs.pass = make([]uint32, g.NumNodes()), 0
	}
	cs.pass++
	in, seen := 2*cs.pass, 2*cs.pass+1
	for _, v := range set {
		cs.mark[v] = in
	}
	cs.queue = append(cs.queue[:0], active[0])
	cs.mark[active[0]] = seen
	for i := 0; i < len(cs.queue); i++ {
		for _, c := range g.Out(cs.queue[i]) {
			if u := g.Dst(int(c)); cs.mark[u] == in && g.Up(int(c)) {
				cs.mark[u] = seen
				cs.queue = append(cs.queue, u)
			}
		}
	}
	for _, v := range active {
		if cs.mark[v] != seen {
			return false
		}
	}
	return true
}

// onceMap computes a value per key once; safe for concurrent use (two
// goroutines may both compute a missing key; the first stored wins).
type onceMap struct{ m sync.Map }

func (o *onceMap) get(key string, f func() (any, error)) (any, error) {
	if v, ok := o.m.Load(key); ok {
		return v, nil
	}
	v, err := f()
	if err != nil {
		return nil, err
	}
	v, _ = o.m.LoadOrStore(key, v)
	return v, nil
}

// nodeKey is a map key for a node set given in any order.
func nodeKey(nodes []int) string {
	a := slices.Clone(nodes)
	slices.Sort(a)
	b := make([]byte, 0, 4*len(a))
	for _, v := range a {
		b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return string(b)
}

func setKey(active, transit []int) string {
	a := slices.Clone(active)
	t := slices.Clone(transit)
	sort.Ints(a)
	sort.Ints(t)
	var b strings.Builder
	for _, v := range a {
		fmt.Fprintf(&b, "%d,", v)
	}
	b.WriteByte('|')
	for _, v := range t {
		fmt.Fprintf(&b, "%d,", v)
	}
	return b.String()
}
