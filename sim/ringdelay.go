package sim

import (
	"math"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/multiring"
)

// RingDelay is seed 000's formula (2.1), the delay of a packet in the
// buffers of a ring at load s: τ = F/(c − s), c being the ring's capacity
// (2.2) and s its load (packets per packet time, the unit of c). It is +Inf
// at and above the capacity.
func RingDelay(f, c, s float64) float64 {
	if s >= c {
		return math.Inf(1)
	}
	return f / (c - s)
}

// SlottedRingF is the numerator F of (2.1) for the simulator's slotted
// ring (the seed's СК), in slot times: F = s·(1 − (1 + 1/m)/(2L)), L being
// the mean hops of the ring's packets and m the arrival trials per node
// and slot (the simulator draws m = number of rings Bernoulli trials, so a
// ring's arrivals at a node come in small batches; m = 1 is one Bernoulli
// trial per slot).
//
// It is the mean wait of a discrete-time queue at one node whose head
// packet takes each passing slot that is free or carries a packet for
// this node, slots being taken as independent: with p = s/N arrivals per
// node and slot, a slot is usable with probability q = 1 − p(L − 1) and
// the mean wait is p(L − 1 + (1 − 1/m)/2)/(1 − pL); since c = N/L, that
// is F/(c − s). Busy slots in a real ring come in trains, so the
// simulated wait exceeds this value as the load nears c.
func SlottedRingF(s, hops float64, trials int) float64 {
	if hops <= 0 || trials < 1 {
		return 0
	}
	return s * (1 - (1+1/float64(trials))/(2*hops))
}

// RingDelayModel is formula (2.1) applied ring by ring to a route schedule.
// Ring j carries the share Share[j] of all packets, each Hops[j] hops long
// on average; its capacity is c_j = N/Hops[j] and its load s_j = Share[j]·s.
type RingDelayModel struct {
	N      int       `json:"n"`
	Share  []float64 `json:"share"`
	Hops   []float64 `json:"hops"`
	Trials int       `json:"trials"`
}

// NewRingDelayModel returns the per-ring shares and mean hops of the
// schedule (routes of every length r = 1..N−1 equally likely, as in the
// simulator), rings in the simulator's order (ringSteps).
func NewRingDelayModel(s *multiring.Schedule) RingDelayModel {
	n, k := s.M.N, s.M.Rings()
	m := RingDelayModel{N: n, Share: make([]float64, k), Hops: make([]float64, k), Trials: k}
	for j := range k {
		tot, hops := 0.0, 0.0
		for r := 1; r < n; r++ {
			if p := s.Share(j, r); p > 0 {
				tot += p
				hops += p * float64(s.M.Length(j, r))
			}
		}
		m.Share[j] = tot / float64(n-1)
		if tot > 0 {
			m.Hops[j] = hops / tot
		}
	}
	return m
}

// ZeroLoadLatency is the latency of an unloaded multiring in slot times:
// the slot in which a packet is put on its ring plus one per hop, averaged
// over the rings.
func (m RingDelayModel) ZeroLoadLatency() float64 {
	t := 0.0
	for j, w := range m.Share {
		t += w * (m.Hops[j] + 1)
	}
	return t
}

// Wait is the mean delay (2.1) predicts at total load s (packets per slot
// over all nodes): Σ_j Share[j]·F_j/(c_j − s_j). It is +Inf once a ring is
// at or above its capacity.
func (m RingDelayModel) Wait(s float64) float64 {
	t := 0.0
	for j, w := range m.Share {
		if w == 0 {
			continue
		}
		sj, c := w*s, float64(m.N)/m.Hops[j]
		t += w * RingDelay(SlottedRingF(sj, m.Hops[j], m.Trials), c, sj)
	}
	return t
}

// RingDelayPoint is one load point of a latency sweep: the simulated
// latency beside the one (2.1) predicts. Predictions are null in JSON
// where the load reaches a ring's capacity.
type RingDelayPoint struct {
	Fraction  float64  `json:"load_fraction"` // load / the sweep's base capacity
	Load      float64  `json:"load"`          // offered total load s, packets per slot
	Accepted  float64  `json:"accepted"`
	Latency   float64  `json:"latency_avg"`       // simulated, slot times
	Wait      float64  `json:"wait_avg"`          // simulated latency − zero-load latency
	Tau       *float64 `json:"tau_2_1"`           // wait by (2.1)
	Latency21 *float64 `json:"latency_2_1"`       // zero-load latency + τ
	Ratio     *float64 `json:"wait_over_tau"`     // simulated wait / τ
	Stable    bool     `json:"stable"`            // no ring's queues grew
	Backlog   int64    `json:"backlog_growth"`    // packets queued at the end minus at the start
	ZeroLoad  float64  `json:"zero_load_latency"` // hops + 1, averaged
}

// RingLatencySweep simulates the schedule at the total loads
// fractions[i]·base (packets per slot) and returns the simulated latency
// and the prediction of (2.1) at each. Every point runs warmup then cycles
// slot times with its own generator derived from seed and its index, so
// the result does not depend on workers.
func RingLatencySweep(s *multiring.Schedule, fractions []float64, base float64, seed uint64, warmup, cycles, workers int) []RingDelayPoint {
	m := NewRingDelayModel(s)
	t0 := m.ZeroLoadLatency()
	pts := make([]RingDelayPoint, len(fractions))
	par.For(len(fractions), workers, func(_, i int) {
		load := fractions[i] * base
		p := RingRun(s, load, seed*0x9e3779b97f4a7c15+uint64(i), warmup, cycles)
		pt := RingDelayPoint{Fraction: fractions[i], Load: load, Accepted: p.Accepted, Latency: p.LatencyAvg,
			Wait: p.LatencyAvg - t0, Stable: p.Stable, Backlog: p.Backlog, ZeroLoad: t0}
		if tau := m.Wait(load); !math.IsInf(tau, 0) {
			lat := t0 + tau
			pt.Tau, pt.Latency21 = &tau, &lat
			if tau > 0 {
				r := pt.Wait / tau
				pt.Ratio = &r
			}
		}
		pts[i] = pt
	})
	return pts
}
