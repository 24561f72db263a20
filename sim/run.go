package sim

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// Point is the result of one simulation at one offered load. Loads are in
// flits per terminal per cycle; latencies in cycles from the creation of a
// packet (source queueing included) to the ejection of its tail.
type Point struct {
	Offered        float64 `json:"offered"`
	Injected       float64 `json:"injected"` // load actually generated in the measurement window
	Accepted       float64 `json:"accepted"` // flits ejected per terminal per cycle in the window
	LatencyAvg     float64 `json:"latency_avg"`
	LatencyP50     float64 `json:"latency_p50"`
	LatencyP99     float64 `json:"latency_p99"`
	LatencyMax     float64 `json:"latency_max"`
	HopsAvg        float64 `json:"hops_avg"`
	Packets        int64   `json:"packets"` // measured packets delivered
	WarmupCycles   int64   `json:"warmup_cycles"`
	Converged      bool    `json:"converged"` // warm-up reached steady latency and throughput
	Drained        bool    `json:"drained"`   // every measured packet arrived within the drain limit
	Stable         bool    `json:"stable"`    // drained and accepted ≥ 95% of injected
	Cycles         int64   `json:"cycles"`    // cycles simulated in total
	Conserved      bool    `json:"conserved"` // flit and packet conservation verified
	Deadlock       string  `json:"deadlock,omitempty"`
	MeasuredUnsent int64   `json:"measured_undelivered,omitempty"`
	// MaxVCWait is the longest an occupied input VC went without moving a
	// flit (cycles, whole run): blocking plus any allocation starvation.
	MaxVCWait int64 `json:"max_vc_wait"`
}

// stableFraction is the share of the injected load a stable network must
// deliver during the measurement window.
const stableFraction = 0.95

func (c *Core) sum() counters {
	var s counters
	for i := range c.workers {
		w := &c.workers[i].st
		s.injFlits += w.injFlits
		s.ejFlits += w.ejFlits
		s.genPkts += w.genPkts
		s.delivPkts += w.delivPkts
		s.winGenFlits += w.winGenFlits
		s.winEjFlits += w.winEjFlits
		s.measGen += w.measGen
		s.measDeliv += w.measDeliv
		s.latSum += w.latSum
		s.hopSum += w.hopSum
		s.perLat += w.perLat
		s.perCnt += w.perCnt
		s.perEj += w.perEj
		s.moved += w.moved
		s.maxWait = max(s.maxWait, w.maxWait)
		s.lastDelivery = max(s.lastDelivery, w.lastDelivery)
		if len(w.hist) > len(s.hist) {
			nh := make([]int64, len(w.hist))
			copy(nh, s.hist)
			s.hist = nh
		}
		for i, x := range w.hist {
			s.hist[i] += x
		}
		s.errs = append(s.errs, w.errs...)
	}
	return s
}

// measTotals returns the measured packets generated and delivered so far:
// two running totals per worker, cheap enough to read every cycle.
func (c *Core) measTotals() (gen, deliv int64) {
	for i := range c.workers {
		gen += c.workers[i].st.measGen
		deliv += c.workers[i].st.measDeliv
	}
	return gen, deliv
}

// measDelivered returns the measured packets delivered so far.
func (c *Core) measDelivered() int64 {
	_, d := c.measTotals()
	return d
}

func (c *Core) resetPeriod() {
	for i := range c.workers {
		w := &c.workers[i].st
		w.perLat, w.perCnt, w.perEj = 0, 0, 0
	}
}

// Run simulates one offered load with the warm-up, measurement and drain
// phases (see Core.Measure).
func Run(n *Network, cfg Config) (Point, error) {
	c, err := NewCore(n, cfg)
	if err != nil {
		return Point{}, err
	}
	return c.Measure()
}

// ticker advances a core one cycle (serially or partitioned), or up to k
// cycles where it can run several at once (returning how many).
type ticker interface {
	Tick()
	TickUpTo(k int) int
}

// Measure runs the warm-up, measurement and drain phases on a fresh core:
//
//   - warm-up: Config.Warmup cycles, or sample periods until the mean
//     latency and the accepted throughput of two consecutive periods differ
//     by less than 5% (at most MaxWarmup periods; Converged says whether
//     that happened);
//   - measurement: Config.Cycles cycles; packets created in this window
//     are measured, and the accepted throughput is the flits ejected in it;
//   - drain: traffic keeps flowing until every measured packet has
//     arrived, for at most DrainCycles cycles (Drained says whether they
//     all did).
//
// Conservation is checked at the end. A deadlock ends the run with a
// *DeadlockError.
func (c *Core) Measure() (Point, error) {
	if k := c.partitions(); k > 1 {
		p := newPartitioned(c, k)
		defer p.stop()
		return c.measure(p)
	}
	return c.measure(c)
}

// defaultMinRoutersPerPart is the fewest routers a partition needs to
// pay for its exchanges with the others (one per cycle, or per batch of
// up to Core.ahead cycles); Config.minRoutersPerPart overrides it (tests
// partition small networks).
const defaultMinRoutersPerPart = 128

// partitions returns how many goroutines tick this core: Config.Workers,
// but no more than the network has partitions of defaultMinRoutersPerPart
// routers. The result does not depend on it.
func (c *Core) partitions() int {
	R := len(c.n.portStart) - 1
	per := c.cfg.minRoutersPerPart
	if per <= 0 {
		per = defaultMinRoutersPerPart
	}
	return max(1, min(c.cfg.Workers, R/per))
}

func (c *Core) measure(tk ticker) (Point, error) {
	cfg := c.cfg
	pt := Point{Offered: cfg.Rate}
	if cfg.Warmup > 0 {
		c.runFor(tk, cfg.Warmup)
		pt.Converged = true
	} else {
		pt.Converged = c.warmUp(tk)
	}
	pt.WarmupCycles = c.now
	c.measStart, c.measEnd = c.now, c.now+int64(cfg.Cycles)
	c.runFor(tk, cfg.Cycles)
	c.drain(tk)
	c.fillPoint(&pt)
	if err := c.CheckConservation(); err != nil {
		return pt, err
	}
	pt.Conserved = true
	if c.deadlock != nil {
		pt.Deadlock = c.deadlock.Error()
		pt.Stable = false
		return pt, c.deadlock
	}
	return pt, nil
}

// runFor ticks k cycles; false if a deadlock stopped it.
func (c *Core) runFor(tk ticker, k int) bool {
	for i := 0; i < k; {
		i += tk.TickUpTo(k - i)
		if c.deadlock != nil {
			return false
		}
	}
	return true
}

// warmUp runs sample periods until the latency and throughput of two
// successive ones agree (true) or the period limit or a deadlock ends it.
func (c *Core) warmUp(tk ticker) bool {
	cfg := c.cfg
	T := float64(len(c.terms))
	S := cfg.SamplePeriod
	if S <= 0 {
		S = min(max(cfg.Cycles/5, 200), 2000)
	}
	maxP := cfg.MaxWarmup
	if maxP <= 0 {
		maxP = 20
	}
	prevLat, prevAcc := math.NaN(), math.NaN()
	for p := 0; p < maxP && c.deadlock == nil; p++ {
		c.resetPeriod()
		if !c.runFor(tk, S) {
			break
		}
		s := c.sum()
		lat := 0.0
		if s.perCnt > 0 {
			lat = float64(s.perLat) / float64(s.perCnt)
		}
		acc := float64(s.perEj) / (T * float64(S))
		if relClose(lat, prevLat) && relClose(acc, prevAcc) {
			return true
		}
		prevLat, prevAcc = lat, acc
	}
	return false
}

// drain ticks until every measured packet has arrived, a deadlock occurs
// or the drain limit passes.
func (c *Core) drain(tk ticker) {
	limit := c.cfg.DrainCycles
	if limit <= 0 {
		limit = max(c.cfg.Cycles, 5000)
	}
	for d := 0; d < limit && c.deadlock == nil; d++ {
		if gen, deliv := c.measTotals(); deliv >= gen {
			break
		}
		tk.Tick()
	}
}

// fillPoint sets pt's throughput, latency and hop statistics of the
// measured packets and its drained and stable flags.
func (c *Core) fillPoint(pt *Point) {
	s := c.sum()
	pt.Drained = s.measDeliv >= s.measGen && c.deadlock == nil
	pt.MeasuredUnsent = s.measGen - s.measDeliv
	pt.Cycles = c.now
	W := float64(len(c.terms)) * float64(c.cfg.Cycles)
	pt.Injected = float64(s.winGenFlits) / W
	pt.Accepted = float64(s.winEjFlits) / W
	pt.Packets = s.measDeliv
	pt.MaxVCWait = s.maxWait
	s.latencies(pt)
	pt.Stable = pt.Drained && pt.Accepted >= stableFraction*pt.Injected
}

func relClose(a, b float64) bool {
	if math.IsNaN(b) {
		return false
	}
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 0.05*math.Max(math.Abs(a), math.Abs(b))
}

// latencies sets pt's mean latency and hop count and the latency
// percentiles and maximum of the measured packets.
func (s *counters) latencies(pt *Point) {
	if s.measDeliv == 0 {
		return
	}
	pt.LatencyAvg = float64(s.latSum) / float64(s.measDeliv)
	pt.HopsAvg = float64(s.hopSum) / float64(s.measDeliv)
	pt.LatencyP50 = percentile(s.hist, s.measDeliv, 0.50)
	pt.LatencyP99 = percentile(s.hist, s.measDeliv, 0.99)
	for i := len(s.hist) - 1; i >= 0; i-- {
		if s.hist[i] > 0 {
			pt.LatencyMax = float64(i)
			return
		}
	}
}

// percentile returns the q-quantile of a latency histogram.
func percentile(hist []int64, count int64, q float64) float64 {
	need := int64(math.Ceil(q * float64(count)))
	var acc int64
	for i, x := range hist {
		acc += x
		if acc >= need && x > 0 {
			return float64(i)
		}
	}
	return float64(len(hist) - 1)
}

// RunRates simulates every offered load independently (in parallel on
// workers goroutines, 0 = all cores). Results are in the order of rates
// and do not depend on the number of workers. A deadlock at a load is
// reported in that point, not as an error.
func RunRates(n *Network, cfg Config, rates []float64, workers int, progress func()) ([]Point, error) {
	pts := make([]Point, len(rates))
	errs := make([]error, len(rates))
	par.For(len(rates), workers, func(_, i int) {
		cc := cfg
		cc.Rate = rates[i]
		pts[i], errs[i] = Run(n, cc)
		var de *DeadlockError
		if errors.As(errs[i], &de) {
			errs[i] = nil
		}
		if progress != nil {
			progress()
		}
	})
	for _, err := range errs {
		if err != nil {
			return pts, err
		}
	}
	return pts, nil
}

// SweepResult is a latency-versus-load curve with its saturation point.
type SweepResult struct {
	Points []Point `json:"points"`
	// Saturation is the highest offered load found stable (flits per
	// terminal per cycle); SaturationAccepted the throughput delivered
	// there. Reached is false if even the highest load tried was stable.
	Saturation         float64 `json:"saturation"`
	SaturationAccepted float64 `json:"saturation_accepted"`
	Reached            bool    `json:"saturation_reached"`
	// Ideal is the throughput bound of the topology and traffic (0 if
	// unknown), IdealNote how it was obtained, Fraction = Saturation/Ideal.
	Ideal     float64 `json:"ideal,omitempty"`
	IdealNote string  `json:"ideal_note,omitempty"`
	Fraction  float64 `json:"fraction_of_ideal,omitempty"`
	// ZeroLoadLatency is the analytic latency without contention.
	ZeroLoadLatency float64 `json:"zero_load_latency,omitempty"`
	ZeroLoadHops    float64 `json:"zero_load_hops,omitempty"`
}

// Sweep simulates the given loads, then narrows the saturation point down
// by refine rounds of bisection between the highest stable and the lowest
// unstable load (each round tries `workers` loads in parallel).
func Sweep(n *Network, cfg Config, rates []float64, refine, workers int, progress func()) (*SweepResult, error) {
	rates = append([]float64(nil), rates...)
	sort.Float64s(rates)
	pts, err := RunRates(n, cfg, rates, workers, progress)
	if err != nil {
		return nil, err
	}
	res := &SweepResult{}
	all := append([]Point(nil), pts...)
	lo, hi := 0.0, -1.0
	loAcc := 0.0
	for _, p := range pts {
		if p.Stable {
			lo, loAcc = p.Offered, p.Accepted
			continue
		}
		hi = p.Offered
		break
	}
	if hi > 0 {
		res.Reached = true
		k := max(1, par.Workers(workers))
		for round := 0; round < refine; round++ {
			try := make([]float64, k)
			for i := range try {
				try[i] = lo + (hi-lo)*float64(i+1)/float64(k+1)
			}
			rp, err := RunRates(n, cfg, try, workers, progress)
			if err != nil {
				return nil, err
			}
			all = append(all, rp...)
			for i, p := range rp {
				if p.Stable {
					lo, loAcc = try[i], p.Accepted
					continue
				}
				hi = try[i]
				break
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Offered < all[j].Offered })
	res.Points = all
	res.Saturation, res.SaturationAccepted = lo, loAcc
	if ideal, note := n.IdealThroughput(); ideal > 0 {
		res.Ideal, res.IdealNote = ideal, note
		res.Fraction = res.Saturation / ideal
	}
	if h, t0, ok := n.ZeroLoad(cfg); ok {
		res.ZeroLoadHops, res.ZeroLoadLatency = h, t0
	}
	return res, nil
}

// IdealThroughput returns the channel-load bound on the accepted
// throughput for uniform traffic on a torus, a mesh or a torus with mesh
// dimensions (Dally & Towles: 8/k on a ring of even k, 8k/(k²−1) of odd
// k, 4/k on a line of even k, 4k/(k²−1) of odd k, the smallest over the
// dimensions, times (N−1)/N because uniform traffic excludes self-sends;
// at most 1, the injection channel), or 0 if no closed form applies.
func (n *Network) IdealThroughput() (float64, string) {
	g := n.g
	if !n.traffic.uniform || !g.HasCoords() || !g.Direct() || n.tab != nil {
		return 0, ""
	}
	if sh := g.Shape(); sh.Family != "torus" && sh.Family != "mesh" && sh.Family != "mixed" {
		return 0, ""
	}
	ideal, note, most := 0.0, "", 0
	for i, d := range g.Dims() {
		if d < 2 {
			continue
		}
		k := float64(d)
		var x float64
		var s string
		switch {
		case g.Wrap()[i] && d%2 == 0:
			x, s = 8/k, fmt.Sprintf("8/k with k=%d (torus, uniform traffic, bidirectional channels of 1 flit/cycle)", d)
		case g.Wrap()[i]:
			x, s = 8*k/(k*k-1), fmt.Sprintf("8k/(k²−1) with k=%d (torus, odd k)", d)
		case d%2 == 0:
			x, s = 4/k, fmt.Sprintf("4/k with k=%d (mesh, uniform traffic)", d)
		default:
			x, s = 4*k/(k*k-1), fmt.Sprintf("4k/(k²−1) with k=%d (mesh, odd k)", d)
		}
		if note == "" || x < ideal {
			ideal, note, most = x, s, i
		}
	}
	if note == "" {
		return 0, ""
	}
	if g.Shape().Family == "mixed" {
		note += fmt.Sprintf(" in dimension %s, the most loaded of the torus with mesh dimensions", topology.DimName(most))
	}
	// Uniform traffic never sends to itself: a packet goes to one of the
	// N−1 other terminals, so the share crossing the bisection is
	// (N/2)/(N−1) instead of 1/2 and the bound shrinks by (N−1)/N.
	if N := len(n.terms); N > 1 {
		ideal *= float64(N-1) / float64(N)
		note += fmt.Sprintf(" × (N−1)/N with N=%d (no self-sends)", N)
	}
	if ideal > 1 {
		ideal, note = 1, note+"; capped at the injection channel's 1 flit/cycle"
	}
	return ideal, note
}

// ZeroLoad returns the analytic zero-load hop count and latency of the
// traffic: with H hops (links) between terminals, router delay t_r, link
// latency t_l and packets of P flits, a head leaves each of the H+1
// routers t_r cycles after arriving and the tail follows P−1 cycles
// behind and is ejected one cycle after leaving the last router:
//
//	cut-through (wormhole, vct):  T0 = H·(t_r + t_l) + t_r + P
//	store-and-forward:            T0 = H·(t_r + t_l) + t_r + 1 + max(H,1)·(P − 1)
//
// averaged over the traffic pattern and packet sizes. ok is false when the
// routing is not minimal-deterministic enough for a closed form (Valiant,
// UGAL) or the pattern is a trace.
func (n *Network) ZeroLoad(cfg Config) (hops, latency float64, ok bool) {
	if !n.algo.knownHops || n.traffic.replay {
		return 0, 0, false
	}
	T := len(n.terms)
	dist := n.hopFunc()
	var h, hmax1, w float64
	add := func(s, d int, wt float64) {
		x := float64(dist(s, d))
		h += wt * x
		hmax1 += wt * math.Max(x, 1)
		w += wt
	}
	p := n.pat
	switch {
	case p.perm != nil:
		for s := 0; s < T; s++ {
			add(s, int(p.perm[s]), 1)
		}
	default:
		uni := 1.0
		if p.hot != nil {
			uni = 1 - p.hotFrac
			for s := 0; s < T; s++ {
				for _, hd := range p.hot {
					add(s, int(hd), p.hotFrac/float64(len(p.hot)))
				}
			}
		}
		if T > 1 && uni > 0 {
			for s := 0; s < T; s++ {
				for d := 0; d < T; d++ {
					if d != s {
						add(s, d, uni/float64(T-1))
					}
				}
			}
		}
	}
	if w == 0 {
		return 0, 0, false
	}
	h /= w
	hmax1 /= w
	tr, tl := float64(n.cfg.routerDelay()), float64(n.cfg.LinkLatency)
	P := cfg.MeanPacket()
	term := 0.0
	if n.cfg.TerminalLinks {
		term = 2
	}
	if n.sw == swSAF {
		return h, h*(tr+tl) + tr + 1 + hmax1*(P-1) + term, true
	}
	return h, h*(tr+tl) + tr + P + term, true
}

// hopFunc returns the hop count of the route between terminals s and d.
func (n *Network) hopFunc() func(s, d int) int {
	g := n.g
	switch {
	case n.tab != nil:
		a := len(n.tab.active)
		return func(s, d int) int {
			if s == d {
				return 0
			}
			k := n.tab.route[s*a+d]
			return int(n.tab.start[k+1] - n.tab.start[k])
		}
	case n.ud != nil:
		return func(s, d int) int { return int(n.ud.dist[d*n.ud.R+int(n.terms[s])]) }
	case n.coord != nil && n.direct:
		nd := n.nd
		return func(s, d int) int {
			a, b := int(n.terms[s]), int(n.terms[d])
			x := 0
			for i := 0; i < nd; i++ {
				delta := int(n.coord[a*nd+i]) - int(n.coord[b*nd+i])
				if delta < 0 {
					delta = -delta
				}
				if n.wrap[i] {
					delta = min(delta, n.dims[i]-delta)
				}
				x += delta
			}
			return x
		}
	}
	// BFS from the source terminal; callers iterate source-major, so one
	// cached source suffices.
	last := -1
	dist := make([]int32, g.NumNodes())
	queue := []int32{}
	return func(s, d int) int {
		if s != last {
			queue = topology.BFS(g, int(n.terms[s]), dist, queue)
			last = s
		}
		return int(dist[n.terms[d]])
	}
}

// RunTrace replays the trace of cfg (Traffic "trace"): every message is
// queued at its cycle and the run lasts until all have arrived (or the
// drain limit passes after the last one). Every message is measured;
// Offered/Injected is the trace's load over its span, Accepted the load
// delivered over the whole run.
func RunTrace(n *Network, cfg Config) (Point, error) {
	if len(n.trace) == 0 {
		return Point{}, fmt.Errorf("no trace to replay (use --traffic trace --trace FILE)")
	}
	cfg.Rate = 0
	c, err := NewCore(n, cfg)
	if err != nil {
		return Point{}, err
	}
	c.measStart, c.measEnd = 0, math.MaxInt64
	last := n.trace[len(n.trace)-1].cycle
	limit := last + int64(max(cfg.DrainCycles, cfg.Cycles, 100000))
	var flits int64
	for _, m := range n.trace {
		flits += int64(m.size)
	}
	for c.now <= last || c.measDelivered() < int64(len(n.trace)) {
		if c.now > limit || c.deadlock != nil {
			break
		}
		c.Tick()
	}
	s := c.sum()
	T := float64(len(c.terms))
	pt := Point{Offered: float64(flits) / (T * float64(last+1)), Cycles: c.now, Converged: true}
	pt.Injected = pt.Offered
	pt.Accepted = float64(s.ejFlits) / (T * float64(c.now))
	pt.Packets = s.measDeliv
	pt.Drained = s.measDeliv == int64(len(n.trace)) && c.deadlock == nil
	pt.MeasuredUnsent = int64(len(n.trace)) - s.measDeliv
	s.latencies(&pt)
	pt.Stable = pt.Drained
	if err := c.CheckConservation(); err != nil {
		return pt, err
	}
	pt.Conserved = true
	if c.deadlock != nil {
		pt.Deadlock = c.deadlock.Error()
		return pt, c.deadlock
	}
	return pt, nil
}
