package shmem

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
)

// messenger implements two-sided Send/Recv over the one-sided operations of
// the same transport, the way an MPI library runs its eager protocol over
// such a network: each receiver keeps a ring per sender in its header area;
// the sender puts a length word and the payload into the ring, fences, and
// publishes its new tail; the receiver waits for the tail, copies the
// payload out into the user's buffer and returns the space as a credit word
// in the sender's header. It is the baseline the benchmark compares puts
// against: it needs both processes, two copies and a flag per message.
type messenger struct {
	w      *World
	sendMu []sync.Mutex
	recvMu []sync.Mutex
	sent   []uint64 // stream position in my ring at each destination
	recvd  []uint64 // stream position consumed from each source's ring
}

func newMessenger(w *World) *messenger {
	return &messenger{
		w: w, sendMu: make([]sync.Mutex, w.n), recvMu: make([]sync.Mutex, w.n),
		sent: make([]uint64, w.n), recvd: make([]uint64, w.n),
	}
}

// Send delivers data to PE dst as one message, received there by Recv(me,
// ...) in the order sent. It returns when data may be reused; it may wait
// for the receiver to free ring space.
func (w *World) Send(dst int, data []byte) error {
	if err := w.ok(); err != nil {
		return err
	}
	if err := w.checkPE(dst); err != nil {
		return fmt.Errorf("shmem: Send: %w", err)
	}
	if w.n == 1 || dst == w.me {
		return fmt.Errorf("shmem: Send to the calling PE %d is not supported", dst)
	}
	m := w.msg
	m.sendMu[dst].Lock()
	defer m.sendMu[dst].Unlock()
	var hdr [8]byte
	putNativeLen(hdr[:], uint64(len(data)))
	if err := m.write(dst, hdr[:]); err != nil {
		return err
	}
	if err := m.write(dst, data); err != nil {
		return err
	}
	m.sent[dst] = uint64(align(int(m.sent[dst]), 8))
	return m.publish(dst)
}

func putNativeLen(b []byte, v uint64) { binary.NativeEndian.PutUint64(b, v) }

func (m *messenger) publish(dst int) error {
	w := m.w
	if err := w.tr.Fence(); err != nil {
		return err
	}
	return w.tr.PutWord(dst, w.lay.tailSlot(w.me), m.sent[dst])
}

// write streams b into the ring at dst, waiting for credit when full.
func (m *messenger) write(dst int, b []byte) error {
	w := m.w
	R := uint64(w.lay.ringSize)
	credit := word(w.local, w.lay.creditSlot(dst))
	for len(b) > 0 {
		used := m.sent[dst] - atomic.LoadUint64(credit)
		if used >= R {
			if err := m.publish(dst); err != nil {
				return err
			}
			err := w.waitLocal(func() (bool, error) {
				return m.sent[dst]-atomic.LoadUint64(credit) < R, nil
			})
			if err != nil {
				return err
			}
			continue
		}
		pos := m.sent[dst] % R
		n := min(uint64(len(b)), R-used, R-pos)
		if err := w.tr.Put(dst, w.lay.ring(w.me)+int(pos), b[:n]); err != nil {
			return err
		}
		m.sent[dst] += n
		b = b[n:]
	}
	return nil
}

// Recv receives the next message from PE src into buf and returns its
// length. A message longer than buf is consumed and reported as an error.
func (w *World) Recv(src int, buf []byte) (int, error) {
	if err := w.ok(); err != nil {
		return 0, err
	}
	if err := w.checkPE(src); err != nil {
		return 0, fmt.Errorf("shmem: Recv: %w", err)
	}
	if w.n == 1 || src == w.me {
		return 0, fmt.Errorf("shmem: Recv from the calling PE %d is not supported", src)
	}
	m := w.msg
	m.recvMu[src].Lock()
	defer m.recvMu[src].Unlock()
	var hdr [8]byte
	if err := m.read(src, hdr[:]); err != nil {
		return 0, err
	}
	L := binary.NativeEndian.Uint64(hdr[:])
	var err error
	if L > uint64(len(buf)) {
		err = fmt.Errorf("shmem: Recv: message of %d bytes from PE %d does not fit a buffer of %d", L, src, len(buf))
		if e := m.skip(src, L); e != nil {
			return 0, e
		}
		L = 0
	} else if e := m.read(src, buf[:L]); e != nil {
		return 0, e
	}
	m.recvd[src] = uint64(align(int(m.recvd[src]), 8))
	if e := w.tr.PutWord(src, w.lay.creditSlot(w.me), m.recvd[src]); e != nil {
		return 0, e
	}
	return int(L), err
}

func (m *messenger) read(src int, dst []byte) error {
	w := m.w
	R := uint64(w.lay.ringSize)
	tail := word(w.local, w.lay.tailSlot(src))
	ring := w.local[w.lay.ring(src) : w.lay.ring(src)+int(R)]
	for len(dst) > 0 {
		avail := atomic.LoadUint64(tail) - m.recvd[src]
		if avail == 0 {
			// return the space consumed so far before waiting, or a
			// message longer than the ring would never complete
			if err := w.tr.PutWord(src, w.lay.creditSlot(w.me), m.recvd[src]); err != nil {
				return err
			}
			err := w.waitLocal(func() (bool, error) {
				return atomic.LoadUint64(tail) != m.recvd[src], nil
			})
			if err != nil {
				return err
			}
			continue
		}
		pos := m.recvd[src] % R
		n := min(uint64(len(dst)), avail, R-pos)
		copy(dst, ring[pos:pos+n])
		m.recvd[src] += n
		dst = dst[n:]
	}
	return nil
}

func (m *messenger) skip(src int, n uint64) error {
	var junk [4096]byte
	for n > 0 {
		k := min(n, uint64(len(junk)))
		if err := m.read(src, junk[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}
