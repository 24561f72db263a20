package shmem

import (
	"fmt"
	"math/bits"
	"testing"
)

// peCounts are the job sizes every new operation is checked with: odd
// counts catch tree and dissemination bugs.
var peCounts = []int{1, 2, 3, 5}

// forJobs runs f on every PE of a job of each size in peCounts over each
// transport.
func forJobs(t *testing.T, f func(w *World) error) {
	t.Helper()
	for _, tr := range transports {
		for _, n := range peCounts {
			t.Run(fmt.Sprintf("%s/%d", tr, n), func(t *testing.T) {
				j := localJob(t, n, tr)
				if err := j.Run(f); err != nil {
					t.Fatal(err)
				}
				if err := j.Finalize(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestBarrierDissemination: after each barrier every PE sees the increments
// all PEs made before it, and each PE sends ⌈log2 n⌉ signals per barrier.
func TestBarrierDissemination(t *testing.T) {
	forJobs(t, func(w *World) error {
		c, err := NewCoarray[uint64](w, 1)
		if err != nil {
			return err
		}
		n := w.NPEs()
		sent := func() (s int) {
			for _, v := range w.sendSeq {
				s += int(v)
			}
			return s
		}
		for it := 1; it <= 20; it++ {
			for p := 0; p < n; p++ {
				if err := AtomicAdd(c, p, 0, 1); err != nil {
					return err
				}
			}
			before := sent()
			if err := w.BarrierAll(); err != nil {
				return err
			}
			if rounds := sent() - before; rounds != bits.Len(uint(n-1)) {
				return fmt.Errorf("PE %d: %d signals for %d PEs, want ⌈log2 n⌉ = %d", w.MyPE(), rounds, n, bits.Len(uint(n-1)))
			}
			if got := AtomicLoadLocal(&c.Local()[0]); got != uint64(it*n) {
				return fmt.Errorf("PE %d iteration %d: counter %d, want %d", w.MyPE(), it, got, it*n)
			}
			if err := w.BarrierAll(); err != nil {
				return err
			}
		}
		return c.Free()
	})
}

// pattern is the sequential answer of the data tests: element k of what PE
// p writes in round r.
func pattern(p, r, k int) int64 { return int64(p)*1_000_003 + int64(r)*7919 + int64(k) }

// TestNonBlockingPutGet: non-blocking puts to the right neighbour and
// non-blocking gets from the left one, short (done at once) and long
// (queued), complete by Quiet; after Fence a flag is never seen before the
// data it follows.
func TestNonBlockingPutGet(t *testing.T) {
	const long = 3 * nbiInline / 8 // elements: a transfer the engine takes
	forJobs(t, func(w *World) error {
		me, n := w.MyPE(), w.NPEs()
		right, left := (me+1)%n, (me+n-1)%n
		c, err := NewCoarray[int64](w, 2*long)
		if err != nil {
			return err
		}
		flag, err := NewCoarray[int64](w, 1)
		if err != nil {
			return err
		}
		src := make([]int64, long)
		got := make([]int64, long)
		for r := 1; r <= 3; r++ {
			for k := range src {
				src[k] = pattern(me, r, k)
			}
			if err := c.PutNBI(right, 0, src); err != nil {
				return err
			}
			if err := c.PutNBI(right, long, src[:5]); err != nil {
				return err
			}
			if err := w.Fence(); err != nil {
				return err
			}
			if err := flag.PutValue(right, 0, int64(r)); err != nil {
				return err
			}
			if err := WaitUntil(flag, 0, CmpGE, int64(r)); err != nil {
				return err
			}
			loc := c.Local()
			for k := 0; k < long; k++ {
				if want := pattern(left, r, k); AtomicLoadLocal(&loc[k]) != want {
					return fmt.Errorf("PE %d round %d: element %d is %d before Quiet, want %d (flag overtook data)", me, r, k, loc[k], want)
				}
			}
			if err := w.BarrierAll(); err != nil {
				return err
			}
			// now read back what the left neighbour's right neighbour (me)
			// holds from the left: PE left's part holds PE left-1's data
			if err := c.GetNBI(left, 0, got); err != nil {
				return err
			}
			short := make([]int64, 5)
			if err := c.GetNBI(left, long, short); err != nil {
				return err
			}
			if err := w.Quiet(); err != nil {
				return err
			}
			ll := (left + n - 1) % n
			for k := range got {
				if want := pattern(ll, r, k); got[k] != want {
					return fmt.Errorf("PE %d round %d: GetNBI element %d = %d, want %d", me, r, k, got[k], want)
				}
			}
			for k := range short {
				if want := pattern(ll, r, k); short[k] != want {
					return fmt.Errorf("PE %d round %d: short GetNBI element %d = %d, want %d", me, r, k, short[k], want)
				}
			}
			if err := w.BarrierAll(); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestContexts: transfers on two contexts complete by each one's Quiet.
func TestContexts(t *testing.T) {
	const long = 3 * nbiInline
	forJobs(t, func(w *World) error {
		me, n := w.MyPE(), w.NPEs()
		right, left := (me+1)%n, (me+n-1)%n
		s, err := w.CoarrayAll(2 * long)
		if err != nil {
			return err
		}
		var ctxs [2]*Ctx
		for i := range ctxs {
			if ctxs[i], err = w.NewCtx(); err != nil {
				return err
			}
		}
		src := make([]byte, long)
		for k := range src {
			src[k] = byte(me*31 + k)
		}
		for i, c := range ctxs {
			if err := c.PutNBI(s, right, i*long, src); err != nil {
				return err
			}
		}
		for _, c := range ctxs {
			if err := c.Quiet(); err != nil {
				return err
			}
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		got := make([]byte, long)
		if err := ctxs[1].GetNBI(s, me, long, got); err != nil {
			return err
		}
		if err := ctxs[1].Quiet(); err != nil {
			return err
		}
		for k := range got {
			if want := byte(left*31 + k); got[k] != want || s.Local()[k] != want {
				return fmt.Errorf("PE %d: byte %d = %d/%d, want %d", me, k, got[k], s.Local()[k], want)
			}
		}
		for _, c := range ctxs {
			if err := c.Destroy(); err != nil {
				return err
			}
		}
		if err := ctxs[0].PutNBI(s, right, 0, src[:8]); err == nil {
			return fmt.Errorf("PE %d: put on a destroyed context accepted", me)
		}
		return w.BarrierAll()
	})
}
