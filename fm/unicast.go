package fm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
)

// UnicastConfig asks the service to keep a switched fabric's unicast
// forwarding tables current: computed at start and after every failure
// or repair, and written as OpenSM's file engine reads them.
type UnicastConfig struct {
	Engine string // a unicast engine of the registry (unicast.Engines)
	// LFTOut is the dump OpenSM loads (opensm -R file -U LFTOut); it is
	// replaced atomically, so OpenSM never reads half a file, and kept as
	// it was when a computation or a write fails.
	LFTOut string
	// Compact writes the dump without the comment naming each LID's
	// holder (OpenSM reads only LID and port; a sixth of the size).
	Compact bool
	Workers int // cores for routing (0: all but one)
	// KeepRepairs leaves repaired tables (engines whose Caps.Update is
	// "repair") in place: no full computation follows in the background. A
	// full sssp run moves most routes (it balances all destinations anew),
	// which OpenSM must then upload; a repair moves only the broken ones.
	KeepRepairs bool
	// Hook, if set, runs after every replacement of LFTOut (to make
	// OpenSM load it), in the background: a change does not wait for
	// it, dumps written while it runs make it run once more afterwards
	// for the newest, and its ctx ends when the service closes (or after
	// a minute). Its result is reported in the status.
	Hook func(ctx context.Context, path string) error
}

// refreshUnicast brings the tables to fabric g (incrementally after the
// first time) and writes the dump; callers serialise (Open, and
// ChangeFailure under changeMu). A background rebalance still running is
// stopped first. The hook is only asked to run (kickHook): it runs
// outside rrMu and changeMu, and nobody waits for it.
func (s *Service) refreshUnicast(g *topology.Graph) *client.UnicastStatus {
	u := s.cfg.Unicast
	if u == nil {
		return nil
	}
	s.stopRebalance()
	s.rrMu.Lock()
	defer s.rrMu.Unlock()
	st := &client.UnicastStatus{Engine: u.Engine, LFTOut: u.LFTOut, Updated: s.cfg.Now().UTC(), Disconnected: disconnectedHosts(g)}
	start := time.Now()
	var res *unicast.Result
	ust := unicast.UpdateStats{Mode: "full", Exact: true}
	// The tables follow a fabric state already committed: no caller's
	// context stops them.
	ctx := context.Background()
	err := func() error {
		var err error
		if s.rr == nil {
			w := u.Workers
			if w == 0 {
				w = computeWorkers()
			}
			rr, err := unicast.NewRerouter(ctx, g, s.uniAnn, unicast.Options{Engine: u.Engine, Workers: w})
			if err != nil {
				return err
			}
			s.rr, res = rr, rr.Result()
			ust.Destinations = rr.Destinations()
			ust.Rerouted = ust.Destinations
		} else if res, ust, err = s.rr.Update(ctx, g); err != nil {
			return err
		}
		st.Mode, st.Exact, st.Rerouted, st.Destinations, st.Changed = ust.Mode, ust.Exact, ust.Rerouted, ust.Destinations, ust.Changed
		st.RouteSeconds = time.Since(start).Seconds()
		st.Reachable = len(st.Disconnected) == 0
		return s.writeDump(res, st)
	}()
	st.Seconds = time.Since(start).Seconds()
	if err != nil {
		st.Error = fmt.Sprintf("tables not written (the previous %s is left in place): %v", u.LFTOut, err)
	} else {
		st.Written = true
		if !st.Exact && !u.KeepRepairs {
			st.Rebalancing = s.startRebalance()
		}
	}
	s.hookStatus(st)
	s.uniMu.Lock()
	s.uni = st
	s.uniMu.Unlock()
	return st
}

// writeDump replaces the dump with res's tables and asks for a run of
// the hook (in the background: kickHook).
func (s *Service) writeDump(res *unicast.Result, st *client.UnicastStatus) error {
	u := s.cfg.Unicast
	w0 := time.Now()
	write := s.writeFile
	if write == nil {
		write = atomicfile.Write
	}
	dump := res.Tables.WriteDump
	if u.Compact {
		dump = res.Tables.WriteCompactDump
	}
	if err := write(u.LFTOut, dump); err != nil {
		return err
	}
	st.WriteSeconds = time.Since(w0).Seconds()
	if fi, err := os.Stat(u.LFTOut); err == nil {
		st.DumpBytes = fi.Size()
	}
	s.kickHook()
	return nil
}

// hookTimeout bounds one run of the hook.
const hookTimeout = time.Minute

// hookRunner runs UnicastConfig.Hook in one goroutine of the service,
// outside every lock, for the latest dump written: dumps written while
// the hook runs make it run once more afterwards (however many there
// were), and no change waits for it. Close ends a run's context and
// waits for the goroutine.
type hookRunner struct {
	mu      sync.Mutex
	cond    *sync.Cond    // broadcast whenever pending or running changes
	wake    chan struct{} // capacity 1: a dump was written (nil: no hook)
	pending bool          // a dump was written that no run has started for
	running bool
	ran     time.Time // when the last run ended (zero: none yet)
	err     string    // the last run's failure ("" if it succeeded)
}

// startHook starts the hook's goroutine (Open; nothing without a hook).
func (s *Service) startHook() {
	u := s.cfg.Unicast
	if u == nil || u.Hook == nil {
		return
	}
	h := &s.hook
	h.cond = sync.NewCond(&h.mu)
	h.wake = make(chan struct{}, 1)
	s.spawn(s.runHooks)
}

// kickHook asks for a run of the hook for the dump just written.
func (s *Service) kickHook() {
	h := &s.hook
	if h.wake == nil {
		return
	}
	h.mu.Lock()
	h.pending = true
	h.cond.Broadcast()
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // a wake-up is waiting already
	}
}

// runHooks is the hook's goroutine: it runs the hook while a dump is
// pending, until ctx ends (Close).
func (s *Service) runHooks(ctx context.Context) {
	h := &s.hook
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		}
		for h.take(ctx) {
			err := s.runHook(ctx)
			h.mu.Lock()
			h.running, h.ran, h.err = false, s.cfg.Now().UTC(), ""
			if err != nil {
				h.err = err.Error()
			}
			h.cond.Broadcast()
			h.mu.Unlock()
		}
	}
}

// take starts a run if a dump is pending (and ctx has not ended).
func (h *hookRunner) take(ctx context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.pending || ctx.Err() != nil {
		return false
	}
	h.pending, h.running = false, true
	h.cond.Broadcast()
	return true
}

// runHook runs the hook once on the dump, for at most hookTimeout.
func (s *Service) runHook(ctx context.Context) error {
	u := s.cfg.Unicast
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	err := u.Hook(ctx, u.LFTOut)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%v (stopped after %v)", err, hookTimeout)
	}
	return err
}

// hookStatus copies the hook's state into a status.
func (s *Service) hookStatus(st *client.UnicastStatus) {
	h := &s.hook
	if h.wake == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	st.HookError, st.HookPending, st.HookRan = h.err, h.pending || h.running, nil
	if !h.ran.IsZero() {
		t := h.ran
		st.HookRan = &t
	}
}

// startRebalance computes the tables of the current fabric in full in a
// goroutine of the service and writes them when done, unless a change
// or Close stops it first (rrMu held by the caller, who releases it). It
// reports false, starting nothing, once Close has begun.
func (s *Service) startRebalance() bool {
	ctx, end, err := s.beginWrite(context.Background(), "")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.bgMu.Lock()
	s.bgCancel, s.bgDone = cancel, done
	s.bgMu.Unlock()
	go func() {
		defer end()
		defer close(done)
		defer cancel()
		s.rrMu.Lock()
		defer s.rrMu.Unlock()
		start := time.Now()
		prev := s.rr.Result().Tables
		res, err := s.rr.Full(ctx)
		if ctx.Err() != nil {
			return
		}
		s.uniMu.Lock()
		st := *s.uni
		s.uniMu.Unlock()
		st.Rebalancing = false
		if err == nil {
			st.RouteSeconds = time.Since(start).Seconds()
			err = s.writeDump(res, &st)
		}
		if err != nil {
			st.Error = fmt.Sprintf("rebalance failed (the repaired %s is left in place): %v", st.LFTOut, err)
		} else {
			st.Mode, st.Exact, st.Updated = "full", true, s.cfg.Now().UTC()
			st.Rerouted, st.Changed = st.Destinations, unicast.ChangedEntries(prev, res.Tables)
			st.Seconds = time.Since(start).Seconds()
		}
		s.uniMu.Lock()
		s.uni = &st
		s.uniMu.Unlock()
	}()
	return true
}

// stopRebalance stops a background rebalance and waits for it.
func (s *Service) stopRebalance() {
	s.bgMu.Lock()
	cancel, done := s.bgCancel, s.bgDone
	s.bgCancel, s.bgDone = nil, nil
	s.bgMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Unicast returns the status of the unicast tables (nil: not kept).
func (s *Service) Unicast() *client.UnicastStatus {
	s.uniMu.Lock()
	defer s.uniMu.Unlock()
	if s.uni == nil {
		return nil
	}
	c := *s.uni
	s.hookStatus(&c)
	return &c
}

// disconnectedHosts lists the live end nodes of g outside the largest
// group of switches still joined by working links (or with no working
// link at all).
func disconnectedHosts(g *topology.Graph) []string {
	n := g.NumNodes()
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	size := map[int]int{}
	for v := 0; v < n; v++ {
		if comp[v] >= 0 || g.Kind(v) != topology.Switch || g.NodeFailed(v) {
			continue
		}
		queue := []int{v}
		comp[v] = v
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			size[v]++
			for _, c := range g.Out(x) {
				y := g.Dst(int(c))
				if g.Up(int(c)) && comp[y] < 0 && g.Kind(y) == topology.Switch {
					comp[y] = v
					queue = append(queue, y)
				}
			}
		}
	}
	main, best := -1, 0
	for c, k := range size {
		if k > best || k == best && c < main {
			main, best = c, k
		}
	}
	var out []string
	for v := 0; v < n; v++ {
		if g.Kind(v) == topology.Switch || g.NodeFailed(v) {
			continue
		}
		joined := false
		for _, c := range g.Out(v) {
			if y := g.Dst(int(c)); g.Up(int(c)) && g.Kind(y) == topology.Switch && comp[y] == main {
				joined = true
				break
			}
		}
		if !joined {
			out = append(out, g.NodeName(v))
		}
	}
	slices.Sort(out)
	return out
}

// Graph returns the current fabric (failures included); callers must not
// change it.
func (s *Service) Graph() *topology.Graph {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.g
}
