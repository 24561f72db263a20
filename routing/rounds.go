package routing

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/icn-hpc/icn/internal/par"
)

// The rounds of the BFS table algorithm on a pool of workers.
//
// A round's searches must all end before the next round starts (they
// see the loads at its start), so a round of B sources keeps at most B
// cores busy on searches, and its last search leaves the others idle.
// Everything else a source needs is independent of later rounds and is
// done by whichever worker has nothing better to do, in this order of
// priority:
//
//  1. a search of the current round (the search itself and the load
//     increments of its routes: what the next round needs);
//  2. storing the routes of a searched source in the table (route codes
//     from the search tree);
//  3. verifying the stored routes of a source, a chunk of destinations
//     at a time (Build: the same check as Verify, read from the
//     stored codes);
//
// and the chain of heuristic 1 (the order of the sources) is computed on
// its own goroutine ahead of the rounds that consume it (orderFeed). The
// last worker to finish a round's search adds the round's load
// increments (integer sums) and picks the next round. Every result is a
// sum, a maximum or a write to the table at the pair's own index, so the
// table and the report do not depend on the number of workers or on which
// worker did what.

// srcResult is the search tree of one source from its search until its
// routes are stored.
type srcResult struct {
	si, seq int // local index of the source, position in the order of processing
	ents    []bent
	cnt     []int32
	codes   []uint16
	endE    []int32
	dist    []int32
}

// attach makes the worker search into r's buffers.
func (w *bfsWorker) attach(r *srcResult) {
	w.ents, w.cnt, w.codes, w.endE, w.dist = r.ents, r.cnt, r.codes, r.endE, r.dist
}

// detach gives the (possibly grown) buffers back to r.
func (w *bfsWorker) detach(r *srcResult) {
	r.ents, r.cnt, r.codes, r.endE, r.dist = w.ents, w.cnt, w.codes, w.endE, w.dist
	w.ents, w.cnt, w.codes, w.endE, w.dist = nil, nil, nil, nil, nil
}

// verifyChunk is the number of routes a verification task checks.
const verifyChunk = 1024

// tableJob is one BFS table construction on a pool of workers.
type tableJob struct {
	r    *Router
	bs   *bfsSearch
	tb   *Table
	o    tableRun
	a    *automaton
	B    int
	ws   []*bfsWorker
	load []int32
	feed *orderFeed // the order of heuristic 1, or nil: interleaved chains
	// scheduled marks the sources of the interleaved chains already
	// chosen (written only between rounds)
	scheduled []bool
	rc        *routeChecker // nil: no verification
	vws       []*verifyWorker
	sum, diam []int // per worker

	mu        sync.Mutex
	cond      sync.Cond
	round     []int        // local indices of the current round's sources
	unreached []int        // per position in the round: an unreached active node, or −1
	cands     [][]int32    // per position: interleaved chains' best unscheduled candidates of its row
	nextSlot  int          // next search of the round to hand out
	searching int          // searches of the round not finished
	inflight  int          // searches handed out and not finished
	done      int          // sources searched in the rounds before this one
	stores    []*srcResult // searched sources whose routes are to be stored
	storing   int
	free      []*srcResult
	verifyQ   []int32 // table indices of the sources stored, to verify
	vHead     int     // next source of verifyQ to verify
	vOff      int     // next destination (table index) of that source
	last      bool    // no round after the current one
	waits     int     // times a worker found nothing to do
	err       error
	errSeq    int // the position of the source err belongs to
}

// fail records err for the source at position seq; of several errors
// the one of the earliest source is kept (the one the sequential
// algorithm meets first).
func (j *tableJob) fail(seq int, err error) {
	if j.err == nil || seq < j.errSeq {
		j.err, j.errSeq = err, seq
	}
}

// poolObserved, if set (benchmarks), is told when each pool of workers
// started and ended and how many times its workers had nothing to do.
var poolObserved func(start, end time.Time, waits int)

// run runs the rounds from the first one to the end, with nw workers.
func (j *tableJob) run(first []int, nw int) error {
	if poolObserved != nil {
		start := time.Now()
		defer func() { poolObserved(start, time.Now(), j.waits) }()
	}
	j.cond.L = &j.mu
	j.round = first
	j.unreached = make([]int, j.B)
	j.cands = make([][]int32, j.B)
	j.searching = len(first)
	j.sum, j.diam = make([]int, nw), make([]int, nw)
	if nw == 1 {
		j.work(0)
	} else {
		var wg sync.WaitGroup
		for wi := range nw {
			wg.Add(1)
			go func() {
				defer wg.Done()
				j.work(wi)
			}()
		}
		wg.Wait()
	}
	if j.feed != nil {
		j.feed.close()
	}
	if j.err != nil {
		return j.err
	}
	for wi := range nw {
		j.tb.SumLength += j.sum[wi]
		j.tb.Figures.Diameter = max(j.tb.Figures.Diameter, j.diam[wi])
	}
	return nil
}

// work is one worker: it takes the most urgent task until none is left.
func (j *tableJob) work(wi int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for {
		switch {
		case j.err == nil && j.nextSlot < len(j.round) && len(j.stores) < j.B:
			// (a search waits while B stores are pending, which bounds
			// the search trees kept)
			k := j.nextSlot
			j.nextSlot++
			j.inflight++
			res := j.takeBuffer()
			res.si, res.seq = j.round[k], j.done+k
			j.mu.Unlock()
			j.search(wi, k, res)
			j.mu.Lock()
			j.inflight--
			if j.unreached[k] < 0 {
				j.stores = append(j.stores, res)
			} else {
				j.free = append(j.free, res)
			}
			if j.searching--; j.searching == 0 {
				j.mu.Unlock()
				next, seq, err := j.endRound()
				j.mu.Lock()
				j.publish(next, seq, err)
			}
			j.cond.Broadcast()
		case len(j.stores) > 0:
			res := j.stores[len(j.stores)-1]
			j.stores = j.stores[:len(j.stores)-1]
			j.storing++
			j.mu.Unlock()
			err := j.store(wi, res)
			j.mu.Lock()
			j.storing--
			if err != nil {
				j.fail(res.seq, err)
			} else if j.rc != nil {
				j.verifyQ = append(j.verifyQ, int32(j.bs.ls.tableIndex(res.si)))
			}
			j.free = append(j.free, res)
			j.cond.Broadcast()
		case j.err == nil && j.vHead < len(j.verifyQ):
			if ctx := j.o.ctx; ctx != nil && ctx.Err() != nil {
				j.fail(math.MaxInt, context.Cause(ctx))
				j.cond.Broadcast()
				continue
			}
			a, b0 := int(j.verifyQ[j.vHead]), j.vOff
			b1 := min(b0+verifyChunk, len(j.tb.Active))
			if j.vOff = b1; b1 == len(j.tb.Active) {
				j.vHead, j.vOff = j.vHead+1, 0
			}
			j.mu.Unlock()
			j.rc.checkSource(j.vws[wi], j.tb, a, b0, b1)
			j.mu.Lock()
		case (j.last || j.err != nil) && j.inflight == 0 && j.storing == 0 && len(j.stores) == 0:
			return // a verification task may still run on another worker
		default:
			j.waits++
			j.cond.Wait()
		}
	}
}

// takeBuffer returns a free search buffer (j.mu held).
func (j *tableJob) takeBuffer() *srcResult {
	if n := len(j.free); n > 0 {
		res := j.free[n-1]
		j.free = j.free[:n-1]
		return res
	}
	m := j.bs.ls.m
	return &srcResult{endE: make([]int32, m), dist: make([]int32, m)}
}

// search runs the search of res.si (position k of the round) with the
// round's loads and adds the load increments of its routes to the
// worker's.
func (j *tableJob) search(wi, k int, res *srcResult) {
	w, bs := j.ws[wi], j.bs
	w.attach(res)
	defer w.detach(res)
	j.unreached[k] = -1
	if !bs.run(w, res.si, j.load) {
		// the unreached node with the smallest id, whatever the numbering
		ls := bs.ls
		u := -1
		for v, d := range w.dist {
			if d < 0 && (u < 0 || ls.node[v] < ls.node[u]) {
				u = v
			}
		}
		j.unreached[k] = u
		return
	}
	w.addLoads(res.si)
	if j.feed == nil {
		j.cands[k] = topCandidates(j.cands[k], w.dist, j.scheduled, j.B)
	}
}

// store writes the routes of a searched source into the table.
func (j *tableJob) store(wi int, res *srcResult) error {
	w, bs := j.ws[wi], j.bs
	w.attach(res)
	defer w.detach(res)
	bs.prefixCodes(w)
	m := bs.ls.m
	ti := bs.ls.tableIndex(res.si)
	sum, diam := 0, 0
	for k := 0; k < m; k++ {
		if k == res.si {
			continue
		}
		if err := bs.storeRoute(w, j.tb, pairIndex(m, ti, bs.ls.tableIndex(k)), k, j.a); err != nil {
			return err
		}
		sum += int(w.dist[k])
		diam = max(diam, int(w.dist[k]))
	}
	j.sum[wi] += sum
	j.diam[wi] = max(j.diam[wi], diam)
	return nil
}

// endRound runs when the round's last search has ended (no search runs
// and none is handed out until publish): it reports an unreachable pair,
// adds the round's load increments, and returns the next round, or the
// error that stops the rounds with the position of the source it belongs
// to (a stop belongs to the first source of the next round).
func (j *tableJob) endRound() ([]int, int, error) {
	ls := j.bs.ls
	round := j.round
	for k, si := range round {
		if u := j.unreached[k]; u >= 0 {
			return nil, j.done + k, &UnreachableError{Src: int(ls.node[si]), Dst: int(ls.node[u]), g: j.r.t.g}
		}
	}
	for _, w := range j.ws {
		for _, c := range w.touched {
			j.load[c] += w.delta[c]
			w.delta[c] = 0
		}
		w.touched = w.touched[:0]
	}
	done := j.done + len(round)
	if j.o.progress != nil {
		for k := j.done; k < done; k++ {
			j.o.progress(k+1, ls.m+1)
		}
	}
	if done == ls.m {
		return nil, 0, nil
	}
	if ctx := j.o.ctx; ctx != nil && ctx.Err() != nil {
		return nil, done, context.Cause(ctx)
	}
	if j.feed != nil {
		return j.feed.wait(done, min(done+j.B, ls.m)), 0, nil
	}
	return j.nextRound(), 0, nil
}

// publish starts the next round (j.mu held); an empty one, or an error
// (this one or one met while storing or verifying), ends the rounds.
func (j *tableJob) publish(next []int, seq int, err error) {
	if err != nil {
		j.fail(seq, err)
	}
	if j.err != nil {
		next = nil
	}
	j.done += len(j.round)
	j.round, j.nextSlot, j.searching = next, 0, len(next)
	if len(next) == 0 {
		j.last = true
	}
}

// nextRound picks the sources of the next round of the interleaved
// chains: the k-th is the unscheduled active node farthest from the
// (k mod len(round))-th source of this round (the smallest index among
// equals). Every search left the best B candidates of its row among the
// nodes unscheduled before this choice, which holds the answer: fewer
// than B nodes are scheduled here before any pick.
func (j *tableJob) nextRound() []int {
	round := j.round
	next := make([]int, 0, j.B)
	for k := 0; k < j.B; k++ {
		best := -1
		for _, c := range j.cands[k%len(round)] {
			if !j.scheduled[c] {
				best = int(c)
				break
			}
		}
		if best < 0 {
			break
		}
		j.scheduled[best] = true
		next = append(next, best)
	}
	return next
}

// topCandidates returns in dst the (at most) B unscheduled nodes with the
// largest distance in row, by decreasing distance and then increasing
// index.
func topCandidates(dst []int32, row []int32, scheduled []bool, B int) []int32 {
	dst = dst[:0]
	for k, d := range row {
		if scheduled[k] || d < 0 || (len(dst) == B && d <= row[dst[B-1]]) {
			continue
		}
		p := len(dst)
		for p > 0 && row[dst[p-1]] < d {
			p--
		}
		if len(dst) < B {
			dst = append(dst, 0)
		}
		copy(dst[p+1:], dst[p:len(dst)-1])
		dst[p] = int32(k)
	}
	return dst
}

// orderFeed computes the order of heuristic 1 on its own goroutine: the
// chain "next = farthest unprocessed from the current one" (next gives
// it) is sequential, so it runs ahead of the rounds that take it.
type orderFeed struct {
	mu    sync.Mutex
	cond  sync.Cond
	order []int
	n     int // entries of order ready
	stop  bool
}

func newOrderFeed(m int, next func(cur int, done []bool) int) *orderFeed {
	f := &orderFeed{order: make([]int, m)}
	f.cond.L = &f.mu
	go f.produce(next)
	return f
}

func (f *orderFeed) produce(next func(cur int, done []bool) int) {
	m := len(f.order)
	done := make([]bool, m)
	cur := 0
	for i := 0; i < m; i++ {
		f.order[i] = cur
		done[cur] = true
		f.mu.Lock()
		f.n = i + 1
		stop := f.stop
		f.cond.Broadcast()
		f.mu.Unlock()
		if stop || i+1 == m {
			return
		}
		cur = next(cur, done)
	}
}

// wait returns order[lo:hi] once it is computed.
func (f *orderFeed) wait(lo, hi int) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.n < hi {
		f.cond.Wait()
	}
	return f.order[lo:hi]
}

// close stops the computation (the table is done or failed).
func (f *orderFeed) close() {
	f.mu.Lock()
	f.stop = true
	f.mu.Unlock()
}

// defaultPoolMinRoutes: tables of fewer routes are built by one worker
// (the caller's goroutine).
const defaultPoolMinRoutes = 4096

// tableWorkers is the number of workers of a table of m active nodes:
// one for small tables, else all allowed.
func tableWorkers(workers, m, minRoutes int) int {
	if m*(m-1) < minRoutes {
		return 1
	}
	return par.Workers(workers)
}
