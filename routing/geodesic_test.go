package routing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestGeodesicBoxes checks that leaving out the search vertices deeper
// than their node's first arrival (fault-free boxes, geodesicSet) changes
// nothing: on random boxes of random tori, with failed links and nodes
// outside the box, random direction orders, random active/transit splits
// and every rule, the table equals the sequential reference's (one source
// per round) and the unpruned search's (default rounds), route for route
// and load for load (also in rounds of 4 sources with 1 and 3 workers);
// and sets that are not fault-free boxes are not
// pruned.
func TestGeodesicBoxes(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	compared, pruned := 0, 0
	for trial := 0; trial < 77; trial++ {
		spec := []string{"6x5", "8x4", "4x4x3", "5x3x4", "6x6x2", "3x2x3x2", "4x4x2x2",
			"6x5:mesh=X", "4x4x3:mesh=Y", "6x6x2:mesh=X,Z", "3x2x3x2:mesh=Y,W"}[trial%11]
		g := mustTorus(t, spec)
		dims := g.Dims()
		start, size := make([]int, len(dims)), make([]int, len(dims))
		for i, d := range dims {
			start[i] = rng.IntN(d)
			size[i] = 1 + rng.IntN(d)
			if rng.IntN(3) == 0 {
				size[i] = d
			}
			if !g.Wrap()[i] {
				start[i] = rng.IntN(d - size[i] + 1) // a box never crosses a mesh end
			}
		}
		box := boxNodes(dims, start, size)
		var links, nodes []int
		in := map[int]bool{}
		for _, v := range box {
			in[v] = true
		}
		inside := func(l int) bool { k := g.Link(l); return in[int(k.A)] && in[int(k.B)] }
		insideFault := false
		for l := 0; l < g.NumLinks(); l++ {
			switch {
			case !inside(l) && rng.Float64() < 0.08:
				links = append(links, l)
			case inside(l) && trial%4 == 3 && !insideFault:
				// one failed link inside: not a fault-free box
				links = append(links, l)
				insideFault = true
			}
		}
		if v := rng.IntN(g.NumNodes()); !in[v] {
			nodes = append(nodes, v)
		}
		g, err := g.WithFaults(links, nodes)
		if err != nil {
			t.Fatal(err)
		}
		var order Order
		if rng.IntN(2) == 0 {
			order = DefaultOrder(len(dims))
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		var active, transit []int
		for _, v := range box {
			if trial%3 == 0 || len(active) == 0 || rng.IntN(4) > 0 {
				active = append(active, v)
			} else {
				transit = append(transit, v)
			}
		}
		for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
			r, err := NewRouter(g, Rule{Kind: kind, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s/%d/%s box %v+%v", spec, trial, kind, start, size)
			ref, errRef := r.buildRef(active, transit)
			one, errOne := r.Build(context.Background(), active, transit, BuildOptions{Batch: 1})
			fast, errFast := r.Build(context.Background(), active, transit, BuildOptions{Unverified: true})
			r.tune.noGeodesicPrune = true
			plain, errPlain := r.Build(context.Background(), active, transit, BuildOptions{Unverified: true})
			r.tune.noGeodesicPrune = false
			if errRef != nil || errOne != nil || errFast != nil || errPlain != nil {
				var ue *UnreachableError
				for _, e := range []error{errRef, errOne, errFast, errPlain} {
					if !errors.As(e, &ue) {
						t.Fatalf("%s: errors %v / %v / %v / %v", name, errRef, errOne, errFast, errPlain)
					}
				}
				continue
			}
			sameTable(t, name+" (one per round)", ref, one)
			sameTable(t, name+" (rounds)", plain, fast)
			sum, err := r.minimalSum(active, transit, 0)
			if err != nil || sum != ref.SumLength {
				// BFS routes are shortest, so their total is the minimal sum
				t.Fatalf("%s: minimal sum %d (%v), the reference table's routes %d", name, sum, err, ref.SumLength)
			}
			if trial%5 == 0 {
				// rounds of several sources: the same table for any
				// number of workers
				for _, workers := range []int{1, 3} {
					tb, err := r.Build(context.Background(), active, transit, BuildOptions{Batch: 4, Workers: workers})
					if err != nil {
						t.Fatal(err)
					}
					r.tune.noGeodesicPrune = true
					want, err := r.Build(context.Background(), active, transit, BuildOptions{Batch: 4, Workers: 2})
					r.tune.noGeodesicPrune = false
					if err != nil {
						t.Fatal(err)
					}
					sameTable(t, fmt.Sprintf("%s (batch 4, %d workers)", name, workers), want, tb)
				}
			}
			compared++
			s := r.getScratch()
			if err := r.prepareSet(s, active, transit); err != nil {
				t.Fatal(err)
			}
			if got := r.geodesicSet(s); got != !insideFault {
				t.Fatalf("%s: geodesicSet %v with a failed link inside %v", name, got, insideFault)
			} else if got {
				pruned++
			}
			r.putScratch(s)
		}
	}
	if compared < 100 || pruned < 50 {
		t.Fatalf("only %d tables compared, %d pruned", compared, pruned)
	}
	t.Logf("%d tables compared, %d with pruning", compared, pruned)
}

// boxNodes lists the nodes of the box at start with the given size (X
// fastest, coordinates modulo dims).
func boxNodes(dims, start, size []int) []int {
	var out []int
	off := make([]int, len(dims))
	for {
		v, mul := 0, 1
		for i, d := range dims {
			v += (start[i] + off[i]) % d * mul
			mul *= d
		}
		out = append(out, v)
		i := 0
		for ; i < len(dims); i++ {
			if off[i]++; off[i] < size[i] {
				break
			}
			off[i] = 0
		}
		if i == len(dims) {
			return out
		}
	}
}
