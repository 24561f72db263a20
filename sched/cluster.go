package sched

import (
	"container/heap"
	"fmt"
	"math"
	"sort"

	"github.com/icn-hpc/icn/alloc"
)

// Policy is the queue policy: a window of W jobs from the head of the
// queue is scanned for one that fits (W = 1 is FCFS), optionally with EASY
// backfilling, which reserves the earliest start for the head job using
// requested times and lets later jobs start now if they do not delay it.
type Policy struct {
	Window   int  `json:"window"`
	Backfill bool `json:"easy_backfill"`
}

// Config describes one cluster simulation.
type Config struct {
	State   *alloc.State  // machine state at time 0 (failed nodes/links included)
	Router  alloc.Router  // routing questions for node selection
	Policy  Policy        //
	Algo    alloc.Algo    // improved or baseline
	Transit func(int) int // transit limit for a job of m nodes (nil: 0)
	// Observe, if set, is called before every allocation attempt with the
	// state and request (used to count the solutions each algorithm finds).
	Observe func(st *alloc.State, req alloc.Request)
	// SelectWorkers bounds the goroutines of one allocation decision
	// (0 = all cores; experiments that run simulations in parallel use 1).
	SelectWorkers int
	// Progress, if set, is called each time a job starts or is skipped,
	// with the count so far and the number of jobs.
	Progress func(done, total int)
}

// JobRecord is the outcome of one job.
type JobRecord struct {
	ID      int     `json:"id"`
	Submit  float64 `json:"submit"`
	Start   float64 `json:"start"`
	End     float64 `json:"end"`
	Nodes   [][]int `json:"nodes"`             // coordinates of every allocated node (active first)
	Active  int     `json:"active"`            // how many of Nodes are active
	Skipped string  `json:"skipped,omitempty"` // why it never ran
	nodeIDs []int
}

// Report summarises a simulation.
type Report struct {
	Jobs         int         `json:"jobs"`
	JobsDone     int         `json:"jobs_done"`
	JobsSkipped  int         `json:"jobs_skipped"`
	Makespan     float64     `json:"makespan"`
	Utilization  float64     `json:"utilization"`
	TMean        float64     `json:"t_mean"`
	MeanWait     float64     `json:"mean_wait"`
	MeanBSLD     float64     `json:"mean_bounded_slowdown"`
	Decisions    int         `json:"decisions"`
	Schedule     []JobRecord `json:"-"`
	SkippedJobs  []Skipped   `json:"skipped,omitempty"`
	AllocSeconds float64     `json:"alloc_seconds"`
}

type running struct {
	end    float64 // actual end
	reqEnd float64 // end by the requested time (what the scheduler knows)
	index  int     // into records
	nodes  int
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

// Simulate runs the stream through the cluster. The machine state in cfg
// is modified (it ends empty again).
func Simulate(cfg Config, stream *Stream) (*Report, error) {
	st := cfg.State
	if st == nil || cfg.Router == nil {
		return nil, fmt.Errorf("simulation needs a machine state and a router")
	}
	if cfg.Policy.Window < 1 {
		return nil, fmt.Errorf("window must be at least 1, got %d", cfg.Policy.Window)
	}
	transit := cfg.Transit
	if transit == nil {
		transit = func(int) int { return 0 }
	}
	sel := alloc.NewSelector(st)
	sel.Workers = cfg.SelectWorkers
	jobs := stream.Jobs
	recs := make([]JobRecord, len(jobs))
	for i, j := range jobs {
		if j.Nodes < 1 || j.Runtime <= 0 || j.Submit < 0 || math.IsNaN(j.Submit) {
			return nil, fmt.Errorf("job %d is invalid (nodes %d, runtime %g, submit %g)", j.ID, j.Nodes, j.Runtime, j.Submit)
		}
		recs[i] = JobRecord{ID: j.ID, Submit: j.Submit, Start: -1, End: -1}
	}
	rep := &Report{Jobs: len(jobs), SkippedJobs: append([]Skipped(nil), stream.Skipped...)}
	settled := 0 // jobs started or skipped
	progress := func() {
		settled++
		if cfg.Progress != nil {
			cfg.Progress(settled, len(jobs))
		}
	}
	var queue []int // indices into jobs, in submit order
	var run endHeap
	next := 0
	t := 0.0
	if len(jobs) > 0 {
		t = jobs[0].Submit
	}
	// failed[m] caches sizes that could not be placed since the last
	// release: with fewer available nodes they cannot be placed either.
	failed := map[int]bool{}
	tryStart := func(qi int) (bool, error) {
		j := jobs[queue[qi]]
		if failed[j.Nodes] {
			return false, nil
		}
		req := alloc.Request{Nodes: j.Nodes, Transit: transit(j.Nodes), Algo: cfg.Algo, Fast: true}
		if cfg.Observe != nil {
			cfg.Observe(st, req)
		}
		res, err := sel.Select(st, cfg.Router, req)
		if err != nil {
			return false, err
		}
		rep.Decisions++
		rep.AllocSeconds += res.Seconds
		if res.Chosen == nil {
			failed[j.Nodes] = true
			return false, nil
		}
		nodes := append(append([]int(nil), res.Chosen.Active...), res.Chosen.Transit...)
		if err := st.Occupy(j.ID, nodes); err != nil {
			return false, fmt.Errorf("internal error: allocator chose unavailable nodes: %v", err)
		}
		rec := &recs[queue[qi]]
		rec.Start, rec.End = t, t+j.Runtime
		rec.Active = len(res.Chosen.Active)
		rec.nodeIDs = nodes
		heap.Push(&run, running{end: rec.End, reqEnd: t + j.Requested, index: queue[qi], nodes: len(nodes)})
		queue = append(queue[:qi], queue[qi+1:]...)
		progress()
		return true, nil
	}
	for next < len(jobs) || len(queue) > 0 || len(run) > 0 {
		for next < len(jobs) && jobs[next].Submit <= t {
			queue = append(queue, next)
			next++
		}
		// Scheduling pass.
		for {
			started := false
			w := min(cfg.Policy.Window, len(queue))
			for qi := 0; qi < w; qi++ {
				ok, err := tryStart(qi)
				if err != nil {
					return nil, err
				}
				if ok {
					started = true
					break
				}
			}
			if !started && cfg.Policy.Backfill && len(queue) > 1 {
				ok, err := backfill(st, jobs, queue, run, t, tryStart)
				if err != nil {
					return nil, err
				}
				started = ok
			}
			if !started {
				break
			}
		}
		// A job that cannot start on an idle machine with no arrivals
		// pending never will: skip it and report why.
		if len(run) == 0 && len(queue) > 0 && (next >= len(jobs) || jobs[next].Submit > t) {
			qi := 0
			j := jobs[queue[qi]]
			reason := fmt.Sprintf("cannot be placed even on the idle machine by the %s algorithm (%d nodes, transit ≤ %d)", cfg.Algo, j.Nodes, transit(j.Nodes))
			recs[queue[qi]].Skipped = reason
			rep.SkippedJobs = append(rep.SkippedJobs, Skipped{ID: j.ID, Reason: reason})
			queue = queue[1:]
			progress()
			continue
		}
		// Advance to the next event.
		nt := math.Inf(1)
		if next < len(jobs) {
			nt = jobs[next].Submit
		}
		if len(run) > 0 {
			nt = math.Min(nt, run.peekEnd())
		}
		if math.IsInf(nt, 1) {
			break
		}
		t = nt
		for len(run) > 0 && run.peekEnd() <= t {
			r := heap.Pop(&run).(running)
			st.ReleaseNodes(jobs[r.index].ID, recs[r.index].nodeIDs)
			clear(failed)
		}
	}
	// Summaries.
	dims := st.Dims()
	busy := make([]float64, st.N())
	first, last := math.Inf(1), 0.0
	var sumT, sumW, sumB float64
	for i, r := range recs {
		j := jobs[i]
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
		for k, v := range r.nodeIDs {
			if k < r.Active {
				busy[v] += j.Runtime
			}
		}
		c := make([]int, len(dims))
		for _, v := range r.nodeIDs {
			decode(v, dims, c)
			recs[i].Nodes = append(recs[i].Nodes, append([]int(nil), c...))
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
			rep.Utilization = total / (rep.Makespan * float64(st.N()))
		}
		k := float64(rep.JobsDone)
		rep.TMean, rep.MeanWait, rep.MeanBSLD = sumT/k, sumW/k, sumB/k
	}
	rep.Schedule = recs
	return rep, nil
}

// backfill implements EASY: reserve the head job's earliest start from the
// requested end times of running jobs (by node count), then start any
// queued job that fits now and either ends before the reservation or uses
// only nodes the head job will not need.
func backfill(st *alloc.State, jobs []Job, queue []int, run endHeap, t float64, tryStart func(int) (bool, error)) (bool, error) {
	head := jobs[queue[0]]
	free := st.FreeCount()
	// Requested end times, not actual ones: the scheduler does not know
	// the real runtimes.
	rels := make([]running, len(run))
	copy(rels, run)
	sort.Slice(rels, func(a, b int) bool { return rels[a].reqEnd < rels[b].reqEnd })
	shadow, avail := math.Inf(1), free
	for _, r := range rels {
		avail += r.nodes
		if avail >= head.Nodes {
			shadow = math.Max(t, r.reqEnd)
			break
		}
	}
	extra := avail - head.Nodes
	for qi := 1; qi < len(queue); qi++ {
		j := jobs[queue[qi]]
		if j.Nodes > free {
			continue
		}
		if t+j.Requested <= shadow || j.Nodes <= extra {
			ok, err := tryStart(qi)
			if err != nil || ok {
				return ok, err
			}
		}
	}
	return false, nil
}

func decode(v int, dims, c []int) {
	for i, d := range dims {
		c[i] = v % d
		v /= d
	}
}

// CheckSchedule verifies that no node was held by two jobs at once and that
// no job started before it was submitted. It returns the first violation.
func CheckSchedule(n int, recs []JobRecord) error {
	type ev struct {
		t     float64
		start bool
		rec   int
	}
	var evs []ev
	for i, r := range recs {
		if r.Start < 0 || r.Skipped != "" {
			continue
		}
		if r.Start < r.Submit {
			return fmt.Errorf("job %d starts at %g before its submission at %g", r.ID, r.Start, r.Submit)
		}
		evs = append(evs, ev{r.Start, true, i}, ev{r.End, false, i})
	}
	sort.Slice(evs, func(a, b int) bool {
		if evs[a].t != evs[b].t {
			return evs[a].t < evs[b].t
		}
		return !evs[a].start && evs[b].start // ends before starts at the same time
	})
	holder := make([]int, n)
	for i := range holder {
		holder[i] = -1
	}
	for _, e := range evs {
		for _, v := range recs[e.rec].nodeIDs {
			if e.start {
				if holder[v] >= 0 {
					return fmt.Errorf("node %d given to job %d while job %d holds it", v, recs[e.rec].ID, recs[holder[v]].ID)
				}
				holder[v] = e.rec
			} else if holder[v] == e.rec {
				holder[v] = -1
			}
		}
	}
	return nil
}
