package sim

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// maxAhead bounds the cycles partitions run between two exchanges (the
// lookahead; it is also min(L, maxAhead) extra slots on every link).
const maxAhead = 4

// partitioned ticks a core with its routers split into contiguous
// ranges (chunks), worked through by k goroutines. A flit or credit sent
// in cycle t is taken off its link L ≥ 1 cycles later and lands in a slot
// no one reads or writes before then (see Core.ls), so within one cycle a
// chunk may receive and step its routers without waiting for the others,
// and it may run up to Core.ahead ≤ L cycles before it must see their
// flits and credits: goroutines synchronise once per batch of cycles, not
// twice per cycle. Every router reads only its own state and the link
// slots written at least L cycles before, and writes only its own state
// and its chunk's counters, so the result is identical to serial ticking
// whatever the number of chunks or goroutines, and whichever goroutine
// runs a chunk. Each goroutine has its own run of chunks and, once done,
// takes the chunks the others have not started (a goroutine slowed by
// the machine holds the others up by at most one chunk). It is a driver
// around the core, which itself stays free of goroutines.
type partitioned struct {
	c *Core
	k int

	// A batch: cycles t0 … t0+n-1; set by Tick before gen moves.
	t0   int64
	n    int
	quit bool

	_    [64]byte
	gen  atomic.Uint64 // batches released
	_    [56]byte
	left atomic.Int32 // goroutines still running the current batch
	_    [60]byte

	runs          []chunkRun // per goroutine, its run of chunks
	workers, main parker
	spin          bool // waiters may spin before they sleep
	mainSpin      spinBudget
	wg            sync.WaitGroup
}

// chunkRun is one goroutine's chunks, c.workers[lo:hi], and how many of
// them have been taken in the current batch (by it or by others).
type chunkRun struct {
	lo, hi int
	taken  atomic.Int64
	_      [48]byte
}

// chunksPerGoroutine is how many chunks each goroutine's run is cut
// into, so that a goroutine done early finds work left to take.
const chunksPerGoroutine = 8

func newPartitioned(c *Core, k int) *partitioned {
	p := splitCore(c, k)
	p.start()
	return p
}

// splitCore cuts c's routers into chunks for k goroutines and returns
// the driver, its goroutines not started.
func splitCore(c *Core, k int) *partitioned {
	R := len(c.n.portStart) - 1
	k = max(1, min(k, R))
	per := c.cfg.minRoutersPerPart
	if per <= 0 {
		per = defaultMinRoutersPerPart
	}
	nc := max(k, min(k*chunksPerGoroutine, R/per))
	old := c.workers[0].st
	c.workers = make([]worker, nc)
	c.workers[0].st = old
	c.balance(nc)
	if c.ahead == 0 {
		c.setAhead(min(c.L, maxAhead))
	}
	for i := range c.workers {
		c.workers[i].lastMove = c.lastMoveCycle
	}
	p := &partitioned{c: c, k: k, runs: make([]chunkRun, k)}
	for i := range p.runs {
		p.runs[i].lo, p.runs[i].hi = i*nc/k, (i+1)*nc/k
	}
	return p
}

// start starts goroutines 1 … k-1 (the caller's goroutine is 0).
func (p *partitioned) start() {
	k := p.k
	// Spinning pays only while every goroutine has a thread to itself.
	p.spin = k <= runtime.GOMAXPROCS(0)
	p.mainSpin = newSpinBudget(p.spin)
	p.workers.init()
	p.main.init()
	p.wg.Add(k - 1)
	for i := 1; i < k; i++ {
		go p.loop(i)
	}
}

// routerCost is the work of router r in a cycle, for balancing
// partitions: its ports plus its terminal's injection.
func (n *Network) routerCost(r int) int {
	w := int(n.portStart[r+1] - n.portStart[r])
	if n.termOf[r] >= 0 {
		w++
	}
	return w
}

// balance splits the routers into k contiguous chunks of about equal
// work: a router costs its ports plus its terminal's injection.
func (c *Core) balance(k int) {
	n := c.n
	R := len(n.portStart) - 1
	cost := n.routerCost
	total := 0
	for r := 0; r < R; r++ {
		total += cost(r)
	}
	r, acc := 0, 0
	for i := 0; i < k; i++ {
		c.workers[i].lo = r
		target := total * (i + 1) / k
		// At least one router, and one left for every later partition.
		for r < R-(k-1-i) && (r == c.workers[i].lo || acc < target || i == k-1) {
			acc += cost(r)
			r++
		}
		c.workers[i].hi = r
	}
}

func (p *partitioned) loop(i int) {
	defer p.wg.Done()
	var seen uint64
	sb := newSpinBudget(p.spin)
	for {
		p.workers.wait(&sb, func() bool { return p.gen.Load() != seen })
		seen = p.gen.Load()
		if p.quit {
			return
		}
		p.work(i)
		if p.left.Add(-1) == 0 {
			p.main.wake()
		}
	}
}

// work runs the current batch on goroutine i's chunks, then on the
// chunks of the others that no one has taken yet.
func (p *partitioned) work(i int) {
	for j := range p.k {
		r := &p.runs[(i+j)%p.k]
		for {
			c := r.lo + int(r.taken.Add(1)) - 1
			if c >= r.hi {
				break
			}
			p.run(&p.c.workers[c])
		}
	}
}

// run simulates the current batch on one chunk's routers.
func (p *partitioned) run(w *worker) {
	c := p.c
	for t := p.t0; t < p.t0+int64(p.n); t++ {
		m0 := w.st.moved
		for r := w.lo; r < w.hi; r++ {
			c.receive(w, r, t)
		}
		for r := w.lo; r < w.hi; r++ {
			c.step(w, r, t)
		}
		if w.st.moved != m0 {
			w.lastMove = t + 1
		}
	}
}

// Tick simulates one cycle on all partitions.
func (p *partitioned) Tick() { p.batch(1) }

// TickUpTo simulates up to k ≥ 1 cycles on all partitions in one batch and
// returns how many: no more than the lookahead, and never past a cycle at
// which the deadlock watchdog looks (so a batch ends where a serial run
// would stop).
func (p *partitioned) TickUpTo(k int) int {
	c := p.c
	n := min(k, c.ahead, int(c.dlWindow-c.now%c.dlWindow))
	p.batch(max(1, n))
	return max(1, n)
}

func (p *partitioned) batch(n int) {
	c := p.c
	p.t0, p.n = c.now, n
	for i := range p.runs {
		p.runs[i].taken.Store(0)
	}
	p.left.Store(int32(p.k - 1))
	p.gen.Add(1)
	p.workers.wake()
	p.work(0)
	p.main.wait(&p.mainSpin, func() bool { return p.left.Load() == 0 })
	c.endBatch(n)
}

// endBatch advances the clock by the n cycles the partitions ran, takes
// the last cycle with a flit movement from them and runs the deadlock
// watchdog where the serial endCycle would.
func (c *Core) endBatch(n int) {
	c.now += int64(n)
	var moved int64
	for i := range c.workers {
		w := &c.workers[i]
		moved += w.st.moved
		c.lastMoveCycle = max(c.lastMoveCycle, w.lastMove)
	}
	c.lastMoved = moved
	if c.now%c.dlWindow == 0 && c.deadlock == nil {
		c.checkDeadlock()
	}
}

func (p *partitioned) stop() {
	p.quit = true
	p.gen.Add(1)
	p.workers.wake()
	p.wg.Wait()
}

// parker waits for a condition another goroutine makes true: it spins
// first (a batch of a few hundred routers takes tens of microseconds, far
// less than parking and waking a goroutine), then yields, then sleeps
// until woken.
type parker struct {
	mu       sync.Mutex
	cond     sync.Cond
	sleepers atomic.Int32
}

func (k *parker) init() { k.cond.L = &k.mu }

// spinBudget is one waiter's number of condition checks in a tight loop
// before it yields: it doubles (up to maxSpin) after a wait that spinning
// ended and halves after one that had to yield or sleep, so a waiter
// whose partner is slow or descheduled (more goroutines than free cores)
// soon stops burning the time its partner needs.
type spinBudget struct{ n, max int }

const (
	maxSpin     = 4096 // checks of the condition in a tight loop, at most
	yieldChecks = 50   // then checks with a yield to the scheduler between
)

func newSpinBudget(spin bool) spinBudget {
	if !spin {
		return spinBudget{}
	}
	return spinBudget{n: maxSpin, max: maxSpin}
}

func (k *parker) wait(sb *spinBudget, ready func() bool) {
	for i := 0; i < sb.n; i++ {
		if ready() {
			sb.n = min(sb.max, 2*sb.n)
			return
		}
	}
	sb.n = max(min(sb.max, 16), sb.n/2)
	for i := 0; i < yieldChecks; i++ {
		if ready() {
			return
		}
		runtime.Gosched()
	}
	k.mu.Lock()
	k.sleepers.Add(1)
	for !ready() {
		k.cond.Wait()
	}
	k.sleepers.Add(-1)
	k.mu.Unlock()
}

// wake wakes the goroutines asleep in wait; call it after making their
// condition true. A waiter counts itself asleep before its last check of
// the condition, so either wake sees it or it sees the condition.
func (k *parker) wake() {
	if k.sleepers.Load() > 0 {
		k.mu.Lock()
		k.cond.Broadcast()
		k.mu.Unlock()
	}
}

// setAhead lets partitions run up to ahead ≤ L cycles between exchanges:
// it widens the link slots to L + ahead per port and the credit pipeline
// to cqDelay + ahead slots, moving what is in flight to its new slot.
func (c *Core) setAhead(ahead int) {
	now := c.now
	ls := c.L + ahead
	link := make([]flit, len(c.link)/c.ls*ls)
	lnk := make([]uint16, len(link))
	for gp := 0; gp < len(c.lnk)/c.ls; gp++ {
		for t := max(0, now-int64(c.L)); t < now; t++ {
			o, n := gp*c.ls+int(t%int64(c.ls)), gp*ls+int(t%int64(ls))
			link[n], lnk[n] = c.link[o], c.lnk[o]
		}
	}
	c.link, c.lnk, c.ls, c.ahead = link, lnk, ls, ahead
	if c.cq == nil {
		return
	}
	qlen := max(c.cqDelay+int64(ahead), c.ejDelay)
	cq := make([]uint64, int64(len(c.cq))/c.cqLen*qlen)
	for gp := int64(0); gp < int64(len(c.cq))/c.cqLen; gp++ {
		for a := now; a < now+c.cqLen; a++ {
			cq[gp*qlen+a%qlen] = c.cq[gp*c.cqLen+a%c.cqLen]
		}
	}
	c.cq, c.cqLen = cq, qlen
}
