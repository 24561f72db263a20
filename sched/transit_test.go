package sched

import (
	"math"
	"testing"
)

// TransitLimit rounds ⌈frac·m⌉, counting a product that is an integer
// but for floating-point error as that integer.
func TestTransitLimit(t *testing.T) {
	for _, c := range []struct {
		frac float64
		m    int
		want int
	}{{0.6, 4, 3}, {0.6, 5, 3}, {0.6, 10, 6}, {0.6, 1, 1}, {0.1, 30, 3}, {0.7, 10, 7}, {1, 7, 7}, {0, 5, 0}, {0.25, 0, 0}, {-0.5, 4, 0}, {math.NaN(), 4, 0}} {
		if got := TransitLimit(c.frac, c.m); got != c.want {
			t.Errorf("TransitLimit(%g, %d) = %d, want %d", c.frac, c.m, got, c.want)
		}
	}
}

// An experiment's transit fraction means what --transit-frac means: 0
// (the zero value included) is T = 0, not the T = m of fraction 1.
func TestExperimentTransitLimit(t *testing.T) {
	for _, c := range []struct {
		o    ExperimentOptions
		m    int
		want int
	}{{ExperimentOptions{}, 5, 0}, {ExperimentOptions{TransitFrac: 1}, 5, 5}, {ExperimentOptions{TransitFrac: 0.6}, 5, 3}} {
		if got := c.o.TransitLimit(c.m); got != c.want {
			t.Errorf("ExperimentOptions{TransitFrac: %g}.TransitLimit(%d) = %d, want %d", c.o.TransitFrac, c.m, got, c.want)
		}
	}
}
