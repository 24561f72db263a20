package shmem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var transports = []string{TransportShm, TransportTCP}

func localJob(t testing.TB, n int, tr string) *LocalJob {
	t.Helper()
	j, err := NewLocal(n, Options{Transport: tr, Heap: 1 << 20, Ring: 4096, Timeout: 2 * time.Second, InitTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Close)
	return j
}

func TestPutGetBarrier(t *testing.T) {
	for _, tr := range transports {
		for _, n := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				j := localJob(t, n, tr)
				err := j.Run(func(w *World) error {
					c, err := NewCoarray[int64](w, 16)
					if err != nil {
						return err
					}
					me, np := w.MyPE(), w.NPEs()
					// every PE writes its rank into slot me of every PE
					for p := 0; p < np; p++ {
						if err := c.PutValue(p, me, int64(100+me)); err != nil {
							return err
						}
						if err := c.Put(p, 8+me, []int64{int64(-me)}); err != nil {
							return err
						}
					}
					if err := w.BarrierAll(); err != nil {
						return err
					}
					loc := c.Local()
					for p := 0; p < np; p++ {
						if loc[p] != int64(100+p) || loc[8+p] != int64(-p) {
							return fmt.Errorf("PE %d: slot %d = %d/%d", me, p, loc[p], loc[8+p])
						}
					}
					// get from the right neighbour
					r := (me + 1) % np
					got := make([]int64, np)
					if err := c.Get(r, 0, got); err != nil {
						return err
					}
					for p := range got {
						if got[p] != int64(100+p) {
							return fmt.Errorf("get: %v", got)
						}
					}
					if err := w.BarrierAll(); err != nil {
						return err
					}
					return c.Free()
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
}

func TestAtomicsCounter(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n, iters = 3, 300
			j := localJob(t, n, tr)
			err := j.Run(func(w *World) error {
				c, err := NewCoarray[uint64](w, 4)
				if err != nil {
					return err
				}
				seen := map[uint64]bool{}
				for i := 0; i < iters; i++ {
					old, err := AtomicFetchAdd(c, 0, 0, 1)
					if err != nil {
						return err
					}
					if seen[old] {
						return fmt.Errorf("fetch-add returned %d twice", old)
					}
					seen[old] = true
					if err := AtomicAdd(c, 1, 1, 2); err != nil {
						return err
					}
				}
				// compare-and-swap: exactly one PE wins
				old, err := AtomicCompareSwap(c, 2, 2, 0, uint64(w.MyPE()+1))
				if err != nil {
					return err
				}
				if err := w.BarrierAll(); err != nil {
					return err
				}
				if w.MyPE() == 0 {
					if v := c.Local()[0]; v != n*iters {
						return fmt.Errorf("counter %d, want %d", v, n*iters)
					}
				}
				if w.MyPE() == 1 {
					if v := c.Local()[1]; v != 2*n*iters {
						return fmt.Errorf("add counter %d, want %d", v, 2*n*iters)
					}
				}
				win, err := AtomicFetch(c, 2, 2)
				if err != nil {
					return err
				}
				if (old == 0) != (win == uint64(w.MyPE()+1)) {
					return fmt.Errorf("cas: old %d, final %d", old, win)
				}
				sw, err := AtomicSwap(c, 2, 3, uint64(7))
				if err != nil {
					return err
				}
				_ = sw
				return w.BarrierAll()
			})
			if err != nil {
				t.Fatal(err)
			}
			j.Finalize()
		})
	}
}

func TestSendRecv(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := localJob(t, 2, tr)
			sizes := []int{0, 1, 7, 8, 100, 4095, 4096, 10000, 3}
			err := j.Run(func(w *World) error {
				if w.MyPE() == 0 {
					for k, sz := range sizes {
						b := make([]byte, sz)
						for i := range b {
							b[i] = byte(i*7 + k)
						}
						if err := w.Send(1, b); err != nil {
							return err
						}
					}
					return nil
				}
				buf := make([]byte, 20000)
				for k, sz := range sizes {
					n, err := w.Recv(0, buf)
					if err != nil {
						return err
					}
					if n != sz {
						return fmt.Errorf("message %d: %d bytes, want %d", k, n, sz)
					}
					for i := 0; i < n; i++ {
						if buf[i] != byte(i*7+k) {
							return fmt.Errorf("message %d byte %d wrong", k, i)
						}
					}
				}
				return nil
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

func TestBadInput(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := localJob(t, 2, tr)
			err := j.Run(func(w *World) error {
				c, err := NewCoarray[uint64](w, 4)
				if err != nil {
					return err
				}
				b, err := w.CoarrayAll(64)
				if err != nil {
					return err
				}
				cases := []struct {
					want string
					err  error
				}{
					{"PE 2 out of range", c.PutValue(2, 0, 1)},
					{"PE -1 out of range", c.Put(-1, 0, []uint64{1})},
					{"outside a co-array of 4 elements", c.Put(1, 3, []uint64{1, 2})},
					{"outside a co-array of 4 elements", c.Get(1, -1, make([]uint64, 1))},
					{"outside co-array", b.Put(1, 60, make([]byte, 8))},
					{"unaligned offset 4", func() error { _, err := b.Atomic(1, OpAdd, 4, 1, 0); return err }()},
					{"unaligned offset 12", b.WaitUntil(12, CmpEQ, 0)},
					{"does not contain the calling PE", w.Barrier([]int{1 - w.MyPE()})},
					{"twice", w.Barrier([]int{0, 1, 1})},
					{"empty list", w.Barrier(nil)},
					{"unknown comparison", b.WaitUntil(0, Cmp(99), 0)},
					{"not supported", w.Send(w.MyPE(), nil)},
				}
				for _, cs := range cases {
					if cs.err == nil || !strings.Contains(cs.err.Error(), cs.want) {
						return fmt.Errorf("want error containing %q, got %v", cs.want, cs.err)
					}
				}
				// the world is still usable
				if err := w.BarrierAll(); err != nil {
					return err
				}
				// mismatched CoarrayAll sizes: error on every PE, world usable
				_, err = w.CoarrayAll(64 + 8*w.MyPE())
				var ce *CollectiveError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), "asked for") {
					return fmt.Errorf("mismatched sizes: got %v", err)
				}
				if _, err := w.CoarrayAll(1 << 30); err == nil {
					return errors.New("huge CoarrayAll succeeded")
				}
				if err := b.Free(); err != nil {
					return err
				}
				if err := b.Put(0, 0, []byte{1}); err == nil || !strings.Contains(err.Error(), "after Free") {
					return fmt.Errorf("use after free: %v", err)
				}
				return w.BarrierAll()
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Finalize(); err != nil {
				t.Fatal(err)
			}
			w := j.Worlds[0]
			if err := w.BarrierAll(); !errors.Is(err, ErrFinalized) {
				t.Fatalf("after Finalize: %v", err)
			}
		})
	}
}

func TestMismatchedBarrier(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := localJob(t, 3, tr)
			err := j.Run(func(w *World) error {
				var err error
				switch w.MyPE() {
				case 0:
					err = w.Barrier([]int{0, 1})
				default:
					err = w.BarrierAll()
				}
				if err == nil {
					return fmt.Errorf("PE %d: mismatched barrier succeeded", w.MyPE())
				}
				var ce *CollectiveError
				var pe *PEError
				if !errors.As(err, &ce) && !errors.As(err, &pe) {
					return fmt.Errorf("PE %d: unexpected error %v", w.MyPE(), err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMismatchedPairBarrier: two PEs in different collectives over the
// same pair (a barrier and a team sync, which on shm meet in the pair
// barrier's record) get errors, never a hang, also after good barriers.
func TestMismatchedPairBarrier(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := localJob(t, 2, tr)
			err := j.Run(func(w *World) error {
				for range 3 {
					if err := w.BarrierAll(); err != nil {
						return err
					}
				}
				var err error
				if w.MyPE() == 0 {
					err = w.BarrierAll()
				} else {
					err = w.TeamWorld().Sync(context.Background())
				}
				var ce *CollectiveError
				var pe *PEError
				if err == nil || (!errors.As(err, &ce) && !errors.As(err, &pe)) {
					return fmt.Errorf("PE %d: mismatched barrier and sync: %v", w.MyPE(), err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNotInitialized(t *testing.T) {
	if MyPE() != -1 || NPEs() != 0 {
		t.Fatal("MyPE/NPEs before Init")
	}
	if err := BarrierAll(); !errors.Is(err, ErrNotInitialized) {
		t.Fatal(err)
	}
	if _, err := CoarrayAll[int](3); !errors.Is(err, ErrNotInitialized) {
		t.Fatal(err)
	}
	if err := Quiet(); !errors.Is(err, ErrNotInitialized) {
		t.Fatal(err)
	}
	if err := Finalize(); !errors.Is(err, ErrNotInitialized) {
		t.Fatal(err)
	}
	var c *Coarray[int64]
	if err := c.PutValue(0, 0, 1); err == nil {
		t.Fatal("nil co-array")
	}
}
