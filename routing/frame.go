package routing

import "slices"

// The BFS table algorithm breaks ties by the local index of the active
// nodes (the first source, and "the farthest unprocessed node, smallest
// index among equals" of heuristic 1). Numbered by node id, two
// translates of one set that wrap around a ring at different places are
// numbered in different orders and get different tables (other diameter,
// other π_max), although the rule routes them alike. The set is
// therefore numbered in a frame of its own: per dimension the ring is
// read from where the set starts, so that a translate is numbered in the
// same order and gets the same table, route for route.

// setFrame returns, per dimension, where the frame of the set prepared in
// s starts: the coordinate right after the longest cyclic run of
// coordinates its projection on the ring does not use (a connected set's
// projection is one cyclic interval, so the run is unique unless the set
// covers the whole ring). Where the set covers the ring or two runs tie,
// the active nodes' projection decides the same way; where that does not
// decide either, the frame starts at 0. Along a mesh dimension the frame
// starts at the set's smallest coordinate. Each choice is a function of
// the set's projections, so a translate's frame is the translated frame
// except in dimensions decided by 0.
//
// identity reports that every set node's coordinates are at or after the
// start in every dimension: the relative order is then the id order.
func (r *Router) setFrame(s *scratch) (start []int, identity bool) {
	t := r.t
	start = make([]int, t.n)
	identity = true
	var inSet, inAct []bool
	stride := 1
	for i, d := range t.dims {
		inSet = append(inSet[:0], make([]bool, d)...)
		inAct = append(inAct[:0], make([]bool, d)...)
		low := d // smallest coordinate of the set
		for _, v := range s.act {
			c := int(v) / stride % d
			inSet[c], inAct[c] = true, true
			low = min(low, c)
		}
		for _, v := range s.trans {
			c := int(v) / stride % d
			inSet[c] = true
			low = min(low, c)
		}
		st, ok := ringStart(inSet)
		if !ok {
			st, ok = ringStart(inAct)
		}
		if !ok {
			st = 0
		}
		if !t.wrap[i] {
			// a mesh dimension does not wrap: the frame starts at the
			// set's first coordinate, which moves with the set
			st = low
		}
		start[i] = st
		// st is a coordinate of the set (or 0), so st ≤ low means st == low:
		// the ring does not wrap inside the frame.
		if st > low {
			identity = false
		}
		stride *= d
	}
	return start, identity
}

// ringStart returns the coordinate right after the longest cyclic run of
// unused coordinates of a ring (used[c] per coordinate), and false when
// no coordinate is unused, none is used, or two longest runs tie.
func ringStart(used []bool) (int, bool) {
	d := len(used)
	p0 := slices.Index(used, true)
	if p0 < 0 {
		return 0, false
	}
	best, start, tie, run := 0, 0, false, 0
	for k := 1; k <= d; k++ { // ends at p0, closing the run before it
		x := (p0 + k) % d
		if !used[x] {
			run++
			continue
		}
		switch {
		case run > best:
			best, start, tie = run, x, false
		case run == best && run > 0:
			tie = true
		}
		run = 0
	}
	return start, best > 0 && !tie
}

// relativeKey returns node v's id in the frame that starts at start:
// Σ_i ((c_i − start_i) mod d_i) · Π_{j<i} d_j.
func (t *torus) relativeKey(v int, start []int) int {
	key, mul := 0, 1
	for i, d := range t.dims {
		c := v % d
		v /= d
		key += (c - start[i] + d) % d * mul
		mul *= d
	}
	return key
}

// sortRelative sorts nodes by their relative key in the frame at start.
func (t *torus) sortRelative(nodes []int32, start []int) {
	keys := make([]uint64, len(nodes))
	for k, v := range nodes {
		keys[k] = uint64(t.relativeKey(int(v), start))<<32 | uint64(uint32(v))
	}
	slices.Sort(keys)
	for k, x := range keys {
		nodes[k] = int32(uint32(x))
	}
}
