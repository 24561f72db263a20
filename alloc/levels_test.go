package alloc

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
)

// TestAfterAboveRises checks afterAbove against after on random sets of
// busy tori: with the rising bound at or below a set's φ it answers that
// φ, above it it gives up, and it computes no level below the first one
// where the raised bound rules the set out.
func TestAfterAboveRises(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 1))
	gaveUpEarly := 0
	for _, spec := range []string{"torus:8x8x8", "torus:6x5x4", "torus:4x4x4x3"} {
		for trial := 0; trial < 20; trial++ {
			s, _ := usedTorus(t, spec, r, trial%4 == 0)
			sel := NewSelector(s)
			sel.prepare(s)
			var free []int
			for v := 0; v < s.N(); v++ {
				if s.Available(v) {
					free = append(free, v)
				}
			}
			n := 1 + r.IntN(max(1, len(free)/2))
			set := slices.Clone(free)
			r.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
			set = set[:n]
			slices.Sort(set)
			c := &candidate{Candidate: Candidate{Active: set, Rect: Rect{Start: make([]int, len(s.Dims())), Size: s.Dims()}, Holes: 1}}
			want := newLevelCache(sel, s).after(c)
			for _, delta := range []int64{-1, 0, 1, int64(s.N())} {
				lc := newLevelCache(sel, s)
				var rising atomic.Int64
				rising.Store(want.Phi + delta)
				got, ok := lc.afterAbove(c, 0, &rising, &takenSet{})
				if ok != (delta <= 0) {
					t.Fatalf("%s set %v: bound φ%+d: ok %v", spec, set, delta, ok)
				}
				if ok && got != want {
					t.Fatalf("%s set %v: bound φ%+d: %+v, after says %+v", spec, set, delta, got, want)
				}
				// No level is computed once the bound rules the set out.
				computed := 0
				for i := range lc.levels {
					if lc.levels[i].rects != nil || lc.levels[i].complete {
						computed = i + 1
					}
				}
				for i := 0; i < computed; i++ {
					if int64(s.N())*int64(lc.most[i]) < rising.Load() {
						t.Fatalf("%s set %v: level %d computed though its bound %d is below %d", spec, set, i, int64(s.N())*int64(lc.most[i]), rising.Load())
					}
				}
				if delta == int64(s.N()) && computed < len(lc.levels) {
					gaveUpEarly++
				}
			}
			// The bound rises while the first level is computed (as
			// another worker's candidate would raise it): no second
			// level is computed.
			lc := newLevelCache(sel, s)
			var rising atomic.Int64
			lc.stop = func() bool {
				rising.Store(int64(s.N()) * int64(s.N()+1))
				return false
			}
			got, ok := lc.afterAbove(c, 0, &rising, &takenSet{})
			computed := 0
			for i := range lc.levels {
				if lc.levels[i].rects != nil || lc.levels[i].complete {
					computed++
				}
			}
			if computed > 1 || (ok && got != want) {
				t.Fatalf("%s set %v: bound raised during the first level: %d levels computed, %+v %v (want %+v)", spec, set, computed, got, ok, want)
			}
		}
	}
	if gaveUpEarly == 0 {
		t.Fatal("no evaluation gave up before the last level")
	}
}
