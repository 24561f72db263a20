package design

import (
	"fmt"
	"slices"
)

// MaxSingerOrder bounds q for Singer difference sets (N = q²+q+1 ≈ 16.8
// million points at q = 4096).
const MaxSingerOrder = 4096

// Singer returns a planar difference set of N = q²+q+1 residues: q+1
// residues whose differences cover every non-zero residue mod N exactly
// once, for every prime power q (and the degenerate q = 1). Its translates
// D+i are the lines of the projective plane PG(2, q), i.e. the blocks of
// B(N, q+1, 1).
//
// Construction (Singer 1938): take a primitive element X of GF(q³) over
// GF(q) (a root of the lexicographically first primitive cubic); X^i, i mod
// N, runs over the points of PG(2, q), and the points whose X² coordinate
// is zero form a line. Sets with N·(q+1) ≤ 5·10⁷ (q ≤ 367) are normalised to
// the least image under multipliers and translations (so the result does
// not depend on the polynomial: {0,1,3} for q=2, {0,1,3,9} for q=3).
func Singer(q int) ([]int, error) {
	if q == 1 {
		return []int{0, 1}, nil
	}
	if q > MaxSingerOrder {
		return nil, fmt.Errorf("Singer difference set for q=%d: orders above %d are not supported", q, MaxSingerOrder)
	}
	f, err := NewField(q)
	if err != nil {
		return nil, fmt.Errorf("no Singer construction for order q=%d: %v", q, err)
	}
	a, err := primitiveCubic(f)
	if err != nil {
		return nil, err
	}
	n := q*q + q + 1
	d := make([]int, 0, q+1)
	c0, c1, c2 := 1, 0, 0 // X^0
	na0, na1, na2 := f.Neg(a[0]), f.Neg(a[1]), f.Neg(a[2])
	for i := 0; i < n; i++ {
		if c2 == 0 {
			d = append(d, i)
		}
		// multiply by X: X³ = -(a0 + a1 X + a2 X²)
		c0, c1, c2 = f.Mul(na0, c2), f.Add(c0, f.Mul(na1, c2)), f.Add(c1, f.Mul(na2, c2))
	}
	if len(d) != q+1 {
		return nil, fmt.Errorf("Singer construction for q=%d produced %d points instead of %d", q, len(d), q+1)
	}
	if float64(n)*float64(q+1) <= 5e7 {
		d = NormalizeDiffSet(n, d)
	}
	return d, nil
}

// primitiveCubic returns a0, a1, a2 such that X³ + a2X² + a1X + a0 is
// primitive over GF(q): X has multiplicative order q³-1 modulo it.
func primitiveCubic(f *Field) ([3]int, error) {
	q := f.Q
	order := q*q*q - 1
	fs := primeFactors(order)
	for a2 := 0; a2 < q; a2++ {
		for a1 := 0; a1 < q; a1++ {
			for a0 := 1; a0 < q; a0++ {
				a := [3]int{a0, a1, a2}
				ok := true
				for _, l := range fs {
					if isOne(polyPowX(f, a, order/l)) {
						ok = false
						break
					}
				}
				if ok && isOne(polyPowX(f, a, order)) {
					return a, nil
				}
			}
		}
	}
	return [3]int{}, fmt.Errorf("GF(%d³): no primitive cubic found", q)
}

func isOne(v [3]int) bool { return v[0] == 1 && v[1] == 0 && v[2] == 0 }

// polyMul multiplies u·v modulo X³ + a2X² + a1X + a0.
func polyMul(f *Field, a [3]int, u, v [3]int) [3]int {
	var t [5]int
	for i := 0; i < 3; i++ {
		if u[i] == 0 {
			continue
		}
		for j := 0; j < 3; j++ {
			t[i+j] = f.Add(t[i+j], f.Mul(u[i], v[j]))
		}
	}
	for deg := 4; deg >= 3; deg-- {
		c := t[deg]
		if c == 0 {
			continue
		}
		t[deg] = 0
		// X^deg = X^(deg-3)·X³ = -X^(deg-3)(a0 + a1X + a2X²)
		for i := 0; i < 3; i++ {
			t[deg-3+i] = f.Sub(t[deg-3+i], f.Mul(c, a[i]))
		}
	}
	return [3]int{t[0], t[1], t[2]}
}

func polyPowX(f *Field, a [3]int, e int) [3]int {
	r := [3]int{1, 0, 0}
	b := [3]int{0, 1, 0}
	for e > 0 {
		if e&1 == 1 {
			r = polyMul(f, a, r, b)
		}
		b = polyMul(f, a, b, b)
		e >>= 1
	}
	return r
}

// NormalizeDiffSet returns the lexicographically least sorted set among
// t·(D - d) mod n over units t and elements d of D. Isomorphic cyclic
// designs have equal normal forms when their difference sets are related
// by a multiplier and a translation. When 1 is a difference of D the least
// image starts 0, 1, so only the translations d with d + t⁻¹ in D are tried.
func NormalizeDiffSet(n int, d []int) []int {
	best := slices.Clone(d)
	slices.Sort(best)
	img := make([]int, len(d))
	in := make([]bool, n)
	for _, x := range d {
		in[((x%n)+n)%n] = true
	}
	try := func(t, d0 int) {
		for i, x := range d {
			img[i] = int(int64(t) * int64(((x-d0)%n+n)%n) % int64(n))
		}
		slices.Sort(img)
		if slices.Compare(img, best) < 0 {
			copy(best, img)
		}
	}
	for t := 1; t < n; t++ {
		u, ok := invMod(t, n)
		if !ok {
			continue
		}
		found := false
		for _, d0 := range d {
			if in[(d0+u)%n] {
				found = true
				try(t, d0)
			}
		}
		if !found {
			for _, d0 := range d {
				try(t, d0)
			}
		}
	}
	return best
}

// invMod returns t⁻¹ mod n if gcd(t, n) = 1.
func invMod(t, n int) (int, bool) {
	a, b := t, n
	x0, x1 := 1, 0
	for b != 0 {
		q := a / b
		a, b = b, a-q*b
		x0, x1 = x1, x0-q*x1
	}
	if a != 1 {
		return 0, false
	}
	return ((x0 % n) + n) % n, true
}
