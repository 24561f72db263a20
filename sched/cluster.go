package sched

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/icn-hpc/icn/alloc"
)

// Policy is the queue policy: a window of W jobs from the head of the
// queue is scanned for one that fits (W = 1 is FCFS), optionally with
// backfilling by one of two rules (Rule):
//
//   - RuleEASY (the default): EASY backfilling, which reserves the
//     earliest start for the head job using requested times and lets later
//     jobs start now only if they do not delay it;
//   - RuleAccasim: the rule of accasim's EASYBackfilling scheduler, in
//     which the head job's reservation time only says when the head is
//     tried again and any later job that fits now starts (see
//     startAccasim). It takes a window of 1.
//   - RuleWindow: the window keeps a reservation for its head (the
//     earliest time the head has a placement, as EASY's); a later job of
//     the window starts now only if it fits and ends, by its requested
//     time, no later than the reservation. It then never holds a node at
//     the reservation, so the head starts by then whatever nodes the
//     later job got: the rule needs no say in where jobs go, which is
//     why icn slurm agent (whose placements the fabric manager chooses)
//     uses it. Jobs outside the window wait.
type Policy struct {
	Window   int    `json:"window"`
	Backfill bool   `json:"easy_backfill"`
	Rule     string `json:"backfill_rule,omitempty"`
	// Interval, when positive, makes scheduling passes happen only at
	// multiples of it (trace seconds), as a scheduler that wakes
	// periodically does (icn's Slurm agent every round); 0: a pass at
	// every arrival and end.
	Interval float64 `json:"pass_interval,omitempty"`
}

// Backfilling rules (Policy.Rule).
const (
	RuleEASY    = "easy"         // EASY: later jobs never delay the head's reservation
	RuleAccasim = "easy-accasim" // accasim's EASYBackfilling: the reservation gates only the head's retries
	RuleWindow  = "window"       // the window's later jobs start only if they end by the head's reservation (the Slurm agent's rule)
)

// accasim reports whether the policy is accasim's backfilling rule.
func (p Policy) accasim() bool { return p.Backfill && p.Rule == RuleAccasim }

// check says what is wrong with the policy, if anything.
func (p Policy) check() error {
	if p.Window < 1 {
		return fmt.Errorf("window must be at least 1, got %d", p.Window)
	}
	if p.Interval < 0 || math.IsNaN(p.Interval) || math.IsInf(p.Interval, 0) {
		return fmt.Errorf("pass interval must be a finite number ≥ 0, got %g", p.Interval)
	}
	if p.Interval > 0 && p.accasim() {
		return fmt.Errorf("backfilling rule %s schedules its own retries and takes no pass interval", RuleAccasim)
	}
	switch p.Rule {
	case "", RuleEASY:
	case RuleWindow:
		if !p.Backfill {
			return fmt.Errorf("backfilling rule %s needs backfilling on", p.Rule)
		}
	case RuleAccasim:
		if !p.Backfill {
			return fmt.Errorf("backfilling rule %s needs backfilling on", p.Rule)
		}
		if p.Window != 1 {
			return fmt.Errorf("backfilling rule %s takes a window of 1, got %d", p.Rule, p.Window)
		}
	default:
		return fmt.Errorf("unknown backfilling rule %q (want %s, %s or %s)", p.Rule, RuleEASY, RuleWindow, RuleAccasim)
	}
	return nil
}

// Config describes one cluster simulation.
type Config struct {
	// Machine, if set, is what jobs are placed on; otherwise a torus
	// machine is made from State, Router, Algo, Transit and Observe.
	Machine Machine
	State   *alloc.State  // machine state at time 0 (failed nodes/links included)
	Router  alloc.Router  // routing questions for node selection
	Policy  Policy        //
	Algo    alloc.Algo    // improved or baseline
	Transit func(int) int // transit limit for a job of m nodes (nil: 0)
	// Budget bounds each node-selection decision (0 = none; see
	// TorusMachine.Budget).
	Budget time.Duration
	// Observe, if set, is called before every allocation attempt with the
	// state and request (used to count the solutions each algorithm finds).
	Observe func(st *alloc.State, req alloc.Request)
	// SelectWorkers bounds the goroutines of one allocation decision
	// (0 = all cores; experiments that run simulations in parallel use 1).
	SelectWorkers int
	// Progress, if set, is called each time a job starts or is skipped,
	// with the count so far and the number of jobs.
	Progress func(done, total int)
	// StartDelay, if set, gives each job's launch delay (trace seconds):
	// the job gets its nodes when it is placed (its start, as Slurm's
	// squeue shows RUNNING), its run begins the delay later, and it holds
	// the nodes until start + delay + run time. Waits count to the start;
	// utilization counts run time only.
	StartDelay func(j Job) float64
	// onReserve, if set, sees every EASY reservation (tests).
	onReserve func(job int, shadow float64)
}

// JobRecord is the outcome of one job.
type JobRecord struct {
	ID      int     `json:"id"`
	Submit  float64 `json:"submit"`
	Start   float64 `json:"start"`
	End     float64 `json:"end"`
	Nodes   [][]int `json:"nodes"`             // coordinates of every allocated node (active first); nil on machines without coordinates (see NodeIDs)
	Active  int     `json:"active"`            // how many of Nodes are active
	Skipped string  `json:"skipped,omitempty"` // why it never ran
	nodeIDs []int
}

// Report summarises a simulation.
type Report struct {
	Machine     string  `json:"machine,omitempty"`
	Jobs        int     `json:"jobs"`
	JobsDone    int     `json:"jobs_done"`
	JobsSkipped int     `json:"jobs_skipped"`
	Makespan    float64 `json:"makespan"`
	Utilization float64 `json:"utilization"`
	TMean       float64 `json:"t_mean"`
	MeanWait    float64 `json:"mean_wait"`
	MeanBSLD    float64 `json:"mean_bounded_slowdown"`
	Decisions   int     `json:"decisions"`
	// DecisionsCut counts the decisions that the budget cut short (the
	// best set found in time was taken).
	DecisionsCut int `json:"decisions_cut,omitempty"`
	// DecisionsSettled counts the decisions that stopped once criteria
	// 1 and 2 were settled (alloc.Result.Settled).
	DecisionsSettled int         `json:"decisions_settled,omitempty"`
	Schedule         []JobRecord `json:"-"`
	SkippedJobs      []Skipped   `json:"skipped,omitempty"`
	AllocSeconds     float64     `json:"alloc_seconds"`
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

// NodeIDs returns the machine's ids of the job's nodes (active first).
func (r JobRecord) NodeIDs() []int { return r.nodeIDs }
