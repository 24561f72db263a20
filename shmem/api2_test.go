package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// atomicSums: every PE adds me+1 to element 0 of PE 0 rounds times, with
// fetching and non-fetching adds alternating; the total is the sequential
// sum. Checked for every atomic type.
func atomicSums[T AtomicValue](w *World) error {
	const rounds = 20
	c, err := NewCoarray[T](w, 4)
	if err != nil {
		return err
	}
	me, n := w.MyPE(), w.NPEs()
	for r := 0; r < rounds; r++ {
		if r%2 == 0 {
			_, err = AtomicFetchAdd(c, 0, 0, T(me+1))
		} else {
			err = AtomicAdd(c, 0, 0, T(me+1))
		}
		if err != nil {
			return err
		}
	}
	// swap and compare-and-swap: each PE moves its number into element 1
	// of its right neighbour and checks the previous value is still 0
	right := (me + 1) % n
	if old, err := AtomicCompareSwap(c, right, 1, 0, T(me+1)); err != nil || old != 0 {
		return fmt.Errorf("PE %d: compare-and-swap found %v, %v", me, old, err)
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	if me == 0 {
		if got, want := AtomicLoadLocal(&c.Local()[0]), T(rounds*n*(n+1)/2); got != want {
			return fmt.Errorf("%T: sum %v, want %v", got, got, want)
		}
	}
	left := (me + n - 1) % n
	if got, err := AtomicSwap(c, me, 1, 0); err != nil || got != T(left+1) {
		return fmt.Errorf("PE %d %T: swap found %v, want %v (%v)", me, got, got, left+1, err)
	}
	if got, err := AtomicFetch(c, me, 1); err != nil || got != 0 {
		return fmt.Errorf("PE %d %T: fetch after swap %v (%v)", me, got, got, err)
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	return c.Free()
}

// bitwise: or, and, xor with their fetching, non-fetching and non-blocking
// forms agree with the sequential answer.
func bitwise[T Word](w *World) error {
	c, err := NewCoarray[T](w, 3)
	if err != nil {
		return err
	}
	me, n := w.MyPE(), w.NPEs()
	c.Local()[1] = ^T(0)
	if err := w.BarrierAll(); err != nil {
		return err
	}
	bit := T(1) << me
	old := make([]T, n) // one result each: replies from different PEs arrive concurrently
	for p := 0; p < n; p++ {
		if err := AtomicOr(c, p, 0, bit); err != nil {
			return err
		}
		if _, err := AtomicFetchAnd(c, p, 1, ^bit); err != nil {
			return err
		}
		if err := AtomicFetchXorNBI(c, p, 2, bit, &old[p]); err != nil {
			return err
		}
		if err := AtomicXor(c, p, 2, bit<<8); err != nil {
			return err
		}
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	all := T(1)<<n - 1
	loc := c.Local()
	if loc[0] != all || loc[1] != ^all || loc[2] != all|all<<8 {
		return fmt.Errorf("PE %d %T: or %b and %b xor %b", me, loc[0], loc[0], loc[1], loc[2])
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	return c.Free()
}

// fetchNBI: non-blocking fetch-and-increments on one counter hand out every
// ticket exactly once.
func fetchNBI(w *World) error {
	const k = 16
	c, err := NewCoarray[int32](w, 2)
	if err != nil {
		return err
	}
	got := make([]int32, k)
	for i := range got {
		if err := AtomicFetchIncNBI(c, 0, 0, &got[i]); err != nil {
			return err
		}
	}
	if err := w.Quiet(); err != nil {
		return err
	}
	sum := int32(0)
	for _, v := range got {
		sum += v
	}
	if err := AtomicAdd(c, 0, 1, sum); err != nil {
		return err
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	total := int32(k * w.NPEs())
	if w.MyPE() == 0 {
		if loc := c.Local(); loc[0] != total || loc[1] != total*(total-1)/2 {
			return fmt.Errorf("tickets %d sum %d, want %d and %d", loc[0], loc[1], total, total*(total-1)/2)
		}
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	return c.Free()
}

func TestAtomicTypes(t *testing.T) {
	forJobs(t, func(w *World) error {
		return errors.Join(atomicSums[int32](w), atomicSums[uint32](w), atomicSums[int64](w),
			atomicSums[uint64](w), atomicSums[float32](w), atomicSums[float64](w),
			bitwise[uint32](w), bitwise[int64](w), fetchNBI(w))
	})
}

func TestAtomicBadInput(t *testing.T) {
	j := localJob(t, 2, TransportShm)
	w := j.Worlds[0]
	s, err := func() (*Sym, error) {
		var s *Sym
		err := j.Run(func(w *World) error {
			x, err := w.CoarrayAll(64)
			if w.MyPE() == 0 {
				s = x
			}
			return err
		})
		return s, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op  AtomicOp
		off int
	}{
		{OpAnd | AtomicFloat64, 0}, {OpXor | AtomicFloat32, 0}, {opMax, 0}, {0xc1, 0},
		{OpAdd | AtomicUint32, 2}, {OpAdd, 4}, {OpAdd | AtomicUint32, 62},
	} {
		if _, err := s.Atomic(1, c.op, c.off, 1, 0); err == nil {
			t.Errorf("atomic %#x at %d accepted", c.op, c.off)
		}
	}
	if _, err := s.Atomic(1, OpAdd|AtomicUint32, 60, 1, 0); err != nil {
		t.Errorf("aligned 32-bit atomic at 60: %v", err)
	}
	_ = w
}

// TestWaitFamily: every PE sets its flag at every other PE; the waits and
// tests see exactly the flags set, and a cancelled wait says why.
func TestWaitFamily(t *testing.T) {
	forJobs(t, func(w *World) error {
		ctx := context.Background()
		me, n := w.MyPE(), w.NPEs()
		f, err := NewCoarray[int64](w, n)
		if err != nil {
			return err
		}
		others := []int{} // not nil: nil means every element
		vals := []int64{}
		for p := 0; p < n; p++ {
			if p != me {
				others = append(others, p)
				vals = append(vals, int64(p+1))
				if err := AtomicSet(f, p, me, int64(me+1)); err != nil {
					return err
				}
			}
		}
		if err := WaitUntilAll(ctx, f, others, CmpNE, 0); err != nil {
			return err
		}
		if err := WaitUntilAllVector(ctx, f, others, CmpEQ, vals); err != nil {
			return err
		}
		some, err := WaitUntilSome(ctx, f, others, CmpGT, 0)
		if err != nil || !slices.Equal(some, others) {
			return fmt.Errorf("PE %d: WaitUntilSome %v, want %v (%v)", me, some, others, err)
		}
		var watch []int // every element: someone else's flag is set
		if n == 1 {
			watch = others // nothing to wait for
		}
		any, err := WaitUntilAny(ctx, f, watch, CmpGT, 0)
		if err != nil || (n > 1 && (any == me || any < 0)) || (n == 1 && any != -1) {
			return fmt.Errorf("PE %d: WaitUntilAny %d (%v)", me, any, err)
		}
		if v, err := WaitUntilAnyVector(ctx, f, others, CmpEQ, vals); err != nil || (n > 1 && v != others[0]) {
			return fmt.Errorf("PE %d: WaitUntilAnyVector %d (%v)", me, v, err)
		}
		if s, err := WaitUntilSomeVector(ctx, f, others, CmpEQ, vals); err != nil || len(s) != len(others) {
			return fmt.Errorf("PE %d: WaitUntilSomeVector %v (%v)", me, s, err)
		}
		if ok, err := Test(f, me, CmpEQ, 0); err != nil || !ok {
			return fmt.Errorf("PE %d: own flag not 0 (%v)", me, err)
		}
		if ok, _ := TestAll(f, nil, CmpNE, 0); ok {
			return fmt.Errorf("PE %d: TestAll true with its own flag 0", me)
		}
		if i, _ := TestAny(f, []int{me}, CmpNE, 0); i != -1 {
			return fmt.Errorf("PE %d: TestAny found %d", me, i)
		}
		if s, _ := TestSome(f, nil, CmpEQ, 0); !slices.Equal(s, []int{me}) {
			return fmt.Errorf("PE %d: TestSome %v", me, s)
		}
		if ok, _ := TestAllVector(f, others, CmpEQ, vals); !ok {
			return fmt.Errorf("PE %d: TestAllVector false", me)
		}
		if i, _ := TestAnyVector(f, []int{me}, CmpEQ, []int64{0}); i != me {
			return fmt.Errorf("PE %d: TestAnyVector %d", me, i)
		}
		if s, _ := TestSomeVector(f, others, CmpNE, vals); len(s) != 0 {
			return fmt.Errorf("PE %d: TestSomeVector %v", me, s)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := WaitUntilCtx(cctx, f, me, CmpNE, 0); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("PE %d: cancelled wait returned %v", me, err)
		}
		if _, err := WaitUntilAny(ctx, f, []int{n}, CmpEQ, 0); err == nil {
			return fmt.Errorf("PE %d: index out of range accepted", me)
		}
		if err := WaitUntilAllVector(ctx, f, nil, CmpEQ, make([]int64, n+1)); err == nil {
			return fmt.Errorf("PE %d: wrong number of values accepted", me)
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		return f.Free()
	})
}

// TestPutSignal: data put with a signal is there when the signal is seen,
// blocking and non-blocking, set and add.
func TestPutSignal(t *testing.T) {
	forJobs(t, func(w *World) error {
		ctx := context.Background()
		me, n := w.MyPE(), w.NPEs()
		right, left := (me+1)%n, (me+n-1)%n
		const long = 3 * nbiInline / 8
		c, err := NewCoarray[int64](w, long)
		if err != nil {
			return err
		}
		sig, err := NewCoarray[uint64](w, 2)
		if err != nil {
			return err
		}
		src := make([]int64, long)
		for r := 1; r <= 4; r++ {
			for k := range src {
				src[k] = pattern(me, r, k)
			}
			put := PutSignal[int64]
			if r%2 == 0 {
				put = PutSignalNBI[int64]
			}
			if err := put(c, right, 0, src, sig, 0, 1, SignalAdd); err != nil {
				return err
			}
			if err := put(c, right, 0, src[:1], sig, 1, uint64(r), SignalSet); err != nil {
				return err
			}
			v, err := SignalWaitUntil(ctx, sig, 0, CmpGE, uint64(r))
			if err != nil || v != uint64(r) {
				return fmt.Errorf("PE %d round %d: signal %d (%v)", me, r, v, err)
			}
			loc := c.Local()
			for k := range loc {
				if got := AtomicLoadLocal(&loc[k]); got != pattern(left, r, k) {
					return fmt.Errorf("PE %d round %d: element %d = %d before its signal", me, r, k, got)
				}
			}
			if _, err := SignalWaitUntil(ctx, sig, 1, CmpEQ, uint64(r)); err != nil {
				return err
			}
			if err := w.BarrierAll(); err != nil {
				return err
			}
		}
		if v, err := SignalFetch(sig, 0); err != nil || v != 4 {
			return fmt.Errorf("PE %d: SignalFetch %d (%v)", me, v, err)
		}
		if err := PutSignal(c, right, 0, src[:1], sig, 0, 1, 9); err == nil {
			return errors.New("unknown signal operation accepted")
		}
		return w.BarrierAll()
	})
}

// TestStrided: IPut and IGet move exactly the elements the strides name.
func TestStrided(t *testing.T) {
	forJobs(t, func(w *World) error {
		me, n := w.MyPE(), w.NPEs()
		right, left := (me+1)%n, (me+n-1)%n
		const size, cnt = 40, 7
		c, err := NewCoarray[int32](w, size)
		if err != nil {
			return err
		}
		src := make([]int32, 2*cnt)
		for k := range src {
			src[k] = int32(pattern(me, 1, k))
		}
		if err := IPut(c, right, 3, 5, src, 2, cnt); err != nil {
			return err
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		want := make([]int32, size)
		for k := 0; k < cnt; k++ {
			want[3+5*k] = int32(pattern(left, 1, 2*k))
		}
		if got := c.Local(); !slices.Equal(got, want) {
			return fmt.Errorf("PE %d: after IPut %v, want %v", me, got, want)
		}
		dst := make([]int32, 3*cnt)
		if err := IGet(c, left, 3, 5, dst, 3, cnt); err != nil {
			return err
		}
		ll := (left + n - 1) % n
		for k := range dst {
			w := int32(0)
			if k%3 == 0 {
				w = int32(pattern(ll, 1, 2*(k/3)))
			}
			if dst[k] != w {
				return fmt.Errorf("PE %d: IGet element %d = %d, want %d", me, k, dst[k], w)
			}
		}
		if err := IPut(c, right, 3, 5, src, 2, cnt+1); err == nil {
			return errors.New("IPut past the end accepted")
		}
		if err := IGet(c, left, 0, 0, dst, 1, 2); err == nil {
			return errors.New("IGet with stride 0 accepted")
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		return c.Free()
	})
}

// TestLock: increments of a counter on PE 0 under the lock are never lost;
// Test fails while another PE holds it; only the holder may clear it.
func TestLock(t *testing.T) {
	forJobs(t, func(w *World) error {
		ctx := context.Background()
		me, n := w.MyPE(), w.NPEs()
		l, err := NewLock(w)
		if err != nil {
			return err
		}
		c, err := NewCoarray[int64](w, 1)
		if err != nil {
			return err
		}
		const k = 10
		for i := 0; i < k; i++ {
			if err := l.Set(ctx); err != nil {
				return err
			}
			v, err := c.GetValue(0, 0)
			if err != nil {
				return err
			}
			if err := c.PutValue(0, 0, v+1); err != nil {
				return err
			}
			if err := l.Clear(); err != nil {
				return err
			}
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if me == 0 {
			if got := c.Local()[0]; got != int64(k*n) {
				return fmt.Errorf("counter %d under the lock, want %d", got, k*n)
			}
			if ok, err := l.Test(); !ok || err != nil {
				return fmt.Errorf("PE 0 could not take a free lock (%v)", err)
			}
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if me != 0 {
			if ok, err := l.Test(); ok || err != nil {
				return fmt.Errorf("PE %d took a held lock (%v)", me, err)
			}
			if err := l.Clear(); err == nil {
				return fmt.Errorf("PE %d cleared a lock held by PE 0", me)
			}
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if me == 0 {
			if err := l.Clear(); err != nil {
				return err
			}
		}
		return w.BarrierAll()
	})
}
