package alloc

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// Reachability cache keys are built in the worker's buffers (slot 0 or
// 1), without allocating: the job size, a tag and the set's description.
// The cache copies a key only when it stores an answer.

// keyStart starts key slot with the job size and tag.
func (d *decision) keyStart(w, slot int, tag string) []byte {
	b := binary.AppendUvarint(d.work[w].keys[slot][:0], uint64(d.m))
	return append(b, tag...)
}

// stringKey is the key tag+s.
func (d *decision) stringKey(w, slot int, tag, s string) []byte {
	b := append(d.keyStart(w, slot, tag), s...)
	d.work[w].keys[slot] = b
	return b
}

// nodeKey is the key of a node set given in any order (as nodeKey).
func (d *decision) nodeKey(w, slot int, tag string, nodes []int) []byte {
	b := d.appendSorted(d.keyStart(w, slot, tag), &d.work[w].ids, nodes)
	d.work[w].keys[slot] = b
	return b
}

// setIDKey is the key of active ∪ transit with its split (as appendSetID).
func (d *decision) setIDKey(w, slot int, tag string, active, transit []int) []byte {
	b := d.appendSorted(d.keyStart(w, slot, tag), &d.work[w].ids, active)
	b = append(b, 0xff, 0xff, 0xff, 0xff) // no node id
	b = d.appendSorted(b, &d.work[w].ids, transit)
	d.work[w].keys[slot] = b
	return b
}

// appendSorted appends a description of the node set that does not depend
// on the order of nodes: a bitmap of the machine's nodes when that is
// shorter than the ids (a set of k nodes out of n: n/8 against 4k bytes),
// else the ids, sorted, 4 bytes each. A marker byte says which, so the
// two forms never collide; the cache is emptied when the network changes,
// so n is fixed for every key it holds.
func (d *decision) appendSorted(b []byte, scratch *[]int, nodes []int) []byte {
	return appendSetKey(b, scratch, nodes, d.s.N())
}

// appendSetKey is appendSorted for a machine of n nodes.
func appendSetKey(b []byte, scratch *[]int, nodes []int, n int) []byte {
	if words := (n + 7) / 8; words <= 4*len(nodes) {
		b = append(b, 'm')
		at := len(b)
		b = append(b, make([]byte, words)...)
		bits := b[at:]
		for _, v := range nodes {
			bits[v>>3] |= 1 << (v & 7)
		}
		return b
	}
	b = append(b, 'i')
	if words := (n + 63) / 64; len(nodes) > 64 && len(nodes) >= words/8 {
		// Many ids: sorted through a bitmap of the machine's nodes (a
		// pass over n/64 words instead of a sort of k log k steps).
		bm := *scratch
		if len(bm) < words {
			bm = make([]int, words)
			*scratch = bm
		}
		clear(bm[:words])
		for _, v := range nodes {
			bm[v>>6] |= 1 << (v & 63)
		}
		for w, x := range bm[:words] {
			for u := uint64(x); u != 0; u &= u - 1 {
				v := w*64 + bits.TrailingZeros64(u)
				b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
			}
		}
		return b
	}
	a := append((*scratch)[:0], nodes...)
	slices.Sort(a)
	*scratch = a
	for _, v := range a {
		b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return b
}
