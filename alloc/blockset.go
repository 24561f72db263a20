package alloc

import (
	"encoding/binary"
	"slices"
)

// blockSet is a candidate from a block (a rectangle of available nodes
// without a failed link inside) kept without its node lists: the first m
// nodes of the block (X fastest) are active, the others transit, of which
// keep lists the indices kept (nil: all). Blocks are most placements of
// a lightly used machine, so their node lists are only built for the
// candidates that need them (tie-break tables and the choice).
type blockSet struct {
	start, size []int
	m           int
	keep        []int
}

// nodes lists the block's active and kept transit nodes.
func (b *blockSet) nodes(dims []int) (active, transit []int) {
	all := Rect{Start: b.start, Size: b.size}.Nodes(dims, nil)
	active = all[:b.m:b.m]
	if b.keep == nil {
		return active, all[b.m:]
	}
	transit = make([]int, len(b.keep))
	for i, x := range b.keep {
		transit[i] = all[b.m+x]
	}
	return active, transit
}

// forBoxes calls f with disjoint boxes covering the block's first m
// nodes (offsets from the block's start and sizes, written into off and
// size, len(b.size) long): whole layers of the highest dimension that
// has some, then recursively the rest of the next layer.
func (b *blockSet) forBoxes(off, size []int, f func(off, size []int)) {
	n := len(b.size)
	clear(off)
	t := b.m
	for j := n - 1; j >= 0 && t > 0; j-- {
		layer := 1 // nodes in one layer of dimension j
		for _, p := range b.size[:j] {
			layer *= p
		}
		if q := t / layer; q > 0 {
			copy(size, b.size[:j])
			size[j] = q
			for i := j + 1; i < n; i++ {
				size[i] = 1
			}
			f(off, size)
			off[j] += q
			t -= q * layer
		}
	}
}

// forTransit calls f with each kept transit node's offsets from the
// block's start (written into o, len(b.size) long), in block order.
func (b *blockSet) forTransit(o []int, f func(o []int)) {
	if b.keep == nil {
		for j := b.m; j < vol(b.size); j++ {
			dec(j, b.size, o)
			f(o)
		}
		return
	}
	for _, j := range b.keep {
		dec(b.m+j, b.size, o)
		f(o)
	}
}

// keyScratch is reusable space for building set names.
type keyScratch struct {
	corner, ext, c, offs, rel []int
	seen                      []bool
}

// ints returns *buf resized to n zeros.
func (ks *keyScratch) ints(buf *[]int, n int) []int {
	*buf = append((*buf)[:0], make([]int, n)...)
	return *buf
}

// appendCanonicalKey appends to b the name of a node set with its split:
// sets whose active nodes are the first m nodes (X fastest) of some box
// are named by the box's corner (0 in a dimension they cover whole), the
// extents of the dimensions below the highest one the active nodes span,
// m, and the transit nodes as offsets from the corner; this name depends
// only on the set, so blocks of different sizes, and other placements,
// that give the same set get the same name. Other sets are named by their
// sorted node ids (appendSetID).
func appendCanonicalKey(b []byte, dims []int, active, transit []int, ks *keyScratch) []byte {
	if corner, ext, ok := prefixShape(dims, active, ks); ok {
		ks.rel = ks.rel[:0]
		return appendPrefixKey(b, dims, corner, ext, len(active), transit, ks)
	}
	return appendSetID(append(b, 'S'), active, transit, &ks.rel)
}

// prefixShape reports whether active is the first len(active) nodes
// (X fastest) of a box, and returns the box's corner and the extents of
// the dimensions below the highest one the nodes span (both in ks's
// space). The corner is where each dimension's projection (a cyclic
// interval) starts, or 0 where it covers the whole ring (blockSet.appendKey
// agrees).
func prefixShape(dims []int, active []int, ks *keyScratch) (corner, ext []int, ok bool) {
	n := len(dims)
	corner = ks.ints(&ks.corner, n)
	c := ks.ints(&ks.c, n)
	for i, d := range dims {
		ks.seen = append(ks.seen[:0], make([]bool, d)...)
		seen := ks.seen
		for _, v := range active {
			dec(v, dims, c)
			seen[c[i]] = true
		}
		starts, all := 0, true
		for x := 0; x < d; x++ {
			all = all && seen[x]
			if seen[x] && !seen[(x+d-1)%d] {
				corner[i] = x
				starts++
			}
		}
		if all {
			// The whole ring: only a box taking the whole dimension can
			// give it, and such boxes start at 0.
			corner[i], starts = 0, 1
		}
		if d > 1 && starts != 1 {
			return nil, nil, false // not an interval
		}
	}
	e := ks.ints(&ks.ext, n)
	offs := ks.offs[:0]
	for _, v := range active {
		dec(v, dims, c)
		for i, d := range dims {
			o := (c[i] - corner[i] + d) % d
			e[i] = max(e[i], o+1)
			offs = append(offs, o)
		}
	}
	ks.offs = offs
	k := -1 // highest dimension spanned
	for i := n - 1; i >= 0; i-- {
		if e[i] > 1 {
			k = i
			break
		}
	}
	ext = e[:max(k, 0)]
	return corner, ext, prefixIndicesBelow(offs, ext, k, n, len(active))
}

// prefixIndicesBelow reports whether every node (offsets offs, n per node)
// has an index below m in the box of extents ext (dimensions 0..k).
func prefixIndicesBelow(offs, ext []int, k, n, m int) bool {
	for j := 0; j < len(offs); j += n {
		idx := 0
		for i := max(k, 0); i >= 0; i-- {
			w := 1
			if i < len(ext) {
				w = ext[i]
			}
			idx = idx*w + offs[j+i]
		}
		if idx >= m {
			return false
		}
	}
	return true
}

// appendPrefixKey appends appendCanonicalKey's name of a prefix set to b; the
// transit nodes are ks.rel (offsets from the corner, encoded in dims'
// radix) and the node ids transit.
func appendPrefixKey(b []byte, dims, corner, ext []int, m int, transit []int, ks *keyScratch) []byte {
	b = append(b, 'K')
	for _, x := range corner {
		b = binary.AppendUvarint(b, uint64(x))
	}
	b = binary.AppendUvarint(b, uint64(len(ext)))
	for _, x := range ext {
		b = binary.AppendUvarint(b, uint64(x))
	}
	b = binary.AppendUvarint(b, uint64(m))
	rel := ks.rel
	c := ks.ints(&ks.c, len(dims))
	for _, v := range transit {
		dec(v, dims, c)
		for i, d := range dims {
			c[i] = (c[i] - corner[i] + d) % d
		}
		rel = append(rel, enc(c, dims))
	}
	ks.rel = rel
	slices.Sort(rel)
	for _, x := range rel {
		b = binary.AppendUvarint(b, uint64(x))
	}
	return b
}

// appendKey appends appendCanonicalKey's name of a block's set to buf.
func (b *blockSet) appendKey(buf []byte, dims []int, ks *keyScratch) []byte {
	// The first m nodes span dimensions 0..k, k the first with
	// size[0]·…·size[k] ≥ m.
	k, prefix := 0, 1
	for ; k < len(b.size); k++ {
		if prefix*b.size[k] >= b.m {
			break
		}
		prefix *= b.size[k]
	}
	ext := b.size[:k]
	if b.m == 1 {
		ext = nil
	}
	// A dimension the active nodes cover whole is one the block takes
	// whole, so it starts at 0, as prefixShape takes it.
	rel := ks.rel[:0]
	b.forTransit(ks.ints(&ks.offs, len(dims)), func(o []int) { rel = append(rel, enc(o, dims)) })
	ks.rel = rel
	return appendPrefixKey(buf, dims, b.start, ext, b.m, nil, ks)
}

// nodeCount returns the number of nodes the candidate takes.
func (c *candidate) nodeCount() int {
	if c.lazy != nil {
		return c.lazy.m + c.nTransit
	}
	return len(c.Active) + len(c.Transit)
}
