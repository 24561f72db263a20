package design

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/multiring"
	"github.com/icn-hpc/icn/topology"
)

// Seed 000, table 4.1 (N=9, m=3): from-subscribers | to-subscribers.
var seedTable41 = [9][6]int{
	{1, 9, 8, 1, 4, 7}, {2, 1, 9, 2, 5, 8}, {3, 2, 1, 3, 6, 9},
	{4, 3, 2, 4, 7, 1}, {5, 4, 3, 5, 8, 2}, {6, 5, 4, 6, 9, 3},
	{7, 6, 5, 7, 1, 4}, {8, 7, 6, 8, 2, 5}, {9, 8, 7, 9, 3, 6},
}

func TestSeedTable41(t *testing.T) {
	q, err := NewQCD(3)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 9; i++ {
		got := append(q.From(i), q.To(i)...)
		if !slices.Equal(got, seedTable41[i-1][:]) {
			t.Errorf("switch %d: %v, seed %v", i, got, seedTable41[i-1])
		}
	}
}

// Every ordered pair of subscribers (also a subscriber and itself) has
// exactly one path subscriber → switch → subscriber; checked by brute force
// over the tables and on the built graph.
func TestQCDOnePath(t *testing.T) {
	for m := 2; m <= 9; m++ {
		q, _ := NewQCD(m)
		cnt := make([]int, q.N*q.N)
		for i := 1; i <= q.N; i++ {
			for _, a := range q.From(i) {
				for _, b := range q.To(i) {
					cnt[(a-1)*q.N+b-1]++
				}
			}
		}
		for k, c := range cnt {
			if c != 1 {
				t.Fatalf("m=%d: pair %d→%d has %d paths", m, k/q.N+1, k%q.N+1, c)
			}
		}
		g, err := q.Graph("qcd")
		if err != nil {
			t.Fatal(err)
		}
		th := CheckTwoHop(g, true, true, func(a, b int) int { return 1 })
		if th.Bad != 0 || th.Pairs != int64(q.N*q.N) {
			t.Fatalf("m=%d: %+v", m, th)
		}
		// as an undirected graph the reverse channels would add paths
		if un := CheckTwoHop(g, false, true, func(a, b int) int { return 1 }); un.Bad == 0 {
			t.Fatalf("m=%d: undirected check should fail", m)
		}
	}
}

// DFS graphs: every pair of distinct subscribers meets in exactly λ
// distinct switches; brute force over the block table agrees.
func TestDFSTwoHop(t *testing.T) {
	for _, p := range [][3]int{{3, 2, 1}, {7, 3, 1}, {13, 4, 1}, {7, 4, 2}, {11, 5, 2}, {16, 6, 2}, {37, 9, 2}, {56, 11, 2}, {57, 8, 1}} {
		d, err := Construct(p[0], p[1], p[2], Options{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := DFSGraph(d, "dfs")
		if err != nil {
			t.Fatal(err)
		}
		if g.Count(topology.Endpoint) != d.N || g.Count(topology.Switch) != d.N || g.NumLinks() != d.N*d.M {
			t.Fatalf("%s: %d endpoints, %d switches, %d links", d.Name(), g.Count(topology.Endpoint), g.Count(topology.Switch), g.NumLinks())
		}
		for _, v := range g.Endpoints() {
			if g.Degree(v) != d.M {
				t.Fatalf("%s: subscriber %s has %d ports", d.Name(), g.NodeName(v), g.Degree(v))
			}
		}
		th := CheckTwoHop(g, false, false, d.PairLambda)
		if th.Bad != 0 || th.Min != d.Lambda || th.Max != d.Lambda {
			t.Fatalf("%s: %+v", d.Name(), th)
		}
	}
}

// DFS(39,7,1|2) of seed §5: subscriber i has two switches in common with
// i±1 and i±2 and one with everybody else.
func TestQuasi39(t *testing.T) {
	d, err := Quasi(39, 7, 1, DefaultSearchBudget)
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Verify(); !v.OK {
		t.Fatal(v.Problems)
	}
	g, err := DFSGraph(d, "dfs")
	if err != nil {
		t.Fatal(err)
	}
	want := func(a, b int) int {
		dist := (b - a + 39) % 39
		if dist == 1 || dist == 2 || dist == 37 || dist == 38 {
			return 2
		}
		return 1
	}
	if th := CheckTwoHop(g, false, false, want); th.Bad != 0 {
		t.Fatalf("%+v", th)
	}
	if _, err := Quasi(40, 7, 1, 1000); err == nil {
		t.Error("N=40, m=7, λ=1|2 should be rejected")
	}
}

// Seed 000, tables 7.1 and 7.2.
var seedTable71 = [][]int{
	{1, 3, 4, 6, 7, 9, 10, 12, 13, 15},
	{2, 1, 5, 4, 8, 7, 11, 10, 14, 13},
	{3, 2, 6, 5, 9, 8, 12, 11, 15, 14},
}

var seedTable72 = [][]int{
	{1, 13, 11, 5, 14, 26, 24, 18, 27, 39, 37, 31},
	{2, 1, 12, 6, 15, 14, 25, 19, 28, 27, 38, 32},
	{3, 2, 13, 7, 16, 15, 26, 20, 29, 28, 39, 33},
	{4, 3, 1, 8, 17, 16, 14, 21, 30, 29, 27, 34},
	{5, 4, 2, 9, 18, 17, 15, 22, 31, 30, 28, 35},
	{6, 5, 3, 10, 19, 18, 16, 23, 32, 31, 29, 36},
	{7, 6, 4, 11, 20, 19, 17, 24, 33, 32, 30, 37},
	{8, 7, 5, 12, 21, 20, 18, 25, 34, 33, 31, 38},
	{9, 8, 6, 13, 22, 21, 19, 26, 35, 34, 32, 39},
	{10, 9, 7, 1, 23, 22, 20, 14, 36, 35, 33, 27},
	{11, 10, 8, 2, 24, 23, 21, 15, 37, 36, 34, 28},
	{12, 11, 9, 3, 25, 24, 22, 16, 38, 37, 35, 29},
	{13, 12, 10, 4, 26, 25, 23, 17, 39, 38, 36, 30},
}

func TestSeedTables71And72(t *testing.T) {
	for _, c := range []struct {
		k, m int
		want [][]int
	}{{10, 2, seedTable71}, {12, 4, seedTable72}} {
		s, err := NewSparse(c.k, c.m)
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.want {
			if !slices.Equal(s.Table[i], c.want[i]) {
				t.Errorf("K=%d m=%d ring %d: %v, seed %v", c.k, c.m, i+1, s.Table[i], c.want[i])
			}
		}
	}
}

// Sparse multirings: every subscriber sits on m rings with 2m ports, every
// pair shares a ring (1 or m of them), and the capacity is close to the
// seed's ≈ 8 per ring.
func TestSparseProperties(t *testing.T) {
	for _, c := range [][2]int{{10, 2}, {12, 4}, {6, 3}, {12, 3}, {16, 4}, {24, 6}} {
		s, err := NewSparse(c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := s.SharedRings()
		if lo != 1 || (hi != s.M && s.K > s.M) {
			t.Fatalf("K=%d m=%d: pairs share %d..%d rings", s.K, s.M, lo, hi)
		}
		g, err := s.Graph("smr")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range g.Endpoints() {
			if g.Degree(v) != 2*s.M {
				t.Fatalf("K=%d m=%d: %s has %d ports, want 2m=%d", s.K, s.M, g.NodeName(v), g.Degree(v), 2*s.M)
			}
		}
		nc, err := s.RingNet().Capacity()
		if err != nil {
			t.Fatal(err)
		}
		per := nc.Effective / float64(s.Rings)
		if per < 6 || per > 9 {
			t.Fatalf("K=%d m=%d: capacity %g is %g per ring", s.K, s.M, nc.Effective, per)
		}
	}
	for _, bad := range [][2]int{{10, 3}, {12, 7}, {2, 2}, {12, 1}} {
		if _, err := NewSparse(bad[0], bad[1]); err == nil {
			t.Errorf("K=%d m=%d: no error", bad[0], bad[1])
		}
	}
}

func TestSpecFamilies(t *testing.T) {
	for spec, nodes := range map[string]int{
		"dfs:N=7,m=4,lambda=2": 14, "dfs:m=3": 14, "dfs:m=11,lambda=2": 112,
		"dfs:N=39,m=7,lambda=1|2": 78, "qcd:m=3": 18, "qcd:N=49": 98, "smr:K=12,m=4": 39,
	} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if g.NumNodes() != nodes {
			t.Errorf("%s: %d nodes, want %d", spec, g.NumNodes(), nodes)
		}
	}
	for spec, want := range map[string]string{
		"dfs:m=7":                 "does not exist",
		"dfs:N=44,m=7":            "N = m(m-1)/λ + 1",
		"dfs:m=4,lambda=5":        "does not divide",
		"dfs:m=4,lambda=1|3":      "λ|λ+1",
		"dfs:m=7,lambda=1|2":      "missing parameter n",
		"dfs:m=x":                 "not a whole number",
		"dfs:m=4,q=2":             "unknown parameter",
		"qcd:N=10":                "not a square",
		"qcd:m=1":                 "out of range",
		"smr:K=10,m=3":            "multiple of m",
		"smr:K=14,m=7":            "not a prime power",
		"dfs:N=111,m=11,lambda=1": "order 10",
	} {
		_, err := topology.Parse(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

func FuzzParseDFS(f *testing.F) {
	for _, s := range []string{"N=7,m=4,lambda=2", "m=3", "N=39,m=7,lambda=1|2", "m=4,lambda=5", "n=,m=", "m=2:lambda=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDFS(s)
		if err != nil || d.N > 200 {
			return
		}
		if v := d.Verify(); !v.OK {
			t.Fatalf("%q built an unverified design: %v", s, v.Problems)
		}
	})
}

func FuzzParseQCDAndSparse(f *testing.F) {
	for _, s := range []string{"m=3", "N=49", "K=12,m=4", "K=10,m=2", "m=", "k=3,m=3,m=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if q, err := ParseQCD(s); err == nil && (q.N != q.M*q.M || q.M < 2) {
			t.Fatalf("%q: bad QCD %+v", s, q)
		}
		if sp, err := ParseSparse(s); err == nil && sp.Subscribers*sp.M != sp.Rings*sp.K {
			t.Fatalf("%q: R·m ≠ N·K", s)
		}
	})
}

// What-ifs: construction counts and the analytic capacities that the seed
// also derives analytically must equal the seed's figures.
func TestWhatIfsMatchSeed(t *testing.T) {
	g, err := Gemini()
	if err != nil {
		t.Fatal(err)
	}
	bw, err := BlueWaters()
	if err != nil {
		t.Fatal(err)
	}
	exact := 0
	for _, r := range append(g, bw...) {
		switch {
		case r.Source == "construction" || r.Source == "arithmetic" && !strings.Contains(r.Note, "omits"):
			if r.Seed != 0 && r.Ours != r.Seed {
				t.Errorf("%s %s: ours %g, seed %g", r.Section, r.Item, r.Ours, r.Seed)
			}
			exact++
		case strings.HasPrefix(r.Source, "analytic"):
			if math.Abs(r.Ours-r.Seed) > 0.05 {
				t.Errorf("%s %s: ours %g, seed %g", r.Section, r.Item, r.Ours, r.Seed)
			}
			exact++
		}
	}
	if exact < 15 {
		t.Errorf("only %d exact comparisons", exact)
	}
}

// Seed §3: the multiring raises the capacity of z by 1.5 times (21.8 vs 15)
// and of x, y more than 2 times, for N = 32, 37, 64, 67.
func TestGeminiClaims(t *testing.T) {
	c := func(n int, steps string, copies int) float64 {
		ss, _ := multiring.ParseSteps(steps)
		m, err := multiring.NewCopies(n, ss, copies)
		if err != nil {
			t.Fatal(err)
		}
		return m.Balanced().Effective()
	}
	if r := c(16, "±1,±3", 1) / c(16, "±1", 2); r < 1.45 || r > 1.46 {
		t.Errorf("z: ratio %g, seed 21.8/15", r)
	}
	for _, n := range []int{32, 37, 64, 67} {
		if r := c(n, "±1,±2,±3,±7", 1) / c(n, "±1", 4); r <= 2 {
			t.Errorf("N=%d: multiring / four ±1 rings = %g, seed: more than 2", n, r)
		}
	}
}

func BenchmarkCheckTwoHopQCD49(b *testing.B) {
	q, _ := NewQCD(49)
	g, err := q.Graph("qcd")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if th := CheckTwoHop(g, true, true, func(a, b int) int { return 1 }); th.Bad != 0 {
			b.Fatal(th.FirstBad)
		}
	}
}
