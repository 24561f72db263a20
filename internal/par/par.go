package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers returns the number of goroutines to use for CPU-bound work:
// GOMAXPROCS, or 1 if w is 1 (callers pass their own override, 0 = default).
func Workers(w int) int {
	if w > 0 {
		return w
	}
	return runtime.GOMAXPROCS(0)
}

// For calls f(worker, i) for i in [0, n) using up to workers goroutines
// (0 = GOMAXPROCS). Items are handed out dynamically in chunks so uneven
// items balance. worker is in [0, workers) and lets callers keep per-worker
// scratch space without locking. For returns when all items are done.
func For(n, workers int, f func(worker, i int)) {
	w := min(Workers(workers), n)
	ForChunks(n, workers, max(1, n/(max(w, 1)*16)), f)
}

// ForChunks is For with items handed out chunk at a time in increasing
// order: with chunk 1 the items start in order, for work whose later
// items depend on what the earlier ones found.
func ForChunks(n, workers, chunk int, f func(worker, i int)) {
	workers = Workers(workers)
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				start := int(next.Add(int64(chunk))) - chunk
				if start >= n {
					return
				}
				end := min(start+chunk, n)
				for i := start; i < end; i++ {
					f(w, i)
				}
			}
		}(w)
	}
	wg.Wait()
}
