package shmem

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestAbortAndSticky(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := localJob(t, 3, tr)
			err := j.Run(func(w *World) error {
				if w.MyPE() == 2 {
					w.Abort("input file is corrupt")
				}
				err := w.BarrierAll()
				var pe *PEError
				if !errors.As(err, &pe) || pe.PE != 2 || !strings.Contains(err.Error(), "input file is corrupt") {
					return fmt.Errorf("PE %d: got %v", w.MyPE(), err)
				}
				// sticky
				if err2 := w.Quiet(); err2 == nil || err2.Error() != err.Error() {
					return fmt.Errorf("not sticky: %v", err2)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSignedWaitAndGetAfterPut(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := localJob(t, 2, tr)
			err := j.Run(func(w *World) error {
				c, err := NewCoarray[int64](w, 8)
				if err != nil {
					return err
				}
				f, err := NewCoarray[float32](w, 5)
				if err != nil {
					return err
				}
				other := 1 - w.MyPE()
				if w.MyPE() == 0 {
					// a Get sees the caller's own earlier puts to that PE
					for i := 0; i < 50; i++ {
						if err := c.Put(1, 1, []int64{int64(i), int64(-i)}); err != nil {
							return err
						}
						got := make([]int64, 2)
						if err := c.Get(1, 1, got); err != nil {
							return err
						}
						if got[0] != int64(i) || got[1] != int64(-i) {
							return fmt.Errorf("get after put: %v", got)
						}
					}
					if err := f.PutNBI(1, 1, []float32{1.5, -2.25}); err != nil {
						return err
					}
					if err := w.Fence(); err != nil {
						return err
					}
					if err := AtomicSet(c, 1, 0, int64(-5)); err != nil { // negative: signed compare
						return err
					}
				} else {
					if err := WaitUntil(c, 0, CmpLT, int64(0)); err != nil {
						return err
					}
					if got := f.Local()[1:3]; got[0] != 1.5 || got[1] != -2.25 {
						return fmt.Errorf("float put: %v", got)
					}
				}
				if (c.Ptr(other) == nil) != (tr == TransportTCP) {
					return fmt.Errorf("Ptr(%d) on %s", other, tr)
				}
				if c.Ptr(w.MyPE()) == nil {
					return errors.New("Ptr of the own PE is nil")
				}
				return w.BarrierAll()
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Finalize(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBarrierSubsets(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := localJob(t, 4, tr)
			err := j.Run(func(w *World) error {
				c, err := NewCoarray[int64](w, 4)
				if err != nil {
					return err
				}
				me := w.MyPE()
				// pairs {0,1} and {2,3} exchange through barriers of their own
				partner := me ^ 1
				pair := []int{partner, me}
				for it := int64(1); it <= 30; it++ {
					if err := c.PutValue(partner, 0, it*10+int64(me)); err != nil {
						return err
					}
					if err := w.Barrier(pair); err != nil {
						return err
					}
					if got := c.Local()[0]; got != it*10+int64(partner) {
						return fmt.Errorf("PE %d iteration %d: %d", me, it, got)
					}
					if err := w.Barrier(pair); err != nil {
						return err
					}
					if it%10 == 0 { // interleave with full barriers and a 3-PE subset
						if err := w.BarrierAll(); err != nil {
							return err
						}
						if me < 3 {
							if err := w.Barrier([]int{2, 0, 1}); err != nil {
								return err
							}
						}
					}
				}
				return w.BarrierAll()
			})
			if err != nil {
				t.Fatal(err)
			}
			j.Finalize()
		})
	}
}

func TestAllocatorReuse(t *testing.T) {
	h := newHeapAlloc(1024)
	a, _ := h.alloc(100)
	b, _ := h.alloc(200)
	c, _ := h.alloc(64)
	if a != 0 || b != 128 || c != 384 {
		t.Fatalf("offsets %d %d %d", a, b, c)
	}
	h.release(b)
	h.release(a)
	if h.freeBytes() != 1024-64 || len(h.free) != 2 {
		t.Fatalf("free list %v", h.free)
	}
	d, _ := h.alloc(300)
	if d != 0 {
		t.Fatalf("coalesced block not reused: %d", d)
	}
	h.release(c)
	h.release(d)
	if len(h.free) != 1 || h.free[0] != (span{0, 1024}) {
		t.Fatalf("not coalesced: %v", h.free)
	}
	if _, err := h.alloc(2000); err == nil {
		t.Fatal("over-allocation")
	}
}
