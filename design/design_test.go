package design

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Seed 000, table 4.2: B(7,4,2).
const seedTable42 = `1 | 1 2 3 4
2 | 1 2 5 7
3 | 1 3 5 6
4 | 1 4 6 7
5 | 2 3 6 7
6 | 2 4 5 6
7 | 3 4 5 7`

// isomorphic reports whether some relabelling of elements maps the block
// multiset of a onto that of b (brute force over all permutations).
func isomorphic(n int, a, b [][]int) bool {
	key := func(bs [][]int) string {
		rows := make([]string, len(bs))
		for i, blk := range bs {
			s := slices.Clone(blk)
			slices.Sort(s)
			var sb strings.Builder
			for _, x := range s {
				sb.WriteByte(byte('a' + x))
			}
			rows[i] = sb.String()
		}
		slices.Sort(rows)
		return strings.Join(rows, ",")
	}
	want := key(b)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == n {
			img := make([][]int, len(a))
			for i, blk := range a {
				for _, x := range blk {
					img[i] = append(img[i], perm[x])
				}
			}
			return key(img) == want
		}
		for i := k; i < n; i++ {
			perm[k], perm[i] = perm[i], perm[k]
			if rec(k + 1) {
				return true
			}
			perm[k], perm[i] = perm[i], perm[k]
		}
		return false
	}
	return rec(0)
}

func TestSeedTable42(t *testing.T) {
	blocks, n, err := ParseBlocks(seedTable42)
	if err != nil {
		t.Fatal(err)
	}
	v := Verify(n, blocks, 0)
	if !v.OK || v.N != 7 || v.M != 4 || v.Lambda != 2 {
		t.Fatalf("seed table 4.2: %+v", v)
	}
	d, err := Construct(7, 4, 2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := d.Blocks()
	if !isomorphic(7, ours, blocks) {
		t.Fatal("our B(7,4,2) is not isomorphic to the seed's table 4.2")
	}
}

// naiveVerify counts violations by the definition, O(N²·blocks).
func naiveVerify(n int, blocks [][]int, lambda int) int {
	bad := 0
	m := len(blocks[0])
	if len(blocks) != n {
		bad++
	}
	for _, b := range blocks {
		if len(b) != m {
			bad++
		}
	}
	for x := 0; x < n; x++ {
		r := 0
		for _, b := range blocks {
			if slices.Contains(b, x) {
				r++
			}
		}
		if r != m {
			bad++
		}
		for y := x + 1; y < n; y++ {
			c := 0
			for _, b := range blocks {
				if slices.Contains(b, x) && slices.Contains(b, y) {
					c++
				}
			}
			if c != lambda {
				bad++
			}
		}
	}
	return bad
}

// The verifier agrees with the definition on correct designs and on
// designs with one element changed.
func TestVerifyAgainstDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, p := range [][3]int{{7, 3, 1}, {13, 4, 1}, {11, 5, 2}, {16, 6, 2}, {37, 9, 2}, {56, 11, 2}, {15, 7, 3}} {
		d, err := Construct(p[0], p[1], p[2], Options{SearchBudget: 1e6})
		if err != nil {
			t.Fatal(err)
		}
		bs, _ := d.Blocks()
		if v := Verify(d.N, bs, d.Lambda); !v.OK || naiveVerify(d.N, bs, d.Lambda) != 0 {
			t.Fatalf("%s: %v", d.Name(), v.Problems)
		}
		if v := d.Verify(); !v.OK {
			t.Fatalf("%s (own method): %v", d.Name(), v.Problems)
		}
		for range 5 {
			mut := make([][]int, len(bs))
			for i := range bs {
				mut[i] = slices.Clone(bs[i])
			}
			b, j := rng.IntN(len(mut)), rng.IntN(len(mut[0]))
			for {
				x := rng.IntN(d.N)
				if !slices.Contains(mut[b], x) {
					mut[b][j] = x
					break
				}
			}
			v := Verify(d.N, mut, d.Lambda)
			if v.OK {
				t.Fatalf("%s with block %d changed still verifies", d.Name(), b+1)
			}
			if naive := naiveVerify(d.N, mut, d.Lambda); v.ProblemCount != naive {
				t.Fatalf("%s mutated: verifier counts %d problems, definition %d", d.Name(), v.ProblemCount, naive)
			}
		}
	}
}

func TestVerifyRejectsMalformed(t *testing.T) {
	for _, c := range []struct {
		n      int
		blocks [][]int
		want   string
	}{
		{3, [][]int{{0, 1}, {1, 2}}, "2 blocks for 3"},
		{3, [][]int{{0, 1}, {1, 1}, {2, 0}}, "twice"},
		{3, [][]int{{0, 1}, {1, 2}, {2, 5}}, "out of range"},
		{3, [][]int{{0, 1}, {1, 2}, {2}}, "has 1 elements"},
	} {
		v := Verify(c.n, c.blocks, 0)
		if v.OK || !strings.Contains(strings.Join(v.Problems, ";"), c.want) {
			t.Errorf("%v: %+v, want a problem mentioning %q", c.blocks, v, c.want)
		}
	}
}

func TestParseBlocksRoundTrip(t *testing.T) {
	d, _ := Construct(13, 4, 1, Options{})
	bs, _ := d.Blocks()
	var sb strings.Builder
	sb.WriteString("# B(13,4,1)\n")
	for i, b := range bs {
		if i%2 == 1 {
			sb.WriteString(itoa(i+1) + ":")
		}
		for _, x := range b {
			sb.WriteString(" ")
			sb.WriteString(itoa(x + 1))
		}
		sb.WriteString("\n")
	}
	got, n, err := ParseBlocks(sb.String())
	if err != nil || n != 13 || len(got) != 13 {
		t.Fatalf("text: n=%d, %d blocks, %v", n, len(got), err)
	}
	for i := range got {
		if !slices.Equal(got[i], bs[i]) {
			t.Fatalf("block %d: %v, want %v", i, got[i], bs[i])
		}
	}
	js := `{"n": 13, "blocks": [` + strings.Join(func() []string {
		var rows []string
		for _, b := range bs {
			var el []string
			for _, x := range b {
				el = append(el, itoa(x+1))
			}
			rows = append(rows, "["+strings.Join(el, ",")+"]")
		}
		return rows
	}(), ",") + `]}`
	got, n, err = ParseBlocks(js)
	if err != nil || n != 13 || !slices.EqualFunc(got, bs, func(a, b []int) bool { return slices.Equal(a, b) }) {
		t.Fatalf("json: %v", err)
	}
	for _, bad := range []string{"", "1 2 x", "0 1 2", "[[1,2],[0]]", "{\"blocks\": 3}", "# only a comment"} {
		if _, _, err := ParseBlocks(bad); err == nil {
			t.Errorf("ParseBlocks(%q): no error", bad)
		}
	}
}

func itoa(x int) string { return strconv.Itoa(x) }

func FuzzParseBlocks(f *testing.F) {
	f.Add(seedTable42)
	f.Add(`{"blocks": [[1,2],[2,3],[3,1]]}`)
	f.Add("[[1,2,3],[1,2,3],[1,2,3]]")
	f.Add("1: 1,2\n2: 2,3 # c\n3 | 3 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		blocks, n, err := ParseBlocks(s)
		if err != nil {
			return
		}
		if n > 2000 || len(blocks) > 2000 {
			return
		}
		v := Verify(n, blocks, 0)
		if v.OK && (v.N != n || len(blocks) != n) {
			t.Fatalf("verified a table with %d blocks on %d elements", len(blocks), n)
		}
	})
}

// BRC against a brute-force search for solutions of x² = a y² + b z².
func TestSolvableBruteForce(t *testing.T) {
	const lim = 40
	for a := int64(-12); a <= 12; a++ {
		for b := int64(-12); b <= 12; b++ {
			if a == 0 || b == 0 {
				continue
			}
			found := false
			for x := int64(0); x <= lim && !found; x++ {
				for y := int64(0); y <= lim && !found; y++ {
					for z := int64(0); z <= lim; z++ {
						if (x|y|z) != 0 && x*x == a*y*y+b*z*z {
							found = true
							break
						}
					}
				}
			}
			if got := Solvable(a, b); got != found {
				t.Errorf("x² = %dy² + %dz²: Solvable %v, brute force (|x|,|y|,|z| ≤ %d) %v", a, b, got, lim, found)
			}
		}
	}
}

// Bruck–Ryser–Chowla excludes exactly the plane orders n ≡ 1, 2 mod 4 that
// are not sums of two squares: 6, 14, 21, 22, 30, ... .
func TestBRCPlanes(t *testing.T) {
	var excluded []int
	for n := 2; n <= 30; n++ {
		if !BruckRyserChowla(n*n+n+1, n+1, 1) {
			excluded = append(excluded, n)
		}
	}
	if !slices.Equal(excluded, []int{6, 14, 21, 22, 30}) {
		t.Fatalf("BRC excludes plane orders %v, want [6 14 21 22 30]", excluded)
	}
}

// Tables 4.3/4.4: the seed says B(43,7,1) does not exist; every prime-power
// plane and the known biplanes are constructed and verified.
func TestSeedTableStatuses(t *testing.T) {
	want := map[[3]int]string{
		{43, 7, 1}: Impossible, {111, 11, 1}: Impossible, {22, 7, 2}: Impossible, {29, 8, 2}: Impossible, {46, 10, 2}: Impossible,
		{56, 11, 2}: Constructed, {37, 9, 2}: Constructed, {16, 6, 2}: Constructed, {133, 12, 1}: Constructed,
	}
	rows := SeedTable()
	if len(rows) != 21 {
		t.Fatalf("%d rows, want 11 + 10", len(rows))
	}
	for _, r := range rows {
		if w, ok := want[[3]int{r.N, r.M, r.Lambda}]; ok && r.Status != w {
			t.Errorf("B(%d,%d,%d): %s (%s), want %s", r.N, r.M, r.Lambda, r.Status, r.Reason, w)
		}
		if r.Status == Constructed {
			d, err := Construct(r.N, r.M, r.Lambda, Options{})
			if err != nil {
				t.Fatal(err)
			}
			bs, _ := d.Blocks()
			if v := Verify(d.N, bs, d.Lambda); !v.OK {
				t.Errorf("%s: %v", d.Name(), v.Problems)
			}
		}
	}
	if st, _ := Classify(79, 13, 2, Options{}); st.Status != Exists {
		t.Errorf("B(79,13,2): %v", st)
	}
	if st, _ := Classify(157, 13, 1, Options{}); st.Status != Open {
		t.Errorf("B(157,13,1): %v", st)
	}
}

func TestConstructBadInput(t *testing.T) {
	for _, c := range []struct {
		n, m, l int
		want    string
	}{
		{44, 7, 1, "N = m(m-1)/λ + 1 = 43"},
		{10, 4, 5, "does not divide"},
		{43, 7, 1, "Bruck–Ryser–Chowla"},
		{111, 11, 1, "order 10"},
		{79, 13, 2, "no construction"},
		{157, 13, 1, "no known construction"},
		{5, 7, 1, "cannot be larger"},
		{7, 1, 1, "m ≥ 2"},
	} {
		_, err := Construct(c.n, c.m, c.l, Options{SearchBudget: 1000})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("B(%d,%d,%d): %v, want %q", c.n, c.m, c.l, err, c.want)
		}
	}
}

// The difference-set search agrees with exhaustive enumeration of subsets
// containing 0 and 1 for small N.
func TestSearchDiffSetBruteForce(t *testing.T) {
	for n := 4; n <= 16; n++ {
		for k := 3; k < n; k++ {
			if k*(k-1)%(n-1) != 0 {
				continue
			}
			lam := k * (k - 1) / (n - 1)
			target := make([]int, n)
			for i := 1; i < n; i++ {
				target[i] = lam
			}
			got, exhausted := SearchDiffSet(n, k, target, 1e9)
			if !exhausted {
				t.Fatal("budget exceeded")
			}
			found := false
			for mask := 0; mask < 1<<n && !found; mask++ {
				if mask&3 != 3 || popcount(mask) != k {
					continue
				}
				var d []int
				for i := 0; i < n; i++ {
					if mask>>i&1 == 1 {
						d = append(d, i)
					}
				}
				found = VerifyDiffSet(n, d, lam).OK
			}
			if (got != nil) != found {
				t.Errorf("(%d,%d,%d): search found %v, brute force %v", n, k, lam, got, found)
			}
			if got != nil && !VerifyDiffSet(n, got, lam).OK {
				t.Errorf("(%d,%d,%d): search returned a non-difference set %v", n, k, lam, got)
			}
		}
	}
}

func popcount(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

func BenchmarkVerifyBlocks1407(b *testing.B) {
	d, _ := Construct(1407, 38, 1, Options{})
	bs, _ := d.Blocks()
	b.ResetTimer()
	for b.Loop() {
		if v := Verify(d.N, bs, 1); !v.OK {
			b.Fatal(v.Problems)
		}
	}
}

// SymmetricOrder gives the N with λ(N-1) = m(m-1) (which CheckParams
// accepts while λ < m), and a reason when λ does not divide m(m-1).
func TestSymmetricOrder(t *testing.T) {
	for _, c := range []struct{ m, lambda, n int }{{4, 2, 7}, {7, 1, 43}, {38, 1, 1407}, {1025, 1, 1049601}, {7, 2, 22}} {
		if n, err := SymmetricOrder(c.m, c.lambda); n != c.n || err != nil {
			t.Errorf("SymmetricOrder(%d, %d) = %d, %v; want %d", c.m, c.lambda, n, err, c.n)
		}
	}
	for m := 0; m <= 20; m++ {
		for lambda := 0; lambda <= 6; lambda++ {
			n, err := SymmetricOrder(m, lambda)
			divides := m >= 2 && lambda >= 1 && m*(m-1)%lambda == 0
			if (err == nil) != divides {
				t.Errorf("SymmetricOrder(%d, %d): %v, want an answer %v", m, lambda, err, divides)
			}
			if err == nil && (lambda*(n-1) != m*(m-1) || lambda < m && CheckParams(n, m, lambda) != nil) {
				t.Errorf("SymmetricOrder(%d, %d) = %d, which CheckParams refuses: %v", m, lambda, n, CheckParams(n, m, lambda))
			}
		}
	}
}
