package alloc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
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

// TestRingClassesShareFigures checks ringClass, the class of a tied
// candidate that has no block class: on fault-free tori, some with mesh
// dimensions, random reachable sets in random rectangles are moved along
// the rings their rectangle does not cover whole; every translate must
// get the set's class name and a table with the same figures, and a set
// moved along a mesh dimension must get another name (its table may
// differ there).
func TestRingClassesShareFigures(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 31))
	checked, moved := 0, 0
	for _, spec := range []string{"torus:6x5x4", "torus:4x4x3:mesh=Y", "torus:5x4x2:mesh=X,Z", "torus:6x6", "torus:3x2x2x3:mesh=Y,W"} {
		for _, rule := range []string{"angara*", "angara"} {
			g, err := topology.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			rt, err := NewAngaraRouter(g, rule)
			if err != nil {
				t.Fatal(err)
			}
			st, err := NewState(g)
			if err != nil {
				t.Fatal(err)
			}
			sel := NewSelector(st)
			d := sel.newDecision(st, rt, Request{Nodes: 2, Algo: Improved})
			if !d.ringInvariant {
				t.Fatalf("%s %s: not invariant along the rings", spec, rule)
			}
			dims, wrap := g.Dims(), d.sel.wrap
			for trial := 0; trial < 100; trial++ {
				size := make([]int, len(dims))
				start := make([]int, len(dims))
				for i, n := range dims {
					size[i] = 1 + r.IntN(n)
					start[i] = r.IntN(startsAlong(n, wrap[i], size[i]))
				}
				// A random set of the rectangle: a random third of its
				// nodes transit, some left out.
				var active, transit []int
				coord := make([]int, len(dims))
				for k := 0; k < vol(size); k++ {
					x := k
					for i := range dims {
						coord[i] = (start[i] + x%size[i]) % dims[i]
						x /= size[i]
					}
					switch v := enc(coord, dims); r.IntN(6) {
					case 0:
					case 1, 2:
						transit = append(transit, v)
					default:
						active = append(active, v)
					}
				}
				if len(active) < 2 {
					continue
				}
				slices.Sort(active)
				slices.Sort(transit)
				holes := vol(size) - len(active) - len(transit)
				cand := func(a, tr []int, st []int) *candidate {
					return &candidate{Candidate: Candidate{Active: a, Transit: tr, Rect: Rect{Start: st, Size: size}, Holes: holes}, nTransit: len(tr)}
				}
				base := cand(active, transit, start)
				fig, _, err := rt.Table(context.Background(), active, transit, routing.BuildOptions{Workers: 1})
				if err != nil {
					continue // not reachable
				}
				key := d.ringClass(base)
				// Move along a random dimension.
				i := r.IntN(len(dims))
				if dims[i] == 1 {
					continue
				}
				k := 1 + r.IntN(dims[i]-1)
				moveSet := func(list []int) []int {
					out := make([]int, len(list))
					for j, v := range list {
						dec(v, dims, coord)
						coord[i] = (coord[i] + k) % dims[i]
						out[j] = enc(coord, dims)
					}
					slices.Sort(out)
					return out
				}
				st2 := slices.Clone(start)
				st2[i] = (st2[i] + k) % dims[i]
				if !wrap[i] && st2[i]+size[i] > dims[i] {
					continue // off the end of a mesh dimension
				}
				a2, t2 := moveSet(active), moveSet(transit)
				key2 := d.ringClass(cand(a2, t2, st2))
				ringMove := wrap[i] && size[i] < dims[i]
				if ringMove != (key == key2) {
					t.Fatalf("%s %s: set %v+%v in %v@%v moved by %d along %d: same name %v", spec, rule, active, transit, size, start, k, i, key == key2)
				}
				if !ringMove {
					continue
				}
				fig2, _, err := rt.Table(context.Background(), a2, t2, routing.BuildOptions{Workers: 1})
				if err != nil || fig2 != fig {
					t.Fatalf("%s %s: set %v+%v in %v@%v moved by %d along %d: %v (%v), before %v", spec, rule, active, transit, size, start, k, i, fig2, err, fig)
				}
				moved++
			}
			checked++
		}
	}
	if moved < 200 {
		t.Fatalf("only %d sets were moved along the rings", moved)
	}
}
