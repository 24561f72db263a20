package alloc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/routing"

	"github.com/icn-hpc/icn/topology"
)

// TestBlockSharingUnderFailures checks, with every block computed on its
// own, what Select assumes of blocks (rectangles of available nodes with
// no failed link inside) on a torus with failed links elsewhere: each is
// reachable, and all blocks of one size keep the same transit nodes
// (dropTransit outcome) and have the same routing-table figures. Under
// R_A* the extra dependencies accepted depend on the failures anywhere on
// the torus, so this is not obvious.
func TestBlockSharingUnderFailures(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	compared, differ := 0, 0
	for trial := 0; trial < 24; trial++ {
		spec := []string{"torus:4x4x4", "torus:4x3x2x2", "torus:6x6", "torus:5x4x3"}[trial%4]
		g0, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		dims := g0.Dims()
		var links []string
		for range 1 + r.IntN(4) {
			c := make([]string, len(dims))
			for i, d := range dims {
				c[i] = fmt.Sprint(r.IntN(d))
			}
			l := strings.Join(c, ".") + "+" + string("XYZW"[r.IntN(len(dims))])
			if !slices.Contains(links, l) {
				links = append(links, l)
			}
		}
		g, err := g0.ApplyFaults(strings.Join(links, ","), "")
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		rule := []string{"angara*", "angara*", "angara", "angara-"}[trial%4]
		rt, err := NewAngaraRouter(g, rule)
		if err != nil {
			t.Fatal(err)
		}
		sel := NewSelector(s)
		sel.prepare(s)
		m := 2 + r.IntN(8)
		T := 1 + r.IntN(m)
		for _, size := range sel.shapes {
			if v := vol(size); v < m || v > m+T {
				continue
			}
			same := blocksAgree(t, sel, rt, size, m)
			if !same && rt.Props().BlocksLocal {
				t.Fatalf("%s %s links %v: blocks of size %v (m=%d) reduce or route differently but the router shares them",
					spec, rule, links, size, m)
			}
			if !same {
				differ++
			}
			compared++
		}
	}
	// R_A* with failed links does make blocks of one size differ: the
	// case the sharing must exclude exists.
	if compared < 100 || differ == 0 {
		t.Fatalf("%d sizes compared, %d with differing blocks", compared, differ)
	}
}

// blocksAgree computes every block of one size on its own (each must be
// reachable) and reports whether all keep the same transit nodes and have
// the same routing-table figures.
func blocksAgree(t *testing.T, sel *Selector, rt *AngaraRouter, size []int, m int) bool {
	t.Helper()
	type outcome struct {
		keep string
		fig  routing.Figures
	}
	var first *outcome
	same := true
	placements(sel.dims, sel.wrap, size, func(st []int) bool {
		r := Rect{Start: st, Size: size}
		nodes := r.Nodes(sel.dims, nil)
		if sel.internalFault(r, nodes) {
			return true
		}
		active, transit := nodes[:m], nodes[m:]
		ok, err := rt.Reachable(active, transit)
		if err != nil || !ok {
			t.Fatalf("block %v of %v not reachable (%v)", st, size, err)
		}
		keep, err := dropTransit(rt.Reachable, active, transit, -1)
		if err != nil {
			t.Fatal(err)
		}
		kept := make([]int, len(keep))
		for i, x := range keep {
			kept[i] = transit[x]
		}
		fig, _, err := rt.Table(context.Background(), active, kept, routing.BuildOptions{})
		if err != nil {
			t.Fatalf("block %v of %v: %v", st, size, err)
		}
		o := outcome{fmt.Sprint(keep), fig}
		if first == nil {
			first = &o
		} else if o != *first {
			same = false
		}
		return true
	})
	return same
}

// verifiedOnly hides AngaraRouter's unverified tables: every tie-break
// table is built and verified. It keeps the sharing promises.
type verifiedOnly struct{ a *AngaraRouter }

func (v verifiedOnly) Props() RouterProps {
	p := v.a.Props()
	return RouterProps{TranslationInvariant: p.TranslationInvariant, BlocksLocal: p.BlocksLocal}
}

func (v verifiedOnly) Reachable(active, transit []int) (bool, error) {
	return v.a.Reachable(active, transit)
}

func (v verifiedOnly) ReachableWithHints(active, transit []int, _ [][2]int) (bool, [2]int, error) {
	ok, err := v.a.Reachable(active, transit)
	return ok, [2]int{-1, -1}, err
}

// Table builds and verifies the table even when asked for it
// unverified (none is left to verify).
func (v verifiedOnly) Table(ctx context.Context, active, transit []int, o routing.BuildOptions) (routing.Figures, *routing.Table, error) {
	o.Unverified = false
	return v.a.Table(ctx, active, transit, o)
}

func (v verifiedOnly) VerifyUnverified(context.Context, *routing.Table, int) error { return nil }

// TestUnverifiedTieBreak checks that ranking tie-break tables built
// without verification (only the winner verified) chooses what building
// and verifying every table chooses, with the same figures.
func TestUnverifiedTieBreak(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 23))
	multi := 0
	for trial := 0; trial < 40; trial++ {
		spec := []string{"torus:4x4x4", "torus:4x4x2x2", "torus:6x4x3", "torus:8x4"}[trial%4]
		s := randomState(t, spec, 0.4*r.Float64(), r)
		rt, err := NewAngaraRouter(s.g, "angara*")
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Nodes: 2 + r.IntN(12), Algo: Improved}
		req.Transit = r.IntN(req.Nodes/2 + 1)
		got, err := NewSelector(s).Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := NewSelector(s).Select(s, verifiedOnly{rt}, req)
		if err != nil {
			t.Fatal(err)
		}
		if (got.Chosen == nil) != (want.Chosen == nil) {
			t.Fatalf("%s %+v: chosen %v vs %v", spec, req, got.Chosen, want.Chosen)
		}
		if got.Chosen == nil {
			continue
		}
		if got.Tables > 1 {
			multi++
		}
		g, w := got.Chosen, want.Chosen
		if setKey(g.Active, g.Transit) != setKey(w.Active, w.Transit) || *g.Figures != *w.Figures || got.Tables != want.Tables {
			t.Fatalf("%s %+v: unverified ranking chose %v %+v (%d tables), verified %v %+v (%d)",
				spec, req, g.Rect, *g.Figures, got.Tables, w.Rect, *w.Figures, want.Tables)
		}
	}
	if multi < 5 {
		t.Fatalf("only %d decisions compared more than one table", multi)
	}
}
