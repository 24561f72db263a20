package shmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Sym is an untyped co-array (the seed's distributed array): every PE owns
// Size() bytes of it in its local portion, and the collective CoarrayAll
// that made it exchanged where each part lives, so any PE can address any
// part by (PE, byte offset). Offsets are checked against Size() on every
// call.
type Sym struct {
	w     *World
	id    uint64
	size  int
	offs  []int // region offset of each PE's part
	freed atomic.Bool
}

// CoarrayAll is the seed's shmem_coarray_all: a collective in which every PE
// allocates size bytes of its local portion (zeroed) and the PEs exchange
// the locations of their parts. Every PE must ask for the same size; a
// mismatch returns a *CollectiveError on every PE and allocates nothing.
// Like every collective it also acts as BarrierAll.
func (w *World) CoarrayAll(size int) (*Sym, error) {
	if err := w.ok(); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("shmem: CoarrayAll: negative size %d", size)
	}
	w.collMu.Lock()
	defer w.collMu.Unlock()
	off, aerr := w.heap.alloc(size)
	rec := uint64(w.lay.heap + off)
	if aerr != nil {
		rec = ^uint64(0)
	} else {
		clear(w.local[w.lay.heap+off : w.lay.heap+off+size])
	}
	seq := w.collSeq + 1
	par := int(seq & 1)
	slot := w.lay.collSlot(par, w.me)
	for p := 0; p < w.n; p++ {
		if err := w.tr.PutWord(p, slot+8, rec); err != nil {
			return nil, err
		}
		if err := w.tr.PutWord(p, slot+16, uint64(size)); err != nil {
			return nil, err
		}
	}
	if err := w.tr.Fence(); err != nil {
		return nil, err
	}
	for p := 0; p < w.n; p++ {
		if err := w.tr.PutWord(p, slot, seq); err != nil {
			return nil, err
		}
	}
	if err := w.barrier(w.all, tag(kindCoarray, 0)); err != nil {
		return nil, err
	}
	w.collSeq = seq
	s := &Sym{w: w, size: size, offs: make([]int, w.n)}
	var problems []string
	for p := 0; p < w.n; p++ {
		base := w.lay.collSlot(par, p)
		if got := atomic.LoadUint64(word(w.local, base)); got != seq {
			return nil, w.poison(&CollectiveError{Op: "CoarrayAll", Detail: fmt.Sprintf("PE %d is at CoarrayAll #%d, PE %d at #%d", p, got, w.me, seq)})
		}
		o := atomic.LoadUint64(word(w.local, base+8))
		sz := atomic.LoadUint64(word(w.local, base+16))
		switch {
		case o == ^uint64(0):
			problems = append(problems, fmt.Sprintf("PE %d could not allocate %d bytes", p, sz))
		case sz != uint64(size):
			problems = append(problems, fmt.Sprintf("PE %d asked for %d bytes, PE %d for %d", p, sz, w.me, size))
		case o < uint64(w.lay.heap) || o+sz > uint64(w.lay.size):
			return nil, w.poison(&CollectiveError{Op: "CoarrayAll", Detail: fmt.Sprintf("PE %d published a part outside its portion", p)})
		}
		s.offs[p] = int(o)
	}
	if len(problems) > 0 {
		if aerr == nil {
			w.heap.release(off)
		}
		if aerr != nil && len(problems) == 1 {
			return nil, aerr
		}
		return nil, &CollectiveError{Op: "CoarrayAll", Detail: fmt.Sprint(problems)}
	}
	w.nextID++
	s.id = w.nextID
	return s, nil
}

// Size is the number of bytes of the co-array on each PE.
func (s *Sym) Size() int { return s.size }

// Offset returns where PE pe's part starts in that PE's region (the
// seed's coarray[pe] entry).
func (s *Sym) Offset(pe int) int { return s.offs[pe] }

// World returns the World the co-array belongs to.
func (s *Sym) World() *World { return s.w }

// Local returns this PE's part as bytes of the mapped region.
func (s *Sym) Local() []byte {
	o := s.offs[s.w.me]
	return s.w.local[o : o+s.size : o+s.size]
}

// Ptr returns PE pe's part as directly addressable memory when the
// transport maps it into this process (shm; the own PE always), else nil.
// Stores through it are plain stores into the peer's memory — the seed's
// "one store instruction per remote word" — with the same completion rules
// as Put.
func (s *Sym) Ptr(pe int) []byte {
	if s == nil || pe < 0 || pe >= s.w.n || s.freed.Load() {
		return nil
	}
	r := s.w.tr.Region(pe)
	if r == nil {
		return nil
	}
	o := s.offs[pe]
	return r[o : o+s.size : o+s.size]
}

// mappedWord is the address of the aligned word at off of PE pe's part
// when an access of n = 8 bytes there may go straight to memory (shm, the
// World running, the co-array live, in bounds), else nil: the fast path of
// single-word puts and gets, which skips the transport.
func (s *Sym) mappedWord(pe, off, n int) unsafe.Pointer {
	if s == nil || n != 8 {
		return nil
	}
	w := s.w
	if w.maps == nil || uint(pe) >= uint(len(w.maps)) || off < 0 || off > s.size-8 ||
		w.fs.err.Load() != nil || w.state.Load() != stateRunning || s.freed.Load() {
		return nil
	}
	o := s.offs[pe] + off
	if o&7 != 0 {
		return nil
	}
	return unsafe.Pointer(&w.maps[pe][o])
}

// check validates one access of n bytes at off on PE pe.
func (s *Sym) check(op string, pe, off, n int) error {
	if s == nil {
		return fmt.Errorf("shmem: %s on a nil co-array", op)
	}
	if err := s.w.ok(); err != nil {
		return err
	}
	if s.freed.Load() {
		return fmt.Errorf("shmem: %s on co-array #%d after Free", op, s.id)
	}
	if pe < 0 || pe >= s.w.n {
		return fmt.Errorf("shmem: %s: PE %d out of range [0,%d)", op, pe, s.w.n)
	}
	if off < 0 || n < 0 || off > s.size-n {
		return fmt.Errorf("shmem: %s of %d bytes at offset %d is outside co-array #%d of %d bytes", op, n, off, s.id, s.size)
	}
	return nil
}

// checkAtomic validates the word of atomic op at off on PE pe.
func (s *Sym) checkAtomic(name string, pe, off int, op AtomicOp) error {
	w := op.width()
	if err := s.check(name, pe, off, w); err != nil {
		return err
	}
	if (s.offs[pe]+off)%w != 0 {
		return fmt.Errorf("shmem: %s: unaligned offset %d (a %d-byte atomic needs a multiple of %d)", name, off, w, w)
	}
	return nil
}

func (s *Sym) checkWord(op string, pe, off int) error {
	if err := s.check(op, pe, off, 8); err != nil {
		return err
	}
	if (s.offs[pe]+off)&7 != 0 {
		return fmt.Errorf("shmem: %s: unaligned offset %d (atomics need a multiple of 8)", op, off)
	}
	return nil
}

// Put copies src into PE pe's part at byte offset off. It returns as soon
// as src may be reused; the data is guaranteed to be at the target only
// after Quiet or a barrier, and ordered before later operations to the same
// PE only by Fence.
func (s *Sym) Put(pe, off int, src []byte) error {
	if err := s.check("Put", pe, off, len(src)); err != nil {
		return err
	}
	return s.w.tr.Put(pe, s.offs[pe]+off, src)
}

// PutNBI is the non-blocking put: it returns at once and the transfer
// proceeds while the caller computes; src must not be modified until the
// next Quiet (or barrier), which completes it. Fence orders it before later
// operations to the same PE. (Short puts are copied at once: that is
// cheaper than deferring them.)
func (s *Sym) PutNBI(pe, off int, src []byte) error {
	if p := s.mappedWord(pe, off, len(src)); p != nil {
		*(*uint64)(p) = binary.NativeEndian.Uint64(src)
		return nil
	}
	if err := s.check("PutNBI", pe, off, len(src)); err != nil {
		return err
	}
	return s.w.tr.PutNBI(pe, s.offs[pe]+off, src)
}

// Get copies PE pe's part at byte offset off into dst and returns when dst
// holds the data. It observes every earlier blocking put and atomic of this
// PE to pe (non-blocking ones after Quiet or Fence).
func (s *Sym) Get(pe, off int, dst []byte) error {
	if p := s.mappedWord(pe, off, len(dst)); p != nil {
		binary.NativeEndian.PutUint64(dst, atomic.LoadUint64((*uint64)(p)))
		return nil
	}
	if err := s.check("Get", pe, off, len(dst)); err != nil {
		return err
	}
	return s.w.tr.Get(pe, s.offs[pe]+off, dst)
}

// GetNBI starts a get of PE pe's part at byte offset off into dst and
// returns at once; dst holds the data after the next Quiet (or barrier)
// and must not be used before.
func (s *Sym) GetNBI(pe, off int, dst []byte) error {
	if err := s.check("GetNBI", pe, off, len(dst)); err != nil {
		return err
	}
	return s.w.tr.GetNBI(pe, s.offs[pe]+off, dst)
}

// PutUint64 stores one 64-bit word at an aligned byte offset of PE pe's
// part as a single atomic store (readers never see a torn value).
func (s *Sym) PutUint64(pe, off int, v uint64) error {
	if err := s.checkWord("PutUint64", pe, off); err != nil {
		return err
	}
	return s.w.tr.PutWord(pe, s.offs[pe]+off, v)
}

// Atomic performs op on the 64-bit word at aligned byte offset off of PE
// pe's part and returns the word's previous value. It is complete at the
// target when it returns.
func (s *Sym) Atomic(pe int, op AtomicOp, off int, a, b uint64) (uint64, error) {
	if !op.valid() {
		return 0, fmt.Errorf("shmem: unknown atomic operation %d", op)
	}
	if err := s.checkAtomic("atomic", pe, off, op); err != nil {
		return 0, err
	}
	return s.w.tr.Atomic(pe, op, s.offs[pe]+off, a, b)
}

// AtomicNF performs a non-fetching OpAdd, OpSet, OpAnd, OpOr or OpXor without
// waiting: like a put, it is complete after Quiet or a barrier and ordered
// by Fence. Concurrent atomics on one word never lose updates.
func (s *Sym) AtomicNF(pe int, op AtomicOp, off int, a uint64) error {
	switch op &^ atomicTypes {
	case OpAdd, OpSet, OpAnd, OpOr, OpXor:
	default:
		return fmt.Errorf("shmem: atomic operation %d has no non-fetching form", op)
	}
	if !op.valid() {
		return fmt.Errorf("shmem: unknown atomic operation %d", op)
	}
	if err := s.checkAtomic("atomic", pe, off, op); err != nil {
		return err
	}
	return s.w.tr.AtomicNF(pe, op, s.offs[pe]+off, a)
}

// Free is the collective release of a co-array (a barrier, then every PE
// returns its part to its local portion). Every later use of the co-array
// returns an error.
func (s *Sym) Free() error {
	if s == nil {
		return errors.New("shmem: Free of a nil co-array")
	}
	w := s.w
	if err := w.ok(); err != nil {
		return err
	}
	w.collMu.Lock()
	defer w.collMu.Unlock()
	if s.freed.Load() {
		return fmt.Errorf("shmem: co-array #%d freed twice", s.id)
	}
	if err := w.barrier(w.all, tag(kindFree, uint32(s.id))); err != nil {
		return err
	}
	s.freed.Store(true)
	w.heap.release(s.offs[w.me] - w.lay.heap)
	return nil
}

// ---- typed co-arrays ----

// Elem is the set of fixed-size element types of typed co-arrays.
type Elem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint |
		~uintptr | ~float32 | ~float64 | ~complex64 | ~complex128
}

// Coarray is a typed co-array: n elements of T on every PE, addressed by
// (PE, element index).
type Coarray[T Elem] struct {
	s *Sym
	n int
}

// NewCoarray is CoarrayAll for n elements of T on World w.
func NewCoarray[T Elem](w *World, n int) (*Coarray[T], error) {
	var z T
	es := int(unsafe.Sizeof(z))
	if n < 0 {
		return nil, fmt.Errorf("shmem: CoarrayAll: negative length %d", n)
	}
	if n > (1<<40)/es {
		return nil, fmt.Errorf("shmem: CoarrayAll: length %d too large", n)
	}
	s, err := w.CoarrayAll(n * es)
	if err != nil {
		return nil, err
	}
	return &Coarray[T]{s: s, n: n}, nil
}

// CoarrayAll is NewCoarray on the default World.
func CoarrayAll[T Elem](n int) (*Coarray[T], error) { return NewCoarray[T](def.Load(), n) }

func esize[T Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

func bytesOf[T Elem](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*esize[T]())
}

func elemsOf[T Elem](b []byte) []T {
	if len(b) == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/esize[T]())
}

// Len is the number of elements on each PE.
func (c *Coarray[T]) Len() int { return c.n }

// Sym returns the untyped co-array underneath.
func (c *Coarray[T]) Sym() *Sym { return c.s }

func (c *Coarray[T]) idx(op string, i, n int) (int, error) {
	if c == nil || c.s == nil {
		return 0, fmt.Errorf("shmem: %s on a nil co-array", op)
	}
	if i < 0 || n < 0 || i > c.n-n {
		return 0, fmt.Errorf("shmem: %s of %d elements at index %d is outside a co-array of %d elements", op, n, i, c.n)
	}
	return i * esize[T](), nil
}

// Local returns this PE's part.
func (c *Coarray[T]) Local() []T { return elemsOf[T](c.s.Local()) }

// Ptr returns PE pe's part as directly addressable memory (shm), else nil.
func (c *Coarray[T]) Ptr(pe int) []T {
	b := c.s.Ptr(pe)
	if b == nil {
		return nil
	}
	return elemsOf[T](b)
}

// Put copies src into PE pe's part starting at element i (see Sym.Put).
func (c *Coarray[T]) Put(pe, i int, src []T) error {
	off, err := c.idx("Put", i, len(src))
	if err != nil {
		return err
	}
	return c.s.Put(pe, off, bytesOf(src))
}

// PutNBI is the non-blocking Put (see Sym.PutNBI).
func (c *Coarray[T]) PutNBI(pe, i int, src []T) error {
	off, err := c.idx("PutNBI", i, len(src))
	if err != nil {
		return err
	}
	return c.s.PutNBI(pe, off, bytesOf(src))
}

// GetNBI starts copying PE pe's elements [i, i+len(dst)) into dst; dst
// holds them after the next Quiet (see Sym.GetNBI).
func (c *Coarray[T]) GetNBI(pe, i int, dst []T) error {
	off, err := c.idx("GetNBI", i, len(dst))
	if err != nil {
		return err
	}
	return c.s.GetNBI(pe, off, bytesOf(dst))
}

// Get copies PE pe's elements [i, i+len(dst)) into dst.
func (c *Coarray[T]) Get(pe, i int, dst []T) error {
	off, err := c.idx("Get", i, len(dst))
	if err != nil {
		return err
	}
	return c.s.Get(pe, off, bytesOf(dst))
}

// PutValue stores one element at PE pe's index i; an 8-byte element is one
// atomic store.
func (c *Coarray[T]) PutValue(pe, i int, v T) error {
	off, err := c.idx("PutValue", i, 1)
	if err != nil {
		return err
	}
	if esize[T]() == 8 {
		if err := c.s.check("PutValue", pe, off, 8); err != nil {
			return err
		}
		return c.s.w.tr.PutWord(pe, c.s.offs[pe]+off, *(*uint64)(unsafe.Pointer(&v)))
	}
	return c.s.Put(pe, off, bytesOf([]T{v}))
}

// GetValue reads one element of PE pe.
func (c *Coarray[T]) GetValue(pe, i int) (T, error) {
	var v [1]T
	err := c.Get(pe, i, v[:])
	return v[0], err
}

// Free releases the co-array collectively (see Sym.Free).
func (c *Coarray[T]) Free() error {
	if c == nil {
		return errors.New("shmem: Free of a nil co-array")
	}
	return c.s.Free()
}
