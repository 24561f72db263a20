package routing

import (
	"fmt"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// MaxDims is the largest number of torus dimensions the package handles.
const MaxDims = 6

// Dir is a torus direction: 2·dim for the positive and 2·dim+1 for the
// negative direction of dimension dim (+X = 0, −X = 1, +Y = 2, …).
type Dir uint8

// Dim returns the dimension of d.
func (d Dir) Dim() int { return int(d >> 1) }

// Neg reports whether d is a negative direction.
func (d Dir) Neg() bool { return d&1 == 1 }

// Opp returns the opposite direction of the same dimension.
func (d Dir) Opp() Dir { return d ^ 1 }

// Plus returns the positive direction of dimension dim.
func Plus(dim int) Dir { return Dir(2 * dim) }

// Minus returns the negative direction of dimension dim.
func Minus(dim int) Dir { return Dir(2*dim + 1) }

// String writes d as "+X", "-Y", … (ASCII minus, as in link names).
func (d Dir) String() string {
	s := "+"
	if d.Neg() {
		s = "-"
	}
	return s + topology.DimName(d.Dim())
}

// ParseDir parses "+X", "-y", "−Z" (Unicode minus accepted) or "+D6".
func ParseDir(s string) (Dir, error) {
	t := strings.TrimSpace(s)
	t = strings.Replace(t, "−", "-", 1)
	if len(t) < 2 || (t[0] != '+' && t[0] != '-') {
		return 0, fmt.Errorf("direction %q: want a sign and a dimension, e.g. +X or -Y", s)
	}
	dim := topology.DimIndex(t[1:])
	if dim < 0 || dim >= MaxDims {
		return 0, fmt.Errorf("direction %q: unknown dimension %q (want X, Y, Z, W, V or U)", s, t[1:])
	}
	if t[0] == '-' {
		return Minus(dim), nil
	}
	return Plus(dim), nil
}

// Order is a direction order: a permutation of the 2n directions of an
// n-dimensional torus, lowest first. Routes under the direction-order rule
// take their directions in non-decreasing order.
type Order []Dir

// DefaultOrder returns +X, +Y, …, −X, −Y, … for n dimensions (seed 001).
func DefaultOrder(n int) Order {
	o := make(Order, 0, 2*n)
	for i := 0; i < n; i++ {
		o = append(o, Plus(i))
	}
	for i := 0; i < n; i++ {
		o = append(o, Minus(i))
	}
	return o
}

// ParseOrder parses a comma-separated direction order for an n-dimensional
// torus, e.g. "+X,+Y,-X,-Y". Every direction must appear exactly once.
func ParseOrder(s string, n int) (Order, error) {
	if n < 1 || n > MaxDims {
		return nil, fmt.Errorf("direction order for %d dimensions: want 1..%d", n, MaxDims)
	}
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' || r == '<' })
	if len(parts) != 2*n {
		return nil, fmt.Errorf("direction order %q lists %d directions; a %d-dimensional torus has %d", s, len(parts), n, 2*n)
	}
	o := make(Order, 0, 2*n)
	seen := make([]bool, 2*MaxDims)
	for _, p := range parts {
		d, err := ParseDir(p)
		if err != nil {
			return nil, err
		}
		if d.Dim() >= n {
			return nil, fmt.Errorf("direction order: %s is not a direction of a %d-dimensional torus", d, n)
		}
		if seen[d] {
			return nil, fmt.Errorf("direction order: %s listed twice", d)
		}
		seen[d] = true
		o = append(o, d)
	}
	return o, nil
}

// String writes the order as "+X,+Y,-X,-Y".
func (o Order) String() string {
	s := make([]string, len(o))
	for i, d := range o {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}

// valid reports whether o is a permutation of the 2n directions.
func (o Order) valid(n int) error {
	if len(o) != 2*n {
		return fmt.Errorf("direction order %s has %d directions; the torus has %d", o, len(o), 2*n)
	}
	seen := make([]bool, 2*n)
	for _, d := range o {
		if int(d) >= 2*n || seen[d] {
			return fmt.Errorf("direction order %s is not a permutation of the %d directions", o, 2*n)
		}
		seen[d] = true
	}
	return nil
}

// ranks returns rank[d] = position of d in o.
func (o Order) ranks() []int8 {
	r := make([]int8, len(o))
	for i, d := range o {
		r[d] = int8(i)
	}
	return r
}

// FormatDirs writes a direction sequence as "+X +X -Y".
func FormatDirs(ds []Dir) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, " ")
}
