package design

import (
	"fmt"
)

// MaxFieldOrder bounds the order q of the finite fields built here.
const MaxFieldOrder = 1 << 16

// Field is the finite field GF(q), q = p^k. Elements are 0..q-1: the base-p
// digits of an element are the coefficients (constant first) of a
// polynomial over GF(p) modulo the field's primitive polynomial, so 0 is
// zero, 1 is one and p is the generator x.
type Field struct {
	Q, P, K int
	Poly    []int    // monic primitive polynomial of degree K over GF(p), constant first (nil for K=1)
	exp     []uint16 // exp[i] = x^i for i in [0, 2(q-1))
	log     []int32  // log[a] for a != 0
}

// PrimePower returns p, k with q = p^k, or ok=false.
func PrimePower(q int) (p, k int, ok bool) {
	if q < 2 {
		return 0, 0, false
	}
	for p = 2; p*p <= q; p++ {
		if q%p == 0 {
			break
		}
	}
	if p*p > q {
		p = q
	}
	for x := q; x > 1; x /= p {
		if x%p != 0 {
			return 0, 0, false
		}
		k++
	}
	return p, k, true
}

// NewField builds GF(q) for a prime power q ≤ MaxFieldOrder. The primitive
// polynomial is the first in lexicographic order of coefficients, so the
// field is always the same.
func NewField(q int) (*Field, error) {
	if q > MaxFieldOrder {
		return nil, fmt.Errorf("GF(%d): order above %d is not supported", q, MaxFieldOrder)
	}
	p, k, ok := PrimePower(q)
	if !ok {
		return nil, fmt.Errorf("GF(%d) does not exist: %d is not a prime power", q, q)
	}
	f := &Field{Q: q, P: p, K: k}
	f.exp = make([]uint16, 2*(q-1)+1)
	f.log = make([]int32, q)
	if k == 1 {
		g := primitiveRoot(p)
		x := 1
		for i := 0; i < 2*(q-1)+1; i++ {
			f.exp[i] = uint16(x)
			x = x * g % p
		}
	} else {
		found := false
		coef := make([]int, k) // c_0..c_{k-1} of x^k + ... ; enumerate lexicographically
		for !found {
			if coef[0] != 0 && f.tryPrimitive(coef) {
				found = true
				break
			}
			i := 0
			for i < k {
				coef[i]++
				if coef[i] < p {
					break
				}
				coef[i] = 0
				i++
			}
			if i == k {
				return nil, fmt.Errorf("GF(%d): no primitive polynomial found", q)
			}
		}
		f.Poly = append(append([]int{}, coef...), 1)
	}
	for i := range f.log {
		f.log[i] = -1
	}
	for i := 0; i < q-1; i++ {
		f.log[f.exp[i]] = int32(i)
	}
	return f, nil
}

// tryPrimitive fills exp for the polynomial x^k + Σ coef_i x^i and reports
// whether x has order q-1 (then the polynomial is primitive).
func (f *Field) tryPrimitive(coef []int) bool {
	p, k, q := f.P, f.K, f.Q
	cur := make([]int, k) // digits of x^i
	cur[0] = 1
	toInt := func(d []int) int {
		v := 0
		for i := k - 1; i >= 0; i-- {
			v = v*p + d[i]
		}
		return v
	}
	for i := 0; i < 2*(q-1)+1; i++ {
		v := toInt(cur)
		if i > 0 && i < q-1 && v == 1 {
			return false // order too small
		}
		f.exp[i] = uint16(v)
		// multiply by x: shift, then reduce x^k = -Σ coef_i x^i
		top := cur[k-1]
		for j := k - 1; j > 0; j-- {
			cur[j] = cur[j-1]
		}
		cur[0] = 0
		if top != 0 {
			for j := 0; j < k; j++ {
				cur[j] = ((cur[j]-top*coef[j])%p + p) % p
			}
		}
	}
	return f.exp[q-1] == 1
}

func primitiveRoot(p int) int {
	if p == 2 {
		return 1
	}
	fs := primeFactors(p - 1)
	for g := 2; ; g++ {
		ok := true
		for _, l := range fs {
			if powMod(g, (p-1)/l, p) == 1 {
				ok = false
				break
			}
		}
		if ok {
			return g
		}
	}
}

// Add returns a+b.
func (f *Field) Add(a, b int) int {
	switch {
	case f.P == 2:
		return a ^ b
	case f.K == 1:
		s := a + b
		if s >= f.P {
			s -= f.P
		}
		return s
	}
	r, mul := 0, 1
	for i := 0; i < f.K; i++ {
		d := (a%f.P + b%f.P) % f.P
		r += d * mul
		mul *= f.P
		a /= f.P
		b /= f.P
	}
	return r
}

// Neg returns -a.
func (f *Field) Neg(a int) int {
	switch {
	case f.P == 2:
		return a
	case f.K == 1:
		if a == 0 {
			return 0
		}
		return f.P - a
	}
	r, mul := 0, 1
	for i := 0; i < f.K; i++ {
		d := (f.P - a%f.P) % f.P
		r += d * mul
		mul *= f.P
		a /= f.P
	}
	return r
}

// Sub returns a-b.
func (f *Field) Sub(a, b int) int { return f.Add(a, f.Neg(b)) }

// Mul returns a·b.
func (f *Field) Mul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	return int(f.exp[f.log[a]+f.log[b]])
}

// Inv returns 1/a (a != 0).
func (f *Field) Inv(a int) int {
	if a == 0 {
		panic("design: inverse of zero")
	}
	l := f.log[a]
	if l == 0 {
		return 1
	}
	return int(f.exp[int32(f.Q-1)-l])
}

// Exp returns g^i for the field's generator g (x, or a primitive root mod p).
func (f *Field) Exp(i int) int { return int(f.exp[((i%(f.Q-1))+(f.Q-1))%(f.Q-1)]) }

// primeFactors returns the distinct prime factors of n > 0, ascending.
func primeFactors[T int | int64](n T) []T {
	var out []T
	for d := T(2); d*d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
			for n%d == 0 {
				n /= d
			}
		}
	}
	if n > 1 {
		out = append(out, n)
	}
	return out
}

func powMod(b, e, m int) int {
	r := 1 % m
	b %= m
	for e > 0 {
		if e&1 == 1 {
			r = int(uint64(r) * uint64(b) % uint64(m))
		}
		b = int(uint64(b) * uint64(b) % uint64(m))
		e >>= 1
	}
	return r
}
