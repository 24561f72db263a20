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
	for _, spec := range []string{"torus:6x6x6", "torus:6x5x4", "torus:4x4x4x3"} {
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
				got, ok := lc.afterAbove(c, &rising, &takenSet{})
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
			got, ok := lc.afterAbove(c, &rising, &takenSet{})
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

// TestStartsInMatchesDecoding compares startsIn with decoding every set
// bit of random masks on random tori, meshes and caps: the same starts,
// in the same order, and it stops when f says so.
func TestStartsInMatchesDecoding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 71))
	for trial := 0; trial < 400; trial++ {
		n := 1 + r.IntN(5)
		dims, wrap, size, cap := make([]int, n), make([]bool, n), make([]int, n), make([]int, n)
		N := 1
		for i := range dims {
			dims[i] = 1 + r.IntN(13)
			wrap[i] = r.IntN(3) > 0
			size[i] = 1 + r.IntN(dims[i])
			cap[i] = 1 + r.IntN(dims[i])
			N *= dims[i]
		}
		mask := make([]uint64, (N+63)/64)
		density := r.Float64()
		for v := 0; v < N; v++ {
			if r.Float64() < density {
				mask[v/64] |= 1 << (v % 64)
			}
		}
		limit := make([]int, n)
		placementLimits(dims, wrap, size, limit)
		var want [][]int
		c := make([]int, n)
	bit:
		for v := 0; v < N; v++ {
			if mask[v/64]&(1<<(v%64)) == 0 {
				continue
			}
			dec(v, dims, c)
			for i := range c {
				if c[i] >= min(limit[i], cap[i]) {
					continue bit
				}
			}
			want = append(want, slices.Clone(c))
		}
		stop := len(want) + 1
		if len(want) > 0 && r.IntN(2) == 0 {
			stop = 1 + r.IntN(len(want))
		}
		var got [][]int
		startsIn(mask, dims, wrap, size, cap, nil, func(v int, st []int) bool {
			if v != enc(st, dims) {
				t.Fatalf("dims %v: start %v given as node %d", dims, st, v)
			}
			got = append(got, slices.Clone(st))
			st[r.IntN(n)] = -1 // f may write into its start
			return len(got) < stop
		})
		if stop <= len(want) {
			want = want[:stop]
		}
		if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
			t.Fatalf("dims %v wrap %v size %v cap %v: startsIn gave %v, decoding %v", dims, wrap, size, cap, got, want)
		}
	}
}
