package sim

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// flit is one flow-control unit. Every flit carries its packet's header so
// no per-packet record is shared between routers; only the head's routing
// state (step, lastDir, cls, flags) is meaningful.
//
// A flit is 32 bytes; times are cycles as int32 (runs are limited to well
// under 2^31 cycles).
type flit struct {
	ready   int32  // cycle from which the flit may leave its current router
	ctime   int32  // creation cycle of the packet
	src     int32  // source terminal
	dst     int32  // destination node
	route   int32  // table route, or Valiant intermediate group (-1 none)
	size    uint16 // flits in the packet
	seq     uint16 // index of this flit in the packet; 0 = head, size-1 = tail
	pid     uint16 // per-source packet number (mod 2^16)
	step    uint8  // hops taken by the head
	vc      uint8  // virtual channel it occupies / travels on
	lastDir int8   // direction code of the head's previous hop, -1 if none
	dirs    uint8  // direction bits: bit i set = negative direction in dimension i
	cls     uint8  // global hops taken (dragonfly VC class)
	flags   uint8
}

const (
	flMeasured = 1 << iota // created in the measurement window
	flDown                 // up*/down*: on the descending part
	flPhase2               // Valiant: past the intermediate group
	flDecided              // UGAL: minimal or Valiant chosen
)

// srcPkt is a packet waiting in a source queue (16 bytes: past
// saturation these queues hold most of a run's memory).
type srcPkt struct {
	ctime int32
	dst   int32
	tag   int32
	size  uint16
	flags uint8
}

// injSlot is one packet being injected flit by flit.
type injSlot struct {
	active bool
	iv     int32 // local input VC receiving it
	left   int32
	f      flit // next flit to push
}

type terminal struct {
	rng      *rand.Rand
	node     int32
	next     int64 // next Bernoulli generation cycle
	on       bool
	q        []srcPkt // ring buffer
	qh, ql   int
	inj      []injSlot
	pid      uint16
	tags     map[uint16]int32 // tags of explicit messages in flight, by pid
	trace    []int32          // indices into Network.trace, by cycle
	traceIdx int
}

func (t *terminal) push(p srcPkt) {
	if t.ql == len(t.q) {
		nq := make([]srcPkt, max(16, 2*len(t.q)))
		for i := 0; i < t.ql; i++ {
			nq[i] = t.q[(t.qh+i)%len(t.q)]
		}
		t.q, t.qh = nq, 0
	}
	t.q[(t.qh+t.ql)%len(t.q)] = p
	t.ql++
}

func (t *terminal) pop() srcPkt {
	p := t.q[t.qh]
	t.qh++
	if t.qh == len(t.q) {
		t.qh = 0
	}
	t.ql--
	return p
}

type ejState struct {
	src  int32
	pid  uint16
	exp  uint16
	hops uint8 // hops of the packet's head
}

// delivery is a tagged packet's arrival before its tag is looked up.
type delivery struct {
	src int32
	pid uint16
	at  int64
}

// Delivery reports an explicit message (sent with Send) that arrived: its
// tail was ejected at cycle At.
type Delivery struct {
	Tag int32
	At  int64
}

// counters are per-worker statistics (merged when read).
type counters struct {
	injFlits, ejFlits  int64 // all flits pushed into / taken out of the network
	genPkts, delivPkts int64
	winGenFlits        int64 // flits of packets created in the measurement window
	winEjFlits         int64 // flits ejected during the measurement window
	measGen, measDeliv int64
	latSum             int64
	hopSum             int64
	hist               []int64 // latency histogram of measured packets
	perLat, perCnt     int64   // current sample period: all delivered packets
	perEj              int64
	moved              int64 // flit movements (progress)
	maxWait            int64 // longest an occupied input VC went without moving a flit
	errs               []string
	lastDelivery       int64
}

func (s *counters) err(format string, a ...any) {
	if len(s.errs) < 8 {
		s.errs = append(s.errs, fmt.Sprintf(format, a...))
	}
}

// worker is the state of one partition of routers (one for serial runs).
type worker struct {
	lo, hi     int
	st         counters
	cands      []cand
	ports      []int32
	deliveries []delivery
	reqIV      [maxPorts]int32
	reqPort    [maxPorts]int32
	outReq     [maxPorts]uint64
	outUsed    uint64
	one        [1]cand
	vaReqs     []vaReq
	lastMove   int64    // partitioned runs: 1 + the last cycle this partition moved a flit
	_          [64]byte // keeps partitions' per-flit counters off each other's cache lines
}

// vaReq is a head's request for an output VC in one cycle.
type vaReq struct {
	iv, ovc int32
	cd      cand
}

// Core is one running simulation. It is deterministic: the same network,
// configuration and sequence of Tick/Send calls give the same result. It
// owns no goroutines and no clock.
type Core struct {
	n          *Network
	cfg        Config
	V, B, L    int
	Dr         int64
	vcGap      int32 // staged router: Stages.Gap(); 0 for the lumped one
	termLink   int64 // cycles on the injection and on the ejection channel
	now        int64
	speed      int // local speedup
	sizes      []SizeWeight
	sizeCum    []float64
	genP       float64 // packet generation probability per cycle
	genLn      float64 // log(1-genP)
	offP, onP  float64 // on/off switching probabilities
	generating bool
	logDeliv   bool
	measStart  int64
	measEnd    int64

	buf      []flit
	bHead    []int32
	bLen     []int32
	ivOut    []int32 // assigned output VC (port·V + vc), -1
	ivOutGP  []int32 // its output port
	ivLast   []int64
	ivTail   []int32 // staged router: cycle the last tail left the input VC
	ivReady  []int32 // ready cycle of the front flit of each non-empty input VC (a compact copy: allocation scans it every cycle)
	ivCand   []cand  // cached route of the head waiting at an input VC (oblivious routings)
	vcMask   []uint64
	portMask []uint64

	credit []int32
	owner  []int32

	link []flit
	// lnk holds per output port and slot: bit 0 a flit on the link,
	// bits 8-15 a credit (VC+1) travelling back to that port's router.
	// Both have ls slots per port: a flit sent in cycle t sits in slot
	// t mod ls and is taken L cycles later. A serial core has ls = L; a
	// partitioned one ls = L + ahead (setAhead), so partitions that run up
	// to ahead cycles between exchanges never touch the same slot.
	lnk       []uint16
	ls, ahead int

	rrIn  []uint16 // switch allocation: next crossbar input to favour, by output port
	rrVC  []uint8  // switch allocation: next VC to propose, by crossbar input (port·inSpeed + v mod inSpeed)
	rrOVC []uint16 // VC allocation: local input VC to favour, by output VC

	terms []terminal
	ej    []ejState

	workers []worker

	// Credit pipeline of the credit-delay, tail-credit and input-speedup
	// models (nil otherwise: credits then ride in lnk). cq holds per port
	// and slot a mask of the VCs whose credits arrive in that slot, cqLen
	// slots long; a credit sent in cycle t arrives in cycle t+cqDelay. At a
	// terminal port the slots hold the ejection VCs that are freed
	// (tail credit), ejDelay cycles after their tail left.
	cq                      []uint64
	cqLen, cqDelay, ejDelay int64
	tailCr                  bool
	tailOut                 []bool   // tail credit: the output VC's tail has left, its credits are not all back
	inSpeed                 int      // crossbar inputs per input port
	subMask                 []uint64 // input speedup: the VCs of each crossbar input of a port

	deadlock      *DeadlockError
	dlWindow      int64
	lastMoveCycle int64
	lastMoved     int64
}

// NewCore starts a simulation of network n with the run parameters of cfg
// (rate, seed, sizes and process; the static parameters must be those n
// was built with).
func NewCore(n *Network, cfg Config) (*Core, error) {
	c := &Core{n: n, cfg: cfg, V: n.V, B: n.cfg.Buf, L: n.cfg.LinkLatency, Dr: int64(n.cfg.routerDelay())}
	c.ls = c.L
	if n.cfg.Router == RouterStaged {
		c.vcGap = int32(n.cfg.Stages.Gap())
	}
	if n.cfg.TerminalLinks {
		c.termLink = 1
	}
	if err := cfg.check(!UsesTrace(cfg.Traffic) && cfg.Rate != 0); err != nil {
		return nil, err
	}
	c.setSizes(cfg.Sizes)
	if cfg.MaxPacket() > n.maxP && n.sw != swWormhole {
		return nil, fmt.Errorf("packet size %d exceeds the maximal packet %d the network was built for", cfg.MaxPacket(), n.maxP)
	}
	c.setInjection(cfg)
	c.measStart, c.measEnd = math.MaxInt64, math.MaxInt64
	c.speed = cfg.LocalSpeedup
	if err := c.setCrossbar(n.cfg); err != nil {
		return nil, err
	}
	c.allocBuffers()
	c.initTerminals(cfg.Seed)
	c.workers = make([]worker, 1)
	c.workers[0] = worker{lo: 0, hi: len(n.portStart) - 1}
	c.dlWindow = int64(cfg.DeadlockWindow)
	if c.dlWindow <= 0 {
		c.dlWindow = int64(max(2000, 20*(c.B+c.L+int(c.Dr))*max(1, n.maxP)))
	}
	return c, nil
}

// setCrossbar sets the input speedup, credit delay and tail-credit models
// of the network's configuration ncfg.
func (c *Core) setCrossbar(ncfg Config) error {
	n := c.n
	c.inSpeed = max(1, min(ncfg.InputSpeedup, c.V))
	if c.inSpeed > 1 {
		for r := 0; r+1 < len(n.portStart); r++ {
			if np := int(n.portStart[r+1] - n.portStart[r]); np*c.inSpeed > maxPorts {
				return fmt.Errorf("input speedup %d: %s has %d ports, %d crossbar inputs exceed the simulator's %d", c.inSpeed, n.g.NodeName(r), np, np*c.inSpeed, maxPorts)
			}
		}
		c.subMask = make([]uint64, c.inSpeed)
		for v := 0; v < c.V; v++ {
			c.subMask[v%c.inSpeed] |= 1 << uint(v)
		}
	}
	c.tailCr = ncfg.TailCredit
	if c.inSpeed > 1 || c.tailCr || ncfg.CreditDelay > 0 {
		c.cqDelay = int64(c.L + ncfg.CreditDelay)
		c.ejDelay = 1 + 2*c.termLink + int64(ncfg.CreditDelay)
		c.cqLen = max(c.cqDelay, c.ejDelay)
	}
	return nil
}

// setSizes stores the packet-size mix and its cumulative weights.
func (c *Core) setSizes(sizes []SizeWeight) {
	c.sizes = sizes
	var cum float64
	for _, s := range c.sizes {
		cum += s.Weight
		c.sizeCum = append(c.sizeCum, cum)
	}
	for i := range c.sizeCum {
		c.sizeCum[i] /= cum
	}
}

// setInjection sets the injection process: the per-cycle packet
// probability (Bernoulli) or the on/off switching probabilities, for
// synthetic traffic at a positive rate.
func (c *Core) setInjection(cfg Config) {
	if UsesTrace(cfg.Traffic) || cfg.Rate <= 0 {
		return
	}
	c.generating = true
	c.genP = math.Min(1, cfg.Rate/cfg.MeanPacket())
	if cfg.Process == OnOff {
		c.genP = 1 / cfg.MeanPacket()
		c.offP = 1 / cfg.Burst
		if cfg.Rate < 1 {
			c.onP = c.offP * cfg.Rate / (1 - cfg.Rate)
		}
	}
	if c.genP < 1 {
		c.genLn = math.Log1p(-c.genP)
	}
}

// allocBuffers allocates the per-VC buffers, routing state, credits and
// link pipelines, all empty.
func (c *Core) allocBuffers() {
	n := c.n
	np := len(n.gpChan)
	V, B := c.V, c.B
	c.buf = make([]flit, np*V*B)
	c.bHead = make([]int32, np*V)
	c.bLen = make([]int32, np*V)
	c.ivOut = make([]int32, np*V)
	c.ivOutGP = make([]int32, np*V)
	c.ivLast = make([]int64, np*V)
	c.ivReady = make([]int32, np*V)
	if c.vcGap > 0 || c.tailCr {
		c.ivTail = make([]int32, np*V)
		for i := range c.ivTail {
			c.ivTail[i] = math.MinInt32 / 2
		}
	}
	c.ivCand = make([]cand, np*V)
	for i := range c.ivCand {
		c.ivCand[i].gp = -1
	}
	c.vcMask = make([]uint64, np)
	c.portMask = make([]uint64, len(n.portStart)-1)
	c.credit = make([]int32, np*V)
	c.owner = make([]int32, np*V)
	for i := range c.ivOut {
		c.ivOut[i] = -1
		c.owner[i] = -1
		c.credit[i] = int32(B)
	}
	c.link = make([]flit, np*c.ls)
	c.lnk = make([]uint16, np*c.ls)
	c.rrIn = make([]uint16, np)
	c.rrVC = make([]uint8, np*c.inSpeed)
	if c.cqLen > 0 {
		c.cq = make([]uint64, int64(np)*c.cqLen)
	}
	if c.tailCr {
		c.tailOut = make([]bool, np*V)
	}
	c.rrOVC = make([]uint16, np*V)
}

// initTerminals gives every terminal its random stream, injection slots,
// first injection time and trace messages.
func (c *Core) initTerminals(seed uint64) {
	n := c.n
	T := len(n.terms)
	c.terms = make([]terminal, T)
	c.ej = make([]ejState, T*c.V)
	for i := range c.terms {
		v := n.terms[i]
		tm := &c.terms[i]
		tm.node = v
		tm.rng = rand.New(rand.NewPCG(seed, uint64(i)*0x9E3779B97F4A7C15+0x5851F42D4C957F2D))
		sp := min(c.speed, c.V, maxPorts-n.deg(int(v)))
		tm.inj = make([]injSlot, max(1, sp))
		tm.next = c.gap(tm, -1)
	}
	for k, m := range n.trace {
		tm := &c.terms[m.src]
		tm.trace = append(tm.trace, int32(k))
	}
}

// gap returns the cycle of the next generated packet after cycle t.
func (c *Core) gap(tm *terminal, t int64) int64 {
	if !c.generating {
		return math.MaxInt64
	}
	if c.genP >= 1 || c.cfg.Process == OnOff {
		return t + 1
	}
	u := 1 - tm.rng.Float64()
	return t + 1 + int64(math.Log(u)/c.genLn)
}

// Now returns the current cycle (the next to be simulated).
func (c *Core) Now() int64 { return c.now }

// Network returns the network being simulated.
func (c *Core) Network() *Network { return c.n }

// Deadlock returns the detected deadlock, or nil.
func (c *Core) Deadlock() *DeadlockError { return c.deadlock }

// SetGeneration turns synthetic packet generation on or off.
func (c *Core) SetGeneration(on bool) {
	if on && c.genP > 0 && !c.generating {
		c.generating = true
		for i := range c.terms {
			c.terms[i].next = c.gap(&c.terms[i], c.now-1)
		}
	}
	if !on {
		c.generating = false
	}
}

// LogDeliveries makes the core record Delivery entries for tagged packets.
func (c *Core) LogDeliveries(on bool) { c.logDeliv = on }

// Send queues a packet of size flits from terminal src to terminal dst,
// created at the current cycle; tag is reported back in its Delivery.
func (c *Core) Send(src, dst, size int, tag int32) error {
	T := len(c.terms)
	if src < 0 || src >= T || dst < 0 || dst >= T {
		return fmt.Errorf("terminal %d or %d out of range 0..%d", src, dst, T-1)
	}
	if size < 1 || size > MaxPacketFlits {
		return fmt.Errorf("message of %d flits out of range 1..%d", size, MaxPacketFlits)
	}
	if c.n.sw != swWormhole && size > c.B {
		return fmt.Errorf("message of %d flits does not fit a %d-flit buffer under %s switching", size, c.B, c.n.cfg.Switching)
	}
	if c.n.fc == fcBubble && size+c.n.maxP > c.B {
		return fmt.Errorf("message of %d flits: bubble flow control needs --buf ≥ %d", size, size+c.n.maxP)
	}
	tm := &c.terms[src]
	if c.logDeliv && tag >= 0 && tm.tags == nil {
		tm.tags = map[uint16]int32{}
	}
	tm.push(srcPkt{ctime: int32(c.now), dst: c.n.terms[dst], tag: tag, size: uint16(size)})
	c.workers[0].st.genPkts++
	return nil
}

// TakeDeliveries appends the deliveries recorded since the last call.
func (c *Core) TakeDeliveries(buf []Delivery) []Delivery {
	for i := range c.workers {
		w := &c.workers[i]
		for _, d := range w.deliveries {
			tm := &c.terms[d.src]
			if tag, ok := tm.tags[d.pid]; ok {
				buf = append(buf, Delivery{Tag: tag, At: d.at})
				delete(tm.tags, d.pid)
			}
		}
		w.deliveries = w.deliveries[:0]
	}
	return buf
}

// Tick simulates one cycle.
func (c *Core) Tick() {
	w := &c.workers[0]
	t := c.now
	R := len(c.n.portStart) - 1
	for r := 0; r < R; r++ {
		c.receive(w, r, t)
	}
	for r := 0; r < R; r++ {
		c.step(w, r, t)
	}
	c.endCycle()
}

// TickUpTo simulates one cycle (a serial core gains nothing from running
// several at once) and returns 1.
func (c *Core) TickUpTo(int) int {
	c.Tick()
	return 1
}

// endCycle advances the clock and watches for deadlock.
func (c *Core) endCycle() {
	c.now++
	var moved int64
	for i := range c.workers {
		moved += c.workers[i].st.moved
	}
	if moved != c.lastMoved {
		c.lastMoved, c.lastMoveCycle = moved, c.now
	}
	if c.now%c.dlWindow == 0 && c.deadlock == nil {
		c.checkDeadlock()
	}
}

// receive is phase A of a cycle for router r: take arriving flits and
// credits off the links, generate and inject terminal traffic.
func (c *Core) receive(w *worker, r int, t int64) {
	n := c.n
	s := int((t + int64(c.ls-c.L)) % int64(c.ls)) // the slot of cycle t-L
	base := int(n.portStart[r])
	end := int(n.portStart[r+1])
	V := c.V
	for gp := base; gp < end; gp++ {
		up := n.gpPeer[gp]
		if up < 0 {
			continue
		}
		i := int(up)*c.ls + s
		x := c.lnk[i]
		if x == 0 {
			continue
		}
		c.lnk[i] = 0
		if x&1 != 0 {
			f := &c.link[i]
			f.ready = int32(t + c.Dr)
			c.pushBuf(w, r, gp, gp*V+int(f.vc), f, t)
		}
		if cv := x >> 8; cv != 0 {
			c.credit[gp*V+int(cv)-1]++
		}
	}
	if c.cq != nil {
		c.receiveCredits(r, t)
	}
	if ti := n.termOf[r]; ti >= 0 {
		c.inject(w, int(ti), r, t)
	}
}

// receiveCredits takes the credits arriving at router r in cycle t off the
// credit pipeline and, under the tail-credit rule, frees the output VCs
// whose credits are all back after their tail left (at the terminal port:
// whose tail was ejected ejDelay cycles ago).
func (c *Core) receiveCredits(r int, t int64) {
	n := c.n
	V := c.V
	s := t % c.cqLen
	lgp := int(n.localGP[r])
	for gp := int(n.portStart[r]); gp < int(n.portStart[r+1]); gp++ {
		src := int(n.gpPeer[gp])
		if gp == lgp {
			src = gp
		} else if src < 0 {
			continue
		}
		i := int64(src)*c.cqLen + s
		m := c.cq[i]
		if m == 0 {
			continue
		}
		c.cq[i] = 0
		for ; m != 0; m &= m - 1 {
			ovc := gp*V + bits.TrailingZeros64(m)
			if gp != lgp {
				c.credit[ovc]++
				if !c.tailCr || c.credit[ovc] < int32(c.B) {
					continue
				}
			}
			if c.tailOut[ovc] {
				c.tailOut[ovc] = false
				c.owner[ovc] = -1
			}
		}
	}
}

func (c *Core) pushBuf(w *worker, r, gp, iv int, f *flit, t int64) {
	B := int32(c.B)
	l := c.bLen[iv]
	if l >= B {
		w.st.err("cycle %d: buffer overflow at %s VC %d (credit accounting broken)", t, c.portName(gp), iv%c.V)
		return
	}
	if l == 0 {
		c.vcMask[gp] |= 1 << uint(iv%c.V)
		c.portMask[r] |= 1 << uint(gp-int(c.n.portStart[r]))
		c.ivLast[iv] = t
	}
	pos := c.bHead[iv] + l
	if pos >= B {
		pos -= B
	}
	c.buf[int32(iv)*B+pos] = *f
	if l == 0 {
		c.ivReady[iv] = f.ready
		if c.vcGap > 0 && f.seq == 0 {
			c.frontHead(iv, c.ivTail[iv])
		}
	}
	c.bLen[iv] = l + 1
}

// inject generates this cycle's packets of terminal ti and pushes up to
// the local speedup of flits into the router's terminal port.
func (c *Core) inject(w *worker, ti, r int, t int64) {
	tm := &c.terms[ti]
	if c.generating {
		if c.cfg.Process == OnOff {
			if tm.on {
				if tm.rng.Float64() < c.genP {
					c.newPacket(w, tm, ti, t)
				}
				if tm.rng.Float64() < c.offP {
					tm.on = false
				}
			} else if c.cfg.Rate >= 1 || tm.rng.Float64() < c.onP {
				tm.on = true
			}
		} else {
			for tm.next <= t {
				c.newPacket(w, tm, ti, tm.next)
				tm.next = c.gap(tm, tm.next)
			}
		}
	}
	for tm.traceIdx < len(tm.trace) {
		m := &c.n.trace[tm.trace[tm.traceIdx]]
		if m.cycle > t {
			break
		}
		tm.push(srcPkt{ctime: int32(m.cycle), dst: c.n.terms[m.dst], tag: -1, size: uint16(m.size), flags: c.measFlag(m.cycle)})
		w.st.genPkts++
		if c.measFlag(m.cycle) != 0 {
			w.st.measGen++
			w.st.winGenFlits += int64(m.size)
		}
		tm.traceIdx++
	}
	lgp := int(c.n.localGP[r])
	V := c.V
	for k := range tm.inj {
		sl := &tm.inj[k]
		if !sl.active {
			if tm.ql == 0 {
				continue
			}
			// Pick the terminal VC with the most room that no other slot fills.
			best, bestFree := -1, int32(0)
			for v := 0; v < V; v++ {
				iv := lgp*V + v
				busy := false
				for j := range tm.inj {
					if tm.inj[j].active && int(tm.inj[j].iv) == iv {
						busy = true
					}
				}
				if c.tailCr && (c.bLen[iv] > 0 || t < int64(c.ivTail[iv])+c.termLink) {
					continue // the previous tail's credit is not back
				}
				if free := int32(c.B) - c.bLen[iv]; !busy && free > bestFree {
					best, bestFree = iv, free
				}
			}
			if best < 0 {
				continue
			}
			p := tm.pop()
			sl.active, sl.iv, sl.left = true, int32(best), int32(p.size)
			sl.f = c.headFlit(tm, ti, p)
		}
		iv := int(sl.iv)
		if c.bLen[iv] >= int32(c.B) {
			continue
		}
		f := sl.f
		f.ready = int32(t + c.Dr + c.termLink)
		c.pushBuf(w, r, lgp, iv, &f, t)
		w.st.injFlits++
		sl.f.seq++
		sl.left--
		if sl.left == 0 {
			sl.active = false
		}
	}
}

func (c *Core) measFlag(ctime int64) uint8 {
	if ctime >= c.measStart && ctime < c.measEnd {
		return flMeasured
	}
	return 0
}

// newPacket creates a synthetic packet at cycle t.
func (c *Core) newPacket(w *worker, tm *terminal, ti int, t int64) {
	d := c.n.pat.dest(ti, tm.rng)
	size := c.sizes[0].Size
	if len(c.sizes) > 1 {
		u := tm.rng.Float64()
		for i, cu := range c.sizeCum {
			if u < cu || i == len(c.sizeCum)-1 {
				size = c.sizes[i].Size
				break
			}
		}
	}
	fl := c.measFlag(t)
	tm.push(srcPkt{ctime: int32(t), dst: c.n.terms[d], tag: -1, size: uint16(size), flags: fl})
	w.st.genPkts++
	if fl != 0 {
		w.st.measGen++
		w.st.winGenFlits += int64(size)
	}
}

// headFlit builds the head of a packet leaving terminal ti, with the
// routing state chosen at the source (direction bits, table route,
// Valiant group).
func (c *Core) headFlit(tm *terminal, ti int, p srcPkt) flit {
	n := c.n
	f := flit{ctime: p.ctime, src: int32(ti), dst: p.dst, route: -1, pid: tm.pid,
		size: p.size, lastDir: -1, flags: p.flags}
	if p.tag >= 0 && tm.tags != nil {
		tm.tags[tm.pid] = p.tag
	}
	tm.pid++
	if n.algo.source != nil {
		f.dirs, f.route = n.algo.source(n, tm, ti, p.dst)
	}
	return f
}

// step is phase B of a cycle for router r: route and allocate virtual
// channels for waiting heads, allocate the switch, and move the winners.
func (c *Core) step(w *worker, r int, t int64) {
	if c.portMask[r] == 0 {
		return
	}
	c.allocVCs(w, r, t)
	if c.requestSwitch(w, r, t) == 0 {
		return
	}
	c.grantSwitch(w, r, t)
}

// requestSwitch is the request half of switch allocation at router r:
// every input port (the terminal port up to the local speedup) proposes
// VCs in round-robin order that are routed, ready, have a credit
// downstream and want an output not yet asked for by this port. It fills
// w.reqIV, w.reqPort, w.outReq and w.outUsed and returns the number of
// requests.
func (c *Core) requestSwitch(w *worker, r int, t int64) int {
	t32 := int32(t)
	n := c.n
	V := c.V
	base := int(n.portStart[r])
	nreq := 0
	lgp := int(n.localGP[r])
	w.outUsed = 0
	m := c.portMask[r]
	for m != 0 {
		p := bits.TrailingZeros64(m)
		m &= m - 1
		gp := base + p
		if c.inSpeed > 1 {
			nreq = c.requestSplit(w, gp, p, lgp, base, nreq, t32)
			continue
		}
		limit := 1
		if gp == lgp {
			limit = c.speed
		}
		vm := c.vcMask[gp]
		start := int(c.rrVC[gp])
		vr := rotr(vm, start, V)
		var usedOut uint64
		got := 0
		for vr != 0 && got < limit {
			j := bits.TrailingZeros64(vr)
			vr &= vr - 1
			v := j + start
			if v >= V {
				v -= V
			}
			iv := gp*V + v
			ovc := int(c.ivOut[iv])
			if ovc < 0 {
				continue
			}
			if c.ivReady[iv] > t32 {
				continue
			}
			og := int(c.ivOutGP[iv])
			if og != lgp && c.credit[ovc] < 1 {
				continue
			}
			if n.sw == swSAF && gp != lgp && og != lgp {
				if f := &c.buf[iv*c.B+int(c.bHead[iv])]; f.seq == 0 && !c.wholePacket(iv, f, t) {
					continue
				}
			}
			ol := og - base
			if usedOut&(1<<uint(ol)) != 0 {
				continue
			}
			usedOut |= 1 << uint(ol)
			if nreq >= maxPorts {
				break
			}
			w.reqIV[nreq] = int32(iv)
			w.reqPort[nreq] = int32(p)
			if w.outUsed&(1<<uint(ol)) == 0 {
				w.outUsed |= 1 << uint(ol)
				w.outReq[ol] = 0
			}
			w.outReq[ol] |= 1 << uint(nreq)
			nreq++
			got++
		}
	}
	return nreq
}

// requestSplit is requestSwitch's proposal for input port gp (the p-th of
// its router) under input speedup: each of the port's crossbar inputs
// proposes, in round-robin order, the first of its VCs that is routed,
// ready and has a credit downstream; two inputs of one port may ask for
// the same output. It returns the new number of requests.
func (c *Core) requestSplit(w *worker, gp, p, lgp, base, nreq int, t32 int32) int {
	V, S := c.V, c.inSpeed
	for k := 0; k < S; k++ {
		vm := c.vcMask[gp] & c.subMask[k]
		if vm == 0 {
			continue
		}
		start := int(c.rrVC[gp*S+k])
		for vr := rotr(vm, start, V); vr != 0; vr &= vr - 1 {
			v := bits.TrailingZeros64(vr) + start
			if v >= V {
				v -= V
			}
			iv := gp*V + v
			ovc := int(c.ivOut[iv])
			if ovc < 0 || c.ivReady[iv] > t32 {
				continue
			}
			og := int(c.ivOutGP[iv])
			if og != lgp && c.credit[ovc] < 1 {
				continue
			}
			if c.n.sw == swSAF && gp != lgp && og != lgp {
				if f := &c.buf[iv*c.B+int(c.bHead[iv])]; f.seq == 0 && !c.wholePacket(iv, f, int64(t32)) {
					continue
				}
			}
			ol := og - base
			w.reqIV[nreq] = int32(iv)
			w.reqPort[nreq] = int32(p*S + k)
			if w.outUsed&(1<<uint(ol)) == 0 {
				w.outUsed |= 1 << uint(ol)
				w.outReq[ol] = 0
			}
			w.outReq[ol] |= 1 << uint(nreq)
			nreq++
			break
		}
	}
	return nreq
}

// grantSwitch is the grant half of switch allocation at router r: every
// requested output grants one input (the terminal port up to the local
// speedup) round robin over input ports, and the winners traverse.
func (c *Core) grantSwitch(w *worker, r int, t int64) {
	n := c.n
	base := int(n.portStart[r])
	S := c.inSpeed
	np := (int(n.portStart[r+1]) - base) * S // crossbar inputs
	lgp := int(n.localGP[r])
	om := w.outUsed
	for om != 0 {
		ol := bits.TrailingZeros64(om)
		om &= om - 1
		og := base + ol
		req := w.outReq[ol]
		grants := 1
		if og == lgp {
			grants = c.speed
		}
		ptr := int(c.rrIn[og])
		for ; grants > 0 && req != 0; grants-- {
			// Round robin over input ports: the request whose port
			// follows the pointer most closely wins.
			best, bestD := -1, maxPorts+1
			for rq := req; rq != 0; rq &= rq - 1 {
				k := bits.TrailingZeros64(rq)
				d := (int(w.reqPort[k]) - ptr + np) % np
				if d < bestD {
					best, bestD = k, d
				}
			}
			req &^= 1 << uint(best)
			in := int(w.reqPort[best])
			ptr = (in + 1) % np
			if S > 1 {
				in /= S
			}
			c.traverse(w, r, int(w.reqIV[best]), base+in, t)
		}
		c.rrIn[og] = uint16(ptr)
	}
}

// allocVCs is the virtual-channel allocation of router r, separable like
// BookSim's: every waiting head requests the output VC it prefers, then
// every requested output VC grants the requesting input VC that follows
// its round-robin pointer most closely, and the pointer moves one past the
// winner (it moves only on a grant, as in iSLIP), so no head loses forever.
func (c *Core) allocVCs(w *worker, r int, t int64) {
	n := c.n
	V := c.V
	base := int(n.portStart[r])
	t32 := int32(t)
	reqs := w.vaReqs[:0]
	for m := c.portMask[r]; m != 0; m &= m - 1 {
		gp := base + bits.TrailingZeros64(m)
		for vm := c.vcMask[gp]; vm != 0; vm &= vm - 1 {
			iv := gp*V + bits.TrailingZeros64(vm)
			if c.ivOut[iv] >= 0 || c.ivReady[iv] > t32 {
				continue
			}
			if ovc, cd := c.chooseVC(w, r, iv, t); ovc >= 0 {
				reqs = append(reqs, vaReq{iv: int32(iv), ovc: int32(ovc), cd: cd})
			}
		}
	}
	w.vaReqs = reqs
	if len(reqs) == 1 { // nothing to arbitrate
		q := &reqs[0]
		iv := int(q.iv)
		c.grantVC(r, iv, int(q.ovc), &q.cd, &c.buf[iv*c.B+int(c.bHead[iv])])
		c.rrOVC[q.ovc] = uint16((iv - base*V + 1) % ((int(n.portStart[r+1]) - base) * V))
		return
	}
	local := (int(n.portStart[r+1]) - base) * V
	for i := range reqs {
		q := &reqs[i]
		if q.iv < 0 || c.owner[q.ovc] >= 0 {
			continue
		}
		// The winner among the requests for q.ovc (later ones are marked
		// done as they are compared).
		ptr := int(c.rrOVC[q.ovc])
		best, bestD := i, (int(q.iv)-base*V-ptr+local)%local
		for j := i + 1; j < len(reqs); j++ {
			if reqs[j].ovc != q.ovc || reqs[j].iv < 0 {
				continue
			}
			if d := (int(reqs[j].iv) - base*V - ptr + local) % local; d < bestD {
				best, bestD = j, d
			}
		}
		b := &reqs[best]
		iv := int(b.iv)
		c.grantVC(r, iv, int(b.ovc), &b.cd, &c.buf[iv*c.B+int(c.bHead[iv])])
		c.rrOVC[q.ovc] = uint16((iv - base*V + 1) % local)
		b.iv = -1
	}
}

// frontHead applies the staged router's rule to the head now at the front
// of input VC iv: it leaves no sooner than the pipeline's gap after the
// previous tail, which left at cycle tail.
func (c *Core) frontHead(iv int, tail int32) {
	h := &c.buf[iv*c.B+int(c.bHead[iv])]
	if h.seq == 0 {
		h.ready = max(h.ready, tail+c.vcGap)
		c.ivReady[iv] = h.ready
	}
}

// wholePacket reports whether the packet headed by f at input VC iv is
// completely in the buffer and its tail has passed the router pipeline.
func (c *Core) wholePacket(iv int, f *flit, t int64) bool {
	sz := int32(f.size)
	if c.bLen[iv] < sz {
		return false
	}
	pos := c.bHead[iv] + sz - 1
	if pos >= int32(c.B) {
		pos -= int32(c.B)
	}
	tail := &c.buf[int32(iv)*int32(c.B)+pos]
	return tail.seq == f.size-1 && tail.ready <= int32(t)
}

// traverse moves the front flit of input VC iv (of port gp) through the
// switch.
func (c *Core) traverse(w *worker, r, iv, gp int, t int64) {
	n := c.n
	V := c.V
	B := int32(c.B)
	h := c.bHead[iv]
	f := c.buf[int32(iv)*B+h]
	h++
	if h == B {
		h = 0
	}
	c.bHead[iv] = h
	c.bLen[iv]--
	v := iv - gp*V
	nv := v + 1
	if nv == V {
		nv = 0
	}
	if c.inSpeed > 1 {
		c.rrVC[gp*c.inSpeed+v%c.inSpeed] = uint8(nv)
	} else {
		c.rrVC[gp] = uint8(nv)
	}
	if c.bLen[iv] == 0 {
		c.vcMask[gp] &^= 1 << uint(v)
		if c.vcMask[gp] == 0 {
			c.portMask[r] &^= 1 << uint(gp-int(n.portStart[r]))
		}
	}
	if wait := t - c.ivLast[iv]; wait > w.st.maxWait {
		w.st.maxWait = wait
	}
	c.ivLast[iv] = t
	if c.bLen[iv] > 0 {
		c.ivReady[iv] = c.buf[int32(iv)*B+h].ready
	}
	if f.seq == f.size-1 && c.ivTail != nil {
		c.ivTail[iv] = int32(t)
		if c.vcGap > 0 && c.bLen[iv] > 0 {
			c.frontHead(iv, int32(t))
		}
	}
	w.st.moved++
	slot := int(t % int64(c.ls))
	if n.gpChan[gp] >= 0 {
		if c.cq != nil {
			c.cq[int64(gp)*c.cqLen+(t+c.cqDelay)%c.cqLen] |= 1 << uint(v)
		} else {
			c.lnk[gp*c.ls+slot] |= uint16(v+1) << 8
		}
	}
	ovc := int(c.ivOut[iv])
	og := int(c.ivOutGP[iv])
	ov := ovc - og*V
	if f.seq == f.size-1 {
		c.ivOut[iv] = -1
		if c.tailCr {
			c.holdForTailCredit(ovc, og, ov, og == int(n.localGP[r]), t)
		} else {
			c.owner[ovc] = -1
		}
	}
	if og == int(n.localGP[r]) {
		c.eject(w, r, ov, &f, t)
		return
	}
	c.credit[ovc]--
	f.vc = uint8(ov)
	c.link[og*c.ls+slot] = f
	c.lnk[og*c.ls+slot] |= 1
}

// holdForTailCredit keeps output VC ovc (VC ov of port og) allocated after
// its tail left in cycle t, until the tail's credit is back: from the next
// router as the VC's last outstanding credit, or, at a terminal port,
// ejDelay cycles later. While held, the VC's owner is a value that names no
// input VC.
func (c *Core) holdForTailCredit(ovc, og, ov int, local bool, t int64) {
	c.tailOut[ovc] = true
	c.owner[ovc] = int32(len(c.owner))
	if local {
		c.cq[int64(og)*c.cqLen+(t+c.ejDelay)%c.cqLen] |= 1 << uint(ov)
	}
}

// eject takes a flit out of the network at its destination and checks
// that packets arrive whole, in order and at the right node.
func (c *Core) eject(w *worker, r, v int, f *flit, t int64) {
	ti := int(c.n.termOf[r])
	w.st.ejFlits++
	if int(f.dst) != r || ti < 0 {
		w.st.err("cycle %d: flit for %s ejected at %s", t, c.n.g.NodeName(int(f.dst)), c.n.g.NodeName(r))
		return
	}
	e := &c.ej[ti*c.V+v]
	if f.seq == 0 {
		if e.exp != 0 {
			w.st.err("cycle %d: packet from terminal %d interleaved with another at %s", t, e.src, c.n.g.NodeName(r))
		}
		e.src, e.pid, e.hops = f.src, f.pid, f.step
	} else if f.src != e.src || f.pid != e.pid || f.seq != e.exp {
		w.st.err("cycle %d: flit %d of packet %d/%d arrived at %s out of order (expected flit %d of %d/%d): lost or duplicated flit",
			t, f.seq, f.src, f.pid, c.n.g.NodeName(r), e.exp, e.src, e.pid)
	}
	e.exp = f.seq + 1
	at := t + 1 + c.termLink
	if t >= c.measStart && t < c.measEnd {
		w.st.winEjFlits++
	}
	w.st.perEj++
	if f.seq != f.size-1 {
		return
	}
	e.exp = 0
	w.st.delivPkts++
	w.st.lastDelivery = at
	lat := int64(int32(at) - f.ctime)
	w.st.perLat += lat
	w.st.perCnt++
	if f.flags&flMeasured != 0 {
		w.st.measDeliv++
		w.st.latSum += lat
		w.st.hopSum += int64(e.hops)
		if lat >= int64(len(w.st.hist)) {
			nh := make([]int64, max(2*len(w.st.hist), int(lat)+1, 256))
			copy(nh, w.st.hist)
			w.st.hist = nh
		}
		w.st.hist[lat]++
	}
	if c.logDeliv && c.terms[f.src].tags != nil {
		w.deliveries = append(w.deliveries, delivery{src: f.src, pid: f.pid, at: at})
	}
}

func (c *Core) portName(gp int) string {
	n := c.n
	if ch := n.gpChan[gp]; ch >= 0 {
		return "input of " + n.g.ChannelName(int(n.gpChan[n.gpPeer[gp]]))
	}
	return "terminal port of " + n.g.NodeName(int(n.gpNode[gp]))
}

// rotr rotates the low n bits of m right by k (0 ≤ k < n ≤ 64): bit i moves
// to (i-k) mod n.
func rotr(m uint64, k, n int) uint64 {
	if k == 0 {
		return m
	}
	low := ^uint64(0)
	if n < 64 {
		low = 1<<uint(n) - 1
	}
	return (m>>uint(k) | m<<uint(n-k)) & low
}
