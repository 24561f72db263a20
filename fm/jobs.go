package fm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// snapshot is a consistent copy of what a placement needs; computations
// run on it without any lock.
type snapshot struct {
	ver     uint64
	g       *topology.Graph
	state   *alloc.State // private copy
	routing Routing
	noJobs  string
	jobs    map[int]*client.JobRecord
}

func (s *Service) snapshot(withState bool) *snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sn := &snapshot{ver: s.fabricVer, g: s.g, routing: s.routing, noJobs: s.noJobs,
		jobs: make(map[int]*client.JobRecord, len(s.jobs))}
	if withState && s.state != nil && s.routing != nil {
		sn.state = s.state.Clone()
	}
	for id, j := range s.jobs {
		sn.jobs[id] = j
	}
	return sn
}

// errAnswered reports that a placement's request id was answered
// already (the commit wrote nothing).
var errAnswered = errors.New("request answered already")

// errStale reports that the fabric changed while a computation ran on a
// snapshot of it.
var errStale = errors.New("the fabric changed during the computation")

// plan is a placement computed on a snapshot.
type plan struct {
	res     *alloc.Result
	active  []int
	transit []int
	table   *routing.TableJSON
	stats   client.TableStats
	routes  []byte   // table's routes encoded for the store, before the commit
	links   jobLinks // what the table puts on the links, kept at the commit
}

func checkRequest(req client.JobRequest) (alloc.Algo, error) {
	if req.Nodes < 1 {
		return "", badRequest("nodes must be at least 1")
	}
	if req.Transit < 0 {
		return "", badRequest("transit must not be negative")
	}
	if len(req.Name) > 200 {
		return "", badRequest("name longer than 200 characters")
	}
	if err := checkRequestID(req.RequestID); err != nil {
		return "", err
	}
	if req.Algo == "" {
		return alloc.Improved, nil
	}
	a, err := alloc.ParseAlgo(req.Algo)
	if err != nil {
		return "", badRequest("%v", err)
	}
	return a, nil
}

// Placement budget. Node selection gets the whole budget from the
// placement's turn, as icn alloc --budget gives it, so the service and
// the command choose the same set for the same request on the same
// state; a selection that has not answered by the budget + 10 %
// (placementGrace; at least minGrace past the budget) is stopped. The
// job's verified table is built before the answer when it is expected
// to fit in what is left of the budget (the table's seconds per route,
// as measured on this host by the tables so far, times the routes), and
// then stopped at the budget + 5 % (tableGrace) if it does not; a table
// that does not fit is built after the answer: the job is committed
// with its nodes and a pending table (client.RoutePending), which the
// table builder builds and verifies in the background (tables.go).
const (
	// defaultRouteSeconds is the first estimate: a 2-core host builds,
	// verifies and converts a 4 096-node table (16.8 million routes) in
	// about 9 s.
	defaultRouteSeconds = 0.55e-6
	// measuredRoutes: tables smaller than this (routes) are dominated by
	// fixed costs and do not update the estimate.
	measuredRoutes = 1 << 16
	// defaultSelectionSeconds is the first estimate of a node selection
	// per node requested (about 0.5 s for 1 024 nodes of an empty
	// torus:32x32x32 on 2 cores, docs/fm.md).
	defaultSelectionSeconds = 0.5e-3
	// placementGrace and tableGrace: the selection is stopped at the
	// budget plus budget/placementGrace, a table built before the answer
	// at the budget plus budget/tableGrace (the rest covers encoding and
	// storing it).
	placementGrace = 10
	tableGrace     = 20
	// minGrace is the least time past a short budget the selection has
	// to hand over what it found (a budget of microseconds still answers
	// with the placements it examined).
	minGrace = 50 * time.Millisecond
)

// selectionTime is the most a selection with budget b > 0 may take: it is
// stopped then if it has not answered.
func selectionTime(b time.Duration) time.Duration {
	return b + max(b/placementGrace, minGrace)
}

// budget is the placement budget (0: none).
func (s *Service) budget() time.Duration {
	return max(s.cfg.PlacementBudget, 0)
}

// tableEstimate is the expected time of the verified table of a job of
// m active nodes.
func (s *Service) tableEstimate(m int) time.Duration {
	perRoute := math.Float64frombits(s.routeSeconds.Load())
	if perRoute == 0 {
		perRoute = defaultRouteSeconds
	}
	return time.Duration(perRoute * float64(m) * float64(m-1) * float64(time.Second))
}

// measuredTable updates the estimate from a table of m active nodes that
// took d (the mean of the estimate and the new figure).
func (s *Service) measuredTable(m int, d time.Duration) {
	routes := float64(m) * float64(m-1)
	if routes < measuredRoutes {
		return
	}
	now := d.Seconds() / routes
	if old := math.Float64frombits(s.routeSeconds.Load()); old != 0 {
		now = (old + now) / 2
	}
	s.routeSeconds.Store(math.Float64bits(now))
}

// selectionEstimate is the expected time of the node selection for a
// job of m nodes: the mean time per node requested of the selections so
// far (a running mean), times m, and at most the budget.
func (s *Service) selectionEstimate(m int) time.Duration {
	perNode := math.Float64frombits(s.selectSeconds.Load())
	if perNode == 0 {
		perNode = defaultSelectionSeconds
	}
	d := time.Duration(perNode * float64(m) * float64(time.Second))
	if b := s.budget(); b > 0 {
		d = min(d, b)
	}
	return d
}

// measuredSelection updates the selection estimate from a selection for
// m nodes that took seconds (the mean of the estimate and the new
// figure).
func (s *Service) measuredSelection(m int, seconds float64) {
	if m < 1 || seconds <= 0 {
		return
	}
	now := seconds / float64(m)
	if old := math.Float64frombits(s.selectSeconds.Load()); old != 0 {
		now = (old + now) / 2
	}
	s.selectSeconds.Store(math.Float64bits(now))
}

// placementEstimate is the expected duration of a placement of m nodes
// once it has the placement slot: its selection and its table, at most
// the budget + 10 % (a table that does not fit is built after the
// answer).
func (s *Service) placementEstimate(m int) time.Duration {
	d := s.selectionEstimate(m) + s.tableEstimate(m)
	if b := s.budget(); b > 0 {
		d = min(d, selectionTime(b))
	}
	return d
}

// placeQueue hands the placement slot (placements and migrations run
// one at a time) to one request at a time. Waiting requests are served
// by virtual deadline, their arrival plus the expected duration of their
// placement (expected, evaluated when the slot is handed on, so requests
// of one size keep their order), earliest first, in arrival order among
// equals: a small request overtakes a big one that waits, and a big one
// is served once its deadline is the earliest, which the requests that
// arrive after it pass sooner or later. A request whose client leaves
// is removed from the queue.
type placeQueue struct {
	now      func() time.Time          // the arrival clock
	expected func(m int) time.Duration // expected duration of a placement of m nodes

	mu      sync.Mutex
	busy    bool // the slot is held
	seq     uint64
	waiting []*placeWaiter
	// queued, if set, is called after a request joined the queue (tests).
	queued func()
}

// placeWaiter is one request waiting for the slot.
type placeWaiter struct {
	m       int
	arrival time.Time
	seq     uint64
	ready   chan struct{} // closed when the slot is handed to it
}

// join takes the slot for a placement of m nodes if it is free and
// nobody waits (nil), or queues a waiter.
func (q *placeQueue) join(m int) *placeWaiter {
	q.mu.Lock()
	if !q.busy && len(q.waiting) == 0 {
		q.busy = true
		q.mu.Unlock()
		return nil
	}
	q.seq++
	w := &placeWaiter{m: m, arrival: q.now(), seq: q.seq, ready: make(chan struct{})}
	q.waiting = append(q.waiting, w)
	hook := q.queued
	q.mu.Unlock()
	if hook != nil {
		hook()
	}
	return w
}

// acquire waits for the slot for a placement of m nodes; it gives up
// only when ctx ends (its client left) and then leaves the queue.
func (q *placeQueue) acquire(ctx context.Context, m int) error {
	w := q.join(m)
	if w == nil {
		return nil
	}
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	if !q.leave(w) {
		q.release() // it was handed the slot meanwhile: hand it on
	}
	return ctx.Err()
}

// leave removes w from the queue; false if the slot was handed to it
// already.
func (q *placeQueue) leave(w *placeWaiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiting, w)
	if i < 0 {
		return false
	}
	q.waiting = slices.Delete(q.waiting, i, i+1)
	return true
}

// release hands the slot to the waiter with the earliest virtual
// deadline, or frees it.
func (q *placeQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.busy = false
		return
	}
	best, bestDeadline := -1, time.Time{}
	for i, w := range q.waiting {
		d := w.arrival.Add(q.expected(w.m))
		if best < 0 || d.Before(bestDeadline) || d.Equal(bestDeadline) && w.seq < q.waiting[best].seq {
			best, bestDeadline = i, d
		}
	}
	w := q.waiting[best]
	q.waiting = slices.Delete(q.waiting, best, best+1)
	close(w.ready)
}

// errOverBudget is the cause of a selection stopped at the budget + 10 %
// (place).
var errOverBudget = errors.New("the selection ran past its budget")

// placementCut is the error of a placement whose context ended: the
// service is closing (ErrClosing), or the client gave up (its
// context's error).
func placementCut(ctx context.Context) error {
	if context.Cause(ctx) != ctx.Err() {
		return stopped(ctx, "nothing was placed")
	}
	return fmt.Errorf("%w: the client left; nothing was placed", ctx.Err())
}

// place selects a node set on a snapshot and builds its verified table
// if that fits the budget (callers hold the placement slot: the selector
// is single-threaded). turn is when the placement got the slot, the
// start of its budget, and selBudget the selection's budget (the whole
// budget but for a second try after the fabric changed). A plan whose
// table did not fit has none (table nil): the job is committed with a
// pending table.
//
// A request that no set can ever meet is a bad request (ErrBadRequest),
// one that cannot be met now a conflict (ErrConflict), and one for which
// the budget ended before any set was found ErrBudget, naming the
// placements examined (alloc.Explain).
func (s *Service) place(ctx context.Context, sn *snapshot, req client.JobRequest, algo alloc.Algo, turn time.Time, selBudget time.Duration) (*plan, error) {
	if sn.state == nil {
		return nil, badRequest("this fabric takes no jobs: %s", sn.noJobs)
	}
	areq := alloc.Request{Nodes: req.Nodes, Transit: req.Transit, Algo: algo, NoTable: true, Fast: true, Budget: selBudget}
	if why := alloc.Impossible(sn.state, areq); why != "" {
		return nil, badRequest("the job can never be placed on this fabric: %s", why)
	}
	b := s.budget()
	selCtx, cancel := ctx, context.CancelFunc(func() {})
	if b > 0 {
		selCtx, cancel = context.WithDeadlineCause(ctx, turn.Add(selectionTime(b)), errOverBudget)
	}
	defer cancel()
	res, err := s.sel.SelectContext(selCtx, sn.state, sn.routing, areq)
	if ctx.Err() != nil {
		return nil, placementCut(ctx)
	}
	if err != nil && selCtx.Err() != nil {
		examined := ""
		var na *alloc.NoAnswerError
		if errors.As(err, &na) {
			examined = fmt.Sprintf(" after %d placements examined", na.Examined)
		}
		return nil, fmt.Errorf("%w: node selection did not answer within the budget of %v (+10%%)%s; nothing was placed", client.ErrBudget, b, examined)
	}
	if err != nil {
		return nil, err
	}
	s.measuredSelection(req.Nodes, res.Seconds)
	if fn := s.observe.Load(); fn != nil {
		(*fn)(res.Seconds, res.Cut != "")
	}
	if res.Chosen == nil {
		return nil, s.noSet(selCtx, sn, areq, res, turn)
	}
	c := res.Chosen
	p := &plan{res: res, active: c.Active, transit: c.Transit}
	if b > 0 && time.Now().Add(s.tableEstimate(len(c.Active))).After(turn.Add(b)) {
		return p, nil // the table after the answer
	}
	tctx, tcancel := ctx, context.CancelFunc(func() {})
	if b > 0 {
		tctx, tcancel = context.WithDeadline(ctx, turn.Add(b+b/tableGrace))
	}
	defer tcancel()
	start := time.Now()
	table, routes, stats, links, err := newTable(tctx, sn.routing, c.Active, c.Transit)
	if ctx.Err() != nil {
		return nil, placementCut(ctx)
	}
	if err != nil && tctx.Err() != nil {
		return p, nil // it did not fit after all: after the answer
	}
	if err != nil {
		return nil, fmt.Errorf("routing table for the chosen nodes: %v", err)
	}
	s.measuredTable(len(c.Active), time.Since(start))
	s.completePlan(p, sn.g, table, routes, stats, links)
	return p, nil
}

// noSet is the error of a selection that chose no set: never (400), not
// now (409) or no set within the budget (409, ErrBudget), as
// alloc.Explain tells them apart; Explain asks the fabric without jobs
// within what is left of the budget.
func (s *Service) noSet(ctx context.Context, sn *snapshot, req alloc.Request, res *alloc.Result, turn time.Time) error {
	left := time.Duration(0) // no budget: none for the check either
	if b := s.budget(); b > 0 {
		if left = time.Until(turn.Add(b)); left <= 0 {
			left = -1 // no time left: no check
		}
	}
	verdict, why := s.sel.Explain(ctx, sn.state, sn.routing, req, res, left)
	switch verdict {
	case alloc.Never:
		return badRequest("the job can never be placed on this fabric: %s", why)
	case alloc.OutOfTime:
		return fmt.Errorf("%w: %s; nothing was placed (a longer icn serve --budget may find a set)", client.ErrBudget, why)
	}
	return fmt.Errorf("%w: cannot place now: %s", client.ErrConflict, why)
}

// completePlan gives a plan its table (its header, and its routes
// encoded for the store: newTable) and the link loads counted here,
// outside the commit, which holds commitMu (the next read of the loads
// only sums).
func (s *Service) completePlan(p *plan, g *topology.Graph, table *routing.TableJSON, routes []byte, stats client.TableStats, links *jobLinks) {
	p.table, p.stats, p.routes = table, stats, routes
	if links != nil {
		p.links = *links
		return
	}
	var lc linkCounter
	p.links = lc.count(s.dirsOf(g), table, routes)
}

// startPlacement registers a placement of a job of m nodes as a change
// in flight (Close cancels it and waits for it) and gives it the
// placement slot: waiting for the slot is not work, so the budget's
// clock starts at the placement's turn (returned), and a waiting request
// gives up only when its client does (ctx) or the service closes. done
// releases the slot and the registration.
func (s *Service) startPlacement(ctx context.Context, m int) (_ context.Context, turn time.Time, done func(), err error) {
	ctx, end, err := s.beginWrite(ctx, "nothing was placed")
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	if err := s.places.acquire(ctx, m); err != nil {
		end()
		if context.Cause(ctx) != ctx.Err() {
			return nil, time.Time{}, nil, stopped(ctx, "nothing was placed")
		}
		return nil, time.Time{}, nil, fmt.Errorf("%w: the client left while the placement waited for its turn; nothing was placed", err)
	}
	return ctx, time.Now(), func() { s.places.release(); end() }, nil
}

// checkRoom answers at once, before any wait or work, a request that can
// never be met (400: a fabric that takes no jobs, more nodes than it has
// or than have not failed, no brick of the size: alloc.Impossible) and
// one larger than the free nodes now (409).
func (s *Service) checkRoom(req client.JobRequest) error {
	s.mu.RLock()
	state, routing, noJobs := s.state, s.routing, s.noJobs
	s.mu.RUnlock()
	if state == nil || routing == nil {
		return badRequest("this fabric takes no jobs: %s", noJobs)
	}
	// The state is never changed in place: it is read without the lock.
	if why := alloc.Impossible(state, alloc.Request{Nodes: req.Nodes, Transit: req.Transit}); why != "" {
		return badRequest("the job can never be placed on this fabric: %s", why)
	}
	if free := state.FreeCount(); req.Nodes > free {
		return fmt.Errorf("%w: cannot place now: the job needs %d nodes but only %d of %d are free", client.ErrConflict, req.Nodes, free, state.N())
	}
	return nil
}

// Submit places a job: it selects a node set and builds and verifies its
// routing table on a snapshot of the fabric, without holding the service
// lock, then commits if the fabric did not change meanwhile (once more on
// a fresh snapshot if it did). Placements run one at a time, so no node
// is ever given to two jobs. If the job cannot be placed now the error
// wraps ErrConflict and says why.
func (s *Service) Submit(actor string, req client.JobRequest) (*client.JobRecord, error) {
	return s.SubmitContext(context.Background(), actor, req)
}

// SubmitContext is Submit for a caller that may give up: the placement
// has the service's budget (Config.PlacementBudget) from its turn, stops
// when ctx ends and commits nothing then; a request waits for its turn
// (placeQueue: small requests before a big one that waits, none
// starved) until its own ctx ends. The selection has the whole budget;
// a table that does not fit in what is left of it is built after the
// answer (the job is committed with Routing RoutePending, and becomes
// RouteOriginal once its table is verified: tables.go). A request that
// can never be met is refused at once (ErrBadRequest), as is one larger
// than the free nodes (ErrConflict), before any wait or work; a budget
// that ends before any set is found is ErrBudget, and nothing is placed.
func (s *Service) SubmitContext(ctx context.Context, actor string, req client.JobRequest) (*client.JobRecord, error) {
	algo, err := checkRequest(req)
	if err != nil {
		return nil, err
	}
	if err := s.writable("nothing was placed"); err != nil {
		return nil, err
	}
	// A repeated request gets its first answer again: looked up at once
	// (its job holds the nodes the checks below count), and again once
	// the request has the slot (placements run one at a time: no other
	// with this id is then in flight).
	replay := func() (*client.JobRecord, error) {
		var first client.JobRecord
		if req.RequestID == "" {
			return nil, nil
		}
		ok, err := s.answered(req.RequestID, "job.submit", &first)
		if !ok {
			return nil, err
		}
		first.Replayed = true
		return &first, nil
	}
	if first, err := replay(); first != nil || err != nil {
		return first, err
	}
	if err := s.checkRoom(req); err != nil {
		return nil, err
	}
	ctx, turn, done, err := s.startPlacement(ctx, req.Nodes)
	if err != nil {
		return nil, err
	}
	defer done()
	if first, err := replay(); first != nil || err != nil {
		return first, err
	}
	selBudget := s.budget()
	for attempt := 0; ; attempt++ {
		sn := s.snapshot(true)
		p, err := s.place(ctx, sn, req, algo, turn, selBudget)
		if err != nil {
			return nil, err
		}
		j := &client.JobRecord{Name: req.Name, State: client.JobRunning, Nodes: req.Nodes, TransitLimit: req.Transit, Algo: string(algo),
			Active: names(sn.g, p.active), TransitNodes: names(sn.g, p.transit), Rules: sn.routing.Rules(), Table: p.table,
			Stats: p.stats, Created: s.cfg.Now().UTC(), Reachable: true, Selection: selectionOf(p.res)}
		if p.table == nil {
			j.Routing = client.RoutePending
		}
		err = s.commitJob(ctx, actor, sn.ver, j, p, req.RequestID)
		if errors.Is(err, errStale) {
			// The fabric changed meanwhile: if the plan still holds on
			// the new one (nodes up, table verifies), commit it; else
			// place once more.
			if ver, ok := s.stillValid(p); ok {
				err = s.commitJob(ctx, actor, ver, j, p, req.RequestID)
			}
		}
		if errors.Is(err, errStale) && attempt == 0 {
			// Once more, within what is left of the budget.
			if b := s.budget(); b > 0 {
				selBudget = max(time.Until(turn.Add(b)), time.Nanosecond)
			}
			continue
		}
		if errors.Is(err, errStale) {
			return nil, fmt.Errorf("%w: the fabric changed twice while the job was being placed; submit it again", client.ErrConflict)
		}
		if errors.Is(err, errAnswered) {
			// Another instance answered the id before this one led.
			var first client.JobRecord
			if ok, aerr := s.answered(req.RequestID, "job.submit", &first); aerr != nil || !ok {
				return nil, fmt.Errorf("storage: request %q: %v", req.RequestID, aerr)
			}
			first.Replayed = true
			return &first, nil
		}
		if err == nil && p.table == nil {
			s.kickTables()
		}
		return j, err
	}
}

// stillValid re-checks a plan on the current fabric (no lock held during
// the check) and returns the fabric version it holds on.
func (s *Service) stillValid(p *plan) (uint64, bool) {
	sn := s.snapshot(false)
	if sn.routing == nil {
		return 0, false
	}
	for _, v := range append(slices.Clone(p.active), p.transit...) {
		if sn.g.NodeFailed(v) {
			return 0, false
		}
	}
	if p.table == nil {
		// A pending table is built on the fabric of its time, which
		// finds a pair the change left without a route (tables.go).
		return sn.ver, true
	}
	return sn.ver, verifyEncoded(sn.routing, p.table, p.routes) == nil
}

// commitJob stores a new job and gives it its nodes, if the fabric is
// still the one it was planned on and the caller still waits (ctx).
//
// It holds commitMu: jobs, nodes and the fabric change only under it, so
// the checks read them without mu, and mu is held only to swap the
// stored change in; reads wait for that, never for the disk. The new
// node state is computed on a copy before the store commits (inside the
// transaction, which gives the job its id): after the commit nothing
// can fail.
//
// A request id (rid) gets the job's record, its answer, stored in the
// same transaction.
func (s *Service) commitJob(ctx context.Context, actor string, ver uint64, j *client.JobRecord, p *plan, rid string) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if ctx.Err() != nil {
		return placementCut(ctx)
	}
	if s.fabricVer != ver {
		return errStale
	}
	nodes := append(slices.Clone(p.active), p.transit...)
	for _, v := range nodes {
		if !s.state.Available(v) {
			// Cannot happen (placements are serialised and failures bump
			// the version); never double-book.
			return errStale
		}
	}
	next := s.state.Clone()
	var occupied error
	_, err := s.commit(ctx, actor, func(tx *store.Tx) error {
		id, err := tx.NextJobID()
		if err != nil {
			return err
		}
		if occupied = next.Occupy(id, nodes); occupied != nil {
			return occupied // rolls the transaction back
		}
		j.ID = id
		if err := tx.PutJob(j, p.routes); err != nil {
			return err
		}
		if err := putPlanLoads(tx, id, p); err != nil {
			return err
		}
		if rid != "" {
			head := *j
			head.Table = nil
			o, err := outcomeOf("job.submit", &head)
			if err != nil {
				return err
			}
			if err := tx.PutRequest(rid, *o); err != nil {
				return err
			}
		}
		return tx.Log("job.submit", fmt.Sprintf("job %d", id), map[string]any{"nodes": j.Nodes, "transit": j.TransitLimit,
			"active": j.Active, "transit_nodes": j.TransitNodes, "candidates": p.res.Found, "placements_examined": p.res.Examined})
	})
	if occupied != nil {
		return fmt.Errorf("%w: %v (the job was not placed)", client.ErrConflict, occupied)
	}
	if errors.Is(err, store.ErrExists) {
		return errAnswered
	}
	if err != nil {
		return fmt.Errorf("storage: %w (the job was not placed)", err)
	}
	keepEncoded(j, p.routes)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = next
	s.jobs[j.ID] = j
	s.jobsChanged()
	s.keepPlanLinks(j.ID, p) // (lock order: mu, then linksMu)
	return nil
}

// putPlanLoads stores the link loads of a plan's table with its routes
// (a plan whose table is pending has none yet).
func putPlanLoads(tx *store.Tx, id int, p *plan) error {
	if p.table == nil || p.routes == nil {
		return nil
	}
	return tx.PutJobLoads(id, loadsOf(p.links))
}

// keepPlanLinks caches the links of a committed plan's table, or forgets
// the job's links while its table is pending.
func (s *Service) keepPlanLinks(id int, p *plan) {
	if p.table != nil {
		s.keepLinks(id, p.links)
		return
	}
	s.linksMu.Lock()
	delete(s.links, id)
	s.linksMu.Unlock()
}

// Migrate places a running job anew (a new node set and table on the
// current fabric; its own nodes may be reused), freeing the old nodes in
// the same transaction. It is how a broken job is brought back.
func (s *Service) Migrate(actor string, id int) (*client.JobRecord, error) {
	return s.MigrateContext(context.Background(), actor, id)
}

// MigrateContext is Migrate with the placement budget and ctx of
// SubmitContext: when either ends, the job stays where it was.
func (s *Service) MigrateContext(ctx context.Context, actor string, id int) (*client.JobRecord, error) {
	s.mu.RLock()
	j, ok := s.jobs[id]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: no running job %d", client.ErrNotFound, id)
	}
	ctx, turn, done, err := s.startPlacement(ctx, j.Nodes)
	if err != nil {
		return nil, err
	}
	defer done()
	selBudget := s.budget()
	for attempt := 0; ; attempt++ {
		sn := s.snapshot(true)
		old, ok := sn.jobs[id]
		if !ok {
			return nil, fmt.Errorf("%w: no running job %d", client.ErrNotFound, id)
		}
		if sn.state == nil {
			return nil, badRequest("this fabric takes no jobs: %s", sn.noJobs)
		}
		oldNodes, err := nodesByName(sn.g, append(slices.Clone(old.Active), old.TransitNodes...))
		if err != nil {
			return nil, err
		}
		sn.state.ReleaseNodes(id, oldNodes)
		algo := alloc.Algo(old.Algo)
		if _, err := alloc.ParseAlgo(old.Algo); err != nil {
			algo = alloc.Improved
		}
		p, err := s.place(ctx, sn, client.JobRequest{Nodes: old.Nodes, Transit: old.TransitLimit}, algo, turn, selBudget)
		if err != nil {
			return nil, err
		}
		j := *old
		j.Active, j.TransitNodes, j.Table, j.Stats = names(sn.g, p.active), names(sn.g, p.transit), p.table, p.stats
		j.Rules, j.Reachable, j.Routing, j.Problem, j.Unreachable = sn.routing.Rules(), true, client.RouteMigrated, "", nil
		j.RoutingNext = ""
		if p.table == nil {
			j.Routing, j.RoutingNext = client.RoutePending, client.RouteMigrated
		}
		j.Selection = selectionOf(p.res)
		err = s.commitMigration(ctx, actor, sn.ver, old, &j, oldNodes, p)
		if errors.Is(err, errStale) && attempt == 0 {
			if b := s.budget(); b > 0 {
				selBudget = max(time.Until(turn.Add(b)), time.Nanosecond)
			}
			continue
		}
		if errors.Is(err, errStale) {
			return nil, fmt.Errorf("%w: the fabric or the job changed twice during the migration; try again", client.ErrConflict)
		}
		if err != nil {
			return nil, err
		}
		if p.table == nil {
			s.kickTables()
		}
		c := j // the caller's copy: &j is the service's record now
		return &c, nil
	}
}

// commitMigration stores a migrated job (under commitMu, as commitJob).
func (s *Service) commitMigration(ctx context.Context, actor string, ver uint64, old, j *client.JobRecord, oldNodes []int, p *plan) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if ctx.Err() != nil {
		return placementCut(ctx)
	}
	if s.fabricVer != ver || s.jobs[j.ID] != old {
		return errStale
	}
	nodes := append(slices.Clone(p.active), p.transit...)
	for _, v := range nodes {
		if o := s.state.Owner(v); (o != 0 && o != j.ID) || s.g.NodeFailed(v) {
			return errStale
		}
	}
	// The new node state, on a copy, before the commit: after it nothing
	// can fail.
	next := s.state.Clone()
	next.ReleaseNodes(j.ID, oldNodes)
	if err := next.Occupy(j.ID, nodes); err != nil {
		return fmt.Errorf("%w: job %d: %v (the job keeps its nodes)", client.ErrConflict, j.ID, err)
	}
	_, err := s.commit(ctx, actor, func(tx *store.Tx) error {
		if err := tx.PutJob(j, p.routes); err != nil {
			return err
		}
		if err := putPlanLoads(tx, j.ID, p); err != nil {
			return err
		}
		return tx.Log("job.migrate", fmt.Sprintf("job %d", j.ID), map[string]any{"from_active": old.Active,
			"from_transit": old.TransitNodes, "active": j.Active, "transit_nodes": j.TransitNodes, "was": old.RoutingName()})
	})
	if err != nil {
		return fmt.Errorf("storage: %w (the job keeps its nodes)", err)
	}
	keepEncoded(j, p.routes)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = next
	s.jobs[j.ID] = j
	s.jobsChanged()
	s.keepPlanLinks(j.ID, p) // (lock order: mu, then linksMu)
	return nil
}

// Release ends a running job and frees its nodes.
func (s *Service) Release(actor string, id int) (*client.JobRecord, error) {
	return s.ReleaseContext(context.Background(), actor, id)
}

// ReleaseContext is Release for a caller that may give up: when ctx ends
// (or the service closes) before the release commits, the job keeps its
// nodes. (Under commitMu, as commitJob; the new node state is computed
// before the commit.)
func (s *Service) ReleaseContext(ctx context.Context, actor string, id int) (*client.JobRecord, error) {
	ctx, end, err := s.beginWrite(ctx, "the job keeps its nodes")
	if err != nil {
		return nil, err
	}
	defer end()
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if ctx.Err() != nil {
		return nil, stopped(ctx, "the job keeps its nodes")
	}
	j, ok := s.jobs[id]
	if !ok {
		return nil, fmt.Errorf("%w: no running job %d", client.ErrNotFound, id)
	}
	next := s.state.Clone()
	if nodes, err := nodesByName(s.g, append(slices.Clone(j.Active), j.TransitNodes...)); err == nil {
		next.ReleaseNodes(id, nodes)
	} else {
		next.Release(id)
	}
	c := *j
	now := s.cfg.Now().UTC()
	c.State, c.Released = client.JobReleased, &now
	// A released job keeps its record and its table's figures (Stats);
	// the table itself, megabytes for large jobs, is dropped, and its
	// pages are given back by the next compaction.
	c.Table, c.StoredRoutes = nil, nil
	_, err = s.commit(ctx, actor, func(tx *store.Tx) error {
		if err := tx.PutJob(&c, nil); err != nil {
			return err
		}
		return tx.Log("job.release", fmt.Sprintf("job %d", id), nil)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: %w (the job keeps its nodes)", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = next
	delete(s.jobs, id)
	s.jobsChanged()
	return &c, nil
}

// Job returns a job (running or released), its table with its routes.
func (s *Service) Job(id int) (*client.JobRecord, error) {
	s.mu.RLock()
	if j, ok := s.jobs[id]; ok {
		s.mu.RUnlock()
		c := *j
		tf, err := fullTable(j)
		if err != nil {
			return nil, err
		}
		c.Table, c.StoredRoutes = tf, nil
		return &c, nil
	}
	s.mu.RUnlock()
	var out *client.JobRecord
	_, err := s.store.View(context.Background(), func(tx *store.Tx) error {
		var err error
		out, err = tx.Job(id)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("%w: no job %d", client.ErrNotFound, id)
	}
	return out, nil
}

// Jobs lists running jobs (all jobs, including released ones, if all).
func (s *Service) Jobs(all bool) ([]*client.JobRecord, error) {
	if !all {
		s.mu.RLock()
		defer s.mu.RUnlock()
		out := make([]*client.JobRecord, 0, len(s.jobs))
		for _, id := range sortedIDs(s.jobs) {
			c := *s.jobs[id]
			c.Table, c.StoredRoutes = nil, nil
			out = append(out, &c)
		}
		return out, nil
	}
	var out []*client.JobRecord
	_, err := s.store.View(context.Background(), func(tx *store.Tx) error {
		return tx.Jobs(false, func(j *client.JobRecord) error {
			j.Table = nil
			out = append(out, j)
			return nil
		})
	})
	return out, err
}

// VerifyJob re-checks a job's stored table on the current fabric.
func (s *Service) VerifyJob(id int) (ok bool, problem string, err error) {
	sn := s.snapshot(false)
	j, found := sn.jobs[id]
	if !found {
		return false, "", fmt.Errorf("%w: no running job %d", client.ErrNotFound, id)
	}
	if j.Routing == client.RoutePending {
		return false, "the job's routing table is pending: it is being built and verified after the answer to its placement or to a failure", nil
	}
	if j.Table == nil {
		return false, "the job has no stored routing table", nil
	}
	if err := tableMatchesJob(sn.g, j); err != nil {
		return false, err.Error(), nil
	}
	if err := verifyEncoded(sn.routing, j.Table, encodedRoutes(j)); err != nil {
		return false, err.Error(), nil
	}
	return true, "", nil
}

// LinkLoads returns, per link, the number of routes of running jobs that
// cross it (either direction).
func (s *Service) LinkLoads() []int {
	return s.loadsEntry().value.([]int)
}

// loadsEntry is the read cache's entry of the link loads of the current
// fabric and jobs, computed.
func (s *Service) loadsEntry() *readEntry {
	e := s.readEntry(&s.reads.loads, true)
	e.once.Do(func() {
		// The sum of each job's loads, kept per job and table
		// (tableLinks): a change of one job walks only its routes.
		sn := s.snapshot(false)
		g := sn.g
		loads := make([]int, g.NumLinks())
		running := make([]*client.JobRecord, 0, len(sn.jobs))
		for _, j := range sn.jobs {
			running = append(running, j)
		}
		s.pruneLinks(running)
		for _, j := range sn.jobs {
			if j.Table != nil {
				jl := s.tableLinks(g, j)
				for i, l := range jl.links {
					loads[l] += int(jl.routes[i])
				}
			}
		}
		e.value = loads
	})
	return e
}

// walkTableLinks calls fn with the link of every step of every route of
// tf on g (newLinkDirs(g).walk).
func walkTableLinks(g *topology.Graph, tf *routing.TableJSON, fn func(link int)) {
	newLinkDirs(g).walk(tf, func(l int, _ bool) { fn(l) })
}

// linkDirs finds the link a step takes: the link out of each node in each
// direction, and the nodes' id strides. It depends only on the fabric's
// structure (failures do not renumber links), so a service builds it once.
type linkDirs struct {
	dims, stride []int
	links        int     // links of the fabric
	out          []int32 // node·2·dims + direction → link, or -1
	// outBA: that step crosses its link from end B to end A (the
	// channel 2·link+1)
	outBA []bool
	// rings: every node has a link in each direction, a step back is the
	// previous node's step forward, and no two nodes share a link
	// forward (a plain torus): then the links a run of steps crosses lie
	// side by side on one ring (linkCounter.countStored).
	rings bool
}

func newLinkDirs(g *topology.Graph) *linkDirs {
	dims := g.Dims()
	nd := len(dims)
	ld := &linkDirs{dims: dims, links: g.NumLinks()}
	if nd > routing.MaxDims {
		return ld // walks nothing
	}
	const none = -1
	out := make([]int32, g.NumNodes()*2*nd)
	ld.outBA = make([]bool, len(out))
	for v := range g.NumNodes() {
		row := out[v*2*nd : (v+1)*2*nd]
		for k := range row {
			row[k] = none
		}
		for _, ch := range g.Out(v) {
			dim, sign := g.Dir(int(ch))
			if dim < 0 || dim >= nd {
				continue
			}
			k := 2 * dim
			if sign < 0 {
				k++
			}
			if row[k] == none {
				row[k] = int32(ch >> 1)
				ld.outBA[v*2*nd+k] = ch&1 == 1
			}
		}
	}
	stride := make([]int, nd)
	for i, n := 0, 1; i < nd; i++ {
		stride[i], n = n, n*dims[i]
	}
	ld.stride, ld.out = stride, out
	ld.rings = ld.plainRings()
	return ld
}

// plainRings reports whether ld's fabric is a plain torus as linkDirs.rings
// says.
func (ld *linkDirs) plainRings() bool {
	nd := len(ld.dims)
	n := len(ld.out) / (2 * nd)
	forward := make([]bool, ld.links)
	for v := range n {
		for dim := range nd {
			x := (v / ld.stride[dim]) % ld.dims[dim]
			prev := v - ld.stride[dim]
			if x == 0 {
				prev = v + (ld.dims[dim]-1)*ld.stride[dim]
			}
			l := ld.out[v*2*nd+2*dim]
			if l < 0 || forward[l] || ld.out[v*2*nd+2*dim+1] != ld.out[prev*2*nd+2*dim] {
				return false
			}
			forward[l] = true
		}
	}
	return true
}

// linkCounter computes tables' jobLinks one after the other, reusing its
// per-link counts.
type linkCounter struct {
	n       []int32 // routes per link, zero between tables
	ab      []int32 // of those, routes crossing it from end A to end B
	touched []int32 // links counted
	// Run mode (linkDirs.rings): diff holds, per forward link, the
	// routes whose runs start there less those that end before it; each
	// ring with a run (rings: base node·dims + dimension, marked in
	// ringSeen) is summed along once at the end; back the same for the
	// runs that go back over the links.
	diff     []int32
	back     []int32
	ringSeen []bool
	rings    []int32
}

// count returns what table tb puts on the links: counted from its stored
// routes (routing.EncodeStoredRoutes) when given, else from its steps.
func (lc *linkCounter) count(ld *linkDirs, tb *routing.TableJSON, routes []byte) jobLinks {
	if len(lc.n) < ld.links {
		lc.n = make([]int32, ld.links)
		lc.ab = make([]int32, ld.links)
	}
	lc.touched = lc.touched[:0]
	if routes != nil {
		lc.countStored(ld, routes, tb)
	} else {
		ld.walk(tb, func(l int, ab bool) {
			lc.add(l)
			if ab {
				lc.ab[l]++
			}
		})
	}
	touched := lc.touched
	slices.Sort(touched)
	e := jobLinks{tb: tb, set: make([]uint64, (ld.links+63)/64), links: slices.Clone(touched), routes: make([]int32, len(touched)), ab: make([]int32, len(touched))}
	for i, l := range touched {
		e.set[l>>6] |= 1 << (l & 63)
		e.routes[i] = lc.n[l]
		e.ab[i] = lc.ab[l]
		lc.n[l], lc.ab[l] = 0, 0
	}
	return e
}

// linksOfLoads is what count gives, from a job's stored link loads (nil
// when they name a link the fabric does not have).
func linksOfLoads(ld *linkDirs, tb *routing.TableJSON, l store.Loads) *jobLinks {
	e := jobLinks{tb: tb, set: make([]uint64, (ld.links+63)/64), links: l.Links, routes: l.Routes, ab: l.AB}
	for _, id := range l.Links {
		if id < 0 || int(id) >= ld.links {
			return nil
		}
		e.set[id>>6] |= 1 << (id & 63)
	}
	return &e
}

// loadsOf is what the store keeps of a job's links (store.Loads).
func loadsOf(e jobLinks) store.Loads {
	return store.Loads{Links: e.links, Routes: e.routes, AB: e.ab}
}

// add counts one route's step over link l.
func (lc *linkCounter) add(l int) {
	if lc.n[l] == 0 {
		lc.touched = append(lc.touched, int32(l))
	}
	lc.n[l]++
}

// countStored counts the routes of table tb stored as b
// (routing.EncodeStoredRoutes, read with routing.EachStoredRoute) that
// cross each link, walking the stored runs of steps from each route's
// source: on a plain torus a run of k steps adds one to a stretch of k
// links of one ring, two entries of lc.diff, summed along the ring at the
// end; else step by step. It counts what walk counts for the decoded table
// (and stops at damaged data).
func (lc *linkCounter) countStored(ld *linkDirs, b []byte, tb *routing.TableJSON) {
	active := tb.Active
	const none = -1
	nd := len(ld.dims)
	if ld.out == nil {
		return
	}
	if ld.rings && len(lc.diff) < ld.links {
		lc.diff = make([]int32, ld.links)
		lc.back = make([]int32, ld.links)
		lc.ringSeen = make([]bool, len(ld.out)/2)
	}
	ids := make([]int32, len(active))
	for i, c := range active {
		ids[i] = none
		if len(c) == nd {
			if v := routing.CoordID(c, ld.dims); v >= 0 {
				ids[i] = int32(v)
			}
		}
	}
	var c, dims, stride [routing.MaxDims]int32
	for i := range nd {
		dims[i], stride[i] = int32(ld.dims[i]), int32(ld.stride[i])
	}
	// A damaged route stops the walk (routing.EachStoredRoute's error); the routes
	// before it are counted.
	_ = routing.EachStoredRoute(b, tb, func(int) {}, func(src, _ int, runs []byte) { // the steps lead to the destination
		v := ids[src]
		if v >= 0 {
			for i, x := range active[src] {
				c[i] = int32(x)
			}
		}
		for _, x := range runs {
			rd, n := routing.RunOf(x)
			d, steps := int32(rd), int32(n)
			if v < 0 || int(d) >= 2*nd {
				break
			}
			dim := d >> 1
			if ld.rings && steps < dims[dim] {
				v = lc.run(ld, v, &c, d, steps, dims[dim], stride[dim])
				continue
			}
			for range steps {
				if l := ld.out[v*int32(2*nd)+d]; l != none {
					lc.add(int(l))
					if !ld.outBA[v*int32(2*nd)+d] {
						lc.ab[l]++
					}
				}
				v = ringStep(v, c[:], dim, d&1 != 0, dims[:], stride[:])
			}
		}
	})
	if ld.rings {
		lc.sumRings(ld)
	}
}

// run counts a run of steps (< size) in direction d from node v at
// coordinates c along a ring of size nodes and id stride (a plain torus):
// the forward links of positions [x, x+steps) going forward from
// position x, [x−steps, x) going back, as differences in lc.diff. It
// returns the node the run ends at (c updated).
func (lc *linkCounter) run(ld *linkDirs, v int32, c *[routing.MaxDims]int32, d, steps, size, stride int32) int32 {
	nd := int32(len(ld.dims))
	dim := d >> 1
	x := c[dim]
	base := v - x*stride
	forward := func(p int32) int32 { return ld.out[(base+p*stride)*2*nd+2*dim] }
	if r := base*nd + dim; !lc.ringSeen[r] {
		lc.ringSeen[r] = true
		lc.rings = append(lc.rings, r)
	}
	from, end := x, x+steps
	if d&1 == 1 {
		from, end = x-steps, x
		if from < 0 {
			from, end = from+size, end+size
		}
	}
	diff := lc.diff
	if d&1 == 1 {
		diff = lc.back
	}
	diff[forward(from)]++
	switch {
	case end < size:
		diff[forward(end)]--
	case end > size:
		diff[forward(0)]++
		diff[forward(end-size)]--
	}
	y := x + steps
	if d&1 == 1 {
		y = x - steps
	}
	if y >= size {
		y -= size
	} else if y < 0 {
		y += size
	}
	c[dim] = y
	return base + y*stride
}

// sumRings turns the differences of the rings with runs into counts.
func (lc *linkCounter) sumRings(ld *linkDirs) {
	nd := int32(len(ld.dims))
	for _, r := range lc.rings {
		lc.ringSeen[r] = false
		base, dim := r/nd, r%nd
		stride, size := int32(ld.stride[dim]), int32(ld.dims[dim])
		fwd, back := int32(0), int32(0)
		for p := range size {
			at := (base+p*stride)*2*nd + 2*dim
			l := ld.out[at]
			fwd += lc.diff[l]
			back += lc.back[l]
			lc.diff[l], lc.back[l] = 0, 0
			if fwd+back > 0 {
				if lc.n[l] == 0 {
					lc.touched = append(lc.touched, l)
				}
				lc.n[l] += fwd + back
				if ld.outBA[at] {
					lc.ab[l] += back
				} else {
					lc.ab[l] += fwd
				}
			}
		}
	}
	lc.rings = lc.rings[:0]
}

// walk calls fn with the link of every step of every route of tf; each
// distinct step list (routes share them) is parsed once.
func (ld *linkDirs) walk(tf *routing.TableJSON, fn func(link int, ab bool)) {
	const none = -1
	dims, stride, out := ld.dims, ld.stride, ld.out
	nd := len(dims)
	if out == nil {
		return
	}
	codes := map[*string][]int8{} // step list → directions (2·dim, +1 if negative)
	parse := func(dirs []string) []int8 {
		if len(dirs) == 0 {
			return nil
		}
		if c, ok := codes[&dirs[0]]; ok && len(c) == len(dirs) {
			return c
		}
		c := make([]int8, len(dirs))
		for k, d := range dirs {
			c[k] = -1
			if len(d) >= 2 {
				if dim := topology.DimIndex(d[1:]); dim >= 0 && dim < nd {
					c[k] = int8(2 * dim)
					if d[0] == '-' {
						c[k]++
					}
				}
			}
		}
		codes[&dirs[0]] = c
		return c
	}
	c := make([]int, nd)
	for _, r := range tf.Routes {
		if len(r.Src) != nd {
			continue
		}
		copy(c, r.Src)
		v := 0
		for i, x := range c {
			if x < 0 || x >= dims[i] {
				v = -1
				break
			}
			v += x * stride[i]
		}
		for _, k := range parse(r.Dirs) {
			if v < 0 || k < 0 {
				break
			}
			if l := out[v*2*nd+int(k)]; l != none {
				fn(int(l), !ld.outBA[v*2*nd+int(k)])
			}
			v = ringStep(v, c, int(k)/2, k%2 != 0, dims, stride)
		}
	}
}

func nodesByName(g *topology.Graph, list []string) ([]int, error) {
	out := make([]int, len(list))
	for i, n := range list {
		v := g.NodeByName(n)
		if v < 0 {
			return nil, fmt.Errorf("%w: unknown node %q", client.ErrNotFound, n)
		}
		out[i] = v
	}
	return out, nil
}

func names(g *topology.Graph, nodes []int) []string {
	out := make([]string, len(nodes))
	for i, v := range nodes {
		out[i] = g.NodeName(v)
	}
	return out
}

func sortedIDs(m map[int]*client.JobRecord) []int {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// ringStep moves node v, at coordinates c, one hop in dimension dim
// (negative if neg) around its ring, and returns the new node id.
func ringStep[T int | int32](v T, c []T, dim T, neg bool, dims, stride []T) T {
	if !neg {
		if c[dim]++; c[dim] == dims[dim] {
			c[dim] = 0
			return v - (dims[dim]-1)*stride[dim]
		}
		return v + stride[dim]
	}
	if c[dim]--; c[dim] < 0 {
		c[dim] = dims[dim] - 1
		return v + (dims[dim]-1)*stride[dim]
	}
	return v - stride[dim]
}
