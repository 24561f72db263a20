package alloc

import (
	"context"
	"fmt"
	"testing"

	"github.com/icn-hpc/icn/routing"
)

// TestWrapClassesShareFigures checks, on a fault-free 6x6x4 torus, that
// the candidates from blocks of one size are named into one class
// however the rings wrap inside them, and that this is sound: every
// translate of the block (every start on the torus) is made a candidate
// through the selector's own steps (placementSet, the block's reduction,
// newCandidate, nameClasses) and its table built, and the translates of a class must
// have the same figures. Along a ring the block covers whole the start
// decides which nodes are active, so there each start is a class of its
// own; classes must hold translates that wrap differently, or the test
// would prove nothing.
func TestWrapClassesShareFigures(t *testing.T) {
	g, rt := angaraOn(t, "torus:6x6x4")
	st, err := NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	sel := NewSelector(st)
	dims := g.Dims()
	cases := []struct {
		size    []int
		m, T    int
		classes int // one per start along the whole rings
	}{
		{[]int{4, 3, 2}, 20, 4, 1},
		{[]int{5, 2, 3}, 22, 8, 1},
		{[]int{6, 2, 2}, 20, 4, 6},  // a whole X ring
		{[]int{3, 2, 4}, 21, 3, 4},  // a whole Z ring, the highest dimension
		{[]int{6, 1, 3}, 13, 5, 6},  // a whole X ring, thin
		{[]int{2, 6, 2}, 17, 7, 6},  // a whole Y ring
		{[]int{3, 3, 3}, 26, 1, 1},  // active nodes alone, a leading block
		{[]int{4, 2, 3}, 24, 0, 1},  // a block without transit nodes
		{[]int{5, 3, 1}, 12, 3, 1},  // one layer
		{[]int{2, 2, 4}, 10, 6, 4},  // a whole Z ring, half transit
		{[]int{4, 4, 2}, 25, 7, 1},  // many transit nodes to drop
		{[]int{5, 5, 3}, 60, 15, 1}, // larger
	}
	wrapped := 0
	for _, c := range cases {
		name := fmt.Sprintf("block %v, %d active, ≤ %d transit", c.size, c.m, c.T)
		d := sel.newDecision(st, rt, Request{Nodes: c.m, Transit: c.T, Algo: Improved})
		figs := map[string]routing.Figures{}
		wraps := map[string]map[string]bool{}
		start := make([]int, len(dims))
		for v := 0; v < g.NumNodes(); v++ {
			dec(v, dims, start)
			p, ok := d.placementSet(0, c.size, start, 0)
			if !ok {
				t.Fatalf("%s at %v: no placement", name, start)
			}
			// the reduction reduce gives a block (without the caches and
			// the decision's budget)
			active, transit := d.listed(p)
			keep, err := dropTransit(rt.Reachable, active, transit, c.T)
			switch {
			case err != nil || keep == nil:
				t.Fatalf("%s at %v: not reachable with %d transit nodes (%v)", name, start, c.T, err)
			case len(keep) == len(transit):
				keep = nil // none dropped
			}
			cand := d.newCandidate(0, p, keep)
			d.nameClasses(cand)
			if cand.iso == "" {
				t.Fatalf("%s at %v: a block without a class", name, start)
			}
			active, transit = cand.Active, cand.Transit
			if cand.lazy != nil {
				active, transit = cand.lazy.nodes(dims)
			}
			f, _, err := rt.Table(context.Background(), active, transit, routing.BuildOptions{})
			if err != nil {
				t.Fatalf("%s at %v: %v", name, start, err)
			}
			if prev, ok := figs[cand.iso]; ok && prev != f {
				t.Fatalf("%s at %v: figures %+v, %+v for another translate of the class", name, start, f, prev)
			}
			figs[cand.iso] = f
			if wraps[cand.iso] == nil {
				wraps[cand.iso] = map[string]bool{}
			}
			wraps[cand.iso][fmt.Sprint(wrapAt(dims, start, c.size))] = true
		}
		if len(figs) != c.classes {
			t.Fatalf("%s: %d classes, want %d", name, len(figs), c.classes)
		}
		for _, w := range wraps {
			if len(w) < 2 {
				t.Fatalf("%s: a class whose translates all wrap alike", name)
			}
			wrapped += len(w)
		}
	}
	t.Logf("%d wraps of classes compared", wrapped)
}
