package unicast

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// team is a fixed group of goroutines that work through the same sequence
// of steps, each member doing its share of every step and every step
// closed by a barrier (sssp routes one destination in a few such steps).
// Every member runs the same code on the same data, so all agree on the
// steps.
type team struct {
	n        int32
	arrived  atomic.Int32
	gen      atomic.Uint32
	sleepers atomic.Int32
	mu       sync.Mutex
	cond     sync.Cond
}

// member is one goroutine's view of a team: its index.
type member struct {
	t *team
	w int
}

// newTeam returns a team of n members.
func newTeam(n int) *team {
	t := &team{n: int32(n)}
	t.cond.L = &t.mu
	return t
}

// Spin limits of the barrier: first busy reads for up to teamSpin (a
// step's work is tens of microseconds, and waking a sleeper costs about
// as much), then reads with yields (which let another member run when
// the goroutines outnumber GOMAXPROCS), then sleeping on the condition
// variable. The spin is bounded in time, not in reads, so that it stays
// short where reads are slow (the race detector).
const (
	teamSpin  = 100 * time.Microsecond
	teamYield = 64
)

// barrier returns when every member has called it (once per step).
func (m *member) barrier() {
	t := m.t
	g := t.gen.Load()
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
	for start, i := time.Now(), 0; ; i++ {
		if t.gen.Load() != g {
			return
		}
		if i&255 == 255 && time.Since(start) > teamSpin {
			break
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
