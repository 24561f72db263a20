package routing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// Algo is a routing-table construction algorithm.
type Algo uint8

const (
	// BFS is the seed's algorithm (§3.2): one breadth-first search in RG per
	// active node, sources taken farthest-from-previous first, each BFS
	// layer visited in order of increasing load of the link that enters
	// each vertex; routes are minimal.
	BFS Algo = iota
	// Baseline is the older coordinate-based algorithm (§3.1): for a
	// fault-free rectangle (box) of active nodes without transit nodes,
	// each dimension is crossed the short way in direction order, and a
	// tie on an even ring (distance d/2) goes + when the source's
	// coordinates sum to an even number and − otherwise, spreading traffic
	// by source coordinates.
	Baseline
	// Genetic is the seed's genetic algorithm (§3.3, see
	// GeneticOptions): minimal legal routes chosen per pair by evolution
	// from the BFS table.
	Genetic
)

var algoNames = [...]string{"bfs", "baseline", "genetic"}

func (a Algo) String() string {
	if int(a) < len(algoNames) {
		return algoNames[a]
	}
	return fmt.Sprintf("algo%d", int(a))
}

// ParseAlgo parses "bfs", "baseline" or "genetic".
func ParseAlgo(s string) (Algo, error) {
	for i, n := range algoNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Algo(i), nil
		}
	}
	return 0, fmt.Errorf("unknown table algorithm %q (want bfs, baseline or genetic)", s)
}

// Figures are what a routing table is judged by (seed 001 ch. 3): its
// diameter, π_max, π_perfect and balance factor. The JSON names are
// those of `icn route --json`, where they sit under the key "stats".
type Figures struct {
	// Diameter is the length of the longest route.
	Diameter int `json:"diameter"`
	// PiMax is the largest load G_c (number of routes using channel c)
	// over the channels C(M_{a,t}) inside the set.
	PiMax int `json:"pi_max"`
	// PiPerfect is the mean load over C(M_{a,t}) of any table of minimal
	// routes: Σ over ordered active pairs of the minimal legal route
	// length, divided by |C(M_{a,t})|.
	PiPerfect float64 `json:"pi_perfect"`
	// BalanceFactor is (PiMax/PiPerfect − 1)·100 %.
	BalanceFactor float64 `json:"balance_factor"`
}

// String gives the figures as a person reads them ("diameter 4, π_max 10,
// π_perfect 8.48, balance factor 17.9 %").
func (s Figures) String() string {
	return fmt.Sprintf("diameter %d, π_max %d, π_perfect %.3g, balance factor %.3g %%", s.Diameter, s.PiMax, s.PiPerfect, s.BalanceFactor)
}

// Route is one route of a table: the direction of every step from Src to
// Dst and the channels (topology channel ids) it uses. FS reports that
// Dirs[0] is a non-standard First Step and LS that the last step is a
// non-standard Last Step (the canonical labelling: a step is FS/LS only if
// the route is illegal without that exemption).
type Route struct {
	Src, Dst int
	Dirs     []Dir
	Channels []int32
	FS, LS   bool
}

// Table is a routing table: exactly one route per ordered pair of distinct
// active nodes, with its figures and deadlock verdict. Tables returned by
// Build have been verified unless BuildOptions.Unverified said otherwise.
// Routes are stored compactly (a First Step, a Last Step and a step count
// per direction in order), a few bytes each.
type Table struct {
	Rule    Rule
	Algo    Algo
	Active  []int // node ids, increasing
	Transit []int // node ids, increasing
	Figures Figures
	// Channels is |C(M_{a,t})|, the live channels joining two set nodes.
	Channels int
	// SumLength is the total length of all routes.
	SumLength int
	// DeadlockFree is the verdict of the channel dependency check; when
	// false, Cycle lists the channels of one dependency cycle containing a
	// turn (only angara tables can deadlock).
	DeadlockFree bool
	Cycle        []int
	// GeneticRun describes the run that made a Genetic table (nil for
	// the other algorithms).
	GeneticRun *GeneticRun

	r      *Router
	stride int
	wide   bool
	codes  []byte
	loads  []int32
}

// NumRoutes returns m·(m−1) for m active nodes.
func (tb *Table) NumRoutes() int { m := len(tb.Active); return m * (m - 1) }

// Router returns the router that built the table.
func (tb *Table) Router() *Router { return tb.r }

// Graph returns the network.
func (tb *Table) Graph() *topology.Graph { return tb.r.t.g }

// Pair returns the source and destination of route i. Routes are ordered
// by source, then destination (both in Active order).
func (tb *Table) Pair(i int) (src, dst int) {
	m := len(tb.Active)
	a, b := i/(m-1), i%(m-1)
	if b >= a {
		b++
	}
	return tb.Active[a], tb.Active[b]
}

// Index returns the index of the route from src to dst, or -1.
func (tb *Table) Index(src, dst int) int {
	a, ok := slices.BinarySearch(tb.Active, src)
	b, ok2 := slices.BinarySearch(tb.Active, dst)
	if !ok || !ok2 || a == b {
		return -1
	}
	return pairIndex(len(tb.Active), a, b)
}

func pairIndex(m, a, b int) int {
	if b > a {
		b--
	}
	return a*(m-1) + b
}

func (tb *Table) code(i int) []byte { return tb.codes[i*tb.stride : (i+1)*tb.stride] }

func (tb *Table) count(c []byte, rank int) int {
	if tb.wide {
		return int(c[2+2*rank]) | int(c[3+2*rank])<<8
	}
	return int(c[2+rank])
}

// Len returns the length of route i.
func (tb *Table) Len(i int) int {
	c := tb.code(i)
	n := 0
	if c[0] != 0 {
		n++
	}
	if c[1] != 0 {
		n++
	}
	for k := 0; k < tb.r.t.nd; k++ {
		n += tb.count(c, k)
	}
	return n
}

// AppendDirs appends the directions of route i to buf.
func (tb *Table) AppendDirs(i int, buf []Dir) []Dir {
	c := tb.code(i)
	if c[0] != 0 {
		buf = append(buf, Dir(c[0]-1))
	}
	for k, d := range tb.r.order {
		for j := tb.count(c, k); j > 0; j-- {
			buf = append(buf, d)
		}
	}
	if c[1] != 0 {
		buf = append(buf, Dir(c[1]-1))
	}
	return buf
}

// AppendChannels appends the channel ids (of the topology graph) of route
// i to buf, in order.
func (tb *Table) AppendChannels(i int, buf []int32) []int32 {
	src, _ := tb.Pair(i)
	v := src
	t := tb.r.t
	step := func(d Dir) {
		buf = append(buf, t.chAt(v, d))
		v = int(t.nbAt(v, d))
	}
	c := tb.code(i)
	if c[0] != 0 {
		step(Dir(c[0] - 1))
	}
	for k, d := range tb.r.order {
		for j := tb.count(c, k); j > 0; j-- {
			step(d)
		}
	}
	if c[1] != 0 {
		step(Dir(c[1] - 1))
	}
	return buf
}

// Route returns route i.
func (tb *Table) Route(i int) Route {
	src, dst := tb.Pair(i)
	c := tb.code(i)
	return Route{Src: src, Dst: dst, Dirs: tb.AppendDirs(i, nil), Channels: tb.AppendChannels(i, nil), FS: c[0] != 0, LS: c[1] != 0}
}

// Loads returns the load G_c of every channel (indexed by topology channel
// id); the caller must not modify it.
func (tb *Table) Loads() []int32 { return tb.loads }

// ---- construction ----

// BuildOptions say how Build makes a table. The zero value builds a
// verified BFS table on all cores.
type BuildOptions struct {
	// Algo is the algorithm: BFS (the zero value), Baseline or Genetic.
	Algo Algo
	// Workers bounds the goroutines of the construction and of the
	// verification (0 = all cores); the table does not depend on it.
	Workers int
	// Batch is the number of BFS sources whose searches share one load
	// snapshot (0 = the default, see tableBatch); 1 is the strictly
	// sequential algorithm of the seed.
	Batch int
	// ExactOrder takes the BFS sources in exactly the order of the
	// sequential algorithm for sets of any size (up to 8 192 active
	// nodes) at the cost of one distance search per source; by default
	// that is done up to 1 024 active nodes and on whole fault-free tori
	// (where one search suffices), and larger sets use interleaved
	// chains. Batch and ExactOrder also shape the BFS table a genetic run
	// starts from.
	ExactOrder bool
	// Progress, if set, is called as the work advances: BFS after every
	// source (done of total = active nodes + 1) and once more when the
	// verification ends; Genetic after every generation (done of the
	// generation limit, total 0 when there is none); Baseline never.
	Progress func(done, total int)
	// Unverified leaves out the independent verification, for callers
	// that rank tables of which they keep one: Verify the table before
	// using it (until then its DeadlockFree and Cycle say nothing).
	// Progress then counts the sources only. A genetic run always
	// verifies its table (it compares it with its BFS table), so
	// Unverified with Genetic is an error.
	Unverified bool
	// Genetic tunes the genetic algorithm (Algo Genetic); its zero value
	// has the defaults.
	Genetic GeneticOptions
}

// Build makes the routing table of the set M_{a,t} = active ∪ transit
// (node ids) as o says and, unless o.Unverified, verifies it
// independently of its construction: every route, the figures and the
// deadlock verdict. A set with an active pair that has no legal route
// inside it is an *UnreachableError. A genetic table carries the
// description of its run (Table.GeneticRun).
//
// When ctx ends, Build stops with its error, except for a genetic run
// whose BFS table is done: the evolution stops and the best table so far
// is returned (GeneticRun.Stop is StopCancelled).
func (r *Router) Build(ctx context.Context, active, transit []int, o BuildOptions) (*Table, error) {
	run := tableRun{progress: o.Progress, workers: o.Workers, batch: o.Batch, exact: o.ExactOrder, ctx: ctx}
	switch {
	case o.Algo == Genetic && o.Unverified:
		return nil, errors.New("a genetic table is always verified: BuildOptions.Unverified does not apply to it")
	case o.Algo == Genetic:
		return r.buildGenetic(active, transit, o.Genetic, run)
	case o.Unverified:
		return r.build(active, transit, o.Algo, run)
	}
	return r.buildVerified(active, transit, o.Algo, run)
}

// buildVerified builds a BFS or baseline table and verifies it (BFS:
// while it is built, on the cores the rounds leave idle).
func (r *Router) buildVerified(active, transit []int, algo Algo, run tableRun) (*Table, error) {
	var check builtCheck
	run.verify = &check
	tb, err := r.build(active, transit, algo, run)
	if err != nil {
		return nil, err
	}
	if check.rc != nil {
		err = r.acceptReport(run.ctx, tb, check.rc.tableReport(check.ws))
	} else {
		err = r.verifyBuilt(run.ctx, tb, run.workers)
	}
	if run.progress != nil {
		run.progress(len(tb.Active)+1, len(tb.Active)+1)
	}
	if err != nil {
		return nil, err
	}
	return tb, nil
}

// verifyBuilt verifies a table just built (routes, figures, deadlock
// freedom) and records whether it is deadlock-free.
func (r *Router) verifyBuilt(ctx context.Context, tb *Table, workers int) error {
	return r.acceptReport(ctx, tb, r.verifyTableContext(ctx, tb, workers))
}

// acceptReport checks the report of a table's verification against the
// table (no violation, the same figures) and records whether the table
// is deadlock-free.
func (r *Router) acceptReport(ctx context.Context, tb *Table, rep *Report) error {
	if ctx != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if len(rep.Violations) > 0 {
		return fmt.Errorf("internal error: the %s table fails verification: %s", tb.Algo, rep.Violations[0])
	}
	if rep.Figures != tb.Figures || rep.SumLength != tb.SumLength {
		return fmt.Errorf("internal error: recomputed figures %+v differ from %+v", rep.Figures, tb.Figures)
	}
	tb.DeadlockFree = rep.Cycle == nil
	tb.Cycle = rep.Cycle
	if !tb.DeadlockFree && r.rule.Kind != Angara {
		return fmt.Errorf("internal error: a %s table deadlocks (cycle %s)", r.rule.Kind, r.CycleString(rep.Cycle))
	}
	return nil
}

func (r *Router) newTable(s *scratch, algo Algo) *Table {
	m := len(s.act)
	tb := &Table{Rule: r.rule, Algo: algo, r: r}
	tb.Active = make([]int, m)
	for i, v := range s.act {
		tb.Active[i] = int(v)
	}
	tb.Transit = make([]int, len(s.trans))
	for i, v := range s.trans {
		tb.Transit[i] = int(v)
	}
	maxd := 0
	for _, d := range r.t.dims {
		maxd = max(maxd, d)
	}
	tb.wide = maxd >= 250
	w := 1
	if tb.wide {
		w = 2
	}
	tb.stride = 2 + w*r.t.nd
	tb.codes = make([]byte, m*(m-1)*tb.stride)
	tb.loads = make([]int32, len(r.up))
	return tb
}

// TableBytes is the memory a table of m active nodes takes on this
// torus: one fixed-size record per ordered pair of active nodes, and the
// channel loads.
func (r *Router) TableBytes(m int) int64 {
	maxd := 0
	for _, d := range r.t.dims {
		maxd = max(maxd, d)
	}
	w := int64(1)
	if maxd >= 250 {
		w = 2
	}
	return int64(m)*int64(max(m-1, 0))*(2+w*int64(r.t.nd)) + 4*int64(len(r.up))
}

func (r *Router) build(active, transit []int, algo Algo, o tableRun) (*Table, error) {
	s := r.getScratch()
	defer r.putScratch(s)
	if err := r.prepareSet(s, active, transit); err != nil {
		return nil, err
	}
	tb := r.newTable(s, algo)
	var err error
	switch algo {
	case BFS:
		err = r.buildBFS(s, tb, o)
	case Baseline:
		err = r.buildBaseline(s, tb)
	default:
		err = fmt.Errorf("unknown table algorithm %d", algo)
	}
	if err != nil {
		return nil, err
	}
	r.finishStats(s, tb)
	return tb, nil
}

// finishStats fills the figures from the loads and lengths already in tb.
func (r *Router) finishStats(s *scratch, tb *Table) {
	t := r.t
	ep := s.setEpoch
	nc := 0
	pimax := int32(0)
	for _, list := range [2][]int32{s.act, s.trans} {
		for _, v := range list {
			for d := 0; d < t.nd; d++ {
				c := t.ch[int(v)*t.nd+d]
				if live(r.up, c) && s.setStamp[t.nb[int(v)*t.nd+d]] == ep {
					nc++
					pimax = max(pimax, tb.loads[c])
				}
			}
		}
	}
	tb.Channels = nc
	tb.Figures.PiMax = int(pimax)
	tb.Figures.PiPerfect, tb.Figures.BalanceFactor = piFigures(tb.SumLength, nc, int(pimax))
}

func piFigures(sum, channels, pimax int) (perfect, bf float64) {
	if channels == 0 || sum == 0 {
		return 0, 0
	}
	perfect = float64(sum) / float64(channels)
	return perfect, (float64(pimax)/perfect - 1) * 100
}

// routeEnc accumulates one route before it is stored.
type routeEnc struct {
	fs, ls int // direction+1, 0 if none
	cnt    [2 * MaxDims]int
}

// canonical drops FS/LS labels that are not needed: a First Step that
// could be the first step of the standard part (not above it in the order
// and not against its direction bits), likewise a Last Step.
func (e *routeEnc) canonical(a *automaton) {
	standard := func(d Dir) bool {
		if a.kind == DOR {
			return true
		}
		return e.cnt[a.rank[d.Opp()]] == 0
	}
	if e.fs != 0 {
		f := Dir(e.fs - 1)
		first := -1
		for k := 0; k < a.nd; k++ {
			if e.cnt[k] > 0 {
				first = k
				break
			}
		}
		ok := standard(f)
		if first >= 0 {
			ok = ok && int(a.rank[f]) <= first
		} else if e.ls != 0 {
			ok = ok && a.rank[Dir(e.ls-1)] >= a.rank[f]
		}
		if ok {
			e.cnt[a.rank[f]]++
			e.fs = 0
		}
	}
	if e.ls != 0 {
		l := Dir(e.ls - 1)
		last := -1
		for k := a.nd - 1; k >= 0; k-- {
			if e.cnt[k] > 0 {
				last = k
				break
			}
		}
		ok := standard(l) && (last < 0 || int(a.rank[l]) >= last)
		if last < 0 && e.fs != 0 {
			ok = ok && a.rank[l] >= a.rank[Dir(e.fs-1)]
		}
		if ok {
			e.cnt[a.rank[l]]++
			e.ls = 0
		}
	}
}

func (tb *Table) store(i int, e *routeEnc) error {
	c := tb.code(i)
	c[0], c[1] = byte(e.fs), byte(e.ls)
	for k := 0; k < tb.r.t.nd; k++ {
		n := e.cnt[k]
		if tb.wide {
			if n > 0xffff {
				return fmt.Errorf("route segment of %d steps is too long", n)
			}
			c[2+2*k], c[3+2*k] = byte(n), byte(n>>8)
		} else {
			if n > 0xff {
				return fmt.Errorf("route segment of %d steps is too long", n)
			}
			c[2+k] = byte(n)
		}
	}
	return nil
}

// UnreachableError reports a pair of active nodes without a legal route
// inside the set.
type UnreachableError struct {
	Src, Dst int
	g        *topology.Graph
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the set is not reachable: no legal route from %s to %s inside it", e.g.NodeName(e.Src), e.g.NodeName(e.Dst))
}

// buildBaseline is the coordinate-based algorithm for a fault-free box:
// the set (active and transit nodes) must fill a fault-free rectangle, and
// every active pair is joined by the shortest dimension-ordered route
// inside it.
func (r *Router) buildBaseline(s *scratch, tb *Table) error {
	box := append(append([]int32(nil), s.act...), s.trans...)
	lo, size, err := r.t.boxExtent(box)
	if err != nil {
		return err
	}
	if err := r.checkBoxFaultFree(s, box); err != nil {
		return err
	}
	if err := r.storeBaselineRoutes(s, tb, lo, size); err != nil {
		return err
	}
	tb.countLoads()
	return nil
}

// boxExtent returns the first coordinate and the extent, per dimension, of
// the rectangle the nodes fill, or an error if they do not fill one. A
// rectangle wraps around rings, never across the ends of a mesh
// dimension.
func (t *torus) boxExtent(box []int32) (lo, size []int, err error) {
	n := t.n
	lo = make([]int, n)
	size = make([]int, n)
	for j := 0; j < n; j++ {
		seen := make([]bool, t.dims[j])
		for _, v := range box {
			seen[t.g.CoordAt(int(v), j)] = true
		}
		cnt := 0
		for _, b := range seen {
			if b {
				cnt++
			}
		}
		size[j] = cnt
		if cnt == t.dims[j] {
			continue
		}
		start := -1
		for x := 0; x < t.dims[j]; x++ {
			if seen[x] && (!t.wrap[j] && x == 0 || !seen[(x-1+t.dims[j])%t.dims[j]]) {
				if start >= 0 {
					return nil, nil, fmt.Errorf("the baseline algorithm needs a rectangle; the nodes are not contiguous in dimension %s", topology.DimName(j))
				}
				start = x
			}
		}
		lo[j] = start
	}
	vol := 1
	for _, p := range size {
		vol *= p
	}
	if vol != len(box) {
		return nil, nil, fmt.Errorf("the baseline algorithm needs a rectangle; the %d nodes do not fill their %v box", len(box), size)
	}
	return lo, size, nil
}

// checkBoxFaultFree fails if any link between two nodes of the box is down.
func (r *Router) checkBoxFaultFree(s *scratch, box []int32) error {
	t := r.t
	for _, v := range box {
		for d := 0; d < t.nd; d++ {
			c, w := t.ch[int(v)*t.nd+d], t.nb[int(v)*t.nd+d]
			if w >= 0 && s.setStamp[w] == s.setEpoch && !r.up[c] {
				return fmt.Errorf("the baseline algorithm handles fault-free rectangles only; link %s is failed", t.g.ChannelName(int(c)))
			}
		}
	}
	return nil
}

// storeBaselineRoutes stores the route of every ordered active pair and
// accumulates the total length and the diameter.
func (r *Router) storeBaselineRoutes(s *scratch, tb *Table, lo, size []int) error {
	t := r.t
	m := len(s.act)
	var e routeEnc
	for i := 0; i < m; i++ {
		u := int(s.act[i])
		parity := 0 // ties on even rings: + from sources whose coordinates sum to an even number
		for k := 0; k < t.n; k++ {
			parity += t.g.CoordAt(u, k)
		}
		parity %= 2
		for j := 0; j < m; j++ {
			if i == j {
				continue
			}
			w := int(s.act[j])
			e = routeEnc{}
			length := 0
			for k := 0; k < t.n; k++ {
				dir, steps := baselineStep(k, t.dims[k], size[k], lo[k], t.g.CoordAt(u, k), t.g.CoordAt(w, k), parity, t.wrap[k])
				if steps == 0 {
					continue
				}
				e.cnt[r.a.rank[dir]] += steps
				length += steps
			}
			if err := tb.store(pairIndex(m, i, j), &e); err != nil {
				return err
			}
			tb.SumLength += length
			tb.Figures.Diameter = max(tb.Figures.Diameter, length)
		}
	}
	return nil
}

// baselineStep returns the direction and number of hops in dimension k
// (ring of d nodes, or a mesh line if not wrap, of which the box spans
// size from lo) from coordinate cu to cw: the shorter way round a full
// ring (ties by parity), the only way inside a partial one or along a
// line. Zero steps means no move.
func baselineStep(k, d, size, lo, cu, cw, parity int, wrap bool) (Dir, int) {
	if size == d && wrap {
		delta := (cw - cu + d) % d
		switch {
		case delta == 0:
			return 0, 0
		case 2*delta < d || (2*delta == d && parity == 0):
			return Plus(k), delta
		default:
			return Minus(k), d - delta
		}
	}
	ru, rw := (cu-lo+d)%d, (cw-lo+d)%d
	switch {
	case rw == ru:
		return 0, 0
	case rw > ru:
		return Plus(k), rw - ru
	default:
		return Minus(k), ru - rw
	}
}

// countLoads counts, for every channel, the routes of the table through it.
func (tb *Table) countLoads() {
	var buf []int32
	for i := 0; i < tb.NumRoutes(); i++ {
		buf = tb.AppendChannels(i, buf[:0])
		for _, c := range buf {
			tb.loads[c]++
		}
	}
}
