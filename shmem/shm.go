package shmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// shmTransport maps the region file of every PE of the job into this
// process. A put is a copy into the target's mapping (an aligned word is one
// atomic store), a get a copy out of it, an atomic a CPU atomic on the
// mapped word: no message, no agent on the target. Liveness: every PE bumps
// a heartbeat word in its own header; the others watch it, the PE's pid and
// its status word, and a marker file the launcher writes when a child dies.
type shmTransport struct {
	me, n    int
	lay      layout
	dir      string
	job      uint64
	regions  [][]byte
	pids     []int
	timeout  time.Duration
	lastBeat []uint64
	lastSeen []time.Time
	fence    [8]uint64 // a private word for full memory barriers
	engine   copyEngine
}

// Files of a shm job directory besides the regions: the launcher records a
// dead child in FailMarker, PEs record the peer failures they observed in
// ReportFile (both as "RANK reason" lines, ReportFile prefixed by the
// reporter's rank) and their own Abort or GlobalExit in AbortFile ("RANK
// STATUS reason").
const (
	FailMarker = "failed"
	ReportFile = "reports"
	AbortFile  = "aborts"
	byLauncher = " (reported by the launcher)"
)

func regionPath(dir string, rank int) string {
	return filepath.Join(dir, "pe-"+strconv.Itoa(rank)+".mem")
}

func newShm(cfg Config, lay layout, fs *failState) (*shmTransport, error) {
	if cfg.Dir == "" {
		return nil, errors.New("shmem: shm transport needs a job directory")
	}
	t := &shmTransport{
		me: cfg.Rank, n: cfg.NPEs, lay: lay, dir: cfg.Dir, job: cfg.Job,
		regions: make([][]byte, cfg.NPEs), pids: make([]int, cfg.NPEs),
		timeout: cfg.Timeout, lastBeat: make([]uint64, cfg.NPEs), lastSeen: make([]time.Time, cfg.NPEs),
	}
	path := regionPath(cfg.Dir, cfg.Rank)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shmem: creating the region of PE %d: %w", cfg.Rank, err)
	}
	defer os.Remove(tmp)
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(lay.size)); err != nil {
		if err := f.Truncate(int64(lay.size)); err != nil {
			f.Close()
			return nil, fmt.Errorf("shmem: sizing the region of PE %d to %d bytes: %w", cfg.Rank, lay.size, err)
		}
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, lay.size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("shmem: mapping the region of PE %d: %w", cfg.Rank, err)
	}
	lay.writeHeader(b, cfg.Rank, os.Getpid(), cfg.Job)
	atomic.StoreUint64(word(b, hStatus), statusReady)
	// Link fails if a region for this rank exists already (two processes
	// claiming the same rank).
	if err := os.Link(tmp, path); err != nil {
		syscall.Munmap(b)
		return nil, fmt.Errorf("shmem: publishing the region of PE %d: %w", cfg.Rank, err)
	}
	t.regions[t.me] = b
	t.pids[t.me] = os.Getpid()

	deadline := time.Now().Add(cfg.InitTimeout)
	for {
		var missing []int
		for p := 0; p < t.n; p++ {
			if t.regions[p] != nil {
				continue
			}
			if err := t.mapPeer(p); err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					t.unmap()
					return nil, err
				}
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			break
		}
		if err := t.markerError(); err != nil {
			t.unmap()
			return nil, err
		}
		if time.Now().After(deadline) {
			t.unmap()
			return nil, &PEError{PE: missing[0], Reason: fmt.Sprintf("did not join within %v (PEs %v missing)", cfg.InitTimeout, missing)}
		}
		time.Sleep(time.Millisecond)
	}
	now := time.Now()
	for p := range t.lastSeen {
		t.lastSeen[p] = now
	}
	return t, nil
}

func (t *shmTransport) mapPeer(p int) error {
	f, err := os.OpenFile(regionPath(t.dir, p), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < int64(t.lay.size) {
		return fmt.Errorf("shmem: region of PE %d has %d bytes, want %d (different heap or ring size?)", p, st.Size(), t.lay.size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, t.lay.size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("shmem: mapping the region of PE %d: %w", p, err)
	}
	if err := t.lay.checkHeader(b, p, t.job); err != nil {
		syscall.Munmap(b)
		return fmt.Errorf("shmem: %w", err)
	}
	t.regions[p] = b
	t.pids[p] = int(atomic.LoadUint64(word(b, hPid)))
	return nil
}

func (t *shmTransport) unmap() {
	for p, b := range t.regions {
		if b != nil {
			syscall.Munmap(b)
			t.regions[p] = nil
		}
	}
}

// markerFor is the launcher's record of PE p's end, or nil.
func (t *shmTransport) markerFor(p int) error {
	b, _ := os.ReadFile(filepath.Join(t.dir, FailMarker))
	for _, line := range strings.Split(string(b), "\n") {
		if r, reason, ok := strings.Cut(line, " "); ok && r == strconv.Itoa(p) {
			return &PEError{PE: p, Reason: reason + byLauncher}
		}
	}
	return nil
}

// markerError reads the launcher's failure marker.
func (t *shmTransport) markerError() error {
	b, err := os.ReadFile(filepath.Join(t.dir, FailMarker))
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		r, reason, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		p, err := strconv.Atoi(r)
		if err != nil || p < 0 || p >= t.n || p == t.me {
			continue
		}
		if reg := t.regions[p]; reg != nil {
			if st := atomic.LoadUint64(word(reg, hStatus)); st == statusFinalized {
				continue
			} else if st == statusFailed {
				return failedErr(p, reg) // its own record names the culprit
			}
		}
		return &PEError{PE: p, Reason: reason + byLauncher}
	}
	return nil
}

func (t *shmTransport) Name() string { return TransportShm }

func (t *shmTransport) Region(pe int) []byte { return t.regions[pe] }

func (t *shmTransport) span(pe, off, n int) ([]byte, error) {
	r := t.regions[pe]
	if off < 0 || n < 0 || off > len(r)-n {
		return nil, fmt.Errorf("shmem: internal: access [%d,+%d) outside the region of PE %d", off, n, pe)
	}
	return r[off : off+n], nil
}

// Put copies src; an aligned word is one 64-bit store (untorn on every
// 64-bit platform Go supports), without the full barrier of PutWord.
func (t *shmTransport) Put(pe, off int, src []byte) error {
	if r := t.regions[pe]; len(src) == 8 && off&7 == 0 && off >= 0 && off <= len(r)-8 {
		*(*uint64)(unsafe.Pointer(&r[off])) = binary.NativeEndian.Uint64(src)
		return nil
	}
	d, err := t.span(pe, off, len(src))
	if err != nil {
		return err
	}
	copy(d, src)
	return nil
}

func (t *shmTransport) PutWord(pe, off int, v uint64) error {
	if off&7 != 0 || off < 0 || off > len(t.regions[pe])-8 {
		return fmt.Errorf("shmem: internal: bad word offset %d", off)
	}
	atomic.StoreUint64(word(t.regions[pe], off), v)
	return nil
}

func (t *shmTransport) Get(pe, off int, dst []byte) error {
	if r := t.regions[pe]; len(dst) == 8 && off&7 == 0 && off >= 0 && off <= len(r)-8 {
		binary.NativeEndian.PutUint64(dst, atomic.LoadUint64((*uint64)(unsafe.Pointer(&r[off]))))
		return nil
	}
	s, err := t.span(pe, off, len(dst))
	if err != nil {
		return err
	}
	copy(dst, s)
	return nil
}

func (t *shmTransport) Atomic(pe int, op AtomicOp, off int, a, b uint64) (uint64, error) {
	if !op.valid() || !atomicSpanOK(op, off, len(t.regions[pe])) {
		return 0, fmt.Errorf("shmem: internal: bad atomic %d at offset %d", op, off)
	}
	return applyAtomic(t.regions[pe], off, op, a, b), nil
}

func (t *shmTransport) AtomicNF(pe int, op AtomicOp, off int, a uint64) error {
	_, err := t.Atomic(pe, op, off, a, 0)
	return err
}

// PutNBI copies short sources at once and queues longer ones to the copy
// engine; src must not change until Quiet.
func (t *shmTransport) PutNBI(pe, off int, src []byte) error {
	if len(src) < nbiInline {
		return t.Put(pe, off, src)
	}
	d, err := t.span(pe, off, len(src))
	if err != nil {
		return err
	}
	t.engine.submit(d, src)
	return nil
}

// GetNBI is the mirror of PutNBI; dst holds the data after Quiet.
func (t *shmTransport) GetNBI(pe, off int, dst []byte) error {
	if len(dst) < nbiInline {
		return t.Get(pe, off, dst)
	}
	s, err := t.span(pe, off, len(dst))
	if err != nil {
		return err
	}
	t.engine.submit(dst, s)
	return nil
}

// AtomicNBI is done at once: a CPU atomic is cheaper than queuing it.
func (t *shmTransport) AtomicNBI(pe int, op AtomicOp, off int, a, b uint64, deliver func(uint64)) error {
	v, err := t.Atomic(pe, op, off, a, b)
	if err == nil {
		deliver(v)
	}
	return err
}

// Fence and Quiet wait for the copy engine's queue (Fence too: the engine
// keeps no per-target order) and then are full memory barriers: a locked
// read-modify-write orders every earlier store of this thread before every
// later one. Stores into a mapping are complete (globally visible in
// cache-coherent memory) once they are ordered.
func (t *shmTransport) Fence() error {
	if t.engine.pending() {
		t.engine.drain()
	}
	atomic.AddUint64(&t.fence[0], 1)
	return nil
}

func (t *shmTransport) Quiet() error { return t.Fence() }

func (t *shmTransport) Progress() {}

func (t *shmTransport) Heartbeat() {
	if r := t.regions[t.me]; r != nil {
		atomic.AddUint64(word(r, hHeartbeat), 1)
	}
}

// Check looks first for a peer that declared a failure (it names the
// culprit, which may have died silently), then for dead, silent or
// launcher-reported peers.
func (t *shmTransport) Check(now time.Time) error {
	for p := 0; p < t.n; p++ {
		if r := t.regions[p]; p != t.me && atomic.LoadUint64(word(r, hStatus)) == statusFailed {
			return failedErr(p, r)
		}
	}
	for p := 0; p < t.n; p++ {
		if p == t.me {
			continue
		}
		r := t.regions[p]
		switch atomic.LoadUint64(word(r, hStatus)) {
		case statusFinalized:
			continue
		case statusFailed:
			return failedErr(p, r)
		}
		if pid := t.pids[p]; pid > 0 {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				// the status may have been set just before the exit
				switch atomic.LoadUint64(word(r, hStatus)) {
				case statusFinalized:
					continue
				case statusFailed:
					return failedErr(p, r)
				}
				if err := t.markerFor(p); err != nil {
					return err
				}
				return &PEError{PE: p, Reason: fmt.Sprintf("process %d exited without Finalize", pid)}
			}
		}
		hb := atomic.LoadUint64(word(r, hHeartbeat))
		if hb != t.lastBeat[p] {
			t.lastBeat[p] = hb
			t.lastSeen[p] = now
		} else if now.Sub(t.lastSeen[p]) > t.timeout {
			return &PEError{PE: p, Reason: fmt.Sprintf("no heartbeat for %v (process %d hung or stopped)", now.Sub(t.lastSeen[p]).Round(time.Millisecond), t.pids[p])}
		}
	}
	return t.markerError()
}

func failedErr(p int, r []byte) *PEError {
	culprit := int(atomic.LoadUint64(word(r, hFailedPE)))
	reason := readReason(r)
	if culprit != p {
		reason += fmt.Sprintf(" (via PE %d)", p)
	}
	return &PEError{PE: culprit, Reason: reason}
}

func (t *shmTransport) Poison(pe int, reason string) {
	r := t.regions[t.me]
	if r == nil || atomic.LoadUint64(word(r, hStatus)) == statusFailed {
		return
	}
	atomic.StoreUint64(word(r, hFailedPE), uint64(pe))
	b := []byte(reason)
	if len(b) > reasonLen-1 {
		b = b[:reasonLen-1]
	}
	copy(r[hReason:hReason+reasonLen], append(b, 0))
	atomic.StoreUint64(word(r, hStatus), statusFailed)
}

func readReason(r []byte) string {
	b := r[hReason : hReason+reasonLen]
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	if n == 0 {
		return "declared itself failed"
	}
	return string(b[:n])
}

// Close marks the region finalized (graceful) and leaves the mappings in
// place: slices handed out by Local stay valid memory for the life of the
// process, so a late access is never a crash.
func (t *shmTransport) Close(graceful bool) error {
	t.engine.close()
	if graceful {
		atomic.StoreUint64(word(t.regions[t.me], hStatus), statusFinalized)
	}
	return nil
}

func (t *shmTransport) Report(pe int, reason string) {
	f, err := os.OpenFile(filepath.Join(t.dir, ReportFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%d %d %s\n", t.me, pe, strings.Join(strings.Fields(reason), " "))
	f.Close()
}

func (t *shmTransport) RecordAbort(status int, reason string) {
	appendLine(filepath.Join(t.dir, AbortFile), fmt.Sprintf("%d %d %s", t.me, status, oneLine(reason)))
}
