package sim

import "sync"

// partitioned ticks a core with its routers split into contiguous ranges,
// one goroutine per range, and a barrier between the receive and the
// switch phase of every cycle. Routers only write their own state in each
// phase, so the result is identical to serial ticking. It is a driver
// around the core, which itself stays free of goroutines.
type partitioned struct {
	c     *Core
	k     int
	start []chan uint8
	wg    sync.WaitGroup
}

const (
	phaseReceive uint8 = iota
	phaseStep
	phaseStop
)

func newPartitioned(c *Core, k int) *partitioned {
	R := len(c.n.portStart) - 1
	k = max(1, min(k, R))
	// Balance by ports (the work of a router grows with its ports).
	total := int(c.n.portStart[R])
	old := c.workers[0].st
	c.workers = make([]worker, k)
	c.workers[0].st = old
	r := 0
	for i := 0; i < k; i++ {
		c.workers[i].lo = r
		target := total * (i + 1) / k
		for r < R && (int(c.n.portStart[r]) < target || i == k-1) {
			r++
		}
		c.workers[i].hi = r
	}
	p := &partitioned{c: c, k: k, start: make([]chan uint8, k)}
	for i := 1; i < k; i++ {
		p.start[i] = make(chan uint8, 1)
		go p.loop(i)
	}
	return p
}

func (p *partitioned) loop(i int) {
	w := &p.c.workers[i]
	for ph := range p.start[i] {
		if ph == phaseStop {
			return
		}
		p.phase(w, ph)
		p.wg.Done()
	}
}

func (p *partitioned) phase(w *worker, ph uint8) {
	c := p.c
	t := c.now
	if ph == phaseReceive {
		for r := w.lo; r < w.hi; r++ {
			c.receive(w, r, t)
		}
		return
	}
	for r := w.lo; r < w.hi; r++ {
		c.step(w, r, t)
	}
}

// Tick simulates one cycle on all partitions.
func (p *partitioned) Tick() {
	for _, ph := range [2]uint8{phaseReceive, phaseStep} {
		p.wg.Add(p.k - 1)
		for i := 1; i < p.k; i++ {
			p.start[i] <- ph
		}
		p.phase(&p.c.workers[0], ph)
		p.wg.Wait()
	}
	p.c.endCycle()
}

func (p *partitioned) stop() {
	for i := 1; i < p.k; i++ {
		p.start[i] <- phaseStop
	}
}
