package bitset

import "math/bits"

// Set is a bit set. The zero value is an empty set of size 0; use New.
type Set []uint64

// New returns an empty set able to hold 0..n-1.
func New(n int) Set { return make(Set, (n+63)/64) }

// Has reports whether i is in the set. Indices beyond the size are absent.
func (s Set) Has(i int) bool {
	w := i >> 6
	return i >= 0 && w < len(s) && s[w]&(1<<(uint(i)&63)) != 0
}

// Add inserts i; the set must be large enough.
func (s Set) Add(i int) { s[i>>6] |= 1 << (uint(i) & 63) }

// AddRange inserts lo..hi−1; the set must be large enough.
func (s Set) AddRange(lo, hi int) {
	for lo < hi {
		w, b := lo>>6, uint(lo)&63
		n := min(uint(hi-lo), 64-b)
		s[w] |= (^uint64(0) >> (64 - n)) << b
		lo += int(n)
	}
}

// CountRange returns the number of members from lo to hi−1; the set
// must hold hi−1.
func (s Set) CountRange(lo, hi int) int {
	n := 0
	for w := lo >> 6; w<<6 < hi; w++ {
		x := s[w]
		if b := lo - w<<6; b > 0 {
			x &^= 1<<uint(b) - 1
		}
		if e := hi - w<<6; e < 64 {
			x &= 1<<uint(e) - 1
		}
		n += bits.OnesCount64(x)
	}
	return n
}

// Del removes i.
func (s Set) Del(i int) {
	if w := i >> 6; w < len(s) {
		s[w] &^= 1 << (uint(i) & 63)
	}
}

// Count returns the number of members.
func (s Set) Count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// Clone returns an independent copy (nil stays nil).
func (s Set) Clone() Set {
	if s == nil {
		return nil
	}
	return append(Set(nil), s...)
}

// Clear removes every member.
func (s Set) Clear() { clear(s) }

// Each calls f for every member in increasing order.
func (s Set) Each(f func(i int)) {
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			f(w*64 + b)
			word &= word - 1
		}
	}
}

// Members returns the members in increasing order.
func (s Set) Members() []int {
	out := make([]int, 0, s.Count())
	s.Each(func(i int) { out = append(out, i) })
	return out
}
