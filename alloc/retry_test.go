package alloc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestRetriedRequestsMatchFresh repeats the same requests on a selector
// while the state changes a few nodes at a time (as a replay retries its
// head job) and compares every answer with a fresh selector's: decisions
// that examine only the placements near changed nodes must choose the
// same set, with the same counts of distinct sets, ranked candidates and
// tables. It also checks that such restricted decisions happened.
func TestRetriedRequestsMatchFresh(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 21))
	cases := []struct {
		spec, fail, rule string
	}{
		{"torus:4x4x2", "", "angara*"},
		{"torus:4x3x3", "", "angara"},
		{"torus:4x4x4", "0.0.0+X,1.2.3+Y,3.3.1-Z", "angara*"},
		{"torus:6x4x2", "2.1.0+X", "angara-"},
	}
	restricted := 0
	for _, tc := range cases {
		g, err := topology.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if g, err = g.ApplyFaults(tc.fail, ""); err != nil {
			t.Fatal(err)
		}
		st, err := NewState(g)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := NewAngaraRouter(g, tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		sel := NewSelector(st)
		var reqs []Request
		for _, m := range []int{2 + r.IntN(3), 5 + r.IntN(6), st.N()/3 + r.IntN(4)} {
			reqs = append(reqs, Request{Nodes: m, Transit: []int{0, m / 4, m}[r.IntN(3)], Algo: Improved, Fast: true})
		}
		reqs = append(reqs, Request{Nodes: 4, Transit: 0, Algo: Baseline, Fast: true})
		for step := 1; step <= 60; step++ {
			changeState(r, st, step)
			for _, req := range reqs {
				if _, ok := sel.retry.failed[keyOf(req)]; ok {
					restricted++
				}
				sameAsFresh(t, fmt.Sprintf("%s step %d %+v", tc.spec, step, req), sel, st, rt, req)
			}
		}
	}
	if restricted < 20 {
		t.Fatalf("only %d decisions repeated a failed request: the test does not exercise the memo", restricted)
	}
}

// changeState occupies a few free nodes as job id or releases a job.
func changeState(r *rand.Rand, st *State, id int) {
	if st.Busy() > st.N()*3/4 || st.Busy() > 0 && r.IntN(3) == 0 {
		st.Release(1 + r.IntN(id))
		return
	}
	var free []int
	for v := 0; v < st.N(); v++ {
		if st.Available(v) {
			free = append(free, v)
		}
	}
	r.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	if err := st.Occupy(id, free[:min(len(free), 1+r.IntN(4))]); err != nil {
		panic(err)
	}
}

// sameAsFresh answers req with sel and with a fresh selector and
// compares the answers (sameChoice).
func sameAsFresh(t *testing.T, name string, sel *Selector, st *State, rt Router, req Request) {
	t.Helper()
	got, err := sel.Select(st, rt, req)
	if err != nil {
		t.Fatal(name, err)
	}
	want, err := NewSelector(st).Select(st, rt, req)
	if err != nil {
		t.Fatal(name, err)
	}
	sameChoice(t, name, got, want)
}

func sameChoice(t *testing.T, name string, got, want *Result) {
	t.Helper()
	if (got.Chosen == nil) != (want.Chosen == nil) || got.Distinct != want.Distinct ||
		got.Ranked != want.Ranked || got.Tables != want.Tables {
		t.Fatalf("%s: reused selector %+v, fresh %+v", name, got, want)
	}
	if got.Chosen == nil {
		return
	}
	if !slices.Equal(got.Chosen.Active, want.Chosen.Active) || !slices.Equal(got.Chosen.Transit, want.Chosen.Transit) {
		t.Fatalf("%s: reused chose %v+%v, fresh %v+%v", name,
			got.Chosen.Active, got.Chosen.Transit, want.Chosen.Active, want.Chosen.Transit)
	}
	if (got.Chosen.Figures == nil) != (want.Chosen.Figures == nil) ||
		got.Chosen.Figures != nil && *got.Chosen.Figures != *want.Chosen.Figures {
		t.Fatalf("%s: reused selector's table %+v, fresh %+v", name, got.Chosen.Figures, want.Chosen.Figures)
	}
}

// TestRectNodesMatchesRect checks Rect.Nodes and the tabulated rectangle
// listing against the nodes' coordinates, offset by offset (X fastest),
// on every size and start.
func TestRectNodesMatchesRect(t *testing.T) {
	for _, dims := range [][]int{{4, 4, 2}, {5, 3}, {3, 2, 2, 3}, {7}} {
		var ws workerScratch
		for _, size := range Shapes(dims) {
			placements(dims, []bool{true, true, true, true}[:len(dims)], size, func(start []int) bool {
				var want []int
				off, c := make([]int, len(dims)), make([]int, len(dims))
				for k := 0; k < vol(size); k++ {
					for i := range c {
						c[i] = (start[i] + off[i]) % dims[i]
					}
					want = append(want, enc(c, dims))
					for i := 0; i < len(off); i++ {
						if off[i]++; off[i] < size[i] {
							break
						}
						off[i] = 0
					}
				}
				if got := (Rect{Start: start, Size: size}).Nodes(dims, nil); !slices.Equal(got, want) {
					t.Fatalf("%v size %v start %v: Rect.Nodes %v, want %v", dims, size, start, got, want)
				}
				if got := ws.rectNodes(dims, start, size); !slices.Equal(got, want) {
					t.Fatalf("%v size %v start %v: %v, want %v", dims, size, start, got, want)
				}
				return true
			})
		}
	}
}

// TestReductionMemoMatchesDropTransit asks the memo for blocks of
// several sizes with random bound sequences and compares every answer
// with dropTransit's for that bound.
func TestReductionMemoMatchesDropTransit(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	g, rt := angaraOn(t, "torus:4x4x4")
	var memo reductionMemo
	computed, full, pruned := 0, 0, 0
	for trial := 0; trial < 1000; trial++ {
		size := [][]int{{2, 3, 2}, {4, 2, 3}, {3, 3, 3}, {4, 4, 1}}[r.IntN(4)]
		all := Rect{Start: []int{0, 0, 0}, Size: size}.Nodes(g.Dims(), nil)
		m := []int{2, 5, len(all) / 2}[r.IntN(3)]
		active, transit := all[:m], all[m:]
		bound := r.IntN(min(len(transit), 6) + 1)
		want, err := dropTransit(rt.Reachable, active, transit, bound)
		if err != nil {
			t.Fatal(err)
		}
		got, err := memo.get(blockReductionKey(m, size), bound, func(b int) ([]int, error) {
			computed++
			return dropTransit(rt.Reachable, active, transit, b)
		})
		if err != nil {
			t.Fatal(err)
		}
		if (got == nil) != (want == nil) || !slices.Equal(got, want) {
			t.Fatalf("size %v m %d bound %d: memo %v, dropTransit %v", size, m, bound, got, want)
		}
		if want == nil {
			pruned++
		} else {
			full++
		}
	}
	if computed > 500 || full < 100 || pruned < 100 {
		t.Fatalf("%d computed of 1000 (%d full, %d pruned): the memo is not exercised", computed, full, pruned)
	}
}
