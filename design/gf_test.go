package design

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPrimePowerBruteForce(t *testing.T) {
	for q := -3; q <= 3000; q++ {
		want := false
		for p := 2; p <= q; p++ {
			if !isPrime(p) {
				continue
			}
			for x := p; x <= q; x *= p {
				if x == q {
					want = true
				}
			}
		}
		_, _, got := PrimePower(q)
		if got != want {
			t.Fatalf("PrimePower(%d) = %v, brute force %v", q, got, want)
		}
	}
}

// Field axioms, exhaustively for small fields and sampled for larger ones;
// the Frobenius map a → a^p must be additive, which ties Add to Mul.
func TestFieldAxioms(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, q := range []int{2, 3, 4, 5, 7, 8, 9, 16, 25, 27, 32, 49, 64, 81, 121, 125, 128, 243, 256, 343, 729, 1024, 2048, 4096} {
		f, err := NewField(q)
		if err != nil {
			t.Fatal(err)
		}
		elems := func() (int, int, int) { return rng.IntN(q), rng.IntN(q), rng.IntN(q) }
		trials := 3000
		if q <= 9 {
			trials = q * q * q
		}
		pow := func(a, e int) int {
			r := 1
			for range e {
				r = f.Mul(r, a)
			}
			return r
		}
		for i := range trials {
			a, b, c := elems()
			if q <= 9 {
				a, b, c = i%q, (i/q)%q, i/(q*q)
			}
			if f.Add(a, f.Add(b, c)) != f.Add(f.Add(a, b), c) || f.Add(a, b) != f.Add(b, a) {
				t.Fatalf("GF(%d): addition not associative/commutative at %d,%d,%d", q, a, b, c)
			}
			if f.Mul(a, f.Mul(b, c)) != f.Mul(f.Mul(a, b), c) || f.Mul(a, b) != f.Mul(b, a) {
				t.Fatalf("GF(%d): multiplication not associative/commutative", q)
			}
			if f.Mul(a, f.Add(b, c)) != f.Add(f.Mul(a, b), f.Mul(a, c)) {
				t.Fatalf("GF(%d): not distributive at %d,%d,%d", q, a, b, c)
			}
			if f.Add(a, f.Neg(a)) != 0 || f.Sub(f.Add(a, b), b) != a {
				t.Fatalf("GF(%d): negation wrong at %d", q, a)
			}
			if a != 0 && f.Mul(a, f.Inv(a)) != 1 {
				t.Fatalf("GF(%d): %d·%d⁻¹ ≠ 1", q, a, a)
			}
			if pow(f.Add(a, b), f.P) != f.Add(pow(a, f.P), pow(b, f.P)) {
				t.Fatalf("GF(%d): Frobenius not additive at %d,%d", q, a, b)
			}
		}
		// the generator has order q-1
		seen := map[int]bool{}
		for i := 0; i < q-1; i++ {
			seen[f.Exp(i)] = true
		}
		if len(seen) != q-1 || seen[0] {
			t.Fatalf("GF(%d): generator powers cover %d elements, want %d", q, len(seen), q-1)
		}
	}
	for _, q := range []int{0, 1, 6, 10, 12, 100, 1 << 17} {
		if _, err := NewField(q); err == nil {
			t.Errorf("GF(%d): no error", q)
		}
	}
}

func TestSingerAllSmallOrders(t *testing.T) {
	for q := 1; q <= 128; q++ {
		if _, _, ok := PrimePower(q); !ok && q != 1 {
			if _, err := Singer(q); err == nil {
				t.Errorf("Singer(%d): no error for a non prime power", q)
			}
			continue
		}
		d, err := Singer(q)
		if err != nil {
			t.Fatal(err)
		}
		n := q*q + q + 1
		if v := VerifyDiffSet(n, d, 1); !v.OK {
			t.Fatalf("Singer(%d): %v", q, v.Problems)
		}
	}
	for _, q := range []int{256, 1024} {
		d, err := Singer(q)
		if err != nil {
			t.Fatal(err)
		}
		if v := VerifyDiffSet(q*q+q+1, d, 1); !v.OK {
			t.Fatalf("Singer(%d): %v", q, v.Problems)
		}
	}
	// normal forms used by the seed's tables 7.1 and 7.2
	for q, want := range map[int][]int{1: {0, 1}, 2: {0, 1, 3}, 3: {0, 1, 3, 9}} {
		if d, _ := Singer(q); !slices.Equal(d, want) {
			t.Errorf("Singer(%d) = %v, want %v", q, d, want)
		}
	}
}

// NormalizeDiffSet is invariant under multipliers and translations.
func TestNormalizeInvariant(t *testing.T) {
	d, _ := Singer(5)
	n := 31
	want := NormalizeDiffSet(n, d)
	for _, u := range []int{2, 3, 7, 30} {
		for _, s := range []int{0, 5, 17} {
			img := make([]int, len(d))
			for i, x := range d {
				img[i] = (u*x + s) % n
			}
			if got := NormalizeDiffSet(n, img); !slices.Equal(got, want) {
				t.Fatalf("u=%d s=%d: %v, want %v", u, s, got, want)
			}
		}
	}
}

func BenchmarkSinger1024(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		d, err := Singer(1024)
		if err != nil {
			b.Fatal(err)
		}
		if v := VerifyDiffSet(1024*1024+1024+1, d, 1); !v.OK {
			b.Fatal(v.Problems)
		}
	}
}
