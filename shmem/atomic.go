package shmem

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Word is the set of element types of integer atomics, bitwise atomics and
// waits: 32- and 64-bit integers.
type Word interface {
	~int32 | ~uint32 | ~int64 | ~uint64
}

// AtomicValue is the set of element types of atomics: the integer words
// and float32/float64 (fetch, set, swap, compare-and-swap, add).
type AtomicValue interface {
	Word | ~float32 | ~float64
}

// atomicType is the operand type of T.
func atomicType[T AtomicValue]() AtomicOp {
	var z T
	z = 1
	z /= 2 // 0 for integers, ½ for floats
	float := z != 0
	switch {
	case esize[T]() == 4 && float:
		return AtomicFloat32
	case float:
		return AtomicFloat64
	case esize[T]() == 4:
		return AtomicUint32
	}
	return AtomicUint64
}

// bitsOf is v's bit pattern, zero-extended to 64 bits.
func bitsOf[T AtomicValue](v T) uint64 {
	if esize[T]() == 4 {
		return uint64(*(*uint32)(unsafe.Pointer(&v)))
	}
	return *(*uint64)(unsafe.Pointer(&v))
}

// valueOf is the T whose bit pattern is the low bits of u.
func valueOf[T AtomicValue](u uint64) T {
	var v T
	if esize[T]() == 4 {
		*(*uint32)(unsafe.Pointer(&v)) = uint32(u)
	} else {
		*(*uint64)(unsafe.Pointer(&v)) = u
	}
	return v
}

// fetchOp performs a fetching atomic on element i of PE pe.
func fetchOp[T AtomicValue](c *Coarray[T], name string, pe, i int, op AtomicOp, a, b T) (T, error) {
	off, err := c.idx(name, i, 1)
	if err != nil {
		return 0, err
	}
	old, err := c.s.Atomic(pe, op|atomicType[T](), off, bitsOf(a), bitsOf(b))
	return valueOf[T](old), err
}

// nfOp performs a non-fetching atomic on element i of PE pe.
func nfOp[T AtomicValue](c *Coarray[T], name string, pe, i int, op AtomicOp, a T) error {
	off, err := c.idx(name, i, 1)
	if err != nil {
		return err
	}
	return c.s.AtomicNF(pe, op|atomicType[T](), off, bitsOf(a))
}

// nbiOp starts a fetching atomic whose previous value lands in *res by the
// next Quiet.
func nbiOp[T AtomicValue](c *Coarray[T], name string, pe, i int, op AtomicOp, a, b T, res *T) error {
	if res == nil {
		return fmt.Errorf("shmem: %s: nil result pointer", name)
	}
	off, err := c.idx(name, i, 1)
	if err != nil {
		return err
	}
	op |= atomicType[T]()
	if !op.valid() {
		return fmt.Errorf("shmem: %s is not defined on %T", name, a)
	}
	if err := c.s.checkAtomic(name, pe, off, op); err != nil {
		return err
	}
	return c.s.w.tr.AtomicNBI(pe, op, c.s.offs[pe]+off, bitsOf(a), bitsOf(b), func(v uint64) { *res = valueOf[T](v) })
}

// AtomicFetch reads element i of PE pe atomically.
func AtomicFetch[T AtomicValue](c *Coarray[T], pe, i int) (T, error) {
	return fetchOp(c, "AtomicFetch", pe, i, OpFetch, 0, 0)
}

// AtomicSet stores v into element i of PE pe atomically (non-fetching).
func AtomicSet[T AtomicValue](c *Coarray[T], pe, i int, v T) error {
	return nfOp(c, "AtomicSet", pe, i, OpSet, v)
}

// AtomicSwap stores v into element i of PE pe and returns the old value.
func AtomicSwap[T AtomicValue](c *Coarray[T], pe, i int, v T) (T, error) {
	return fetchOp(c, "AtomicSwap", pe, i, OpSwap, v, 0)
}

// AtomicCompareSwap stores v into element i of PE pe if it equals cond
// (bit for bit for floats) and returns the old value either way.
func AtomicCompareSwap[T AtomicValue](c *Coarray[T], pe, i int, cond, v T) (T, error) {
	return fetchOp(c, "AtomicCompareSwap", pe, i, OpCompareSwap, v, cond)
}

// AtomicFetchAdd adds v to element i of PE pe and returns the old value.
func AtomicFetchAdd[T AtomicValue](c *Coarray[T], pe, i int, v T) (T, error) {
	return fetchOp(c, "AtomicFetchAdd", pe, i, OpAdd, v, 0)
}

// AtomicAdd adds v to element i of PE pe without waiting (non-fetching:
// complete after Quiet).
func AtomicAdd[T AtomicValue](c *Coarray[T], pe, i int, v T) error {
	return nfOp(c, "AtomicAdd", pe, i, OpAdd, v)
}

// AtomicFetchInc adds 1 to element i of PE pe and returns the old value.
func AtomicFetchInc[T Word](c *Coarray[T], pe, i int) (T, error) {
	return AtomicFetchAdd(c, pe, i, 1)
}

// AtomicInc adds 1 to element i of PE pe (non-fetching).
func AtomicInc[T Word](c *Coarray[T], pe, i int) error { return AtomicAdd(c, pe, i, 1) }

// AtomicFetchAnd, AtomicFetchOr and AtomicFetchXor combine v into element i
// of PE pe bitwise and return the old value.
func AtomicFetchAnd[T Word](c *Coarray[T], pe, i int, v T) (T, error) {
	return fetchOp(c, "AtomicFetchAnd", pe, i, OpAnd, v, 0)
}

// AtomicFetchOr: see AtomicFetchAnd.
func AtomicFetchOr[T Word](c *Coarray[T], pe, i int, v T) (T, error) {
	return fetchOp(c, "AtomicFetchOr", pe, i, OpOr, v, 0)
}

// AtomicFetchXor: see AtomicFetchAnd.
func AtomicFetchXor[T Word](c *Coarray[T], pe, i int, v T) (T, error) {
	return fetchOp(c, "AtomicFetchXor", pe, i, OpXor, v, 0)
}

// AtomicAnd, AtomicOr and AtomicXor are the non-fetching bitwise atomics.
func AtomicAnd[T Word](c *Coarray[T], pe, i int, v T) error {
	return nfOp(c, "AtomicAnd", pe, i, OpAnd, v)
}

// AtomicOr: see AtomicAnd.
func AtomicOr[T Word](c *Coarray[T], pe, i int, v T) error {
	return nfOp(c, "AtomicOr", pe, i, OpOr, v)
}

// AtomicXor: see AtomicAnd.
func AtomicXor[T Word](c *Coarray[T], pe, i int, v T) error {
	return nfOp(c, "AtomicXor", pe, i, OpXor, v)
}

// AtomicFetchNBI and the other …NBI forms are the non-blocking fetching
// atomics: they return at once and store the previous value in *res by the
// next Quiet (or barrier); *res must not be read before.
func AtomicFetchNBI[T AtomicValue](c *Coarray[T], pe, i int, res *T) error {
	return nbiOp(c, "AtomicFetchNBI", pe, i, OpFetch, 0, 0, res)
}

// AtomicSwapNBI: see AtomicFetchNBI.
func AtomicSwapNBI[T AtomicValue](c *Coarray[T], pe, i int, v T, res *T) error {
	return nbiOp(c, "AtomicSwapNBI", pe, i, OpSwap, v, 0, res)
}

// AtomicCompareSwapNBI: see AtomicFetchNBI.
func AtomicCompareSwapNBI[T AtomicValue](c *Coarray[T], pe, i int, cond, v T, res *T) error {
	return nbiOp(c, "AtomicCompareSwapNBI", pe, i, OpCompareSwap, v, cond, res)
}

// AtomicFetchAddNBI: see AtomicFetchNBI.
func AtomicFetchAddNBI[T AtomicValue](c *Coarray[T], pe, i int, v T, res *T) error {
	return nbiOp(c, "AtomicFetchAddNBI", pe, i, OpAdd, v, 0, res)
}

// AtomicFetchIncNBI: see AtomicFetchNBI.
func AtomicFetchIncNBI[T Word](c *Coarray[T], pe, i int, res *T) error {
	return nbiOp(c, "AtomicFetchIncNBI", pe, i, OpAdd, 1, 0, res)
}

// AtomicFetchAndNBI: see AtomicFetchNBI.
func AtomicFetchAndNBI[T Word](c *Coarray[T], pe, i int, v T, res *T) error {
	return nbiOp(c, "AtomicFetchAndNBI", pe, i, OpAnd, v, 0, res)
}

// AtomicFetchOrNBI: see AtomicFetchNBI.
func AtomicFetchOrNBI[T Word](c *Coarray[T], pe, i int, v T, res *T) error {
	return nbiOp(c, "AtomicFetchOrNBI", pe, i, OpOr, v, 0, res)
}

// AtomicFetchXorNBI: see AtomicFetchNBI.
func AtomicFetchXorNBI[T Word](c *Coarray[T], pe, i int, v T, res *T) error {
	return nbiOp(c, "AtomicFetchXorNBI", pe, i, OpXor, v, 0, res)
}

// AtomicLoadLocal reads an element of a local part atomically (for polling
// words that remote PEs write).
func AtomicLoadLocal[T AtomicValue](p *T) T {
	if esize[T]() == 4 {
		return valueOf[T](uint64(atomic.LoadUint32((*uint32)(unsafe.Pointer(p)))))
	}
	return valueOf[T](atomic.LoadUint64((*uint64)(unsafe.Pointer(p))))
}

// toBitsN is the bit pattern of an element of 1, 2, 4 or 8 bytes.
func toBitsN[T Number](v T) uint64 {
	p := unsafe.Pointer(&v)
	switch esize[T]() {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// fromBitsN is the element with the low bits of u.
func fromBitsN[T Number](u uint64) T {
	var v T
	p := unsafe.Pointer(&v)
	switch esize[T]() {
	case 1:
		*(*uint8)(p) = uint8(u)
	case 2:
		*(*uint16)(p) = uint16(u)
	case 4:
		*(*uint32)(p) = uint32(u)
	default:
		*(*uint64)(p) = u
	}
	return v
}

// atomicLoad reads the word at region[off] atomically.
func atomicLoad(region []byte, off int) uint64 { return atomic.LoadUint64(word(region, off)) }
