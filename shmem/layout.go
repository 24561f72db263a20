package shmem

import (
	"encoding/binary"
	"fmt"
)

// Every PE owns one region: a control header followed by the local portion
// (the heap from which co-arrays are allocated). The layout depends only on
// (npes, heap size, ring size), so every PE computes the same offsets for
// every peer. All fields are 8-byte words unless noted; sections start on
// 64-byte boundaries and the heap on a page boundary.
const (
	regionMagic = 0x32304d4853434e49 // "ICNSHM02" little endian

	hMagic     = 0
	hNPEs      = 8
	hRank      = 16
	hPid       = 24
	hHeap      = 32
	hRing      = 40
	hJob       = 48
	hStatus    = 56
	hHeartbeat = 64
	hFailedPE  = 72  // with statusFailed: the PE whose failure this PE declared
	hReason    = 128 // reasonLen bytes of text, written before status=failed
	reasonLen  = 256
	hFixed     = hReason + reasonLen

	statusCreating  = 0
	statusReady     = 1
	statusFinalized = 2
	statusFailed    = 3

	pageSize = 4096
	maxPEs   = 4096
)

type layout struct {
	npes     int
	heapSize int
	ringSize int
	bar      int // [npes] barrier slot written by PE src: seq<<32 | hash
	sig      int // [npes] collective signal written by PE src: seq<<32 | tag
	cnt      int // [npes] element count published by PE src (Collect)
	coll     int // [2][npes][4] collective records: seq, off, size, spare
	tail     int // [npes] bytes sent by src into ring[src]
	credit   int // [npes] bytes of my ring in PE dst consumed by dst
	rings    int // [npes][ringSize] ring[src]
	heap     int
	size     int
}

func align(x, a int) int { return (x + a - 1) / a * a }

func newLayout(npes, heap, ring int) (layout, error) {
	if npes < 1 || npes > maxPEs {
		return layout{}, fmt.Errorf("shmem: number of PEs %d out of range [1,%d]", npes, maxPEs)
	}
	if heap < 0 || heap > 1<<40 {
		return layout{}, fmt.Errorf("shmem: heap size %d out of range [0,1 TiB]", heap)
	}
	if ring < 64 || ring%64 != 0 || ring > 1<<30 {
		return layout{}, fmt.Errorf("shmem: message ring size %d must be a multiple of 64 in [64,1 GiB]", ring)
	}
	l := layout{npes: npes, heapSize: align(heap, 64), ringSize: ring}
	off := align(hFixed, 64)
	l.bar = off
	off = align(off+8*npes, 64)
	l.sig = off
	off = align(off+8*npes, 64)
	l.cnt = off
	off = align(off+8*npes, 64)
	l.coll = off
	off = align(off+2*npes*32, 64)
	l.tail = off
	off = align(off+8*npes, 64)
	l.credit = off
	off = align(off+8*npes, 64)
	l.rings = off
	if npes > 1 {
		off += npes * ring
	}
	l.heap = align(off, pageSize)
	l.size = l.heap + l.heapSize
	return l, nil
}

func (l layout) barSlot(src int) int       { return l.bar + 8*src }
func (l layout) sigSlot(src int) int       { return l.sig + 8*src }
func (l layout) cntSlot(src int) int       { return l.cnt + 8*src }
func (l layout) collSlot(par, src int) int { return l.coll + 32*(par*l.npes+src) }
func (l layout) tailSlot(src int) int      { return l.tail + 8*src }
func (l layout) creditSlot(dst int) int    { return l.credit + 8*dst }
func (l layout) ring(src int) int          { return l.rings + l.ringSize*src }

// writeHeader fills the identification words of a fresh region.
func (l layout) writeHeader(b []byte, rank, pid int, job uint64) {
	le := binary.LittleEndian
	le.PutUint64(b[hNPEs:], uint64(l.npes))
	le.PutUint64(b[hRank:], uint64(rank))
	le.PutUint64(b[hPid:], uint64(pid))
	le.PutUint64(b[hHeap:], uint64(l.heapSize))
	le.PutUint64(b[hRing:], uint64(l.ringSize))
	le.PutUint64(b[hJob:], job)
	le.PutUint64(b[hMagic:], regionMagic)
}

// checkHeader verifies that a peer's region belongs to the same job and
// layout.
func (l layout) checkHeader(b []byte, rank int, job uint64) error {
	if len(b) < l.size {
		return fmt.Errorf("region of PE %d has %d bytes, want %d", rank, len(b), l.size)
	}
	le := binary.LittleEndian
	switch {
	case le.Uint64(b[hMagic:]) != regionMagic:
		return fmt.Errorf("region of PE %d has a bad magic number", rank)
	case le.Uint64(b[hJob:]) != job:
		return fmt.Errorf("region of PE %d belongs to another job", rank)
	case le.Uint64(b[hNPEs:]) != uint64(l.npes) || le.Uint64(b[hRank:]) != uint64(rank) ||
		le.Uint64(b[hHeap:]) != uint64(l.heapSize) || le.Uint64(b[hRing:]) != uint64(l.ringSize):
		return fmt.Errorf("region of PE %d has a different layout (npes/rank/heap/ring)", rank)
	}
	return nil
}
