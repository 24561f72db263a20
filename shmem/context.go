package shmem

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Ctx is a communication context (shmem_ctx_create): a stream of
// non-blocking puts and gets with its own completion, so that one
// goroutine's Quiet does not wait for another's transfers. On shm each
// context has its own copy engine and Quiet waits for it alone; on TCP the
// operations share the connections and a context's Quiet completes every
// operation of the PE (allowed: more than its own is complete).
type Ctx struct {
	w      *World
	shm    *shmTransport
	engine copyEngine
	closed atomic.Bool
}

// NewCtx creates a context of this PE (not a collective).
func (w *World) NewCtx() (*Ctx, error) {
	if err := w.ok(); err != nil {
		return nil, err
	}
	c := &Ctx{w: w}
	c.shm, _ = w.tr.(*shmTransport)
	return c, nil
}

func (c *Ctx) ready(op string, s *Sym, pe, off, n int) error {
	if c == nil || c.closed.Load() {
		return fmt.Errorf("shmem: %s on a destroyed or nil context", op)
	}
	if s == nil || s.w != c.w {
		return errors.New("shmem: " + op + ": co-array of another World")
	}
	return s.check(op, pe, off, n)
}

// PutNBI is Sym.PutNBI on this context.
func (c *Ctx) PutNBI(s *Sym, pe, off int, src []byte) error {
	if err := c.ready("Ctx.PutNBI", s, pe, off, len(src)); err != nil {
		return err
	}
	if c.shm == nil || len(src) < nbiInline {
		return c.w.tr.PutNBI(pe, s.offs[pe]+off, src)
	}
	d, err := c.shm.span(pe, s.offs[pe]+off, len(src))
	if err != nil {
		return err
	}
	c.engine.submit(d, src)
	return nil
}

// GetNBI is Sym.GetNBI on this context.
func (c *Ctx) GetNBI(s *Sym, pe, off int, dst []byte) error {
	if err := c.ready("Ctx.GetNBI", s, pe, off, len(dst)); err != nil {
		return err
	}
	if c.shm == nil || len(dst) < nbiInline {
		return c.w.tr.GetNBI(pe, s.offs[pe]+off, dst)
	}
	src, err := c.shm.span(pe, s.offs[pe]+off, len(dst))
	if err != nil {
		return err
	}
	c.engine.submit(dst, src)
	return nil
}

// Quiet completes the context's operations.
func (c *Ctx) Quiet() error {
	if c == nil || c.closed.Load() {
		return errors.New("shmem: Quiet on a destroyed or nil context")
	}
	if err := c.w.ok(); err != nil {
		return err
	}
	if c.shm == nil {
		return c.w.tr.Quiet()
	}
	if c.engine.pending() {
		c.engine.drain()
	}
	atomic.AddUint64(&c.shm.fence[0], 1)
	return nil
}

// Fence orders the context's operations (as Quiet: the engine keeps no
// per-target order).
func (c *Ctx) Fence() error { return c.Quiet() }

// Destroy completes the context's operations and releases it.
func (c *Ctx) Destroy() error {
	if c == nil || c.closed.Swap(true) {
		return errors.New("shmem: context destroyed twice")
	}
	c.engine.close()
	if c.shm == nil {
		return c.w.Quiet()
	}
	return nil
}
