package bitset

import "testing"

// TestAddRange compares AddRange with Add one index at a time, and
// CountRange with Has, for every range of a three-word set.
func TestAddRange(t *testing.T) {
	const n = 3 * 64
	for lo := 0; lo <= n; lo++ {
		for hi := lo; hi <= n; hi++ {
			got, want := New(n), New(n)
			got.AddRange(lo, hi)
			for i := lo; i < hi; i++ {
				want.Add(i)
			}
			for w := range want {
				if got[w] != want[w] {
					t.Fatalf("AddRange(%d, %d): word %d is %#x, want %#x", lo, hi, w, got[w], want[w])
				}
			}
			// counted in a set of every third index
			third, n3 := New(n), 0
			for i := 0; i < n; i += 3 {
				third.Add(i)
				if i >= lo && i < hi {
					n3++
				}
			}
			if c := third.CountRange(lo, hi); c != n3 {
				t.Fatalf("CountRange(%d, %d) = %d, want %d", lo, hi, c, n3)
			}
		}
	}
}
