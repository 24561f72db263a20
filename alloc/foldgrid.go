package alloc

import "github.com/icn-hpc/icn/internal/par"

// foldGrid is the grid with its trailing short dimensions folded: for
// every placement of a box along those (its start and size there, a
// combination), the prefix sums over the leading dimensions of the
// unavailable nodes in that slab. A query then reads the corners of the
// leading dimensions only: 8 entries for Tofu-D's six dimensions (three
// of 2, 3 and 2 nodes folded) instead of 64. The queries of the bounded path
// and the seed search on a filling machine, hundreds of millions of
// them, are what it is for; its entries come from the grid's own.
type foldGrid struct {
	g      *grid
	sub    int     // entries per combination (the prefix array of the first foldKept dimensions)
	combo  [][]int // per folded dimension j, combo[j−foldKept][start·d+size−1]: its index (−1: no such box), times the stride of j's combinations
	combos int
	pre    []int32 // combos × sub
}

// foldKept is how many leading dimensions a folded grid keeps, and
// maxFoldSide the longest dimension folded.
const (
	foldKept    = 3
	maxFoldSide = 3
)

// foldable reports whether a grid of these dimensions folds: past the
// first three, at least three dimensions of at most maxFoldSide nodes.
// Folding fewer, or keeping four, did not pay: Sequoia's queries took
// as long folded to three or four dimensions as in five.
func foldable(dims []int) bool {
	if len(dims) < 2*foldKept {
		return false
	}
	for _, d := range dims[foldKept:] {
		if d > maxFoldSide {
			return false
		}
	}
	return true
}

// buildFold makes the grid answer queries from its folded form, when
// its dimensions fold; it must be called again after fill. The answers
// are the same either way (TestFoldGridMatches).
func (g *grid) buildFold(workers int) {
	if !foldable(g.dims) || g.fold.Load() != nil {
		return
	}
	f := g.folded
	if f == nil {
		f = newFoldGrid(g)
		g.folded = f
	}
	f.compute(workers)
	g.fold.Store(f)
}

func newFoldGrid(g *grid) *foldGrid {
	n := len(g.dims)
	f := &foldGrid{g: g, sub: g.stride[foldKept], combos: 1}
	for j := foldKept; j < n; j++ {
		d := g.dims[j]
		idx := make([]int, d*d)
		k := 0
		for st := range d {
			for a := 1; a <= d; a++ {
				idx[st*d+a-1] = -1
				if g.wrap[j] || st+a <= d {
					idx[st*d+a-1] = k
					k++
				}
			}
		}
		for i, c := range idx {
			if c >= 0 {
				idx[i] = c * f.combos
			}
		}
		f.combo = append(f.combo, idx)
		f.combos *= k
	}
	f.pre = make([]int32, f.combos*f.sub)
	return f
}

// compute fills the folded sums from the grid's: each combination's
// slab is the inclusion–exclusion of the grid's prefix sums at its ends
// along the folded dimensions.
func (f *foldGrid) compute(workers int) {
	g := f.g
	n := len(g.dims)
	// the combinations' boxes along the folded dimensions, in index order
	type slab struct {
		offs  []int // offsets of the corners in the grid's array
		signs []int32
	}
	slabs := make([]slab, f.combos)
	var walk func(j, at int, offs []int, signs []int32)
	walk = func(j, at int, offs []int, signs []int32) {
		if j == n {
			slabs[at] = slab{offs, signs}
			return
		}
		d, s := g.dims[j], g.stride[j]
		for st := range d {
			for a := 1; a <= d; a++ {
				c := f.combo[j-foldKept][st*d+a-1]
				if c < 0 {
					continue
				}
				var o2 []int
				var s2 []int32
				for k, o := range offs {
					o2 = append(o2, o+(st+a)*s, o+st*s)
					s2 = append(s2, signs[k], -signs[k])
				}
				walk(j+1, at+c, o2, s2)
			}
		}
	}
	walk(foldKept, 0, []int{0}, []int32{1})
	par.For(f.combos, workers, func(_, c int) {
		dst := f.pre[c*f.sub : (c+1)*f.sub]
		clear(dst)
		for k, o := range slabs[c].offs {
			src, sign := g.pre[o:o+f.sub], slabs[c].signs[k]
			for i := range dst {
				dst[i] += sign * src[i]
			}
		}
	})
}

// unavailable is grid.unavailable from the folded sums (a start may be
// on a ring's second turn, as the grid's array allows).
func (f *foldGrid) unavailable(start, size []int) int {
	g := f.g
	c := 0
	for j := foldKept; j < len(g.dims); j++ {
		d, st := g.dims[j], start[j]
		if st >= d {
			st -= d // a start on the ring's second turn
		}
		c += f.combo[j-foldKept][st*d+size[j]-1]
	}
	s0, s1, s2 := g.stride[0], g.stride[1], g.stride[2]
	b := c*f.sub + start[0]*s0 + start[1]*s1 + start[2]*s2
	f0, f1, f2 := size[0]*s0, size[1]*s1, size[2]*s2
	return int(corners3(f.pre, b, f0, f1, f2))
}
