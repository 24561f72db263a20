package shmem

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunBench(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j, err := NewLocal(3, Options{Transport: tr, Heap: 4 << 20, Ring: 4096, Timeout: 2 * time.Second, InitTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(j.Close)
			var rows []BenchRow
			err = j.Run(func(w *World) error {
				r, err := RunBench(w, BenchConfig{RateSizes: []int{8, 1000}, LatencySizes: []int{8, 4096}, Duration: 5 * time.Millisecond})
				if w.MyPE() == 0 {
					rows = r
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, r := range rows {
				seen[r.Test+"/"+r.API]++
				if r.MsgsPerSec <= 0 || r.LatencyUs <= 0 || r.Transport != tr || r.Count <= 0 {
					t.Errorf("bad row %+v", r)
				}
				if r.BytesPerSec != r.MsgsPerSec*float64(r.Size) {
					t.Errorf("bytes/s inconsistent: %+v", r)
				}
				if (r.Test == "collective") != (r.Algorithm != "") || (r.Test == "collective" && r.Procs != 3) {
					t.Errorf("collective row without its algorithm or team size: %+v", r)
				}
				if r.API == "put" && r.RatioVsTwoSided <= 0 {
					t.Errorf("no ratio: %+v", r)
				}
			}
			want := map[string]int{"message_rate/put": 2, "message_rate/sendrecv": 2, "latency/put": 2,
				"latency/sendrecv": 2, "atomic_rate/fetch_add": 1, "atomic_rate/add": 1, "barrier/barrier": 2,
				"message_rate/put_nbi": 2, "message_rate/get_nbi": 2, "latency/get": 2,
				"collective/broadcast": 4, "collective/reduce": 4, "collective/fcollect": 2, "collective/alltoall": 2}
			if tr == TransportShm {
				want["message_rate/put_ptr"] = 1
			}
			for k, n := range want {
				if seen[k] != n {
					t.Errorf("%s: %d rows, want %d (%v)", k, seen[k], n, seen)
				}
			}
		})
	}
	j := localJob(t, 2, TransportShm)
	err := j.Run(func(w *World) error {
		_, err := RunBench(w, BenchConfig{Tests: []string{"bogus"}})
		return err
	})
	if err == nil {
		t.Fatal("unknown test accepted")
	}
}

// A size's streams do not depend on the other sizes of the run: 8-byte
// put_nbi is completed by a Quiet every nbiWindow operations and 8-byte puts
// cycle over the whole span also when 8 bytes is the only size asked for
// (`icn shmem bench --sizes 8 --latency-sizes 8` once gave one Quiet per
// put_nbi and one target word for every put).
func TestBenchWindowIndependentOfSizes(t *testing.T) {
	j, err := NewLocal(2, Options{Transport: TransportShm, Heap: 4 << 20, Ring: 4096, Timeout: 2 * time.Second, InitTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Close)
	for _, cfg := range []BenchConfig{{RateSizes: []int{8}, LatencySizes: []int{8}}, {}} {
		maxSize, _, err := cfg.normalise()
		if err != nil {
			t.Fatal(err)
		}
		var win, slots [2]int
		err = j.Run(func(w *World) error {
			buf, err := NewCoarray[byte](w, benchBufSize(maxSize))
			if err != nil {
				return err
			}
			e := &benchEnv{w: w, buf: buf}
			win[w.MyPE()], slots[w.MyPE()] = e.window(8), int(e.slots(8))
			return buf.Free()
		})
		if err != nil {
			t.Fatal(err)
		}
		if win[0] != nbiWindow || slots[0] != benchSpan/8 || win != [2]int{win[0], win[0]} {
			t.Errorf("sizes %v: 8-byte window %v, slots %v; want %d and %d", cfg.RateSizes, win, slots, nbiWindow, benchSpan/8)
		}
	}
}

// Go benchmarks: two PEs in this process; PE 0 runs b.N operations while
// PE 1 waits in a barrier.
func benchPair(b *testing.B, tr string, op func(w *World, c *Coarray[uint64], buf []byte, n int) error, size int) {
	j, err := NewLocal(2, Options{Transport: tr, Heap: 4 << 20, Ring: 64 << 10})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	var cs [2]*Coarray[uint64]
	if err := j.Run(func(w *World) error {
		c, err := NewCoarray[uint64](w, (1<<20)/8)
		cs[w.MyPE()] = c
		return err
	}); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	err = j.Run(func(w *World) error {
		if w.MyPE() == 0 {
			if err := op(w, cs[0], buf, b.N); err != nil {
				return err
			}
			if err := w.Quiet(); err != nil {
				return err
			}
		}
		return w.BarrierAll()
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	j.Finalize()
}

func BenchmarkPutWord(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			benchPair(b, tr, func(w *World, c *Coarray[uint64], _ []byte, n int) error {
				for i := 0; i < n; i++ {
					if err := c.PutValue(1, i&1023, uint64(i)); err != nil {
						return err
					}
				}
				return nil
			}, 8)
		})
	}
}

func BenchmarkPtrStore(b *testing.B) {
	benchPair(b, TransportShm, func(w *World, c *Coarray[uint64], _ []byte, n int) error {
		p := c.Ptr(1)[:1024]
		for i := 0; i < n; i++ {
			p[i&1023] = uint64(i)
		}
		return nil
	}, 8)
}

func BenchmarkPut(b *testing.B) {
	for _, tr := range transports {
		for _, size := range []int{64, 4096, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%d", tr, size), func(b *testing.B) {
				benchPair(b, tr, func(w *World, c *Coarray[uint64], buf []byte, n int) error {
					s := c.Sym()
					for i := 0; i < n; i++ {
						if err := s.Put(1, 0, buf); err != nil {
							return err
						}
					}
					return nil
				}, size)
			})
		}
	}
}

func BenchmarkFetchAdd(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			benchPair(b, tr, func(w *World, c *Coarray[uint64], _ []byte, n int) error {
				for i := 0; i < n; i++ {
					if _, err := AtomicFetchAdd(c, 1, 0, 1); err != nil {
						return err
					}
				}
				return nil
			}, 8)
		})
	}
}

func BenchmarkSendRecv(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			j, err := NewLocal(2, Options{Transport: tr, Heap: 1 << 20, Ring: 64 << 10})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			b.SetBytes(8)
			b.ResetTimer()
			err = j.Run(func(w *World) error {
				buf := make([]byte, 8)
				for i := 0; i < b.N; i++ {
					var err error
					if w.MyPE() == 0 {
						err = w.Send(1, buf)
					} else {
						_, err = w.Recv(0, buf)
					}
					if err != nil {
						return err
					}
				}
				return w.BarrierAll()
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

func BenchmarkBarrier(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			j, err := NewLocal(2, Options{Transport: tr, Heap: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			b.ResetTimer()
			err = j.Run(func(w *World) error {
				for i := 0; i < b.N; i++ {
					if err := w.BarrierAll(); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRawPingPong is the floor of every signal between two PEs on
// this machine: two goroutines handing a word back and forth through
// sync/atomic, with no shmem code at all (one op = one round trip).
func BenchmarkRawPingPong(b *testing.B) {
	var flag atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= b.N; i++ {
			for spin := 0; flag.Load() != uint64(2*i-1); spin++ {
				backoff(spin)
			}
			flag.Store(uint64(2 * i))
		}
	}()
	for i := 1; i <= b.N; i++ {
		flag.Store(uint64(2*i - 1))
		for spin := 0; flag.Load() != uint64(2*i); spin++ {
			backoff(spin)
		}
	}
	<-done
}

func BenchmarkPutNBI(b *testing.B) {
	for _, tr := range transports {
		for _, size := range []int{8, 64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%d", tr, size), func(b *testing.B) {
				benchPair(b, tr, func(w *World, c *Coarray[uint64], buf []byte, n int) error {
					s := c.Sym()
					// short puts: windows of nbiWindow puts to distinct
					// offsets, each completed by Quiet (as the message_rate
					// put_nbi row); long ones: streamed through the 1 MiB
					// target and completed by the Quiet after the loop
					win := nbiWindow
					if size >= nbiInline {
						win = n
					}
					for i := 0; i < n; {
						for k := 0; k < win && i < n; k, i = k+1, i+1 {
							if err := s.PutNBI(1, (k*size)%(1<<20), buf); err != nil {
								return err
							}
						}
						if err := w.Quiet(); err != nil {
							return err
						}
					}
					return nil
				}, size)
			})
		}
	}
}

func BenchmarkGet(b *testing.B) {
	for _, tr := range transports {
		for _, size := range []int{8, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%d", tr, size), func(b *testing.B) {
				benchPair(b, tr, func(w *World, c *Coarray[uint64], buf []byte, n int) error {
					s := c.Sym()
					for i := 0; i < n; i++ {
						if err := s.Get(1, 0, buf); err != nil {
							return err
						}
					}
					return nil
				}, size)
			})
		}
	}
}

func TestRunBenchOverlap(t *testing.T) {
	j, err := NewLocal(2, Options{Heap: 4 << 20, Ring: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var rows []BenchRow
	err = j.Run(func(w *World) error {
		r, err := RunBench(w, BenchConfig{RateSizes: []int{1 << 20}, Tests: []string{"overlap"}, Duration: 5 * time.Millisecond})
		if w.MyPE() == 0 {
			rows = r
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].API != "put_nbi" || rows[1].API != "get_nbi" {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Test != "overlap" || r.Overlap < 0 || r.Overlap > 1 || r.Size != 1<<20 || r.Count <= 0 {
			t.Errorf("bad row %+v", r)
		}
	}
}

// BenchmarkServeOps measures the target side of the TCP transport alone:
// serveOps decoding an in-memory stream of word stores, 64-byte puts,
// non-fetching atomics, 8-byte gets and flushes (one op per iteration).
func BenchmarkServeOps(b *testing.B) {
	const ops = 1 << 14
	var stream []byte
	le := binary.LittleEndian
	for i := 0; i < ops; i++ {
		off := uint64(i%64) * 8
		switch i % 5 {
		case 0:
			stream = append(stream, opPutW)
			stream = le.AppendUint64(stream, off)
			stream = le.AppendUint64(stream, uint64(i))
		case 1:
			stream = append(stream, opPut)
			stream = le.AppendUint64(stream, off)
			stream = le.AppendUint32(stream, 64)
			stream = append(stream, make([]byte, 64)...)
		case 2:
			stream = append(stream, opAmoNF, byte(OpAdd))
			stream = le.AppendUint64(stream, off)
			stream = le.AppendUint64(stream, 1)
		case 3:
			stream = append(stream, opGet)
			stream = le.AppendUint32(stream, uint32(i))
			stream = le.AppendUint64(stream, off)
			stream = le.AppendUint32(stream, 8)
		case 4:
			stream = append(stream, opFlush)
			stream = le.AppendUint32(stream, uint32(i))
		}
	}
	stream = append(stream, opBye)
	region := make([]byte, 1024)
	rd := bytes.NewReader(stream)
	br := bufio.NewReaderSize(rd, 1<<16)
	bw := bufio.NewWriterSize(io.Discard, 1<<16)
	b.ResetTimer()
	for done := 0; done < b.N; done += ops {
		rd.Reset(stream)
		br.Reset(rd)
		if err := serveOps(br, region, bw, func(int, string) {}); err != errBye {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawBarrier2 compares 2-party barrier algorithms without shmem
// code, each party a goroutine on its own thread pinned to its own CPU
// (as --bind core places two PEs): one op = one barrier.
//   - flag: each party spins on its own cache line, which only the other
//     writes with the barrier's sequence number (the shm barrier's
//     scheme: one line transfer each way);
//   - sense: a shared counter incremented by both and a shared sense flag
//     flipped by the last to arrive (centralised sense-reversing barrier);
//   - counter: a shared counter incremented by both, each waiting until it
//     reaches 2 per barrier (one contended line).
func BenchmarkRawBarrier2(b *testing.B) {
	// line is two cache lines: the CPU's adjacent-line prefetcher must not
	// couple the parties' lines (the shm slots are in different pages)
	type line struct {
		v atomic.Uint64
		_ [120]byte
	}
	algs := []struct {
		name string
		make func() func(me int, i uint64)
	}{
		{"flag", func() func(int, uint64) {
			var slot [2]line
			return func(me int, i uint64) {
				slot[1-me].v.Store(i)
				for spin := 0; slot[me].v.Load() < i; spin++ {
					rawBackoff(spin)
				}
			}
		}},
		{"sense", func() func(int, uint64) {
			var count, sense line
			return func(me int, i uint64) {
				want := i & 1
				if count.v.Add(1) == 2*i {
					sense.v.Store(want)
					return
				}
				for spin := 0; sense.v.Load() != want; spin++ {
					rawBackoff(spin)
				}
			}
		}},
		{"counter", func() func(int, uint64) {
			var count line
			return func(me int, i uint64) {
				count.v.Add(1)
				for spin := 0; count.v.Load() < 2*i; spin++ {
					rawBackoff(spin)
				}
			}
		}},
	}
	for _, a := range algs {
		b.Run(a.name, func(b *testing.B) {
			barrier := a.make()
			cpus, _ := allowedCPUs()
			// each party's goroutine ends locked to its pinned thread,
			// which then exits with it
			var wg sync.WaitGroup
			for me := range 2 {
				wg.Go(func() {
					runtime.LockOSThread()
					if len(cpus) >= 2 {
						setAffinity(0, cpus[me])
					}
					for i := uint64(1); i <= uint64(b.N); i++ {
						barrier(me, i)
					}
				})
			}
			wg.Wait()
		})
	}
}

// rawBackoff is the shm barrier's wait: signalSpin plain polls, then
// backoff.
func rawBackoff(spin int) {
	if spin >= signalSpin {
		backoff(64 + spin - signalSpin)
	}
}
