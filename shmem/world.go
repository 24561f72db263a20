package shmem

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	stateRunning   = 1
	stateFinalized = 2
)

// World is one process's membership in a job: its PE number, its region
// (control header + local portion), the transport to the others and the
// state of the collectives. Put/Get/atomics may be called from several
// goroutines at once; collectives (barriers, CoarrayAll, Free, Finalize) are
// serialised per World and must be called in the same order on every member.
type World struct {
	cfg   Config
	me, n int
	lay   layout
	tr    Transport
	local []byte
	fs    *failState
	state atomic.Int32
	all   []int
	allT  uint32 // the barrier tag of the whole job
	spin  int    // polls of a signal wait before it yields (spinBudget)
	cpu   int    // the CPU Init bound this process to, -1 if none

	collMu  sync.Mutex
	sendSeq []uint32 // barrier signals sent to each peer
	recvSeq []uint32 // barrier signals received from each peer
	sigSend []uint32 // collective signals sent to each peer
	sigRecv []uint32 // collective signals received from each peer
	collSeq uint64   // CoarrayAll calls done
	lastBar barrierListCache
	heap    *heapAlloc
	nextID  uint64

	msg  *messenger
	maps [][]byte // every PE's region when the transport maps them (shm), else nil

	stop     chan struct{}
	monDone  chan struct{}
	cleanup  []func()
	downOnce sync.Once
}

// Join makes this process PE cfg.Rank of a job of cfg.NPEs processes and
// returns when every PE has joined (Join ends with a barrier). Most programs
// call Init, which takes the Config from the launcher's environment.
func Join(cfg Config) (*World, error) {
	if err := cfg.Options.validate(); err != nil {
		return nil, err
	}
	cfg.Options = cfg.Options.withDefaults()
	if cfg.Transport == "" {
		cfg.Transport = TransportShm
	}
	if cfg.NPEs < 1 || cfg.NPEs > maxPEs {
		return nil, fmt.Errorf("shmem: number of PEs %d out of range [1,%d]", cfg.NPEs, maxPEs)
	}
	if cfg.Rank < 0 || cfg.Rank >= cfg.NPEs {
		return nil, fmt.Errorf("shmem: rank %d out of range [0,%d)", cfg.Rank, cfg.NPEs)
	}
	lay, err := newLayout(cfg.NPEs, cfg.Heap, cfg.Ring)
	if err != nil {
		return nil, err
	}
	w := &World{
		cfg: cfg, me: cfg.Rank, cpu: -1, n: cfg.NPEs, lay: lay, fs: newFailState(),
		sendSeq: make([]uint32, cfg.NPEs), recvSeq: make([]uint32, cfg.NPEs),
		sigSend: make([]uint32, cfg.NPEs), sigRecv: make([]uint32, cfg.NPEs), heap: newHeapAlloc(lay.heapSize),
		stop: make(chan struct{}), monDone: make(chan struct{}),
	}
	for i := 0; i < w.n; i++ {
		w.all = append(w.all, i)
	}
	w.allT = tag(kindBarrier, hashList(w.all))
	w.spin = spinBudget(cfg.Transport == TransportShm, cfg.NPEs, runtime.NumCPU())
	switch cfg.Transport {
	case TransportShm:
		w.tr, err = newShm(cfg, lay, w.fs)
	case TransportTCP:
		w.tr, err = newTCP(cfg, lay, w.fs)
	default:
		err = fmt.Errorf("shmem: unknown transport %q", cfg.Transport)
	}
	if err != nil {
		return nil, err
	}
	w.local = w.tr.Region(w.me)
	if shm, ok := w.tr.(*shmTransport); ok {
		w.maps = shm.regions
	}
	// A PE that sees a peer fail reports it to the launcher and passes it
	// on to the other peers, so that every PE names the original culprit
	// even if it first notices the exit of a PE that gave up because of it.
	hook := func(err error) {
		var pe *PEError
		switch {
		case !errors.As(err, &pe): // a local collective error
			w.tr.Poison(w.me, err.Error())
		case pe.PE == w.me: // Abort
			w.tr.Poison(w.me, pe.Reason)
		case pe.PE >= 0:
			if !strings.HasSuffix(pe.Reason, byLauncher) {
				w.tr.Report(pe.PE, pe.Reason)
			}
			w.tr.Poison(pe.PE, pe.Reason)
		}
	}
	w.fs.hook.Store(&hook)
	if err := w.fs.get(); err != nil {
		hook(err)
	}
	w.msg = newMessenger(w)
	w.state.Store(stateRunning)
	go w.monitor()
	w.collMu.Lock()
	err = w.barrier(w.all, tag(kindInit, 0))
	w.collMu.Unlock()
	if err != nil {
		w.shutdown(false)
		return nil, err
	}
	return w, nil
}

// monitor beats the heartbeat and watches the peers until the World ends.
func (w *World) monitor() {
	defer close(w.monDone)
	iv := w.cfg.Timeout / 20
	iv = max(iv, 5*time.Millisecond)
	iv = min(iv, 200*time.Millisecond)
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case now := <-t.C:
			w.tr.Heartbeat()
			if w.fs.get() != nil {
				continue
			}
			if err := w.tr.Check(now); err != nil {
				w.fs.set(err)
			}
		}
	}
}

// Binding says how Init bound this process: BindCore (to the CPU BoundCPU
// names) or BindNone.
func (w *World) Binding() string {
	if w.cpu < 0 {
		return BindNone
	}
	return BindCore
}

// BoundCPU is the CPU Init bound this process to, -1 if none.
func (w *World) BoundCPU() int { return w.cpu }

// MyPE returns this process's PE number, 0..NPEs()-1.
func (w *World) MyPE() int { return w.me }

// NPEs returns the number of PEs in the job.
func (w *World) NPEs() int { return w.n }

// TransportName returns "shm" or "tcp".
func (w *World) TransportName() string { return w.tr.Name() }

// Transport returns the transport under this World.
func (w *World) Transport() Transport { return w.tr }

// Err returns the failure that broke this World (a *PEError or
// *CollectiveError), or nil.
func (w *World) Err() error { return w.fs.get() }

// Done is closed when the World fails.
func (w *World) Done() <-chan struct{} { return w.fs.done }

// LocalPortion returns this PE's whole local portion (the heap co-arrays are
// allocated from). Remote puts land in it at any time; read it after the
// synchronisation that orders those puts.
func (w *World) LocalPortion() []byte { return w.local[w.lay.heap:w.lay.size] }

// ok is the check every call starts with.
func (w *World) ok() error {
	if w == nil {
		return ErrNotInitialized
	}
	if p := w.fs.err.Load(); p != nil {
		return *p
	}
	if w.state.Load() != stateRunning {
		return ErrFinalized
	}
	return nil
}

func (w *World) checkPE(pe int) error {
	if pe < 0 || pe >= w.n {
		return fmt.Errorf("shmem: PE %d out of range [0,%d)", pe, w.n)
	}
	return nil
}

// poison records a local fatal error and tells the peers.
func (w *World) poison(err error) error {
	w.fs.set(err)
	return err
}

// Abort declares this PE failed with the given reason: the launcher ends
// the job with exit status 1 and prints the reason, every peer gets a
// PEError naming this PE from its next call within the fault timeout, and
// every later call here returns an error. Unlike GlobalExit it returns, so
// that the program can clean up.
func (w *World) Abort(reason string) {
	w.abort(1, "aborted: "+reason)
}

// globalExitReason starts the reason of a GlobalExit.
const globalExitReason = "called GlobalExit"

// GlobalExit is shmem_global_exit: it ends the whole job with the given
// exit status (0..255): the launcher exits with it and kills the PEs still
// running, which get a PEError naming this PE if they call shmem first.
// It does not return.
func (w *World) GlobalExit(status int) {
	status = min(max(status, 0), 255)
	w.abort(status, fmt.Sprintf("%s(%d)", globalExitReason, status))
	os.Exit(status)
}

// abort records the end of the job with the launcher, then poisons the
// World (which tells the peers).
func (w *World) abort(status int, reason string) {
	if w == nil || w.tr == nil {
		return
	}
	if w.fs.get() == nil {
		w.tr.RecordAbort(status, reason)
	}
	w.poison(&PEError{PE: w.me, Reason: reason})
}

// waitLocal polls cond until it reports done, an error, or the World fails.
// cond is checked before the failure so a satisfied wait always succeeds.
func (w *World) waitLocal(cond func() (bool, error)) error {
	return w.waitCtx(context.Background(), cond)
}

// waitCtx is waitLocal that also ends when ctx is done (with an error
// wrapping ctx.Err()).
func (w *World) waitCtx(ctx context.Context, cond func() (bool, error)) error {
	w.tr.Progress()
	cancel := ctx.Done()
	for i := 0; ; i++ {
		done, err := cond()
		if err != nil || done {
			return err
		}
		if err := w.failure(); err != nil {
			return err
		}
		if cancel != nil && i&63 == 63 {
			select {
			case <-cancel:
				return fmt.Errorf("shmem: wait abandoned: %w", context.Cause(ctx))
			default:
			}
		}
		if i&1023 == 1023 {
			w.tr.Progress()
		}
		backoff(i)
	}
}

// Collective kinds, carried in barrier signals to detect mismatched calls.
const (
	kindInit = iota + 1
	kindBarrier
	kindCoarray
	kindFree
	kindFinalize
	kindTeam
	kindSync
	kindBroadcast
	kindReduce
	kindCollect
	kindFCollect
	kindAlltoall
)

var kindNames = map[uint32]string{
	kindInit: "Init", kindBarrier: "Barrier", kindCoarray: "CoarrayAll",
	kindFree: "Free", kindFinalize: "Finalize", kindTeam: "team split", kindSync: "Sync",
	kindBroadcast: "Broadcast", kindReduce: "Reduce", kindCollect: "Collect",
	kindFCollect: "FCollect", kindAlltoall: "Alltoall",
}

func tag(kind uint32, h uint32) uint32 { return kind<<24 | h&0xffffff }

func describeTag(t uint32) string {
	name := kindNames[t>>24]
	if name == "" {
		name = fmt.Sprintf("unknown collective %d", t>>24)
	}
	if k := t >> 24; k == kindBarrier || k >= kindTeam {
		return fmt.Sprintf("%s (member list hash %06x)", name, t&0xffffff)
	}
	return name
}

func hashList(pes []int) uint32 {
	h := fnv.New32a()
	var b [4]byte
	for _, p := range pes {
		binary.LittleEndian.PutUint32(b[:], uint32(p))
		h.Write(b[:])
	}
	return h.Sum32()
}

// barrier is the dissemination barrier over members (sorted, unique,
// containing w.me); collMu must be held. Every member first completes its
// outstanding operations (Quiet); then in round k = 0, 1, … (⌈log2 m⌉
// rounds for m members) member i stores (sequence, tag) into its slot at
// member i+2^k (mod m) and waits for the slot of member i−2^k to reach the
// sequence it expects from that member. A different tag at the expected
// sequence is a mismatched collective. Every member computes the same
// schedule, so the per-pair sequence counts agree across barriers over
// different member lists.
func (w *World) barrier(members []int, t uint32) error {
	if err := w.quietBeforeSignal(); err != nil {
		return err
	}
	return w.dissemination(context.Background(), members, t)
}

// quietBeforeSignal is the Quiet at the start of a barrier. On shm it only
// drains the copy engine: the barrier's first signal is a sequentially
// consistent atomic store, which already orders every earlier store of this
// PE before it, so the separate full fence of Quiet would be a second one.
func (w *World) quietBeforeSignal() error {
	if s, ok := w.tr.(*shmTransport); ok {
		if s.engine.pending() {
			s.engine.drain()
		}
		return nil
	}
	return w.tr.Quiet()
}

// dissemination runs the rounds of the barrier (without the Quiet).
func (w *World) dissemination(ctx context.Context, members []int, t uint32) error {
	m := len(members)
	if m == 1 {
		return nil
	}
	i, _ := slices.BinarySearch(members, w.me)
	for d := 1; d < m; d <<= 1 {
		to, from := members[(i+d)%m], members[(i-d+m)%m]
		w.sendSeq[to]++
		if err := w.tr.PutWord(to, w.lay.barSlot(w.me), uint64(w.sendSeq[to])<<32|uint64(t)); err != nil {
			return err
		}
		w.recvSeq[from]++
		if err := w.awaitSignal(ctx, w.lay.barSlot(from), from, w.recvSeq[from], t); err != nil {
			return err
		}
	}
	return nil
}

// awaitSignal waits until the signal slot at offset off (written by PE
// from) reaches sequence want: a tight spin first (the partner is usually a
// few hundred nanoseconds away), checking for failures and ctx every 64
// polls.
func (w *World) awaitSignal(ctx context.Context, off, from int, want uint32, t uint32) error {
	slot := word(w.local, off)
	cancel := ctx.Done()
	w.tr.Progress() // push out our own signal first (TCP)
	for i := 0; ; i++ {
		v := atomic.LoadUint64(slot)
		if d := int32(uint32(v>>32) - want); d >= 0 {
			if d == 0 && uint32(v) != t {
				return w.poison(&CollectiveError{Op: describeTag(t), Detail: fmt.Sprintf(
					"PE %d called %s while PE %d called %s", from, describeTag(uint32(v)), w.me, describeTag(t))})
			}
			return nil
		}
		if i&63 == 63 {
			if err := w.failure(); err != nil {
				return err
			}
			if cancel != nil {
				select {
				case <-cancel:
					return w.poison(fmt.Errorf("shmem: %s abandoned while waiting for PE %d: %w", describeTag(t), from, context.Cause(ctx)))
				default:
				}
			}
			w.tr.Progress()
		}
		if i >= w.spin {
			backoff(64 + i - w.spin)
		}
	}
}

// signalSpin is how many polls awaitSignal makes on shm before it starts to
// yield the CPU: about a microsecond, longer than a signal takes between two
// running PEs, so that a barrier's partner is not missed by a sched_yield
// system call that costs more than the whole wait. (Polling with the CPU's
// spin-wait hint, PAUSE, gave 0.21 µs barriers in good runs but 6–10 µs in
// about half of the runs; see docs/shmem.md.)
const signalSpin = 1024

// spinBudget is signalSpin on shm when
// every PE of a job of npes PEs can have a CPU of its own (cpus CPUs here),
// else the 64 plain polls that the first step of backoff spins: when PEs
// outnumber the CPUs the awaited partner is often not running, and a long
// spin only delays it (5 PEs on 2 CPUs with a 15 µs spin: barriers of
// 20–60 µs instead of 2–4 µs); over TCP a signal takes tens of µs and the
// spin would take the CPU from the goroutines that deliver it.
func spinBudget(shm bool, npes, cpus int) int {
	if !shm || npes > cpus {
		return 64
	}
	return signalSpin
}

// notify sends the next collective signal to PE to (collMu held).
func (w *World) notify(to int, t uint32) error {
	w.sigSend[to]++
	return w.tr.PutWord(to, w.lay.sigSlot(w.me), uint64(w.sigSend[to])<<32|uint64(t))
}

// await waits for the next collective signal from PE from (collMu held).
func (w *World) await(ctx context.Context, from int, t uint32) error {
	w.sigRecv[from]++
	return w.awaitSignal(ctx, w.lay.sigSlot(from), from, w.sigRecv[from], t)
}

// failure is the World's failure, ErrFinalized after Finalize, or nil.
func (w *World) failure() error {
	if p := w.fs.err.Load(); p != nil {
		return *p
	}
	if w.state.Load() != stateRunning {
		return ErrFinalized
	}
	return nil
}

// BarrierAll waits until every PE has called BarrierAll. On return every
// put, atomic and message issued by any PE before its BarrierAll is complete
// and visible at its target.
func (w *World) BarrierAll() error {
	if err := w.ok(); err != nil {
		return err
	}
	w.collMu.Lock()
	defer w.collMu.Unlock()
	return w.barrier(w.all, w.allT)
}

// Barrier synchronises the PEs of an arbitrary list (the seed's
// shmem_barrier over a list). The caller must be in the list; every member
// must pass the same set (order and duplicates are not allowed to differ:
// the list is checked). The completion guarantee of BarrierAll holds for
// operations issued by the members.
func (w *World) Barrier(pes []int) error {
	if err := w.ok(); err != nil {
		return err
	}
	w.collMu.Lock()
	defer w.collMu.Unlock()
	members, t, err := w.barrierList(pes)
	if err != nil {
		return err
	}
	return w.barrier(members, t)
}

// barrierList is the checked, sorted member list of pes and its barrier tag
// (collMu held). The last list is remembered, so that a loop of barriers
// over one list neither allocates nor hashes on each call.
func (w *World) barrierList(pes []int) ([]int, uint32, error) {
	if c := &w.lastBar; c.pes != nil && slices.Equal(c.pes, pes) {
		return c.members, c.t, nil
	}
	members, err := w.memberList(pes)
	if err != nil {
		return nil, 0, err
	}
	t := tag(kindBarrier, hashList(members))
	w.lastBar = barrierListCache{pes: slices.Clone(pes), members: members, t: t}
	return members, t, nil
}

// barrierListCache is the last list passed to Barrier with what it gave.
type barrierListCache struct {
	pes, members []int
	t            uint32
}

func (w *World) memberList(pes []int) ([]int, error) {
	if len(pes) == 0 {
		return nil, errors.New("shmem: Barrier over an empty list")
	}
	m := slices.Clone(pes)
	slices.Sort(m)
	for i, p := range m {
		if err := w.checkPE(p); err != nil {
			return nil, fmt.Errorf("shmem: Barrier list: %w", err)
		}
		if i > 0 && m[i-1] == p {
			return nil, fmt.Errorf("shmem: Barrier list names PE %d twice", p)
		}
	}
	if _, found := slices.BinarySearch(m, w.me); !found {
		return nil, fmt.Errorf("shmem: Barrier list %v does not contain the calling PE %d", pes, w.me)
	}
	return m, nil
}

// Fence orders this PE's operations: puts, non-fetching atomics and
// messages to a PE issued before Fence are applied at that PE before any
// issued after it. It does not wait for delivery.
func (w *World) Fence() error {
	if err := w.ok(); err != nil {
		return err
	}
	return w.tr.Fence()
}

// Quiet waits until every put, non-fetching atomic and message issued by
// this PE before Quiet is applied at its target, so that any PE that later
// synchronises with this one (or reads the target with Get) sees it.
func (w *World) Quiet() error {
	if err := w.ok(); err != nil {
		return err
	}
	return w.tr.Quiet()
}

// Finalize is a collective end of the job for this PE: a barrier over all
// PEs, after which the PE tells the others it left normally (so that its
// exit is not a failure) and its transport is closed. Memory returned by
// Local stays readable; every other call returns ErrFinalized. If the World
// had failed, Finalize releases it and returns the failure.
func (w *World) Finalize() error {
	if w == nil {
		return ErrNotInitialized
	}
	if w.state.Load() != stateRunning {
		return ErrFinalized
	}
	err := w.fs.get()
	if err == nil {
		w.collMu.Lock()
		err = w.barrier(w.all, tag(kindFinalize, 0))
		w.collMu.Unlock()
	}
	w.shutdown(err == nil)
	return err
}

func (w *World) shutdown(graceful bool) {
	w.downOnce.Do(func() {
		w.state.Store(stateFinalized)
		close(w.stop)
		<-w.monDone
		w.tr.Close(graceful)
		for _, f := range w.cleanup {
			f()
		}
	})
}

// ---- the package-level (default World) API ----

var (
	defMu sync.Mutex
	def   atomic.Pointer[World]
)

// Init joins the job this process was launched into (by icn shmem run or
// Launch), reading the Config from the environment, and makes it the
// default World used by the package-level functions. A process started
// without a launcher becomes a job of one PE. Init may be called once.
func Init() error {
	defMu.Lock()
	defer defMu.Unlock()
	if def.Load() != nil {
		return errors.New("shmem: Init called twice")
	}
	cfg, launched, err := ConfigFromEnv(getenvOS)
	if err != nil {
		return err
	}
	var cleanup func()
	if !launched {
		dir, err := os.MkdirTemp(shmBaseDir(), "icn-shmem-single-")
		if err != nil {
			return fmt.Errorf("shmem: %w", err)
		}
		cleanup = func() { os.RemoveAll(dir) }
		cfg = Config{Rank: 0, NPEs: 1, Options: Options{Transport: TransportShm}, Dir: dir, Job: newJobToken()}
	}
	cpu, err := applyBind(cfg.Bind, cfg.LocalRank)
	if err != nil { // binding only speeds waits up: run unbound, and say so
		fmt.Fprintf(os.Stderr, "shmem: PE %d runs unbound: %v\n", cfg.Rank, err)
	}
	w, err := Join(cfg)
	if err != nil {
		if cleanup != nil {
			cleanup()
		}
		return err
	}
	if cleanup != nil {
		w.cleanup = append(w.cleanup, cleanup)
	}
	w.cpu = cpu
	def.Store(w)
	return nil
}

// Default returns the World made by Init, or nil before Init.
func Default() *World { return def.Load() }

// Finalize finalizes the default World (see World.Finalize).
func Finalize() error { return def.Load().Finalize() }

// MyPE returns the PE number of this process, or -1 before Init.
func MyPE() int {
	if w := def.Load(); w != nil {
		return w.me
	}
	return -1
}

// NPEs returns the number of PEs, or 0 before Init.
func NPEs() int {
	if w := def.Load(); w != nil {
		return w.n
	}
	return 0
}

// BarrierAll is World.BarrierAll on the default World.
func BarrierAll() error { return def.Load().BarrierAll() }

// Barrier is World.Barrier on the default World.
func Barrier(pes []int) error { return def.Load().Barrier(pes) }

// Abort is World.Abort on the default World (before Init it exits the
// process with status 1).
func Abort(reason string) {
	if w := def.Load(); w != nil {
		w.Abort(reason)
		return
	}
	fmt.Fprintln(os.Stderr, "shmem: aborted:", reason)
	os.Exit(1)
}

// GlobalExit is World.GlobalExit on the default World (before Init it
// exits the process).
func GlobalExit(status int) {
	if w := def.Load(); w != nil {
		w.GlobalExit(status)
	}
	os.Exit(status)
}

// Fence is World.Fence on the default World.
func Fence() error { return def.Load().Fence() }

// Quiet is World.Quiet on the default World.
func Quiet() error { return def.Load().Quiet() }

func newJobToken() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// shmBaseDir is where job directories go: /dev/shm when usable (memory
// backed), else the temporary directory.
func shmBaseDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", ".icn-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}
