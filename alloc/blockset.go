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

// boxes returns disjoint boxes (offsets from the block's start) covering
// the block's first m nodes: whole layers of the highest dimension that
// has some, then recursively the rest of the next layer.
func (b *blockSet) boxes() [][2][]int {
	n := len(b.size)
	var out [][2][]int
	off := make([]int, n)
	t := b.m
	for j := n - 1; j >= 0 && t > 0; j-- {
		layer := 1 // nodes in one layer of dimension j
		for _, p := range b.size[:j] {
			layer *= p
		}
		if q := t / layer; q > 0 {
			size := make([]int, n)
			copy(size, b.size[:j])
			size[j] = q
			for i := j + 1; i < n; i++ {
				size[i] = 1
			}
			out = append(out, [2][]int{slices.Clone(off), size})
			off[j] += q
			t -= q * layer
		}
	}
	return out
}

// transitOffsets returns the kept transit nodes as offsets from the
// block's start, in block order.
func (b *blockSet) transitOffsets() [][]int {
	n := len(b.size)
	total := vol(b.size) - b.m
	var idx []int
	if b.keep == nil {
		for j := 0; j < total; j++ {
			idx = append(idx, j)
		}
	} else {
		idx = b.keep
	}
	out := make([][]int, len(idx))
	for k, j := range idx {
		o := make([]int, n)
		dec(b.m+j, b.size, o)
		out[k] = o
	}
	return out
}

// canonicalKey names a node set with its split: sets whose active nodes
// are the first m nodes (X fastest) of some box are named by the box's
// corner (0 in a dimension they cover whole), the extents of the
// dimensions below the highest one the active nodes span, m, and the
// transit nodes as offsets from the corner; this
// name depends only on the set, so blocks of different sizes, and other
// placements, that give the same set get the same name. Other sets are
// named by their sorted node ids.
func canonicalKey(dims []int, active, transit []int) string {
	if corner, ext, ok := prefixShape(dims, active); ok {
		return prefixKey(dims, corner, ext, len(active), transit, nil)
	}
	return "S" + setID(active, transit)
}

// prefixShape reports whether active is the first len(active) nodes
// (X fastest) of a box, and returns the box's corner and the extents of
// the dimensions below the highest one the nodes span. The corner is
// where each dimension's projection (a cyclic interval) starts, or 0 where
// it covers the whole ring (blockSet.key agrees).
func prefixShape(dims []int, active []int) (corner, ext []int, ok bool) {
	n := len(dims)
	corner = make([]int, n)
	c := make([]int, n)
	for i, d := range dims {
		seen := make([]bool, d)
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
	e := make([]int, n)
	offs := make([]int, 0, n*len(active))
	for _, v := range active {
		dec(v, dims, c)
		for i, d := range dims {
			o := (c[i] - corner[i] + d) % d
			e[i] = max(e[i], o+1)
			offs = append(offs, o)
		}
	}
	k := -1 // highest dimension spanned
	for i := n - 1; i >= 0; i-- {
		if e[i] > 1 {
			k = i
			break
		}
	}
	ext = e[:max(k, 0)]
	m := len(active)
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
			return nil, nil, false
		}
	}
	return corner, ext, true
}

// prefixKey builds canonicalKey's name; transit is given either as node
// ids or as offsets from the corner (tOffs).
func prefixKey(dims, corner, ext []int, m int, transit []int, tOffs [][]int) string {
	b := []byte{'K'}
	for _, x := range corner {
		b = binary.AppendUvarint(b, uint64(x))
	}
	b = binary.AppendUvarint(b, uint64(len(ext)))
	for _, x := range ext {
		b = binary.AppendUvarint(b, uint64(x))
	}
	b = binary.AppendUvarint(b, uint64(m))
	n := len(dims)
	rel := make([]int, 0, len(transit)+len(tOffs))
	c := make([]int, n)
	for _, v := range transit {
		dec(v, dims, c)
		for i, d := range dims {
			c[i] = (c[i] - corner[i] + d) % d
		}
		rel = append(rel, enc(c, dims))
	}
	for _, o := range tOffs {
		rel = append(rel, enc(o, dims))
	}
	slices.Sort(rel)
	for _, x := range rel {
		b = binary.AppendUvarint(b, uint64(x))
	}
	return string(b)
}

// key is canonicalKey for a block's set.
func (b *blockSet) key(dims []int) string {
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
	return prefixKey(dims, b.start, ext, b.m, nil, b.transitOffsets())
}

// nodeCount returns the number of nodes the candidate takes.
func (c *Candidate) nodeCount() int {
	if c.lazy != nil {
		return c.lazy.m + c.nTransit
	}
	return len(c.Active) + len(c.Transit)
}
