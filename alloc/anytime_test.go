package alloc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// boxedTorus is a torus with random boxes busy (as jobs leave them) until
// about frac of its nodes are, and nf random failed links.
func boxedTorus(t *testing.T, spec string, r *rand.Rand, frac float64, nf int) (*State, *AngaraRouter) {
	t.Helper()
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	dims := g.Dims()
	var faults []string
	for range nf {
		c := make([]int, len(dims))
		for i, d := range dims {
			c[i] = r.IntN(d)
		}
		if f := fmt.Sprintf("%s+%c", g.NodeName(g.NodeAt(c)), "XYZW"[r.IntN(len(dims))]); !slices.Contains(faults, f) {
			faults = append(faults, f)
		}
	}
	if len(faults) > 0 {
		if g, err = g.ApplyFaults(strings.Join(faults, ","), ""); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := NewState(g)
	rt, err := NewAngaraRouter(g, "angara*")
	if err != nil {
		t.Fatal(err)
	}
	job := 1
	for tries := 0; float64(s.Busy()) < frac*float64(s.N()) && tries < 200; tries++ {
		start, size := make([]int, len(dims)), make([]int, len(dims))
		for i, d := range dims {
			start[i], size[i] = r.IntN(d), 1+r.IntN(max(1, d/2))
		}
		var nodes []int
		for _, v := range (Rect{Start: start, Size: size}).Nodes(dims, nil) {
			if s.Available(v) {
				nodes = append(nodes, v)
			}
		}
		if len(nodes) > 0 && s.Occupy(job, nodes) == nil {
			job++
		}
	}
	return s, rt
}

// TestAnytimeSettlesCriteria12 compares budgeted decisions (the anytime
// order) with exhaustive ones on small tori with busy boxes and failed
// links: a decision that settled has the same number of transit nodes
// and the same φ after allocation as the exhaustive choice (criteria 1
// and 2 are exact) and examined fewer placements; one that did not
// settle chose exactly the same set. The answer must not depend on the
// number of workers, and some decisions must settle.
func TestAnytimeSettlesCriteria12(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 27))
	settled, same := 0, 0
	for _, spec := range []string{"torus:4x4x4", "torus:6x4x4", "torus:4x4x2x2", "torus:8x6", "torus:5x5x3"} {
		for trial := 0; trial < 16; trial++ {
			s, rt := boxedTorus(t, spec, r, 0.1+0.5*r.Float64(), r.IntN(3))
			for _, m := range []int{1 + r.IntN(4), 4 + r.IntN(6), 8 + r.IntN(12)} {
				if m > s.FreeCount() {
					continue
				}
				req := Request{Nodes: m, Transit: []int{0, m / 4, m / 2, m}[r.IntN(4)]}
				name := fmt.Sprintf("%s trial %d %+v", spec, trial, req)
				want, err := NewSelector(s).Select(s, rt, req)
				if err != nil {
					t.Fatal(err)
				}
				req.Budget = time.Hour
				var first *Result
				for _, workers := range []int{1, 2, 3} {
					sel := NewSelector(s)
					sel.Workers = workers
					sel.tune.checkSettledAfter = 1
					got, err := sel.Select(s, rt, req)
					if err != nil {
						t.Fatal(err)
					}
					if first == nil {
						first = got
					} else if got.Settled != first.Settled || got.Examined != first.Examined || got.Found != first.Found {
						t.Fatalf("%s: %d workers: settled %v after %d placements, 1 worker: %v after %d", name, workers, got.Settled, got.Examined, first.Settled, first.Examined)
					} else {
						sameChoice(t, fmt.Sprintf("%s, %d workers", name, workers), got, first)
					}
				}
				// The first check deferred until a third of the
				// placements were examined: every size examined before
				// it is checked then.
				late := NewSelector(s)
				late.tune.checkSettledAfter = max(1, want.Examined/3)
				lateRes, err := late.Select(s, rt, req)
				if err != nil {
					t.Fatal(err)
				}
				if lateRes.Settled {
					if lateRes.Examined < want.Examined/3 || len(lateRes.Chosen.Transit) != len(want.Chosen.Transit) || lateRes.Chosen.Frag != want.Chosen.Frag {
						t.Fatalf("%s: settled late after %d of %d placements on %+v, exhaustive %+v", name, lateRes.Examined, want.Examined, lateRes.Chosen.Frag, want.Chosen.Frag)
					}
				} else if first.Settled && lateRes.Examined > 0 && lateRes.Examined < want.Examined {
					t.Fatalf("%s: stopped late after %d placements without settling", name, lateRes.Examined)
				}
				got := first
				if (got.Chosen == nil) != (want.Chosen == nil) {
					t.Fatalf("%s: anytime chose %v, exhaustive %v", name, got.Chosen, want.Chosen)
				}
				if got.Chosen == nil {
					continue
				}
				validChoice(t, name, s, rt, req, got)
				if got.Cut != "" {
					t.Fatalf("%s: cut %q with an hour's budget", name, got.Cut)
				}
				if !got.Settled {
					if !got.Exhaustive || got.Complete != CompleteAll || got.Examined != want.Examined {
						t.Fatalf("%s: not settled but %+v", name, got)
					}
					sameChoice(t, name, got, want)
					same++
					continue
				}
				settled++
				if got.Exhaustive || got.Complete != CompletePhi || got.Examined >= want.Examined {
					t.Fatalf("%s: settled but exhaustive %v, complete %d, %d of %d placements", name, got.Exhaustive, got.Complete, got.Examined, want.Examined)
				}
				if len(got.Chosen.Transit) != len(want.Chosen.Transit) || got.Chosen.Frag != want.Chosen.Frag {
					t.Fatalf("%s: settled on %d transit, %+v; exhaustive %d transit, %+v", name,
						len(got.Chosen.Transit), got.Chosen.Frag, len(want.Chosen.Transit), want.Chosen.Frag)
				}
			}
		}
	}
	t.Logf("%d decisions settled, %d examined everything", settled, same)
	if settled == 0 || same == 0 {
		t.Fatalf("%d settled, %d not: the comparison covers only one side", settled, same)
	}
}

// TestPhiTopBounds: no set of m or more available nodes leaves a larger
// φ than phiTop, on random states (random node sets, and the sets
// reached by removing nodes one at a time from the free ones, which
// keep large rectangles).
func TestPhiTopBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	reached := 0
	for _, spec := range []string{"torus:4x4x4", "torus:6x5", "torus:4x4x2x2"} {
		for trial := 0; trial < 10; trial++ {
			s, rt := boxedTorus(t, spec, r, 0.5*r.Float64(), 0)
			var free []int
			for v := 0; v < s.N(); v++ {
				if s.Available(v) {
					free = append(free, v)
				}
			}
			for _, m := range []int{1, 2 + r.IntN(4), len(free) / 3} {
				if m < 1 || m > len(free) {
					continue
				}
				sel := NewSelector(s)
				sel.prepare(s)
				d := sel.newDecision(s, rt, Request{Nodes: m, Transit: m})
				top, ok := d.phiTop()
				if !ok {
					continue
				}
				lc := d.levelsNow()
				best := int64(-1)
				for k := 0; k < 200; k++ {
					set := slices.Clone(free)
					r.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
					n := m + r.IntN(len(free)-m+1)
					if k%2 == 0 {
						// Neighbouring nodes: a box's worth of the free
						// nodes in id order from a random point.
						at := r.IntN(len(free))
						set = set[:0]
						for i := 0; i < n; i++ {
							set = append(set, free[(at+i)%len(free)])
						}
					} else {
						set = set[:n]
					}
					slices.Sort(set)
					f := lc.after(&candidate{Candidate: Candidate{Active: set, Rect: Rect{Start: make([]int, len(s.Dims())), Size: s.Dims()}, Holes: 1}})
					if f.Phi > top {
						t.Fatalf("%s m=%d: a set of %d nodes leaves φ %d above phiTop %d", spec, m, n, f.Phi, top)
					}
					best = max(best, f.Phi)
				}
				if best == top {
					reached++
				}
			}
		}
	}
	if reached == 0 {
		t.Fatal("no set reached phiTop: the bound is never shown tight")
	}
}
