package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/icn-hpc/icn/multiring"
)

// The slotted-ring simulator takes its route schedules from package
// multiring (multiring.Schedule: one parser of ring steps, one schedule
// type, one shortest-path rule); it adds only its own size limits.

// MaxRingNodes bounds the multiring size the simulator takes.
const MaxRingNodes = 1 << 12

// MaxRingRings bounds the simulator's simplex rings, copies included.
const MaxRingRings = 256

// CheckRingSize says whether the simulator takes schedule s: at most
// MaxRingNodes nodes and MaxRingRings rings (multiring allows more for
// its analysis).
func CheckRingSize(s *multiring.Schedule) error {
	if s.M.N > MaxRingNodes {
		return fmt.Errorf("multiring of N=%d nodes: the ring simulator takes at most %d", s.M.N, MaxRingNodes)
	}
	if k := s.M.Rings(); k > MaxRingRings {
		return fmt.Errorf("multiring of %d rings: the ring simulator takes at most %d", k, MaxRingRings)
	}
	return nil
}

// ringSteps is the simulator's ring numbering, an explicit mapping from
// the schedule: the simulator's ring j is ring j of s.M, whose order New
// fixes (step residues ascending mod N, copies of a ring next to each
// other), written as signed steps in (-N/2, N/2]. For {±1,±3} on 16 nodes
// that is [1 3 -3 -1] — not [1 -1 3 -3], the order in which
// multiring.ParseSteps lists "±1,±3". Ring j's slots and queues, the
// ring a packet draws from the cumulative shares, and the "steps" of
// RingCapacityResult all follow this order, so simulated figures and
// JSON depend on it; the slotted-ring tests pin it.
func ringSteps(s *multiring.Schedule) []int { return s.M.Signed() }

// ringCore is the slotted multiring (the seed's segmented ring, СК; not
// a register-insertion ring, whose nodes buffer transit packets): every
// simplex ring has one packet slot per link; each cycle every slot advances one
// node. A node removes packets addressed to it and may insert a packet of
// its own into a slot that is empty when it passes (transit traffic has
// priority: "a node transmits whenever the ring at its output is free").
type ringCore struct {
	n, m   int
	steps  []int
	cum    [][]float64 // per route length r: cumulative shares over rings
	slot   []int32     // [ring][node]: destination+1 of the packet on the link leaving node, 0 = free
	born   []int64
	next   []int32
	nextB  []int64
	q      [][]ringPkt // per node×ring FIFO (ring buffers)
	qh, ql []int
	rng    []*rand.Rand
	rate   float64 // packets per node per cycle (at most m)
	now    int64
	// counters
	gen, deliv   int64
	latSum       int64
	queued       int64
	measGen      int64
	measDeliv    int64
	measLat      int64
	measStart    int64
	measEnd      int64
	measDelivWin int64
	ringGen      []int64 // packets assigned to each ring in the window
	ringQueued   []int64 // packets waiting for each ring
}

type ringPkt struct {
	dst  int32
	born int64
}

func newRingCore(s *multiring.Schedule, rate float64, seed uint64) *ringCore {
	n, m := s.M.N, s.M.Rings()
	rc := &ringCore{n: n, m: m, steps: make([]int, m), rate: rate,
		slot: make([]int32, n*m), born: make([]int64, n*m), next: make([]int32, n*m), nextB: make([]int64, n*m),
		q: make([][]ringPkt, n*m), qh: make([]int, n*m), ql: make([]int, n*m), cum: make([][]float64, n),
		measStart: math.MaxInt64, measEnd: math.MaxInt64, ringGen: make([]int64, m), ringQueued: make([]int64, m)}
	for j, st := range ringSteps(s) {
		rc.steps[j] = ((st % n) + n) % n
	}
	for r := 1; r < n; r++ {
		c := make([]float64, m)
		acc := 0.0
		for j := 0; j < m; j++ {
			acc += s.Share(j, r)
			c[j] = acc
		}
		for j := range c {
			c[j] /= acc
		}
		rc.cum[r] = c
	}
	rc.rng = make([]*rand.Rand, n)
	for v := range rc.rng {
		rc.rng[v] = rand.New(rand.NewPCG(seed, uint64(v)+0x72696e67))
	}
	return rc
}

func (rc *ringCore) push(k int, p ringPkt) {
	if rc.ql[k] == len(rc.q[k]) {
		nq := make([]ringPkt, max(8, 2*len(rc.q[k])))
		for i := 0; i < rc.ql[k]; i++ {
			nq[i] = rc.q[k][(rc.qh[k]+i)%len(rc.q[k])]
		}
		rc.q[k], rc.qh[k] = nq, 0
	}
	rc.q[k][(rc.qh[k]+rc.ql[k])%len(rc.q[k])] = p
	rc.ql[k]++
}

// Tick simulates one slot time.
func (rc *ringCore) Tick() {
	n, m := rc.n, rc.m
	t := rc.now
	// Generation: up to m packets per node per slot (m Bernoulli trials of
	// probability rate/m), uniform destinations, ring by schedule.
	pr := rc.rate / float64(m)
	for v := 0; v < n; v++ {
		rng := rc.rng[v]
		for k := 0; k < m; k++ {
			if rng.Float64() >= pr {
				continue
			}
			r := 1 + rng.IntN(n-1)
			u := rng.Float64()
			j := 0
			for j < m-1 && u >= rc.cum[r][j] {
				j++
			}
			rc.push(v*m+j, ringPkt{dst: int32((v + r) % n), born: t})
			rc.gen++
			rc.queued++
			rc.ringQueued[j]++
			if t >= rc.measStart && t < rc.measEnd {
				rc.measGen++
				rc.ringGen[j]++
			}
		}
	}
	// Every slot moves to the next node of its ring, which removes its
	// own packets and fills free slots from its queue.
	for j := 0; j < m; j++ {
		s := rc.steps[j]
		for v := 0; v < n; v++ {
			w := v + s
			if w >= n {
				w -= n
			}
			d := rc.slot[j*n+v]
			b := rc.born[j*n+v]
			if d != 0 && int(d-1) == w {
				lat := t - b + 1
				rc.deliv++
				rc.latSum += lat
				if t >= rc.measStart && t < rc.measEnd {
					rc.measDelivWin++
				}
				if b >= rc.measStart && b < rc.measEnd {
					rc.measDeliv++
					rc.measLat += lat
				}
				d = 0
			}
			if d == 0 {
				k := w*m + j
				if rc.ql[k] > 0 {
					p := rc.q[k][rc.qh[k]]
					rc.qh[k]++
					if rc.qh[k] == len(rc.q[k]) {
						rc.qh[k] = 0
					}
					rc.ql[k]--
					rc.queued--
					rc.ringQueued[j]--
					d, b = p.dst+1, p.born
				}
			}
			rc.next[j*n+w] = d
			rc.nextB[j*n+w] = b
		}
	}
	rc.slot, rc.next = rc.next, rc.slot
	rc.born, rc.nextB = rc.nextB, rc.born
	rc.now++
}

// RingPoint is one load point of a multiring simulation; loads are total
// packets per slot time over all N nodes (the unit of the seed's capacity).
type RingPoint struct {
	Offered    float64 `json:"offered"`
	Accepted   float64 `json:"accepted"`
	LatencyAvg float64 `json:"latency_avg"`
	Backlog    int64   `json:"backlog_growth"`
	Stable     bool    `json:"stable"`
}

// RingRun simulates offered total load C (packets per slot over all nodes).
func RingRun(s *multiring.Schedule, load float64, seed uint64, warmup, cycles int) RingPoint {
	n := s.M.N
	rate := load / float64(n)
	rc := newRingCore(s, math.Min(float64(s.M.Rings()), rate), seed)
	for i := 0; i < warmup; i++ {
		rc.Tick()
	}
	q0 := rc.queued
	rq0 := append([]int64(nil), rc.ringQueued...)
	rc.measStart, rc.measEnd = rc.now, rc.now+int64(cycles)
	for i := 0; i < cycles; i++ {
		rc.Tick()
	}
	pt := RingPoint{Offered: float64(rc.measGen) / float64(cycles), Accepted: float64(rc.measDelivWin) / float64(cycles)}
	if rc.measDeliv > 0 {
		pt.LatencyAvg = float64(rc.measLat) / float64(rc.measDeliv)
	}
	pt.Backlog = rc.queued - q0
	// Stable: no ring's queues grew by more than 0.5% of the packets
	// assigned to it (a load above a ring's capacity grows its queues
	// linearly; below, they stay bounded).
	pt.Stable = true
	for j := range rc.ringQueued {
		if float64(rc.ringQueued[j]-rq0[j]) > 0.005*float64(rc.ringGen[j])+float64(4*n) {
			pt.Stable = false
		}
	}
	return pt
}

// RingCapacityResult is the effective capacity found by simulation.
type RingCapacityResult struct {
	N         int         `json:"n"`
	Steps     []int       `json:"steps"`
	Schedule  string      `json:"schedule"`
	Analytic  float64     `json:"analytic_capacity"`            // N(N-1)/max L_j
	Simulated float64     `json:"simulated_capacity,omitempty"` // largest stable load found (absent when not searched)
	Points    []RingPoint `json:"points,omitempty"`
}

// NewRingCapacityResult is the result for schedule s before any
// simulation: its rings (in the simulator's order, ringSteps) and the
// analytic capacity N(N-1)/max L_j.
func NewRingCapacityResult(s *multiring.Schedule) RingCapacityResult {
	return RingCapacityResult{N: s.M.N, Steps: ringSteps(s), Schedule: s.Name, Analytic: s.Effective()}
}

// RingCapacity finds the largest total load at which the multiring stays
// stable (queues do not grow), by bisection between 0 and the sum of ring
// capacities, iters rounds of cycles slot times each.
func RingCapacity(s *multiring.Schedule, seed uint64, cycles, iters int) RingCapacityResult {
	res := NewRingCapacityResult(s)
	// Upper bound: every link busy, each packet at least one hop.
	n := s.M.N
	lo, hi := 0.0, float64(n*s.M.Rings())
	warm := max(cycles/10, 4*n)
	for i := 0; i < iters; i++ {
		mid := (lo + hi) / 2
		p := RingRun(s, mid, seed, warm, cycles)
		res.Points = append(res.Points, p)
		if p.Stable {
			lo = mid
		} else {
			hi = mid
		}
	}
	res.Simulated = lo
	return res
}
