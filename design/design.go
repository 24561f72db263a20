package design

import (
	"fmt"
	"slices"
)

// Design is a symmetric block design B(N, m, λ): N elements 0..N-1 and N
// blocks of m elements each, every element in m blocks and every pair of
// elements in exactly λ blocks (N = m(m-1)/λ + 1). In a distributed full
// switch an element is a subscriber with m ports and a block an m×m switch.
//
// Cyclic designs keep only their difference set D (block i is D+i mod N),
// so a plane of order 1024 (10⁶ blocks) costs a few kilobytes; Block
// computes blocks on demand.
type Design struct {
	N, M, Lambda int
	Construction string // how it was built
	DiffSet      []int  // cyclic designs: block i = D + i (mod N)
	// Target, if set, replaces the constant λ for a cyclic quasi-design:
	// elements x and y share Target[(y-x) mod N] blocks (the seed's
	// DFS(39,7,1|2), where neighbours i±1, i±2 share 2 switches).
	Target []int
	XorSet []int // designs over Z_2^k: block i = D xor i
	blocks [][]int
}

// Block returns block i (0-based elements, ascending).
func (d *Design) Block(i int) []int {
	switch {
	case d.blocks != nil:
		return d.blocks[i]
	case d.DiffSet != nil:
		b := make([]int, len(d.DiffSet))
		for j, x := range d.DiffSet {
			b[j] = (x + i) % d.N
		}
		slices.Sort(b)
		return b
	default:
		b := make([]int, len(d.XorSet))
		for j, x := range d.XorSet {
			b[j] = x ^ i
		}
		slices.Sort(b)
		return b
	}
}

// MaxIncidences bounds Blocks: the number of (element, block) pairs that is
// materialised.
const MaxIncidences = 50_000_000

// Blocks returns all blocks; it fails for designs with more than
// MaxIncidences incidences (use Block or the difference set).
func (d *Design) Blocks() ([][]int, error) {
	if d.blocks != nil {
		return d.blocks, nil
	}
	if int64(d.N)*int64(d.M) > MaxIncidences {
		return nil, fmt.Errorf("B(%d,%d,%d) has %d incidences, more than %d to list; use its difference set", d.N, d.M, d.Lambda, int64(d.N)*int64(d.M), MaxIncidences)
	}
	out := make([][]int, d.N)
	for i := range out {
		out[i] = d.Block(i)
	}
	return out, nil
}

// PairLambda returns the number of blocks elements x ≠ y share by
// construction: λ, or the quasi-design's target.
func (d *Design) PairLambda(x, y int) int {
	if d.Target != nil {
		return d.Target[((y-x)%d.N+d.N)%d.N]
	}
	return d.Lambda
}

// Name is "B(N,m,λ)" or "B(N,m,λ|λ+1)" for a quasi-design.
func (d *Design) Name() string {
	if d.Target != nil {
		return fmt.Sprintf("B(%d,%d,%d|%d)", d.N, d.M, d.Lambda, d.Lambda+1)
	}
	return fmt.Sprintf("B(%d,%d,%d)", d.N, d.M, d.Lambda)
}

// FromBlocks wraps an explicit block table (0-based elements).
func FromBlocks(n, m, lambda int, blocks [][]int, how string) *Design {
	bs := make([][]int, len(blocks))
	for i, b := range blocks {
		bs[i] = slices.Clone(b)
		slices.Sort(bs[i])
	}
	return &Design{N: n, M: m, Lambda: lambda, Construction: how, blocks: bs}
}

// FromDiffSet wraps a cyclic difference set mod n with multiplicity lambda.
func FromDiffSet(n, lambda int, d []int, how string) *Design {
	return &Design{N: n, M: len(d), Lambda: lambda, Construction: how, DiffSet: slices.Clone(d)}
}

// Complement returns the complementary design B(N, N-m, N-2m+λ).
func (d *Design) Complement() (*Design, error) {
	bs, err := d.Blocks()
	if err != nil {
		return nil, err
	}
	out := make([][]int, len(bs))
	for i, b := range bs {
		in := make([]bool, d.N)
		for _, x := range b {
			in[x] = true
		}
		for x := 0; x < d.N; x++ {
			if !in[x] {
				out[i] = append(out[i], x)
			}
		}
	}
	return FromBlocks(d.N, d.N-d.M, d.N-2*d.M+d.Lambda, out, "complement of "+d.Construction), nil
}

// SymmetricOrder is the number of elements N = m(m-1)/λ + 1 of a
// symmetric design with blocks of m and index λ, or why there is none
// (m < 2, or λ does not divide m(m-1)).
func SymmetricOrder(m, lambda int) (int, error) {
	if m < 2 || lambda < 1 || m*(m-1)%lambda != 0 {
		return 0, fmt.Errorf("m=%d, λ=%d: λ must divide m(m-1) for N = m(m-1)/λ + 1 to be whole", m, lambda)
	}
	return m*(m-1)/lambda + 1, nil
}

// CheckParams checks N = m(m-1)/λ + 1 and the ranges of the parameters.
func CheckParams(n, m, lambda int) error {
	if m < 2 || lambda < 1 || n < 2 {
		return fmt.Errorf("B(%d,%d,%d): need N ≥ 2, m ≥ 2, λ ≥ 1", n, m, lambda)
	}
	if m > n {
		return fmt.Errorf("B(%d,%d,%d): blocks of m=%d cannot be larger than the N=%d elements", n, m, lambda, m, n)
	}
	if int64(lambda)*int64(n-1) != int64(m)*int64(m-1) {
		if m*(m-1)%lambda == 0 {
			return fmt.Errorf("B(%d,%d,%d) cannot exist: a symmetric design needs N = m(m-1)/λ + 1 = %d", n, m, lambda, m*(m-1)/lambda+1)
		}
		return fmt.Errorf("B(%d,%d,%d) cannot exist: a symmetric design needs N = m(m-1)/λ + 1, and λ=%d does not divide m(m-1)=%d", n, m, lambda, lambda, m*(m-1))
	}
	return nil
}
