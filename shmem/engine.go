package shmem

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// nbiInline is the size below which a non-blocking put or get on shared
// memory is done at once: a copy that short costs less than handing it to
// the copy engine.
const nbiInline = 16 << 10

// copyEngine is the shm transport's stand-in for a network adapter's DMA
// engine: non-blocking puts and gets of at least nbiInline bytes are
// queued to it and copied by its goroutines while the caller goes on; Quiet
// (and Fence) wait until every queued copy is done. It starts on first use.
type copyEngine struct {
	once   sync.Once
	jobs   chan copyJob
	issued atomic.Uint64
	done   atomic.Uint64
	stop   chan struct{}
	wg     sync.WaitGroup
}

type copyJob struct{ dst, src []byte }

// engineWorkers copy in parallel; each queued transfer is cut into pieces
// of engineChunk so that both work on one large transfer.
const (
	engineWorkers = 2
	engineChunk   = 256 << 10
)

func (e *copyEngine) start() {
	e.jobs = make(chan copyJob, 4096)
	e.stop = make(chan struct{})
	for range engineWorkers {
		e.wg.Add(1)
		go e.work()
	}
}

func (e *copyEngine) work() {
	defer e.wg.Done()
	for {
		select {
		case j := <-e.jobs:
			copy(j.dst, j.src)
			e.done.Add(1)
		case <-e.stop:
			return
		}
	}
}

// submit queues copy(dst, src).
func (e *copyEngine) submit(dst, src []byte) {
	e.once.Do(e.start)
	for len(src) > 0 {
		n := min(len(src), engineChunk)
		e.issued.Add(1)
		e.jobs <- copyJob{dst[:n], src[:n]}
		dst, src = dst[n:], src[n:]
	}
}

// pending reports whether queued copies are not done yet.
func (e *copyEngine) pending() bool { return e.done.Load() != e.issued.Load() }

// drain waits until every copy queued so far is done, helping with the
// queue meanwhile. While a worker finishes a copy it took, drain yields
// its P first: with GOMAXPROCS 1 (a PE bound to one core) the worker runs
// only then, and the system calls of backoff would not let it.
func (e *copyEngine) drain() {
	target := e.issued.Load()
	for i := 0; e.done.Load() < target; i++ {
		select {
		case j := <-e.jobs:
			copy(j.dst, j.src)
			e.done.Add(1)
		default:
			runtime.Gosched()
			backoff(i)
		}
	}
}

// close stops the workers after the queue is drained.
func (e *copyEngine) close() {
	if e.jobs == nil {
		return
	}
	e.drain()
	close(e.stop)
	e.wg.Wait()
}
