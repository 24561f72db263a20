package alloc

import (
	"math/bits"
	"slices"
)

// fitBits gives, per rectangle size, the starts where a box of that size
// is free, as a bitset over node ids. A box of size S with S_i ≥ 2 placed
// at v is the union of the boxes of size S − e_i at v and at v + e_i (the
// next start along dimension i, around a ring; none past a mesh's
// border), so it is free exactly when both are: each size's bitset is a
// smaller size's shifted along one dimension and ANDed with itself,
// O(N/64) words, where a scan of the starts reads 2^n prefix-sum corners
// at each of N starts. The bitsets of the sizes asked are kept up to
// fitBitsBytes; a size whose smaller size's bitset was dropped is
// recomputed from the nearest kept one.
type fitBits struct {
	dims, stride []int
	wrap         []bool
	words        int
	last         [][]uint64 // per dimension i: the starts with x_i = d_i − 1
	kept         map[int][]uint64
	order        []int    // the indices kept, oldest first
	bytes, limit int      // bytes kept, at most limit (fitBitsBytes)
	down, up     []uint64 // scratch of step
}

// fitBitsBytes bounds the bitsets a fitBits keeps.
const fitBitsBytes = 48 << 20

func newFitBits(s *State, dims []int, wrap []bool) *fitBits {
	n := s.N()
	fb := &fitBits{dims: dims, wrap: wrap, words: (n + 63) / 64, stride: make([]int, len(dims)), kept: map[int][]uint64{}, limit: fitBitsBytes}
	for i, p := 0, 1; i < len(dims); i++ {
		fb.stride[i] = p
		p *= dims[i]
	}
	avail := make([]uint64, fb.words)
	c := make([]int, len(dims))
	fb.last = make([][]uint64, len(dims))
	for i := range dims {
		fb.last[i] = make([]uint64, fb.words)
	}
	for v := 0; v < n; v++ {
		if s.Available(v) {
			avail[v/64] |= 1 << (v % 64)
		}
		dec(v, dims, c)
		for i, d := range dims {
			if c[i] == d-1 {
				fb.last[i][v/64] |= 1 << (v % 64)
			}
		}
	}
	fb.keep(0, avail)
	fb.down, fb.up = make([]uint64, fb.words), make([]uint64, fb.words)
	return fb
}

// keep keeps the bitset of lattice index idx, dropping the oldest kept
// (but the available nodes') when there is no room.
func (fb *fitBits) keep(idx int, b []uint64) {
	size := 8 * len(b)
	for len(fb.order) > 1 && fb.bytes+size > fb.limit {
		old := fb.order[1]
		fb.order = slices.Delete(fb.order, 1, 2)
		fb.bytes -= 8 * len(fb.kept[old])
		delete(fb.kept, old)
	}
	if len(fb.order) > 0 && fb.bytes+size > fb.limit {
		return
	}
	fb.kept[idx] = b
	fb.order = append(fb.order, idx)
	fb.bytes += size
}

// free returns the bitset of the starts where a box of size (lattice
// index idx: the mixed radix of size_i − 1, dimension 0 lowest, which
// weighs as node ids do) is free.
func (fb *fitBits) free(idx int, size []int) []uint64 {
	if b, ok := fb.kept[idx]; ok {
		return b
	}
	return fb.chain(idx, slices.Clone(size))
}

// chain is free on a size of its own, which it changes and restores.
func (fb *fitBits) chain(idx int, size []int) []uint64 {
	if b, ok := fb.kept[idx]; ok {
		return b
	}
	// From a smaller size one step shorter along some dimension: a kept
	// one if any, else the last dimension that can shrink.
	pick := -1
	for i := range size {
		if size[i] > 1 {
			pick = i
			if _, ok := fb.kept[idx-fb.stride[i]]; ok {
				break
			}
		}
	}
	i := pick
	size[i]--
	p := fb.chain(idx-fb.stride[i], size)
	size[i]++
	out := fb.step(p, i)
	fb.keep(idx, out)
	return out
}

// near returns the bitset of size (lattice index idx) when it is kept or
// one step from a kept smaller size's (kept then too); ok false
// otherwise.
func (fb *fitBits) near(idx int, size []int) (b []uint64, ok bool) {
	if b, ok := fb.kept[idx]; ok {
		return b, true
	}
	for i := range size {
		if size[i] > 1 {
			if p, ok := fb.kept[idx-fb.stride[i]]; ok {
				b = fb.step(p, i)
				fb.keep(idx, b)
				return b, true
			}
		}
	}
	return nil, false
}

// step returns p AND p shifted by one start along dimension i.
func (fb *fitBits) step(p []uint64, i int) []uint64 {
	st, d := fb.stride[i], fb.dims[i]
	out := make([]uint64, fb.words)
	shiftDown(fb.down, p, st) // out[v] = p[v+st]
	last := fb.last[i]
	if fb.wrap[i] {
		shiftUp(fb.up, p, (d-1)*st) // out[v] = p[v−(d−1)st] at x_i = d−1
		for w := range out {
			out[w] = p[w] & (fb.down[w]&^last[w] | fb.up[w]&last[w])
		}
		return out
	}
	for w := range out {
		out[w] = p[w] & fb.down[w] &^ last[w]
	}
	return out
}

// shiftDown sets dst[v] = src[v+k] (0 past the end), bit by bit.
func shiftDown(dst, src []uint64, k int) {
	q, r := k/64, uint(k%64)
	n := len(src)
	for w := range dst {
		var x uint64
		if w+q < n {
			x = src[w+q] >> r
		}
		if r != 0 && w+q+1 < n {
			x |= src[w+q+1] << (64 - r)
		}
		dst[w] = x
	}
}

// shiftUp sets dst[v] = src[v−k] (0 below k), bit by bit.
func shiftUp(dst, src []uint64, k int) {
	q, r := k/64, uint(k%64)
	for w := range dst {
		var x uint64
		if w-q >= 0 {
			x = src[w-q] << r
		}
		if r != 0 && w-q-1 >= 0 {
			x |= src[w-q-1] >> (64 - r)
		}
		dst[w] = x
	}
}

// eachPlacement calls f with the node id of every free placement of size
// in the bitset b, in enumeration order (along a whole dimension only the
// start 0 is a placement), until f returns false.
func (fb *fitBits) eachPlacement(b []uint64, size []int, f func(v int) bool) {
	var whole int // a mask of the whole dimensions
	for i, d := range fb.dims {
		if size[i] == d {
			whole |= 1 << i
		}
	}
	c := make([]int, len(fb.dims))
	for w, x := range b {
		for x != 0 {
			v := w*64 + bits.TrailingZeros64(x)
			x &= x - 1
			if whole != 0 {
				dec(v, fb.dims, c)
				ok := true
				for i := range c {
					if whole>>i&1 == 1 && c[i] != 0 {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
			}
			if !f(v) {
				return
			}
		}
	}
}
