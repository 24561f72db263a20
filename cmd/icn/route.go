package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/icn-hpc/icn/internal/benchscen"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// routeBadInput marks an error caused by the user's input (exit status 2).
func routeBadInput(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{2, err}
}

// routeSetFlags are the flags shared by icn route and icn reach.
type routeSetFlags struct {
	tf      topoFlags
	rules   string
	order   string
	active  string
	transit string
}

func (f *routeSetFlags) register(c *cobra.Command) {
	f.tf.registerTorus(c, "topo", "")
	c.Flags().StringVar(&f.rules, "rules", "angara*", "routing rule: dor, dirbit, angara-, angara or angara*")
	c.Flags().StringVar(&f.order, "order", "", "direction order, e.g. +X,+Y,+Z,-X,-Y,-Z (default: all positive, then all negative)")
	c.Flags().StringVar(&f.active, "active", "", "active nodes: coordinates 0.1.3, ranges 0-1.*.2, comma-separated, or @FILE (default: every live node)")
	c.Flags().StringVar(&f.transit, "transit", "", "transit nodes (same syntax as --active, or @FILE)")
}

// load builds the network, rule and node sets.
func (f *routeSetFlags) load() (*topology.Graph, *routing.Router, []int, []int, error) {
	g, err := f.tf.load()
	if err != nil {
		return nil, nil, nil, nil, routeBadInput(err)
	}
	rule, err := routing.ParseRule(f.rules)
	if err != nil {
		return nil, nil, nil, nil, routeBadInput(err)
	}
	if f.order != "" {
		o, err := routing.ParseOrder(f.order, len(g.Dims()))
		if err != nil {
			return nil, nil, nil, nil, routeBadInput(err)
		}
		rule.Order = o
	}
	r, err := routing.NewRouter(g, rule)
	if err != nil {
		return nil, nil, nil, nil, routeBadInput(err)
	}
	list := func(flag, v string) ([]int, error) {
		s, err := readArgFile(v)
		if err != nil {
			return nil, routeBadInput(fmt.Errorf("--%s: %v", flag, err))
		}
		vs, err := g.ParseNodes(s)
		if err != nil {
			return nil, routeBadInput(fmt.Errorf("--%s: %v", flag, err))
		}
		return vs, nil
	}
	var active, transit []int
	if strings.TrimSpace(f.active) == "" {
		for v := 0; v < g.NumNodes(); v++ {
			if !g.NodeFailed(v) {
				active = append(active, v)
			}
		}
	} else if active, err = list("active", f.active); err != nil {
		return nil, nil, nil, nil, err
	}
	if transit, err = list("transit", f.transit); err != nil {
		return nil, nil, nil, nil, err
	}
	return g, r, active, transit, nil
}

// routeOptions are the flags of icn route.
type routeOptions struct {
	set        routeSetFlags
	out        output
	algo       string
	export     string
	outFile    string
	format     string
	show       int
	workers    int
	quiet      bool
	exactOrder bool
	genetic    routing.GeneticOptions
	geneticSet []string // genetic flags given on the command line
}

func newRouteCmd() *cobra.Command {
	var o routeOptions
	c := &cobra.Command{
		Use:   "route",
		Short: "Deadlock-free, balanced routing tables for tori under the Angara / Blue Gene rules",
		Long: `Build a routing table (one route per ordered pair of active nodes) for a
torus under a routing rule, with failed links and nodes, verify it (legal,
arriving, avoiding failures, transit nodes inside the set, no channel
dependency cycle with a turn) and report its diameter, π_max, π_perfect and
balance factor. Rules: dor, dirbit (Blue Gene), angara- (R_A−), angara (R_A,
may deadlock), angara* (R_A*). See docs/routing.md.`,
		Example: `  icn route --topo torus:4x4x2 --rules 'angara*'
  icn route --topo torus:8x8 --rules angara- --fail-links 0.0+X,3.4+Y --json > table.json
  icn route --topo torus:4x4x4 --active 0-1.0-1.* --transit 2.0-1.* --algo bfs
  icn route --topo torus:4x4 --algo baseline --export tables.txt
  icn route --topo torus:4x4x3 --algo genetic --seed 1 --generations 1000
  icn route --topo torus:16x16x16 --format routes -o table.routes --quiet
  icn route check table.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			for _, n := range []string{"seed", "generations", "population", "time-limit"} {
				if c.Flags().Changed(n) {
					o.geneticSet = append(o.geneticSet, "--"+n)
				}
			}
			return runRoute(c.Context(), o, stdout(c))
		},
	}
	o.set.register(c)
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.algo, "algo", "bfs", "table algorithm: bfs (seed §3.2, any reachable set), baseline (fault-free rectangles) or genetic (seed §3.3, starts from the BFS table)")
	f.Uint64Var(&o.genetic.Seed, "seed", 1, "genetic: random seed (same seed and generations, same table)")
	f.IntVar(&o.genetic.Generations, "generations", routing.DefaultGeneticGenerations, "genetic: generation limit")
	f.IntVar(&o.genetic.Population, "population", routing.DefaultGeneticPopulation, "genetic: individuals per generation")
	f.DurationVar(&o.genetic.TimeLimit, "time-limit", routing.DefaultGeneticTimeLimit, "genetic: stop after this long with the best table so far (Slurm's plugin budget; the table then depends on the machine's speed)")
	f.StringVar(&o.export, "export", "", "also write per-node routing tables (text, see docs/routing.md) to FILE")
	f.StringVarP(&o.outFile, "output", "o", "", "also write the table to FILE (format from --format)")
	f.StringVar(&o.format, "format", "json", "format of -o: json (the --json format) or routes (compact, streamed; see docs/routing.md)")
	f.IntVar(&o.show, "show", 20, "routes listed in the table view (-1 = all)")
	f.IntVar(&o.workers, "workers", 0, "goroutines for the BFS rounds and the verification (0 = all cores; the table does not depend on it)")
	f.BoolVar(&o.exactOrder, "exact-order", false, "take BFS sources in exactly the sequential order on sets above 1 024 active nodes too (one more distance search per source)")
	c.AddCommand(newRouteCheckCmd())
	return c
}

// runRoute builds and verifies the routing table of the chosen node set,
// writes the files asked for and prints the summary (or the table as
// JSON) to w. A table that can deadlock is reported on stderr.
func runRoute(ctx context.Context, o routeOptions, w io.Writer) error {
	a, err := routing.ParseAlgo(o.algo)
	if err != nil {
		return routeBadInput(err)
	}
	if err := routeGeneticFlagsOK(a, o); err != nil {
		return routeBadInput(err)
	}
	if o.format != "json" && o.format != "routes" {
		return routeBadInput(fmt.Errorf("--format %q: want json or routes", o.format))
	}
	g, r, active, transit, err := o.set.load()
	if err != nil {
		return err
	}
	if need, avail := r.TableBytes(len(active)), memAvailable(); avail > 0 && need > avail {
		return routeBadInput(fmt.Errorf("%s: the table of %d active nodes (%d routes) needs %.1f GB of memory, more than the %.1f GB available: route a subset (--active) or a smaller network",
			o.set.tf.spec, len(active), int64(len(active))*int64(len(active)-1), float64(need)/1e9, float64(avail)/1e9))
	}
	start := time.Now()
	tb, err := routeBuildTable(ctx, r, active, transit, a, o)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if !tb.DeadlockFree {
		fmt.Fprintf(os.Stderr, "icn: warning: the %s table can deadlock: %s\n", tb.Rule.Kind, r.CycleString(tb.Cycle))
	}
	if err := routeWriteTableFiles(tb, o); err != nil {
		return err
	}
	if o.out.json {
		return tb.WriteJSON(w)
	}
	return routeWriteSummary(w, o.set.tf.spec, g, r, tb, elapsed, o.show, routeGeneticSummary(tb.GeneticRun)...)
}

// routeGeneticFlagsOK checks the values of the genetic flags with --algo
// genetic, and refuses them with the other algorithms.
func routeGeneticFlagsOK(a routing.Algo, o routeOptions) error {
	if a != routing.Genetic {
		if len(o.geneticSet) > 0 {
			return fmt.Errorf("%s: only --algo genetic takes it, not --algo %s", strings.Join(o.geneticSet, ", "), a)
		}
		return nil
	}
	switch g := o.genetic; {
	case g.Generations < 0:
		return fmt.Errorf("--generations %d: want ≥ 0", g.Generations)
	case g.Population < 2:
		return fmt.Errorf("--population %d: want ≥ 2", g.Population)
	case g.TimeLimit <= 0:
		return fmt.Errorf("--time-limit %s: want > 0", g.TimeLimit)
	}
	return nil
}

// routeGeneticSummary are the summary lines of a genetic run (none for
// the other algorithms).
func routeGeneticSummary(run *routing.GeneticRun) []any {
	if run == nil {
		return nil
	}
	return []any{
		"genetic", fmt.Sprintf("seed %d, population %d, %d generations (stopped: %s)", run.Seed, run.Population, run.Generations, run.Stop),
		"started from BFS", fmt.Sprintf("π_max %d, balance factor %s %%", run.BFS.PiMax, cli.Float(run.BFS.BalanceFactor)),
		"π_max lower bound", run.PiMaxBound,
		"genes", fmt.Sprintf("%d pairs with a choice among %d minimal legal routes", run.FreePairs, run.Candidates),
	}
}

// memAvailable is the memory the kernel says is available (MemAvailable
// in /proc/meminfo), or 0 where it cannot tell.
func memAvailable() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// routeBuildTable builds and verifies the table with a progress bar over
// the BFS sources or the genetic generations; an interrupt (Ctrl-C)
// stops a genetic run with the best table so far. An unreachable set is
// exit status 1, any other failure bad input.
func routeBuildTable(ctx context.Context, r *routing.Router, active, transit []int, a routing.Algo, o routeOptions) (*routing.Table, error) {
	opts := routing.BuildOptions{Algo: a, Workers: o.workers, ExactOrder: o.exactOrder}
	var bar *cli.Progress
	if a == routing.Genetic {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		bar = cli.NewProgress(o.genetic.Generations, "generations", o.quiet)
		opts.Genetic = o.genetic
		if opts.Genetic.Generations == 0 {
			opts.Genetic.Generations = -1 // keep the initial population only
		}
	} else {
		bar = cli.NewProgress(len(active)+1, "routing", o.quiet || len(active) < 256)
	}
	opts.Progress = func(int, int) { bar.Add(1) }
	tb, err := r.Build(ctx, active, transit, opts)
	bar.Done()
	if err != nil {
		var ue *routing.UnreachableError
		if errors.As(err, &ue) {
			return nil, &exitError{1, err}
		}
		return nil, routeBadInput(err)
	}
	return tb, nil
}

// routeWriteTableFiles writes the per-node tables (--export) and the
// table itself (-o, in --format).
func routeWriteTableFiles(tb *routing.Table, o routeOptions) error {
	if o.export != "" {
		if err := routeWriteFile(o.export, tb.WriteNodeTables); err != nil {
			return fmt.Errorf("--export: %w", err)
		}
	}
	if o.outFile != "" {
		write := tb.WriteJSON
		if o.format == "routes" {
			write = tb.WriteRoutes
		}
		if err := routeWriteFile(o.outFile, write); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
	}
	return nil
}

// routeCheckOptions are the flags and the file of icn route check.
type routeCheckOptions struct {
	out       output
	file      string
	failLinks string
	failNodes string
}

// routeCheckResult is the --json output of icn route check.
type routeCheckResult struct {
	File         string              `json:"file"`
	OK           bool                `json:"ok"`
	Routes       int                 `json:"routes"`
	Violations   []routing.Violation `json:"violations"`
	Stats        routing.Figures     `json:"stats"`
	DeadlockFree bool                `json:"deadlock_free"`
}

func newRouteCheckCmd() *cobra.Command {
	var o routeCheckOptions
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Re-verify a routing table written by icn route --json or --format routes (exit status 1 on any violation)",
		Example: `  icn route --topo torus:4x4 --json > t.json && icn route check t.json
  icn route --topo torus:8x8x8 --format routes -o t.routes && icn route check t.routes
  icn route check t.json --fail-links 0.0+X     # would the table survive this failure?`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			return runRouteCheck(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	c.Flags().StringVar(&o.failLinks, "fail-links", "", "fail these links too (NODE+X, comma-separated, or @FILE)")
	c.Flags().StringVar(&o.failNodes, "fail-nodes", "", "fail these nodes too (coordinates, or @FILE)")
	return c
}

// runRouteCheck re-verifies the table in o.file ("-" = standard input),
// with the extra failures, and prints the verdict; any violation is exit
// status 1.
func runRouteCheck(ctx context.Context, o routeCheckOptions, w io.Writer) error {
	rep, r, err := routeCheckFile(ctx, o)
	if err != nil {
		return err
	}
	res := routeCheckResult{o.file, len(rep.Violations) == 0, rep.Routes, rep.Violations, rep.Figures, rep.Cycle == nil}
	if res.Violations == nil {
		res.Violations = []routing.Violation{}
	}
	err = o.out.print(w, res, func(w io.Writer) error {
		return routeWriteCheck(w, r, res)
	})
	if err != nil {
		return err
	}
	if !res.OK {
		return &exitError{1, fmt.Errorf("%s: %d violation(s), first: %s", o.file, len(rep.Violations), rep.Violations[0])}
	}
	return nil
}

// routeCheckFile opens the table and checks it; a malformed record is
// exit status 1 (the table is wrong), anything else bad input.
func routeCheckFile(ctx context.Context, o routeCheckOptions) (*routing.Report, *routing.Router, error) {
	f, cleanup, err := routeOpenSeekable(o.file)
	if err != nil {
		return nil, nil, routeBadInput(err)
	}
	defer cleanup()
	fl, err := readArgFile(o.failLinks)
	if err != nil {
		return nil, nil, routeBadInput(err)
	}
	fn, err := readArgFile(o.failNodes)
	if err != nil {
		return nil, nil, routeBadInput(err)
	}
	tr, r, err := routing.OpenTable(f, fl, fn)
	var rep *routing.Report
	if err == nil {
		rep, err = r.Verify(ctx, tr, routing.VerifyOptions{})
	}
	if err != nil {
		var re *routing.RecordError
		if errors.As(err, &re) {
			return nil, nil, &exitError{1, fmt.Errorf("%s: %v", o.file, err)}
		}
		return nil, nil, routeBadInput(fmt.Errorf("%s: %v", o.file, err))
	}
	return rep, r, nil
}

// routeWriteCheck is the table view of icn route check: the summary, then
// the violations if there are any.
func routeWriteCheck(w io.Writer, r *routing.Router, res routeCheckResult) error {
	st := res.Stats
	verdict := "OK"
	if !res.OK {
		verdict = fmt.Sprintf("%d violation(s)", len(res.Violations))
	}
	if err := cli.KV(w, "file", res.File, "rule", r.Rule(), "routes checked", res.Routes,
		"diameter", st.Diameter, "π_max", st.PiMax, "π_perfect", st.PiPerfect,
		"balance factor", cli.Float(st.BalanceFactor)+" %", "deadlock-free", res.DeadlockFree, "verdict", verdict); err != nil {
		return err
	}
	if len(res.Violations) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := cli.NewTable("KIND", "PROBLEM")
	for _, v := range res.Violations {
		t.Row(v.Kind, v.Msg)
	}
	return t.Write(w)
}

// reachOptions are the flags of icn reach.
type reachOptions struct {
	set routeSetFlags
	out output
}

// reachPair is an ordered pair of nodes by coordinates.
type reachPair struct {
	Src []int `json:"src"`
	Dst []int `json:"dst"`
}

// reachResult is the --json output of icn reach.
type reachResult struct {
	Reachable bool       `json:"reachable"`
	Rule      string     `json:"rules"`
	Active    int        `json:"active"`
	Transit   int        `json:"transit"`
	Pair      *reachPair `json:"unreachable_pair,omitempty"`
}

func newReachCmd() *cobra.Command {
	var o reachOptions
	c := &cobra.Command{
		Use:   "reach",
		Short: "Is a node set M_{a,t} = active ∪ transit reachable under a routing rule? (exit status 1 if not)",
		Example: `  icn reach --topo torus:4x4x2 --rules angara- --active 0-1.0-1.0 --transit 2.0-1.0
  icn reach --topo torus:8x8 --rules 'angara*' --fail-links @failed.txt --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runReach(c.Context(), o, stdout(c))
		},
	}
	o.set.register(c)
	o.out.register(c)
	return c
}

// runReach decides whether every ordered pair of active nodes has a legal
// route inside active ∪ transit; an unreachable set is exit status 1.
func runReach(_ context.Context, o reachOptions, w io.Writer) error {
	g, r, active, transit, err := o.set.load()
	if err != nil {
		return err
	}
	ok, bad, err := r.ReachableFirst(active, transit)
	if err != nil {
		return routeBadInput(err)
	}
	res := reachResult{Reachable: ok, Rule: r.Rule().String(), Active: len(active), Transit: len(transit)}
	if !ok {
		res.Pair = &reachPair{g.Coord(bad[0]), g.Coord(bad[1])}
	}
	if err := o.out.print(w, res, func(w io.Writer) error {
		ans := "yes"
		if !ok {
			ans = fmt.Sprintf("no: no legal route from %s to %s inside the set", g.NodeName(bad[0]), g.NodeName(bad[1]))
		}
		return cli.KV(w, "network", o.set.tf.spec, "rule", res.Rule, "active nodes", len(active), "transit nodes", len(transit), "reachable", ans)
	}); err != nil {
		return err
	}
	if !ok {
		return &exitError{1, fmt.Errorf("the set is not reachable: no legal route from %s to %s", g.NodeName(bad[0]), g.NodeName(bad[1]))}
	}
	return nil
}

// newExperimentCmd is the "icn experiment" group: the seeds' experiments
// on torus routing.
func newExperimentCmd() *cobra.Command {
	c := &cobra.Command{Use: "experiment", Short: "Reproduce the seeds' experiments"}
	c.AddCommand(newExperimentFaultsCmd(), newExperimentBalanceCmd())
	return c
}

// experimentFaultsOptions are the flags of icn experiment faults.
type experimentFaultsOptions struct {
	out      output
	fault    routing.FaultOptions
	quick    bool
	quiet    bool
	plotPath string
}

func newExperimentFaultsCmd() *cobra.Command {
	var o experimentFaultsOptions
	c := &cobra.Command{
		Use:   "faults",
		Short: "Seed 001 §5.1: random link failures survived before reachability is lost, angara- vs angara*",
		Long: `Over all tori with N = Πd_i ≤ --max-nodes, d_i ≤ --max-size and
--min-dims ≤ n ≤ --max-dims, fail channels (--unit channel, the seed's
links (u,D)) or duplex cables (--unit link) one by one in --trials random
orders until some ordered pair of nodes has no legal route, and report per
dimensionality the mean number (and %) of failures survived under angara-
and angara* and the gain, next to the seed's 4.9 % / 8.2 % / 34 %.`,
		Example: `  icn experiment faults --seed 1                       # the full run (all tori N ≤ 128)
  icn experiment faults --quick --plot faults.svg
  icn experiment faults --trials 50 --sorted --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runExperimentFaults(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	f := c.Flags()
	f.Uint64Var(&o.fault.Seed, "seed", 1, "random seed (same seed, same output, whatever --workers)")
	f.IntVar(&o.fault.Trials, "trials", 10, "random failure orders per torus")
	f.IntVar(&o.fault.MaxNodes, "max-nodes", 128, "largest torus (N = Πd_i)")
	f.IntVar(&o.fault.MaxSize, "max-size", 8, "largest ring size d_i")
	f.IntVar(&o.fault.MinDims, "min-dims", 2, "fewest dimensions")
	f.IntVar(&o.fault.MaxDims, "max-dims", 4, "most dimensions")
	f.BoolVar(&o.fault.Sorted, "sorted", false, "one orientation per shape (d1 ≥ d2 ≥ …) instead of every ordered tuple")
	f.StringVar(&o.fault.Unit, "unit", "channel", "what fails: channel (one direction (u,D), the seed's link) or link (the duplex cable)")
	f.BoolVar(&o.quick, "quick", false, "a small run: N ≤ 32, 2 trials, sorted shapes")
	f.IntVar(&o.fault.Workers, "workers", 0, "goroutines (0 = all cores)")
	f.StringVar(&o.plotPath, "plot", "", "write a chart of the gains (.svg or .png)")
	return c
}

// runExperimentFaults runs seed 001 §5.1 (random failures survived under
// angara- and angara*) and prints the gains per dimensionality.
func runExperimentFaults(_ context.Context, o experimentFaultsOptions, w io.Writer) error {
	fo := o.fault
	if fo.Trials < 1 {
		return routeBadInput(fmt.Errorf("--trials %d: want at least 1", fo.Trials))
	}
	if o.quick {
		fo.MaxNodes, fo.Trials, fo.Sorted = 32, 2, true
	}
	shapes, err := routing.FaultTori(fo)
	if err != nil {
		return routeBadInput(err)
	}
	if o.plotPath != "" {
		if err := routePlotPathOK(o.plotPath); err != nil {
			return routeBadInput(err)
		}
	}
	trials := fo.Trials
	if trials == 0 {
		trials = 10
	}
	bar := cli.NewProgress(len(shapes)*trials, "fault trials", o.quiet)
	fo.Progress = func(done, total int) { bar.Add(1) }
	start := time.Now()
	rep, err := routing.FaultExperiment(fo)
	bar.Done()
	if err != nil {
		return routeBadInput(err)
	}
	if o.plotPath != "" {
		if err := cli.SavePlot(routeFaultChart(rep), o.plotPath); err != nil {
			return err
		}
	}
	return o.out.print(w, rep, func(w io.Writer) error {
		if err := routeWriteFaults(w, rep); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "\nrandom %s failures, seed %d, %d trials per torus, %s, %v\n", rep.Options.Unit, fo.Seed, trials, routeFaultNote(fo), cli.Duration(time.Since(start)))
		return err
	})
}

// routeWriteFaults is the table of icn experiment faults, one row per
// dimensionality.
func routeWriteFaults(w io.Writer, rep *routing.FaultReport) error {
	t := cli.NewTable("TORI", "TRIALS", strings.ToUpper(rep.Options.Unit)+"S", "ANGARA- SURVIVED", "%", "ANGARA* SURVIVED", "%", "GAIN", "GAIN OF MEANS", "SEED GAIN")
	for _, r := range rep.Rows {
		t.Row(fmt.Sprintf("%dD: %d", r.Dims, r.Tori), r.Trials, cli.Float(r.MeanLinks),
			cli.Float(r.MinusMean), cli.Float(r.MinusPct), cli.Float(r.StarMean), cli.Float(r.StarPct),
			cli.Float(r.Gain)+" %", cli.Float(r.GainOfMeans)+" %", cli.Float(r.SeedGain)+" %")
	}
	return t.Write(w)
}

// experimentBalanceOptions are the flags of icn experiment balance.
type experimentBalanceOptions struct {
	out      output
	balance  routing.BalanceOptions
	rules    string
	plotPath string
	quick    bool
	quiet    bool
}

func newExperimentBalanceCmd() *cobra.Command {
	var o experimentBalanceOptions
	c := &cobra.Command{
		Use:   "balance",
		Short: "Seed 001 §5.2: balance factor of BFS tables vs the baseline on fault-free tori",
		Long: `Build the BFS and the baseline routing table of every fault-free torus with
N ≤ --max-nodes, d_i ≤ --max-size, --min-dims ≤ n ≤ --max-dims (all nodes
active) and compare their balance factors; the seed reports BFS 13 points
worse than the baseline on average, 30 at most.`,
		Example: `  icn experiment balance
  icn experiment balance --sorted --plot balance.svg`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runExperimentBalance(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.rules, "rules", "angara*", "rule of the BFS tables")
	f.IntVar(&o.balance.MaxNodes, "max-nodes", 128, "largest torus (N = Πd_i)")
	f.IntVar(&o.balance.MaxSize, "max-size", 8, "largest ring size d_i")
	f.IntVar(&o.balance.MinDims, "min-dims", 2, "fewest dimensions")
	f.IntVar(&o.balance.MaxDims, "max-dims", 4, "most dimensions")
	f.BoolVar(&o.balance.Sorted, "sorted", false, "one orientation per shape (d1 ≥ d2 ≥ …)")
	f.BoolVar(&o.quick, "quick", false, "a small run: N ≤ 32, sorted shapes")
	f.IntVar(&o.balance.Workers, "workers", 0, "goroutines (0 = all cores)")
	f.StringVar(&o.plotPath, "plot", "", "write a chart of the balance factors (.svg or .png)")
	return c
}

// runExperimentBalance runs seed 001 §5.2 (balance factor of BFS tables
// against the baseline) and prints the losses per dimensionality.
func runExperimentBalance(_ context.Context, o experimentBalanceOptions, w io.Writer) error {
	bo := o.balance
	rule, err := routing.ParseRule(o.rules)
	if err != nil {
		return routeBadInput(err)
	}
	bo.Rule = rule
	if o.quick {
		bo.MaxNodes, bo.Sorted = 32, true
	}
	if o.plotPath != "" {
		if err := routePlotPathOK(o.plotPath); err != nil {
			return routeBadInput(err)
		}
	}
	shapes, err := routing.FaultTori(routing.FaultOptions{MaxNodes: bo.MaxNodes, MaxSize: bo.MaxSize, MinDims: bo.MinDims, MaxDims: bo.MaxDims, Sorted: bo.Sorted})
	if err != nil {
		return routeBadInput(err)
	}
	bar := cli.NewProgress(len(shapes), "tori", o.quiet)
	bo.Progress = func(done, total int) { bar.Add(1) }
	rep, err := routing.BalanceExperiment(bo)
	bar.Done()
	if err != nil {
		return err
	}
	if o.plotPath != "" {
		if err := cli.SavePlot(routeBalanceChart(rep), o.plotPath); err != nil {
			return err
		}
	}
	return o.out.print(w, rep, func(w io.Writer) error { return routeWriteBalance(w, rep) })
}

// routeBalanceChart is the bar chart of the mean balance factors per
// dimensionality.
func routeBalanceChart(rep *routing.BalanceReport) cli.Chart {
	ch := cli.Chart{Title: "Balance factor of fault-free tables, all nodes active", YLabel: "balance factor, %", Bars: true}
	var bfs, base []float64
	for _, r := range rep.Rows {
		name := "all"
		if r.Dims > 0 {
			name = fmt.Sprintf("%dD", r.Dims)
		}
		ch.Categories = append(ch.Categories, name)
		bfs = append(bfs, r.MeanBFS)
		base = append(base, r.MeanBaseline)
	}
	ch.Series = []cli.Series{{Name: "BFS", Y: bfs}, {Name: "baseline", Y: base}}
	return ch
}

// routeWriteBalance is the table of icn experiment balance, with the
// seed's figures on the "all" row.
func routeWriteBalance(w io.Writer, rep *routing.BalanceReport) error {
	t := cli.NewTable("TORI", "BFS BALANCE", "BASELINE BALANCE", "MEAN LOSS", "MAX LOSS", "SEED")
	for _, r := range rep.Rows {
		name := fmt.Sprintf("%dD: %d", r.Dims, r.Tori)
		seed := ""
		if r.Dims == 0 {
			name = fmt.Sprintf("all: %d", r.Tori)
			seed = fmt.Sprintf("%s (%s)", cli.Float(rep.SeedMean), cli.Float(rep.SeedMax))
		}
		t.Row(name, cli.Float(r.MeanBFS)+" %", cli.Float(r.MeanBaseline)+" %", cli.Float(r.MeanLoss), cli.Float(r.MaxLoss), seed)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nloss = BFS − baseline balance factor in percentage points; rule %s for BFS\n", rep.Rule)
	return err
}

func routePlotPathOK(p string) error {
	switch strings.ToLower(p[strings.LastIndexByte(p, '.')+1:]) {
	case "svg", "png", "pdf":
		return nil
	}
	return fmt.Errorf("plot file %q: extension must be .svg, .png or .pdf", p)
}

func routeFaultNote(o routing.FaultOptions) string {
	max := o.MaxNodes
	if max == 0 {
		max = 128
	}
	s := fmt.Sprintf("all tori N ≤ %d", max)
	if o.Sorted {
		s += " (one orientation per shape)"
	}
	return s
}

func routeFaultChart(rep *routing.FaultReport) cli.Chart {
	ch := cli.Chart{Title: "R_A* over R_A−: more random " + rep.Options.Unit + " failures survived before reachability is lost", YLabel: "gain, %", Bars: true}
	var icn, seed []float64
	for _, r := range rep.Rows {
		ch.Categories = append(ch.Categories, fmt.Sprintf("%dD", r.Dims))
		icn = append(icn, r.Gain)
		seed = append(seed, r.SeedGain)
	}
	ch.Series = []cli.Series{{Name: "icn (mean over tori)", Y: icn}, {Name: "seed 001", Y: seed}}
	return ch
}

func routeWriteSummary(w io.Writer, spec string, g *topology.Graph, r *routing.Router, tb *routing.Table, elapsed time.Duration, show int, extra ...any) error {
	st := tb.Figures
	deadlock := "none (no dependency cycle with a turn)"
	if !tb.DeadlockFree {
		deadlock = "CYCLE: " + r.CycleString(tb.Cycle)
	}
	pairs := []any{
		"network", spec,
		"rule", tb.Rule.Kind.String() + " (order " + r.Rule().OrderFor(len(g.Dims())).String() + ")",
		"algorithm", tb.Algo,
		"active nodes", len(tb.Active),
		"transit nodes", len(tb.Transit),
		"failed", fmt.Sprintf("%d links, %d nodes", len(g.FailedLinks()), len(g.FailedNodes())),
		"routes", tb.NumRoutes(),
		"diameter", st.Diameter,
		"π_max", st.PiMax,
		"π_perfect", st.PiPerfect,
		"balance factor", cli.Float(st.BalanceFactor) + " %",
		"deadlock", deadlock,
	}
	if off, acc := r.ExtraDependencies(); tb.Rule.Kind == routing.AngaraStar {
		pairs = append(pairs, "R_A* extra deps", fmt.Sprintf("%d of %d order-violating FS/LS dependencies accepted", acc, off))
	}
	pairs = append(pairs, extra...)
	pairs = append(pairs, "time", elapsed)
	if err := cli.KV(w, pairs...); err != nil {
		return err
	}
	n := tb.NumRoutes()
	if show >= 0 && show < n {
		n = show
	}
	if n == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := cli.NewTable("SRC", "DST", "STEPS")
	for i := 0; i < n; i++ {
		rt := tb.Route(i)
		steps := make([]string, len(rt.Dirs))
		for k, d := range rt.Dirs {
			steps[k] = d.String()
		}
		if rt.FS {
			steps[0] += "(FS)"
		}
		if rt.LS {
			steps[len(steps)-1] += "(LS)"
		}
		t.Row(g.NodeName(rt.Src), g.NodeName(rt.Dst), strings.Join(steps, " "))
	}
	if err := t.Write(w); err != nil {
		return err
	}
	if n < tb.NumRoutes() {
		_, err := fmt.Fprintf(w, "… %d more routes (--show -1 lists all; --json or --export for files)\n", tb.NumRoutes()-n)
		return err
	}
	return nil
}

// routeWriteFile streams write into a temporary file next to path and
// renames it into place, so a failed write never leaves a partial file.
func routeWriteFile(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, write)
}

// routeOpenSeekable opens a table file for checking; standard input ("-")
// is copied to a temporary file first, since a JSON table may be read
// twice.
func routeOpenSeekable(name string) (io.ReadSeeker, func(), error) {
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	}
	tmp, err := os.CreateTemp("", "icn-check-*")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	if _, err := io.Copy(tmp, os.Stdin); err != nil {
		cleanup()
		return nil, nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, nil, err
	}
	return tmp, cleanup, nil
}

// routeBenchRows are the routing rows of icn bench beyond the 8x8x4x4
// table: a 4 096-node table against the strictly sequential algorithm on
// one core, the check of its compact file against rebuilding the table,
// and a job's table on a 32x32x32 machine against one core.
func routeBenchRows(quick bool, step func(string)) ([]benchRow, error) {
	spec := benchscen.WholeTable.Spec(quick)
	step("routing table " + spec)
	rows, tb, tp, err := routeBenchTable(spec)
	if err != nil {
		return nil, err
	}
	step("compact table file")
	row, err := routeBenchCheck(tb, tp)
	if err != nil {
		return nil, err
	}
	rows = append(rows, row)
	job := benchscen.JobTable(quick)
	step("job table " + job.Topo)
	row, err = routeBenchJob(job)
	if err != nil {
		return nil, err
	}
	return append(rows, row), nil
}

func routeTimeIt(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// routeBenchTable times the table of a whole torus against the
// sequential algorithm on one core.
func routeBenchTable(spec string) ([]benchRow, *routing.Table, time.Duration, error) {
	g, err := topology.Parse(spec)
	if err != nil {
		return nil, nil, 0, err
	}
	r, all, err := wholeTorus(g)
	if err != nil {
		return nil, nil, 0, err
	}
	var tb *routing.Table
	tp, err := routeTimeIt(func() error {
		var e error
		tb, e = r.Build(context.Background(), all, nil, routing.BuildOptions{})
		return e
	})
	if err != nil {
		return nil, nil, 0, err
	}
	ts, err := routeTimeIt(func() error {
		_, e := r.Build(context.Background(), all, nil, routing.BuildOptions{Batch: 1, Workers: 1})
		return e
	})
	if err != nil {
		return nil, nil, 0, err
	}
	return []benchRow{{Name: fmt.Sprintf("BFS table + verification %s (%d routes)", spec, tb.NumRoutes()), Value: ms(tp), Unit: "ms",
		Baseline: "one source per round, 1 core", BaseVal: ms(ts), Ratio: ts.Seconds() / tp.Seconds()}}, tb, tp, nil
}

// routeBenchCheck times icn route check of the table's compact file
// against building the table (tp).
func routeBenchCheck(tb *routing.Table, tp time.Duration) (benchRow, error) {
	f, err := os.CreateTemp("", "icn-bench-*.routes")
	if err != nil {
		return benchRow{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := tb.WriteRoutes(f); err != nil {
		return benchRow{}, err
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return benchRow{}, err
	}
	tc, err := routeTimeIt(func() error {
		tr, r, e := routing.OpenTable(f, "", "")
		if e != nil {
			return e
		}
		rep, e := r.Verify(context.Background(), tr, routing.VerifyOptions{})
		if e == nil && len(rep.Violations) > 0 {
			e = fmt.Errorf("bench: the compact table fails its check: %s", rep.Violations[0])
		}
		return e
	})
	if err != nil {
		return benchRow{}, err
	}
	return benchRow{Name: fmt.Sprintf("route check of its compact file (%.0f MB)", float64(size)/1e6), Value: ms(tc), Unit: "ms",
		Baseline: "building the table", BaseVal: ms(tp), Ratio: tp.Seconds() / tc.Seconds()}, nil
}

// routeBenchJob times a job's router and table against the table alone
// on one core.
func routeBenchJob(job benchscen.Job) (benchRow, error) {
	spec := job.Topo
	g, err := topology.Parse(spec)
	if err != nil {
		return benchRow{}, err
	}
	if g, err = g.ApplyFaults(job.FailLinks, ""); err != nil {
		return benchRow{}, err
	}
	active, err := g.ParseNodes(job.Active)
	if err != nil {
		return benchRow{}, err
	}
	transit, err := g.ParseNodes(job.Transit)
	if err != nil {
		return benchRow{}, err
	}
	rule, err := routing.ParseRule(benchscen.TableRule)
	if err != nil {
		return benchRow{}, err
	}
	var r *routing.Router
	tj, err := routeTimeIt(func() error {
		var e error
		if r, e = routing.NewRouter(g, rule); e != nil {
			return e
		}
		_, e = r.Build(context.Background(), active, transit, routing.BuildOptions{})
		return e
	})
	if err != nil {
		return benchRow{}, err
	}
	tj1, err := routeTimeIt(func() error {
		_, e := r.Build(context.Background(), active, transit, routing.BuildOptions{Workers: 1})
		return e
	})
	if err != nil {
		return benchRow{}, err
	}
	return benchRow{Name: fmt.Sprintf("job table %s, %d active + %d transit, %d failed links (router + table)", spec, len(active), len(transit), len(g.FailedLinks())),
		Value: ms(tj), Unit: "ms", Baseline: "table alone, 1 core", BaseVal: ms(tj1), Ratio: tj1.Seconds() / tj.Seconds()}, nil
}
