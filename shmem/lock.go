package shmem

import (
	"context"
	"fmt"
)

// Lock is a distributed mutual-exclusion lock (shmem_set_lock,
// shmem_test_lock, shmem_clear_lock): one word on PE 0 holding 0 when free
// and holder+1 when held, taken by compare-and-swap. Everything the holder
// put before Clear is complete (Quiet) before the next holder can take it.
type Lock struct {
	c *Coarray[int64]
}

// NewLock allocates a lock collectively (every PE calls it, like
// CoarrayAll).
func NewLock(w *World) (*Lock, error) {
	c, err := NewCoarray[int64](w, 1)
	if err != nil {
		return nil, err
	}
	return &Lock{c: c}, nil
}

// Test takes the lock if it is free and reports whether it did.
func (l *Lock) Test() (bool, error) {
	if l == nil || l.c == nil {
		return false, fmt.Errorf("shmem: Test of a nil lock")
	}
	me := int64(l.c.s.w.me) + 1
	old, err := AtomicCompareSwap(l.c, 0, 0, 0, me)
	if err != nil {
		return false, err
	}
	if old == me {
		return false, fmt.Errorf("shmem: PE %d tests a lock it holds", me-1)
	}
	return old == 0, nil
}

// Set waits until it takes the lock, or ctx is done, or the World fails.
func (l *Lock) Set(ctx context.Context) error {
	if l == nil || l.c == nil {
		return fmt.Errorf("shmem: Set of a nil lock")
	}
	w := l.c.s.w
	done := ctx.Done()
	for i := 0; ; i++ {
		ok, err := l.Test()
		if err != nil || ok {
			return err
		}
		if err := w.failure(); err != nil {
			return err
		}
		if done != nil {
			select {
			case <-done:
				return fmt.Errorf("shmem: Set lock abandoned: %w", context.Cause(ctx))
			default:
			}
		}
		backoff(i)
	}
}

// Clear completes this PE's operations (Quiet) and releases the lock; only
// the holder may clear it.
func (l *Lock) Clear() error {
	if l == nil || l.c == nil {
		return fmt.Errorf("shmem: Clear of a nil lock")
	}
	w := l.c.s.w
	if err := w.Quiet(); err != nil {
		return err
	}
	me := int64(w.me) + 1
	old, err := AtomicCompareSwap(l.c, 0, 0, me, 0)
	if err != nil {
		return err
	}
	if old != me {
		return fmt.Errorf("shmem: PE %d clears a lock held by %s", me-1, holder(old))
	}
	return nil
}

func holder(v int64) string {
	if v == 0 {
		return "nobody"
	}
	return fmt.Sprintf("PE %d", v-1)
}

// Free releases the lock's word collectively.
func (l *Lock) Free() error {
	if l == nil || l.c == nil {
		return fmt.Errorf("shmem: Free of a nil lock")
	}
	return l.c.Free()
}
