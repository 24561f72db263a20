package alloc

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Verdict is what a request that got no set means for its caller: whether
// waiting, a longer budget or nothing can help (Explain). The command line
// and the fabric manager answer each with its own exit status and HTTP
// status.
type Verdict int

const (
	// Placed: a set was chosen.
	Placed Verdict = iota
	// NotNow: no set on this state, but the request can be met on an
	// emptier machine (or the check could not tell within its budget):
	// waiting for jobs to end may help.
	NotNow
	// Never: no set even with no job running; the torus and its failures
	// rule the request out.
	Never
	// OutOfTime: the budget ended before any set was found; a longer
	// budget may find one.
	OutOfTime
)

// Impossible returns why req can never be met on the torus of s with its
// failures, as far as that shows without any search: more active nodes
// than the torus has, or than its nodes that have not failed, or no
// rectangle size of the torus with a volume between Nodes and
// Nodes+Transit (the sizes a selection looks in: with no transit nodes
// allowed, a brick of exactly Nodes nodes). It returns "" when none of
// these rules the request out. It takes at most one pass over the nodes
// and one over the rectangle sizes.
func Impossible(s *State, req Request) string {
	n := s.N()
	if req.Nodes > n {
		return fmt.Sprintf("the job asks for %d nodes, the fabric has only %d nodes", req.Nodes, n)
	}
	up := 0
	for v := range n {
		if !s.g.NodeFailed(v) {
			up++
		}
	}
	if req.Nodes > up {
		return fmt.Sprintf("the job asks for %d nodes, only %d of the fabric's %d nodes have not failed", req.Nodes, up, n)
	}
	lo, hi := req.Nodes, req.Nodes+max(req.Transit, 0)
	if hi < lo { // overflow: any larger volume
		hi = math.MaxInt
	}
	if !anyVolume(s.dims, lo, hi) {
		if lo == hi {
			return fmt.Sprintf("no brick of the %s torus holds exactly %d nodes; allow transit nodes", dimsName(s.dims), lo)
		}
		return fmt.Sprintf("no brick of the %s torus holds between %d and %d nodes (%d active, at most %d transit)", dimsName(s.dims), lo, hi, req.Nodes, req.Transit)
	}
	return ""
}

// anyVolume reports whether some rectangle size of a torus with sides
// dims has a volume in [lo, hi].
func anyVolume(dims []int, lo, hi int) bool {
	var rec func(i, p int) bool
	rec = func(i, p int) bool {
		if i == len(dims) {
			return p >= lo
		}
		for x := 1; x <= dims[i]; x++ {
			if p*x > hi {
				return false // larger sides only grow the volume
			}
			if rec(i+1, p*x) {
				return true
			}
		}
		return false
	}
	return rec(0, 1)
}

func dimsName(dims []int) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, "x")
}

// Explain says what res, the answer of a decision on s for req, means for
// its caller when it chose no set, and why: OutOfTime when the decision
// was cut before it found any set (res.Reason says how many placements it
// examined); Never when Impossible rules the request out, or when no set
// exists even on s emptied of its jobs (with its failures); else NotNow.
// The emptied machine is asked only after an exhaustive decision on a
// state with jobs, with a request that stops at the first set (Exists),
// on a selector of its own (with sel's Workers; sel's caches are not
// touched), within budget (0: none; negative: no time left, so no check)
// and for as long as ctx lasts; when that check is cut it answers
// NotNow.
func (sel *Selector) Explain(ctx context.Context, s *State, rt Router, req Request, res *Result, budget time.Duration) (Verdict, string) {
	if res.Chosen != nil {
		return Placed, ""
	}
	if why := Impossible(s, req); why != "" {
		return Never, why
	}
	switch {
	case !res.Exhaustive:
		return OutOfTime, res.Reason
	case s.Busy() == 0:
		return Never, res.Reason + " (no job runs)"
	case budget < 0:
		return NotNow, res.Reason
	}
	empty, err := NewState(s.g)
	if err != nil {
		return NotNow, res.Reason
	}
	q := Request{Nodes: req.Nodes, Transit: req.Transit, Algo: req.Algo, Fast: true, Exists: true, Budget: budget}
	check := NewSelector(empty)
	check.Workers = sel.Workers
	r, err := check.SelectContext(ctx, empty, rt, q)
	if err != nil || r.Found > 0 || !r.Exhaustive {
		return NotNow, res.Reason
	}
	return Never, res.Reason + ", even with no job running"
}
