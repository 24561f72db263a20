package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// RingSchedule is a route schedule of a non-switched multiring (seed 000
// §2): N nodes, simplex rings with the given signed steps (ring j carries a
// packet from X to X+Steps[j] mod N), and Shares[j][r], the share of
// routes of ring-1 length r (destination r ahead of the source) sent on
// ring j. A packet rides one ring from source to destination.
type RingSchedule struct {
	N      int
	Steps  []int
	Shares [][]float64 // [ring][r], r = 0..N-1; r = 0 unused
	Name   string
}

// MaxRingNodes bounds the multiring size.
const MaxRingNodes = 1 << 12

// ParseRingSteps parses duplex or simplex ring steps: "±1,±3" gives the
// rings 1, 3, −3, −1 (the seed's order: ascending mod N); "1,-1,3" gives
// exactly those simplex rings. copies repeats every ring (Gemini's four
// identical ±1 rings: "±1" with copies 4).
func ParseRingSteps(s string, n, copies int) ([]int, error) {
	if n < 2 || n > MaxRingNodes {
		return nil, fmt.Errorf("node count N=%d out of range 2..%d", n, MaxRingNodes)
	}
	if copies < 1 || copies > 64 {
		return nil, fmt.Errorf("copies=%d out of range 1..64", copies)
	}
	var base []int
	for _, tok := range strings.Split(s, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		duplex := false
		for _, p := range []string{"±", "+-", "+/-"} {
			if strings.HasPrefix(tok, p) {
				tok, duplex = tok[len(p):], true
				break
			}
		}
		v, err := strconv.Atoi(tok)
		if err != nil {
			return nil, fmt.Errorf("ring step %q is not a whole number", tok)
		}
		m := ((v % n) + n) % n
		if m == 0 {
			return nil, fmt.Errorf("ring step %d is 0 or a multiple of N=%d", v, n)
		}
		base = append(base, m)
		if duplex && n-m != m {
			base = append(base, n-m)
		}
	}
	if len(base) == 0 {
		return nil, fmt.Errorf("no ring steps")
	}
	// Seed order: ascending residues; copies next to each other.
	for i := 1; i < len(base); i++ {
		for j := i; j > 0 && base[j] < base[j-1]; j-- {
			base[j], base[j-1] = base[j-1], base[j]
		}
	}
	var out []int
	for _, m := range base {
		for k := 0; k < copies; k++ {
			if m > n/2 {
				out = append(out, m-n)
			} else {
				out = append(out, m)
			}
		}
	}
	if len(out) > 256 {
		return nil, fmt.Errorf("%d rings: at most 256 are supported", len(out))
	}
	return out, nil
}

// ringLength returns the hops from 0 to r on a ring of step s (N nodes),
// or -1 if the ring does not reach r.
func ringLength(n, s, r int) int {
	x := 0
	s = ((s % n) + n) % n
	for h := 0; h < n; h++ {
		if x == r {
			return h
		}
		x = (x + s) % n
	}
	return -1
}

// ShortestRingSchedule is the seed's simplest rule (table 2.2): a route
// goes to the rings on which it is shortest, split equally among them.
func ShortestRingSchedule(n int, steps []int) (*RingSchedule, error) {
	if n < 2 || n > MaxRingNodes {
		return nil, fmt.Errorf("node count N=%d out of range 2..%d", n, MaxRingNodes)
	}
	s := &RingSchedule{N: n, Steps: steps, Name: "shortest", Shares: make([][]float64, len(steps))}
	for j := range steps {
		s.Shares[j] = make([]float64, n)
	}
	for r := 1; r < n; r++ {
		best, cnt := math.MaxInt, 0
		for _, st := range steps {
			l := ringLength(n, st, r)
			if l < 0 {
				continue
			}
			if l < best {
				best, cnt = l, 1
			} else if l == best {
				cnt++
			}
		}
		if cnt == 0 {
			return nil, fmt.Errorf("no ring reaches route length %d on N=%d", r, n)
		}
		for j, st := range steps {
			if ringLength(n, st, r) == best {
				s.Shares[j][r] = 1 / float64(cnt)
			}
		}
	}
	return s, nil
}

// ParseRingSchedule reads a schedule as printed by `icn multiring capacity
// --json` (keys n, steps and table[].shares, shares listed for route
// lengths 1..N-1) or the plain form {"n":…, "steps":[…], "shares":[[…]…]}
// with the same share rows.
func ParseRingSchedule(data []byte) (*RingSchedule, error) {
	var f struct {
		N        int    `json:"n"`
		Steps    []int  `json:"steps"`
		Schedule string `json:"schedule"`
		Table    []struct {
			Shares []float64 `json:"shares"`
		} `json:"table"`
		Shares [][]float64 `json:"shares"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("ring schedule: %v", oneLine(err.Error()))
	}
	if f.N < 2 || f.N > MaxRingNodes {
		return nil, fmt.Errorf("ring schedule: n=%d out of range 2..%d", f.N, MaxRingNodes)
	}
	if len(f.Steps) == 0 || len(f.Steps) > 256 {
		return nil, fmt.Errorf("ring schedule: want 1..256 ring steps, got %d", len(f.Steps))
	}
	rows := f.Shares
	if rows == nil {
		for _, t := range f.Table {
			rows = append(rows, t.Shares)
		}
	}
	if len(rows) != len(f.Steps) {
		return nil, fmt.Errorf("ring schedule: %d share rows for %d rings", len(rows), len(f.Steps))
	}
	name := f.Schedule
	if name == "" {
		name = "table"
	}
	s := &RingSchedule{N: f.N, Steps: f.Steps, Name: name, Shares: make([][]float64, len(rows))}
	for j, row := range rows {
		if len(row) != f.N-1 {
			return nil, fmt.Errorf("ring schedule: ring %d lists %d shares, want %d (route lengths 1..%d)", j+1, len(row), f.N-1, f.N-1)
		}
		s.Shares[j] = append([]float64{0}, row...)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks that shares are in [0,1], zero on rings that cannot
// carry a route, and sum to 1 for every route length.
func (s *RingSchedule) Validate() error {
	for j, st := range s.Steps {
		if ((st%s.N)+s.N)%s.N == 0 {
			return fmt.Errorf("ring schedule: ring step %d is 0 or a multiple of N=%d", st, s.N)
		}
		if len(s.Shares[j]) != s.N {
			return fmt.Errorf("ring schedule: ring %d has %d shares, want %d", j+1, len(s.Shares[j]), s.N)
		}
	}
	for r := 1; r < s.N; r++ {
		sum := 0.0
		for j, st := range s.Steps {
			p := s.Shares[j][r]
			if math.IsNaN(p) || p < 0 || p > 1 {
				return fmt.Errorf("ring schedule: share %g of route length %d on ring %d is not in [0,1]", p, r, st)
			}
			if p > 0 && ringLength(s.N, st, r) < 0 {
				return fmt.Errorf("ring schedule: ring %d cannot carry route length %d but gets share %g", st, r, p)
			}
			sum += p
		}
		if math.Abs(sum-1) > 1e-6 {
			return fmt.Errorf("ring schedule: shares of route length %d sum to %g, not 1", r, sum)
		}
	}
	return nil
}

// Analytic returns the effective capacity C = N(N-1)/L of the schedule,
// L being the largest weighted length L_j = Σ_r l_j(r)·p_jr (seed 2.5),
// and the loads L_j.
func (s *RingSchedule) Analytic() (float64, []float64) {
	loads := make([]float64, len(s.Steps))
	L := 0.0
	for j, st := range s.Steps {
		for r := 1; r < s.N; r++ {
			if p := s.Shares[j][r]; p > 0 {
				loads[j] += p * float64(ringLength(s.N, st, r))
			}
		}
		L = math.Max(L, loads[j])
	}
	return float64(s.N) * float64(s.N-1) / L, loads
}

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

func newRingCore(s *RingSchedule, rate float64, seed uint64) *ringCore {
	n, m := s.N, len(s.Steps)
	rc := &ringCore{n: n, m: m, steps: make([]int, m), rate: rate,
		slot: make([]int32, n*m), born: make([]int64, n*m), next: make([]int32, n*m), nextB: make([]int64, n*m),
		q: make([][]ringPkt, n*m), qh: make([]int, n*m), ql: make([]int, n*m), cum: make([][]float64, n),
		measStart: math.MaxInt64, measEnd: math.MaxInt64, ringGen: make([]int64, m), ringQueued: make([]int64, m)}
	for j, st := range s.Steps {
		rc.steps[j] = ((st % n) + n) % n
	}
	for r := 1; r < n; r++ {
		c := make([]float64, m)
		acc := 0.0
		for j := 0; j < m; j++ {
			acc += s.Shares[j][r]
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
func RingRun(s *RingSchedule, load float64, seed uint64, warmup, cycles int) RingPoint {
	rate := load / float64(s.N)
	rc := newRingCore(s, math.Min(float64(len(s.Steps)), rate), seed)
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
		if float64(rc.ringQueued[j]-rq0[j]) > 0.005*float64(rc.ringGen[j])+float64(4*s.N) {
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

// RingCapacity finds the largest total load at which the multiring stays
// stable (queues do not grow), by bisection between 0 and the sum of ring
// capacities, iters rounds of cycles slot times each.
func RingCapacity(s *RingSchedule, seed uint64, cycles, iters int) RingCapacityResult {
	an, _ := s.Analytic()
	res := RingCapacityResult{N: s.N, Steps: s.Steps, Schedule: s.Name, Analytic: an}
	// Upper bound: every link busy, each packet at least one hop.
	lo, hi := 0.0, float64(s.N*len(s.Steps))
	warm := max(cycles/10, 4*s.N)
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
