package alloc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icn-hpc/icn/routing"
)

// validChoice checks what every answer must be, cut or not: the chosen
// nodes are available, distinct, m active and at most T transit, and the
// set is reachable.
func validChoice(t *testing.T, name string, s *State, rt Router, req Request, res *Result) {
	t.Helper()
	c := res.Chosen
	if len(c.Active) != req.Nodes || len(c.Transit) > req.Transit {
		t.Fatalf("%s: %d active, %d transit for %+v", name, len(c.Active), len(c.Transit), req)
	}
	seen := map[int]bool{}
	for _, v := range append(append([]int(nil), c.Active...), c.Transit...) {
		if seen[v] || !s.Available(v) {
			t.Fatalf("%s: node %d repeated or unavailable", name, v)
		}
		seen[v] = true
	}
	ok, err := rt.Reachable(c.Active, c.Transit)
	if err != nil || !ok {
		t.Fatalf("%s: chosen set not reachable (%v)", name, err)
	}
}

// TestCutEnumeration cuts decisions after k placements (the budget's
// effect without its timing) on used small tori: the answer is valid,
// says it is not exhaustive and how many placements it examined, and a
// cut at or past the full count gives the exhaustive answer. After every
// cut decision the same selector must still answer like a fresh one:
// nothing of a cut decision is cached as complete.
func TestCutEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 1))
	cuts := 0
	for _, spec := range []string{"torus:4x4x4", "torus:6x4x3", "torus:4x4x2x2"} {
		s, rt := usedTorus(t, spec, r, false)
		for trial := 0; trial < 6; trial++ {
			m := 2 + r.IntN(10)
			req := Request{Nodes: m, Transit: r.IntN(m/2 + 1)}
			full := NewSelector(s)
			full.Workers = 1
			want, err := full.Select(s, rt, req)
			if err != nil {
				t.Fatal(err)
			}
			if !want.Exhaustive || want.Complete != CompleteAll || want.Cut != "" {
				t.Fatalf("%s %+v: no budget but %+v", spec, req, want)
			}
			sel := NewSelector(s)
			sel.Workers = 1
			name := fmt.Sprintf("%s %+v", spec, req)
			for _, k := range []int{1, want.Examined / 3, want.Examined - 1, want.Examined} {
				if k < 1 {
					continue
				}
				sel.tune.cutAfter = k
				got, err := sel.Select(s, rt, req)
				sel.tune.cutAfter = 0
				if err != nil {
					t.Fatal(err)
				}
				if k >= want.Examined {
					if !got.Exhaustive {
						t.Fatalf("%s: cut after %d of %d placements: %+v", name, k, want.Examined, got)
					}
					sameChoice(t, name, got, want)
					continue
				}
				cuts++
				if got.Examined != k {
					t.Fatalf("%s: cut after %d placements examined %d", name, k, got.Examined)
				}
				checkCut(t, name, s, rt, req, got)
				sameAsFresh(t, name+" after a cut", sel, s, rt, req)
			}
			// Cuts after k reachability questions stop in the middle of
			// a placement's reduction as often as not.
			for _, k := range []int{1, 2, 5, 20, 100} {
				sel.tune.cutAfterAsks = k
				got, err := sel.Select(s, rt, req)
				sel.tune.cutAfterAsks = 0
				if err != nil {
					t.Fatal(err)
				}
				if got.Exhaustive {
					continue // fewer questions than k
				}
				cuts++
				checkCut(t, fmt.Sprintf("%s, %d questions", name, k), s, rt, req, got)
				sameAsFresh(t, name+" after a cut", sel, s, rt, req)
			}
		}
	}
	if cuts < 20 {
		t.Fatalf("only %d cut decisions: the test exercises too little", cuts)
	}
}

// TestCutInReduction: on an idle torus the first placements are blocks,
// reachable without a question, so a cut after the first question falls
// in the reduction of the first reachable set; when it was the only one
// found, the answer is "no set found" (it once indexed an empty list).
func TestCutInReduction(t *testing.T) {
	hit := 0
	for _, spec := range []string{"torus:4x4x4", "torus:6x4x3", "torus:4x4x2x2"} {
		s, rt := busyPattern(t, spec, "idle")
		for m := 3; m < 14; m++ {
			for _, k := range []int{1, 2, 3} {
				req := Request{Nodes: m, Transit: 3}
				sel := NewSelector(s)
				sel.Workers = 1
				sel.tune.cutAfterAsks = k
				got, err := sel.Select(s, rt, req)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s m=%d, cut after %d questions", spec, m, k)
				if got.Exhaustive {
					continue
				}
				checkCut(t, name, s, rt, req, got)
				if got.Chosen == nil && got.Found > 0 {
					hit++
				}
			}
		}
	}
	if hit == 0 {
		t.Fatal("no cut fell in the only reduction: the test exercises too little")
	}
}

// checkCut checks a cut answer: it says so, and either chooses a valid
// set or says that none was found in time.
func checkCut(t *testing.T, name string, s *State, rt Router, req Request, got *Result) {
	t.Helper()
	// A set without transit nodes settles criterion 1 however early the
	// cut came.
	complete := CompleteNone
	if got.Chosen != nil && len(got.Chosen.Transit) == 0 {
		complete = CompleteTransit
	}
	if got.Exhaustive || got.Complete != complete || got.Cut == "" {
		t.Fatalf("%s: exhaustive %v, complete %d (want %d), cut %q", name, got.Exhaustive, got.Complete, complete, got.Cut)
	}
	if got.Chosen == nil {
		if !strings.Contains(got.Reason, "no set found within") {
			t.Fatalf("%s: reason %q", name, got.Reason)
		}
		return
	}
	validChoice(t, name, s, rt, req, got)
}

// usedTorus is a torus with a random third of its nodes busy (or none).
func usedTorus(t *testing.T, spec string, r *rand.Rand, idle bool) (*State, *AngaraRouter) {
	t.Helper()
	s, rt := busyPattern(t, spec, "idle")
	if idle {
		return s, rt
	}
	var busy []int
	for v := 0; v < s.N(); v++ {
		if r.IntN(3) == 0 {
			busy = append(busy, v)
		}
	}
	if err := s.Occupy(2, busy); err != nil {
		t.Fatal(err)
	}
	return s, rt
}

// TestBudgetEnds: a budget that ends before anything is examined gives
// no set and says so (the clock is checked before the first placement,
// so this does not depend on timing); a negative budget is refused. The
// cut itself is TestCutEnumeration's; how much a real budget cuts is
// measured by BenchmarkSelectBudget.
func TestBudgetEnds(t *testing.T) {
	s, rt := busyPattern(t, "torus:8x8x8", "halfx")
	req := Request{Nodes: 64, Transit: 16, Budget: time.Nanosecond}
	res, err := NewSelector(s).Select(s, rt, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chosen != nil || res.Examined != 0 || res.Exhaustive || res.Cut != "budget 1ns" ||
		res.Reason != "no set found within 1ns (0 placements examined)" {
		t.Fatalf("1 ns budget: %+v", res)
	}
	// A generous budget changes nothing.
	req.Budget = time.Hour
	got, err := NewSelector(s).Select(s, rt, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Budget = 0
	want, err := NewSelector(s).Select(s, rt, req)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exhaustive || got.Examined != want.Examined {
		t.Fatalf("1 h budget: %+v", got)
	}
	sameChoice(t, "1 h budget", got, want)

	// A budget that started an hour ago (Since) is spent: nothing is
	// examined, as with 1 ns; one that started now is not.
	req.Budget, req.Since = time.Minute, time.Now().Add(-time.Hour)
	spent, err := NewSelector(s).Select(s, rt, req)
	if err != nil {
		t.Fatal(err)
	}
	if spent.Chosen != nil || spent.Examined != 0 || spent.Exhaustive || spent.Cut != "budget 1m0s" {
		t.Fatalf("budget spent before the decision: %+v", spent)
	}
	req.Since = time.Now()
	if fresh, err := NewSelector(s).Select(s, rt, req); err != nil || !fresh.Exhaustive || fresh.Examined != want.Examined {
		t.Fatalf("budget started now: %+v %v", fresh, err)
	}
	req.Since = time.Time{}

	req.Budget = -time.Second
	if _, err := NewSelector(s).Select(s, rt, req); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("negative budget: %v", err)
	}
}

// TestSelectCancelled: a decision whose caller gives up returns the
// context's error and chooses nothing, whether the context ended before
// it started or while it ran (512 + 128 nodes on an idle 16x16x16).
func TestSelectCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4 096-node torus")
	}
	s, rt := busyPattern(t, "torus:16x16x16", "idle")
	req := Request{Nodes: 512, Transit: 128}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := NewSelector(s).SelectContext(ctx, s, rt, req); !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("cancelled before: %+v %v", res, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel) // the decision takes about 0.2 s
	sel := NewSelector(s)
	if res, err := sel.SelectContext(ctx, s, rt, req); !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("cancelled while running: %+v %v", res, err)
	}
	// The selector is still good for a (small) decision afterwards.
	sameAsFresh(t, "after a cancelled decision", sel, s, rt, Request{Nodes: 64, Transit: 16})
}

// slowTables is an Angara router whose tie-break tables after the first
// never finish before their context ends: a budget that runs out in the
// table phase.
type slowTables struct {
	*AngaraRouter
	calls atomic.Int32
}

func (r *slowTables) Table(ctx context.Context, active, transit []int, o routing.BuildOptions) (routing.Figures, *routing.Table, error) {
	if o.Unverified && r.calls.Add(1) > 1 {
		<-ctx.Done()
		return routing.Figures{}, nil, ctx.Err()
	}
	return r.AngaraRouter.Table(ctx, active, transit, o)
}

// TestBudgetEndsInTables: when the budget ends while the tie-break
// tables are built, the candidates of the classes whose table finished
// are ranked by it, the others take no part, and the answer says it is
// complete for criteria 1 and 2 only.
func TestBudgetEndsInTables(t *testing.T) {
	s, ar := busyPattern(t, "torus:4x4x4", "idle")
	req := Request{Nodes: 8}
	want, err := NewSelector(s).Select(s, ar, req)
	if err != nil {
		t.Fatal(err)
	}
	if want.Tables < 2 {
		t.Fatalf("%d tie-break tables: the test needs several", want.Tables)
	}
	rt := &slowTables{AngaraRouter: ar}
	sel := NewSelector(s)
	sel.Workers = 1 // the tables are built in class order
	req.Budget = 300 * time.Millisecond
	got, err := sel.Select(s, rt, req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Exhaustive || got.Complete != CompletePhi || got.Tables != 1 || got.Chosen == nil || got.Chosen.Figures == nil {
		t.Fatalf("cut in the tables: %+v", got)
	}
	validChoice(t, "4x4x4", s, rt, req, got)
	// The chosen set has the figures of its own (first) class's table.
	fig, _, err := ar.Table(context.Background(), got.Chosen.Active, got.Chosen.Transit, routing.BuildOptions{})
	if err != nil || fig != *got.Chosen.Figures {
		t.Fatalf("chosen figures %+v, its table %+v (%v)", got.Chosen.Figures, fig, err)
	}
}

// tableSplit never uses more goroutines than the decision has, gives
// every table at least one, and takes the choice of tables at once with
// the least modelled time, the most tables at once on ties (checked
// against every choice).
func TestTableSplit(t *testing.T) {
	for w := 1; w <= 17; w++ {
		for n := 1; n <= 40; n++ {
			conc, each := tableSplit(w, n)
			if conc < 1 || conc > min(n, w) || each < 1 || conc*each > w || each != w/conc {
				t.Fatalf("%d tables on %d workers: %d at once on %d each", n, w, conc, each)
			}
			cost := func(c int) float64 {
				return float64((n+c-1)/c) * (tableSerial + (1-tableSerial)/float64(w/c))
			}
			for c := 1; c <= min(n, w); c++ {
				if cost(c) < cost(conc)*(1-1e-9) || (cost(c) <= cost(conc)*(1+1e-9) && c > conc) {
					t.Fatalf("%d tables on %d workers: %d at once (%g), %d would be better (%g)", n, w, conc, cost(conc), c, cost(c))
				}
			}
		}
	}
	for _, c := range []struct{ w, n, conc, each int }{{2, 3, 1, 2}, {2, 2, 2, 1}, {16, 3, 3, 5}, {2, 1, 1, 2}, {4, 6, 2, 2}, {1, 5, 1, 1}} {
		if conc, each := tableSplit(c.w, c.n); conc != c.conc || each != c.each {
			t.Errorf("%d tables on %d workers: %d at once on %d each, want %d on %d", c.n, c.w, conc, each, c.conc, c.each)
		}
	}
}

// A selection whose context ends before an answer says how many
// placements it had examined, and unwraps to the context's cause.
func TestNoAnswerNamesExamined(t *testing.T) {
	s, rt := busyPattern(t, "torus:8x8x8", "idle")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewSelector(s).SelectContext(ctx, s, rt, Request{Nodes: 64, Algo: Improved})
	var na *NoAnswerError
	if !errors.As(err, &na) || na.Examined != 0 || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "0 placements examined") {
		t.Fatalf("got %v", err)
	}
}
