package alloc

// boxScratch is one worker's space for boxCovers.
type boxScratch struct {
	mark    []uint32 // == pass when the node is in the set
	pass    uint32
	present [][]bool // per dimension, coordinates used by active nodes
	lo, n   []int    // the box: per dimension its first coordinate and length
	c       []int
	coords  []int32 // coords[v·n+i]: coordinate i of node v
}

// boxCovers is a sufficient condition for reachability under every
// direction-order rule (dor, dirbit and the Angara rules): the smallest
// box (cyclic intervals on rings) holding the active nodes lies inside the
// set and no node of it has a failed link. Then every ordered pair of
// active nodes has the route that takes, in the rule's direction order,
// one direction per dimension straight towards the destination; it never
// leaves the box, so it stays in the set on live links. When it reports
// false the router must be asked.
func (sel *Selector) boxCovers(bs *boxScratch, active, transit []int) bool {
	n := len(sel.dims)
	if len(bs.present) != n {
		bs.present = make([][]bool, n)
		for i, d := range sel.dims {
			bs.present[i] = make([]bool, d)
		}
		bs.lo, bs.n, bs.c = make([]int, n), make([]int, n), make([]int, n)
	}
	for i := range bs.present {
		clear(bs.present[i])
	}
	if nodes := len(sel.faultDirs); len(bs.coords) != nodes*n {
		bs.coords = make([]int32, nodes*n)
		for v := range nodes {
			dec(v, sel.dims, bs.c)
			for i, x := range bs.c {
				bs.coords[v*n+i] = int32(x)
			}
		}
	}
	for _, v := range active {
		for i, x := range bs.coords[v*n : v*n+n] {
			bs.present[i][x] = true
		}
	}
	vol := 1
	for i := range sel.dims {
		bs.lo[i], bs.n[i] = interval(bs.present[i], sel.wrap[i])
		vol *= bs.n[i]
	}
	if vol > len(active)+len(transit) {
		return false
	}
	bs.markSet(len(sel.faultDirs), active, transit)
	return sel.boxInside(bs)
}

// markSet stamps the nodes of active and transit.
func (bs *boxScratch) markSet(nodes int, active, transit []int) {
	if len(bs.mark) != nodes || bs.pass == 1<<32-1 {
		bs.mark, bs.pass = make([]uint32, nodes), 0
	}
	bs.pass++
	for _, l := range [2][]int{active, transit} {
		for _, v := range l {
			bs.mark[v] = bs.pass
		}
	}
}

// boxInside reports whether every node of the box bs.lo, bs.n is marked
// and has no failed link.
func (sel *Selector) boxInside(bs *boxScratch) bool {
	n := len(sel.dims)
	off := bs.c
	clear(off)
	for {
		v := 0
		for i := n - 1; i >= 0; i-- {
			v = v*sel.dims[i] + (bs.lo[i]+off[i])%sel.dims[i]
		}
		if bs.mark[v] != bs.pass || sel.faultDirs[v] != 0 {
			return false
		}
		i := 0
		for ; i < n; i++ {
			if off[i]++; off[i] < bs.n[i] {
				break
			}
			off[i] = 0
		}
		if i == n {
			return true
		}
	}
}

// interval returns the shortest interval (cyclic when wrap) holding every
// used coordinate: its first coordinate and length.
func interval(used []bool, wrap bool) (lo, n int) {
	d := len(used)
	if !wrap {
		first, last := -1, -1
		for x, u := range used {
			if u {
				if first < 0 {
					first = x
				}
				last = x
			}
		}
		return first, last - first + 1
	}
	// The largest cyclic run of unused coordinates; the interval starts
	// right after it.
	bestLen, bestEnd := 0, 0
	run := 0
	for k := 0; k < 2*d; k++ {
		if used[k%d] {
			run = 0
			continue
		}
		run++
		if run > bestLen && run <= d {
			bestLen, bestEnd = run, k
		}
	}
	if bestLen == 0 {
		return 0, d
	}
	return (bestEnd + 1) % d, d - bestLen
}
