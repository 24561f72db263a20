package fm

import (
	"context"

	"errors"
	"fmt"
	"sync"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
)

// lifecycle tracks what runs on behalf of the service: changes in flight
// (failure reports, placements, releases, multicast requests, ticks) and
// the service's own goroutines (the unicast rebalance, the hook worker).
// Close refuses new ones, cancels those running through their contexts
// and waits for them before it closes the store, so nothing writes to a
// closed store and no goroutine of the service outlives Close.
type lifecycle struct {
	mu      sync.Mutex
	closing bool
	next    uint64
	cancels map[uint64]context.CancelCauseFunc // of the work running
	wg      sync.WaitGroup                     // counts the work running
	closed  chan struct{}                      // closed when Close begins
}

// begin registers one piece of work (a change, or a goroutine of the
// service). It fails with ErrClosing once Close has begun; otherwise it
// returns a context that ends with ctx or when Close begins (its cause
// is then ErrClosing), and end, which the caller calls when the work is
// done (Close waits for that).
func (s *Service) begin(ctx context.Context) (context.Context, func(), error) {
	return s.life.begin(ctx, client.ErrClosing)
}

// begin registers one piece of work, or fails with refused once stop has
// begun.
func (l *lifecycle) begin(ctx context.Context, refused error) (context.Context, func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return nil, nil, fmt.Errorf("%w", refused)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if l.cancels == nil {
		l.cancels = map[uint64]context.CancelCauseFunc{}
	}
	id := l.next
	l.next++
	l.cancels[id] = cancel
	l.wg.Add(1)
	return ctx, func() {
		l.mu.Lock()
		delete(l.cancels, id)
		l.mu.Unlock()
		cancel(nil)
		l.wg.Done()
	}, nil
}

// spawn runs fn in a goroutine of the service: its ctx ends when Close
// begins, and Close waits for it to return. It reports false, and fn
// does not run, once Close has begun.
func (s *Service) spawn(fn func(ctx context.Context)) bool {
	ctx, end, err := s.begin(context.Background())
	if err != nil {
		return false
	}
	go func() {
		defer end()
		fn(ctx)
	}()
	return true
}

// closing returns a channel closed when Close begins.
func (s *Service) closing() <-chan struct{} {
	l := &s.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed == nil {
		l.closed = make(chan struct{})
	}
	return l.closed
}

// shutdown refuses new work, cancels the work running (cause ErrClosing)
// and waits until it has ended.
func (s *Service) shutdown() {
	s.life.stop(client.ErrClosing)
	s.unlead()
}

// stop refuses new work, cancels the work running (with cause) and waits
// until it has ended.
func (l *lifecycle) stop(cause error) {
	l.mu.Lock()
	if !l.closing {
		l.closing = true
		for _, cancel := range l.cancels {
			cancel(cause)
		}
		if l.closed == nil {
			l.closed = make(chan struct{})
		}
		close(l.closed)
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// stopped is the error of a change whose context ended before it
// committed anything: ErrClosing when the service is closing, else the
// context's own error (the caller gave up, or its time ran out); what
// says what was not done.
func stopped(ctx context.Context, what string) error {
	if errors.Is(context.Cause(ctx), client.ErrClosing) {
		return fmt.Errorf("%w: %s", client.ErrClosing, what)
	}
	if errors.Is(context.Cause(ctx), client.ErrNotLeader) {
		return fmt.Errorf("%w: this instance lost the leadership; %s", client.ErrNotLeader, what)
	}
	return fmt.Errorf("%w: %s", ctx.Err(), what)
}

// refuse returns ErrClosing once Close has begun (what says what was not
// done), so that a change is refused as such before its other checks.
func (s *Service) refuse(what string) error {
	l := &s.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return fmt.Errorf("%w: %s", client.ErrClosing, what)
	}
	return nil
}

// term is one leadership of this instance over the store: the changes
// it admits register with it (beginWrite), and a step-down cancels them
// (cause ErrNotLeader) and waits for them before the instance follows
// the new leader.
type term struct {
	life lifecycle
	l    *store.Leadership // nil: the only instance of a bbolt store, which leads for good
}

// lead starts a term of leadership l (nil: for good).
func (s *Service) lead(l *store.Leadership) { s.term.Store(&term{l: l}) }

// leading returns the current term, or nil when the instance does not
// lead, or its lease may have run out (it no longer trusts it: a
// standby may have taken over).
func (s *Service) leading() *term {
	t := s.term.Load()
	if t == nil || t.l != nil && !t.l.Valid() {
		return nil
	}
	return t
}

// unlead ends the current term: new changes are refused, those in
// flight cancelled (ErrNotLeader), and it waits for them. It returns the
// term ended (nil if there was none).
func (s *Service) unlead() *term {
	t := s.term.Swap(nil)
	if t != nil {
		t.life.stop(client.ErrNotLeader)
	}
	return t
}

// beginWrite registers a change of the store: with the service (Close
// waits for it) and with the current term of leadership (a step-down
// cancels it). It fails with ErrNotLeader when the instance does not
// lead, and with ErrClosing once Close has begun; what says what was not
// done.
func (s *Service) beginWrite(ctx context.Context, what string) (context.Context, func(), error) {
	t := s.leading()
	if t == nil {
		if err := s.refuse(what); err != nil {
			return nil, nil, err
		}
		return nil, nil, s.notLeader(what)
	}
	ctx, end, err := s.begin(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s", err, what)
	}
	ctx, tend, err := t.life.begin(ctx, client.ErrNotLeader)
	if err != nil {
		end()
		return nil, nil, s.notLeader(what)
	}
	return ctx, func() { tend(); end() }, nil
}

// spawnLeader runs fn in a goroutine of the current term: its ctx ends
// when the term ends or the service closes, and both wait for it. It
// reports false, and fn does not run, when the instance does not lead.
func (s *Service) spawnLeader(fn func(ctx context.Context)) bool {
	ctx, end, err := s.beginWrite(context.Background(), "")
	if err != nil {
		return false
	}
	go func() {
		defer end()
		fn(ctx)
	}()
	return true
}

// writable returns nil when the instance may change the store now:
// ErrClosing once Close has begun, ErrNotLeader when it does not lead.
func (s *Service) writable(what string) error {
	if err := s.refuse(what); err != nil {
		return err
	}
	if s.leading() == nil {
		return s.notLeader(what)
	}
	return nil
}

// commit writes one change to the store (store.Update) and tells the
// replica when the store says the instance no longer leads or cannot be
// reached (it steps down and reads the store again). A refused change
// wraps client.ErrNotLeader: nothing of it was stored.
func (s *Service) commit(ctx context.Context, actor string, fn func(*store.Tx) error) (int64, error) {
	rev, err := s.store.Update(ctx, actor, fn)
	if err == nil {
		if s.rep != nil {
			s.rep.committed(rev)
		}
		return rev, nil
	}
	if errors.Is(err, store.ErrNotLeader) || errors.Is(err, store.ErrUnavailable) {
		if s.rep != nil {
			s.rep.lost(err)
		}
	}
	if errors.Is(err, store.ErrNotLeader) {
		return 0, fmt.Errorf("%w: %v", client.ErrNotLeader, err)
	}
	return 0, err
}
