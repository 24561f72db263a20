package shmem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// blockingOps are the calls that wait for another PE. Each runs on every
// PE of a 2-PE job; PE 1 fails before doing its part, so PE 0 must return
// a *PEError naming PE 1 instead of waiting for ever.
var blockingOps = map[string]func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error{
	"WaitUntil": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return WaitUntilCtx(ctx, c, 0, CmpEQ, 1)
	},
	"WaitUntilAll": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return WaitUntilAll(ctx, c, nil, CmpEQ, 1)
	},
	"WaitUntilAny": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		_, err := WaitUntilAny(ctx, c, nil, CmpEQ, 1)
		return err
	},
	"WaitUntilSomeVector": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		_, err := WaitUntilSomeVector(ctx, c, []int{0, 1}, CmpEQ, []int64{1, 2})
		return err
	},
	"SignalWaitUntil": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		_, err := SignalWaitUntil(ctx, (*Coarray[uint64])(c.retype()), 0, CmpEQ, 1)
		return err
	},
	"LockSet": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return l.Set(ctx)
	},
	"BarrierAll": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error { return w.BarrierAll() },
	"TeamSync": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return w.TeamWorld().Sync(ctx)
	},
	"Broadcast": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return Broadcast(ctx, w.TeamWorld(), c, c, 1, 1)
	},
	"Reduce": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return Reduce(ctx, w.TeamWorld(), c, c, 1, ReduceSum)
	},
	"FCollect": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return FCollect(ctx, w.TeamWorld(), c, c, 1)
	},
	"Collect": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		_, err := Collect(ctx, w.TeamWorld(), c, c, 1)
		return err
	},
	"Alltoall": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return Alltoall(ctx, w.TeamWorld(), c, c, 1)
	},
	"Recv": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		_, err := w.Recv(1, make([]byte, 8))
		return err
	},
	"TeamBarrier": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return w.TeamWorld().Barrier(ctx)
	},
	"SplitStrided": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		_, err := w.TeamWorld().SplitStrided(ctx, 0, 1, 2)
		return err
	},
	// the rest wait for PE 1 only over TCP (on shm its memory stays
	// mapped): they poll it until the failure is seen
	"Get": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return untilError(func() error { _, err := c.GetValue(1, 0); return err })
	},
	"IGet": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		dst := make([]int64, 2)
		return untilError(func() error { return IGet(c, 1, 0, 2, dst, 1, 2) })
	},
	"FetchAdd": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return untilError(func() error { _, err := AtomicFetchAdd(c, 1, 0, 1); return err })
	},
	"Quiet": func(ctx context.Context, w *World, c *Coarray[int64], l *Lock) error {
		return untilError(func() error {
			if err := c.PutValue(1, 1, 1); err != nil {
				return err
			}
			return w.Quiet()
		})
	},
}

// untilError repeats op until it fails: a call that does not wait for the
// peer (shm) keeps succeeding until the failure is detected.
func untilError(op func() error) error {
	for {
		if err := op(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// retype views an int64 co-array as uint64 (for the signal wait).
func (c *Coarray[T]) retype() *Coarray[uint64] { return &Coarray[uint64]{s: c.s, n: c.n} }

// killSetup allocates what the blocking operations use: PE 1 takes the
// lock so that PE 0's Set waits for it.
func killSetup(w *World) (*Coarray[int64], *Lock, error) {
	c, err := NewCoarray[int64](w, 4)
	if err != nil {
		return nil, nil, err
	}
	l, err := NewLock(w)
	if err != nil {
		return nil, nil, err
	}
	if w.MyPE() == 1 {
		if ok, err := l.Test(); !ok || err != nil {
			return nil, nil, fmt.Errorf("PE 1 could not take the lock: %v", err)
		}
	}
	return c, l, w.BarrierAll()
}

// TestBlockingCallsSeeAbort: in one process, PE 1 aborts while PE 0 is
// blocked in each operation.
func TestBlockingCallsSeeAbort(t *testing.T) {
	for _, tr := range transports {
		for name, op := range blockingOps {
			t.Run(tr+"/"+name, func(t *testing.T) {
				j := localJob(t, 2, tr)
				err := j.Run(func(w *World) error {
					c, l, err := killSetup(w)
					if err != nil {
						return err
					}
					if w.MyPE() == 1 {
						time.Sleep(20 * time.Millisecond)
						w.Abort("test")
						return nil
					}
					err = op(context.Background(), w, c, l)
					var pe *PEError
					if !errors.As(err, &pe) || pe.PE != 1 {
						return fmt.Errorf("%s returned %v, want a PEError naming PE 1", name, err)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestBlockingCallsCancel: a cancelled context ends each wait with an
// error wrapping the context's.
func TestBlockingCallsCancel(t *testing.T) {
	for name, op := range blockingOps {
		switch name {
		case "BarrierAll", "Recv", "Get", "IGet", "FetchAdd", "Quiet":
			continue // no context
		}
		t.Run(name, func(t *testing.T) {
			j := localJob(t, 2, TransportShm)
			err := j.Run(func(w *World) error {
				c, l, err := killSetup(w)
				if err != nil || w.MyPE() == 1 {
					return err
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				if err := op(ctx, w, c, l); !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("%s returned %v, want the deadline", name, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// workerKillOp: PE 1 is killed (SIGKILL) while PE 0 blocks in the
// operation named by KILL_OP.
func workerKillOp() error {
	if err := Init(); err != nil {
		return err
	}
	w := Default()
	c, l, err := killSetup(w)
	if err != nil {
		return err
	}
	if w.MyPE() == 1 {
		time.Sleep(30 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return blockingOps[os.Getenv("KILL_OP")](context.Background(), w, c, l)
}

// TestBlockingCallsSeeKill: the same with a real process killed by
// SIGKILL, on both transports.
func TestBlockingCallsSeeKill(t *testing.T) {
	var names []string
	for name := range blockingOps {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, tr := range transports {
		for _, name := range names {
			t.Run(tr+"/"+name, func(t *testing.T) {
				out, _, _, err := launchWorker(t, "killop", 2, tr, nil, "KILL_OP="+name)
				var je *JobError
				if !errors.As(err, &je) || je.Culprit() != 1 {
					t.Fatalf("want a JobError naming PE 1, got %v\n%s", err, out)
				}
				if !strings.Contains(out, "[0] PE 0: shmem: PE 1 failed") {
					t.Fatalf("PE 0 did not report PE 1:\n%s", out)
				}
			})
		}
	}
}
