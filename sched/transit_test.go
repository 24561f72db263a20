package sched

import "testing"

// TransitLimit rounds ⌈frac·m⌉, counting a product that is an integer
// but for floating-point error as that integer.
func TestTransitLimit(t *testing.T) {
	for _, c := range []struct {
		frac float64
		m    int
		want int
	}{{0.6, 4, 3}, {0.6, 5, 3}, {0.6, 10, 6}, {0.6, 1, 1}, {0.1, 30, 3}, {0.7, 10, 7}, {1, 7, 7}, {0, 5, 0}, {0.25, 0, 0}} {
		if got := TransitLimit(c.frac, c.m); got != c.want {
			t.Errorf("TransitLimit(%g, %d) = %d, want %d", c.frac, c.m, got, c.want)
		}
	}
}
