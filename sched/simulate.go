package sched

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
)

type running struct {
	end    float64 // actual end
	reqEnd float64 // end by the requested time (what the scheduler knows)
	index  int     // into records
}

type endHeap []running

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	return h[i].index < h[j].index
}
func (h endHeap) Swap(i, j int)    { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)      { *h = append(*h, x.(running)) }
func (h *endHeap) Pop() (x any)    { old := *h; x = old[len(old)-1]; *h = old[:len(old)-1]; return }
func (h endHeap) peekEnd() float64 { return h[0].end }

// boundedSlowdownThreshold is the τ of the bounded slowdown (10 s).
const boundedSlowdownThreshold = 10.0

// reservation is EASY's promise to the head job: it will start at shadow
// on the nodes of its plan, which later jobs must leave alone if they run
// past shadow.
//
// The plan is chosen only when a job that would run past shadow asks for
// it (planOf): many reservations are replaced before any job does, and
// accasim's rule never uses one. It is chosen on the machine the search
// found it on (after), kept as it was, so it is the plan the search would
// have chosen at once: a decision depends only on the machine's state and
// the request.
type reservation struct {
	head   int // index into jobs
	shadow float64
	plan   []int
	// after is the machine on which the plan is to be chosen (nil once
	// it is chosen, or when there is none).
	after Machine
	stale bool // a job ended before its requested time since
}

// simulation is the state of one run of Simulate.
type simulation struct {
	cfg   Config
	m     Machine
	empty Machine // the machine as it was at time 0, for "can it ever run?"
	jobs  []Job
	recs  []JobRecord
	rep   *Report
	queue []int // indices into jobs, in submit order
	run   endHeap
	next  int // next job to arrive
	t     float64
	// failed[m] caches sizes that could not be placed since the last
	// release (fewer available nodes never make a set placeable);
	// failedAvoid the same for placements that keep the reservation.
	failed, failedAvoid map[int]bool
	everOK              map[int]bool // size → placeable on the empty machine
	resv                *reservation // valid until a job ends or the head starts
	settled             int
	// blocked (RuleAccasim) says the queue's head could not start; it is
	// tried again at the first event at or after retryAt.
	blocked bool
	retryAt float64
}

// Simulate runs the stream through the cluster. The machine state (in
// cfg.Machine, else cfg.State) is modified and ends empty again.
//
// Each event: arriving jobs join the queue, a scheduling pass starts what
// the policy allows (a job that cannot be placed even on the empty
// machine is reported the first time it is tried and leaves the queue),
// and time advances to the next arrival or end.
func Simulate(cfg Config, stream *Stream) (*Report, error) {
	s, err := newSimulation(cfg, stream)
	if err != nil {
		return nil, err
	}
	for s.pending() {
		if err := s.admitArrivals(); err != nil {
			return nil, err
		}
		if !s.passDue() {
			s.advance()
			continue
		}
		if err := s.schedulePass(); err != nil {
			return nil, err
		}
		if len(s.run) == 0 && len(s.queue) > 0 && !s.arrivalDue() && !s.waitingForRetry() {
			return nil, fmt.Errorf("internal error: job %d fits the empty machine but was not placed on it", s.jobs[s.queue[0]].ID)
		}
		s.advance()
	}
	s.summarize()
	return s.rep, nil
}

// newSimulation checks the configuration and the jobs.
func newSimulation(cfg Config, stream *Stream) (*simulation, error) {
	m, err := cfg.machine()
	if err != nil {
		return nil, err
	}
	if err := cfg.Policy.check(); err != nil {
		return nil, err
	}
	if err := stream.Validate(); err != nil {
		return nil, err
	}
	s := &simulation{cfg: cfg, m: m, empty: m.Clone(), jobs: stream.Jobs,
		failed: map[int]bool{}, failedAvoid: map[int]bool{}, everOK: map[int]bool{}}
	s.recs = make([]JobRecord, len(s.jobs))
	for i, j := range s.jobs {
		s.recs[i] = JobRecord{ID: j.ID, Submit: j.Submit, Start: -1, End: -1}
	}
	s.rep = &Report{Jobs: len(s.jobs), Machine: m.Describe(), SkippedJobs: append([]Skipped(nil), stream.Skipped...)}
	if len(s.jobs) > 0 {
		s.t = s.jobs[0].Submit
	}
	return s, nil
}

func (c *Config) machine() (Machine, error) {
	if c.Machine != nil {
		return c.Machine, nil
	}
	if c.State == nil || c.Router == nil {
		return nil, fmt.Errorf("simulation needs a machine (or a machine state and a router)")
	}
	tm := NewTorusMachine(c.State, c.Router, c.Algo, c.Transit, c.SelectWorkers)
	tm.Observe = c.Observe
	tm.Budget = c.Budget
	return tm, nil
}

func (s *simulation) pending() bool {
	return s.next < len(s.jobs) || len(s.queue) > 0 || len(s.run) > 0
}

func (s *simulation) arrivalDue() bool {
	return s.next < len(s.jobs) && s.jobs[s.next].Submit <= s.t
}

func (s *simulation) settle() {
	s.settled++
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.settled, len(s.jobs))
	}
}

// admitArrivals queues the jobs submitted by now.
func (s *simulation) admitArrivals() error {
	for s.arrivalDue() {
		s.queue = append(s.queue, s.next)
		s.next++
	}
	return nil
}

// dropIfNeverPlaceable skips queue[qi] if it has no placement even on
// the empty machine (with its failures), naming why. The check is made
// the first time the job cannot start, once per size: the schedule is the
// same as if it were made on arrival (a job matters to the others only
// when it is tried), and jobs that start at once never pay for it.
func (s *simulation) dropIfNeverPlaceable(qi int) (bool, error) {
	i := s.queue[qi]
	j := s.jobs[i]
	ok, err := s.everPlaceable(j)
	if err != nil || ok {
		return false, err
	}
	reason := s.m.Unplaceable(j)
	s.recs[i].Skipped = reason
	s.rep.SkippedJobs = append(s.rep.SkippedJobs, Skipped{ID: j.ID, Line: j.Line, Reason: reason})
	s.queue = append(s.queue[:qi], s.queue[qi+1:]...)
	if qi == 0 {
		s.resv = nil
	}
	s.settle()
	return true, nil
}

func (s *simulation) everPlaceable(j Job) (bool, error) {
	if ok, seen := s.everOK[j.Nodes]; seen {
		return ok, nil
	}
	ok, seconds, err := placeableNow(s.empty, j)
	if err != nil {
		return false, err
	}
	s.rep.AllocSeconds += seconds
	s.everOK[j.Nodes] = ok
	return ok, nil
}

// placeableNow reports whether j has a placement on m as it is: by the
// machine's cheaper existence test when it has one (node selection that
// stops at the first reachable set), else by choosing a placement.
func placeableNow(m Machine, j Job) (bool, float64, error) {
	if f, ok := m.(fitter); ok {
		return f.Fits(j)
	}
	p, ok, err := m.Place(j, nil)
	return ok, p.Seconds, err
}

// schedulePass starts jobs until the policy allows no more.
func (s *simulation) schedulePass() error {
	if s.cfg.Policy.accasim() {
		return s.startAccasim()
	}
	for {
		var started bool
		var err error
		if s.cfg.Policy.Backfill {
			started, err = s.startEASY()
		} else {
			started, err = s.startFromWindow()
		}
		if err != nil || !started {
			return err
		}
	}
}

// startFromWindow starts the first job of the window that fits now.
func (s *simulation) startFromWindow() (bool, error) {
	w := min(s.cfg.Policy.Window, len(s.queue))
	for qi := 0; qi < w; qi++ {
		if ok, err := s.tryStart(qi, nil); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// startEASY starts the head job if it fits; otherwise it reserves the
// head's earliest placement and starts the first later job (within the
// window or beyond it) that keeps the reservation: it ends, by its
// requested time, before the head's start, or it avoids the head's nodes.
func (s *simulation) startEASY() (bool, error) {
	if len(s.queue) == 0 {
		return false, nil
	}
	if ok, err := s.tryStart(0, nil); err != nil || ok {
		return ok, err
	}
	r, err := s.reserve()
	if err != nil {
		return false, err
	}
	free := s.m.FreeCount()
	outside := -1 // free nodes outside the reserved ones, once the plan is known
	last, window := len(s.queue), s.cfg.Policy.Rule == RuleWindow
	if window {
		last = min(last, s.cfg.Policy.Window)
	}
	for qi := 1; qi < last; qi++ {
		j := s.jobs[s.queue[qi]]
		if j.Nodes > free {
			continue
		}
		var avoid []int
		if s.t+s.plannedTime(j) > r.shadow && window {
			continue
		}
		if s.t+s.plannedTime(j) > r.shadow {
			plan, err := s.planOf(r)
			if err != nil {
				return false, err
			}
			if outside < 0 {
				outside = free
				for _, v := range plan {
					if s.m.Available(v) {
						outside--
					}
				}
			}
			if j.Nodes > outside {
				continue
			}
			avoid = plan
		}
		if ok, err := s.tryStart(qi, avoid); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// reserve returns the head job's reservation: the earliest time at which
// it has a placement when the running jobs end in order of their
// requested end times, and that placement.
//
// A reservation outlives the end of jobs that ran for their whole
// requested time (the states the search would look at are those it saw,
// minus nothing, plus jobs started since, which keep the reservation).
// A job that ends early can only move the reservation earlier: the search
// is then repeated among earlier times only, the old one still holding.
func (s *simulation) reserve() (*reservation, error) {
	head := s.queue[0]
	old := s.resv
	if old != nil && old.head == head && !old.stale {
		return old, nil
	}
	rels := make([]running, len(s.run))
	copy(rels, s.run)
	sort.Slice(rels, func(a, b int) bool {
		if rels[a].reqEnd != rels[b].reqEnd {
			return rels[a].reqEnd < rels[b].reqEnd
		}
		return rels[a].index < rels[b].index
	})
	// Placeability only grows as jobs end: bisect over the release order,
	// releasing whole groups of equal requested end times.
	var cuts []int // prefix lengths that end a group
	for k := 1; k <= len(rels); k++ {
		if k == len(rels) || rels[k].reqEnd != rels[k-1].reqEnd {
			cuts = append(cuts, k)
		}
	}
	r := &reservation{head: head, shadow: math.Inf(1)}
	lo, hi := s.enoughFree(rels, cuts), len(cuts)-1
	if old != nil && old.head == head && !math.IsInf(old.shadow, 1) {
		r.shadow, r.plan, r.after = old.shadow, old.plan, old.after
		for hi >= 0 && rels[cuts[hi]-1].reqEnd >= old.shadow {
			hi--
		}
	} else {
		clear(s.failedAvoid)
	}
	first := -1 // the earliest cut found with a placement
	for lo <= hi {
		mid := (lo + hi) / 2
		ok, err := s.fitsAfter(rels[:cuts[mid]])
		if err != nil {
			return nil, err
		}
		if ok {
			first, hi = mid, mid-1
		} else {
			lo = mid + 1
		}
	}
	if first >= 0 {
		k := cuts[first]
		r.shadow, r.plan, r.after = math.Max(s.t, rels[k-1].reqEnd), nil, s.machineAfter(rels[:k])
		clear(s.failedAvoid)
	}
	s.resv = r
	if s.cfg.onReserve != nil {
		s.cfg.onReserve(head, r.shadow)
	}
	return r, nil
}

// enoughFree returns the first cut after which enough nodes are free for
// the head job (a necessary condition for a placement).
func (s *simulation) enoughFree(rels []running, cuts []int) int {
	need, free, k := s.jobs[s.queue[0]].Nodes, s.m.FreeCount(), 0
	for ci, c := range cuts {
		for ; k < c; k++ {
			free += len(s.recs[rels[k].index].nodeIDs)
		}
		if free >= need {
			return ci
		}
	}
	return len(cuts)
}

// planOf returns the reservation's plan, choosing it the first time: the
// head job's placement on the machine the reservation was found on.
func (s *simulation) planOf(r *reservation) ([]int, error) {
	if r.after == nil {
		return r.plan, nil
	}
	c := r.after
	place := c.Place
	if ex, can := c.(exhaustivePlacer); can {
		// The reservation's plan must exist wherever fitsAfter (no
		// budget) found one: it is planned without the budget.
		place = ex.PlaceExhaustive
	}
	p, ok, err := place(s.jobs[r.head], nil)
	s.rep.AllocSeconds += p.Seconds
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("internal error: job %d fits at %v but has no placement", s.jobs[r.head].ID, r.shadow)
	}
	r.plan, r.after = p.Nodes, nil
	return r.plan, nil
}

// fitsAfter reports whether the head job has a placement on a copy of
// the machine from which the given running jobs have gone (planOf would
// find one there), asking the machine only that when it can.
func (s *simulation) fitsAfter(gone []running) (bool, error) {
	ok, secs, err := placeableNow(s.machineAfter(gone), s.jobs[s.queue[0]])
	s.rep.AllocSeconds += secs
	return ok, err
}

// machineAfter is a copy of the machine from which the given running
// jobs have gone.
func (s *simulation) machineAfter(gone []running) Machine {
	c := s.m.Clone()
	for _, r := range gone {
		c.Release(s.jobs[r.index].ID, s.recs[r.index].nodeIDs)
	}
	return c
}

// tryStart starts queue[qi] now if it has a placement that avoids the
// given nodes. It also reports true (the queue changed) if the job was
// dropped because it can never be placed.
func (s *simulation) tryStart(qi int, avoid []int) (bool, error) {
	ji := s.queue[qi]
	j := s.jobs[ji]
	cache := s.failed
	if avoid != nil {
		cache = s.failedAvoid
	}
	if cache[j.Nodes] {
		return s.cannotStart(qi, avoid)
	}
	p, ok, err := s.m.Place(j, avoid)
	if err != nil {
		return false, err
	}
	s.rep.Decisions++
	s.rep.AllocSeconds += p.Seconds
	if p.Cut {
		s.rep.DecisionsCut++
	}
	if p.Settled {
		s.rep.DecisionsSettled++
	}
	if !ok && p.Cut && len(s.run) == 0 {
		// The budget ended before any set was found, and no running
		// job will end to change the machine: waiting cannot help, so
		// this decision is made without the budget.
		if ex, can := s.m.(exhaustivePlacer); can {
			var q Placement
			if q, ok, err = ex.PlaceExhaustive(j, avoid); err != nil {
				return false, err
			}
			s.rep.Decisions++
			s.rep.AllocSeconds += q.Seconds
			p = q
		}
	}
	if !ok {
		if !p.Cut {
			// A cut answer proves nothing: the size is tried again.
			cache[j.Nodes] = true
		}
		return s.cannotStart(qi, avoid)
	}
	if err := s.m.Occupy(j.ID, p.Nodes); err != nil {
		return false, fmt.Errorf("internal error: placement chose unavailable nodes: %v", err)
	}
	s.everOK[j.Nodes] = true // placed on a busier machine, so on the empty one
	rec := &s.recs[ji]
	delay := s.startDelay(j)
	rec.Start, rec.End = s.t, s.t+delay+j.Runtime
	rec.Active = p.Active
	rec.nodeIDs = p.Nodes
	heap.Push(&s.run, running{end: rec.End, reqEnd: s.t + s.plannedTime(j), index: ji})
	s.queue = append(s.queue[:qi], s.queue[qi+1:]...)
	if qi == 0 {
		s.resv = nil
	}
	s.settle()
	return true, nil
}

// cannotStart handles a job that cannot start now: without look-ahead
// constraints it may be one that never can.
func (s *simulation) cannotStart(qi int, avoid []int) (bool, error) {
	if avoid != nil {
		return false, nil
	}
	return s.dropIfNeverPlaceable(qi)
}

// advance moves time to the next arrival or end and releases the jobs
// that have ended.
func (s *simulation) advance() {
	nt := math.Inf(1)
	if s.next < len(s.jobs) {
		nt = s.jobs[s.next].Submit
	}
	if len(s.run) > 0 {
		nt = math.Min(nt, s.run.peekEnd())
	}
	if len(s.queue) > 0 && s.cfg.Policy.Interval > 0 {
		nt = math.Min(nt, s.nextPass())
	}
	if math.IsInf(nt, 1) && s.waitingForRetry() {
		// Nothing runs and nothing arrives: the blocked head waits for
		// its retry time (accasim steps its clock up to it).
		nt = s.retryAt
	}
	if math.IsInf(nt, 1) {
		return
	}
	s.t = nt
	for len(s.run) > 0 && s.run.peekEnd() <= s.t {
		r := heap.Pop(&s.run).(running)
		s.m.Release(s.jobs[r.index].ID, s.recs[r.index].nodeIDs)
		clear(s.failed)
		clear(s.failedAvoid)
		if s.resv != nil && r.end < r.reqEnd {
			s.resv.stale = true
		}
	}
}

// passDue reports whether a scheduling pass happens now: at every event,
// or with a pass interval only at its multiples.
func (s *simulation) passDue() bool {
	iv := s.cfg.Policy.Interval
	if iv <= 0 {
		return true
	}
	k := math.Round(s.t / iv)
	return math.Abs(s.t-k*iv) <= 1e-9*math.Max(1, math.Abs(s.t))
}

// nextPass is the first multiple of the pass interval after now.
func (s *simulation) nextPass() float64 {
	iv := s.cfg.Policy.Interval
	k := math.Floor(s.t/iv+1e-9) + 1
	return k * iv
}

// startDelay is job j's launch delay (Config.StartDelay), 0 without one;
// a negative or non-finite delay counts as 0.
func (s *simulation) startDelay(j Job) float64 {
	if s.cfg.StartDelay == nil {
		return 0
	}
	d := s.cfg.StartDelay(j)
	if !(d > 0) || math.IsInf(d, 1) {
		return 0
	}
	return d
}

// summarize computes the report's figures from the schedule.
func (s *simulation) summarize() {
	rep, n := s.rep, s.m.Size()
	busy := make([]float64, n)
	first, last := math.Inf(1), 0.0
	var sumT, sumW, sumB float64
	for i := range s.recs {
		r, j := &s.recs[i], s.jobs[i]
		first = math.Min(first, j.Submit)
		if r.Skipped != "" || r.Start < 0 {
			continue
		}
		rep.JobsDone++
		last = math.Max(last, r.End)
		wait := r.Start - j.Submit
		sumW += wait
		sumT += wait / j.Requested
		sumB += math.Max((wait+j.Runtime)/math.Max(j.Runtime, boundedSlowdownThreshold), 1)
		for _, v := range r.nodeIDs[:r.Active] {
			busy[v] += j.Runtime
		}
		if s.m.Coord(0) != nil {
			r.Nodes = s.coords(r.nodeIDs)
		}
	}
	rep.JobsSkipped = len(rep.SkippedJobs)
	if rep.JobsDone > 0 {
		rep.Makespan = last - first
		total := 0.0
		for _, b := range busy {
			total += b
		}
		if rep.Makespan > 0 {
			rep.Utilization = total / (rep.Makespan * float64(n))
		}
		k := float64(rep.JobsDone)
		rep.TMean, rep.MeanWait, rep.MeanBSLD = sumT/k, sumW/k, sumB/k
	}
	rep.Schedule = s.recs
}

// coords gives each node's coordinates.
func (s *simulation) coords(ids []int) [][]int {
	out := make([][]int, len(ids))
	for k, v := range ids {
		out[k] = append([]int(nil), s.m.Coord(v)...)
	}
	return out
}
