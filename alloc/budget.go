package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/routing"
)

// DefaultBudget is the time a decision may take unless asked otherwise:
// the budget Slurm gives a node-selection plugin (seed 001 ran the
// selection inside Slurm).
const DefaultBudget = 10 * time.Second

// A decision with a budget works in three phases, each with its share of
// the budget: the enumeration of placements (criterion 1) until
// enumShare, the φ ranking (criterion 2) until rankShare, the tie-break
// tables (criteria 3 and 4) until tableShare. What is left covers the
// work that cannot stop at once (one reachability question, listing the
// chosen set) so that the answer comes within the budget.
//
// The bounded path (bound.go) must have its free rectangles and φ* by
// boundShare: on a large, lightly used torus listing them can take the
// whole budget, and the decision then enumerates placements directly for
// the rest of the enumeration phase rather than answer with no set.
const (
	boundShare = 0.35
	enumShare  = 0.70
	rankShare  = 0.85
	tableShare = 0.93
	hardShare  = 0.95
)

// With a budget the routing tables of a decision (the tie-breaks, or the
// chosen set's own when no tie is left) are built only as far as their
// expected time fits tableAllowShare of the budget, by the estimate
// tablePairSeconds per ordered pair of the set's nodes and core
// (measured on 2 cores: 27 tables of 1 024 nodes in 3.4 s, `go test
// -run XXX -bench SelectEmpty ./alloc`). The estimate, not the clock,
// decides, so the answer does not depend on timing; a table that does
// not fit is not started, and the answer is complete for criteria 1–2
// when ties were left unbroken.
const (
	tableAllowShare  = 0.025
	tablePairSeconds = 0.25e-6
)

// affordable returns how many of the representatives, in order, have
// tables that fit the budget's allowance (all of them without a budget
// or before a class met earlier supplies the figures).
func (d *decision) affordable(reps []*candidate) int {
	if d.req.Budget <= 0 {
		return len(reps)
	}
	allow := tableAllowShare * d.req.Budget.Seconds() * float64(par.Workers(d.sel.Workers))
	spent := 0.0
	for i, c := range reps {
		if c.shape != "" && d.invariant {
			if d.sel.figures.has(d.m, c.shape) {
				continue // figures known from an earlier decision
			}
		}
		n := float64(c.nodeCount())
		spent += n * n * tablePairSeconds
		if spent > allow {
			return i
		}
	}
	return len(reps)
}

// errCut ends a piece of work because the decision's time is up or its
// caller gave up; it is never cached.
var errCut = errors.New("node selection cut short")

// budget is the clock of one decision: flags that the workers poll, set
// by timers at the phase deadlines and when the caller's context ends.
type budget struct {
	ctx   context.Context
	total time.Duration // 0: no budget
	start time.Time
	// bound, enum and rank are set when their phase must end; ctxDone
	// when the caller gave up (then the decision returns ctx.Err()).
	bound, enum, rank, ctxDone atomic.Bool
	// hard is set when even work that is usually left to finish must
	// stop (listing free rectangles for φ), so that the answer comes
	// within the budget.
	hard  atomic.Bool
	stops []func() bool
}

func newBudget(ctx context.Context, total time.Duration, start time.Time) *budget {
	b := &budget{ctx: ctx, total: total, start: start}
	b.stops = append(b.stops, context.AfterFunc(ctx, func() {
		b.ctxDone.Store(true)
		b.bound.Store(true)
		b.enum.Store(true)
		b.rank.Store(true)
		b.hard.Store(true)
	}))
	if total > 0 {
		at := func(share float64, f func()) {
			d := time.Until(b.at(share))
			if d <= 0 {
				f() // already due: no placement is examined after it
				return
			}
			t := time.AfterFunc(d, f)
			b.stops = append(b.stops, t.Stop)
		}
		at(boundShare, func() { b.bound.Store(true) })
		at(enumShare, func() { b.enum.Store(true) })
		at(rankShare, func() { b.rank.Store(true) })
		at(hardShare, func() { b.hard.Store(true) })
	}
	return b
}

// at is the moment the given share of the budget is spent.
func (b *budget) at(share float64) time.Time {
	return b.start.Add(time.Duration(share * float64(b.total)))
}

// release stops the timers.
func (b *budget) release() {
	for _, stop := range b.stops {
		stop()
	}
}

// tableContext is the context the tie-break tables are built under: it
// ends with the caller's and at the table phase's deadline.
func (b *budget) tableContext() (context.Context, context.CancelFunc) {
	if b.total <= 0 {
		return context.WithCancel(b.ctx)
	}
	return context.WithDeadline(b.ctx, b.at(tableShare))
}

// tablesLeft reports whether there is time to start the tie-break
// tables at all.
func (b *budget) tablesLeft() bool {
	return !b.ctxDone.Load() && (b.total <= 0 || time.Now().Before(b.at(rankShare)))
}

// Completeness of an answer: how many of the four criteria of seed 001
// ch. 4 the chosen set is certainly best under (in their order).
const (
	// CompleteNone: the enumeration was cut; the set is the best of the
	// placements examined.
	CompleteNone = 0
	// CompleteTransit: every placement was examined, so the set has the
	// fewest transit nodes (criterion 1).
	CompleteTransit = 1
	// CompletePhi: and the largest φ after allocation among those
	// (criterion 2).
	CompletePhi = 2
	// CompleteAll: and the ties were broken by the routing tables
	// (criteria 3 and 4), as without a budget.
	CompleteAll = 4
)

// cutReason describes why a decision ended early, for Result.Cut.
func (b *budget) cutReason() string {
	if b.ctxDone.Load() {
		return "cancelled"
	}
	return fmt.Sprintf("budget %v", b.total)
}

// routerTable builds a verified BFS table on at most workers goroutines
// under ctx, which must not have ended before it starts.
func routerTable(ctx context.Context, rt Router, active, transit []int, workers int) (routing.Figures, error) {
	if err := ctx.Err(); err != nil {
		return routing.Figures{}, err
	}
	fig, _, err := rt.Table(ctx, active, transit, routing.BuildOptions{Workers: workers})
	return fig, err
}

// unverifiedTable is an unverified BFS table under ctx (see routerTable).
func unverifiedTable(ctx context.Context, rt Router, active, transit []int, workers int) (routing.Figures, *routing.Table, error) {
	if err := ctx.Err(); err != nil {
		return routing.Figures{}, nil, err
	}
	return rt.Table(ctx, active, transit, routing.BuildOptions{Workers: workers, Unverified: true})
}

// verifyTable is VerifyUnverified under ctx (see routerTable); a table
// verified when it was built (nil) needs nothing.
func verifyTable(ctx context.Context, rt Router, tb *routing.Table, workers int) error {
	if tb == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return rt.VerifyUnverified(ctx, tb, workers)
}

// tableSplit shares a decision's workers goroutines (0: all cores)
// between n tables to build: at most conc tables at once, each on each
// goroutines. conc is the choice that takes the least time in all: rounds
// of conc tables, a round taking a table's time on each cores, which is
// the time on one core over Amdahl's speed-up with a serial share of
// tableSerial (a table's build scales nearly as well as tables built
// side by side). So 3 tables on 2 cores are built one after the other on
// both, not two at once and then one alone, and 3 on 16 cores side by
// side on 5 each.
func tableSplit(workers, n int) (conc, each int) {
	w := par.Workers(workers)
	conc, best := 1, math.Inf(1)
	for c := 1; c <= min(n, w); c++ {
		k := float64(w / c)
		t := float64((n+c-1)/c) * (tableSerial + (1-tableSerial)/k)
		if t <= best*(1+1e-9) {
			conc, best = c, t
		}
	}
	return conc, max(1, w/conc)
}

// tableSerial is the share of a table's build that does not run in
// parallel, for tableSplit: about what BenchmarkBuildTableCores reports
// outside the pool of workers plus the rounds' idle ends.
const tableSerial = 0.02
