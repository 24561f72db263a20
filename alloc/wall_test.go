package alloc

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// slabState returns a state on spec with 1–2 busy slabs (all nodes with
// one coordinate of a random dimension) and a fraction p of other nodes
// busy at random.
func slabState(t testing.TB, spec string, p float64, r *rand.Rand) *State {
	s := stateOf(t, spec)
	dims := s.Dims()
	type slab struct{ dim, at int }
	var slabs []slab
	for range 1 + r.IntN(2) {
		i := r.IntN(len(dims))
		slabs = append(slabs, slab{i, r.IntN(dims[i])})
	}
	c := make([]int, len(dims))
	var busy []int
	for v := 0; v < s.N(); v++ {
		dec(v, dims, c)
		in := r.Float64() < p
		for _, sl := range slabs {
			in = in || c[sl.dim] == sl.at
		}
		if in {
			busy = append(busy, v)
		}
	}
	if err := s.Occupy(1, busy); err != nil {
		t.Fatal(err)
	}
	return s
}

// splitByWall is sound: whenever it rejects a rectangle for m active
// nodes, the listed available nodes (the first m active) are not joined
// inside the set. Every rectangle and every m of random states with busy
// slabs is checked, and the test fails if the shortcut never fires.
func TestSplitByWallSound(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 14))
	fired := 0
	for trial := 0; trial < 24; trial++ {
		spec := []string{"torus:6x5x4", "torus:8x6", "mesh:6x5x3", "torus:5x4x3x3"}[trial%4]
		s := slabState(t, spec, 0.1*r.Float64(), r)
		sel := NewSelector(s)
		sel.prepare(s)
		var ws workerScratch
		var cs connScratch
		eachRect(sel, s, func(rect Rect, avail []int) {
			for m := 1; m <= len(avail); m++ {
				if !sel.grid.splitByWall(rect, len(avail), m, &ws) {
					continue
				}
				fired++
				if cs.joinsIn(s.Graph(), avail[:m], avail) {
					t.Fatalf("%s rect %v m=%d: rejected, but the active nodes are joined", spec, rect, m)
				}
			}
		})
	}
	if fired < 1000 {
		t.Fatalf("the wall test fired only %d times", fired)
	}
	t.Logf("%d rejections checked", fired)
}

// Rejecting split rectangles changes no decision: on tori with busy slabs
// the result with the shortcut equals the result without it (counts,
// chosen set, rectangle, φ and table figures).
func TestWallShortcutSameDecision(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 21))
	for trial := 0; trial < 60; trial++ {
		spec := []string{"torus:6x5x4", "torus:8x4x4", "torus:4x4x3x2"}[trial%3]
		s := slabState(t, spec, 0.05*r.Float64()*float64(trial%2), r)
		sameWithout(t, tuning{noWallShortcut: true}, fmt.Sprintf("%s trial %d", spec, trial), s, trial%2 == 0, r)
	}
}

// sameWithout selects for a random job on s (under angara* or plain
// connectivity) with the normal tuning and with off, and requires the
// same result.
func sameWithout(t *testing.T, off tuning, name string, s *State, angara bool, r *rand.Rand) {
	t.Helper()
	var rt Router = graphRouter{G: s.Graph()}
	if angara {
		var err error
		if rt, err = NewAngaraRouter(s.Graph(), "angara*"); err != nil {
			t.Fatal(err)
		}
	}
	m := 1 + r.IntN(s.FreeCount()/2)
	req := Request{Nodes: m, Transit: r.IntN(m/2 + 2), Algo: Improved}
	got, err := NewSelector(s).Select(s, rt, req)
	if err != nil {
		t.Fatal(err)
	}
	without := NewSelector(s)
	without.tune = off
	want, err := without.Select(s, rt, req)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, fmt.Sprintf("%s m=%d T=%d", name, req.Nodes, req.Transit), got, want)
}

func sameResult(t *testing.T, name string, got, want *Result) {
	t.Helper()
	if got.Found != want.Found || got.Distinct != want.Distinct || got.Ranked != want.Ranked || (got.Chosen == nil) != (want.Chosen == nil) {
		t.Fatalf("%s: found/distinct/ranked %d/%d/%d, want %d/%d/%d", name, got.Found, got.Distinct, got.Ranked, want.Found, want.Distinct, want.Ranked)
	}
	if want.Chosen == nil {
		return
	}
	a, b := got.Chosen, want.Chosen
	if setKey(a.Active, a.Transit) != setKey(b.Active, b.Transit) || a.Rect.String() != b.Rect.String() ||
		a.Holes != b.Holes || a.Frag != b.Frag || (a.Figures == nil) != (b.Figures == nil) || a.Figures != nil && *a.Figures != *b.Figures {
		t.Fatalf("%s: chose %v %+v %+v, want %v %+v %+v", name, a.Rect, a.Frag, a.Figures, b.Rect, b.Frag, b.Figures)
	}
}

// The three-dimensional prefix-sum query agrees with the general one.
func TestUnavailable3(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 21))
	for trial := 0; trial < 20; trial++ {
		spec := []string{"torus:6x5x4", "mesh:5x4x3"}[trial%2]
		s := randomState(t, spec, r.Float64(), r)
		g := newGrid(s)
		dims := s.Dims()
		for _, size := range Shapes(dims) {
			placements(dims, s.wrap, size, func(st []int) bool {
				if a, b := g.unavailable3(st, size), g.unavailableSlow(st, size); a != b {
					t.Fatalf("%s %v+%v: %d, want %d", spec, st, size, a, b)
				}
				return true
			})
		}
	}
}
