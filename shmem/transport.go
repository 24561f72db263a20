package shmem

import (
	"math"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// AtomicOp names a remote atomic operation: an operation in the low four
// bits, the operand type in the next two (AtomicUint64 when zero).
type AtomicOp uint8

// The atomic operations. Every one acts on one naturally aligned word and
// returns the word's previous value (non-fetching forms discard it).
const (
	OpFetch       AtomicOp = iota + 1 // read
	OpSet                             // write a
	OpAdd                             // += a
	OpSwap                            // write a
	OpCompareSwap                     // if word == b { word = a }
	OpAnd                             // &= a
	OpOr                              // |= a
	OpXor                             // ^= a
	opMax
)

// Operand types of atomics, or-ed into an AtomicOp: 32-bit words need 4-byte
// alignment; float words support Fetch, Set, Swap, CompareSwap (bitwise
// equality) and Add.
const (
	AtomicUint64  AtomicOp = 0
	AtomicUint32  AtomicOp = 1 << 4
	AtomicFloat64 AtomicOp = 2 << 4
	AtomicFloat32 AtomicOp = 3 << 4
	atomicTypes   AtomicOp = 3 << 4
)

// width is the number of bytes op acts on.
func (op AtomicOp) width() int {
	if t := op & atomicTypes; t == AtomicUint32 || t == AtomicFloat32 {
		return 4
	}
	return 8
}

// valid reports whether op is a known operation on a type that supports it.
func (op AtomicOp) valid() bool {
	base, typ := op&^atomicTypes, op&atomicTypes
	if op&0xc0 != 0 || base == 0 || base >= opMax {
		return false
	}
	if typ == AtomicFloat64 || typ == AtomicFloat32 {
		return base != OpAnd && base != OpOr && base != OpXor
	}
	return true
}

// atomicSpanOK reports whether op may act at off of a region of size bytes.
func atomicSpanOK(op AtomicOp, off, size int) bool {
	w := op.width()
	return off >= 0 && off%w == 0 && off <= size-w
}

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
	AtomicNBI(pe int, op AtomicOp, off int, a, b uint64, deliver func(uint64)) error
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

// applyAtomic performs op (a valid one; offset checked by the caller) on
// the word at region[off] and returns its previous value.
func applyAtomic(region []byte, off int, op AtomicOp, a, b uint64) uint64 {
	p := unsafe.Pointer(&region[off])
	switch op & atomicTypes {
	case AtomicUint32:
		return uint64(apply32((*uint32)(p), op&^atomicTypes, uint32(a), uint32(b)))
	case AtomicFloat64:
		return applyFloat((*uint64)(p), op&^atomicTypes, a, b, func(x, y uint64) uint64 {
			return math.Float64bits(math.Float64frombits(x) + math.Float64frombits(y))
		})
	case AtomicFloat32:
		p32 := (*uint32)(p)
		add := func(x, y uint32) uint32 { return math.Float32bits(math.Float32frombits(x) + math.Float32frombits(y)) }
		return uint64(applyFloat32(p32, op&^atomicTypes, uint32(a), uint32(b), add))
	}
	return apply64((*uint64)(p), op, a, b)
}

func apply64(p *uint64, op AtomicOp, a, b uint64) uint64 {
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
			if old != b || atomic.CompareAndSwapUint64(p, old, a) {
				return old
			}
		}
	case OpAnd:
		return atomic.AndUint64(p, a)
	case OpOr:
		return atomic.OrUint64(p, a)
	case OpXor:
		for {
			old := atomic.LoadUint64(p)
			if atomic.CompareAndSwapUint64(p, old, old^a) {
				return old
			}
		}
	}
	return 0
}

func apply32(p *uint32, op AtomicOp, a, b uint32) uint32 {
	switch op {
	case OpFetch:
		return atomic.LoadUint32(p)
	case OpSet, OpSwap:
		return atomic.SwapUint32(p, a)
	case OpAdd:
		return atomic.AddUint32(p, a) - a
	case OpCompareSwap:
		for {
			old := atomic.LoadUint32(p)
			if old != b || atomic.CompareAndSwapUint32(p, old, a) {
				return old
			}
		}
	case OpAnd:
		return atomic.AndUint32(p, a)
	case OpOr:
		return atomic.OrUint32(p, a)
	case OpXor:
		for {
			old := atomic.LoadUint32(p)
			if atomic.CompareAndSwapUint32(p, old, old^a) {
				return old
			}
		}
	}
	return 0
}

// applyFloat is the float64 form: bit operations never reach it; Add is a
// compare-and-swap loop on the bits.
func applyFloat(p *uint64, op AtomicOp, a, b uint64, add func(x, y uint64) uint64) uint64 {
	if op != OpAdd {
		return apply64(p, op, a, b)
	}
	for {
		old := atomic.LoadUint64(p)
		if atomic.CompareAndSwapUint64(p, old, add(old, a)) {
			return old
		}
	}
}

func applyFloat32(p *uint32, op AtomicOp, a, b uint32, add func(x, y uint32) uint32) uint32 {
	if op != OpAdd {
		return apply32(p, op, a, b)
	}
	for {
		old := atomic.LoadUint32(p)
		if atomic.CompareAndSwapUint32(p, old, add(old, a)) {
			return old
		}
	}
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
