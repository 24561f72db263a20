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
// graph or failures) and when it holds maxReductions outcomes.
type reductionMemo struct {
	mu  sync.Mutex
	out map[string]reduction
}

// reduction is one remembered outcome: keep (non-nil) is the full
// outcome; otherwise more than bound nodes must stay.
type reduction struct {
	keep  []int
	bound int
}

const maxReductions = 4096

func (r *reductionMemo) reset() {
	r.mu.Lock()
	r.out = nil
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
	if r.out == nil || len(r.out) >= maxReductions {
		r.out = map[string]reduction{}
	}
	if keep != nil {
		r.out[key] = reduction{keep: keep}
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
