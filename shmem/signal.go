package shmem

import (
	"context"
	"fmt"
)

// SignalOp is how PutSignal updates the signal word.
type SignalOp uint8

// Signal operations (OpenSHMEM's SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD).
const (
	SignalSet SignalOp = iota + 1
	SignalAdd
)

// PutSignal is put-with-signal: it copies src into PE pe's elements from i
// and then updates element si of the signal co-array at pe (set to v, or
// add v), so that a PE waiting on the signal (SignalWaitUntil) finds the
// data when it sees the signal. Like Put it returns when src may be reused.
func PutSignal[T Elem](c *Coarray[T], pe, i int, src []T, sig *Coarray[uint64], si int, v uint64, op SignalOp) error {
	return putSignal(c, pe, i, src, sig, si, v, op, false)
}

// PutSignalNBI is the non-blocking PutSignal: src must not change until the
// next Quiet.
func PutSignalNBI[T Elem](c *Coarray[T], pe, i int, src []T, sig *Coarray[uint64], si int, v uint64, op SignalOp) error {
	return putSignal(c, pe, i, src, sig, si, v, op, true)
}

func putSignal[T Elem](c *Coarray[T], pe, i int, src []T, sig *Coarray[uint64], si int, v uint64, op SignalOp, nbi bool) error {
	var aop AtomicOp
	switch op {
	case SignalSet:
		aop = OpSet
	case SignalAdd:
		aop = OpAdd
	default:
		return fmt.Errorf("shmem: PutSignal: unknown signal operation %d", op)
	}
	soff, err := sig.idx("PutSignal", si, 1)
	if err != nil {
		return err
	}
	if err := sig.s.checkAtomic("PutSignal", pe, soff, aop); err != nil {
		return err
	}
	if nbi {
		err = c.PutNBI(pe, i, src)
	} else {
		err = c.Put(pe, i, src)
	}
	if err != nil {
		return err
	}
	if err := c.s.w.tr.Fence(); err != nil {
		return err
	}
	return sig.s.w.tr.AtomicNF(pe, aop, sig.s.offs[pe]+soff, v)
}

// SignalFetch reads element si of this PE's signal co-array atomically.
func SignalFetch(sig *Coarray[uint64], si int) (uint64, error) {
	if _, err := sig.idx("SignalFetch", si, 1); err != nil {
		return 0, err
	}
	return AtomicLoadLocal(&sig.Local()[si]), nil
}

// SignalWaitUntil blocks until element si of this PE's signal co-array
// satisfies (signal cmp v) and returns the signal's value then.
func SignalWaitUntil(ctx context.Context, sig *Coarray[uint64], si int, cmp Cmp, v uint64) (uint64, error) {
	if err := WaitUntilCtx(ctx, sig, si, cmp, v); err != nil {
		return 0, err
	}
	return AtomicLoadLocal(&sig.Local()[si]), nil
}
