package alloc

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSetKeysAreInjective: two node lists get the same key exactly when
// they are the same set, whichever encoding (bitmap or sorted ids) each
// size picks, and prefixes of keys never make two sets equal.
func TestSetKeysAreInjective(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for _, n := range []int{1, 7, 64, 240, 1024} {
		type entry struct {
			set []int
			key []byte
		}
		var seen []entry
		var scratch []int
		for range 400 {
			k := r.IntN(min(n, 40) + 1)
			set := r.Perm(n)[:k]
			key := appendSetKey([]byte("x"), &scratch, set, n)
			sorted := slices.Sorted(slices.Values(set))
			for _, e := range seen {
				same := slices.Equal(e.set, sorted)
				if bytes.Equal(e.key, key) != same {
					t.Fatalf("n=%d: sets %v and %v: keys equal %v, sets equal %v", n, e.set, sorted, !same, same)
				}
			}
			// A shuffled copy of the set has the same key.
			r.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
			if again := appendSetKey([]byte("x"), &scratch, set, n); !bytes.Equal(again, key) {
				t.Fatalf("n=%d: the key of %v depends on the order", n, sorted)
			}
			seen = append(seen, entry{sorted, key})
		}
	}
}

// TestSetKeyIDsSorted: a key in the ids form is the ids in increasing
// order, however they are sorted (by a sort, or through a bitmap for
// many ids), on a machine of Sequoia's size.
func TestSetKeyIDsSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 11))
	const n = 98304
	var scratch []int
	for range 60 {
		k := 1 + r.IntN(3000)
		set := r.Perm(n)[:k]
		key := appendSetKey(nil, &scratch, set, n)
		want := []byte{'i'}
		for _, v := range slices.Sorted(slices.Values(set)) {
			want = append(want, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		if !bytes.Equal(key, want) {
			t.Fatalf("%d ids: the key is not the sorted ids", k)
		}
	}
}
