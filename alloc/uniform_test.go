package alloc

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// TestUniformMatchesEnumeration compares the uniform path (one placement
// per size on an empty torus) with the direct enumeration on small empty
// tori: the same set, rectangle, counts, φ and table figures.
func TestUniformMatchesEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 1))
	specs := []string{"torus:4x4x4", "torus:6x4x2", "torus:5x3x4", "torus:8x4", "torus:4x4x2x2", "torus:3x5x2"}
	for trial := 0; trial < 60; trial++ {
		spec := specs[trial%len(specs)]
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		rt, err := NewAngaraRouter(g, []string{"angara*", "angara"}[trial%2])
		if err != nil {
			t.Fatal(err)
		}
		m := 1 + r.IntN(s.N()/2)
		req := Request{Nodes: m, Transit: r.IntN(m/2 + 2)}
		want, err := NewSelector(s).Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		sel := NewSelector(s)
		sel.tune.forceUniform = true
		got, err := sel.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s m=%d T=%d", spec, m, req.Transit)
		if got.Found != want.Found || got.Distinct != want.Distinct || got.Examined != want.Examined || got.Ranked != want.Ranked {
			t.Fatalf("%s: uniform found %d distinct %d examined %d ranked %d, enumeration %d %d %d %d", name,
				got.Found, got.Distinct, got.Examined, got.Ranked, want.Found, want.Distinct, want.Examined, want.Ranked)
		}
		if (got.Chosen == nil) != (want.Chosen == nil) {
			t.Fatalf("%s: uniform chose %v, enumeration %v", name, got.Chosen, want.Chosen)
		}
		if want.Chosen == nil {
			continue
		}
		a, b := got.Chosen, want.Chosen
		if !reflect.DeepEqual(a.Active, b.Active) || !reflect.DeepEqual(a.Transit, b.Transit) ||
			!reflect.DeepEqual(a.Rect, b.Rect) || a.Frag != b.Frag || !reflect.DeepEqual(a.Figures, b.Figures) {
			t.Fatalf("%s: uniform chose %+v, enumeration %+v", name, a, b)
		}
		// With a budget, questions for sets that cannot tie on φ are
		// not asked: the same transit count and φ, complete for
		// criteria 1–2 at least.
		req.Budget = time.Hour
		sel = NewSelector(s)
		sel.tune.forceUniform = true
		bud, err := sel.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		if bud.Chosen == nil || len(bud.Chosen.Transit) != len(b.Transit) || bud.Chosen.Frag != b.Frag ||
			bud.Found != want.Found || bud.Complete < CompletePhi || bud.Distinct > want.Distinct {
			t.Fatalf("%s: uniform with a budget chose %+v (found %d, distinct %d, complete %d), enumeration %+v (%d, %d)",
				name, bud.Chosen, bud.Found, bud.Distinct, bud.Complete, b, want.Found, want.Distinct)
		}
	}
}

// TestEmptyPhiMatchesPhi checks φ after a set taken from an empty torus,
// from the shapes of the free rectangles, against Phi on the state with
// the set taken, for boxes and reduced blocks of random sizes.
func TestEmptyPhiMatchesPhi(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 2))
	for trial := 0; trial < 200; trial++ {
		spec := []string{"torus:4x4x4", "torus:6x4x2", "torus:5x3x4", "torus:8x4", "torus:4x3x2x2"}[trial%5]
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		dims := s.Dims()
		size := make([]int, len(dims))
		start := make([]int, len(dims))
		for i, d := range dims {
			size[i] = 1 + r.IntN(d)
			if size[i] < d {
				start[i] = r.IntN(d)
			}
		}
		v := vol(size)
		m := 1 + r.IntN(v)
		var keep []int
		if r.IntN(2) == 0 {
			keep = []int{}
			for j := 0; j < v-m; j++ {
				if r.IntN(2) == 0 {
					keep = append(keep, j)
				}
			}
		}
		c := &candidate{}
		c.Rect = Rect{Start: start, Size: size}
		c.block = blockSet{start: start, size: size, m: m, keep: keep}
		c.lazy = &c.block
		c.nTransit = v - m
		if keep != nil {
			c.nTransit = len(keep)
		}
		sel := NewSelector(s)
		sel.prepare(s)
		rt, err := NewAngaraRouter(g, "angara*")
		if err != nil {
			t.Fatal(err)
		}
		d := sel.newDecision(s, rt, Request{Nodes: m})
		got, ok := d.emptyPhi(c, 0)
		active, transit := c.lazy.nodes(dims)
		after := s.Clone()
		if err := after.Occupy(1, append(active, transit...)); err != nil {
			t.Fatal(err)
		}
		if want := Phi(after); !ok || got != want {
			t.Fatalf("%s set %v m=%d keep %v: emptyPhi %+v (%v), Phi %+v", spec, c.Rect, m, keep, got, ok, want)
		}
	}
}
