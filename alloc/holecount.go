package alloc

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
