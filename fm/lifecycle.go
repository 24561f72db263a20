package fm

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrClosing marks a change refused or stopped because the service is
// closing (nothing of it was committed).
var ErrClosing = errors.New("the service is closing")

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
	l := &s.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return nil, nil, fmt.Errorf("%w", ErrClosing)
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
	l := &s.life
	l.mu.Lock()
	if !l.closing {
		l.closing = true
		for _, cancel := range l.cancels {
			cancel(ErrClosing)
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
	if errors.Is(context.Cause(ctx), ErrClosing) {
		return fmt.Errorf("%w: %s", ErrClosing, what)
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
		return fmt.Errorf("%w: %s", ErrClosing, what)
	}
	return nil
}
