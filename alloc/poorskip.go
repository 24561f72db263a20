package alloc

import "github.com/icn-hpc/icn/internal/bitset"

// poorStarts skips, in a scan of one size's starts in node-id order, the
// placements whose rectangle surely holds fewer than m available nodes
// (or, exact, not exactly m) without asking the grid for each. On a
// filling machine nearly every placement the bounded path lists is such
// a one (on Tofu-D's fill, 484 million of 484 million), and a box query
// in five or six dimensions is the cost of listing.
//
// Two facts bound a rectangle's count from its neighbours' along the
// first dimension (a row: the starts that differ only there, with
// consecutive node ids):
//   - every rectangle started on the row at x or after lies inside the
//     row's union from x on, so none holds more available nodes than it;
//   - a step along the row drops one layer of the rectangle and adds
//     another, so the count changes by at most a layer's nodes.
type poorStarts struct {
	g      *grid
	size   []int
	m      int
	exact  bool
	layer  int // nodes of a layer across the first dimension
	last   int // the last start along the first dimension
	row    int // the row (node id / dims[0]) of the last start seen
	to     int // starts of smaller id are surely rejected
	union  []int
	single bool // a row holds one start: nothing to skip
	// mask, when set, holds the starts the scan visits: a row with few
	// of them left is not worth a query of its own.
	mask []uint64
	// skipped, when set, records the starts skipped (a bit per node id).
	skipped bitset.Set
}

// minRowStarts is how many starts a row must have left to be asked for
// as a whole: with fewer, a query per start costs no more.
const minRowStarts = 3

func newPoorStarts(g *grid, size []int, m int, exact bool) *poorStarts {
	d0 := g.dims[0]
	p := &poorStarts{g: g, size: size, m: m, exact: exact, row: -1,
		layer: vol(size) / size[0], union: make([]int, len(size))}
	p.last = startsAlong(d0, g.wrap[0], size[0]) - 1
	p.single = p.last == 0
	copy(p.union, size)
	return p
}

// skip reports whether the placement at start st (node id v) surely
// holds fewer than m available nodes (exact: not exactly m). The first
// start met on a row asks once for the row's union from there on.
func (p *poorStarts) skip(v int, st []int) bool {
	if p.single {
		return false
	}
	if v < p.to {
		return true
	}
	d0 := p.g.dims[0]
	if r := v / d0; r != p.row {
		p.row = r
		x := st[0]
		left := p.last - x + 1
		if p.mask != nil {
			left = bitset.Set(p.mask).CountRange(v, v+left)
		}
		if left < minRowStarts {
			return false // their own queries decide
		}
		n := p.last - x + p.size[0]
		if p.g.wrap[0] {
			n = min(n, d0)
		}
		p.union[0] = n
		if vol(p.union)-p.g.unavailable(st, p.union) < p.m {
			p.to = (r + 1) * d0
			if p.skipped != nil {
				p.skipped.AddRange(v, p.to)
			}
			return true
		}
	}
	return false
}

// counted records that the rectangle at start st (node id v) holds
// avail available nodes: the starts after it on its row that cannot
// reach m (exact: m exactly) in as few steps are skipped.
func (p *poorStarts) counted(v int, st []int, avail int) {
	gap := p.m - avail
	if p.exact && gap < 0 {
		gap = -gap
	}
	if gap <= 0 || p.single {
		return
	}
	// Starts v+1 … v+k−1 are within k−1 layers of avail, short of m.
	k := (gap + p.layer - 1) / p.layer
	rowEnd := v - st[0] + p.last + 1
	if to := min(v+k, rowEnd); to > p.to {
		if p.skipped != nil {
			p.skipped.AddRange(max(v+1, p.to), to)
		}
		p.to = to
	}
}
