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
