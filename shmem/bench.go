package shmem

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
)

// BenchConfig selects what RunBench measures.
type BenchConfig struct {
	RateSizes    []int         // message sizes of the Message Rate test (default 8 B … 1 MiB, powers of 2)
	LatencySizes []int         // sizes of the ping-pong test (default DefaultLatencySizes)
	Duration     time.Duration // target time of one measurement (default 100 ms)
	Tests        []string      // subset of BenchTests (default all)
}

// BenchTests are the tests RunBench knows.
var BenchTests = []string{"rate", "latency", "atomic", "barrier", "overlap", "collective"}

// BenchRow is one measurement. Rates count messages (or atomics, or
// barriers) per second; LatencyUs is the time per message for rates
// (1/rate), half the round trip for ping-pong, the time per call for
// atomics and barriers. RatioVsTwoSided compares a one-sided row with the
// two-sided (send/receive) row of the same test and size over the same
// transport: one-sided speed / two-sided speed (> 1: one-sided is faster).
type BenchRow struct {
	Test            string  `json:"test"` // message_rate, latency, atomic_rate, barrier, overlap, collective, seed_reference, oshmem
	API             string  `json:"api"`  // put, put_nbi, put_ptr, get, get_nbi, sendrecv, fetch_add, add, barrier, broadcast, reduce, fcollect, alltoall
	Transport       string  `json:"transport"`
	Procs           int     `json:"procs"`
	Size            int     `json:"size"`
	Count           int64   `json:"count"`
	MsgsPerSec      float64 `json:"msgs_per_sec"`
	BytesPerSec     float64 `json:"bytes_per_sec"`
	LatencyUs       float64 `json:"latency_us"`
	RatioVsTwoSided float64 `json:"ratio_vs_two_sided,omitempty"`
	// Overlap (overlap rows) is the share of the transfer hidden behind
	// computation: (t_transfer + t_compute − t_both) / min(t_transfer,
	// t_compute), 0 = none, 1 = complete.
	Overlap float64 `json:"overlap,omitempty"`
	// Algorithm (collective rows) is tree or linear.
	Algorithm string `json:"algorithm,omitempty"`
	// ModelUs and Model (collective rows, filled in by icn shmem bench)
	// are seed 002's cost of the same operation with ts and tw fitted from
	// the point-to-point rows, and which formula gave it.
	ModelUs float64 `json:"model_us,omitempty"`
	Model   string  `json:"model,omitempty"`
	// Bind is how PE 0's process was bound (core, none; see Options.Bind).
	Bind string `json:"bind,omitempty"`
}

// SeedReference returns the MVS-Express figures of the seed as rows: more
// than 10 M single-word remote writes per second (70–80 ns per write) and
// a short-message latency a little over 1 µs.
func SeedReference() []BenchRow {
	return []BenchRow{
		{Test: "seed_reference", API: "put", Transport: "mvs-express", Procs: 2, Size: 8, MsgsPerSec: 10e6, BytesPerSec: 80e6, LatencyUs: 0.075},
		{Test: "seed_reference", API: "latency", Transport: "mvs-express", Procs: 2, Size: 8, LatencyUs: 1.0},
	}
}

// DefaultRateSizes is 8 B … 1 MiB in powers of two.
func DefaultRateSizes() []int {
	var s []int
	for x := 8; x <= 1<<20; x *= 2 {
		s = append(s, x)
	}
	return s
}

// DefaultLatencySizes is 8 B … 256 KiB in powers of eight, and 1 MiB.
func DefaultLatencySizes() []int {
	var s []int
	for x := 8; x <= 1<<20; x *= 8 {
		s = append(s, x)
	}
	return append(s, 1<<20)
}

type benchEnv struct {
	w    *World
	ctrl *Coarray[int64] // [0] count of the round, [1] last-round flag, [2] ack
	buf  *Coarray[byte]
	dur  time.Duration
	rnd  int64
	seq  int64 // ping-pong flag values, increasing over the whole run
}

// RunBench runs the benchmark collectively on every PE of w (at least 2)
// and returns the rows on PE 0 (nil elsewhere). Point-to-point tests run
// between PE 0 and PE 1; barriers over PEs 0..k-1 for k = 2..NPEs.
func RunBench(w *World, cfg BenchConfig) ([]BenchRow, error) {
	if err := w.ok(); err != nil {
		return nil, err
	}
	if w.n < 2 {
		return nil, errors.New("shmem bench: needs at least 2 PEs")
	}
	maxSize, want, err := cfg.normalise()
	if err != nil {
		return nil, err
	}
	e := &benchEnv{w: w, dur: cfg.Duration}
	if e.ctrl, err = NewCoarray[int64](w, 8); err != nil {
		return nil, err
	}
	defer e.ctrl.Free()
	if e.buf, err = NewCoarray[byte](w, benchBufSize(maxSize)); err != nil {
		return nil, err
	}
	defer e.buf.Free()
	rows, err := e.runTests(cfg, want)
	if err != nil {
		return nil, err
	}
	if w.me != 0 {
		return nil, w.BarrierAll()
	}
	return rows, w.BarrierAll()
}

// normalise fills in the default sizes and duration, checks the sizes and
// test names, and returns the largest message size and the chosen tests
// (empty: all).
func (cfg *BenchConfig) normalise() (int, map[string]bool, error) {
	if cfg.RateSizes == nil {
		cfg.RateSizes = DefaultRateSizes()
	}
	if cfg.LatencySizes == nil {
		cfg.LatencySizes = DefaultLatencySizes()
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 100 * time.Millisecond
	}
	maxSize := 8
	for _, s := range append(append([]int{}, cfg.RateSizes...), cfg.LatencySizes...) {
		if s < 1 || s > 64<<20 {
			return 0, nil, fmt.Errorf("shmem bench: message size %d out of range [1, 64 MiB]", s)
		}
		maxSize = max(maxSize, s)
	}
	want := map[string]bool{}
	for _, t := range cfg.Tests {
		if !slices.Contains(BenchTests, t) {
			return 0, nil, fmt.Errorf("shmem bench: unknown test %q (want %s)", t, strings.Join(BenchTests, ", "))
		}
		want[t] = true
	}
	return maxSize, want, nil
}

// benchSpan is the least size of the target buffer of the point-to-point
// tests: the streams of short messages cycle over up to this many bytes and
// a non-blocking window holds nbiWindow messages of up to benchSpan/nbiWindow
// bytes, whatever the largest size asked for.
const benchSpan = 1 << 20

// benchBufSize is the size of the target buffer for messages of up to
// maxSize bytes: at least benchSpan, so that a size's rows do not depend on
// the other sizes of the run (with a buffer of the largest size alone,
// `--sizes 8` streamed every put to one word and completed each put_nbi by
// its own Quiet).
func benchBufSize(maxSize int) int { return max(maxSize, benchSpan) }

// runTests runs the chosen tests in the order of BenchTests' description:
// rate, latency, atomic, barrier, overlap, collective.
func (e *benchEnv) runTests(cfg BenchConfig, want map[string]bool) ([]BenchRow, error) {
	all := len(want) == 0
	tests := []struct {
		name string
		run  func() ([]BenchRow, error)
	}{
		{"rate", func() ([]BenchRow, error) { return e.rate(cfg.RateSizes) }},
		{"latency", func() ([]BenchRow, error) { return e.latency(cfg.LatencySizes) }},
		{"atomic", e.atomics},
		{"barrier", e.barriers},
		{"overlap", e.overlap},
		{"collective", e.collectives},
	}
	var rows []BenchRow
	for _, t := range tests {
		if !all && !want[t.name] {
			continue
		}
		r, err := t.run()
		rows = append(rows, r...)
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// measure runs f(count) collectively in rounds, PE 0 choosing the count
// (growing until a round takes a tenth of the target duration, then one
// final round scaled to the duration by the best time per operation of
// the growing rounds), and returns PE 0's count and time
// of the final round. With ack, the round ends on PE 0 when PE 1 has
// finished too (a two-sided receiver); f runs on every PE, which decides
// itself whether it takes part.
func (e *benchEnv) measure(ack bool, f func(count int64) error) (int64, time.Duration, error) {
	w := e.w
	count, last := int64(4), int64(0)
	best := -1.0 // nanoseconds per operation
	for {
		e.rnd++
		if w.me == 0 {
			for p := 1; p < w.n; p++ {
				if err := e.ctrl.Put(p, 0, []int64{count, last}); err != nil {
					return 0, 0, err
				}
			}
		}
		if err := w.BarrierAll(); err != nil {
			return 0, 0, err
		}
		if w.me != 0 {
			loc := e.ctrl.Local()
			count, last = loc[0], loc[1]
		}
		el, err := e.timed(ack, count, f)
		if err != nil {
			return 0, 0, err
		}
		if err := w.BarrierAll(); err != nil {
			return 0, 0, err
		}
		if last == 1 {
			return count, el, nil
		}
		if w.me == 0 {
			per := float64(el) / float64(count)
			if best < 0 || per < best {
				best = per
			}
			switch {
			case el >= e.dur/10 || count >= 1<<32:
				// scale by the best time per operation seen, so that one
				// slow round on a loaded machine does not shrink the
				// measured round
				count = max(count, min(1<<32, 64*count, int64(float64(e.dur)/max(best, 1e-3))))
				last = 1
			case el < e.dur/1000:
				count *= 16
			default:
				count *= 4
			}
		}
	}
}

// timedRoundMemLimit is the heap size at which the collector runs during a
// timed round even though it is off (a safety net for rounds that allocate).
const timedRoundMemLimit = 64 << 20

// gcPause counts the PEs of this process inside a timed round: the first
// turns the collector off, the last restores its settings (NewLocal's PEs
// share one process).
var gcPause struct {
	sync.Mutex
	n       int
	percent int
	limit   int64
}

// pauseGC turns the garbage collector off until resume is called.
func pauseGC() (resume func()) {
	gcPause.Lock()
	defer gcPause.Unlock()
	if gcPause.n == 0 {
		gcPause.percent = debug.SetGCPercent(-1)
		gcPause.limit = debug.SetMemoryLimit(timedRoundMemLimit)
	}
	gcPause.n++
	return func() {
		gcPause.Lock()
		defer gcPause.Unlock()
		if gcPause.n--; gcPause.n == 0 {
			debug.SetGCPercent(gcPause.percent)
			debug.SetMemoryLimit(gcPause.limit)
		}
	}
}

// timed runs one round, f(count) (and with ack PE 1's acknowledgement),
// with the garbage collector off, and returns its time on this PE.
func (e *benchEnv) timed(ack bool, count int64, f func(count int64) error) (time.Duration, error) {
	defer pauseGC()()
	t0 := time.Now()
	if err := f(count); err != nil {
		return 0, err
	}
	if ack {
		switch e.w.me {
		case 0:
			if err := WaitUntil(e.ctrl, 2, CmpGE, e.rnd); err != nil {
				return 0, err
			}
		case 1:
			if err := e.ctrl.PutValue(0, 2, e.rnd); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(t0), nil
}

func (e *benchEnv) row(test, api string, procs, size int, count int64, el time.Duration) BenchRow {
	r := BenchRow{Test: test, API: api, Transport: e.w.tr.Name(), Procs: procs, Size: size, Count: count, Bind: e.w.Binding()}
	if el > 0 && count > 0 {
		r.MsgsPerSec = float64(count) / el.Seconds()
		r.BytesPerSec = r.MsgsPerSec * float64(size)
		r.LatencyUs = el.Seconds() / float64(count) * 1e6
	}
	return r
}

// rate is the seed's Message Rate test: PE 0 streams messages of one size
// to PE 1 — puts (PE 1 passive; the round ends with Quiet), direct stores
// through Ptr where the transport maps the peer, and Send/Recv.
func (e *benchEnv) rate(sizes []int) ([]BenchRow, error) {
	src := make([]byte, e.buf.Len())
	for i := range src {
		src[i] = byte(i)
	}
	var rows []BenchRow
	for _, s := range sizes {
		put, err := e.putStream(s, src)
		if err != nil {
			return nil, err
		}
		if s == 8 && e.w.tr.Name() == TransportShm { // every PE must take the same branch
			ptr, err := e.ptrStream()
			if err != nil {
				return nil, err
			}
			rows = append(rows, ptr)
		}
		two, err := e.sendRecvStream(s, src)
		if err != nil {
			return nil, err
		}
		if two.MsgsPerSec > 0 {
			put.RatioVsTwoSided = put.MsgsPerSec / two.MsgsPerSec
		}
		rows = append(rows, put, two)
		nbi, err := e.nbiRates(s, src)
		if err != nil {
			return nil, err
		}
		rows = append(rows, nbi...)
	}
	return rows, nil
}

// slots is how many messages of size s fit a target window of up to 1 MiB
// (at least one), which the streams cycle over.
func (e *benchEnv) slots(s int) int64 { return int64(max(1, min(benchSpan, e.buf.Len())/s)) }

// window is how many non-blocking operations of size s are issued before
// each Quiet: up to nbiWindow to distinct offsets of the buffer.
func (e *benchEnv) window(s int) int { return max(1, min(nbiWindow, e.buf.Len()/s)) }

// putStream: PE 0 puts messages of size s to PE 1 (a single word as one
// atomic store), then Quiet.
func (e *benchEnv) putStream(s int, src []byte) (BenchRow, error) {
	w, slots := e.w, e.slots(s)
	count, el, err := e.measure(false, func(count int64) error {
		if w.me != 0 {
			return nil
		}
		for i := int64(0); i < count; i++ {
			var err error
			if s == 8 {
				err = e.buf.Sym().PutUint64(1, int(i%slots)*8, uint64(i))
			} else {
				err = e.buf.Put(1, int(i%slots)*s, src[:s])
			}
			if err != nil {
				return err
			}
		}
		return w.Quiet()
	})
	return e.row("message_rate", "put", 2, s, count, el), err
}

// ptrStream: PE 0 stores words straight into PE 1's mapped part.
func (e *benchEnv) ptrStream() (BenchRow, error) {
	w, slots := e.w, e.slots(8)
	p := elemsOf[uint64](e.buf.Ptr(1)[:slots*8]) // shm maps every PE
	count, el, err := e.measure(false, func(count int64) error {
		if w.me != 0 {
			return nil
		}
		for i := int64(0); i < count; i++ {
			p[i%slots] = uint64(i)
		}
		return w.Quiet()
	})
	return e.row("message_rate", "put_ptr", 2, 8, count, el), err
}

// sendRecvStream: PE 0 sends messages of size s to PE 1, which receives
// them; the round ends when PE 1 has them all.
func (e *benchEnv) sendRecvStream(s int, src []byte) (BenchRow, error) {
	w := e.w
	buf := make([]byte, s)
	count, el, err := e.measure(true, func(count int64) error {
		for i := int64(0); i < count && w.me <= 1; i++ {
			var err error
			if w.me == 0 {
				err = w.Send(1, src[:s])
			} else {
				_, err = w.Recv(0, buf)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return e.row("message_rate", "sendrecv", 2, s, count, el), err
}

// nbiWindow is how many non-blocking operations are issued before each
// Quiet (the OSU window).
const nbiWindow = 64

// nbiRates streams non-blocking puts and gets of size s from PE 0 to PE
// 1: a window of up to nbiWindow operations to distinct offsets, then
// Quiet, repeated.
func (e *benchEnv) nbiRates(s int, src []byte) ([]BenchRow, error) {
	w := e.w
	win := e.window(s)
	local := make([]byte, win*s)
	var rows []BenchRow
	for _, api := range []string{"put_nbi", "get_nbi"} {
		count, el, err := e.measure(false, func(count int64) error {
			if w.me != 0 {
				return nil
			}
			sym := e.buf.Sym()
			for i := int64(0); i < count; {
				for k := 0; k < win && i < count; k, i = k+1, i+1 {
					var err error
					if api == "put_nbi" {
						err = sym.PutNBI(1, k*s, src[:s])
					} else {
						err = sym.GetNBI(1, k*s, local[k*s:(k+1)*s])
					}
					if err != nil {
						return err
					}
				}
				if err := w.Quiet(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, e.row("message_rate", api, 2, s, count, el))
	}
	return rows, nil
}

// latency is ping-pong between PE 0 and PE 1: with puts (payload, Fence,
// flag word; a size-8 message is the flag itself) and with Send/Recv.
func (e *benchEnv) latency(sizes []int) ([]BenchRow, error) {
	var rows []BenchRow
	for _, s := range sizes {
		put, err := e.putPingPong(s)
		if err != nil {
			return nil, err
		}
		two, err := e.sendRecvPingPong(s)
		if err != nil {
			return nil, err
		}
		get, err := e.getLatency(s)
		if err != nil {
			return nil, err
		}
		if put.LatencyUs > 0 {
			put.RatioVsTwoSided = two.LatencyUs / put.LatencyUs
		}
		rows = append(rows, get, put, two)
	}
	return rows, nil
}

// oneWay turns a round-trip row into a one-way one.
func oneWay(r BenchRow) BenchRow {
	r.LatencyUs /= 2
	r.MsgsPerSec *= 2
	r.BytesPerSec *= 2
	return r
}

// putPingPong bounces a message of size s between PE 0 and PE 1 with puts:
// the payload, Fence, and a flag word (a size-8 message is the flag).
func (e *benchEnv) putPingPong(s int) (BenchRow, error) {
	w := e.w
	src := make([]byte, s)
	send := func(peer int, v int64) error {
		if s > 8 {
			if err := e.buf.Put(peer, 0, src); err != nil {
				return err
			}
			if err := w.Fence(); err != nil {
				return err
			}
		}
		return e.ctrl.PutValue(peer, 3, v)
	}
	count, el, err := e.measure(false, func(count int64) error {
		if w.me > 1 {
			return nil
		}
		peer := 1 - w.me
		for i := int64(0); i < count; i++ {
			e.seq++
			if w.me == 0 {
				if err := send(peer, e.seq); err != nil {
					return err
				}
			}
			if err := WaitUntil(e.ctrl, 3, CmpGE, e.seq); err != nil {
				return err
			}
			if w.me == 1 {
				if err := send(peer, e.seq); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return oneWay(e.row("latency", "put", 2, s, count, el)), err
}

// sendRecvPingPong bounces a message of size s between PE 0 and PE 1 with
// Send and Recv.
func (e *benchEnv) sendRecvPingPong(s int) (BenchRow, error) {
	w := e.w
	buf := make([]byte, s)
	count, el, err := e.measure(false, func(count int64) error {
		if w.me > 1 {
			return nil
		}
		peer := 1 - w.me
		for i := int64(0); i < count; i++ {
			if w.me == 0 {
				if err := w.Send(peer, buf); err != nil {
					return err
				}
			}
			if _, err := w.Recv(peer, buf); err != nil {
				return err
			}
			if w.me == 1 {
				if err := w.Send(peer, buf); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return oneWay(e.row("latency", "sendrecv", 2, s, count, el)), err
}

// atomics measures remote fetch-and-add (blocking, one round trip each)
// and non-fetching add (streamed, then Quiet) from PE 0 on a word of PE 1.
func (e *benchEnv) atomics() ([]BenchRow, error) {
	w := e.w
	c := e.ctrl
	count, el, err := e.measure(false, func(count int64) error {
		if w.me != 0 {
			return nil
		}
		for i := int64(0); i < count; i++ {
			if _, err := AtomicFetchAdd(c, 1, 4, 1); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows := []BenchRow{e.row("atomic_rate", "fetch_add", 2, 8, count, el)}
	count, el, err = e.measure(false, func(count int64) error {
		if w.me != 0 {
			return nil
		}
		for i := int64(0); i < count; i++ {
			if err := AtomicAdd(c, 1, 5, 1); err != nil {
				return err
			}
		}
		return w.Quiet()
	})
	if err != nil {
		return nil, err
	}
	return append(rows, e.row("atomic_rate", "add", 2, 8, count, el)), nil
}

// barriers measures Barrier over PEs 0..k-1 for k = 2..NPEs.
func (e *benchEnv) barriers() ([]BenchRow, error) {
	w := e.w
	var rows []BenchRow
	for k := 2; k <= w.n; k++ {
		members := make([]int, k)
		for i := range members {
			members[i] = i
		}
		count, el, err := e.measure(false, func(count int64) error {
			if w.me >= k {
				return nil
			}
			for i := int64(0); i < count; i++ {
				if err := w.Barrier(members); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, e.row("barrier", "barrier", k, 0, count, el))
	}
	return rows, nil
}

// getLatency is the time of one blocking get of size s by PE 0 from PE 1.
func (e *benchEnv) getLatency(s int) (BenchRow, error) {
	w := e.w
	dst := make([]byte, s)
	count, el, err := e.measure(false, func(count int64) error {
		if w.me != 0 {
			return nil
		}
		for i := int64(0); i < count; i++ {
			if err := e.buf.Get(1, 0, dst); err != nil {
				return err
			}
		}
		return nil
	})
	return e.row("latency", "get", 2, s, count, el), err
}

// overlapSize is the transfer of the overlap test.
const overlapSize = 1 << 20

// overlap measures how much of a 1 MiB non-blocking put (or get) PE 0
// hides behind computation: the transfer alone (issue, Quiet), a
// computation of about the same length alone, and both (issue, compute,
// Quiet).
func (e *benchEnv) overlap() ([]BenchRow, error) {
	w := e.w
	if e.buf.Len() < overlapSize {
		return nil, nil
	}
	src := make([]byte, overlapSize)
	sink := make([]float64, 4096)
	var rows []BenchRow
	for _, api := range []string{"put_nbi", "get_nbi"} {
		transfer := func() error {
			if api == "put_nbi" {
				return e.buf.Sym().PutNBI(1, 0, src)
			}
			return e.buf.Sym().GetNBI(1, 0, src)
		}
		phase := func(xfer bool, work int) (int64, time.Duration, error) {
			return e.measure(false, func(count int64) error {
				if w.me != 0 {
					return nil
				}
				for i := int64(0); i < count; i++ {
					if xfer {
						if err := transfer(); err != nil {
							return err
						}
					}
					compute(sink, work)
					if err := w.Quiet(); err != nil {
						return err
					}
				}
				return nil
			})
		}
		c, el, err := phase(true, 0)
		if err != nil {
			return nil, err
		}
		tx := el / time.Duration(max(c, 1))
		work := calibrate(sink, tx)
		c, el, err = phase(false, work)
		if err != nil {
			return nil, err
		}
		tc := el / time.Duration(max(c, 1))
		c, el, err = phase(true, work)
		if err != nil {
			return nil, err
		}
		r := e.row("overlap", api, 2, overlapSize, c, el)
		tb := el / time.Duration(max(c, 1))
		if m := min(tx, tc); m > 0 {
			r.Overlap = max(0, min(1, float64(tx+tc-tb)/float64(m)))
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// compute is the stand-in for an application's work: n passes over sink.
func compute(sink []float64, n int) {
	for k := 0; k < n; k++ {
		for i := range sink {
			sink[i] = sink[i]*0.999 + 1
		}
	}
}

// calibrate returns how many passes of compute take about d.
func calibrate(sink []float64, d time.Duration) int {
	n := 1
	for {
		t0 := time.Now()
		compute(sink, n)
		el := time.Since(t0)
		if el >= d/4 || n > 1<<20 {
			return max(1, int(float64(n)*float64(d)/float64(max(el, time.Nanosecond))))
		}
		n *= 2
	}
}

// collectiveSizes are the element counts (int64) of the collective rows.
var collectiveSizes = []int{1, 1024}

// collectives measures Broadcast (root 0), Reduce (sum of int64),
// FCollect and Alltoall over every PE, with the tree and the linear
// algorithm where they differ.
func (e *benchEnv) collectives() ([]BenchRow, error) {
	w := e.w
	maxN := slices.Max(collectiveSizes)
	src, err := NewCoarray[int64](w, maxN*w.n)
	if err != nil {
		return nil, err
	}
	defer src.Free()
	dst, err := NewCoarray[int64](w, maxN*w.n)
	if err != nil {
		return nil, err
	}
	defer dst.Free()
	team := w.TeamWorld()
	ops := []struct {
		api  string
		algs []Algorithm
		run  func(n int) error
	}{
		{"broadcast", []Algorithm{AlgTree, AlgLinear}, func(n int) error { return Broadcast(context.Background(), team, dst, src, n, 0) }},
		{"reduce", []Algorithm{AlgTree, AlgLinear}, func(n int) error { return Reduce(context.Background(), team, dst, src, n, ReduceSum) }},
		{"fcollect", []Algorithm{AlgLinear}, func(n int) error { return FCollect(context.Background(), team, dst, src, n) }},
		{"alltoall", []Algorithm{AlgLinear}, func(n int) error { return Alltoall(context.Background(), team, dst, src, n) }},
	}
	var rows []BenchRow
	for _, op := range ops {
		for _, alg := range op.algs {
			team.Alg = alg
			for _, n := range collectiveSizes {
				count, el, err := e.measure(false, func(count int64) error {
					for i := int64(0); i < count; i++ {
						if err := op.run(n); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					return nil, err
				}
				r := e.row("collective", op.api, w.n, 8*n, count, el)
				r.Algorithm = alg.String()
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}
