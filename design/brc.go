package design

import (
	"math"
	"math/big"
)

// BruckRyserChowla reports whether the necessary condition of the
// Bruck–Ryser–Chowla theorem holds for B(N, m, λ): for even N, m-λ must be
// a square; for odd N, x² = (m-λ)y² + (-1)^((N-1)/2) λ z² must have a
// solution in integers, not all zero. A false result proves the design
// does not exist.
func BruckRyserChowla(n, m, lambda int) bool {
	if n%2 == 0 {
		return isSquare(int64(m - lambda))
	}
	b := int64(lambda)
	if ((n-1)/2)%2 == 1 {
		b = -b
	}
	return Solvable(int64(m-lambda), b)
}

// Solvable reports whether x² = a y² + b z² has an integer solution other
// than (0,0,0) (a, b non-zero), by Hilbert's criterion: the Hilbert symbol
// (a,b)_v is 1 at every place v (the real place and every prime dividing
// 2ab).
func Solvable(a, b int64) bool {
	if a == 0 || b == 0 {
		return true
	}
	if a < 0 && b < 0 {
		return false
	}
	primes := map[int64]bool{2: true}
	for _, x := range []int64{a, b} {
		for _, p := range primeFactors(abs64(x)) {
			primes[p] = true
		}
	}
	for p := range primes {
		if hilbert(a, b, p) != 1 {
			return false
		}
	}
	return true
}

// hilbert returns the Hilbert symbol (a,b)_p for a prime p.
func hilbert(a, b, p int64) int {
	alpha, u := split(a, p)
	beta, v := split(b, p)
	if p == 2 {
		eps := func(x int64) int64 { return (((x-1)/2)%2 + 2) % 2 }
		omega := func(x int64) int64 {
			m := ((x % 8) + 8) % 8
			return (m*m - 1) / 8 % 2
		}
		e := eps(u)*eps(v) + int64(alpha)*omega(v) + int64(beta)*omega(u)
		if e%2 == 0 {
			return 1
		}
		return -1
	}
	s := 1
	if alpha%2 == 1 && beta%2 == 1 && ((p-1)/2)%2 == 1 {
		s = -s
	}
	if beta%2 == 1 {
		s *= legendre(u, p)
	}
	if alpha%2 == 1 {
		s *= legendre(v, p)
	}
	return s
}

// split writes x = p^e·u with p not dividing u.
func split(x, p int64) (int, int64) {
	e := 0
	for x%p == 0 {
		x /= p
		e++
	}
	return e, x
}

func legendre(a, p int64) int {
	return big.Jacobi(big.NewInt(((a%p)+p)%p), big.NewInt(p))
}

func isSquare(x int64) bool {
	if x < 0 {
		return false
	}
	r := int64(math.Sqrt(float64(x)))
	for r*r > x {
		r--
	}
	for (r+1)*(r+1) <= x {
		r++
	}
	return r*r == x
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
