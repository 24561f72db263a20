package alloc

import (
	"math/rand/v2"
	"testing"

	"github.com/icn-hpc/icn/internal/bitset"
	"github.com/icn-hpc/icn/topology"
)

// TestPoorStartsSkipsOnlyPoor scans random sizes' starts, under random
// masks, on random states of small tori, meshes and mixed tori, with
// poorStarts as the seed search and the bounded listing use it: every
// start it skips (or records as skipped) must hold fewer than m
// available nodes (exact: other than m), and every start it lets
// through is visited in order. Some starts must be skipped, or the test
// proves nothing.
func TestPoorStartsSkipsOnlyPoor(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	skipped, recorded := 0, 0
	for _, spec := range []string{"torus:8x4x3", "mesh:7x3x4", "torus:6x5:mesh=Y", "torus:5x3x2x3x2:mesh=Z,V", "torus:70x2"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		for trial := range 40 {
			s, _ := NewState(g)
			busy := r.Float64()
			for v := range s.N() {
				if r.Float64() < busy {
					s.Occupy(1, []int{v})
				}
			}
			gr := newGrid(s)
			dims := s.Dims()
			size := make([]int, len(dims))
			for i, d := range dims {
				size[i] = 1 + r.IntN(d)
			}
			V := vol(size)
			m := 1 + r.IntN(V)
			exact := trial%2 == 0
			mask := make([]uint64, (s.N()+63)/64)
			for v := range s.N() {
				if r.IntN(4) != 0 {
					mask[v/64] |= 1 << (v % 64)
				}
			}
			fails := func(st []int) bool {
				a := V - gr.unavailableSlow(st, size)
				return a < m || exact && a != m
			}
			poor := newPoorStarts(gr, size, m, exact)
			poor.skipped = bitset.New(s.N())
			seen := bitset.New(s.N())
			last := -1
			startsIn(mask, dims, s.wrap, size, dims, poor, func(v int, st []int) bool {
				if v <= last {
					t.Fatalf("%s: start %d after %d", spec, v, last)
				}
				last = v
				seen.Add(v)
				a := V - gr.unavailableSlow(st, size)
				poor.counted(v, st, a)
				return true
			})
			st := make([]int, len(dims))
			placements(dims, s.wrap, size, func(p []int) bool {
				v := enc(p, dims)
				copy(st, p)
				masked := mask[v/64]>>(v%64)&1 == 1
				switch {
				case masked && !seen.Has(v) && !fails(st):
					t.Fatalf("%s %v m=%d exact=%v: start %v (%d available) skipped", spec, size, m, exact, st, V-gr.unavailableSlow(st, size))
				case poor.skipped.Has(v) && !fails(st):
					t.Fatalf("%s %v m=%d exact=%v: start %v (%d available) recorded as skipped", spec, size, m, exact, st, V-gr.unavailableSlow(st, size))
				case masked && !seen.Has(v):
					skipped++
				}
				if poor.skipped.Has(v) {
					recorded++
				}
				return true
			})
		}
	}
	if skipped == 0 || recorded == 0 {
		t.Fatalf("%d starts skipped, %d recorded: the test did not exercise poorStarts", skipped, recorded)
	}
}
