package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/multiring"
	"github.com/spf13/cobra"
)

func newMultiringCmd() *cobra.Command {
	mr := &cobra.Command{Use: "multiring", Short: "Non-switched multirings: route schedules, capacity, search for the best rings"}
	mr.AddCommand(newMultiringCapacityCmd(), newMultiringSearchCmd(), newMultiringFamilyCmd())
	return mr
}

// multiringCapacityOptions are the flags of icn multiring capacity.
type multiringCapacityOptions struct {
	out      output
	n        int
	copies   int
	steps    string
	schedule string
}

func newMultiringCapacityCmd() *cobra.Command {
	var o multiringCapacityOptions
	c := &cobra.Command{
		Use:   "capacity",
		Short: "Route table, route schedule and per-ring / effective capacity of a multiring (seed 000 tables 2.1–2.3)",
		Example: `  icn multiring capacity --n 16 --steps ±1,±3 --schedule shortest   # table 2.2, C = 20
  icn multiring capacity --n 16 --steps ±1,±3                        # table 2.3, C = 21.8
  icn multiring capacity --n 32 --steps ±1 --copies 4                # Gemini x/y: four ±1 rings
  icn multiring capacity --n 128 --steps ±1,±2,±3,±5,±7,±9 --schedule optimal --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMultiringCapacity(c.Context(), o, stdout(c))
		},
	}
	c.Flags().IntVar(&o.n, "n", 16, "number of nodes N")
	c.Flags().StringVar(&o.steps, "steps", "±1,±3", stepsUsage)
	c.Flags().StringVar(&o.schedule, "schedule", "balanced", "route schedule: "+scheduleKindsUsage)
	c.Flags().IntVar(&o.copies, "copies", 1, copiesUsage)
	o.out.register(c)
	return c
}

// runMultiringCapacity builds the multiring, computes the chosen route
// schedule and writes its capacity report.
func runMultiringCapacity(_ context.Context, o multiringCapacityOptions, w io.Writer) error {
	m, err := parseMultiring(o.n, o.steps, o.copies)
	if err != nil {
		return err
	}
	s, err := m.Schedule(o.schedule)
	if err != nil {
		return err
	}
	rep := s.Report()
	return o.out.print(w, rep, func(w io.Writer) error { return writeCapacity(w, rep) })
}

// Flag help shared by the commands that take a multiring (icn multiring
// capacity, icn sim multiring), which read it alike (parseMultiring).
const (
	stepsUsage         = "ring steps: ±s (or +-s, +/-s) for a duplex ring, s or -s for a simplex ring, separated by commas, semicolons or spaces (or @FILE)"
	copiesUsage        = "identical copies of every ring (Gemini's four ±1 rings: --steps ±1 --copies 4)"
	scheduleKindsUsage = "shortest, balanced (seed heuristic) or optimal (linear program)"
)

// parseMultiring is the multiring of --n, --steps (or @FILE) and
// --copies: multiring's one reader of ring steps and its constructor, so
// every command accepts the same spellings, orders the rings alike
// (ascending mod N) and refuses bad steps with the same one-line error.
func parseMultiring(n int, steps string, copies int) (*multiring.Multiring, error) {
	st, err := readArgFile(steps)
	if err != nil {
		return nil, err
	}
	ss, err := multiring.ParseSteps(st)
	if err != nil {
		return nil, err
	}
	return multiring.NewCopies(n, ss, copies)
}

// multiringSearchOptions are the flags of icn multiring search.
type multiringSearchOptions struct {
	out                              output
	n, rings, top, maxCable, workers int
	include                          string
}

func newMultiringSearchCmd() *cobra.Command {
	var o multiringSearchOptions
	c := &cobra.Command{
		Use:   "search",
		Short: "Find the duplex multirings with the largest balanced effective capacity (seed 000 table 2.4)",
		Example: `  icn multiring search --n 128 --rings 12
  icn multiring search --n 32 --rings 8 --max-cable 13     # the seed's {±1,±2,±3,±7}
  icn multiring search --n 64 --rings 10 --include ±1,±2,±3,±7 --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMultiringSearch(c.Context(), o, stdout(c))
		},
	}
	c.Flags().IntVar(&o.n, "n", 16, "number of nodes N (3..4096)")
	c.Flags().IntVar(&o.rings, "rings", 4, "number of simplex rings n (even: n/2 duplex rings)")
	c.Flags().IntVar(&o.top, "top", 5, "how many multirings to list")
	c.Flags().IntVar(&o.maxCable, "max-cable", 0, "only sets whose cable (Σ s over ±s, in ring-±1 lengths) is at most this (0 = any)")
	c.Flags().StringVar(&o.include, "include", "", "duplex steps every set must contain (a growable family), e.g. ±1,±2,±3")
	c.Flags().IntVar(&o.workers, "workers", 0, "parallel workers (0 = all cores)")
	o.out.register(c)
	return c
}

// multiringSearchResult is the JSON of icn multiring search.
type multiringSearchResult struct {
	*multiring.SearchResult
	CPerN     []float64 `json:"c_per_n"`
	CableSeed int       `json:"cable_seed_formula"`
	Seconds   float64   `json:"seconds"`
}

// runMultiringSearch searches the best duplex multirings with progress on
// stderr and writes the list.
func runMultiringSearch(_ context.Context, o multiringSearchOptions, w io.Writer) error {
	so := multiring.SearchOptions{N: o.n, Rings: o.rings, Top: o.top, MaxCable: o.maxCable, Workers: o.workers}
	if o.include != "" {
		ss, err := multiring.ParseSteps(o.include)
		if err != nil {
			return err
		}
		so.Include = ss
	}
	if o.top < 1 || o.top > 1000 {
		return fmt.Errorf("--top %d out of range 1..1000", o.top)
	}
	bar := cli.NewProgress(1000, "searching", false)
	// The search's workers report concurrently.
	var mu sync.Mutex
	last := 0
	so.Report = func(done, total int64) {
		v := int(1000 * done / max(total, 1))
		mu.Lock()
		defer mu.Unlock()
		if v > last {
			bar.Add(v - last)
			last = v
		}
	}
	start := time.Now()
	r, err := multiring.Search(so)
	bar.Done()
	if err != nil {
		return err
	}
	res := multiringSearchResult{SearchResult: r, CableSeed: multiring.CableSeed(o.rings), Seconds: time.Since(start).Seconds()}
	for _, b := range r.Best {
		res.CPerN = append(res.CPerN, b.Balanced/float64(o.n))
	}
	return o.out.print(w, res, func(w io.Writer) error { return writeSearch(w, res, o.workers) })
}

// writeSearch prints the best multirings of a search.
func writeSearch(w io.Writer, res multiringSearchResult, workers int) error {
	n, rings := res.N, res.Rings
	fmt.Fprintf(w, "Best duplex multirings, N=%d, %d rings (%d duplex)\n\n", n, rings, rings/2)
	t := cli.NewTable("#", "steps", "C balanced", "C/N", "C shortest", "bound", "cable")
	for i, b := range res.Best {
		t.Row(i+1, stepSet(b.Steps), b.Balanced, b.Balanced/float64(n), b.Shortest, b.Bound, b.Cable)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d step sets (isomorphic copies removed when unconstrained), %d balanced, rest pruned by the bound; %s on %d workers\n",
		res.Sets, res.Evaluated, cli.Duration(time.Duration(res.Seconds*float64(time.Second))), par.Workers(workers))
	fmt.Fprintf(w, "cable: ring-±1 lengths with all rings laid along ±1; seed formula E(%d) = %d (≈ n²/2-4n = %s)\n",
		rings, multiring.CableSeed(rings), cli.Float(multiring.CableSeedApprox(rings)))
	return nil
}

// multiringFamilyOptions are the flags of icn multiring family.
type multiringFamilyOptions struct {
	out    output
	search bool
	plot   string
}

func newMultiringFamilyCmd() *cobra.Command {
	var o multiringFamilyOptions
	c := &cobra.Command{
		Use:   "family",
		Short: "The seed's growable quasi-optimal multirings (table 2.4) with capacities, C/N and cable",
		Example: `  icn multiring family
  icn multiring family --search --plot family.svg`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMultiringFamily(c.Context(), o, stdout(c))
		},
	}
	c.Flags().BoolVar(&o.search, "search", false, "also search the best multiring per row (within the seed set's cable and unconstrained)")
	c.Flags().StringVar(&o.plot, "plot", "", "write C(N) for the seed's sets as a chart (.svg or .png)")
	o.out.register(c)
	return c
}

// runMultiringFamily evaluates the seed's table 2.4 (and with --search the
// best multiring per row), optionally plots it, and writes the table.
func runMultiringFamily(_ context.Context, o multiringFamilyOptions, w io.Writer) error {
	bar := cli.NewProgress(len(multiring.Table24), "table 2.4", false)
	rows, err := multiring.Family(o.search, 0, func(int) { bar.Add(1) })
	bar.Done()
	if err != nil {
		return err
	}
	if o.plot != "" {
		if err := plotFamily(rows, o.plot); err != nil {
			return err
		}
	}
	return o.out.print(w, rows, func(w io.Writer) error { return writeFamily(w, rows, o.search) })
}

// writeFamily prints table 2.4 with the computed capacities.
func writeFamily(w io.Writer, rows []multiring.FamilyRow, search bool) error {
	h := []string{"N", "rings", "seed steps", "C shortest", "C balanced", "C optimal", "C/N", "cable", "E(n) seed"}
	if search {
		h = append(h, "best within cable", "C", "best overall", "C", "C/N", "search time")
	}
	t := cli.NewTable(h...)
	for _, r := range rows {
		vals := []any{r.N, r.Rings, r.StepSet, r.Shortest, r.Balanced, r.Optimal, r.CPerN, r.Cable, r.CableSeed}
		if search {
			vals = append(vals, stepSet(r.BestUnderCable.Steps), r.BestUnderCable.Balanced,
				stepSet(r.Best.Steps), r.Best.Balanced, r.Best.Balanced/float64(r.N),
				cli.Duration(time.Duration(r.SearchSeconds*float64(time.Second))))
		}
		t.Row(vals...)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nC: effective capacity N(N-1)/L; cable: Σ s in lengths of ring ±1 (rings laid along ±1);")
	fmt.Fprintln(w, "E(n) seed: 4 + Σ_{i=1}^{n/2-1} 2(2i-1) = n²/2-2n+6 as printed in the seed (its approximation n²/2-4n does not follow from it).")
	return nil
}

func stepSet(duplex []int) string {
	parts := make([]string, len(duplex))
	for i, s := range duplex {
		parts[i] = "±" + strconv.Itoa(s)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func writeCapacity(w io.Writer, r *multiring.CapacityReport) error {
	n := r.N
	fmt.Fprintf(w, "Multiring N=%d %s, %d rings, %s schedule\n\n", n, r.StepSet, len(r.Steps), r.Schedule)
	fmt.Fprintln(w, "Route table (seed table 2.1): node reached after h hops from node 0; * marks nodes this ring reaches by a shortest path")
	h := []string{"ring"}
	for i := 0; i < n; i++ {
		h = append(h, strconv.Itoa(i))
	}
	t := cli.NewTable(h...)
	for j, row := range r.Table {
		vals := []any{row.Ring}
		for hop, v := range r.RouteTable[j] {
			s := strconv.Itoa(v)
			if hop > 0 && v > 0 && row.Shortest[v-1] {
				s += "*"
			}
			vals = append(vals, s)
		}
		t.Row(vals...)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nRoute schedule R(r) = p_jr (seed tables 2.2/2.3): share of routes of length r (on ring 1) sent on ring j\n")
	h = []string{"ring"}
	for i := 1; i < n; i++ {
		h = append(h, strconv.Itoa(i))
	}
	h = append(h, "L_j", "routes", "mean len", "c_j")
	t = cli.NewTable(h...)
	for _, row := range r.Table {
		vals := []any{row.Ring}
		for _, p := range row.Shares {
			vals = append(vals, p)
		}
		vals = append(vals, row.Load, row.Routes, row.MeanLength, row.Capacity)
		t.Row(vals...)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return cli.KV(w,
		"effective capacity C = N(N-1)/max L_j", fmt.Sprintf("%s  (= %d·%d/%s)", cli.Float(r.EffectiveCapacity), n, n-1, cli.Float(r.MaxLoad)),
		"sum of ring capacities Σ c_j", r.SumCapacity,
		"upper bound for any schedule", r.UpperBound,
	)
}

func plotFamily(rows []multiring.FamilyRow, path string) error {
	ch := cli.Chart{Title: "Seed table 2.4: effective capacity of growable multirings", XLabel: "N", YLabel: "C"}
	byRings := map[int]*cli.Series{}
	var order []int
	for _, r := range rows {
		s, ok := byRings[r.Rings]
		if !ok {
			s = &cli.Series{Name: fmt.Sprintf("%d rings", r.Rings)}
			byRings[r.Rings] = s
			order = append(order, r.Rings)
		}
		s.X = append(s.X, float64(r.N))
		s.Y = append(s.Y, r.Balanced)
	}
	for _, k := range order {
		ch.Series = append(ch.Series, *byRings[k])
	}
	return cli.SavePlot(ch, path)
}
