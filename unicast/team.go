package unicast

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// team is a fixed group of goroutines that work through the same sequence
// of steps, each step's items shared out in chunks and every step closed
// by a barrier (sssp routes one destination in a few such steps). Every
// member runs the same code on the same data, so all agree on the steps.
type team struct {
	n        int32
	arrived  atomic.Int32
	gen      atomic.Uint32
	sleepers atomic.Int32
	mu       sync.Mutex
	cond     sync.Cond
	ctr      [4]paddedCounter // chunk counters of steps g, g+1, … (mod 4)
}

// paddedCounter keeps each counter on its own cache line.
type paddedCounter struct {
	atomic.Int64
	_ [56]byte
}

// member is one goroutine's view of a team: its index and how many steps
// it has finished.
type member struct {
	t    *team
	w    int
	step int
}

func newTeam(n int) *team {
	t := &team{n: int32(n)}
	t.cond.L = &t.mu
	return t
}

// Spin limits of the barrier: first busy reads, then reads with yields
// (which let another member run when the goroutines outnumber
// GOMAXPROCS), then sleeping on the condition variable.
const (
	teamSpin  = 256
	teamYield = 64
)

// barrier returns when every member has called it (once per step).
func (m *member) barrier() {
	t := m.t
	if m.w == 0 {
		// The counter of step+2 was last used two barriers ago and is
		// next used two barriers on.
		t.ctr[(m.step+2)%4].Store(0)
	}
	g := t.gen.Load()
	m.step++
	if t.arrived.Add(1) == t.n {
		t.arrived.Store(0)
		t.gen.Add(1)
		if t.sleepers.Load() > 0 {
			t.mu.Lock()
			t.cond.Broadcast()
			t.mu.Unlock()
		}
		return
	}
	for i := 0; i < teamSpin; i++ {
		if t.gen.Load() != g {
			return
		}
	}
	for i := 0; i < teamYield; i++ {
		runtime.Gosched()
		if t.gen.Load() != g {
			return
		}
	}
	t.mu.Lock()
	t.sleepers.Add(1)
	for t.gen.Load() == g {
		t.cond.Wait()
	}
	t.sleepers.Add(-1)
	t.mu.Unlock()
}

// chunks calls f(i0, i1) on successive chunks of [0, n) that this member
// takes from the step's shared counter; the members together cover every
// index once. Call barrier after it.
func (m *member) chunks(n int, f func(i0, i1 int)) {
	t := m.t
	chunk := max(8, n/(int(t.n)*8))
	ctr := &t.ctr[m.step%4]
	for {
		i0 := int(ctr.Add(int64(chunk))) - chunk
		if i0 >= n {
			return
		}
		f(i0, min(i0+chunk, n))
	}
}

// run calls body on n goroutines (the caller's is member 0) and returns
// member 0's result once all have returned.
func (t *team) run(body func(m *member) error) error {
	var wg sync.WaitGroup
	for w := 1; w < int(t.n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(&member{t: t, w: w})
		}()
	}
	err := body(&member{t: t, w: 0})
	wg.Wait()
	return err
}
