package alloc

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

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
	// longer win on criterion 1, and with a free box of Nodes nodes the
	// placements whose sets cannot tie on criteria 1 and 2
	// (phifilter.go); the choice is the same, but Found and Distinct then
	// count only the sets examined, which depends on timing. For
	// simulations and services that do not report them.
	Fast bool `json:"-"`
	// MaxTables bounds how many distinct routing tables are built to break
	// ties on diameter and π_max (0 = 64).
	MaxTables int `json:"-"`
	// NoTable skips the chosen set's routing table when no tie needs one
	// (a single translation class is left, so the tables could not change
	// the choice); Chosen.Figures is then nil. For callers that build the
	// job's table themselves (the fabric manager) or never report it
	// (simulations).
	NoTable bool `json:"-"`
	// Exists only asks whether the request can be placed: the
	// enumeration stops at the first reachable set, Found is then 1 (or 0
	// when nothing can be placed) and Chosen stays nil. Found > 0 exactly
	// when the same request without Exists would choose a set.
	Exists bool `json:"-"`
	// Budget bounds the decision's time (0 = none: every placement is
	// examined and ranked, as the seed's experiments do). When it ends,
	// the best set found so far is chosen and Result says what was not
	// examined; see DefaultBudget.
	Budget time.Duration `json:"-"`
	// Since, when not zero, is the moment the budget started (a command
	// that spent part of it building the network and the router before
	// asking); zero: when the decision starts.
	Since time.Time `json:"-"`
}

// Candidate is one reachable node set.
type Candidate struct {
	Active  []int         `json:"active"`
	Transit []int         `json:"transit"`
	Rect    Rect          `json:"rect"`
	Holes   int           `json:"holes"` // unavailable nodes inside the rectangle
	Frag    Fragmentation `json:"fragmentation_after"`
	// Figures are the figures of the set's routing table that ranked it
	// (criteria 3 and 4; nil when no table was built).
	Figures *routing.Figures `json:"table,omitempty"`
}

// candidate is a Candidate with what a decision works with: how it was
// found and what names its class.
type candidate struct {
	Candidate
	// iso names the candidate's translation class when it is known to
	// have one: sets from blocks (rectangles without unavailable nodes
	// or failed links inside) of one size, reduced the same way and
	// starting at the same place along the rings the block covers whole,
	// are translations of each other numbered in the same order in their
	// own frame (routing breaks ties by that order), with isomorphic
	// routing tables.
	iso string
	// shape names the set up to such a translation when the router is
	// translation invariant ("" otherwise).
	shape string
	// blockSize, pattern and keep name iso and shape
	// (decision.nameClasses, only for the candidates that are ranked).
	blockSize []int  // placement.blockSize
	pattern   string // placement.pattern
	keep      []int  // transit indices kept by reduce (nil: all)
	order     int
	// lazy describes a block's set whose node lists are not built yet
	// (it points to block); nTransit is the number of transit nodes
	// either way.
	lazy     *blockSet
	block    blockSet
	nTransit int
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
	// computed; Tables counts the routing tables, one per translation
	// class, that broke the ties (a selector builds a class's table once
	// and reuses its figures in later decisions).
	Ranked  int     `json:"ranked"`
	Tables  int     `json:"tables_built"`
	Seconds float64 `json:"seconds"`
	// Examined counts the rectangle placements examined (all of them
	// when the decision was not cut).
	Examined int `json:"placements_examined"`
	// Exhaustive is false when the budget ended (or the caller gave up)
	// before every placement was examined and ranked; Complete then says
	// how many of the four criteria the chosen set is certainly best
	// under (CompleteNone … CompleteAll) and Cut why it stopped.
	Exhaustive bool `json:"exhaustive"`
	// Settled: a budgeted decision stopped examining placements once
	// none left could beat the chosen set on criteria 1 and 2 (the
	// anytime order; sets that would only tie were not looked for, so
	// criteria 3 and 4 ranked the tied sets found). It depends on the
	// state alone, not on timing.
	Settled       bool    `json:"settled,omitempty"`
	Complete      int     `json:"complete_criteria"`
	Cut           string  `json:"cut,omitempty"`
	BudgetSeconds float64 `json:"budget_seconds"`
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
	anyFault  bool // some faultDirs[v] ≠ 0
	// boundGaveUp counts the decisions whose bounded path was given up
	// at the bound phase's end (giveUpBounded; tests).
	boundGaveUp atomic.Int64
	// boundSeeded counts the decisions whose bounded path took its φ*
	// from a seed (seeded.go) rather than from the free boxes of m nodes.
	boundSeeded atomic.Int64
	reach       reachCache
	hints       []pairHints // per worker
	retry       retryMemo
	// reductions keeps block reductions across decisions
	reductions reductionMemo
	// figures keeps tie-break table figures across decisions
	figures figureCache
	// arenas hold the candidates of the current decision, per worker.
	arenas []candArena
	taken  []takenSet // per worker: leastFragmenting's space
	// noFit remembers the rectangle sizes with no free placement (the fit
	// lattice's "does not fit" marks) and the available nodes they were
	// found on: while nodes are only taken, a size that did not fit still
	// does not (a machine filling up with jobs); and per size a placement
	// found free, which the next decision tries first.
	noFit struct {
		avail   []bool
		state   []int8
		witness []int32
	}
	// tune is the normal working unless a test changed it.
	tune tuning
	keys struct { // collect's space for set names
		keyScratch
		buf []byte
	}
}

// tuning changes how a selector works without changing what it chooses:
// tests compare decisions with and without a shortcut, and cut them at
// points that do not depend on timing. The zero value is the normal
// working.
type tuning struct {
	// noWallShortcut turns off splitByWall, noBlockCounting blockScan.
	noWallShortcut, noBlockCounting bool
	// cutAfter and cutAfterAsks, when positive, end each decision's
	// enumeration after that many placements or reachability questions,
	// as a budget would (a cut that does not depend on timing; the
	// second one cuts in the middle of a reduction).
	cutAfter, cutAfterAsks int
	// checkSettledAfter, when positive, replaces anytimeAfter (small
	// tori, whose decisions examine fewer placements).
	checkSettledAfter int
	// forceUniform takes the uniform path on an empty torus whatever its
	// size (small tori, to compare it with the enumeration).
	forceUniform bool
	// forceBounded takes the bounded path on a budgeted decision
	// whatever the torus's size.
	forceBounded bool
	// boundMasks makes the bounded path find promising starts for all
	// starts at once even where checking each would be cheaper.
	boundMasks bool
	// boundDirect makes the bounded path check each placement against
	// the levels' rectangles even where the masks would be cheaper.
	boundDirect bool
	// noSeedMemo scans every placement in each seed search pass;
	// seedSkips counts the placements seedMemo skips; onSeeds sees the
	// seeds a bounded path found.
	noSeedMemo bool
	seedSkips  *atomic.Int64
	onSeeds    func([]seed)
	// plainScan asks the grid, unfolded, about every start the seed
	// search and the bounded listing visit (no poorStarts, no foldGrid).
	plainScan bool
	// wholeList makes the bounded path list every placement before it
	// examines any; listWave sets how many sizes its first wave lists
	// (0: four per worker; each wave lists twice as many as the one
	// before); topStops counts the listings a candidate of φ_top ended
	// early.
	wholeList bool
	listWave  int
	topStops  *atomic.Int64
	// forgetAnswers empties the reachability cache after the seed
	// search, as a full cache that kept none of its answers would be.
	forgetAnswers bool
	// noUniform keeps the direct enumeration on an empty torus (the
	// baseline of the benchmarks).
	noUniform bool
	// noPhiFilter examines every placement of a Fast decision (see
	// phifilter.go).
	noPhiFilter bool
	// noExactPhi keeps the φ filter to its leading-box bound (without
	// each placement's exact φ, examineByPhi).
	noExactPhi bool
	// barSkips, when not nil, counts the placements examineEntries left
	// out below a candidate's φ.
	barSkips *atomic.Int64
	// boundSpent ends the bound phase at the decision's start, as if
	// listing the free rectangles had taken it (giveUpBounded).
	boundSpent bool
	// cutMasks ends the enumeration phase as the bounded path starts
	// finding its promising starts (as a budget ending there would).
	cutMasks bool
	// later, when not nil, counts the placements whose reduction was
	// left the rest of the reachability question (checkLater).
	later *atomic.Int64
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
	sel.anyFault = false
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
			sel.anyFault = true
		}
	}
}

// internalFault reports whether a failed link joins two nodes of r.
func (sel *Selector) internalFault(r Rect, nodes []int) bool {
	if !sel.anyFault {
		return false
	}
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
// galloping and bisection: O(kept · log |transit|) questions instead of
// |transit|, one per kept node when the nodes kept are the last ones,
// with exactly the one-by-one greedy's outcome.
func dropTransit(reachable func(active, transit []int) (bool, error), active, transit []int, bound int) ([]int, error) {
	var kept []int // indices kept, descending
	try := make([]int, 0, len(transit))
	reach := func(j int) (bool, error) { // transit[:j] plus the kept ones
		try = append(try[:0], transit[:j]...)
		for _, k := range kept {
			try = append(try, transit[k])
		}
		return reachable(active, try)
	}
	for i := len(transit); i > 0; {
		if bound >= 0 && len(kept) == bound {
			// One more kept node gives up: whether the least j is 0 is
			// all that is left to know, and the kept nodes alone tell
			// it (a set that is not reachable is most often told by its
			// first sources, while galloping down from i proves every
			// reachable prefix on the way in full).
			ok, err := reach(0)
			if err != nil || !ok {
				return nil, err
			}
			break
		}
		// transit[:i] ∪ kept is reachable; find the least j ≤ i for
		// which transit[:j] ∪ kept still is. Usually the last node is
		// needed (j = i), so the search gallops down from i: i−1, i−2,
		// i−4, … until a prefix fails, then bisects the last step.
		lo, hi := 0, i
		for step := 1; lo < hi; step *= 2 {
			mid := max(lo, hi-step)
			ok, err := reach(mid)
			if err != nil {
				return nil, err
			}
			if !ok {
				lo = mid + 1
				break
			}
			hi = mid
		}
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

// connScratch holds one worker's marks for joinsIn.
type connScratch struct {
	mark  []uint32 // stamp: 2·pass = in the set, 2·pass+1 = reached
	pass  uint32
	queue []int
}

// joinsIn reports whether all of active lie in one connected component of
// the subgraph induced by the union of sets (live links only).
func (cs *connScratch) joinsIn(g *topology.Graph, active []int, sets ...[]int) bool {
	if len(active) < 2 {
		return true
	}
	if len(cs.mark) != g.NumNodes() || cs.pass >= 1<<31-2 {
		cs.mark, cs.pass = make([]uint32, g.NumNodes()), 0
	}
	cs.pass++
	in, seen := 2*cs.pass, 2*cs.pass+1
	for _, set := range sets {
		for _, v := range set {
			cs.mark[v] = in
		}
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

// appendSetID appends to b a compact name of the node set active ∪
// transit with its split (ids in any order), sorting in scratch.
func appendSetID(b []byte, active, transit []int, scratch *[]int) []byte {
	for k, l := range [2][]int{active, transit} {
		if k == 1 {
			b = append(b, 0xff, 0xff, 0xff, 0xff) // no node id
		}
		a := append((*scratch)[:0], l...)
		slices.Sort(a)
		*scratch = a
		for _, v := range a {
			b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
	}
	return b
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
