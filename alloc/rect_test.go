package alloc

import (
	"slices"
	"sort"
	"testing"
)

// TestShapesOrder checks Shapes against the definition: every size once,
// largest volume first, ties in lexicographic order; appending to one
// size never changes the next.
func TestShapesOrder(t *testing.T) {
	for _, dims := range [][]int{{4, 4, 2}, {5, 3}, {3, 2, 2, 3}, {7}, {24, 23, 24, 2, 3, 2}} {
		var want [][]int
		var rec func(p []int)
		rec = func(p []int) {
			if len(p) == len(dims) {
				want = append(want, slices.Clone(p))
				return
			}
			for x := 1; x <= dims[len(p)]; x++ {
				rec(append(p, x))
			}
		}
		rec(nil)
		sort.SliceStable(want, func(a, b int) bool { return vol(want[a]) > vol(want[b]) })
		got := Shapes(dims)
		if len(got) != len(want) {
			t.Fatalf("%v: %d shapes, want %d", dims, len(got), len(want))
		}
		for k := range want {
			if !slices.Equal(got[k], want[k]) {
				t.Fatalf("%v: shape %d is %v, want %v", dims, k, got[k], want[k])
			}
		}
		if len(got) > 1 {
			next := slices.Clone(got[1])
			_ = append(got[0], 99)
			if !slices.Equal(got[1], next) {
				t.Fatalf("%v: appending to the first shape changed the second", dims)
			}
		}
	}
}
