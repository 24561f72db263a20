package multiring

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/par"
)

// SearchOptions configures Search.
type SearchOptions struct {
	N     int // nodes
	Rings int // simplex rings n; the search covers duplex multirings, so n is even
	Top   int // number of best multirings to return (default 5)
	// Include lists duplex steps every set must contain (a growable family
	// extends a smaller multiring by new rings).
	Include []int
	// MaxCable > 0 keeps only sets with Cable(steps) <= MaxCable.
	MaxCable int
	Workers  int                     // 0 = all cores
	Report   func(done, total int64) // progress, called from workers
}

// Candidate is one multiring found by Search.
type Candidate struct {
	Steps    []int   `json:"steps"`    // duplex steps s (the rings ±s), ascending
	Balanced float64 `json:"balanced"` // effective capacity with the balanced schedule
	Shortest float64 `json:"shortest"` // effective capacity with the shortest schedule
	Bound    float64 `json:"bound"`    // UpperBound: no schedule exceeds it
	Cable    int     `json:"cable"`    // Cable(Steps): ring-±1 lengths of cable
}

// SearchResult is the outcome of Search.
type SearchResult struct {
	N         int         `json:"n"`
	Rings     int         `json:"rings"`
	Best      []Candidate `json:"best"`
	Sets      int64       `json:"sets"`      // step sets enumerated (after removing isomorphic copies)
	Evaluated int64       `json:"evaluated"` // sets whose balanced schedule was computed (the rest were pruned by the bound)
}

// Search finds the duplex multirings with the given number of rings and the
// largest effective capacity under the balanced schedule. Every set contains
// ±1: a non-switched multiring needs a step u coprime to N (route 1 rides a
// single ring), and multiplying node numbers by u⁻¹ turns it into an
// isomorphic multiring containing ±1, so nothing is lost. Isomorphic step
// sets (S and u·S for a unit u mod N) are enumerated once; a set is only
// balanced when its UpperBound can still beat the Top-th best found so far,
// after a first pass has balanced the sets with the highest bounds. The
// result is deterministic: ties are broken by cable length, then steps.
func Search(o SearchOptions) (*SearchResult, error) {
	sp, err := newSearchSpace(o)
	if err != nil {
		return nil, err
	}
	if o.Top <= 0 {
		o.Top = 5
	}
	s := newSearcher(sp.n, sp.k, o)
	ws := make([]*worker, par.Workers(o.Workers))
	for i := range ws {
		ws[i] = s.newWorker()
	}
	seeds, sets := boundPass(sp, s, ws, o)
	if len(seeds) == 0 {
		return nil, fmt.Errorf("search: no connected step set satisfies the constraints")
	}
	evaluated := balancePass(sp, s, ws, seeds, o)
	var all []Candidate
	for _, wk := range ws {
		all = append(all, wk.best...)
	}
	sortCandidates(all)
	if len(all) > o.Top {
		all = all[:o.Top]
	}
	return &SearchResult{N: sp.n, Rings: o.Rings, Best: all, Sets: sets, Evaluated: evaluated}, nil
}

// searchSpace is the set of duplex step sets a search enumerates: the
// fixed steps (±1 and the included ones) plus every choice of the
// remaining rings from the pool of other duplex steps.
type searchSpace struct {
	n, k     int
	base     []int // fixed duplex steps, ascending
	poolVals []int // the other duplex steps, ascending
	free     int   // how many steps are chosen from the pool
	total    int64 // binom(len(poolVals), free)
	// dedup skips isomorphic copies; only without constraints that the
	// unit multiplication would not preserve.
	dedup    bool
	maxCable int
}

// newSearchSpace checks the options and lays out the step sets to
// enumerate.
func newSearchSpace(o SearchOptions) (*searchSpace, error) {
	n := o.N
	if n < 3 || n > 4096 {
		return nil, fmt.Errorf("search: N=%d out of range 3..4096", n)
	}
	if o.Rings < 2 || o.Rings%2 != 0 {
		return nil, fmt.Errorf("search: --rings %d must be even and at least 2 (the search covers duplex rings ±s)", o.Rings)
	}
	k := o.Rings / 2
	h := (n - 1) / 2 // duplex steps 1..h (N/2 would be its own opposite)
	if k > h {
		return nil, fmt.Errorf("search: N=%d has only %d distinct duplex rings, %d rings need %d", n, h, o.Rings, k)
	}
	base, err := fixedSteps(n, o.Include)
	if err != nil {
		return nil, err
	}
	if len(base) > k {
		return nil, fmt.Errorf("search: %d included duplex rings exceed the %d of %d rings", len(base), k, o.Rings)
	}
	sp := &searchSpace{n: n, k: k, base: base, free: k - len(base), maxCable: o.MaxCable}
	for x := 1; x <= h; x++ {
		if !slices.Contains(base, x) {
			sp.poolVals = append(sp.poolVals, x)
		}
	}
	sp.total = binom(len(sp.poolVals), sp.free)
	if sp.total < 0 || sp.total > 2e9 {
		return nil, fmt.Errorf("search: %d rings on N=%d is too many step sets to enumerate", o.Rings, n)
	}
	if sp.total == 0 {
		return nil, fmt.Errorf("search: no step set satisfies the constraints")
	}
	sp.dedup = len(base) <= 1 && o.MaxCable <= 0
	return sp, nil
}

// fixedSteps returns ±1 and the included steps as ascending duplex steps.
func fixedSteps(n int, include []int) ([]int, error) {
	base := []int{1}
	for _, x := range include {
		x = ((x % n) + n) % n
		x = min(x, n-x)
		if x == 0 || (n%2 == 0 && x == n/2) {
			return nil, fmt.Errorf("search: included step %d is not a duplex ring on N=%d", x, n)
		}
		if !slices.Contains(base, x) {
			base = append(base, x)
		}
	}
	slices.Sort(base)
	return base, nil
}

// forEach calls eval(worker, steps) for every step set of the space on all
// workers, in chunks of consecutive combinations; pass 0 or 1 scales the
// progress report over both passes. steps is reused between calls.
func (sp *searchSpace) forEach(pass int, o SearchOptions, eval func(w int, steps []int)) {
	chunks := int64(4096)
	if sp.total < chunks {
		chunks = max(sp.total, 1)
	}
	pool := len(sp.poolVals)
	var done atomic.Int64
	par.For(int(chunks), o.Workers, func(w, c int) {
		lo := sp.total * int64(c) / chunks
		hi := sp.total * int64(c+1) / chunks
		if hi <= lo {
			return
		}
		comb := unrank(pool, sp.free, lo)
		steps := make([]int, sp.k)
		for idx := lo; idx < hi; idx++ {
			sp.merge(steps, comb)
			if sp.maxCable <= 0 || Cable(steps) <= sp.maxCable {
				eval(w, steps)
			}
			nextComb(comb, pool)
		}
		if o.Report != nil {
			d := done.Add(hi - lo)
			o.Report(int64(pass)*sp.total+d, 2*sp.total)
		}
	})
}

// merge writes the fixed steps and the pool values chosen by comb into
// steps in ascending order.
func (sp *searchSpace) merge(steps, comb []int) {
	i, j := 0, 0
	for t := range steps {
		if j >= len(comb) || (i < len(sp.base) && sp.base[i] < sp.poolVals[comb[j]]) {
			steps[t] = sp.base[i]
			i++
		} else {
			steps[t] = sp.poolVals[comb[j]]
			j++
		}
	}
}

// boundPass is the first pass: it computes only the upper bound of every
// canonical step set and returns the sets with the highest bounds (the
// seeds of the second pass), best first, with the number of sets seen.
func boundPass(sp *searchSpace, s *searcher, ws []*worker, o SearchOptions) ([]boundEntry, int64) {
	seedN := max(4*o.Top, 32)
	sp.forEach(0, o, func(w int, steps []int) {
		wk := ws[w]
		if !s.canonical(wk, steps, sp.dedup) {
			return
		}
		wk.sets++
		wk.keepBound(steps, s.bound(wk, steps), seedN)
	})
	var seeds []boundEntry
	var sets int64
	for _, wk := range ws {
		seeds = append(seeds, wk.bounds...)
		sets += wk.sets
	}
	slices.SortFunc(seeds, func(a, b boundEntry) int {
		if a.ub != b.ub {
			if a.ub > b.ub {
				return -1
			}
			return 1
		}
		return slices.Compare(a.steps, b.steps)
	})
	if len(seeds) > seedN {
		seeds = seeds[:seedN]
	}
	return seeds, sets
}

// balancePass balances the seeds first, which sets a pruning threshold
// (the Top-th best balanced capacity so far), then every other set whose
// bound can still reach the threshold. It returns the number of sets
// balanced; the best ones are in the workers' lists.
func balancePass(sp *searchSpace, s *searcher, ws []*worker, seeds []boundEntry, o SearchOptions) int64 {
	var thr atomic.Uint64 // float64 bits of the pruning threshold
	var evaluated atomic.Int64
	var mu sync.Mutex
	evalOne := func(wk *worker, steps []int, ub float64) {
		evaluated.Add(1)
		wk.keep(s.evaluate(wk, steps, ub), o.Top)
		if len(wk.best) == o.Top {
			kth := wk.best[o.Top-1].Balanced
			mu.Lock()
			if kth > math.Float64frombits(thr.Load()) {
				thr.Store(math.Float64bits(kth))
			}
			mu.Unlock()
		}
	}
	seen := map[string]bool{}
	for _, e := range seeds {
		evalOne(ws[0], e.steps, e.ub)
		seen[fmt.Sprint(e.steps)] = true
	}
	lowestSeed := seeds[len(seeds)-1].ub
	sp.forEach(1, o, func(w int, steps []int) {
		wk := ws[w]
		if !s.canonical(wk, steps, sp.dedup) {
			return
		}
		ub := s.bound(wk, steps)
		t := math.Float64frombits(thr.Load())
		if ub < t-1e-9*math.Max(1, t) {
			return
		}
		if ub >= lowestSeed && seen[fmt.Sprint(steps)] {
			return
		}
		evalOne(wk, slices.Clone(steps), ub)
	})
	return evaluated.Load()
}

func sortCandidates(c []Candidate) {
	slices.SortFunc(c, func(a, b Candidate) int {
		if a.Balanced != b.Balanced {
			if a.Balanced > b.Balanced {
				return -1
			}
			return 1
		}
		if a.Cable != b.Cable {
			return a.Cable - b.Cable
		}
		return slices.Compare(a.Steps, b.Steps)
	})
}

type searcher struct {
	n, k int
	o    SearchOptions
	dist [][]int32 // dist[s][r]: hops of route r on the duplex ring ±s (min of the two directions), MaxInt32 if unreachable
	inv  []int     // inv[u] = u^-1 mod N for units, 0 otherwise
}

func newSearcher(n, k int, o SearchOptions) *searcher {
	s := &searcher{n: n, k: k, o: o}
	h := (n - 1) / 2
	s.dist = make([][]int32, h+1)
	fw := make([]int32, n)
	bw := make([]int32, n)
	for st := 1; st <= h; st++ {
		fillLengths(fw, n, st)
		fillLengths(bw, n, n-st)
		d := make([]int32, n)
		for r := range d {
			switch {
			case fw[r] < 0:
				d[r] = math.MaxInt32
			default:
				d[r] = min(fw[r], bw[r])
			}
		}
		s.dist[st] = d
	}
	s.inv = make([]int, n)
	for u := 1; u < n; u++ {
		if gcd(u, n) == 1 {
			for v := 1; v < n; v++ {
				if u*v%n == 1 {
					s.inv[u] = v
					break
				}
			}
		}
	}
	return s
}

type boundEntry struct {
	steps []int
	ub    float64
}

type worker struct {
	d      []int32
	img    []int
	m      Multiring
	sets   int64
	bounds []boundEntry // highest bounds (pass 1), unsorted beyond the minimum
	best   []Candidate  // sorted best candidates
	_      [64]byte     // per worker: keeps what workers write off each other's cache lines
}

func (s *searcher) newWorker() *worker {
	return &worker{d: make([]int32, s.n), img: make([]int, s.k)}
}

// canonical reports whether steps is the lexicographically smallest of its
// images under multiplication by units (so each isomorphism class is
// evaluated once). Disconnected sets are rejected.
func (s *searcher) canonical(wk *worker, steps []int, dedup bool) bool {
	if !dedup {
		return true
	}
	for _, x := range steps[1:] {
		if u := s.inv[x]; u != 0 {
			if s.smallerImage(wk, steps, u) {
				return false
			}
		}
	}
	return true
}

func (s *searcher) smallerImage(wk *worker, steps []int, u int) bool {
	n := s.n
	for i, x := range steps {
		y := x * u % n
		wk.img[i] = min(y, n-y)
	}
	slices.Sort(wk.img)
	return slices.Compare(wk.img, steps) < 0
}

// bound is UpperBound for the duplex set, computed from the distance table.
func (s *searcher) bound(wk *worker, steps []int) float64 {
	d := wk.d
	copy(d, s.dist[steps[0]])
	for _, st := range steps[1:] {
		ds := s.dist[st]
		for r := 1; r < len(d); r++ {
			if ds[r] < d[r] {
				d[r] = ds[r]
			}
		}
	}
	total := int64(0)
	for _, x := range d[1:] {
		total += int64(x)
	}
	n := float64(s.n)
	return float64(2*s.k) * n * (n - 1) / float64(total)
}

func (s *searcher) evaluate(wk *worker, steps []int, ub float64) Candidate {
	n := s.n
	var all []int
	for _, x := range steps {
		all = append(all, x, n-x)
	}
	slices.Sort(all)
	m := &wk.m
	m.N, m.Steps, m.Copies = n, all, 1
	if cap(m.length) < len(all)*n {
		m.length = make([]int32, len(all)*n)
	}
	m.length = m.length[:len(all)*n]
	for j, st := range all {
		fillLengths(m.length[j*n:(j+1)*n], n, st)
	}
	sh := m.Shortest()
	short := sh.Effective()
	m.balance(sh.P, sh.Loads())
	return Candidate{Steps: slices.Clone(steps), Balanced: sh.Effective(), Shortest: short, Bound: ub, Cable: Cable(steps)}
}

func (wk *worker) keep(c Candidate, top int) {
	wk.best = append(wk.best, c)
	sortCandidates(wk.best)
	if len(wk.best) > top {
		wk.best = wk.best[:top]
	}
}

func (wk *worker) keepBound(steps []int, ub float64, limit int) {
	if len(wk.bounds) < limit {
		wk.bounds = append(wk.bounds, boundEntry{slices.Clone(steps), ub})
		return
	}
	lo := 0
	for i, e := range wk.bounds {
		if e.ub < wk.bounds[lo].ub || (e.ub == wk.bounds[lo].ub && slices.Compare(e.steps, wk.bounds[lo].steps) > 0) {
			lo = i
		}
	}
	e := wk.bounds[lo]
	if ub > e.ub || (ub == e.ub && slices.Compare(steps, e.steps) < 0) {
		wk.bounds[lo] = boundEntry{slices.Clone(steps), ub}
	}
}

// binom returns C(n, k), or -1 on overflow past 2^62.
func binom(n, k int) int64 {
	if k < 0 || k > n {
		return 0
	}
	r := int64(1)
	for i := 1; i <= k; i++ {
		r = r * int64(n-k+i) / int64(i)
		if r > 1<<62/int64(n+1) {
			return -1
		}
	}
	return r
}

// unrank returns the idx-th k-combination of 0..n-1 in lexicographic order.
func unrank(n, k int, idx int64) []int {
	c := make([]int, k)
	x := 0
	for i := 0; i < k; i++ {
		for {
			cnt := binom(n-x-1, k-i-1)
			if idx < cnt {
				break
			}
			idx -= cnt
			x++
		}
		c[i] = x
		x++
	}
	return c
}

// nextComb advances c to the next k-combination of 0..n-1 (lexicographic).
func nextComb(c []int, n int) {
	k := len(c)
	i := k - 1
	for i >= 0 && c[i] == n-k+i {
		i--
	}
	if i < 0 {
		return
	}
	c[i]++
	for j := i + 1; j < k; j++ {
		c[j] = c[j-1] + 1
	}
}
