package shmem

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	aggregateMax = 16 << 10 // puts at least this long bypass the aggregation buffer
	flushAt      = 64 << 10 // an aggregation buffer this full is written at once
)

// tcpTransport connects every PE to every other by one TCP connection per
// direction. Operations for a target are appended to that target's
// aggregation buffer and written by a background flusher (or at once by the
// calls that must wait: Quiet, Get, fetching atomics, barriers and waits);
// the target's server goroutine — the seed's "background agent" — applies
// them in order and acknowledges flushes, which is how Quiet learns of
// completion.
type tcpTransport struct {
	me, n   int
	lay     layout
	job     uint64
	fs      *failState
	timeout time.Duration
	local   []byte
	ln      net.Listener
	rdv     net.Conn
	rdvMu   sync.Mutex
	peers   []*peerConn

	inMu     sync.Mutex
	in       []net.Conn
	inCount  int
	lastRecv []atomic.Int64 // unix nanos of the last bytes from each peer
	byeRecv  []atomic.Bool
	inDone   []chan struct{} // closed when the connection from each peer has been served to its end

	kick     chan struct{}
	closing  atomic.Bool
	closed   chan struct{}
	closeMu  sync.Once
	flushers sync.WaitGroup
}

type request struct {
	dst  []byte
	res  func(uint64) // takes a non-blocking fetching atomic's result
	done chan reply
}

type reply struct {
	v   uint64
	err error
}

type peerConn struct {
	t  *tcpTransport
	pe int
	c  net.Conn

	mu          sync.Mutex // guards segs, buf, dirty, outstanding
	segs        [][]byte   // frames queued before buf (borrowed sources of non-blocking puts)
	buf         []byte
	dirty       bool
	outstanding bool

	wmu       sync.Mutex // serialises writes; guards spare
	spare     []byte
	lastWrite atomic.Int64

	pmu     sync.Mutex
	nextID  uint32
	pending map[uint32]*request
	byeSent atomic.Bool
}

func newTCP(cfg Config, lay layout, fs *failState) (*tcpTransport, error) {
	t := &tcpTransport{
		me: cfg.Rank, n: cfg.NPEs, lay: lay, job: cfg.Job, fs: fs, timeout: cfg.Timeout,
		peers: make([]*peerConn, cfg.NPEs), in: make([]net.Conn, cfg.NPEs),
		lastRecv: make([]atomic.Int64, cfg.NPEs), byeRecv: make([]atomic.Bool, cfg.NPEs),
		inDone: make([]chan struct{}, cfg.NPEs), kick: make(chan struct{}, 1), closed: make(chan struct{}),
	}
	for p := range t.inDone {
		t.inDone[p] = make(chan struct{})
	}
	var err error
	t.local, err = syscall.Mmap(-1, 0, lay.size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("shmem: allocating the region (%d bytes): %w", lay.size, err)
	}
	lay.writeHeader(t.local, cfg.Rank, 0, cfg.Job)
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	t.ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("shmem: PE %d listening on %s: %w", cfg.Rank, host, err)
	}
	go t.acceptLoop(cfg.InitTimeout)
	fail := func(err error) (*tcpTransport, error) {
		t.Close(false)
		return nil, err
	}
	addrs, err := t.rendezvous(cfg)
	if err != nil {
		return fail(err)
	}
	deadline := time.Now().Add(cfg.InitTimeout)
	for p := 0; p < t.n; p++ {
		if p == t.me {
			continue
		}
		c, err := net.DialTimeout("tcp", addrs[p], time.Until(deadline))
		if err != nil {
			return fail(&PEError{PE: p, Reason: fmt.Sprintf("cannot connect to %s: %v", addrs[p], err)})
		}
		var hs [handshakeLen]byte
		le.PutUint64(hs[0:], handshakeMagic)
		le.PutUint64(hs[8:], t.job)
		le.PutUint32(hs[16:], uint32(t.me))
		le.PutUint32(hs[20:], uint32(p))
		c.SetWriteDeadline(deadline)
		if _, err := c.Write(hs[:]); err != nil {
			c.Close()
			return fail(&PEError{PE: p, Reason: fmt.Sprintf("handshake with %s: %v", addrs[p], err)})
		}
		c.SetWriteDeadline(time.Time{})
		pc := &peerConn{t: t, pe: p, c: c, pending: map[uint32]*request{}}
		pc.lastWrite.Store(time.Now().UnixNano())
		t.peers[p] = pc
		go pc.readReplies()
	}
	for {
		t.inMu.Lock()
		n := t.inCount
		t.inMu.Unlock()
		if n == t.n-1 {
			break
		}
		if err := fs.get(); err != nil {
			return fail(err)
		}
		if time.Now().After(deadline) {
			return fail(&PEError{PE: -1, Reason: fmt.Sprintf("only %d of %d peers connected within %v", n, t.n-1, cfg.InitTimeout)})
		}
		time.Sleep(time.Millisecond)
	}
	now := time.Now().UnixNano()
	for p := range t.lastRecv {
		t.lastRecv[p].Store(now)
	}
	t.flushers.Add(1)
	go t.flusher()
	return t, nil
}

// rendezvous registers this PE's listening address with the launcher and
// returns everyone's; the connection stays open for failure notices.
func (t *tcpTransport) rendezvous(cfg Config) ([]string, error) {
	if cfg.Rendezvous == "" {
		if t.n == 1 {
			return []string{t.ln.Addr().String()}, nil
		}
		return nil, errors.New("shmem: tcp transport needs a rendezvous address")
	}
	c, err := net.DialTimeout("tcp", cfg.Rendezvous, cfg.InitTimeout)
	if err != nil {
		return nil, fmt.Errorf("shmem: cannot reach the launcher at %s: %w", cfg.Rendezvous, err)
	}
	t.rdv = c
	c.SetDeadline(time.Now().Add(cfg.InitTimeout))
	if _, err := fmt.Fprintf(c, "hello %016x %d %s\n", t.job, t.me, t.ln.Addr()); err != nil {
		return nil, fmt.Errorf("shmem: rendezvous: %w", err)
	}
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("shmem: rendezvous: waiting for the address table: %w", err)
		}
		f := strings.Fields(line)
		switch {
		case len(f) == t.n+1 && f[0] == "table":
			c.SetDeadline(time.Time{})
			go t.watchLauncher(br)
			return f[1:], nil
		case len(f) >= 2 && f[0] == "fail":
			p, _ := strconv.Atoi(f[1])
			return nil, &PEError{PE: p, Reason: strings.Join(f[2:], " ") + byLauncher}
		case len(f) >= 1 && f[0] == "error":
			return nil, fmt.Errorf("shmem: rendezvous refused: %s", strings.Join(f[1:], " "))
		default:
			return nil, fmt.Errorf("shmem: rendezvous: unexpected %q", strings.TrimSpace(line))
		}
	}
}

func (t *tcpTransport) watchLauncher(br *bufio.Reader) {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if !t.closing.Load() {
				t.fs.set(&PEError{PE: -1, Reason: "lost the connection to the launcher"})
			}
			return
		}
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "fail" {
			p, err := strconv.Atoi(f[1])
			if err != nil || p < 0 || p >= t.n || p == t.me || t.byeRecv[p].Load() {
				continue
			}
			t.fs.set(&PEError{PE: p, Reason: strings.Join(f[2:], " ") + byLauncher})
		}
	}
}

func (t *tcpTransport) acceptLoop(initTimeout time.Duration) {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		go t.serveConn(c, initTimeout)
	}
}

// lastReader records when bytes last arrived from a peer.
type lastReader struct {
	c    net.Conn
	last *atomic.Int64
}

func (l lastReader) Read(b []byte) (int, error) {
	n, err := l.c.Read(b)
	if n > 0 {
		l.last.Store(time.Now().UnixNano())
	}
	return n, err
}

func (t *tcpTransport) serveConn(c net.Conn, initTimeout time.Duration) {
	var hs [handshakeLen]byte
	c.SetReadDeadline(time.Now().Add(initTimeout))
	if _, err := io.ReadFull(c, hs[:]); err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	src, dst := int(le.Uint32(hs[16:])), int(le.Uint32(hs[20:]))
	if le.Uint64(hs[0:]) != handshakeMagic || le.Uint64(hs[8:]) != t.job || dst != t.me ||
		src < 0 || src >= t.n || src == t.me {
		c.Close() // a stranger, another job, or a misrouted PE: ignore it
		return
	}
	t.inMu.Lock()
	if t.in[src] != nil || t.closing.Load() {
		t.inMu.Unlock()
		c.Close()
		return
	}
	t.in[src] = c
	t.inCount++
	t.inMu.Unlock()
	defer close(t.inDone[src])
	t.lastRecv[src].Store(time.Now().UnixNano())
	r := bufio.NewReaderSize(lastReader{c, &t.lastRecv[src]}, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	err := serveOps(r, t.local, w, func(pe int, reason string) {
		if pe < 0 || pe >= t.n || pe == t.me {
			pe = src
		}
		if pe != src {
			reason += fmt.Sprintf(" (via PE %d)", src)
		}
		t.fs.set(&PEError{PE: pe, Reason: reason})
	})
	if err == errBye {
		t.byeRecv[src].Store(true)
		return
	}
	if t.closing.Load() {
		return
	}
	var pe *protoError
	if errors.As(err, &pe) {
		t.fs.set(&PEError{PE: src, Reason: "sent a bad operation: " + pe.msg})
	} else {
		t.fs.set(&PEError{PE: src, Reason: "connection lost without Finalize: " + errText(err)})
	}
	c.Close()
}

func errText(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "closed by the peer (process exited?)"
	}
	return err.Error()
}

// readReplies delivers the answers of the target on an outgoing connection.
func (pc *peerConn) readReplies() {
	r := bufio.NewReaderSize(pc.c, 64<<10)
	var h [12]byte
	err := func() error {
		for {
			op, err := r.ReadByte()
			if err != nil {
				return err
			}
			switch op {
			case rGet:
				if _, err := io.ReadFull(r, h[:8]); err != nil {
					return err
				}
				req := pc.take(le.Uint32(h[0:]))
				n := int(le.Uint32(h[4:]))
				if req == nil || len(req.dst) != n {
					return &protoError{"unexpected get reply"}
				}
				if _, err := io.ReadFull(r, req.dst); err != nil {
					req.done <- reply{err: err}
					return err
				}
				req.done <- reply{}
			case rAmo:
				if _, err := io.ReadFull(r, h[:12]); err != nil {
					return err
				}
				req := pc.take(le.Uint32(h[0:]))
				if req == nil {
					return &protoError{"unexpected atomic reply"}
				}
				if req.res != nil {
					req.res(le.Uint64(h[4:]))
				}
				req.done <- reply{v: le.Uint64(h[4:])}
			case rFlush:
				if _, err := io.ReadFull(r, h[:4]); err != nil {
					return err
				}
				req := pc.take(le.Uint32(h[0:]))
				if req == nil {
					return &protoError{"unexpected flush reply"}
				}
				req.done <- reply{}
			default:
				return &protoError{fmt.Sprintf("unknown reply 0x%02x", op)}
			}
		}
	}()
	if pc.t.closing.Load() || pc.byeSent.Load() {
		return
	}
	// A peer that gives up because of a third PE's failure says so on its
	// connection to us (served by serveConn) before it exits: that notice
	// wins over the bare loss of this connection once serveConn has read
	// the peer's connection to its end (bounded by the failure timeout,
	// for a peer that never connected or whose connection stays open).
	select {
	case <-pc.t.fs.done:
		return
	case <-pc.t.closed:
		return
	case <-pc.t.inDone[pc.pe]:
		select {
		case <-pc.t.fs.done:
			return
		default:
		}
	case <-time.After(pc.t.timeout):
	}
	pc.t.fs.set(&PEError{PE: pc.pe, Reason: "connection lost: " + errText(err)})
}

func (pc *peerConn) newReq(dst []byte) (uint32, *request) {
	return pc.register(&request{dst: dst, done: make(chan reply, 1)})
}

// newReqDeliver registers a request whose reply goes to deliver.
func (pc *peerConn) newReqDeliver(deliver func(uint64)) (uint32, *request) {
	return pc.register(&request{res: deliver, done: make(chan reply, 1)})
}

func (pc *peerConn) register(req *request) (uint32, *request) {
	pc.pmu.Lock()
	pc.nextID++
	id := pc.nextID
	pc.pending[id] = req
	pc.pmu.Unlock()
	return id, req
}

func (pc *peerConn) take(id uint32) *request {
	pc.pmu.Lock()
	req := pc.pending[id]
	delete(pc.pending, id)
	pc.pmu.Unlock()
	return req
}

// wait waits for the answer to a request, or for the World to fail. A
// request the reply reader has already claimed is always waited for, so
// the reader never writes into dst after wait returns.
func (pc *peerConn) wait(id uint32, req *request) (uint64, error) {
	select {
	case r := <-req.done:
		return r.v, r.err
	case <-pc.t.fs.done:
	case <-pc.t.closed:
	}
	pc.pmu.Lock()
	_, mine := pc.pending[id]
	delete(pc.pending, id)
	pc.pmu.Unlock()
	if !mine {
		r := <-req.done
		if r.err == nil {
			return r.v, nil
		}
	}
	if err := pc.t.fs.get(); err != nil {
		return 0, err
	}
	return 0, ErrFinalized
}

// enqueue appends one frame (header and optional payload) to the
// aggregation buffer.
// enqueueGet queues the request for n bytes at off under id; on failure
// the request is withdrawn.
func (pc *peerConn) enqueueGet(id uint32, off, n int) error {
	var h [17]byte
	h[0] = opGet
	le.PutUint32(h[1:], id)
	le.PutUint64(h[5:], uint64(off))
	le.PutUint32(h[13:], uint32(n))
	if err := pc.enqueue(h[:], nil); err != nil {
		pc.take(id)
		return err
	}
	return nil
}

func (pc *peerConn) enqueue(hdr, data []byte) error {
	pc.mu.Lock()
	pc.buf = append(pc.buf, hdr...)
	pc.buf = append(pc.buf, data...)
	pc.outstanding = true
	full := len(pc.buf) >= flushAt
	kick := !pc.dirty
	pc.dirty = true
	pc.mu.Unlock()
	if full {
		return pc.flush()
	}
	if kick {
		select {
		case pc.t.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// enqueueBorrowed queues a frame whose payload is the caller's memory (a
// non-blocking put): it is written, after everything queued before it, by
// the flusher or the next flush, without a copy.
func (pc *peerConn) enqueueBorrowed(hdr, data []byte) {
	pc.mu.Lock()
	if len(pc.buf) > 0 {
		pc.segs = append(pc.segs, pc.buf)
		pc.buf = nil
	}
	pc.segs = append(pc.segs, append([]byte(nil), hdr...), data)
	pc.outstanding = true
	kick := !pc.dirty
	pc.dirty = true
	pc.mu.Unlock()
	if kick {
		select {
		case pc.t.kick <- struct{}{}:
		default:
		}
	}
}

// flush writes the queued frames and the aggregation buffer; extra frames
// (a large put) follow them in the same critical section, preserving order.
func (pc *peerConn) flush(extra ...[]byte) error {
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	pc.mu.Lock()
	segs := pc.segs
	pc.segs = nil
	b := pc.buf
	pc.buf = pc.spare[:0]
	pc.dirty = false
	if len(extra) > 0 {
		pc.outstanding = true
	}
	pc.mu.Unlock()
	var err error
	if len(segs) > 0 || len(b) > 0 || len(extra) > 0 {
		pc.c.SetWriteDeadline(time.Now().Add(pc.t.timeout))
		bufs := net.Buffers(append(append(segs, b), extra...))
		_, err = bufs.WriteTo(pc.c)
		pc.lastWrite.Store(time.Now().UnixNano())
	}
	if cap(b) > 4*flushAt {
		b = nil
	}
	pc.spare = b[:0]
	if err != nil {
		failed := &PEError{PE: pc.pe, Reason: "sending failed: " + err.Error()}
		if !pc.t.closing.Load() {
			pc.t.fs.set(failed)
		}
		if e := pc.t.fs.get(); e != nil {
			return e
		}
		// Another failure is being recorded (its report to the launcher
		// comes first) or the transport is closing: until it is
		// recorded, the error names the peer the write failed to.
		return failed
	}
	return nil
}

func (pc *peerConn) isDirty() bool {
	pc.mu.Lock()
	d := pc.dirty
	pc.mu.Unlock()
	return d
}

func (t *tcpTransport) flusher() {
	defer t.flushers.Done()
	for {
		select {
		case <-t.kick:
		case <-t.closed:
			return
		}
		for _, pc := range t.peers {
			if pc != nil && pc.isDirty() {
				pc.flush()
			}
		}
	}
}

func (t *tcpTransport) Name() string { return TransportTCP }

func (t *tcpTransport) Region(pe int) []byte {
	if pe == t.me {
		return t.local
	}
	return nil
}

func (t *tcpTransport) localSpan(off, n int) ([]byte, error) {
	if off < 0 || n < 0 || off > len(t.local)-n {
		return nil, fmt.Errorf("shmem: internal: access [%d,+%d) outside the region", off, n)
	}
	return t.local[off : off+n], nil
}

func (t *tcpTransport) peer(pe int) (*peerConn, error) {
	if pe < 0 || pe >= t.n || t.peers[pe] == nil {
		return nil, fmt.Errorf("shmem: internal: no connection to PE %d", pe)
	}
	return t.peers[pe], nil
}

func (t *tcpTransport) Put(pe, off int, src []byte) error {
	if len(src) == 8 && off&7 == 0 {
		return t.PutWord(pe, off, binary.NativeEndian.Uint64(src))
	}
	if pe == t.me {
		d, err := t.localSpan(off, len(src))
		if err == nil {
			copy(d, src)
		}
		return err
	}
	pc, err := t.peer(pe)
	if err != nil {
		return err
	}
	for len(src) > 0 {
		n := min(len(src), maxChunk)
		h := putHeader(off, n)
		if n < aggregateMax {
			err = pc.enqueue(h[:], src[:n])
		} else {
			err = pc.flush(h[:], src[:n])
		}
		if err != nil {
			return err
		}
		src, off = src[n:], off+n
	}
	return nil
}

// putHeader is the header of a put of n bytes at off.
func putHeader(off, n int) [13]byte {
	var h [13]byte
	h[0] = opPut
	le.PutUint64(h[1:], uint64(off))
	le.PutUint32(h[9:], uint32(n))
	return h
}

// PutNBI aggregates short puts like Put and queues longer ones without
// copying: src is written to the connection by the flusher or by the next
// Quiet.
func (t *tcpTransport) PutNBI(pe, off int, src []byte) error {
	if len(src) < aggregateMax || pe == t.me {
		return t.Put(pe, off, src)
	}
	pc, err := t.peer(pe)
	if err != nil {
		return err
	}
	for len(src) > 0 {
		n := min(len(src), maxChunk)
		h := putHeader(off, n)
		pc.enqueueBorrowed(h[:], src[:n])
		src, off = src[n:], off+n
	}
	return nil
}

// GetNBI sends the requests and returns; the replies land in dst before
// the acknowledgement of the next Quiet's flush (one connection, in order).
func (t *tcpTransport) GetNBI(pe, off int, dst []byte) error {
	if pe == t.me {
		return t.Get(pe, off, dst)
	}
	pc, err := t.peer(pe)
	if err != nil {
		return err
	}
	for len(dst) > 0 {
		n := min(len(dst), maxChunk)
		id, _ := pc.newReq(dst[:n])
		if err := pc.enqueueGet(id, off, n); err != nil {
			return err
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

// AtomicNBI sends a fetching atomic whose reply is stored in *res.
func (t *tcpTransport) AtomicNBI(pe int, op AtomicOp, off int, a, b uint64, deliver func(uint64)) error {
	if pe == t.me {
		v, err := t.Atomic(pe, op, off, a, b)
		if err == nil {
			deliver(v)
		}
		return err
	}
	pc, err := t.peer(pe)
	if err != nil {
		return err
	}
	id, _ := pc.newReqDeliver(deliver)
	h := amoHeader(id, off, op, a, b)
	if err := pc.enqueue(h[:], nil); err != nil {
		pc.take(id)
		return err
	}
	return nil
}

func (t *tcpTransport) PutWord(pe, off int, v uint64) error {
	if pe == t.me {
		if _, err := t.localSpan(off, 8); err != nil || off&7 != 0 {
			return fmt.Errorf("shmem: internal: bad word offset %d", off)
		}
		atomic.StoreUint64(word(t.local, off), v)
		return nil
	}
	pc, err := t.peer(pe)
	if err != nil {
		return err
	}
	var h [17]byte
	h[0] = opPutW
	le.PutUint64(h[1:], uint64(off))
	le.PutUint64(h[9:], v)
	return pc.enqueue(h[:], nil)
}

func (t *tcpTransport) Get(pe, off int, dst []byte) error {
	if pe == t.me {
		s, err := t.localSpan(off, len(dst))
		if err != nil {
			return err
		}
		if len(dst) == 8 && off&7 == 0 {
			binary.NativeEndian.PutUint64(dst, atomic.LoadUint64(word(s, 0)))
		} else {
			copy(dst, s)
		}
		return nil
	}
	pc, err := t.peer(pe)
	if err != nil {
		return err
	}
	for len(dst) > 0 {
		n := min(len(dst), maxChunk)
		id, req := pc.newReq(dst[:n])
		if err := pc.enqueueGet(id, off, n); err != nil {
			return err
		}
		if err := pc.flush(); err != nil {
			pc.take(id)
			return err
		}
		if _, err := pc.wait(id, req); err != nil {
			return err
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

func (t *tcpTransport) Atomic(pe int, op AtomicOp, off int, a, b uint64) (uint64, error) {
	if pe == t.me {
		if !op.valid() || !atomicSpanOK(op, off, len(t.local)) {
			return 0, fmt.Errorf("shmem: internal: bad atomic %d at offset %d", op, off)
		}
		return applyAtomic(t.local, off, op, a, b), nil
	}
	pc, err := t.peer(pe)
	if err != nil {
		return 0, err
	}
	id, req := pc.newReq(nil)
	h := amoHeader(id, off, op, a, b)
	if err := pc.enqueue(h[:], nil); err != nil {
		pc.take(id)
		return 0, err
	}
	if err := pc.flush(); err != nil {
		pc.take(id)
		return 0, err
	}
	return pc.wait(id, req)
}

func (t *tcpTransport) AtomicNF(pe int, op AtomicOp, off int, a uint64) error {
	if pe == t.me {
		_, err := t.Atomic(pe, op, off, a, 0)
		return err
	}
	pc, err := t.peer(pe)
	if err != nil {
		return err
	}
	var h [18]byte
	h[0] = opAmoNF
	h[1] = byte(op)
	le.PutUint64(h[2:], uint64(off))
	le.PutUint64(h[10:], a)
	return pc.enqueue(h[:], nil)
}

// Fence needs no action: each target's operations travel on one connection
// and are applied in order.
func (t *tcpTransport) Fence() error { return nil }

// Quiet sends a flush request to every target that received operations
// since the last Quiet and waits for the acknowledgements; the target
// answers a flush only after applying everything before it.
func (t *tcpTransport) Quiet() error {
	type wt struct {
		pc  *peerConn
		id  uint32
		req *request
	}
	var waits []wt
	for _, pc := range t.peers {
		if pc == nil {
			continue
		}
		pc.mu.Lock()
		out := pc.outstanding
		pc.mu.Unlock()
		if !out {
			continue
		}
		id, req := pc.newReq(nil)
		var h [5]byte
		h[0] = opFlush
		le.PutUint32(h[1:], id)
		pc.mu.Lock()
		pc.buf = append(pc.buf, h[:]...)
		pc.outstanding = false
		pc.dirty = true
		pc.mu.Unlock()
		if err := pc.flush(); err != nil {
			pc.take(id)
			return err
		}
		waits = append(waits, wt{pc, id, req})
	}
	for _, x := range waits {
		if _, err := x.pc.wait(x.id, x.req); err != nil {
			return err
		}
	}
	return nil
}

func (t *tcpTransport) Progress() {
	for _, pc := range t.peers {
		if pc != nil && pc.isDirty() {
			pc.flush()
		}
	}
}

func (t *tcpTransport) Heartbeat() {
	now := time.Now().UnixNano()
	idle := int64(t.timeout / 5)
	for _, pc := range t.peers {
		if pc == nil || pc.byeSent.Load() || now-pc.lastWrite.Load() < idle {
			continue
		}
		pc.enqueue([]byte{opPing}, nil)
	}
}

func (t *tcpTransport) Check(now time.Time) error {
	for p := 0; p < t.n; p++ {
		if p == t.me || t.byeRecv[p].Load() {
			continue
		}
		if d := time.Duration(now.UnixNano() - t.lastRecv[p].Load()); d > t.timeout {
			return &PEError{PE: p, Reason: fmt.Sprintf("no data or heartbeat for %v (hung, stopped or unreachable)", d.Round(time.Millisecond))}
		}
	}
	return nil
}

func (t *tcpTransport) Poison(pe int, reason string) {
	if len(reason) > 1000 {
		reason = reason[:1000]
	}
	h := make([]byte, 7, 7+len(reason))
	h[0] = opFail
	le.PutUint32(h[1:], uint32(pe))
	le.PutUint16(h[5:], uint16(len(reason)))
	h = append(h, reason...)
	// flush in parallel: a hung peer delays this by at most the timeout
	var wg sync.WaitGroup
	for p, pc := range t.peers {
		if pc != nil && p != pe && !pc.byeSent.Load() {
			pc.enqueue(h, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				pc.flush()
			}()
		}
	}
	wg.Wait()
}

// Close says bye to every peer, waits (bounded) for their byes, and closes
// the connections. The region stays mapped.
func (t *tcpTransport) Close(graceful bool) error {
	if graceful && t.fs.get() == nil {
		for _, pc := range t.peers {
			if pc != nil {
				pc.byeSent.Store(true)
				pc.enqueue([]byte{opBye}, nil)
				pc.flush()
			}
		}
		deadline := time.Now().Add(t.timeout)
		for time.Now().Before(deadline) && t.fs.get() == nil {
			all := true
			for p := 0; p < t.n; p++ {
				if p != t.me && !t.byeRecv[p].Load() {
					all = false
				}
			}
			if all {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	t.closing.Store(true)
	t.closeMu.Do(func() { close(t.closed) })
	t.closeConns()
	t.flushers.Wait()
	return nil
}

func (t *tcpTransport) closeConns() {
	if t.ln != nil {
		t.ln.Close()
	}
	if t.rdv != nil {
		t.rdv.Close()
	}
	for _, pc := range t.peers {
		if pc != nil {
			pc.c.Close()
		}
	}
	t.inMu.Lock()
	for _, c := range t.in {
		if c != nil {
			c.Close()
		}
	}
	t.inMu.Unlock()
}

func (t *tcpTransport) Report(pe int, reason string) {
	if t.rdv == nil {
		return
	}
	t.rdvMu.Lock()
	defer t.rdvMu.Unlock()
	t.rdv.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(t.rdv, "report %d %d %s\n", t.me, pe, strings.Join(strings.Fields(reason), " "))
}

func (t *tcpTransport) RecordAbort(status int, reason string) {
	if t.rdv == nil {
		return
	}
	t.rdvMu.Lock()
	defer t.rdvMu.Unlock()
	t.rdv.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(t.rdv, "abort %d %d %s\n", t.me, status, oneLine(reason))
}

// amoHeader encodes a remote atomic request: op, offset and operands,
// answered under request id.
func amoHeader(id uint32, off int, op AtomicOp, a, b uint64) [30]byte {
	var h [30]byte
	h[0] = opAmo
	le.PutUint32(h[1:], id)
	h[5] = byte(op)
	le.PutUint64(h[6:], uint64(off))
	le.PutUint64(h[14:], a)
	le.PutUint64(h[22:], b)
	return h
}
