package routing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// FaultOptions configure the fault-tolerance experiment of seed 001 §5.1.
type FaultOptions struct {
	Seed     uint64 `json:"seed"`
	Trials   int    `json:"trials"`    // random failure orders per torus (default 10)
	MaxNodes int    `json:"max_nodes"` // N = Πd_i ≤ MaxNodes (default 128)
	MaxSize  int    `json:"max_size"`  // d_i ≤ MaxSize (default 8)
	MinDims  int    `json:"min_dims"`  // 2
	MaxDims  int    `json:"max_dims"`  // 4
	// Sorted keeps one orientation per shape (d1 ≥ d2 ≥ …) instead of
	// every ordered tuple.
	Sorted bool `json:"sorted"`
	// Unit is what fails: "channel" (default: one direction (u,D) of a
	// cable, the seed's link, F ⊂ N×D) or "link" (the whole duplex cable,
	// as --fail-links does).
	Unit     string                `json:"unit"`
	Workers  int                   `json:"-"`
	Progress func(done, total int) `json:"-"`
	// variant selects an R_A* construction variant (fidelity experiment).
	variant starVariant
}

func (o *FaultOptions) defaults() error {
	if o.Trials == 0 {
		o.Trials = 10
	}
	if o.MaxNodes == 0 {
		o.MaxNodes = 128
	}
	if o.MaxSize == 0 {
		o.MaxSize = 8
	}
	if o.MinDims == 0 {
		o.MinDims = 2
	}
	if o.MaxDims == 0 {
		o.MaxDims = 4
	}
	if o.Unit == "" {
		o.Unit = "channel"
	}
	switch {
	case o.Unit != "channel" && o.Unit != "link":
		return fmt.Errorf("failure unit %q: want channel or link", o.Unit)
	case o.Trials < 1 || o.Trials > 1_000_000:
		return fmt.Errorf("trials %d out of range 1..1000000", o.Trials)
	case o.MaxSize < 2 || o.MaxSize > 64:
		return fmt.Errorf("largest ring size %d out of range 2..64", o.MaxSize)
	case o.MinDims < 1 || o.MaxDims > MaxDims || o.MinDims > o.MaxDims:
		return fmt.Errorf("dimensions %d..%d: want 1 ≤ min ≤ max ≤ %d", o.MinDims, o.MaxDims, MaxDims)
	case o.MaxNodes < 1<<o.MinDims || o.MaxNodes > 4096:
		return fmt.Errorf("node limit %d: want %d..4096 (a %d-dimensional torus has at least %d nodes)", o.MaxNodes, 1<<o.MinDims, o.MinDims, 1<<o.MinDims)
	}
	return nil
}

// SeedGains are the reference gains of R_A* over R_A− (seed 001 §5.1):
// 4.9 %, 8.2 % and 34 % more random link failures survived for 2D, 3D and
// 4D tori.
var SeedGains = map[int]float64{2: 4.9, 3: 8.2, 4: 34}

// FaultTorus is the result for one torus.
type FaultTorus struct {
	Dims  []int   `json:"dims"`
	Links int     `json:"units"`             // channels or links that can fail
	Minus float64 `json:"angara_minus_mean"` // mean failures survived under angara−
	Star  float64 `json:"angara_star_mean"`  // … under angara*
	// Accepted is the mean number of order-violating dependencies R_A*
	// had accepted at its last reachable failure count.
	Accepted float64 `json:"angara_star_extra_deps"`
}

// FaultRow summarises one dimensionality.
type FaultRow struct {
	Dims            int     `json:"n"`
	Tori            int     `json:"tori"`
	Trials          int     `json:"trials"`
	MeanLinks       float64 `json:"mean_links"`
	MinusMean       float64 `json:"angara_minus_failures"`
	StarMean        float64 `json:"angara_star_failures"`
	MinusPct        float64 `json:"angara_minus_pct"` // mean of survived/links·100
	StarPct         float64 `json:"angara_star_pct"`
	Gain            float64 `json:"gain_pct"`          // mean over tori of (star/minus − 1)·100
	GainOfMeans     float64 `json:"gain_of_means_pct"` // (Σstar/Σminus − 1)·100
	SeedGain        float64 `json:"seed_gain_pct"`     // the seed's figure
	ToriWithoutGain int     `json:"tori_without_gain"` // tori where angara− survived no failure on average (gain undefined)
}

// FaultReport is the experiment's result.
type FaultReport struct {
	Options FaultOptions `json:"options"`
	Rows    []FaultRow   `json:"rows"`
	Tori    []FaultTorus `json:"tori"`
	// Trials holds the failures survived in every trial, torus-major:
	// [angara−, angara*] of trial k of torus i at index i·Trials+k.
	Trials [][2]int `json:"-"`
}

// FaultTori lists the torus shapes of the experiment.
func FaultTori(o FaultOptions) ([][]int, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	var out [][]int
	for n := o.MinDims; n <= o.MaxDims; n++ {
		d := make([]int, n)
		var rec func(i, prod int)
		rec = func(i, prod int) {
			if i == n {
				out = append(out, append([]int(nil), d...))
				return
			}
			for x := 2; x <= o.MaxSize && prod*x <= o.MaxNodes; x++ {
				if o.Sorted && i > 0 && x > d[i-1] {
					break
				}
				d[i] = x
				rec(i+1, prod*x)
			}
		}
		rec(0, 1)
	}
	return out, nil
}

type faultTrial struct {
	minus, star int
	accepted    int
}

type faultWorker struct {
	s    *scratch
	sb   starBuilder
	perm []int
	up   []bool
	_    [64]byte // per worker: keeps what workers write off each other's cache lines
}

// FaultExperiment runs the experiment: for every torus and trial, channels
// (or links) fail one by one in a random order (seeded by Seed, the torus and the
// trial, so the result does not depend on Workers) until some ordered
// pair of nodes has no legal route; the number of failures survived is
// recorded for angara− (by bisection: its reachability only shrinks as
// links fail) and for angara*, whose R_A* is rebuilt for every failure
// set and checked failure by failure from the angara− count on.
func FaultExperiment(o FaultOptions) (*FaultReport, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	shapes, err := FaultTori(o)
	if err != nil {
		return nil, err
	}
	tori, err := buildFaultTori(shapes)
	if err != nil {
		return nil, err
	}
	res := runFaultTrials(o, tori)
	rep := &FaultReport{Options: o}
	for _, r := range res {
		rep.Trials = append(rep.Trials, [2]int{r.minus, r.star})
	}
	summariseFaults(rep, shapes, tori, res)
	return rep, nil
}

// buildFaultTori builds the torus of every shape.
func buildFaultTori(shapes [][]int) ([]*torus, error) {
	tori := make([]*torus, len(shapes))
	for i, d := range shapes {
		g, err := topology.Grid(d, true, topology.GridOpts{})
		if err != nil {
			return nil, err
		}
		if tori[i], err = newTorus(g); err != nil {
			return nil, err
		}
	}
	return tori, nil
}

// runFaultTrials runs o.Trials trials on every torus in parallel, each
// with the R_A− and R_A* automata of its dimension; the result of trial k
// on torus i is at i*o.Trials+k.
func runFaultTrials(o FaultOptions, tori []*torus) []faultTrial {
	automata := map[int][2]*automaton{}
	for n := o.MinDims; n <= o.MaxDims; n++ {
		second := AngaraStar
		if o.variant.ruleA {
			second = Angara
		}
		first := AngaraMinus
		if o.variant.baseDirbit {
			first = Dirbit
		}
		order := o.variant.experimentOrder(n)
		automata[n] = [2]*automaton{compile(first, order, n), compile(second, order, n)}
	}
	items := len(tori) * o.Trials
	res := make([]faultTrial, items)
	workers := par.Workers(o.Workers)
	ws := make([]*faultWorker, workers)
	var done atomic.Int64
	par.For(items, workers, func(w, i int) {
		if ws[w] == nil {
			ws[w] = &faultWorker{}
			ws[w].sb.variant, ws[w].sb.closureLimit = o.variant, defaultTuning().closureLimit
		}
		ti, trial := i/o.Trials, i%o.Trials
		res[i] = ws[w].run(tori[ti], automata[tori[ti].n], o.Seed, uint64(ti), uint64(trial), o.Unit == "channel")
		if o.Progress != nil {
			o.Progress(int(done.Add(1)), items)
		}
	})
	return res
}

// faultSums accumulates, per dimension count, the torus means that the
// row's gains are computed from.
type faultSums struct {
	gainSum           float64
	gainCnt           int
	sumMinus, sumStar float64
}

// summariseFaults appends the per-torus means of the trials (rep.Tori) and
// the per-dimension rows (rep.Rows) to rep.
func summariseFaults(rep *FaultReport, shapes [][]int, tori []*torus, res []faultTrial) {
	o := rep.Options
	byN := map[int]*FaultRow{}
	sums := map[int]*faultSums{}
	for ti, t := range tori {
		row := byN[t.n]
		if row == nil {
			row = &FaultRow{Dims: t.n, SeedGain: SeedGains[t.n]}
			byN[t.n] = row
			sums[t.n] = &faultSums{}
		}
		ft := faultTorusMeans(o, shapes[ti], t, res[ti*o.Trials:(ti+1)*o.Trials], row)
		rep.Tori = append(rep.Tori, ft)
		row.Tori++
		row.Trials += o.Trials
		row.MeanLinks += float64(ft.Links)
		row.MinusMean += ft.Minus
		row.StarMean += ft.Star
		s := sums[t.n]
		s.sumMinus += ft.Minus
		s.sumStar += ft.Star
		if ft.Minus > 0 {
			s.gainSum += (ft.Star/ft.Minus - 1) * 100
			s.gainCnt++
		} else {
			row.ToriWithoutGain++
		}
	}
	for n := o.MinDims; n <= o.MaxDims; n++ {
		row := byN[n]
		if row == nil {
			continue
		}
		finishFaultRow(row, sums[n])
		rep.Rows = append(rep.Rows, *row)
	}
}

// faultTorusMeans averages the trials of one torus and adds their
// percentages of failed links to row.
func faultTorusMeans(o FaultOptions, dims []int, t *torus, trials []faultTrial, row *FaultRow) FaultTorus {
	ft := FaultTorus{Dims: dims, Links: t.numLinks()}
	if o.Unit == "channel" {
		ft.Links *= 2
	}
	for _, r := range trials {
		ft.Minus += float64(r.minus)
		ft.Star += float64(r.star)
		ft.Accepted += float64(r.accepted)
		row.MinusPct += 100 * float64(r.minus) / float64(ft.Links)
		row.StarPct += 100 * float64(r.star) / float64(ft.Links)
	}
	ft.Minus /= float64(o.Trials)
	ft.Star /= float64(o.Trials)
	ft.Accepted /= float64(o.Trials)
	return ft
}

// finishFaultRow turns the sums of a row into means and gains.
func finishFaultRow(row *FaultRow, s *faultSums) {
	row.MeanLinks /= float64(row.Tori)
	row.MinusMean /= float64(row.Tori)
	row.StarMean /= float64(row.Tori)
	row.MinusPct /= float64(row.Trials)
	row.StarPct /= float64(row.Trials)
	if s.gainCnt > 0 {
		row.Gain = s.gainSum / float64(s.gainCnt)
	}
	if s.sumMinus > 0 {
		row.GainOfMeans = (s.sumStar/s.sumMinus - 1) * 100
	}
}

// run performs one trial on torus t.
func (fw *faultWorker) run(t *torus, au [2]*automaton, seed, ti, trial uint64, channels bool) faultTrial {
	nc := 2 * t.numLinks()
	L := t.numLinks()
	if channels {
		L = nc
	}
	fw.perm = faultOrder(fw.perm, seed, ti, trial, L)
	fw.up = slices.Grow(fw.up[:0], nc)[:nc]
	states := max(au[0].nstates, au[1].nstates)
	if fw.s == nil || len(fw.s.mask) < t.nodes*states || len(fw.s.setStamp) < t.nodes {
		fw.s = newScratch(max(t.nodes, 128), max(states, 90), max(nc, 1024))
	}
	all := make([]int, t.nodes)
	for i := range all {
		all[i] = i
	}
	setFailures := func(k int) {
		for c := range fw.up {
			fw.up[c] = true
		}
		for _, u := range fw.perm[:k] {
			if channels {
				fw.up[u] = false
			} else {
				fw.up[2*u], fw.up[2*u+1] = false, false
			}
		}
	}
	reach := func(r *Router) bool {
		r.compileMasks() // fw.up changed since
		if err := r.prepareSet(fw.s, all, nil); err != nil {
			panic(err) // cannot happen: all nodes are alive
		}
		ok, _ := r.reachSet(fw.s, nil, true)
		return ok
	}
	minus := &Router{t: t, rule: Rule{Kind: au[0].kind, Order: au[0].order}, order: au[0].order, a: au[0], up: fw.up}
	minus.compileMoves()
	// angara−: the largest k whose first k failures keep the machine
	// reachable (k = 0 always does).
	lo, hi := 0, L // reach(lo) true; reach(hi) false unless the torus has one node
	setFailures(hi)
	if reach(minus) {
		return faultTrial{L, L, 0}
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		setFailures(mid)
		if reach(minus) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return fw.runStar(t, au[1], lo, L, setFailures, reach)
}

// runStar counts the failures angara* survives in one trial (R_A* rebuilt
// for every failure set), given that angara− survives lo of the L: failure
// by failure from lo on, until the first loss.
func (fw *faultWorker) runStar(t *torus, au *automaton, lo, L int, setFailures func(int), reach func(*Router) bool) faultTrial {
	out := faultTrial{minus: lo, star: lo}
	try := func(k int) bool {
		setFailures(k)
		var st starResult
		if au.kind == AngaraStar {
			var err error
			if st, err = fw.sb.build(t, fw.up, au.rank); err != nil {
				panic(err) // cannot happen: the R_DOR dependencies are acyclic
			}
		}
		star := &Router{t: t, rule: Rule{Kind: au.kind, Order: au.order}, order: au.order, a: au, up: fw.up, star: &st}
		star.compileMoves()
		if fw.sb.variant.incremental {
			fw.sb.pre = st.extra
		}
		ok := reach(star)
		if ok {
			out.accepted = st.accepted
		}
		return ok
	}
	// angara* ⊇ angara−, so it survives at least lo failures; step on.
	first := lo + 1
	if fw.sb.variant.incremental {
		first, fw.sb.pre = 1, nil // R_A* grows with the failures from the first one
	}
	for k := first; k <= L; k++ {
		if !try(k) {
			if k <= lo {
				panic("angara* lost a pair angara- reaches")
			}
			break
		}
		out.star = k
	}
	if fw.sb.variant.lastStar {
		for k := out.star + 2; k <= L; k++ {
			if try(k) {
				out.star = k
			}
		}
	}
	if fw.sb.variant.bisectStar {
		// as for angara−, as if reachability only shrank: R_A* is rebuilt
		// for every failure set and may reach every pair again later.
		for hi := L; hi-out.star > 1; {
			if mid := (out.star + hi) / 2; try(mid) {
				out.star = mid
			} else {
				hi = mid
			}
		}
	}
	return out
}

// faultOrder returns the random order in which the L links (or channels)
// of torus ti fail in the given trial.
func faultOrder(buf []int, seed, ti, trial uint64, L int) []int {
	rng := rand.New(rand.NewPCG(seed, ti<<32|trial))
	buf = slices.Grow(buf[:0], L)[:L]
	for i := range buf {
		buf[i] = i
	}
	rng.Shuffle(L, func(i, j int) { buf[i], buf[j] = buf[j], buf[i] })
	return buf
}

func newScratch(nodes, states, channels int) *scratch {
	nv := nodes * states
	return &scratch{
		setStamp: make([]uint32, nodes),
		actIdx:   make([]int32, nodes),
		isAct:    make([]uint32, nodes),
		mask:     make([]uint64, nv), // reachSet grows it to the set's size
	}
}
