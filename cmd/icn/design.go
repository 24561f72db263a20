package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/icn-hpc/icn/design"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/spf13/cobra"
)

func newDesignCmd() *cobra.Command {
	dg := &cobra.Command{Use: "design", Short: "Block designs, distributed full switches, quasi-complete digraphs, sparse multirings and what-if designs"}
	dg.AddCommand(newDesignBibdCmd(), newDesignVerifyCmd(), newDesignTableCmd(), newDesignDFSCmd(),
		newDesignQCDCmd(), newDesignSMRCmd(), newDesignWhatIfCmd())
	return dg
}

// designBibdOptions are the flags of icn design bibd.
type designBibdOptions struct {
	out     output
	n, m    int
	lambda  string
	summary bool
	budget  int64
}

func newDesignBibdCmd() *cobra.Command {
	var o designBibdOptions
	c := &cobra.Command{
		Use:   "bibd",
		Short: "Construct and verify the symmetric block design B(N, m, λ)",
		Example: `  icn design bibd --n 7 --m 4 --lambda 2          # table 4.2
  icn design bibd --n 1407 --m 38 --lambda 1 --summary
  icn design bibd --n 39 --m 7 --lambda '1|2'     # the seed's DFS(39,7,1|2)
  icn design bibd --n 1049601 --m 1025 --summary  # plane of order 1024`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDesignBibd(c.Context(), o, stdout(c))
		},
	}
	c.Flags().IntVar(&o.n, "n", 0, "number of elements N (0 = m(m-1)/λ+1)")
	c.Flags().IntVar(&o.m, "m", 4, "block size m (ports per subscriber, switch size)")
	c.Flags().StringVar(&o.lambda, "lambda", "1", "λ, or λ|λ+1 for a cyclic quasi-design such as DFS(39,7,1|2)")
	c.Flags().BoolVar(&o.summary, "summary", false, "do not list the blocks")
	c.Flags().Int64Var(&o.budget, "search-budget", design.DefaultSearchBudget, "search steps allowed for a cyclic difference set when no algebraic construction applies")
	o.out.register(c)
	return c
}

// designBibdResult is the JSON of icn design bibd.
type designBibdResult struct {
	N             int                 `json:"n"`
	M             int                 `json:"m"`
	Lambda        string              `json:"lambda"`
	Construction  string              `json:"construction"`
	DifferenceSet []int               `json:"difference_set,omitempty"` // residues mod N, 0-based
	XorSet        []int               `json:"xor_set,omitempty"`
	Verification  design.Verification `json:"verification"`
	Blocks        [][]int             `json:"blocks,omitempty"` // 1-based elements
	Seconds       float64             `json:"seconds"`
}

// runDesignBibd constructs the design, verifies it and writes it; a design
// that fails verification exits 1.
func runDesignBibd(_ context.Context, o designBibdOptions, w io.Writer) error {
	start := time.Now()
	d, err := buildDesign(o.n, o.m, o.lambda, o.budget)
	if err != nil {
		return err
	}
	v := d.Verify()
	res := designBibdResult{N: d.N, M: d.M, Lambda: lambdaString(d), Construction: d.Construction, DifferenceSet: d.DiffSet, XorSet: d.XorSet, Verification: v}
	if !o.summary {
		bs, err := d.Blocks()
		if err != nil {
			return fmt.Errorf("%v (or use --summary)", err)
		}
		res.Blocks = oneBased(bs)
	}
	res.Seconds = time.Since(start).Seconds()
	err = o.out.print(w, res, func(w io.Writer) error {
		fmt.Fprintf(w, "%s: %s\n", d.Name(), d.Construction)
		if d.DiffSet != nil && len(d.DiffSet) <= 64 {
			fmt.Fprintf(w, "difference set mod %d: %s (block i = D + i)\n", d.N, cli.Cell(d.DiffSet))
		} else if d.DiffSet != nil {
			fmt.Fprintf(w, "difference set mod %d: %d residues (see --json)\n", d.N, len(d.DiffSet))
		}
		writeVerification(w, v)
		fmt.Fprintf(w, "time: %s\n", cli.Duration(time.Since(start)))
		if o.summary {
			return nil
		}
		fmt.Fprintln(w)
		return writeBlockTable(w, "block", res.Blocks)
	})
	if err != nil {
		return err
	}
	if !v.OK {
		return &exitError{1, fmt.Errorf("%s failed verification", d.Name())}
	}
	return nil
}

// designVerifyOptions are the flags of icn design verify.
type designVerifyOptions struct {
	out    output
	lambda int
	file   string
}

func newDesignVerifyCmd() *cobra.Command {
	var o designVerifyOptions
	c := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check a block table: N blocks of m elements, every element in m blocks, every pair in exactly λ blocks",
		Long: `Reads one block per line (elements numbered from 1, separated by spaces, tabs
or commas; an optional label "3:" or "3 |" starts a line; '#' comments), or the
JSON written by 'icn design bibd --json'. Exit status 1 if the table is not a
symmetric design.`,
		Example: `  icn design verify blocks.txt
  icn design bibd --n 13 --m 4 --json > b.json && icn design verify b.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			return runDesignVerify(c.Context(), o, stdout(c))
		},
	}
	c.Flags().IntVar(&o.lambda, "lambda", 0, "expected λ (0 = as many as elements 1 and 2 share)")
	o.out.register(c)
	return c
}

// runDesignVerify reads a block table (or - for stdin) and checks it.
func runDesignVerify(_ context.Context, o designVerifyOptions, w io.Writer) error {
	var data []byte
	var err error
	if o.file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(o.file)
	}
	if err != nil {
		return err
	}
	blocks, n, err := design.ParseBlocks(string(data))
	if err != nil {
		return fmt.Errorf("%s: %v", o.file, err)
	}
	v := design.Verify(n, blocks, o.lambda)
	if err := o.out.print(w, v, func(w io.Writer) error { writeVerification(w, v); return nil }); err != nil {
		return err
	}
	if !v.OK {
		return &exitError{1, fmt.Errorf("%s is not a symmetric design B(%d,%d,%d): %d problems", o.file, v.N, v.M, v.Lambda, v.ProblemCount)}
	}
	return nil
}

func newDesignTableCmd() *cobra.Command {
	var out output
	c := &cobra.Command{
		Use:   "table",
		Short: "Which B(N, m, λ) of the seed's tables 4.3 (λ=1) and 4.4 (λ=2) exist, are constructed, impossible or open",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDesignTable(c.Context(), out, stdout(c))
		},
	}
	out.register(c)
	return c
}

// runDesignTable classifies the seed's tables 4.3 and 4.4.
func runDesignTable(_ context.Context, out output, w io.Writer) error {
	rows := design.SeedTable()
	return out.print(w, rows, func(w io.Writer) error {
		t := cli.NewTable("λ", "m", "N", "status", "how / why")
		for _, r := range rows {
			why := r.Reason
			if r.Status == design.Constructed {
				why = r.Construction
			}
			t.Row(r.Lambda, r.M, r.N, r.Status, why)
		}
		return t.Write(w)
	})
}

// designDFSOptions are the flags of icn design dfs.
type designDFSOptions struct {
	out    output
	n, m   int
	lambda string
}

func newDesignDFSCmd() *cobra.Command {
	var o designDFSOptions
	c := &cobra.Command{
		Use:   "dfs",
		Short: "Distributed full switch DFS(N, m, λ): interconnection table (seed table 4.2) and two-hop path check",
		Example: `  icn design dfs --n 7 --m 4 --lambda 2
  icn design dfs --n 39 --m 7 --lambda '1|2'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDesignDFS(c.Context(), o, stdout(c))
		},
	}
	c.Flags().IntVar(&o.n, "n", 0, "subscribers N (0 = m(m-1)/λ+1)")
	c.Flags().IntVar(&o.m, "m", 4, "ports per subscriber = switch size")
	c.Flags().StringVar(&o.lambda, "lambda", "2", "λ, or λ|λ+1")
	o.out.register(c)
	return c
}

// runDesignDFS builds the distributed full switch of a design, checks its
// two-hop paths and writes its interconnection table.
func runDesignDFS(_ context.Context, o designDFSOptions, w io.Writer) error {
	d, err := buildDesign(o.n, o.m, o.lambda, design.DefaultSearchBudget)
	if err != nil {
		return err
	}
	spec := fmt.Sprintf("dfs:N=%d,m=%d,lambda=%s", d.N, d.M, lambdaString(d))
	g, err := design.DFSGraph(d, spec)
	if err != nil {
		return err
	}
	th := design.CheckTwoHop(g, false, false, d.PairLambda)
	bs, err := d.Blocks()
	if err != nil {
		return err
	}
	res := struct {
		Spec         string        `json:"spec"`
		Construction string        `json:"construction"`
		Switches     [][]int       `json:"switches"` // 1-based subscribers of each switch
		TwoHop       design.TwoHop `json:"two_hop"`
	}{spec, d.Construction, oneBased(bs), th}
	if err := o.out.print(w, res, func(w io.Writer) error {
		fmt.Fprintf(w, "DFS(%d,%d,%s) = %s: %s\nspec: %s (%d nodes, %d links)\n\n", d.N, d.M, lambdaString(d), d.Name(), d.Construction, spec, g.NumNodes(), g.NumLinks())
		if err := writeBlockTable(w, fmt.Sprintf("switch %d×%d", d.M, d.M), res.Switches); err != nil {
			return err
		}
		writeTwoHop(w, th, "two-hop paths between distinct subscribers through distinct switches")
		return nil
	}); err != nil {
		return err
	}
	if th.Bad > 0 {
		return &exitError{1, fmt.Errorf("two-hop check failed: %s", th.FirstBad)}
	}
	return nil
}

func newDesignQCDCmd() *cobra.Command {
	var out output
	var m int
	c := &cobra.Command{
		Use:     "qcd",
		Short:   "Minimal quasi-complete digraph / full 2D multiring on N=m² subscribers: interconnection table (seed table 4.1) and path check",
		Example: `  icn design qcd --m 3`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDesignQCD(c.Context(), out, m, stdout(c))
		},
	}
	c.Flags().IntVar(&m, "m", 3, "ports per subscriber and switch size (N = m²)")
	out.register(c)
	return c
}

// qcdRow is one switch of a quasi-complete digraph.
type qcdRow struct {
	Switch int   `json:"switch"`
	From   []int `json:"from"`
	To     []int `json:"to"`
}

// runDesignQCD builds the quasi-complete digraph, checks its paths and
// writes its interconnection table.
func runDesignQCD(_ context.Context, out output, m int, w io.Writer) error {
	q, err := design.NewQCD(m)
	if err != nil {
		return err
	}
	spec := fmt.Sprintf("qcd:m=%d", m)
	g, err := q.Graph(spec)
	if err != nil {
		return err
	}
	th := design.CheckTwoHop(g, true, true, func(a, b int) int { return 1 })
	res := struct {
		Spec   string        `json:"spec"`
		N      int           `json:"n"`
		M      int           `json:"m"`
		Table  []qcdRow      `json:"table"`
		TwoHop design.TwoHop `json:"two_hop"`
	}{Spec: spec, N: q.N, M: q.M, TwoHop: th}
	for i := 1; i <= q.N; i++ {
		res.Table = append(res.Table, qcdRow{i, q.From(i), q.To(i)})
	}
	if err := out.print(w, res, func(w io.Writer) error {
		fmt.Fprintf(w, "Quasi-complete digraph, N=%d subscribers and %d switches %d×%d; spec %s\n\n", q.N, q.N, m, m, spec)
		t := cli.NewTable("switch", "simplex channels from subscribers", "simplex channels to subscribers")
		for _, r := range res.Table {
			t.Row(r.Switch, joinInts(r.From), joinInts(r.To))
		}
		if err := t.Write(w); err != nil {
			return err
		}
		writeTwoHop(w, th, "paths subscriber → switch → subscriber per ordered pair (including a subscriber to itself)")
		return nil
	}); err != nil {
		return err
	}
	if th.Bad > 0 {
		return &exitError{1, fmt.Errorf("path check failed: %s", th.FirstBad)}
	}
	return nil
}

func newDesignSMRCmd() *cobra.Command {
	var out output
	var k, m int
	c := &cobra.Command{
		Use:   "smr",
		Short: "Multiring with sparse rings: ring connection table (seed tables 7.1/7.2) and capacity",
		Example: `  icn design smr --k 10 --m 2
  icn design smr --k 12 --m 4`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDesignSMR(c.Context(), out, k, m, stdout(c))
		},
	}
	c.Flags().IntVar(&k, "k", 12, "ports per duplex ring (multiple of m)")
	c.Flags().IntVar(&m, "m", 4, "duplex rings per subscriber (m-1 must be 1 or a prime power)")
	out.register(c)
	return c
}

// smrResult is the JSON of icn design smr.
type smrResult struct {
	Spec              string  `json:"spec"`
	K                 int     `json:"k"`
	M                 int     `json:"m"`
	Rings             int     `json:"rings"`
	Subscribers       int     `json:"subscribers"`
	Table             [][]int `json:"table"` // per duplex ring: subscriber at each port
	SharedMin         int     `json:"shared_rings_min"`
	SharedMax         int     `json:"shared_rings_max"`
	EffectiveCapacity float64 `json:"effective_capacity"`
	RingCapacity      float64 `json:"ring_capacity"`
}

// runDesignSMR builds the sparse multiring, computes its capacity and
// writes its ring connection table.
func runDesignSMR(_ context.Context, out output, k, m int, w io.Writer) error {
	s, err := design.NewSparse(k, m)
	if err != nil {
		return err
	}
	nc, err := s.RingNet().Capacity()
	if err != nil {
		return err
	}
	lo, hi := s.SharedRings()
	res := smrResult{fmt.Sprintf("smr:K=%d,m=%d", k, m), k, m, s.Rings, s.Subscribers, s.Table, lo, hi, nc.Effective, nc.RingCapacity[0]}
	return out.print(w, res, func(w io.Writer) error {
		fmt.Fprintf(w, "Sparse multiring: %d duplex rings of %d ports, %d subscribers with %d ports; parts wired by B(%d,%d,1), D = %s\n\n",
			s.Rings, k, s.Subscribers, 2*m, s.Rings, m, cli.Cell(s.D))
		h := []string{"ring/port"}
		for p := 1; p <= k; p++ {
			h = append(h, strconv.Itoa(p))
		}
		t := cli.NewTable(h...)
		for i, row := range s.Table {
			vals := []any{i + 1}
			for _, x := range row {
				vals = append(vals, x)
			}
			t.Row(vals...)
		}
		if err := t.Write(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
		return cli.KV(w,
			"rings shared by two subscribers", fmt.Sprintf("%d..%d (every pair rides one ring, no switching)", lo, hi),
			"effective capacity (shortest schedule)", nc.Effective,
			"one duplex ring of K alone", nc.RingCapacity[0],
			"seed estimate (rings × 7.5)", float64(s.Rings)*7.5,
		)
	})
}

func newDesignWhatIfCmd() *cobra.Command {
	var out output
	c := &cobra.Command{
		Use:       "whatif gemini|bluewaters",
		Short:     "The seed's what-if designs for Cray Gemini (multirings) and IBM Blue Waters (distributed full switches)",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"gemini", "bluewaters"},
		RunE: func(c *cobra.Command, args []string) error {
			return runDesignWhatIf(c.Context(), out, args[0], stdout(c))
		},
	}
	out.register(c)
	return c
}

// runDesignWhatIf writes the what-if table of one machine.
func runDesignWhatIf(_ context.Context, out output, which string, w io.Writer) error {
	var rows []design.WhatIf
	var err error
	switch strings.ToLower(which) {
	case "gemini":
		rows, err = design.Gemini()
	case "bluewaters", "blue-waters":
		rows, err = design.BlueWaters()
	default:
		return fmt.Errorf("unknown what-if %q (want gemini or bluewaters)", which)
	}
	if err != nil {
		return err
	}
	return out.print(w, rows, func(w io.Writer) error {
		t := cli.NewTable("§", "item", "network", "ours", "seed", "seed's source", "note")
		for _, r := range rows {
			var ours, seed any = r.Ours, r.Seed
			if r.Ours == 0 {
				ours = "-"
			}
			if r.Seed == 0 {
				seed = "-"
			}
			t.Row(r.Section, r.Item, r.Network, ours, seed, r.Source, r.Note)
		}
		if err := t.Write(w); err != nil {
			return err
		}
		if strings.HasPrefix(strings.ToLower(which), "g") {
			fmt.Fprintln(w, "\nOur capacities are analytic (C = N(N-1)/L); the seed's §3 figures come from simulation.")
		}
		return nil
	})
}

func buildDesign(n, m int, lambda string, budget int64) (*design.Design, error) {
	lo, hi, quasi := strings.Cut(lambda, "|")
	l, err := strconv.Atoi(strings.TrimSpace(lo))
	if err != nil || l < 1 {
		return nil, fmt.Errorf("--lambda %q: want a positive whole number or λ|λ+1", lambda)
	}
	if quasi {
		h, err := strconv.Atoi(strings.TrimSpace(hi))
		if err != nil || h != l+1 {
			return nil, fmt.Errorf("--lambda %q: only λ|λ+1 quasi-designs are supported", lambda)
		}
		if n == 0 {
			return nil, fmt.Errorf("a quasi-design needs --n")
		}
		return design.Quasi(n, m, l, budget)
	}
	if n == 0 {
		if n, err = design.SymmetricOrder(m, l); err != nil {
			return nil, err
		}
	}
	return design.Construct(n, m, l, design.Options{SearchBudget: budget})
}

func lambdaString(d *design.Design) string {
	if d.Target != nil {
		return fmt.Sprintf("%d|%d", d.Lambda, d.Lambda+1)
	}
	return strconv.Itoa(d.Lambda)
}

func oneBased(bs [][]int) [][]int {
	out := make([][]int, len(bs))
	for i, b := range bs {
		out[i] = make([]int, len(b))
		for j, x := range b {
			out[i][j] = x + 1
		}
	}
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}

func writeBlockTable(w io.Writer, what string, blocks [][]int) error {
	t := cli.NewTable(what, "elements")
	for i, b := range blocks {
		t.Row(i+1, joinInts(b))
	}
	return t.Write(w)
}

func writeVerification(w io.Writer, v design.Verification) {
	if v.OK {
		fmt.Fprintf(w, "verified: B(%d,%d,%d), %d blocks, every pair of elements in exactly λ blocks\n", v.N, v.M, v.Lambda, v.Blocks)
		return
	}
	fmt.Fprintf(w, "NOT a symmetric design (N=%d, m=%d, λ=%d, %d blocks): %d problems\n", v.N, v.M, v.Lambda, v.Blocks, v.ProblemCount)
	for _, p := range v.Problems {
		fmt.Fprintln(w, "  "+p)
	}
}

func writeTwoHop(w io.Writer, th design.TwoHop, what string) {
	status := "OK"
	if th.Bad > 0 {
		status = fmt.Sprintf("FAILED on %d pairs, e.g. %s", th.Bad, th.FirstBad)
	}
	fmt.Fprintf(w, "\n%s: %d pairs, %d..%d paths each: %s\n", what, th.Pairs, th.Min, th.Max, status)
}
