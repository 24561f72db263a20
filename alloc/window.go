package alloc

// windowSums counts unavailable nodes in every box of one size at once:
// sliding sums along each dimension in turn, O(N·n) per size against
// O(N·2^n) for N prefix-sum queries. Not safe for concurrent use.
type windowSums struct {
	dims     []int
	wrap     []bool
	stride   []int
	busy     []int32 // 1 where the node is unavailable
	buf, out []int32
	run      []int32 // the sums of the lines being slid
}

func newWindowSums(s *State) *windowSums {
	n := len(s.dims)
	ws := &windowSums{dims: s.dims, wrap: s.wrap, stride: make([]int, n),
		busy: make([]int32, s.N()), buf: make([]int32, s.N()), out: make([]int32, s.N())}
	p := 1
	for i, d := range s.dims {
		ws.stride[i] = p
		p *= d
	}
	for v := range ws.busy {
		if !s.Available(v) {
			ws.busy[v] = 1
		}
	}
	return ws
}

// sums returns, by node id of the start, the unavailable nodes of the box
// of the given size at every start (valid until the next call; starts
// that are not placements of the size hold meaningless sums).
func (ws *windowSums) sums(size []int) []int32 {
	src := ws.busy
	next, spare := ws.out, ws.buf
	for i, d := range ws.dims {
		w := size[i]
		if w == 1 {
			continue
		}
		dst := next
		st := ws.stride[i]
		block := st * d
		if cap(ws.run) < st {
			ws.run = make([]int32, st)
		}
		run := ws.run[:st]
		// The lines of a block run side by side (st of them, one per
		// offset): each position x of all of them at once, so the
		// inner loops read and write memory in order.
		for base := 0; base < len(src); base += block {
			clear(run)
			for k := 0; k < w; k++ {
				row := src[base+k*st : base+(k+1)*st]
				for off, b := range row {
					run[off] += b
				}
			}
			if w == d {
				for x := 0; x < d; x++ {
					copy(dst[base+x*st:base+(x+1)*st], run)
				}
				continue
			}
			for x := 0; x < d; x++ {
				// Slide: drop x, add x+w (around the ring; on a mesh
				// the starts past d−w are not placements).
				y := x + w
				if y >= d {
					y -= d
				}
				out := dst[base+x*st : base+(x+1)*st]
				drop := src[base+x*st : base+(x+1)*st]
				add := src[base+y*st : base+(y+1)*st]
				for off := range out {
					out[off] = run[off]
					run[off] += add[off] - drop[off]
				}
			}
		}
		src = dst
		next, spare = spare, next
	}
	if &src[0] == &ws.busy[0] {
		copy(ws.out, src)
		return ws.out
	}
	return src
}
