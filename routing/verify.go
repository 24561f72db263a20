package routing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/icn-hpc/icn/internal/cdg"
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// Violation is one failed check of a routing table.
type Violation struct {
	// Kind is one of: missing, duplicate, not-active, arrival, failed-link,
	// transit, rule, deadlock, stats.
	Kind     string `json:"kind"`
	Src, Dst int    `json:"-"`
	Msg      string `json:"message"`
	// Record is the 1-based position of the route in the table or file
	// (0 for violations of the table as a whole).
	Record int `json:"record,omitempty"`
}

func (v Violation) String() string {
	if v.Record > 0 {
		return fmt.Sprintf("route %d: %s: %s", v.Record, v.Kind, v.Msg)
	}
	return v.Kind + ": " + v.Msg
}

// maxViolations caps how many violations a check collects.
const maxViolations = 100

// Report is the outcome of verifying a table: the violations found (at
// most 100) and the figures recomputed from the routes.
type Report struct {
	Violations []Violation
	Routes     int
	Figures    Figures
	SumLength  int
	Channels   int
	// Cycle lists the channels of one dependency cycle with a turn, or nil.
	Cycle []int
}

// Err is nil when the report has no violation, and otherwise an error
// that names the first three ("…; and N more").
func (rep *Report) Err() error {
	if len(rep.Violations) == 0 {
		return nil
	}
	var msgs []string
	for i, v := range rep.Violations {
		if i == 3 {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(rep.Violations)-3))
			break
		}
		msgs = append(msgs, v.String())
	}
	return errors.New(strings.Join(msgs, "; "))
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// Workers bounds the goroutines of the check (0 = all cores); the
	// report does not depend on it.
	Workers int
}

// Verifiable is a routing table that Verify checks: a *Table from Build,
// a *TableJSON (the file format, in memory) or a *TableReader (a table
// file whose routes are read as they are checked, see OpenTable); no
// other type implements it.
type Verifiable interface {
	verifyOn(ctx context.Context, r *Router, o VerifyOptions) (*Report, error)
}

// Verify checks a routing table against r's network and rule,
// independently of how the table was made, and reports everything wrong
// with it: that every ordered pair of active nodes has exactly one route,
// that every route obeys the rule, arrives, avoids failed links and nodes
// and keeps its transit nodes inside the set, that the figures the table
// states match those of its routes, and that the channel dependencies
// have no cycle with a turn. Everything wrong with a table is a
// violation in the report; the error is reserved for ctx ending (its
// error), a file that cannot be read as a table (a *RecordError names a
// structurally bad record) and a table of another network or rule than
// r's.
//
// The kinds of table differ only in what they state:
//
//   - a *Table must come from Build on r. Its deadlock verdict is its own
//     (a cycle is a violation only under rules other than angara, where
//     Build would have refused the table); when it passes, Verify records
//     the verdict in its DeadlockFree and Cycle (a table built
//     BuildOptions.Unverified has none before).
//   - a *TableJSON must name r's dimensions, mesh dimensions and rule;
//     its failures are r's (see TableJSON.Router for a router made from
//     the table), and its "stats" and "deadlock_free" claims are
//     compared.
//   - a *TableReader is checked as a *TableJSON, but its "stats" are
//     compared only when it was opened without extra failures (they
//     describe the file's own fabric), and a compact file's route count
//     is compared too. It can be verified once.
//   - a StoredTable is checked as the *TableJSON of its header with its
//     routes, read from their stored form.
func (r *Router) Verify(ctx context.Context, t Verifiable, o VerifyOptions) (*Report, error) {
	return t.verifyOn(ctx, r, o)
}

// verifyOn implements Verifiable: the routes of the table, its figures
// and, under rules that promise it, its deadlock freedom.
func (tb *Table) verifyOn(ctx context.Context, r *Router, o VerifyOptions) (*Report, error) {
	if tb.r != r {
		return nil, errors.New("routing: Verify of a table built by another router")
	}
	rep := r.verifyTableContext(ctx, tb, o.Workers)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if rep.Figures != tb.Figures {
		rep.Violations = append(rep.Violations, Violation{Kind: "stats", Src: -1, Dst: -1, Msg: fmt.Sprintf("recomputed figures (%v) differ from the table's (%v)", rep.Figures, tb.Figures)})
	}
	if rep.Cycle != nil && tb.Rule.Kind != Angara {
		rep.Violations = append(rep.Violations, Violation{Kind: "deadlock", Src: -1, Dst: -1, Msg: "channel dependency cycle with a turn: " + r.CycleString(rep.Cycle)})
	}
	if len(rep.Violations) == 0 {
		tb.DeadlockFree, tb.Cycle = rep.Cycle == nil, rep.Cycle
	}
	return rep, nil
}

// verifyTableContext is verifyTable that stops early when ctx (if not
// nil) ends; the report is then incomplete and must be discarded.
func (r *Router) verifyTableContext(ctx context.Context, tb *Table, workers int) *Report {
	rc := r.tableChecker(tb)
	nw := par.Workers(workers)
	if tb.NumRoutes() < 4096 {
		nw = 1
	}
	ws := make([]*verifyWorker, nw)
	for i := range ws {
		ws[i] = rc.newWorker()
	}
	m := len(tb.Active)
	par.For(m, nw, func(wi, a int) {
		if ctx != nil && ctx.Err() != nil {
			return
		}
		rc.checkSource(ws[wi], tb, a, 0, m)
	})
	return rc.tableReport(ws)
}

// tableChecker returns the route checker of the table's set.
func (r *Router) tableChecker(tb *Table) *routeChecker {
	inSet := make([]bool, r.t.nodes)
	set := make([]int, 0, len(tb.Active)+len(tb.Transit))
	for _, l := range [2][]int{tb.Active, tb.Transit} {
		for _, v := range l {
			inSet[v] = true
			set = append(set, v)
		}
	}
	rc := r.newRouteChecker(set, inSet)
	rc.noShare = r.tune.noSharedWalk
	return rc
}

// checkSource checks the routes of the table from active node a (index
// in tb.Active) to the active nodes of indices [b0, b1), a excepted.
// With one byte per count the destinations are rc.dests[b0:b1] instead
// (the ranges of a table's checks cover [0, m) either way), so that
// consecutive routes share their first segments and quickShared walks
// those once.
func (rc *routeChecker) checkSource(w *verifyWorker, tb *Table, a, b0, b1 int) {
	m := len(tb.Active)
	src := tb.Active[a]
	var dests []int32
	if !tb.wide && !rc.noShare {
		dests = rc.destOrder(tb)[b0:b1]
		w.segs = 0
	}
	for k := b0; k < b1; k++ {
		b := k
		if dests != nil {
			b = int(dests[k-b0])
		}
		if b == a {
			continue
		}
		dst := tb.Active[b]
		i := pairIndex(m, a, b)
		var ok bool
		if dests != nil {
			ok = rc.quickShared(w, tb, i, src, dst)
		} else {
			ok = rc.quickCode(w, tb, i, src, dst)
		}
		if !ok {
			w.dirs = tb.AppendDirs(i, w.dirs[:0])
			rc.check(w, i, src, dst, w.dirs)
		}
	}
	if dests != nil {
		rc.flushSegments(w, 0)
	}
}

// destOrder returns, once per table, the destinations (indices in
// tb.Active) sorted by their coordinates along the dimensions in the
// order their directions first come in the rule, the first one most
// significant: routes to consecutive destinations then mostly share
// their steps along the dimensions before the last one they differ in.
func (rc *routeChecker) destOrder(tb *Table) []int32 {
	rc.destsOnce.Do(func() {
		t := rc.r.t
		var dimOrder []int
		for _, d := range rc.r.order {
			if !slices.Contains(dimOrder, d.Dim()) {
				dimOrder = append(dimOrder, d.Dim())
			}
		}
		m := len(tb.Active)
		keys := make([]uint64, m)
		for b, v := range tb.Active {
			var k uint64
			for _, i := range dimOrder {
				k = k*uint64(t.dims[i]) + uint64(v/t.stride[i]%t.dims[i])
			}
			keys[b] = k<<32 | uint64(b)
		}
		slices.Sort(keys)
		rc.dests = make([]int32, m)
		for b, k := range keys {
			rc.dests[b] = int32(uint32(k))
		}
	})
	return rc.dests
}

// quickShared is quickCode on the walk of the route before it: a route is
// walked as segments (its FS step, its run along each direction in the
// rule's order, its LS step), the segments it shares with the route
// before it are not walked again, and a segment adds its load to its
// channels once, times the routes that took it, when it is left
// (flushSegments). A route with as many steps along a dimension as the
// ring has nodes could use a channel twice (a route counts once per
// channel): it goes to quickCode, as does everything it rejects.
func (rc *routeChecker) quickShared(w *verifyWorker, tb *Table, i, src, dst int) bool {
	r, lc := rc.r, rc.lc
	nd := lc.nd
	c := tb.code(i)
	ns := nd + 2
	var spec [2*MaxDims + 2]int32
	var steps [MaxDims]int
	spec[0], spec[ns-1] = int32(c[0]), int32(c[1])
	for _, b := range c[:2] {
		if int(b) > nd {
			rc.flushSegments(w, 0)
			return false // not a direction
		}
		if b != 0 {
			steps[Dir(b-1).Dim()]++
		}
	}
	var used uint16
	for k, d := range r.order {
		n := int32(c[2+k])
		spec[1+k] = n
		steps[d.Dim()] += int(n)
		if n > 0 {
			used |= 1 << d
		}
	}
	for dim, n := range steps[:r.t.n] {
		if n >= r.t.dims[dim] {
			rc.flushSegments(w, 0)
			return rc.quickCode(w, tb, i, src, dst)
		}
	}
	j := 0
	for j < w.segs && spec[j] == w.spec[j] {
		j++
	}
	rc.flushSegments(w, j)
	li := lc.index[src]
	if j > 0 {
		li = w.segLi[j-1]
	}
	for k := j; k < ns; k++ {
		var d Dir
		n := spec[k]
		switch k {
		case 0, ns - 1:
			if n != 0 {
				d, n = Dir(n-1), 1
			}
		default:
			d = r.order[k-1]
		}
		for ; n > 0; n-- {
			ch := li*int32(nd) + int32(d)
			w.lch = append(w.lch, ch)
			w.dirs = append(w.dirs, d)
			if li = lc.nb[ch]; li < 0 {
				rc.flushSegments(w, 0)
				return false
			}
		}
		w.spec[k], w.segEnd[k], w.segLi[k], w.segCnt[k], w.segDeps[k] = spec[k], int32(len(w.lch)), li, 0, false
		w.segs = k + 1
	}
	if li != lc.index[dst] || len(w.dirs) == 0 || (r.rule.Kind != DOR && used&(used>>1)&0x555 != 0) ||
		!rc.boundariesOK(w, c[0] != 0, c[1] != 0) {
		rc.flushSegments(w, 0)
		return false
	}
	// The route is valid: count it through every segment, and add the
	// dependencies of the segments no valid route took before.
	for k := 0; k < ns; k++ {
		w.segCnt[k]++
		if w.segDeps[k] {
			continue
		}
		w.segDeps[k] = true
		lo := int32(0)
		if k > 0 {
			lo = w.segEnd[k-1]
		}
		for q := max(lo, 1); q < w.segEnd[k]; q++ {
			bit := int(w.lch[q-1])*nd + int(w.dirs[q])
			w.deps[bit>>6] |= 1 << (uint(bit) & 63)
		}
	}
	w.n++
	w.sum += len(w.dirs)
	w.diam = max(w.diam, len(w.dirs))
	return true
}

// flushSegments adds the loads of the segments from the j-th on (each to
// its channels, times the valid routes that took it) and takes them off
// the walk.
func (rc *routeChecker) flushSegments(w *verifyWorker, j int) {
	for k := w.segs - 1; k >= j; k-- {
		lo := int32(0)
		if k > 0 {
			lo = w.segEnd[k-1]
		}
		if n := w.segCnt[k]; n > 0 {
			for _, ch := range w.lch[lo:w.segEnd[k]] {
				w.loads[ch] += n
			}
		}
	}
	if j < w.segs {
		w.segs = j
	}
	end := int32(0)
	if j > 0 {
		end = w.segEnd[j-1]
	}
	w.lch, w.dirs = w.lch[:end], w.dirs[:end]
}

// tableReport merges the workers' accumulators of a table's check into
// its report; a table's routes are minimal, so π_perfect comes from
// their total length.
func (rc *routeChecker) tableReport(ws []*verifyWorker) *Report {
	rep := rc.report(ws)
	rep.Figures.PiPerfect, rep.Figures.BalanceFactor = piFigures(rep.SumLength, rep.Channels, rep.Figures.PiMax)
	return rep
}

type verifyWorker struct {
	_ [64]byte // workers write their fields for every route: no cache line shared with another worker
	// the walk of quickShared: segs segments (of 2·nd+2: FS, a run
	// per direction rank, LS) of the route last walked, each with its
	// code value, its end in lch and dirs, the local node it ends at,
	// the valid routes that took it and whether its dependencies were
	// added
	segs    int
	spec    [2*MaxDims + 2]int32
	segEnd  [2*MaxDims + 2]int32
	segLi   [2*MaxDims + 2]int32
	segCnt  [2*MaxDims + 2]int32
	segDeps [2*MaxDims + 2]bool
	dirs    []Dir
	chans   []int32
	lch     []int32
	deps    []uint64
	loads   []int32
	stamp   []uint32
	ep      uint32
	viol    []Violation
	nviol   int
	sum     int
	diam    int
	n       int
	_       [64]byte
}

// localChannels numbers the channels leaving the set nodes: channel
// (set[i], d) is i·nd+d. Routes that pass valid checks use only these.
type localChannels struct {
	nd    int
	set   []int
	index []int32 // per node: position in set, or -1
	nb    []int32 // per local channel: position of the neighbour, −1 if the channel is failed or leaves the set
}

func (r *Router) newLocal(set []int) *localChannels {
	t := r.t
	lc := &localChannels{nd: t.nd, set: set, index: make([]int32, t.nodes), nb: make([]int32, len(set)*t.nd)}
	for i := range lc.index {
		lc.index[i] = -1
	}
	for i, v := range set {
		lc.index[v] = int32(i)
	}
	for i, v := range set {
		for d := 0; d < t.nd; d++ {
			lc.nb[i*t.nd+d] = -1
			if live(r.up, t.ch[v*t.nd+d]) {
				lc.nb[i*t.nd+d] = lc.index[t.nb[v*t.nd+d]]
			}
		}
	}
	return lc
}

// routeChecker verifies routes one by one against the rule, the failures
// and the set, and accumulates loads and channel dependencies in the
// local channel space of the set; workers own their accumulators, so
// routes can be checked on all cores (from a table or from a stream).
type routeChecker struct {
	r     *Router
	lc    *localChannels
	inSet []bool
	// dests is the order of the destinations of checkSource (destOrder);
	// noShare makes it check route by route (tests)
	destsOnce sync.Once
	dests     []int32
	noShare   bool
}

func (r *Router) newRouteChecker(set []int, inSet []bool) *routeChecker {
	return &routeChecker{r: r, lc: r.newLocal(set), inSet: inSet}
}

func (rc *routeChecker) newWorker() *verifyWorker {
	nl := len(rc.lc.set) * rc.lc.nd
	return &verifyWorker{deps: make([]uint64, (nl*rc.lc.nd+63)/64), loads: make([]int32, nl), stamp: make([]uint32, nl)}
}

// check verifies one route (rec is its position, for ordering the
// violations) and, when it is valid, adds its loads and dependencies.
func (rc *routeChecker) check(w *verifyWorker, rec, src, dst int, dirs []Dir) {
	w.n++
	if !rc.quick(w, src, dst, dirs) {
		v, ok := rc.r.checkRoute(w, src, dst, dirs, rc.inSet)
		if ok {
			v = Violation{Kind: "rule", Src: src, Dst: dst, Msg: fmt.Sprintf("%s → %s: internal error: inconsistent checks", rc.r.t.name(src), rc.r.t.name(dst))}
		}
		v.Record = rec + 1
		w.nviol++
		w.viol = append(w.viol, v)
		if len(w.viol) == 2*maxViolations {
			// routes are not checked in record order: keep the
			// worker's first ones by record
			slices.SortStableFunc(w.viol, func(a, b Violation) int { return a.Record - b.Record })
			w.viol = w.viol[:maxViolations]
		}
		return
	}
	rc.add(w, dirs)
}

// add counts a valid route (local channels in w.lch) into the worker's
// loads, dependencies and figures.
func (rc *routeChecker) add(w *verifyWorker, dirs []Dir) {
	w.ep++
	if w.ep == 0 {
		clear(w.stamp)
		w.ep = 1
	}
	nd := rc.lc.nd
	for k, c := range w.lch {
		if w.stamp[c] != w.ep {
			w.stamp[c] = w.ep
			w.loads[c]++
		}
		if k+1 < len(dirs) {
			bit := int(c)*nd + int(dirs[k+1])
			w.deps[bit>>6] |= 1 << (uint(bit) & 63)
		}
	}
	w.sum += len(dirs)
	w.diam = max(w.diam, len(dirs))
}

// quickCode checks route i of a table straight from its code (FS, a
// step count per direction in order, LS) and, when it is valid, adds its
// loads and dependencies like check; it reports false, adding nothing,
// when anything is off (check then finds and words the violation). The
// direction order of the middle part holds by construction of the code;
// the direction bits and the FS/LS boundaries are checked from the
// definitions (a sufficient test: a route it rejects goes to check,
// which tries every FS/LS reading).
func (rc *routeChecker) quickCode(w *verifyWorker, tb *Table, i, src, dst int) bool {
	r, lc := rc.r, rc.lc
	nd := lc.nd
	c := tb.code(i)
	fs, ls := int(c[0])-1, int(c[1])-1
	if fs >= nd || ls >= nd {
		return false // not a direction
	}
	li := lc.index[src]
	w.lch = w.lch[:0]
	w.dirs = w.dirs[:0]
	step := func(d Dir) bool {
		ch := li*int32(nd) + int32(d)
		w.lch = append(w.lch, ch)
		w.dirs = append(w.dirs, d)
		li = lc.nb[ch]
		return li >= 0
	}
	var used uint16
	if fs >= 0 && !step(Dir(fs)) {
		return false
	}
	for k, d := range r.order {
		for j := tb.count(c, k); j > 0; j-- {
			if !step(d) {
				return false
			}
		}
		if tb.count(c, k) > 0 {
			used |= 1 << d
		}
	}
	if ls >= 0 && !step(Dir(ls)) {
		return false
	}
	if li != lc.index[dst] || len(w.dirs) == 0 || (r.rule.Kind != DOR && used&(used>>1)&0x555 != 0) {
		return false // wrong arrival, empty, or both directions of a dimension in the middle part
	}
	if !rc.boundariesOK(w, fs >= 0, ls >= 0) {
		return false
	}
	w.n++
	rc.add(w, w.dirs)
	return true
}

// boundariesOK checks the FS and LS steps of the route in w (directions
// and local channels) against the rule.
func (rc *routeChecker) boundariesOK(w *verifyWorker, fs, ls bool) bool {
	r := rc.r
	kind := r.rule.Kind
	if (fs || ls) && !kind.HasFSLS() {
		return false
	}
	dirs := w.dirs
	n := len(dirs)
	global := func(c int32) int32 { return r.t.ch[rc.lc.set[int(c)/rc.lc.nd]*rc.lc.nd+int(c)%rc.lc.nd] }
	boundary := func(from, to Dir, in int32) bool {
		if r.a.rank[to] >= r.a.rank[from] || kind == Angara {
			return true
		}
		return kind == AngaraStar && r.star.extra[global(in)]&(1<<to) != 0
	}
	if fs && (dirs[0].Neg() || (n > 1 && !boundary(dirs[0], dirs[1], w.lch[0]))) {
		return false
	}
	if ls && (!dirs[n-1].Neg() || (n > 1 && !boundary(dirs[n-2], dirs[n-1], w.lch[n-2]))) {
		return false
	}
	return true
}

// quick is the check of a valid route on the local arrays: every step
// over a live channel into the set, arriving at dst, legal. It leaves the
// local channels in w.lch.
func (rc *routeChecker) quick(w *verifyWorker, src, dst int, dirs []Dir) bool {
	lc := rc.lc
	nd := lc.nd
	li := lc.index[src]
	if li < 0 || len(dirs) == 0 {
		return false
	}
	w.lch = slices.Grow(w.lch[:0], len(dirs))[:len(dirs)]
	lch := w.lch
	for k, d := range dirs {
		if int(d) >= nd {
			return false
		}
		c := li*int32(nd) + int32(d)
		lch[k] = c
		if li = lc.nb[c]; li < 0 {
			return false
		}
	}
	if li != lc.index[dst] {
		return false
	}
	global := func(c int32) int32 { return rc.r.t.ch[lc.set[int(c)/nd]*nd+int(c)%nd] }
	n := len(dirs)
	return rc.r.legal(dirs, global(w.lch[0]), global(w.lch[max(0, n-2)]))
}

// report merges the workers' accumulators: the first violations by
// record, the figures over C(M_{a,t}) and the deadlock verdict
// (Figures.PiPerfect/BalanceFactor are left to the caller, which knows the
// minimal lengths).
func (rc *routeChecker) report(ws []*verifyWorker) *Report {
	r, t, lc := rc.r, rc.r.t, rc.lc
	rep := &Report{}
	deps := ws[0].deps
	loads := ws[0].loads
	for _, w := range ws {
		rep.Routes += w.n
		rep.Violations = append(rep.Violations, w.viol...)
		rep.SumLength += w.sum
		rep.Figures.Diameter = max(rep.Figures.Diameter, w.diam)
		if w != ws[0] {
			for k := range deps {
				deps[k] |= w.deps[k]
			}
			for k := range loads {
				loads[k] += w.loads[k]
			}
		}
	}
	slices.SortStableFunc(rep.Violations, func(a, b Violation) int { return a.Record - b.Record })
	if len(rep.Violations) > maxViolations {
		rep.Violations = rep.Violations[:maxViolations]
	}
	for i, v := range lc.set {
		for d := 0; d < t.nd; d++ {
			if live(r.up, t.ch[v*t.nd+d]) && rc.inSet[t.nb[v*t.nd+d]] {
				rep.Channels++
				rep.Figures.PiMax = max(rep.Figures.PiMax, int(loads[i*t.nd+d]))
			}
		}
	}
	rep.Cycle = r.deadlockCycle(lc, deps)
	return rep
}

// checkRoute walks one route; on success w.chans holds its channels.
func (r *Router) checkRoute(w *verifyWorker, src, dst int, dirs []Dir, inSet []bool) (Violation, bool) {
	t := r.t
	name := t.name
	w.chans = w.chans[:0]
	bad := func(kind, format string, args ...any) (Violation, bool) {
		return Violation{Kind: kind, Src: src, Dst: dst, Msg: fmt.Sprintf("%s → %s: ", name(src), name(dst)) + fmt.Sprintf(format, args...)}, false
	}
	if len(dirs) == 0 {
		return bad("arrival", "empty route")
	}
	v := src
	for k, d := range dirs {
		if int(d) >= t.nd {
			return bad("rule", "step %d: %s is not a direction of this torus", k+1, d)
		}
		c := t.chAt(v, d)
		if c < 0 {
			return bad("failed-link", "step %d: %s has no %s link (dimension %s is a mesh and ends there)", k+1, name(v), d, topology.DimName(d.Dim()))
		}
		if !r.up[c] {
			return bad("failed-link", "step %d uses the failed link %s", k+1, t.g.LinkName(int(c)>>1))
		}
		w.chans = append(w.chans, c)
		v = int(t.nbAt(v, d))
		if k+1 < len(dirs) && !inSet[v] {
			return bad("transit", "step %d passes through %s, which is outside the set", k+1, name(v))
		}
	}
	if v != dst {
		return bad("arrival", "the steps %s end at %s", FormatDirs(dirs), name(v))
	}
	if !r.legal(dirs, w.chans[0], w.chans[max(0, len(dirs)-2)]) {
		return bad("rule", "%s breaks the %s rule", FormatDirs(dirs), r.rule)
	}
	return Violation{}, true
}

// legal reports whether the direction sequence obeys the rule; c0 and
// cPen are the channels of its first and its next-to-last step (R_A*
// accepts order-violating FS/LS transitions per channel). It follows the definitions of seed 001 §2.1 directly, not the
// automaton, so it is an independent check of RG.
func (r *Router) legal(dirs []Dir, c0, cPen int32) bool {
	rank := r.a.rank
	kind := r.rule.Kind
	var rk [16]int8
	copy(rk[:], rank)
	ordered := func(ds []Dir, bits bool) bool { return orderedDirs(&rk, ds, bits) }
	switch kind {
	case DOR:
		return ordered(dirs, false)
	case Dirbit:
		return ordered(dirs, true)
	}
	if ordered(dirs, true) {
		return true // no FS/LS exemption needed
	}
	// boundary reports whether the step into channel in (direction from)
	// may be followed by direction to.
	boundary := func(from, to Dir, in int32) bool {
		if rank[to] >= rank[from] || kind == Angara {
			return true
		}
		return kind == AngaraStar && r.star.extra[in]&(1<<to) != 0
	}
	n := len(dirs)
	for fs := 0; fs <= 1; fs++ {
		for ls := 0; ls <= 1; ls++ {
			if fs+ls > n {
				continue
			}
			if fs == 1 && dirs[0].Neg() {
				continue
			}
			if ls == 1 && !dirs[n-1].Neg() {
				continue
			}
			mid := dirs[fs : n-ls]
			if !ordered(mid, true) {
				continue
			}
			ok := true
			if fs == 1 && n > 1 {
				ok = boundary(dirs[0], dirs[1], c0)
			}
			if ok && ls == 1 && n > 1 {
				ok = boundary(dirs[n-2], dirs[n-1], cPen)
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// orderedDirs reports whether ds never goes down the order given by rank
// and, with bits, never uses both directions of one dimension.
func orderedDirs(rank *[16]int8, ds []Dir, bits bool) bool {
	var used uint16
	prev := int8(-1)
	for _, d := range ds {
		r := rank[d&15]
		if r < prev {
			return false
		}
		prev = r
		if bits {
			if used&(1<<((d^1)&15)) != 0 {
				return false
			}
			used |= 1 << (d & 15)
		}
	}
	return true
}

// deadlockCycle builds the channel dependency graph from the collected
// dependencies (bit c·nd+d: a route goes from local channel c on in
// direction d) and returns one cycle containing a turn, as topology
// channel ids, or nil. Dependencies between channels of one direction are
// Straight (bubble flow control keeps a ring deadlock-free), all others
// are Turns.
func (r *Router) deadlockCycle(lc *localChannels, deps []uint64) []int {
	g := r.depGraph(lc, deps)
	cyc := g.Deadlock(true)
	if cyc == nil {
		return nil
	}
	out := make([]int, len(cyc))
	for i, c := range cyc {
		out[i] = int(r.t.chAt(lc.set[int(c)/lc.nd], Dir(int(c)%lc.nd)))
	}
	return out
}

// depGraph returns the dependency graph on local channel ids.
func (r *Router) depGraph(lc *localChannels, deps []uint64) *cdg.Graph {
	t := r.t
	g := cdg.New(len(lc.set) * t.nd)
	for w, word := range deps {
		for word != 0 {
			b := bitsTrailing(word)
			word &= word - 1
			bit := w*64 + b
			c, d := bit/t.nd, Dir(bit%t.nd)
			cd := Dir(c % t.nd)
			next := int(lc.index[t.nbAt(lc.set[c/t.nd], cd)])*t.nd + int(d)
			tag := cdg.Turn
			if d == cd {
				tag = cdg.Straight
			}
			g.Add(int32(c), int32(next), tag)
		}
	}
	return g
}

// CDG returns the channel dependency graph of the table: vertices are
// channel ids of the network, an edge c→c' means some route uses c' right
// after c; edges along one ring direction are tagged Straight, the others
// Turn.
func (tb *Table) CDG() *cdg.Graph {
	t := tb.r.t
	deps := make([]uint64, (len(tb.r.up)*t.nd+63)/64)
	var dirs []Dir
	var chans []int32
	for i := 0; i < tb.NumRoutes(); i++ {
		dirs = tb.AppendDirs(i, dirs[:0])
		chans = tb.AppendChannels(i, chans[:0])
		for k := 0; k+1 < len(chans); k++ {
			bit := int(chans[k])*t.nd + int(dirs[k+1])
			deps[bit>>6] |= 1 << (uint(bit) & 63)
		}
	}
	g := cdg.New(len(tb.r.up))
	for w, word := range deps {
		for word != 0 {
			bit := w*64 + bitsTrailing(word)
			word &= word - 1
			c, d := bit/t.nd, Dir(bit%t.nd)
			tag := cdg.Turn
			if d == t.chDir[c] {
				tag = cdg.Straight
			}
			g.Add(int32(c), t.chAt(int(t.nbAt(int(t.chSrc[c]), t.chDir[c])), d), tag)
		}
	}
	return g
}

// CycleString writes a channel cycle as "0.0+X → 1.0+Y → … → 0.0+X".
func (r *Router) CycleString(cyc []int) string {
	if len(cyc) == 0 {
		return ""
	}
	parts := make([]string, 0, len(cyc)+1)
	for _, c := range cyc {
		parts = append(parts, r.t.g.ChannelName(c))
	}
	parts = append(parts, r.t.g.ChannelName(cyc[0]))
	return strings.Join(parts, " → ")
}

// statsClose compares figures with a tolerance on the real-valued ones.
func statsClose(a, b Figures) bool {
	return a.Diameter == b.Diameter && a.PiMax == b.PiMax &&
		math.Abs(a.PiPerfect-b.PiPerfect) <= 1e-6*math.Max(1, math.Abs(b.PiPerfect)) &&
		math.Abs(a.BalanceFactor-b.BalanceFactor) <= 1e-6*math.Max(1, math.Abs(b.BalanceFactor))
}
