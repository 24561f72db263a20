package alloc

import (
	"encoding/binary"
	"sync"
)

// reductionMemo keeps, across decisions, dropTransit's outcome for the
// blocks of one size and job size, where the router's answers for a block
// depend only on its size (shareBlocks): a full outcome (the kept
// indices) answers every bound, and "more than b must stay" answers every
// bound ≤ b. It is emptied with the reachability cache (another router,
// graph or failures) and when it holds maxReductions outcomes or
// maxReductionNodes kept nodes.
type reductionMemo struct {
	mu    sync.Mutex
	out   map[string]reduction
	nodes int // kept nodes held
}

// reduction is one remembered outcome: keep (non-nil) is the full
// outcome; otherwise more than bound nodes must stay.
type reduction struct {
	keep  []int
	bound int
}

// maxReductions and maxReductionNodes bound the memo. A 1 024-node torus
// has 23 094 pairs of a job size m and a block size of m+1 … m+⌈m/4⌉
// nodes, and the 100 000-job replay on it meets thousands of them (3 132
// in its first 2 000 jobs): with room for 4 096 the memo was emptied
// every few thousand jobs and each block reduced again (2.5 % of the CPU
// of the first 10 000 jobs).
const (
	maxReductions     = 1 << 16
	maxReductionNodes = 1 << 22
)

func (r *reductionMemo) reset() {
	r.mu.Lock()
	r.out, r.nodes = nil, 0
	r.mu.Unlock()
}

// get returns dropTransit's outcome with the given bound for the key,
// computing it with drop when the memo cannot answer.
func (r *reductionMemo) get(key string, bound int, drop func(bound int) ([]int, error)) ([]int, error) {
	r.mu.Lock()
	o, ok := r.out[key]
	r.mu.Unlock()
	switch {
	case ok && o.keep != nil && len(o.keep) <= bound:
		return o.keep, nil
	case ok && (o.keep != nil || bound <= o.bound):
		return nil, nil
	}
	keep, err := drop(bound)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == nil || len(r.out) >= maxReductions || r.nodes+len(keep) > maxReductionNodes {
		r.out, r.nodes = map[string]reduction{}, 0
	}
	if keep != nil {
		r.out[key] = reduction{keep: keep}
		r.nodes += len(keep)
	} else if o, ok := r.out[key]; !ok || o.keep == nil && o.bound < bound {
		r.out[key] = reduction{bound: bound}
	}
	return keep, nil
}

// blockReductionKey names the reduction of a block of the given size for
// a job of m nodes.
func blockReductionKey(m int, size []int) string {
	return string(binary.AppendUvarint([]byte(sizeKey("g", size)), uint64(m)))
}
