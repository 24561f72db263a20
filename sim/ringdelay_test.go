package sim

import (
	"math"
	"testing"

	"github.com/icn-hpc/icn/multiring"
)

// shortestRing is the shortest schedule of the multiring of n nodes with
// the given steps, each ring copies times.
func shortestRing(t testing.TB, n int, steps string, copies int) *multiring.Schedule {
	t.Helper()
	st, err := multiring.ParseSteps(steps)
	if err != nil {
		t.Fatal(err)
	}
	m, err := multiring.NewCopies(n, st, copies)
	if err != nil {
		t.Fatal(err)
	}
	return m.Shortest()
}

// TestRingDelayFormula checks (2.1) and F against values worked out by
// hand from the formulas.
func TestRingDelayFormula(t *testing.T) {
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %.15g, want %.15g", name, got, want)
		}
	}
	near("RingDelay(2.5, 4, 2)", RingDelay(2.5, 4, 2), 1.25)
	near("RingDelay(3, 8, 5)", RingDelay(3, 8, 5), 1)
	if d := RingDelay(1, 4, 4); !math.IsInf(d, 1) {
		t.Errorf("RingDelay at s = c = %g, want +Inf", d)
	}
	if d := RingDelay(1, 4, 5); !math.IsInf(d, 1) {
		t.Errorf("RingDelay above c = %g, want +Inf", d)
	}
	near("SlottedRingF(1, 2, 1)", SlottedRingF(1, 2, 1), 0.5)   // 1·(1 − 2/4)
	near("SlottedRingF(2, 4, 2)", SlottedRingF(2, 4, 2), 1.625) // 2·(1 − 1.5/8)
	near("SlottedRingF(0, 3, 1)", SlottedRingF(0, 3, 1), 0)     // no load, no wait
	near("SlottedRingF(4, 1, 1)", SlottedRingF(4, 1, 1), 0)     // one-hop packets never wait on transit

	// One simplex ring, N = 4: routes of 1, 2, 3 hops, L = 2, c = N/L = 2,
	// one trial per slot. At s = 1: F = 1·(1 − 1/2) = 0.5, τ = 0.5/(2 − 1).
	// The same from the queue: p = 1/4, q = 1 − p(L−1) = 3/4,
	// W = (1 − q)/(q − p) = 0.5.
	one := shortestRing(t, 4, "1", 1)
	m := NewRingDelayModel(one)
	near("simplex N=4 hops", m.Hops[0], 2)
	near("simplex N=4 zero-load latency", m.ZeroLoadLatency(), 3)
	near("simplex N=4 wait at s=1", m.Wait(1), 0.5)
	if w := m.Wait(2); !math.IsInf(w, 1) {
		t.Errorf("simplex N=4 wait at s = c = 2: %g, want +Inf", w)
	}

	// Duplex ±1, N = 4, shortest: ring +1 carries r=1 (1 hop) and half of
	// r=2 (2 hops): share 1.5/3 = 1/2, mean hops (1 + 1)/1.5 = 4/3, so
	// c_j = 3 and the rings' sum is the analytic C = 12/2 = 6. At s = 2,
	// s_j = 1, m = 2: F = 1·(1 − 1.5/(8/3)) = 7/16, τ_j = (7/16)/2 = 7/32,
	// and the multiring's wait is ½·7/32 + ½·7/32 = 7/32.
	dup := shortestRing(t, 4, "±1", 1)
	m = NewRingDelayModel(dup)
	for j := range m.Share {
		near("duplex N=4 share", m.Share[j], 0.5)
		near("duplex N=4 hops", m.Hops[j], 4.0/3)
	}
	near("duplex N=4 zero-load latency", m.ZeroLoadLatency(), 7.0/3)
	near("duplex N=4 wait at s=2", m.Wait(2), 7.0/32)
	if c := dup.Effective(); math.Abs(c-6) > 1e-12 {
		t.Errorf("duplex N=4 analytic C = %g, want 6 = Σ N/L_j", c)
	}
}

// TestRingDelayLowLoad: at low load the simulated latency approaches the
// latency (2.1) predicts. The tolerance is four standard errors of the
// simulated mean (the latency's spread at low load is the spread of the
// hop counts, computed from the schedule) plus 10% of τ: the
// independent-slot model behind F is exact to first order in the load and
// its error grows with it (5–7% of τ at 0.2 C in these cases).
func TestRingDelayLowLoad(t *testing.T) {
	short16 := shortestRing(t, 16, "±1,±3", 1)
	bal16, err := BuiltinSchedule("seed-table-2.3")
	if err != nil {
		t.Fatal(err)
	}
	gem32 := shortestRing(t, 32, "±1", 4)
	cycles := 20000
	if raceEnabled {
		cycles = 4000 // the tolerance widens with the standard error
	}
	for _, s := range []*multiring.Schedule{short16, bal16, gem32} {
		c := s.Effective()
		m := NewRingDelayModel(s)
		sd := hopSpread(s)
		fr := []float64{0.05, 0.2}
		pts := RingLatencySweep(s, fr, c, 7, cycles/10, cycles, 0)
		for _, p := range pts {
			if p.Latency21 == nil {
				t.Fatalf("N=%d %v at %.2f C: no prediction", s.M.N, ringSteps(s), p.Fraction)
			}
			se := sd / math.Sqrt(p.Load*float64(cycles))
			tol := 4*se + 0.1**p.Tau
			if d := p.Latency - *p.Latency21; math.Abs(d) > tol {
				t.Errorf("N=%d %v %s at %.2f C: simulated latency %.4f, (2.1) %.4f (zero-load %.4f + τ %.4f): off by %.4f > %.4f",
					s.M.N, ringSteps(s), s.Name, p.Fraction, p.Latency, *p.Latency21, m.ZeroLoadLatency(), *p.Tau, d, tol)
			}
		}
	}
}

// hopSpread is the standard deviation of a packet's hop count under the
// schedule (uniform route lengths).
func hopSpread(s *multiring.Schedule) float64 {
	var m1, m2 float64
	n := s.M.N
	for j := range s.M.Rings() {
		for r := 1; r < n; r++ {
			if p := s.Share(j, r); p > 0 {
				h := float64(s.M.Length(j, r))
				m1 += p * h
				m2 += p * h * h
			}
		}
	}
	m1 /= float64(n - 1)
	m2 /= float64(n - 1)
	return math.Sqrt(m2 - m1*m1)
}

// TestRingSlotTrains measures why (2.1)'s F underestimates the simulated
// wait at high load: F takes the slots a node sees as independent, but
// busy slots come in trains, so a slot right after an unusable one is
// less often usable than slots on average, and a waiting packet waits
// longer than the independent model says.
func TestRingSlotTrains(t *testing.T) {
	s := shortestRing(t, 32, "±1", 4)
	c := s.Effective()
	for _, f := range []float64{0.5, 0.8} {
		cycles := 20000
		if raceEnabled {
			cycles = 4000
		}
		pu, pub := slotUsability(s, f*c, 2000, cycles)
		t.Logf("N=32 four ±1 rings at %.1f C: P(slot usable) = %.4f, P(usable | previous slot not) = %.4f", f, pu, pub)
		if pub >= pu-0.02 {
			t.Errorf("at %.1f C: P(usable | previous not) = %.4f is not below P(usable) = %.4f: no slot trains", f, pub, pu)
		}
	}
}

// slotUsability runs the simulator at the given load and returns, over
// every node of every ring, the share of slots arriving at a node that it
// could use (free, or carrying a packet for it), and that share among the
// slots that follow an unusable one.
func slotUsability(s *multiring.Schedule, load float64, warmup, cycles int) (pu, puAfterBusy float64) {
	rc := newRingCore(s, load/float64(s.M.N), 11)
	for i := 0; i < warmup; i++ {
		rc.Tick()
	}
	prev := make([]bool, rc.n*rc.m)
	var seen, usable, afterBusy, usableAfterBusy int
	for i := 0; i < cycles; i++ {
		for j := 0; j < rc.m; j++ {
			for w := 0; w < rc.n; w++ {
				v := (w - rc.steps[j] + rc.n) % rc.n
				d := rc.slot[j*rc.n+v]
				u := d == 0 || int(d-1) == w
				k := j*rc.n + w
				if i > 0 {
					seen++
					if u {
						usable++
					}
					if !prev[k] {
						afterBusy++
						if u {
							usableAfterBusy++
						}
					}
				}
				prev[k] = u
			}
		}
		rc.Tick()
	}
	return float64(usable) / float64(seen), float64(usableAfterBusy) / float64(afterBusy)
}
