package routing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// geneticCase is one input of the genetic tests.
type geneticCase struct {
	spec, rule      string
	active, transit string // "" = every live node / none
	failLinks       []string
}

var geneticCases = []geneticCase{
	{spec: "torus:4x3", rule: "angara*"},
	{spec: "torus:3x2x2", rule: "angara*"},
	{spec: "torus:2x2x2x2", rule: "angara*"},
	{spec: "torus:4x4", rule: "angara-", active: "0-2.*", transit: "3.0-1"},
	{spec: "torus:4x4", rule: "angara*", active: "0-2.0-2", transit: "3.0-3,0-2.3", failLinks: []string{"1.1+X"}},
	{spec: "torus:4x3x2", rule: "angara*", failLinks: []string{"0.0.0+X", "2.1.1+Y"}},
	{spec: "torus:4x4", rule: "dirbit", failLinks: []string{"0.0+Y"}},
	{spec: "torus:4x3", rule: "dor"},
	{spec: "torus:4x4", rule: "angara", active: "0-2.*", transit: "3.*"},
	{spec: "torus:5x4", rule: "angara"},
}

// geneticSetup builds the router and node sets of a case.
func geneticSetup(t testing.TB, c geneticCase) (*Router, []int, []int) {
	t.Helper()
	g, err := topology.Parse(c.spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.failLinks) > 0 {
		if g, err = g.ApplyFaults(strings.Join(c.failLinks, ","), ""); err != nil {
			t.Fatal(err)
		}
	}
	rule, err := ParseRule(c.rule)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(g, rule)
	if err != nil {
		t.Fatal(err)
	}
	var active, transit []int
	if c.active == "" {
		for v := 0; v < g.NumNodes(); v++ {
			active = append(active, v)
		}
	} else if active, err = g.ParseNodes(c.active); err != nil {
		t.Fatal(err)
	}
	if c.transit != "" {
		if transit, err = g.ParseNodes(c.transit); err != nil {
			t.Fatal(err)
		}
	}
	return r, active, transit
}

// TestGeneticTables checks, over several inputs and seeds, that every
// genetic table passes the independent verifier, keeps every route
// minimal (as long as the BFS route), is deadlock-free whenever the BFS
// table is, and has a balance factor no worse than the BFS table's.
func TestGeneticTables(t *testing.T) {
	for _, c := range geneticCases {
		r, active, transit := geneticSetup(t, c)
		bfs, err := r.Build(context.Background(), active, transit, BuildOptions{})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		for seed := uint64(1); seed <= 3; seed++ {
			name := fmt.Sprintf("%s %s seed %d", c.spec, c.rule, seed)
			tb, err := r.Build(context.Background(), active, transit, BuildOptions{Algo: Genetic, Genetic: GeneticOptions{Seed: seed, Generations: 40, Population: 12, TimeLimit: -1}})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if v := violations(tb); len(v) > 0 {
				t.Fatalf("%s: %d violations, first %v", name, len(v), v[0])
			}
			if tb.Algo != Genetic || tb.NumRoutes() != bfs.NumRoutes() {
				t.Fatalf("%s: algo %v, %d routes, want genetic, %d", name, tb.Algo, tb.NumRoutes(), bfs.NumRoutes())
			}
			for i := 0; i < tb.NumRoutes(); i++ {
				if tb.Len(i) != bfs.Len(i) {
					t.Fatalf("%s: route %d has length %d, the minimal (BFS) length is %d", name, i, tb.Len(i), bfs.Len(i))
				}
			}
			if bfs.DeadlockFree && !tb.DeadlockFree {
				t.Fatalf("%s: the genetic table deadlocks (%s), the BFS table does not", name, r.CycleString(tb.Cycle))
			}
			if tb.Figures.BalanceFactor > bfs.Figures.BalanceFactor {
				t.Fatalf("%s: balance factor %.2f %%, BFS %.2f %%", name, tb.Figures.BalanceFactor, bfs.Figures.BalanceFactor)
			}
			if run := tb.GeneticRun; run.BFS != bfs.Figures || tb.Figures.PiMax < run.PiMaxBound {
				t.Fatalf("%s: run %+v, table %v, BFS %v", name, run, tb.Figures, bfs.Figures)
			}
		}
	}
}

// TestGeneticCandidatesAreMinimalRoutes compares the candidate routes of
// every pair with all direction sequences of the pair's minimal length
// that the verifier's rule check (the definitions, not RG) accepts over
// live links inside the set: the same routes, each once.
func TestGeneticCandidatesAreMinimalRoutes(t *testing.T) {
	for _, c := range geneticCases {
		r, active, transit := geneticSetup(t, c)
		bfs, err := r.Build(context.Background(), active, transit, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := r.geneSpaceOf(bfs, GeneticOptions{MaxCandidates: 255}, tableRun{})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		inSet := make([]bool, r.t.nodes)
		for _, v := range append(slices.Clone(active), transit...) {
			inSet[v] = true
		}
		tmp := Table{r: r, stride: bfs.stride, wide: bfs.wide}
		for i := 0; i < bfs.NumRoutes(); i++ {
			src, dst := bfs.Pair(i)
			var got []string
			for k := sp.first[i]; k < sp.first[i+1]; k++ {
				tmp.codes = sp.code(int(k))
				got = append(got, FormatDirs(tmp.AppendDirs(0, nil)))
			}
			want := legalSequences(r, src, dst, bfs.Len(i), inSet)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%v: %s → %s: candidates %v, minimal legal routes %v", c, r.t.name(src), r.t.name(dst), got, want)
			}
		}
	}
}

// legalSequences lists, sorted, every direction sequence of length L from
// src that stays on live links inside the set, ends at dst and is legal.
func legalSequences(r *Router, src, dst, L int, inSet []bool) []string {
	var out []string
	dirs := make([]Dir, L)
	chans := make([]int32, L)
	var rec func(k, v int)
	rec = func(k, v int) {
		if k == L {
			if v == dst && r.legal(dirs, chans[0], chans[max(0, L-2)]) {
				out = append(out, FormatDirs(dirs))
			}
			return
		}
		if k > 0 && !inSet[v] {
			return
		}
		for d := Dir(0); int(d) < r.t.nd; d++ {
			c := r.t.chAt(v, d)
			if !r.up[c] {
				continue
			}
			dirs[k], chans[k] = d, c
			rec(k+1, int(r.t.nbAt(v, d)))
		}
	}
	rec(0, src)
	slices.Sort(out)
	return out
}

// TestGeneticDeterministic: the same seed and generation count give the
// same table byte for byte, whatever the number of workers.
func TestGeneticDeterministic(t *testing.T) {
	for _, c := range []geneticCase{geneticCases[1], geneticCases[4], geneticCases[8]} {
		r, active, transit := geneticSetup(t, c)
		var first []byte
		for _, workers := range []int{1, 2, 3, 1} {
			tb, err := r.Build(context.Background(), active, transit, BuildOptions{Algo: Genetic, Workers: workers, Genetic: GeneticOptions{Seed: 42, Generations: 30, Population: 10, TimeLimit: -1}})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := tb.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = buf.Bytes()
			} else if !bytes.Equal(first, buf.Bytes()) {
				t.Fatalf("%v: seed 42 with %d workers gives another table", c, workers)
			}
		}
	}
}

// TestGeneticStops: a cancelled context stops the run after the current
// generation with the best table so far, a context cancelled before the
// call is an error, a time limit stops the run, and a table that reaches
// the lower bound of π_max stops as optimal.
func TestGeneticStops(t *testing.T) {
	r, active, transit := geneticSetup(t, geneticCase{spec: "torus:4x4x2", rule: "angara*"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := BuildOptions{Algo: Genetic, Genetic: GeneticOptions{Seed: 1, Population: 8, NoGenerationLimit: true, TimeLimit: -1}}
	o.Progress = func(gen, _ int) {
		if gen == 3 {
			cancel()
		}
	}
	tb, err := r.Build(ctx, active, transit, o)
	if err != nil {
		t.Fatal(err)
	}
	if run := tb.GeneticRun; run.Stop != StopCancelled || run.Generations != 3 || len(violations(tb)) > 0 {
		t.Fatalf("cancelled after generation 3: stop %q after %d generations", run.Stop, run.Generations)
	}
	if _, err := r.Build(ctx, active, transit, BuildOptions{Algo: Genetic}); !errors.Is(err, context.Canceled) {
		t.Fatalf("context cancelled before the call: err %v, want context.Canceled", err)
	}
	tb, err = r.Build(context.Background(), active, transit, BuildOptions{Algo: Genetic, Genetic: GeneticOptions{NoGenerationLimit: true, TimeLimit: 1}})
	if run := tb.GeneticRun; err != nil || run.Stop != StopTimeLimit || run.Generations != 0 {
		t.Fatalf("1 ns time limit: %v, %+v", err, run)
	}
	r, active, transit = geneticSetup(t, geneticCase{spec: "torus:2x2x2x2", rule: "angara*"})
	tb, err = r.Build(context.Background(), active, transit, BuildOptions{Algo: Genetic, Genetic: GeneticOptions{Seed: 1, TimeLimit: -1}})
	if run := tb.GeneticRun; err != nil || run.Stop != StopOptimal || tb.Figures.PiMax != run.PiMaxBound || run.BFS.PiMax <= run.PiMaxBound {
		t.Fatalf("2x2x2x2: %v, %+v, table %v", err, run, tb.Figures)
	}
}

// TestGeneticAlgo: "genetic" is an algorithm name; Build with it and the
// zero GeneticOptions gives the table of the documented defaults and its
// run, and refuses to leave it unverified; other tables have no run.
func TestGeneticAlgo(t *testing.T) {
	a, err := ParseAlgo("genetic")
	if err != nil || a != Genetic || a.String() != "genetic" {
		t.Fatalf("ParseAlgo(genetic) = %v, %v", a, err)
	}
	r, active, transit := geneticSetup(t, geneticCases[1]) // reaches the optimum in a few generations
	tb, err := r.Build(context.Background(), active, transit, BuildOptions{Algo: Genetic})
	if err != nil {
		t.Fatal(err)
	}
	defaults := GeneticOptions{Population: DefaultGeneticPopulation, Generations: DefaultGeneticGenerations, TimeLimit: DefaultGeneticTimeLimit}
	want, err := r.Build(context.Background(), active, transit, BuildOptions{Algo: Genetic, Genetic: defaults})
	if err != nil {
		t.Fatal(err)
	}
	if tb.Figures != want.Figures || !bytes.Equal(tb.codes, want.codes) || tb.GeneticRun == nil || tb.GeneticRun.Population != DefaultGeneticPopulation {
		t.Fatalf("Build(Genetic) %v (run %+v) differs from the defaults' %v", tb.Figures, tb.GeneticRun, want.Figures)
	}
	if _, err := r.Build(context.Background(), active, transit, BuildOptions{Algo: Genetic, Unverified: true}); err == nil {
		t.Fatal("Build(Genetic, Unverified) gave a table")
	}
	if bfs, err := r.Build(context.Background(), active, transit, BuildOptions{}); err != nil || bfs.GeneticRun != nil {
		t.Fatalf("a BFS table: %v, run %+v", err, bfs.GeneticRun)
	}
}

// BenchmarkGeneticTable times the default genetic run (seed 1, 1000
// generations, population 32, all cores, no time limit) on whole
// fault-free 48-node tori, BFS table and verification included.
//
//	go test -run XXX -bench GeneticTable -benchtime 1x ./routing
func BenchmarkGeneticTable(b *testing.B) {
	for _, spec := range []string{"torus:8x6", "torus:4x4x3", "torus:4x3x2x2"} {
		b.Run(spec, func(b *testing.B) {
			r, active, _ := geneticSetup(b, geneticCase{spec: spec, rule: "angara*"})
			c0 := cpuTime()
			var tb *Table
			var run *GeneticRun
			for i := 0; i < b.N; i++ {
				var err error
				if tb, err = r.Build(context.Background(), active, nil, BuildOptions{Algo: Genetic, Genetic: GeneticOptions{Seed: 1, TimeLimit: -1}}); err != nil {
					b.Fatal(err)
				}
				run = tb.GeneticRun
			}
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(tb.Figures.BalanceFactor, "balance-%")
			b.ReportMetric(run.BFS.BalanceFactor, "bfs-balance-%")
			b.ReportMetric(float64(run.Generations), "generations")
		})
	}
}
