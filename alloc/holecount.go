package alloc

import "math/bits"

// corners is the grid's box query for one rectangle size, prepared once:
// the offsets of the 2^n corners of the prefix-sum array relative to the
// start's index, those added and those subtracted (in two lists, so that
// a query has no branch per corner).
type corners struct {
	size        []int // the size prepared for (identity of the decision's slice)
	plus, minus []int
}

// prepare fills c for size on grid g.
func (c *corners) prepare(g *grid, size []int) {
	n := len(g.dims)
	c.size = size
	c.plus, c.minus = c.plus[:0], c.minus[:0]
	for mask := 0; mask < 1<<n; mask++ {
		off := 0
		for i := 0; i < n; i++ {
			if mask>>i&1 == 1 {
				off += size[i] * g.stride[i]
			}
		}
		if (n-bits.OnesCount(uint(mask)))&1 == 1 {
			c.minus = append(c.minus, off)
		} else {
			c.plus = append(c.plus, off)
		}
	}
}

// holes counts the unavailable nodes of the rectangle of the prepared
// size at start (as grid.unavailable does).
func (c *corners) holes(g *grid, start []int) int {
	base := 0
	for i, x := range start {
		base += x * g.stride[i]
	}
	pre := g.pre[base:]
	sum := int32(0)
	for _, off := range c.plus {
		sum += pre[off]
	}
	for _, off := range c.minus {
		sum -= pre[off]
	}
	return int(sum)
}

// holesAt is g.unavailable(st, size) for the selector's grid or another
// grid of the same torus (same strides), with the corners of size kept in
// the worker's scratch (a worker takes the placements of one size in a
// row).
func (d *decision) holesAt(w int, g *grid, size, st []int) int {
	c := &d.work[w].corners
	if len(c.size) == 0 || &c.size[0] != &size[0] {
		c.prepare(g, size)
	}
	return c.holes(g, st)
}

// rectNodes lists the node ids of the rectangle at start of the given
// size into ws.nodes, in Rect.Nodes' order (X fastest), with the
// coordinates' contributions to the id tabulated per dimension.
func (ws *workerScratch) rectNodes(dims, start, size []int) []int {
	n := len(dims)
	if len(ws.contrib) != n {
		ws.contrib = make([][]int, n)
		ws.roff = make([]int, n)
	}
	stride := 1
	for i, d := range dims {
		c := ws.contrib[i][:0]
		for k := 0; k < size[i]; k++ {
			c = append(c, (start[i]+k)%d*stride)
		}
		ws.contrib[i] = c
		stride *= d
	}
	out := ws.nodes[:0]
	off := ws.roff
	clear(off)
	for {
		base := 0
		for i := 1; i < n; i++ {
			base += ws.contrib[i][off[i]]
		}
		for _, x := range ws.contrib[0] {
			out = append(out, base+x)
		}
		i := 1
		for ; i < n; i++ {
			if off[i]++; off[i] < size[i] {
				break
			}
			off[i] = 0
		}
		if i >= n {
			ws.nodes = out
			return out
		}
	}
}
