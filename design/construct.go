package design

import (
	"fmt"
	"slices"
	"strconv"
)

// Existence statuses reported by Classify.
const (
	Constructed = "constructed" // built here and verified
	Exists      = "exists"      // known in the literature, not built here
	Impossible  = "impossible"  // proven not to exist
	Open        = "open"        // neither built nor excluded
)

// Status says what is known about B(N, m, λ).
type Status struct {
	N            int    `json:"n"`
	M            int    `json:"m"`
	Lambda       int    `json:"lambda"`
	Status       string `json:"status"`
	Construction string `json:"construction,omitempty"`
	Reason       string `json:"reason"`
}

// Options tune Construct.
type Options struct {
	// SearchBudget > 0 allows a backtracking search for a cyclic difference
	// set when no algebraic construction applies, visiting at most this many
	// search nodes.
	SearchBudget int64
}

// DefaultSearchBudget is the search effort used by the CLI.
const DefaultSearchBudget = 20_000_000

// Construct builds B(n, m, λ) by the first construction that applies:
// trivial designs; projective planes (λ = 1, m-1 a prime power) from Singer
// difference sets; the known biplanes (λ = 2, m = 2, 3, 4, 5, 6, 9, 11);
// Paley difference sets (quadratic residues mod a prime ≡ 3 mod 4);
// complements of constructible designs; and, if allowed, a search for a
// cyclic difference set. It fails with an explanation when the parameters
// are impossible or no construction is known.
func Construct(n, m, lambda int, o Options) (*Design, error) {
	if err := CheckParams(n, m, lambda); err != nil {
		return nil, err
	}
	st := classify(n, m, lambda)
	if st.Status == Impossible {
		return nil, fmt.Errorf("B(%d,%d,%d) does not exist: %s", n, m, lambda, st.Reason)
	}
	if d, err := construct(n, m, lambda, o, true); d != nil || err != nil {
		return d, err
	}
	switch st.Status {
	case Exists:
		return nil, fmt.Errorf("B(%d,%d,%d) exists (%s) but no construction for it is implemented", n, m, lambda, st.Reason)
	}
	if o.SearchBudget > 0 {
		return nil, fmt.Errorf("B(%d,%d,%d): no known construction (%s), and no cyclic difference set was found within %d search steps", n, m, lambda, st.Reason, o.SearchBudget)
	}
	return nil, fmt.Errorf("B(%d,%d,%d): no known construction (%s)", n, m, lambda, st.Reason)
}

func construct(n, m, lambda int, o Options, allowComplement bool) (*Design, error) {
	switch {
	case lambda == 1:
		q := m - 1
		if _, _, ok := PrimePower(q); ok || q == 1 {
			if q > MaxSingerOrder {
				return nil, fmt.Errorf("B(%d,%d,1): the projective plane of order %d exists but orders above %d are not built here", n, m, q, MaxSingerOrder)
			}
			d, err := Singer(q)
			if err != nil {
				return nil, err
			}
			how := fmt.Sprintf("Singer difference set of PG(2,%d) (projective plane of order %d)", q, q)
			if q == 1 {
				how = "triangle (degenerate plane of order 1): difference set {0,1} mod 3"
			}
			return FromDiffSet(n, 1, d, how), nil
		}
	case lambda == 2:
		if d := biplane(m); d != nil {
			return d, nil
		}
	}
	switch {
	case m == n:
		return FromDiffSet(n, lambda, seq(0, n), "trivial design: every block is the whole set"), nil
	case m == n-1:
		return FromDiffSet(n, lambda, seq(0, n-1), "trivial design: blocks are the complements of single elements"), nil
	}
	if d := paley(n, m, lambda); d != nil {
		return d, nil
	}
	if allowComplement && n-m >= 2 && n-m < m {
		c, err := construct(n, n-m, n-2*m+lambda, o, false)
		if err != nil {
			return nil, err
		}
		if c != nil {
			if c.DiffSet != nil {
				return FromDiffSet(n, lambda, complementSet(n, c.DiffSet), "complement of "+c.Construction), nil
			}
			return c.Complement()
		}
	}
	if o.SearchBudget > 0 && n <= 4096 {
		target := make([]int, n)
		for i := 1; i < n; i++ {
			target[i] = lambda
		}
		if d, _ := SearchDiffSet(n, m, target, o.SearchBudget); d != nil {
			return FromDiffSet(n, lambda, d, fmt.Sprintf("cyclic difference set found by search mod %d", n)), nil
		}
	}
	return nil, nil
}

func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

func complementSet(n int, d []int) []int {
	in := make([]bool, n)
	for _, x := range d {
		in[x] = true
	}
	var out []int
	for x := 0; x < n; x++ {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

// paley returns the Paley difference set (quadratic residues) for a prime
// n ≡ 3 mod 4 with m = (n-1)/2, λ = (n-3)/4.
func paley(n, m, lambda int) *Design {
	if n%4 != 3 || m != (n-1)/2 || lambda != (n-3)/4 || !isPrime(n) {
		return nil
	}
	return FromDiffSet(n, lambda, residues(n, 2), fmt.Sprintf("Paley difference set: quadratic residues mod %d", n))
}

// residues returns the non-zero k-th power residues mod prime p, ascending.
func residues(p, k int) []int {
	seen := map[int]bool{}
	for x := 1; x < p; x++ {
		seen[powMod(x, k, p)] = true
	}
	var out []int
	for r := range seen {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// biplane returns the known biplane B(m(m-1)/2+1, m, 2), or nil.
func biplane(m int) *Design {
	switch m {
	case 2:
		return FromBlocks(2, 2, 2, [][]int{{0, 1}, {0, 1}}, "trivial biplane on 2 elements (both blocks hold both)")
	case 3:
		return FromDiffSet(4, 2, []int{0, 1, 2}, "trivial biplane: difference set {0,1,2} mod 4 (complements of points)")
	case 4:
		d, _ := Singer(2)
		return FromDiffSet(7, 2, complementSet(7, d), "complement of the Fano plane: difference set {2,4,5,6} mod 7")
	case 5:
		return FromDiffSet(11, 2, residues(11, 2), "Paley biplane: quadratic residues mod 11")
	case 6:
		return &Design{N: 16, M: 6, Lambda: 2, XorSet: []int{0, 1, 2, 4, 8, 15},
			Construction: "difference set {0000,0001,0010,0100,1000,1111} in Z_2^4 (blocks D xor g)"}
	case 9:
		return FromDiffSet(37, 2, residues(37, 4), "biquadratic residues mod 37 (Hall's (37,9,2) difference set)")
	case 11:
		d, err := gewirtzBiplane()
		if err != nil {
			return nil
		}
		return d
	}
	return nil
}

// gewirtzBiplane builds the (56,11,2) biplane from PG(2,4): the 168
// hyperovals (6 points, no three collinear) fall into three classes of 56
// in which two hyperovals meet in 0 or 2 points; in one class, joining
// disjoint hyperovals gives the Gewirtz graph srg(56,10,0,2), and the
// closed neighbourhoods {x} ∪ N(x) are the blocks of a biplane (two
// blocks meet in 2 points: λ = 0 common neighbours plus x, y when adjacent,
// μ = 2 when not).
func gewirtzBiplane() (*Design, error) {
	const n = 21
	d, err := Singer(4)
	if err != nil {
		return nil, err
	}
	// linesOf[p]: the 5 lines (index i: line D+i) through point p.
	var linesOf [n][]int
	for i := 0; i < n; i++ {
		for _, x := range d {
			p := (x + i) % n
			linesOf[p] = append(linesOf[p], i)
		}
	}
	var ovals [][]int
	var cnt [n]int
	cur := make([]int, 0, 6)
	var rec func(from int)
	rec = func(from int) {
		if len(cur) == 6 {
			ovals = append(ovals, slices.Clone(cur))
			return
		}
		for p := from; p < n; p++ {
			ok := true
			for _, l := range linesOf[p] {
				if cnt[l] >= 2 {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			for _, l := range linesOf[p] {
				cnt[l]++
			}
			cur = append(cur, p)
			rec(p + 1)
			cur = cur[:len(cur)-1]
			for _, l := range linesOf[p] {
				cnt[l]--
			}
		}
	}
	rec(0)
	if len(ovals) != 168 {
		return nil, fmt.Errorf("PG(2,4) has %d hyperovals, expected 168", len(ovals))
	}
	meet := func(a, b []int) int {
		k := 0
		for _, x := range a {
			if slices.Contains(b, x) {
				k++
			}
		}
		return k
	}
	var class [][]int
	for _, h := range ovals {
		if meet(h, ovals[0])%2 == 0 {
			class = append(class, h)
		}
	}
	if len(class) != 56 {
		return nil, fmt.Errorf("hyperoval class has %d members, expected 56", len(class))
	}
	blocks := make([][]int, 56)
	for x := range class {
		blocks[x] = append(blocks[x], x)
		for y := range class {
			if y != x && meet(class[x], class[y]) == 0 {
				blocks[x] = append(blocks[x], y)
			}
		}
	}
	return FromBlocks(56, 11, 2, blocks, "biplane from the Gewirtz graph: one class of 56 hyperovals of PG(2,4), blocks {x} ∪ {hyperovals disjoint from x}"), nil
}

// Classify says whether B(n, m, λ) is constructed here, known to exist,
// proven impossible or open.
func Classify(n, m, lambda int, o Options) (Status, error) {
	if err := CheckParams(n, m, lambda); err != nil {
		return Status{}, err
	}
	d, err := construct(n, m, lambda, o, true)
	if d != nil && err == nil {
		if v := d.Verify(); v.OK {
			return Status{N: n, M: m, Lambda: lambda, Status: Constructed, Construction: d.Construction, Reason: "built and verified"}, nil
		}
	}
	st := classify(n, m, lambda)
	if err != nil && st.Status == Open {
		st.Reason = err.Error()
	}
	return st, nil
}

// classify gives the theoretical status when there is no construction.
func classify(n, m, lambda int) Status {
	st := Status{N: n, M: m, Lambda: lambda}
	if !BruckRyserChowla(n, m, lambda) {
		st.Status = Impossible
		if n%2 == 0 {
			st.Reason = fmt.Sprintf("Bruck–Ryser–Chowla: N=%d is even and m-λ=%d is not a square", n, m-lambda)
		} else {
			sign := "+"
			if ((n-1)/2)%2 == 1 {
				sign = "-"
			}
			lz := strconv.Itoa(lambda)
			if lambda == 1 {
				lz = ""
			}
			st.Reason = fmt.Sprintf("Bruck–Ryser–Chowla: x² = %dy² %s %sz² has no non-zero integer solution", m-lambda, sign, lz)
		}
		return st
	}
	switch {
	case lambda == 1 && m == 11:
		st.Status, st.Reason = Impossible, "no projective plane of order 10 (exhaustive computer search, Lam, Thiel & Swiercz 1989)"
	case lambda == 1:
		if _, _, ok := PrimePower(m - 1); ok {
			st.Status, st.Reason = Exists, fmt.Sprintf("projective plane of prime-power order %d", m-1)
		} else {
			st.Status, st.Reason = Open, fmt.Sprintf("order %d is not a prime power; no projective plane of such order is known and none is excluded", m-1)
		}
	case lambda == 2 && m == 13:
		st.Status, st.Reason = Exists, "the (79,13,2) biplane of Aschbacher (1971)"
	case lambda == 2:
		st.Status, st.Reason = Open, "no biplane with this block size is known (known: m = 2, 3, 4, 5, 6, 9, 11, 13)"
	default:
		st.Status, st.Reason = Open, "no construction known here and not excluded by Bruck–Ryser–Chowla"
	}
	return st
}

// SeedTable returns the status of every B(N, m, λ) of the seed's tables
// 4.3 (λ = 1, m = 2..12) and 4.4 (λ = 2, m = 2..11).
func SeedTable() []Status {
	var out []Status
	for _, t := range []struct{ lambda, lo, hi int }{{1, 2, 12}, {2, 2, 11}} {
		for m := t.lo; m <= t.hi; m++ {
			n := m*(m-1)/t.lambda + 1
			st, err := Classify(n, m, t.lambda, Options{})
			if err != nil {
				st = Status{N: n, M: m, Lambda: t.lambda, Status: Open, Reason: err.Error()}
			}
			out = append(out, st)
		}
	}
	return out
}
