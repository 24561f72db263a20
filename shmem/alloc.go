package shmem

import (
	"fmt"
	"sort"
)

// heapAlloc hands out 64-byte aligned blocks of the local portion, first
// fit, coalescing on free. It is only used under World.collMu.
type heapAlloc struct {
	size int
	free []span // sorted by off, non-adjacent
	used map[int]int
}

type span struct{ off, n int }

func newHeapAlloc(size int) *heapAlloc {
	h := &heapAlloc{size: size, used: map[int]int{}}
	if size > 0 {
		h.free = []span{{0, size}}
	}
	return h
}

func (h *heapAlloc) alloc(n int) (int, error) {
	need := align(n, 64)
	if need == 0 {
		need = 64
	}
	for i, s := range h.free {
		if s.n >= need {
			off := s.off
			if s.n == need {
				h.free = append(h.free[:i], h.free[i+1:]...)
			} else {
				h.free[i] = span{s.off + need, s.n - need}
			}
			h.used[off] = need
			return off, nil
		}
	}
	return 0, fmt.Errorf("shmem: local portion exhausted: %d bytes requested, %d free of %d (set a larger heap)", n, h.freeBytes(), h.size)
}

func (h *heapAlloc) freeBytes() int {
	t := 0
	for _, s := range h.free {
		t += s.n
	}
	return t
}

func (h *heapAlloc) release(off int) {
	n, ok := h.used[off]
	if !ok {
		return
	}
	delete(h.used, off)
	i := sort.Search(len(h.free), func(i int) bool { return h.free[i].off > off })
	h.free = append(h.free, span{})
	copy(h.free[i+1:], h.free[i:])
	h.free[i] = span{off, n}
	// merge with the right and left neighbours
	if i+1 < len(h.free) && h.free[i].off+h.free[i].n == h.free[i+1].off {
		h.free[i].n += h.free[i+1].n
		h.free = append(h.free[:i+1], h.free[i+2:]...)
	}
	if i > 0 && h.free[i-1].off+h.free[i-1].n == h.free[i].off {
		h.free[i-1].n += h.free[i].n
		h.free = append(h.free[:i], h.free[i+1:]...)
	}
}
