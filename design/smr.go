package design

import (
	"fmt"
	"strconv"

	"github.com/icn-hpc/icn/multiring"
	"github.com/icn-hpc/icn/topology"
)

// Sparse is a multiring with sparse rings (seed §7): N = m(m-1)+1 duplex
// rings of K ports each, subscribers with 2m ports (m duplex rings). Every
// ring is cut into K/m parts of m ports; the j-th parts of all rings form
// the j-th simple multiring SMR(N, m, 1), wired by the projective plane
// B(N, m, 1): port t of part j of ring i (1-based) holds subscriber
// N·j + (i - D_t - 1) mod N + 1 for the plane's difference set
// D = {D_1 < … < D_m}. With D = {0,1} and {0,1,3,9} this is the seed's
// tables 7.1 (K=10, m=2) and 7.2 (K=12, m=4).
type Sparse struct {
	K, M        int
	Rings       int     // N = m(m-1)+1
	Subscribers int     // R = N·K/m
	D           []int   // planar difference set of order m-1
	Table       [][]int // Table[i][p]: 1-based subscriber at port p+1 of ring i+1
}

// NewSparse builds the sparse multiring for K ports per ring and m duplex
// rings per subscriber; m-1 must be 1 or a prime power and m must divide K.
func NewSparse(k, m int) (*Sparse, error) {
	if m < 2 || m > 65 {
		return nil, fmt.Errorf("sparse multiring: m=%d out of range 2..65", m)
	}
	if k < 3 || k > 4096 || k%m != 0 {
		return nil, fmt.Errorf("sparse multiring: K=%d ports per ring must be in 3..4096 and a multiple of m=%d", k, m)
	}
	q := m - 1
	if _, _, ok := PrimePower(q); !ok && q != 1 {
		return nil, fmt.Errorf("sparse multiring needs the projective plane B(%d,%d,1), which has no construction: %d is not a prime power", m*(m-1)+1, m, q)
	}
	d, err := Singer(q)
	if err != nil {
		return nil, err
	}
	n := m*(m-1) + 1
	s := &Sparse{K: k, M: m, Rings: n, Subscribers: n * k / m, D: d}
	for i := 1; i <= n; i++ {
		row := make([]int, k)
		for p := 0; p < k; p++ {
			j, t := p/m, p%m
			row[p] = n*j + ((i-d[t]-1)%n+n)%n + 1
		}
		s.Table = append(s.Table, row)
	}
	return s, nil
}

// RingNet returns the network for capacity analysis (0-based subscribers).
func (s *Sparse) RingNet() *multiring.RingNet {
	rn := &multiring.RingNet{Subscribers: s.Subscribers}
	for _, row := range s.Table {
		r := make([]int, len(row))
		for p, x := range row {
			r[p] = x - 1
		}
		rn.Rings = append(rn.Rings, r)
	}
	return rn
}

// Graph builds the sparse multiring as a topology: subscribers "a1".."aR",
// each duplex ring a cycle of links between consecutive ports (Dim = ring
// index for the first 127 rings, so Dir gives the ring direction).
func (s *Sparse) Graph(name string) (*topology.Graph, error) {
	if int64(s.Rings)*int64(s.K) > MaxGraphLinks {
		return nil, fmt.Errorf("sparse multiring has %d links, more than %d", int64(s.Rings)*int64(s.K), MaxGraphLinks)
	}
	b := topology.NewBuilder(name)
	o := topology.NodeOpts{Level: topology.NoLevel, Group: topology.NoGroup}
	for x := 0; x < s.Subscribers; x++ {
		b.AddNode(topology.Endpoint, "a"+strconv.Itoa(x+1), o)
	}
	for i, row := range s.Table {
		dim := i
		if dim > 127 {
			dim = -1
		}
		for p := range row {
			b.Connect(row[p]-1, row[(p+1)%len(row)]-1, topology.LinkOpts{Dim: dim})
		}
	}
	return b.Build()
}

// SharedRings returns the fewest and most duplex rings any two distinct
// subscribers share (1 and m: subscribers at the same position of
// different parts share all m rings, the others exactly one).
func (s *Sparse) SharedRings() (lo, hi int) {
	on := make([][]int, s.Subscribers)
	for i, row := range s.Table {
		for _, x := range row {
			on[x-1] = append(on[x-1], i)
		}
	}
	lo, hi = 1<<30, 0
	for a := 0; a < s.Subscribers; a++ {
		for b := a + 1; b < s.Subscribers; b++ {
			k := 0
			for _, r := range on[a] {
				for _, t := range on[b] {
					if r == t {
						k++
					}
				}
			}
			lo, hi = min(lo, k), max(hi, k)
		}
	}
	return lo, hi
}
