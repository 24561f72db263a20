package shmem

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// AtomicOp names a remote atomic operation on a 64-bit word.
type AtomicOp uint8

// The atomic operations. Every one acts on one naturally aligned 64-bit word
// and returns the word's previous value (non-fetching forms discard it).
const (
	OpFetch       AtomicOp = iota + 1 // read
	OpSet                             // write a
	OpAdd                             // += a
	OpSwap                            // write a
	OpCompareSwap                     // if word == b { word = a }
	OpAnd                             // &= a
	OpOr                              // |= a
	opMax
)

// Transport moves data between the regions of the PEs of one job. The World
// checks every argument (PE range, bounds, alignment) before calling a
// Transport; implementations re-check bounds so that a bug above can never
// write outside a region. There are two implementations: shared memory
// between the processes of one host ("shm": every region is a file mapped
// into every process, puts are stores, atomics are CPU atomics on the mapped
// words) and TCP between hosts ("tcp": a background goroutine in every
// process serves the operations of the others on its region; small
// operations are aggregated per target and applied in order).
type Transport interface {
	// Name is "shm" or "tcp".
	Name() string
	// Region returns PE pe's whole region when it is mapped into this
	// process (always for the own PE; for every PE with shm), else nil.
	Region(pe int) []byte
	// Put copies src to offset off of PE pe's region. It returns when src
	// may be reused; the data is delivered by the next Quiet.
	Put(pe, off int, src []byte) error
	// PutWord stores one aligned 64-bit word atomically at the target.
	PutWord(pe, off int, v uint64) error
	// PutNBI is Put that may go on reading src until the next Quiet
	// (or Fence).
	PutNBI(pe, off int, src []byte) error
	// Get copies from PE pe's region into dst and returns when dst is filled.
	Get(pe, off int, dst []byte) error
	// GetNBI starts a Get; dst holds the data after the next Quiet.
	GetNBI(pe, off int, dst []byte) error
	// AtomicNBI starts a fetching atomic; *res holds the previous value
	// after the next Quiet.
	AtomicNBI(pe int, op AtomicOp, off int, a, b uint64, res *uint64) error
	// Atomic performs op on the aligned word at off and returns its previous
	// value.
	Atomic(pe int, op AtomicOp, off int, a, b uint64) (uint64, error)
	// AtomicNF performs a non-fetching op (OpSet, OpAdd, OpAnd, OpOr)
	// without waiting for it.
	AtomicNF(pe int, op AtomicOp, off int, a uint64) error
	// Fence orders: operations to a PE issued before Fence are applied at
	// that PE before operations to it issued after Fence.
	Fence() error
	// Quiet returns when every operation issued before it is applied at its
	// target.
	Quiet() error
	// Progress pushes out operations buffered in this process (TCP).
	Progress()
	// Heartbeat is called periodically; Check reports a failed peer.
	Heartbeat()
	Check(now time.Time) error
	// Poison tells the peers that PE pe (this one, or a peer whose failure
	// this PE observed) failed, with a reason.
	Poison(pe int, reason string)
	// Report tells the launcher which peer this PE saw fail and why.
	Report(pe int, reason string)
	// RecordAbort tells the launcher that this PE ends the job (Abort,
	// GlobalExit) with an exit status and a reason.
	RecordAbort(status int, reason string)
	// Close ends the transport; graceful is true after Finalize's barrier.
	Close(graceful bool) error
}

// word returns the 64-bit word at b[off]; off must be 8-aligned and in
// range (checked by callers).
func word(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }

// applyAtomic performs op on *p.
func applyAtomic(p *uint64, op AtomicOp, a, b uint64) uint64 {
	switch op {
	case OpFetch:
		return atomic.LoadUint64(p)
	case OpSet, OpSwap:
		return atomic.SwapUint64(p, a)
	case OpAdd:
		return atomic.AddUint64(p, a) - a
	case OpCompareSwap:
		for {
			old := atomic.LoadUint64(p)
			if old != b {
				return old
			}
			if atomic.CompareAndSwapUint64(p, old, a) {
				return old
			}
		}
	case OpAnd:
		return atomic.AndUint64(p, a)
	case OpOr:
		return atomic.OrUint64(p, a)
	}
	return 0
}

// backoff is the polling policy of every wait: spin briefly, then yield the
// CPU to other processes (there may be more PEs than cores), then sleep in
// short steps (about 0.1 ms with the kernel's timer slack), and after some
// 50 ms of waiting in longer ones (about 0.25 ms), so that idle PEs leave
// the cores to the working ones.
func backoff(i int) {
	switch {
	case i < 64:
	case i < 4096:
		syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
	case i < 4096+500:
		ts := syscall.Timespec{Nsec: 20_000}
		syscall.Nanosleep(&ts, nil)
	default:
		ts := syscall.Timespec{Nsec: 200_000}
		syscall.Nanosleep(&ts, nil)
	}
}
