package alloc

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/icn-hpc/icn/routing"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/internal/par"
)

// Select answers a request on state s: it enumerates the rectangle
// placements, keeps the reachable sets with the fewest transit nodes
// (criterion 1), then ranks them by φ after allocation (criterion 2) and
// by their routing tables (criteria 3 and 4). It is SelectContext without
// a caller that can give up.
func (sel *Selector) Select(s *State, rt Router, req Request) (*Result, error) {
	return sel.SelectContext(context.Background(), s, rt, req)
}

// SelectContext is Select within req.Budget and for as long as ctx lasts.
// When the budget ends, the best set found so far is chosen and the
// result says what was left out (Exhaustive, Complete, Examined); when
// ctx ends first, the decision stops at once and returns ctx's error
// (nothing is chosen). Either way the work stops within one
// reachability question or one table round, and nothing of a cut
// computation is kept in the selector's caches as if it were complete.
func (sel *Selector) SelectContext(ctx context.Context, s *State, rt Router, req Request) (*Result, error) {
	start := time.Now()
	res := &Result{Request: req, Exhaustive: true, Complete: CompleteAll, BudgetSeconds: req.Budget.Seconds()}
	if ctx.Err() != nil {
		return nil, &NoAnswerError{Cause: context.Cause(ctx)}
	}
	defer func() {
		if res.Chosen != nil {
			// The candidates live in the selector's arenas until the
			// next decision.
			res.Chosen = detach(res.Chosen)
		}
		res.Seconds = time.Since(start).Seconds()
	}()
	req, err := checkRequest(req)
	if err != nil {
		return nil, err
	}
	res.Request = req
	if free := s.FreeCount(); req.Nodes > free {
		res.Reason = fmt.Sprintf("the job needs %d nodes but only %d of %d are available", req.Nodes, free, s.N())
		return res, nil
	}
	sel.prepare(s)
	if !sel.reach.reset(rt, s.g, sel.faultPrint(s)) {
		sel.retry.reset()
		sel.reductions.reset()
		sel.figures.reset()
	}
	d := sel.newDecision(s, rt, req)
	clockStart := start
	if !req.Since.IsZero() && req.Since.Before(start) {
		clockStart = req.Since
	}
	d.clock = newBudget(ctx, req.Budget, clockStart)
	if sel.tune.boundSpent {
		d.clock.bound.Store(true)
	}
	defer d.clock.release()
	defer func() {
		if d.levels != nil {
			sel.keepNoFit(s, d.levels.fit)
		}
	}()
	d.changed = sel.retry.since(s, req)
	results := d.examinePlacements()
	cands, err := d.collect(results, res)
	if d.clock.ctxDone.Load() {
		n := 0
		for _, r := range results {
			n += r.examined
		}
		return nil, &NoAnswerError{Examined: n, Cause: context.Cause(ctx)}
	}
	if err != nil {
		return nil, err
	}
	if d.cutHit.Load() {
		// A candidate without transit nodes settles criterion 1 however
		// early the cut came.
		complete := CompleteNone
		if len(cands) > 0 && fewestTransit(cands)[0].nTransit == 0 {
			complete = CompleteTransit
		}
		d.cutShort(res, complete)
	}
	if d.settled {
		res.Exhaustive, res.Settled = false, true
		res.Complete = min(res.Complete, CompletePhi)
	}
	if res.Found == 0 {
		if res.Exhaustive {
			sel.retry.fail(s, req)
			res.Reason = noCandidateReason(req)
		} else {
			res.Reason = noSetInTime(res)
		}
		return res, nil
	}
	res.Distinct = len(cands)
	if d.empty {
		res.Distinct = d.uniformDistinct(results)
	}
	if req.CountOnly || req.Exists {
		return res, nil
	}
	if len(cands) == 0 {
		// Cut while the only reachable placements were being reduced.
		res.Reason = noSetInTime(res)
		return res, nil
	}
	if err := d.choose(ctx, cands, res); err != nil {
		return nil, err
	}
	return res, nil
}

// NoAnswerError is SelectContext's error when its context ended before
// an answer: Examined placements had been examined. It unwraps to the
// context's cause.
type NoAnswerError struct {
	Examined int
	Cause    error
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("%v (%d placements examined)", e.Cause, e.Examined)
}

func (e *NoAnswerError) Unwrap() error { return e.Cause }

// examinePlacements examines the placements by the first path that
// applies: uniform (an empty torus), bounded (a large partly used one),
// else the enumeration.
func (d *decision) examinePlacements() []sizeResult {
	var results []sizeResult
	ok := false
	switch {
	case d.uniform():
		d.empty = true
		if results, ok = d.enumerateUniform(); !ok {
			d.resetForFallback()
			if d.bounded() {
				results, ok = d.enumerateBounded()
			}
		}
	case d.bounded():
		results, ok = d.enumerateBounded()
	}
	if !ok {
		results = d.enumerate()
	}
	return results
}

// choose ranks the candidates by the criteria (fewest transit nodes,
// largest φ after allocation, then the tie-break tables) and fills res
// with the set chosen; an error ends the decision (ctx's cause when the
// caller gave up).
func (d *decision) choose(ctx context.Context, cands []*candidate, res *Result) error {
	req := d.req
	best := fewestTransit(cands)
	if req.Algo == Baseline {
		return d.chooseFirst(best, res)
	}
	res.Ranked = len(best)
	if d.empty {
		res.Ranked = res.Distinct
	}
	tied := d.leastFragmenting(best)
	if len(tied) == 0 {
		// φ of no candidate was finished in time.
		tied = best[:1]
		d.rankCut.Store(true)
	}
	if d.clock.ctxDone.Load() {
		return context.Cause(ctx)
	}
	if d.rankCut.Load() {
		d.cutShort(res, CompleteTransit)
	}
	for _, c := range tied {
		d.nameClasses(c)
	}
	if req.NoTable && d.chooseAlone(tied, res) {
		if d.tiesLeft.Load() {
			d.cutShort(res, CompletePhi)
		}
		return nil
	}
	if !d.clock.tablesLeft() {
		// No time for the tie-break tables: the first of the tied
		// candidates, as when a single class is left.
		d.cutShort(res, CompletePhi)
		res.Chosen = &tied[0].Candidate
		d.materialize(tied[0])
		return nil
	}
	err := d.chooseByTables(tied, res)
	switch {
	case d.clock.ctxDone.Load():
		return context.Cause(ctx)
	case errors.Is(err, errCut):
		d.cutShort(res, CompletePhi)
		res.Chosen, res.Tables = &tied[0].Candidate, 0
		d.materialize(tied[0])
	case err != nil:
		return err
	case d.tableCut || d.tiesLeft.Load():
		d.cutShort(res, CompletePhi)
	}
	return nil
}

// resetForFallback undoes what an abandoned uniform path left in the
// decision.
func (d *decision) resetForFallback() {
	d.empty = false
	d.tiesLeft.Store(false)
	d.bestT.Store(int64(d.T))
	d.resetArenas()
}

// noSetInTime is the reason of a cut decision that found no set.
func noSetInTime(res *Result) string {
	return fmt.Sprintf("no set found within %v (%d placements examined)", res.Request.Budget, res.Examined)
}

// cutShort records in res that the decision was cut and is certainly
// best only under the first complete criteria.
func (d *decision) cutShort(res *Result, complete int) {
	res.Exhaustive = false
	res.Complete = min(res.Complete, complete)
	res.Cut = d.clock.cutReason()
}

// checkRequest validates a request and fills in the default algorithm.
func checkRequest(req Request) (Request, error) {
	if req.Nodes < 1 {
		return req, fmt.Errorf("a job needs at least one node, got %d", req.Nodes)
	}
	if req.Transit < 0 {
		return req, fmt.Errorf("transit limit %d is negative", req.Transit)
	}
	if req.Budget < 0 {
		return req, fmt.Errorf("budget %v is negative (0 means none)", req.Budget)
	}
	if req.Algo == "" {
		req.Algo = Improved
	}
	if _, err := ParseAlgo(string(req.Algo)); err != nil {
		return req, err
	}
	return req, nil
}

func noCandidateReason(req Request) string {
	reason := fmt.Sprintf("no reachable set of %d active nodes with at most %d transit nodes fits the available nodes", req.Nodes, req.Transit)
	if req.Algo == Baseline {
		reason += " (baseline: whole fault-free rectangles with sides ≤ ⌈d/2⌉ or = d)"
	}
	return reason
}

// maxHeld bounds the candidates a budgeted decision keeps for ranking,
// and with them its memory: on machines of 10^5 nodes the enumeration
// finds millions of reachable placements that no budget could rank.
// Decisions on machines of a few thousand nodes keep far fewer.
const maxHeld = 1 << 18

// decision is the working state of one Select call.
type decision struct {
	sel   *Selector
	s     *State
	rt    Router
	req   Request
	m, T  int
	sizes [][]int // rectangle sizes with m ≤ volume ≤ m+T (and baseline's rule)
	// bestT is the fewest transit nodes of a candidate so far (criterion 1
	// bound shared by the workers).
	bestT atomic.Int64
	memo  onceMap // answers shared by placements
	work  []workerScratch
	// levelsLate: the free rectangles could not be listed by the bound
	// phase's end (giveUpBounded), so the φ filter is not tried.
	levelsLate bool
	// invariant: the router's answers depend on a set only up to
	// translation, so placements of one size with the same pattern of
	// unavailable nodes share them.
	invariant bool
	// shareBlocks: the router's answers for a block depend only on its
	// size, so blocks of one size share their reduction and table figures
	// (otherwise each block is computed on its own).
	shareBlocks bool
	// stop ends the enumeration (an Exists request found a set).
	stop atomic.Bool
	// clock is the decision's budget; cutHit is set when the enumeration
	// stopped because of it (some placements were not examined), rankCut
	// when some candidates' φ was not computed.
	clock           *budget
	cutHit, rankCut atomic.Bool
	examined        atomic.Int64 // placements examined, counted only for tuning.cutAfter
	asked           atomic.Int64 // reachability questions, counted only for tuning.cutAfterAsks
	// tableCut: some tie-break table was not finished (or the winner's
	// not verified) within the budget.
	tableCut bool
	// boxes: the router accepts boxCovers as proof of reachability.
	boxes bool
	// changed, when the same request found nothing before, counts the
	// nodes whose availability changed since: placements without one
	// fail again and are skipped (see retryMemo).
	changed *grid
	// settled: the anytime order stopped once no placement left could
	// beat the best set on criteria 1 and 2 (see anytime).
	settled bool
	// phi says which placements the enumeration skips (phifilter.go),
	// once phiDone.
	phi     *phiFilter
	phiDone bool
	// phiBar is the largest φ of a candidate without transit nodes found
	// by examineEntries: placements listed below it are not examined.
	phiBar atomic.Int64
	// ringInvariant: the router's answers on an empty machine are
	// invariant under translations along the rings (RouterProps).
	ringInvariant bool
	// ringLower: where the router's answers are not ring invariant, a
	// ring-invariant router whose reachable sets it reaches too
	// (RouterProps.RingLower), or nil.
	ringLower Router
	// ringUpper: likewise a ring-invariant router that reaches every set
	// the router reaches (RouterProps.RingUpper), or nil.
	ringUpper Router
	// held counts the candidates kept (see maxHeld).
	held atomic.Int64
	// empty: the uniform path (an empty torus; see uniform.go);
	// tiesLeft: it left out sets that could only tie on φ.
	empty    bool
	tiesLeft atomic.Bool
	// levels are the state's free rectangles by volume (levelsNow);
	// top is phiTop's answer once topKnown.
	levels          *levelCache
	top             int64
	topKnown, topOK bool
}

// workerScratch is one worker's reusable space.
type workerScratch struct {
	// late lets examine take a placement after the enumeration phase
	// ended: the bounded path's representative of a size, a set whose
	// questions are answered already (see boundedPlacements).
	late        bool
	nodes       []int
	lo, hi, off []int
	conn        connScratch
	contrib     [][]int   // rectNodes: per dimension, id contributions
	keys        [2][]byte // reachability cache keys being built
	all         []int     // placementSet's node list (valid until the next placement)
	stair       []Rect    // stairBoxes's boxes
	stairInts   []int     // their starts and sizes
	ids         []int
	roff        []int
	// blocks caches, per rectangle size of the decision (by its first
	// element's address), the outcome of reduce for a block of that size.
	blocks map[*int]blockOutcome
	_      [64]byte // per worker: keeps what workers write off each other's cache lines
}

// blockOutcome is reduce's outcome for the blocks of one size.
type blockOutcome struct {
	keep []int
	ok   bool
}

// reduceCached is reduce, with the outcome for blocks kept per worker and
// size: blocks of one size reduce the same way, a pruned size stays
// pruned (the bound only falls), and a kept count above the bound is
// rejected by the caller.
func (d *decision) reduceCached(w int, p placement, unchecked bool) ([]int, bool, error) {
	if !p.block || p.all != nil || d.req.Algo != Improved || !d.shareBlocks {
		return d.reduce(w, p, unchecked)
	}
	ws := &d.work[w]
	k := &p.rect.Size[0]
	if o, ok := ws.blocks[k]; ok {
		return o.keep, o.ok, nil
	}
	keep, ok, err := d.reduce(w, p, false)
	if err != nil {
		return nil, false, err
	}
	if ws.blocks == nil {
		ws.blocks = map[*int]blockOutcome{}
	}
	ws.blocks[k] = blockOutcome{keep, ok}
	return keep, ok, nil
}

// sizeResult is what one rectangle size contributed.
type sizeResult struct {
	// Workers count placements of their own sizes here, one per
	// placement: the padding keeps two sizes' counters off one cache
	// line, which the workers would otherwise pass back and forth.
	_        [64]byte
	found    int
	examined int
	cands    []*candidate
	err      error
}

func (sel *Selector) newDecision(s *State, rt Router, req Request) *decision {
	d := &decision{sel: sel, s: s, rt: rt, req: req, m: req.Nodes, T: req.Transit}
	for _, size := range sel.shapes {
		if v := vol(size); v < d.m || v > d.m+d.T {
			continue
		}
		if req.Algo == Baseline && !baselineShape(size, sel.dims) {
			continue
		}
		d.sizes = append(d.sizes, size)
	}
	d.bestT.Store(int64(d.T))
	props := rt.Props()
	d.invariant, d.shareBlocks, d.boxes = props.TranslationInvariant, props.BlocksLocal, props.BoxesReachable
	d.ringInvariant = props.RingInvariant || d.invariant && d.shareBlocks
	if l := props.RingLower; !d.ringInvariant && l != nil && l.Props().RingInvariant {
		d.ringLower = l
		if u := props.RingUpper; u != nil && u.Props().RingInvariant {
			d.ringUpper = u
		}
	}
	d.work = make([]workerScratch, par.Workers(sel.Workers))
	if len(sel.arenas) < len(d.work) {
		sel.arenas = make([]candArena, len(d.work))
	}
	for i := range sel.arenas {
		sel.arenas[i].reset()
	}
	if len(sel.hints) < len(d.work) {
		sel.hints = make([]pairHints, len(d.work))
	}
	return d
}

// sizeKey is a compact map key: a tag and a rectangle size.
func sizeKey(tag string, size []int) string {
	b := make([]byte, 0, len(tag)+len(size))
	b = append(b, tag...)
	for _, p := range size {
		b = binary.AppendUvarint(b, uint64(p))
	}
	return string(b)
}

// lowerBest lowers the criterion-1 bound to t.
func (d *decision) lowerBest(t int) {
	for {
		cur := d.bestT.Load()
		if int64(t) >= cur || d.bestT.CompareAndSwap(cur, int64(t)) {
			return
		}
	}
}

// enumerate examines every placement of every size on all cores. Sizes
// are worked through smallest first: they need the fewest transit nodes,
// so the bound on criterion 1 tightens early and prunes the larger
// rectangles; results stay indexed by size, so the outcome does not
// depend on this order or on scheduling. A budgeted decision stops
// between groups of sizes once criteria 1 and 2 are settled (see
// anytime).
func (d *decision) enumerate() []sizeResult {
	results := make([]sizeResult, len(d.sizes))
	order := d.sizeOrder()
	run := func(group []int) { d.examineSizes(group, results) }
	if !d.anytime() {
		run(order)
		return results
	}
	groups := volumeGroups(d.sizes, order)
	// The groups are consecutive runs of order: order[checked:done] are
	// the sizes examined since the last check.
	examined, checked, done := 0, 0, 0
	for i, g := range groups {
		run(g)
		if d.stop.Load() || d.cutHit.Load() || i == len(groups)-1 {
			break
		}
		done += len(g)
		for _, si := range g {
			examined += results[si].examined
		}
		if examined < d.sel.settleAfter() {
			continue
		}
		if d.settledBy(results, order[checked:done]) {
			d.settled = true
			break
		}
		checked = done
	}
	return results
}

// placement is one rectangle placement's node set.
type placement struct {
	rect    Rect
	holes   int // unavailable nodes inside
	active  []int
	transit []int
	all     []int // available nodes of the rectangle (active then transit)
	// nTransit is len(transit); a block on a torus without failed links
	// is not listed (all, active and transit nil) until a question needs
	// its nodes (see listed).
	nTransit int
	// block: no unavailable node and no failed link inside.
	block bool
	// blockSize is the size of the block the set is: the rectangle's for
	// a block, or the box its available nodes form when they form one
	// without a failed link inside; nil otherwise. Such a set is the set
	// of the block of that size at the box's corner (same nodes, same
	// order, so the same active and transit nodes).
	blockSize []int
	// box is the block whose nodes are the set when the set is not
	// listed and the rectangle has holes (zero otherwise: the set is the
	// rectangle's block).
	box Rect
	// pattern names the set up to translation (size and positions of the
	// unavailable nodes in the rectangle) when the router is translation
	// invariant and the placement is not a block; "" otherwise.
	pattern string
}

// examine handles one placement: builds its set, asks whether it is
// reachable, drops unneeded transit nodes and records the candidate. It
// returns false to stop the size's enumeration (on an error). blocks,
// when not nil, lets the size's blocks be counted without their sets once
// one of them has been pruned (see blockScan).
func (d *decision) examine(w int, size, st []int, out *sizeResult, blocks *blockScan) bool {
	if d.stop.Load() {
		return false
	}
	if d.clock.enum.Load() && !d.work[w].late {
		d.cutHit.Store(true)
		return false
	}
	if d.sel.tune.cutAfter > 0 && d.examined.Add(1) > int64(d.sel.tune.cutAfter) {
		d.clock.enum.Store(true) // as if the budget ended here (tests)
		d.cutHit.Store(true)
		return false
	}
	out.examined++
	if d.changed != nil && d.changed.unavailable(st, size) == 0 {
		return true
	}
	holes := d.sel.grid.unavailable(st, size)
	if holes == 0 && blocks.pruned(d) {
		out.found++ // a block: reachable, and beaten on criterion 1
		return true
	}
	p, ok := d.placementSet(w, size, st, holes)
	if !ok {
		return true
	}
	unchecked := false
	if d.checkLater(p) {
		ok, err := d.reachableFirst(w, p)
		switch {
		case errors.Is(err, errNotYet):
			unchecked = true
			if c := d.sel.tune.later; c != nil {
				c.Add(1)
			}
		case err != nil:
			d.workErr(out, err)
			return false
		case !ok:
			return true
		}
	} else {
		ok, err := d.reachable(w, p)
		if err != nil {
			d.workErr(out, err)
			return false
		}
		if !ok {
			return true
		}
	}
	if !unchecked {
		out.found++
		if d.req.Exists {
			d.stop.Store(true)
			return false
		}
		if d.req.CountOnly {
			return true
		}
	}
	keep, ok, err := d.reduceCached(w, p, unchecked)
	if err != nil {
		d.workErr(out, err)
		return false
	}
	if unchecked && ok {
		out.found++
	}
	kept := p.nTransit
	if keep != nil {
		kept = len(keep)
	}
	if blocks != nil && p.block {
		blocks.record(kept, ok)
	}
	if !ok || d.req.Algo == Improved && int64(kept) > d.bestT.Load() {
		return true
	}
	d.lowerBest(kept)
	if d.req.Budget > 0 && d.held.Add(1) > maxHeld {
		// A budgeted decision keeps at most maxHeld candidates: the
		// others are counted but not ranked, so the answer is complete
		// for criterion 1 at most.
		d.rankCut.Store(true)
		return true
	}
	out.cands = append(out.cands, d.newCandidate(w, p, keep))
	return true
}

// workErr records an error that ended a size's enumeration: a cut is
// not an error of the decision.
func (d *decision) workErr(out *sizeResult, err error) {
	if errors.Is(err, errCut) {
		d.cutHit.Store(true)
		return
	}
	out.err = err
}

// placementSet lists the available nodes of the rectangle at st (holes of
// its nodes are unavailable): the first m (in coordinate order) are
// active, the rest transit. ok is false when
// the rectangle cannot hold the job (too few available nodes, or for the
// baseline any unavailable node or failed link inside).
func (d *decision) placementSet(w int, size, st []int, holes int) (placement, bool) {
	sel := d.sel
	if vol(size)-holes < d.m || (d.req.Algo == Baseline && holes > 0) {
		return placement{}, false
	}
	r := Rect{Start: st, Size: size}
	if holes == 0 && !sel.anyFault {
		return placement{rect: r, nTransit: vol(size) - d.m, block: true, blockSize: size}, true
	}
	ws := &d.work[w]
	if !sel.anyFault && d.req.Algo == Improved {
		// On a torus without failed links the available nodes of most
		// placements with holes form a box: the set is that box's block,
		// found from the prefix sums without listing the rectangle.
		if box, ok := sel.grid.availableBox(r, vol(size)-holes, ws); ok {
			return placement{rect: r, holes: holes, nTransit: vol(size) - holes - d.m,
				blockSize: box.Size, box: box}, true
		}
		if !sel.tune.noWallShortcut && sel.grid.splitByWall(r, vol(size)-holes, d.m, ws) {
			return placement{}, false // not reachable (and not listed)
		}
	}
	ws.rectNodes(sel.dims, st, size)
	fault := sel.internalFault(r, ws.nodes)
	if d.req.Algo == Baseline && fault {
		return placement{}, false
	}
	// The worker's buffer: newCandidate copies the lists it keeps.
	all := ws.all[:0]
	var pat []byte
	if d.invariant && holes > 0 {
		pat = make([]byte, 0, len(size)+4*holes)
		for _, p := range size {
			pat = binary.AppendUvarint(pat, uint64(p))
		}
	}
	for i, x := range ws.nodes {
		if d.s.Available(x) {
			all = append(all, x)
		} else if pat != nil {
			pat = binary.AppendUvarint(pat, uint64(i))
		}
	}
	ws.all = all
	p := placement{rect: r, holes: holes, all: all, pattern: string(pat), nTransit: len(all) - d.m,
		active: all[:d.m:d.m], transit: all[d.m:], block: holes == 0 && !fault}
	switch {
	case p.block:
		p.blockSize = size
	case !fault && (sel.anyFault || d.req.Algo != Improved):
		// (Otherwise availableBox above already found that the available
		// nodes do not form a box.)
		p.blockSize = d.availBox(w, size)
	}
	return p, true
}

// setRect is the block whose nodes an unlisted placement's set are.
func (p placement) setRect() Rect {
	if p.box.Size != nil {
		return p.box
	}
	return p.rect
}

// listed returns the placement's active and transit nodes, listing a
// block's on demand.
func (d *decision) listed(p placement) (active, transit []int) {
	if p.all != nil {
		return p.active, p.transit
	}
	all := p.setRect().Nodes(d.sel.dims, nil)
	return all[:d.m:d.m], all[d.m:]
}

// availBox returns the size of the box the available nodes of the
// rectangle (listed in the worker's nodes) form, or nil if they do not
// form one.
func (d *decision) availBox(w int, size []int) []int {
	n := len(size)
	ws := &d.work[w]
	ws.lo = append(ws.lo[:0], size...)
	ws.hi = append(ws.hi[:0], make([]int, n)...)
	ws.off = append(ws.off[:0], make([]int, n)...)
	count := 0
	for _, x := range ws.nodes {
		if d.s.Available(x) {
			count++
			for i, o := range ws.off {
				ws.lo[i] = min(ws.lo[i], o)
				ws.hi[i] = max(ws.hi[i], o)
			}
		}
		for i := 0; i < n; i++ {
			if ws.off[i]++; ws.off[i] < size[i] {
				break
			}
			ws.off[i] = 0
		}
	}
	box := make([]int, n)
	v := 1
	for i := range box {
		box[i] = ws.hi[i] - ws.lo[i] + 1
		v *= box[i]
	}
	if v != count {
		return nil
	}
	return box
}

// reachable answers whether the placement's set is reachable. A block is
// (the straight path inside the rectangle is a legal route); otherwise
// the answer comes from the selector's cache or, on a miss, from answer.
func (d *decision) reachable(w int, p placement) (bool, error) {
	if p.blockSize != nil || d.work[w].late {
		// A late placement is the bounded path's representative, a free
		// box or a seed found reachable, whose answer the cache may not
		// have kept (it stops growing when full).
		return true, nil
	}
	if d.req.Fast && d.req.Algo == Improved && d.bestT.Load() == 0 {
		// Only a set without transit nodes can still win: ask about the
		// active nodes alone (if they are reachable, so is the whole set).
		return d.alone(w, p, false)
	}
	list := func() ([]int, []int) { return p.active, p.transit }
	if p.nTransit == 0 {
		// Without transit nodes the set is its active nodes alone, which
		// alone asks about under its own keys (a seed of the bounded
		// path was found so).
		var alone []byte
		if p.pattern == "" {
			alone = d.nodeKey(w, 1, "a", p.active)
		} else {
			alone = d.stringKey(w, 1, "p", p.pattern)
		}
		return d.askReachable(w, list, d.setKey(w, p), alone)
	}
	return d.askReachable(w, list, d.setKey(w, p))
}

// setKey is the reachability cache key (slot 0) of a placement's set: its
// pattern when the router is translation invariant, else its nodes.
func (d *decision) setKey(w int, p placement) []byte {
	if p.pattern == "" {
		return d.setIDKey(w, 0, "s", p.active, p.transit)
	}
	return d.stringKey(w, 0, "t", p.pattern)
}

// reachableFirst is reachable for a set that is not a block, asked
// with answerFirst on a miss of the cache: errNotYet when the set's first
// sources have their routes (nothing is then kept in the cache).
func (d *decision) reachableFirst(w int, p placement) (bool, error) {
	ask := func(active, transit []int) (bool, error) { return d.answerFirst(w, active, transit) }
	list := func() ([]int, []int) { return p.active, p.transit }
	return d.sel.reach.reachable(ask, list, d.setKey(w, p))
}

// askReachable asks the router whether the set list returns is
// reachable, through the selector's cache; each key names the set (built
// by the key methods below, which prepend the job size: patterns and
// block sizes name a set only for a given m).
func (d *decision) askReachable(w int, list func() (active, transit []int), keys ...[]byte) (bool, error) {
	return d.sel.reach.reachable(d.asker(w), list, keys...)
}

// askConnected is askReachable for a set known to be connected and not
// a box (the uniform path's), whose connectivity and box are not checked
// (see answerConnected).
func (d *decision) askConnected(w int, list func() (active, transit []int), keys ...[]byte) (bool, error) {
	ask := func(active, transit []int) (bool, error) { return d.answerConnected(w, active, transit, true) }
	return d.sel.reach.reachable(ask, list, keys...)
}

// alone reports whether the active nodes are reachable without transit
// nodes. A fault-free block of available nodes is when its first m nodes
// form a rectangle; blocks of one size share the answer (block: p is
// taken as the block of size p.blockSize), and so do placements with the
// same active set (or, for a translation-invariant router, the same
// pattern).
func (d *decision) alone(w int, p placement, block bool) (bool, error) {
	return d.aloneAsked(w, p, block, d.askReachable)
}

// aloneAsked is alone asking through ask (askReachable, or askConnected
// for a set known to be connected).
func (d *decision) aloneAsked(w int, p placement, block bool, ask func(w int, list func() (active, transit []int), keys ...[]byte) (bool, error)) (bool, error) {
	size := p.blockSize
	if block && leadingBlock(size, d.m) != nil {
		return true, nil
	}
	if block && d.shareBlocks {
		return ask(w, func() ([]int, []int) {
			active, _ := d.listed(p)
			return active, nil
		}, d.stringKey(w, 0, "", sizeKey("b", size)))
	}
	active, _ := d.listed(p)
	list := func() ([]int, []int) { return active, nil }
	if p.pattern != "" && d.longNodeKey(len(active)) {
		// A large set on a large machine: its node key costs about a
		// third of a question that the hints answer (sorting and hashing
		// kilobytes), and on a filling Sequoia finds the answer for one
		// question in 200. Translates share the pattern's.
		return ask(w, list, d.stringKey(w, 1, "p", p.pattern))
	}
	key := d.nodeKey(w, 0, "a", active)
	if p.pattern != "" {
		// Placements of other sizes often have the same active nodes, and
		// translates have the same pattern: either key finds the answer.
		return ask(w, list, key, d.stringKey(w, 1, "p", p.pattern))
	}
	return ask(w, list, key)
}

// maxNodeKey is the longest node key (appendSetKey) alone asks under
// beside a pattern's.
const maxNodeKey = 1 << 10

// longNodeKey reports whether the node key of k nodes is longer than
// maxNodeKey.
func (d *decision) longNodeKey(k int) bool {
	return min((d.s.N()+7)/8, 4*k) > maxNodeKey
}

// reduce drops the transit nodes the set does not need (improved
// algorithm; the set may become non-rectangular, and each dropped node
// stays free for others). Criterion 1 ranks first by the transit count,
// so a candidate that must keep more than the best so far is given up
// (ok false) as soon as that is certain. In a block the outcome depends
// only on the size: blocks of one size are translations of each other and
// routes never leave the set, so it is computed once per size. keep lists
// the indices in p.transit of the nodes kept, or is nil when none was
// dropped.
//
// With unchecked, nobody has asked yet whether the placement's set is
// reachable (checkLater): ok is then also false when it is not.
func (d *decision) reduce(w int, p placement, unchecked bool) (keep []int, ok bool, err error) {
	if d.req.Algo != Improved || p.nTransit == 0 {
		return nil, true, nil
	}
	switch bound := d.bestT.Load(); {
	case bound == 0:
		// Only a set without transit nodes can still win, and
		// reachability only grows with the transit set, so the greedy ends
		// at none exactly when the active nodes alone are reachable.
		ok, err := d.alone(w, p, p.blockSize != nil)
		if err != nil || !ok {
			return nil, false, err
		}
	case p.blockSize != nil && d.shareBlocks:
		// Kept across decisions: a pruned outcome stays pruned for lower
		// bounds (the bound only falls within a decision).
		k, err := d.sel.reductions.get(blockReductionKey(d.m, p.blockSize), int(bound), func(bound int) ([]int, error) {
			active, transit := d.listed(p)
			return dropTransit(d.asker(w), active, transit, bound)
		})
		if err != nil || k == nil {
			return nil, false, err
		}
		keep = k
	case p.pattern != "":
		// Translates reduce the same way (indices into the transit list).
		k, err := d.memo.get("d"+p.pattern, func() (any, error) {
			return d.dropTransit(w, p, int(bound), unchecked)
		})
		if err != nil || k.([]int) == nil {
			return nil, false, err
		}
		keep = k.([]int)
	default:
		k, err := d.dropTransit(w, p, int(bound), unchecked)
		if err != nil || k == nil {
			return nil, false, err
		}
		keep = k
	}
	if len(keep) == p.nTransit {
		return nil, true, nil
	}
	if keep == nil {
		keep = []int{}
	}
	return keep, true, nil
}

// checkLater reports whether a Fast decision may ask whether the
// placement's set is reachable with only its first sources
// (reachableFirst), leaving the rest of the question to its reduction
// (dropTransit with unchecked): a set with transit nodes and unavailable
// ones, while a candidate with transit nodes can still win. The full
// check of a reachable set is the costly question (all its batches of
// sources), while the reduction asks about subsets of the set, most of
// them not reachable and told in their first batch. A subset found
// reachable shows the set is too (reachability grows with the transit
// set); a reduction that gives up at the bound (more transit nodes must
// stay than the best candidate has) needs no answer, since the
// placement cannot win either way; only when every subset asked about
// was not reachable and the reduction kept every transit node is the set
// itself asked about in full.
func (d *decision) checkLater(p placement) bool {
	return d.req.Fast && d.req.Algo == Improved && !d.req.Exists && !d.req.CountOnly &&
		p.blockSize == nil && p.nTransit > 0 && d.bestT.Load() > 0
}

// dropTransit is dropTransit (the function) on the placement's set with
// worker w's questions. With unchecked (checkLater) it returns nil also
// when the set is not reachable.
func (d *decision) dropTransit(w int, p placement, bound int, unchecked bool) ([]int, error) {
	active, transit := d.listed(p)
	ask := d.asker(w)
	reached := false
	if unchecked {
		ask = func(active, transit []int) (bool, error) {
			ok, err := d.answer(w, active, transit)
			reached = reached || ok
			return ok, err
		}
	}
	keep, err := dropTransit(ask, active, transit, bound)
	if err != nil || keep == nil || !unchecked || reached {
		return keep, err
	}
	// No subset asked about was reachable: every transit node stayed,
	// and the set itself is the question.
	ok, err := d.reachable(w, p)
	if err != nil || !ok {
		return nil, err
	}
	return keep, nil
}

// newCandidate records a reachable set in worker w's arena, with what
// names its translation class (see nameClasses).
func (d *decision) newCandidate(w int, p placement, keep []int) *candidate {
	a := &d.sel.arenas[w]
	c := a.candidate()
	// Sizes are the selector's shapes, never changed; detach copies the
	// chosen candidate's.
	c.Rect = Rect{Start: a.clone(p.rect.Start), Size: p.rect.Size}
	c.Holes, c.nTransit = p.holes, p.nTransit
	c.blockSize, c.pattern, c.keep = p.blockSize, p.pattern, keep
	switch {
	case p.all == nil:
		c.block = blockSet{start: c.Rect.Start, size: c.Rect.Size, m: d.m, keep: keep}
		if p.box.Size != nil {
			c.block.start, c.block.size = a.clone(p.box.Start), p.box.Size
		}
		c.lazy = &c.block
	case keep == nil:
		c.Active, c.Transit = slices.Clone(p.active), slices.Clone(p.transit)
	default:
		c.Active, c.Transit = slices.Clone(p.active), make([]int, len(keep))
		for i, x := range keep {
			c.Transit[i] = p.transit[x]
		}
	}
	if keep != nil {
		c.nTransit = len(keep)
	}
	return c
}

// nameClasses sets the candidate's shape and iso; Select names only the
// candidates tied on criteria 1 and 2, which are ranked. Sets from blocks
// of one size, reduced the same way, are translations of each other;
// with a translation-invariant router, so are sets with the same pattern
// of unavailable nodes and the same kept transit nodes. Translates route
// alike, and a routing table breaks ties between equal routes by the
// nodes' order in the set's own frame (routing.Router.setFrame), which
// moves with the set however it wraps around the rings, except along a
// ring the box covers whole: there the box's start decides which nodes
// are active and where the frame starts, so the names include it
// (appendOrderKey).
func (d *decision) nameClasses(c *candidate) {
	start, rect := c.Rect.Start, c.Rect.Size // the box the set lies in
	if c.lazy != nil {
		start = c.block.start
	}
	var b []byte
	switch {
	case d.invariant && c.blockSize != nil:
		b = []byte(sizeKey("B", c.blockSize))
		rect = c.blockSize
	case c.pattern != "":
		b = []byte("P" + c.pattern)
	}
	if b != nil {
		b = append(b, 0xff) // no uvarint starts with 0xff after a full one
		b = binary.AppendUvarint(b, uint64(len(c.keep)))
		if c.keep == nil {
			b = append(b, 0xff)
		}
		for _, x := range c.keep {
			b = binary.AppendUvarint(b, uint64(x))
		}
		c.shape = string(d.appendOrderKey(b, start, rect))
	}
	if iso, size := d.isoName(c); iso != "" {
		c.iso = string(d.appendOrderKey([]byte(iso), start, size))
	}
}

// appendOrderKey appends, for the box of the given size at start, where
// the box starts in each dimension in which it is a whole ring (0 in the
// others). Tables number a set in its frame: per dimension from the
// coordinate right after the longest run of coordinates the set does not
// use, or, where the set covers the ring, the longest run its active
// nodes do not use (0 where they cover it too). The sets named here are
// connected (the kept transit nodes are all needed, so each lies on a
// route between active nodes), so in a dimension where the box is not a
// whole ring their projection is one cyclic interval and their frame
// moves with them: translates are numbered in the same order wherever
// the ring wraps inside the box. Along a whole ring the translates with
// the same start have the same projection, hence the same frame.
func (d *decision) appendOrderKey(b []byte, start, size []int) []byte {
	b = append(b, 0xfe)
	for i, p := range size {
		w := 0
		if p == d.sel.dims[i] {
			w = start[i]
		}
		b = binary.AppendUvarint(b, uint64(w))
	}
	return b
}

// isoName names the class of a candidate whose available nodes form a
// box without a failed link inside: it is the block of that box, in the
// block's class ("" when blocks do not share their figures). size is the
// block the name stands for.
func (d *decision) isoName(c *candidate) (string, []int) {
	bs := c.blockSize
	switch {
	case bs == nil || !d.shareBlocks:
		return "", nil
	case c.keep == nil:
		return sizeKey("r", bs), bs
	case c.nTransit > 0:
		return sizeKey("g", bs), bs
	case leadingBlock(bs, d.m) != nil:
		l := leadingBlock(bs, d.m)
		return sizeKey("r", l), l
	default:
		return sizeKey("a", bs), bs
	}
}

// collect merges the sizes' candidates in size order, drops those beaten
// on criterion 1 by a candidate of another size and repeated node sets,
// and counts the placements found.
func (d *decision) collect(results []sizeResult, res *Result) ([]*candidate, error) {
	var cands []*candidate
	seen := map[string]bool{}
	ks := &d.sel.keys
	minT := int(d.bestT.Load())
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		res.Found += r.found
		res.Examined += r.examined
		for _, c := range r.cands {
			if d.req.Algo == Improved && c.nTransit > minT {
				continue
			}
			ks.buf = d.appendSetKey(ks.buf[:0], c, &ks.keyScratch)
			if seen[string(ks.buf)] {
				continue
			}
			seen[string(ks.buf)] = true
			c.order = len(cands)
			cands = append(cands, c)
		}
	}
	return cands, nil
}

// tableFigures builds the routing tables of the representatives on all
// cores, one per translation class (representatives with the same shape
// share the figures; with a translation-invariant router a class met in
// an earlier decision takes its figures from the selector's figure
// cache), verifies the table of the class that wins, and returns how
// many classes' tables ranked them (built now or before) and, with a
// budget, the representatives whose class's table was not finished in
// time (missing: their figures mean nothing).
func (d *decision) tableFigures(reps []*candidate) (figs []routing.Figures, classes int, missing map[int]bool, err error) {
	first, figs, verified, build := d.knownFigures(reps)
	cache := &d.sel.figures
	for _, i := range build {
		d.materialize(reps[i])
	}
	// With a budget the tables are built under the table phase's
	// deadline: a class whose table was not finished in time takes no
	// part in the ranking (missing), and the answer is then complete for
	// criteria 1 and 2 only.
	ctx, cancel := d.clock.tableContext()
	defer cancel()
	missing, best, bestBuilt, err := d.buildFigures(ctx, reps, build, figs, verified)
	if err != nil {
		return nil, 0, nil, err
	}
	// Only the class that wins needs a verified table: least diameter,
	// then π_max, then the first representative.
	win := -1
	for i := range reps {
		if j := first[i]; !missing[j] && (win < 0 || betterTable(figs, j, win)) {
			win = j
		}
	}
	if win < 0 {
		return nil, 0, nil, errCut // no table finished in time
	}
	if err := d.verifyWinner(ctx, reps, figs, verified, win, bestBuilt, best); err != nil {
		return nil, 0, nil, err
	}
	if d.invariant {
		for i, c := range reps {
			if first[i] == i && c.shape != "" && !missing[i] {
				cache.put(d.m, c.shape, figs[i], verified[i])
			}
		}
	}
	for i := range reps {
		if first[i] == i && !missing[i] {
			classes++
		}
		figs[i] = figs[first[i]]
		missing[i] = missing[first[i]]
	}
	return figs, classes, missing, nil
}

// knownFigures groups the representatives by shape (first: the one whose
// figures each uses) and takes the figures the selector kept for a
// shape; build lists those whose tables must be built, and verified says
// whether a kept class's table was verified.
func (d *decision) knownFigures(reps []*candidate) (first []int, figs []routing.Figures, verified map[int]bool, build []int) {
	first = make([]int, len(reps))
	byShape := map[string]int{}
	figs = make([]routing.Figures, len(reps))
	cache := &d.sel.figures
	verified = map[int]bool{} // representative → whether its class's table was verified (absent: built now, unverified)
	for i, c := range reps {
		first[i] = i
		if c.shape != "" {
			if j, ok := byShape[c.shape]; ok {
				first[i] = j
				continue
			}
			byShape[c.shape] = i
			if d.invariant {
				if e, ok := cache.get(d.m, c.shape); ok {
					figs[i], verified[i] = e.fig, e.verified
					continue
				}
			}
		}
		build = append(build, i)
	}
	return first, figs, verified, build
}

// buildFigures builds the tables of reps[build] under ctx and fills their
// figures; missing names those not finished in time. With several to
// build they are built unverified, and best (of bestBuilt) is the best
// table kept for the winner's verification.
func (d *decision) buildFigures(ctx context.Context, reps []*candidate, build []int, figs []routing.Figures, verified map[int]bool) (missing map[int]bool, best *routing.Table, bestBuilt int, err error) {
	errs := make([]error, len(build))
	bestBuilt = -1 // best is the unverified table of reps[bestBuilt]
	if len(build) > 1 {
		var checked []bool
		bestBuilt, best, checked = d.buildUnverified(ctx, reps, build, figs, errs)
		for k, i := range build {
			if checked[k] {
				verified[i] = true
			}
		}
	} else {
		conc, each := tableSplit(d.sel.Workers, len(build))
		par.For(len(build), conc, func(_, k int) {
			i := build[k]
			figs[i], errs[k] = routerTable(ctx, d.rt, reps[i].Active, reps[i].Transit, each)
		})
		for k, i := range build {
			verified[i] = errs[k] == nil
		}
	}
	missing = map[int]bool{}
	for k, err := range errs {
		if err != nil && ctx.Err() != nil {
			missing[build[k]], errs[k] = true, nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, -1, err
	}
	if len(missing) > 0 {
		d.tableCut = true
	}
	return missing, best, bestBuilt, nil
}

// verifyWinner verifies the table of the winning class win when it was
// not verified as it was built: the kept unverified table when win was
// built now, else a table built anew whose figures must equal the kept
// ones. A verification the budget cuts leaves the figures ranking
// (tableCut).
func (d *decision) verifyWinner(ctx context.Context, reps []*candidate, figs []routing.Figures, verified map[int]bool, win, bestBuilt int, best *routing.Table) error {
	cache := &d.sel.figures
	switch ok, known := verified[win]; {
	case win == bestBuilt:
		if err := verifyTable(ctx, d.rt, best, d.sel.Workers); err != nil {
			if ctx.Err() != nil {
				// Built in time but not verified: the figures rank
				// the candidates; the caller verifies the set's table.
				d.tableCut = true
				break
			}
			return err
		}
		verified[win] = true
	case known && !ok:
		// Cached figures of a class whose table was never verified.
		c := reps[win]
		d.materialize(c)
		fig, err := routerTable(ctx, d.rt, c.Active, c.Transit, d.sel.Workers)
		if err != nil && ctx.Err() != nil {
			d.tableCut = true // the cached figures rank; not verified in time
			break
		}
		if err != nil {
			return err
		}
		if fig != figs[win] {
			return fmt.Errorf("routing tables of one translation class differ: %+v and %+v", fig, figs[win])
		}
		verified[win] = true
		cache.verifiedLate()
	}
	return nil
}

// betterTable reports whether representative i's figures beat j's: least
// diameter, then π_max, then the first representative.
func betterTable(figs []routing.Figures, i, j int) bool {
	a, b := figs[i], figs[j]
	if a.Diameter != b.Diameter {
		return a.Diameter < b.Diameter
	}
	if a.PiMax != b.PiMax {
		return a.PiMax < b.PiMax
	}
	return i < j
}

// appendSetKey appends the name of a candidate's node set with its split
// (see appendCanonicalKey) to b.
func (d *decision) appendSetKey(b []byte, c *candidate, ks *keyScratch) []byte {
	if c.lazy != nil {
		return c.lazy.appendKey(b, d.sel.dims, ks)
	}
	return appendCanonicalKey(b, d.sel.dims, c.Active, c.Transit, ks)
}

// materialize lists a candidate's nodes if they are not listed yet.
func (d *decision) materialize(c *candidate) {
	if c.lazy != nil && c.Active == nil {
		c.Active, c.Transit = c.lazy.nodes(d.sel.dims)
	}
}

// fewestTransit keeps the candidates with the fewest transit nodes
// (criterion 1).
func fewestTransit(cands []*candidate) []*candidate {
	minT := cands[0].nTransit
	for _, c := range cands {
		minT = min(minT, c.nTransit)
	}
	var best []*candidate
	for _, c := range cands {
		if c.nTransit == minT {
			best = append(best, c)
		}
	}
	return best
}

// chooseFirst is the baseline's choice: the first candidate, with its
// table built by the baseline routing algorithm.
func (d *decision) chooseFirst(best []*candidate, res *Result) error {
	c := best[0]
	d.materialize(c)
	res.Chosen, res.Ranked = &c.Candidate, 1
	if d.req.NoTable {
		return nil // no tie to break: the table and φ are only reported
	}
	fig, _, err := d.rt.Table(context.Background(), c.Active, c.Transit, routing.BuildOptions{Algo: routing.Baseline, Workers: d.sel.Workers})
	if err != nil {
		return err
	}
	c.Figures = &fig
	c.Frag = newLevelCache(d.sel, d.s).after(c)
	res.Tables = 1
	return nil
}

// leastFragmenting keeps the candidates with the largest φ after
// allocation (criterion 2). Allocating only removes free rectangles, so
// the free rectangles afterwards are today's free rectangles that miss
// the candidate's nodes: today's free rectangles are listed volume level
// by volume level (each level found once per decision and shared by all
// candidates) until a level keeps some.
func (d *decision) leastFragmenting(best []*candidate) []*candidate {
	var levels *levelCache
	if !d.empty {
		levels = d.levelsNow()
	}
	// Candidates certainly below the largest φ found so far are given up
	// early (their Frag stays unset); the bound only rises, so every
	// candidate reaching the final maximum is computed exactly. The first
	// candidate of each rectangle size is evaluated first to set a good
	// bound.
	var top atomic.Int64
	kept := make([]bool, len(best))
	done := make([]bool, len(best))
	if len(d.sel.taken) < len(d.work) {
		d.sel.taken = make([]takenSet, len(d.work))
	}
	eval := func(w, i int) {
		var f Fragmentation
		var ok bool
		if d.empty {
			f, ok = d.emptyPhi(best[i], top.Load())
		} else {
			f, ok = levels.afterAbove(best[i], &top, &d.sel.taken[w])
		}
		done[i] = true
		if !ok {
			return
		}
		best[i].Frag, kept[i] = f, true
		for cur := top.Load(); f.Phi > cur && !top.CompareAndSwap(cur, f.Phi); cur = top.Load() {
		}
	}
	var seeds []int
	sizes := map[*int]bool{} // candidates' sizes are the selector's shapes
	for i, c := range best {
		if k := &c.Rect.Size[0]; !sizes[k] {
			sizes[k] = true
			seeds = append(seeds, i)
		}
	}
	// With a budget, the ranking stops at its deadline: the first
	// candidate is always ranked, so there is an answer.
	rank := func(w, i int) {
		if i != seeds[0] && d.clock.rank.Load() {
			d.rankCut.Store(true)
			return
		}
		eval(w, i)
	}
	par.For(len(seeds), d.sel.Workers, func(w, k int) { rank(w, seeds[k]) })
	par.For(len(best), d.sel.Workers, func(w, i int) {
		if !done[i] {
			rank(w, i)
		}
	})
	maxPhi := top.Load()
	var tied []*candidate
	for i, c := range best {
		if kept[i] && c.Frag.Phi == maxPhi {
			tied = append(tied, c)
		}
	}
	return tied
}

// chooseByTables breaks the remaining ties by routing-table diameter, then
// π_max (criteria 3 and 4), then enumeration order. One table is built per
// translation class, for the first MaxTables classes in candidate order,
// on all cores.
func (d *decision) chooseByTables(tied []*candidate, res *Result) error {
	limit := d.req.MaxTables
	if limit <= 0 {
		limit = 64
	}
	classOf := func(c *candidate) string {
		switch {
		case c.iso != "":
			return c.iso
		case d.ringInvariant:
			return d.ringClass(c)
		}
		return fmt.Sprint("#", c.order)
	}
	class := map[string]int{}
	var reps []*candidate // the first candidate of each class
	var ranked []*candidate
	for _, c := range tied {
		k := classOf(c)
		if _, ok := class[k]; !ok {
			if len(reps) >= limit {
				continue
			}
			class[k] = len(reps)
			reps = append(reps, c)
		}
		ranked = append(ranked, c)
	}
	if n := d.affordable(reps); n < len(reps) {
		// The tables of the classes after the first n do not fit the
		// budget: those classes take no part, and when some class is
		// left out the ties are not all broken.
		if len(reps) > 1 {
			d.tableCut = true
		}
		ranked = slices.DeleteFunc(ranked, func(c *candidate) bool { return class[classOf(c)] >= n })
		reps = reps[:n]
		if n == 0 {
			res.Chosen = &tied[0].Candidate
			d.materialize(tied[0])
			return nil
		}
	}
	figs, built, missing, err := d.tableFigures(reps)
	if err != nil {
		return err
	}
	res.Tables = built
	// Candidates of a class whose table was not finished in time take no
	// part (tableFigures found at least one finished).
	ranked = slices.DeleteFunc(ranked, func(c *candidate) bool { return missing[class[classOf(c)]] })
	for _, c := range ranked {
		c.Figures = &figs[class[classOf(c)]]
	}
	slices.SortStableFunc(ranked, func(a, b *candidate) int {
		if x := cmp.Compare(a.Figures.Diameter, b.Figures.Diameter); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Figures.PiMax, b.Figures.PiMax); x != 0 {
			return x
		}
		return cmp.Compare(a.order, b.order)
	})
	res.Chosen = &ranked[0].Candidate
	d.materialize(ranked[0])
	return nil
}

// ringClass names the candidate's class of translates along the rings
// its rectangle does not cover whole (for a router whose answers are
// invariant along the rings, so all of them have one table): its set
// relative to its rectangle's start there, with the rectangle's start
// along the other dimensions. A reachable set is connected, so its
// projection on such a ring is one interval and routing numbers its
// translates in the same order (routing's set frame). Candidates of one
// ring class then share a table and count once against MaxTables, as on
// the uniform path, which decides each class from one placement.
func (d *decision) ringClass(c *candidate) string {
	dims, wrap := d.sel.dims, d.sel.wrap
	rect := c.Rect
	moves := make([]bool, len(dims))
	b := []byte("T")
	for i, p := range rect.Size {
		moves[i] = wrap[i] && p < dims[i]
		b = binary.AppendUvarint(b, uint64(p))
		if !moves[i] {
			b = binary.AppendUvarint(b, uint64(rect.Start[i]))
		}
	}
	if c.Holes == 0 && c.nTransit == 0 && c.nodeCount() == vol(rect.Size) {
		return string(append(b, 'b')) // the whole box
	}
	d.materialize(c)
	coord := make([]int, len(dims))
	rel := func(list []int) []int {
		out := make([]int, len(list))
		for k, v := range list {
			dec(v, dims, coord)
			for i := range coord {
				if moves[i] {
					coord[i] = (coord[i] - rect.Start[i] + dims[i]) % dims[i]
				}
			}
			out[k] = enc(coord, dims)
		}
		return out
	}
	var scratch []int
	return string(appendSetID(append(b, 0xff), rel(c.Active), rel(c.Transit), &scratch))
}

// buildUnverified builds the tables of reps[build] without verifying
// them, fills their figures and errs (per build index), and returns the
// best of them with its table (the only one kept in memory) and, per
// build index, whether the table was verified as it was built (the
// router returned no table to verify).
func (d *decision) buildUnverified(ctx context.Context, reps []*candidate, build []int, figs []routing.Figures, errs []error) (int, *routing.Table, []bool) {
	var mu sync.Mutex
	bestIdx := -1
	var best *routing.Table
	checked := make([]bool, len(build))
	conc, each := tableSplit(d.sel.Workers, len(build))
	par.For(len(build), conc, func(_, k int) {
		i := build[k]
		fig, tb, err := unverifiedTable(ctx, d.rt, reps[i].Active, reps[i].Transit, each)
		mu.Lock()
		defer mu.Unlock()
		figs[i], errs[k], checked[k] = fig, err, err == nil && tb == nil
		if err == nil && (bestIdx < 0 || betterTable(figs, i, bestIdx)) {
			bestIdx, best = i, tb
		}
	})
	return bestIdx, best, checked
}
