package shmem

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// The TCP wire protocol. A connection is opened by the initiator PE to the
// target PE; the initiator sends operations, the target's server goroutine
// applies them to its region strictly in arrival order and answers the ones
// that carry a request id on the same connection. All integers are little
// endian.
const (
	opPut   = 1 // off u64, n u32, n bytes
	opPutW  = 2 // off u64, v u64 (one atomic word store)
	opAmoNF = 3 // amo u8, off u64, a u64
	opAmo   = 4 // id u32, amo u8, off u64, a u64, b u64
	opGet   = 5 // id u32, off u64, n u32
	opFlush = 6 // id u32: answered when every earlier op is applied
	opPing  = 7
	opBye   = 8 // the initiator finalized; EOF follows
	opFail  = 9 // pe u32, n u16, reason: the initiator declares PE pe failed (itself or a peer it saw fail)

	rGet   = 0x81 // id u32, n u32, n bytes
	rAmo   = 0x82 // id u32, old u64
	rFlush = 0x83 // id u32

	handshakeMagic = 0x3163_4d48_534e_4349 // "ICNSHMc1"
	handshakeLen   = 24                    // magic u64, job u64, src u32, dst u32
	maxChunk       = 1 << 30               // largest single put/get frame
)

var le = binary.LittleEndian

var errBye = errors.New("peer finalized")

// protoError is a malformed or out-of-range operation from a peer.
type protoError struct{ msg string }

func (e *protoError) Error() string { return "protocol error: " + e.msg }

func inRegion(off uint64, n uint64, size int) bool {
	return off <= uint64(size) && n <= uint64(size)-off
}

func wordOK(off uint64, size int) bool { return off&7 == 0 && inRegion(off, 8, size) }

// serveOps applies the operations read from r to region and writes replies
// to w, flushing w whenever the input is drained. It returns errBye after a
// bye, a *protoError for a malformed stream (nothing outside region is ever
// touched), or the read/write error. onFail receives the reason of a fail
// frame.
func serveOps(r *bufio.Reader, region []byte, w *bufio.Writer, onFail func(pe int, reason string)) error {
	var h [32]byte
	var out [16]byte
	size := len(region)
	for {
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		op, err := r.ReadByte()
		if err != nil {
			return err
		}
		switch op {
		case opPut:
			if err := servePut(r, region, &h); err != nil {
				return err
			}
		case opPutW:
			if _, err := io.ReadFull(r, h[:16]); err != nil {
				return err
			}
			off := le.Uint64(h[0:])
			if !wordOK(off, size) {
				return &protoError{fmt.Sprintf("word store at bad offset %d", off)}
			}
			atomic.StoreUint64(word(region, int(off)), le.Uint64(h[8:]))
		case opAmoNF, opAmo:
			if err := serveAmo(op, r, region, w, &h, &out); err != nil {
				return err
			}
		case opGet:
			if err := serveGet(r, region, w, &h, &out); err != nil {
				return err
			}
		case opFlush:
			if _, err := io.ReadFull(r, h[:4]); err != nil {
				return err
			}
			out[0] = rFlush
			copy(out[1:5], h[:4])
			if _, err := w.Write(out[:5]); err != nil {
				return err
			}
		case opPing:
		case opBye:
			w.Flush()
			return errBye
		case opFail:
			if _, err := io.ReadFull(r, h[:6]); err != nil {
				return err
			}
			msg := make([]byte, le.Uint16(h[4:6]))
			if _, err := io.ReadFull(r, msg); err != nil {
				return err
			}
			onFail(int(int32(le.Uint32(h[:4]))), string(msg))
		default:
			return &protoError{fmt.Sprintf("unknown operation 0x%02x", op)}
		}
	}
}

// servePut applies a put: offset, length, then the bytes (a naturally
// aligned word is stored atomically). h is the caller's header buffer.
func servePut(r *bufio.Reader, region []byte, h *[32]byte) error {
	if _, err := io.ReadFull(r, h[:12]); err != nil {
		return err
	}
	off, n := le.Uint64(h[0:]), uint64(le.Uint32(h[8:]))
	if !inRegion(off, n, len(region)) {
		return &protoError{fmt.Sprintf("put [%d,+%d) outside a region of %d bytes", off, n, len(region))}
	}
	if n == 8 && off&7 == 0 {
		if _, err := io.ReadFull(r, h[12:20]); err != nil {
			return err
		}
		atomic.StoreUint64(word(region, int(off)), binary.NativeEndian.Uint64(h[12:20]))
		return nil
	}
	_, err := io.ReadFull(r, region[off:off+n])
	return err
}

// serveAmo applies an atomic (opAmo: with an id and a second operand,
// answered with the old value; opAmoNF: not answered).
func serveAmo(op byte, r *bufio.Reader, region []byte, w *bufio.Writer, h *[32]byte, out *[16]byte) error {
	n := 17
	if op == opAmo {
		n = 29
	}
	if _, err := io.ReadFull(r, h[:n]); err != nil {
		return err
	}
	p := h[:n]
	var id uint32
	if op == opAmo {
		id, p = le.Uint32(p), p[4:]
	}
	amo, off, a := AtomicOp(p[0]), le.Uint64(p[1:]), le.Uint64(p[9:])
	var b uint64
	if op == opAmo {
		b = le.Uint64(p[17:])
	}
	if !amo.valid() {
		return &protoError{fmt.Sprintf("unknown atomic %d", amo)}
	}
	if off > uint64(len(region)) || !atomicSpanOK(amo, int(off), len(region)) {
		return &protoError{fmt.Sprintf("atomic at bad offset %d", off)}
	}
	old := applyAtomic(region, int(off), amo, a, b)
	if op != opAmo {
		return nil
	}
	out[0] = rAmo
	le.PutUint32(out[1:], id)
	le.PutUint64(out[5:], old)
	_, err := w.Write(out[:13])
	return err
}

// serveGet answers a get: the id and length, then the bytes (a naturally
// aligned word read atomically).
func serveGet(r *bufio.Reader, region []byte, w *bufio.Writer, h *[32]byte, out *[16]byte) error {
	if _, err := io.ReadFull(r, h[:16]); err != nil {
		return err
	}
	id, off, n := le.Uint32(h[0:]), le.Uint64(h[4:]), uint64(le.Uint32(h[12:]))
	if !inRegion(off, n, len(region)) {
		return &protoError{fmt.Sprintf("get [%d,+%d) outside a region of %d bytes", off, n, len(region))}
	}
	out[0] = rGet
	le.PutUint32(out[1:], id)
	le.PutUint32(out[5:], uint32(n))
	if _, err := w.Write(out[:9]); err != nil {
		return err
	}
	var err error
	if n == 8 && off&7 == 0 {
		binary.NativeEndian.PutUint64(h[16:24], atomic.LoadUint64(word(region, int(off))))
		_, err = w.Write(h[16:24])
	} else {
		_, err = w.Write(region[off : off+n])
	}
	return err
}
