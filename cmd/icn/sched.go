package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/sched"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

func newSchedCmd() *cobra.Command {
	schedCmd := &cobra.Command{Use: "sched", Short: "Simulate a cluster working through a job queue (torus, switched fabric or flat); reproduce seed 001 ch. 5"}
	schedCmd.AddCommand(newSchedSimulateCmd(), newSchedExperimentCmd(), newSchedMergeCmd())
	return schedCmd
}

// schedExperimentOptions are the flags of icn sched experiment
// solutions|utilization.
type schedExperimentOptions struct {
	out         output
	seed        uint64
	streamSpec  string
	shard       string
	plot        string
	networks    string
	windows     string
	transitFrac float64
	backfill    bool
	quiet       bool
	sample      int
}

func newSchedExperimentCmd() *cobra.Command {
	exp := &cobra.Command{Use: "experiment", Short: "Reproduce seed 001 §5.4 (solutions found) and §5.5 (utilization, T_mean)"}
	// Both keep every parameter in their output (as before: windows for
	// solutions, sample for utilization at their defaults).
	sol := schedExperimentOptions{windows: "1,8,32,128"}
	util := schedExperimentOptions{sample: 1}
	solCmd := &cobra.Command{
		Use:     "solutions",
		Short:   "Mean number of solutions the baseline and improved algorithms find along a simulated FCFS run (seed table 1)",
		Example: "  icn sched experiment solutions --networks 4x4x2,4x4x4 --stream load=0.8,span=4mo",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runSchedExperiment(c.Context(), "solutions", sol, stdout(c))
		},
	}
	utilCmd := &cobra.Command{
		Use:     "utilization",
		Short:   "Utilization and T_mean, baseline vs improved, per network and window (seed §5.5)",
		Example: "  icn sched experiment utilization --networks 4x4x2,4x4x4 --windows 1,8,32,128 --shard 0/4 --json > part0.json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runSchedExperiment(c.Context(), "utilization", util, stdout(c))
		},
	}
	for _, x := range []struct {
		c *cobra.Command
		o *schedExperimentOptions
	}{{solCmd, &sol}, {utilCmd, &util}} {
		x.o.out.register(x.c)
		f := x.c.Flags()
		f.Uint64Var(&x.o.seed, "seed", 1, "seed of the synthetic streams")
		f.StringVar(&x.o.streamSpec, "stream", "load=0.8,span=4mo", "synthetic stream parameters (see sched simulate --jobs)")
		f.StringVar(&x.o.shard, "shard", "", "run part i/n of the work (0 ≤ i < n) for a job array; combine with icn sched merge")
		f.StringVar(&x.o.plot, "plot", "", "write a chart to FILE (.svg or .png)")
		f.Float64Var(&x.o.transitFrac, "transit-frac", 1, transitFracUsage)
		exp.AddCommand(x.c)
	}
	solCmd.Flags().IntVar(&sol.sample, "sample", 1, "count the solutions at every k-th allocation attempt only")
	solCmd.Flags().StringVar(&sol.networks, "networks", "4x4x2,4x2x2x2,4x3x3,3x3x2x2,4x4x4,4x4x2x2,6x4x4,4x4x3x2,8x6x3,4x4x3x3,8x8x4,4x4x4x4", "torus sizes")
	utilCmd.Flags().StringVar(&util.networks, "networks", "4x4x2,4x4x4,4x4x2x2,8x4x4,4x4x4x4,8x8x4,8x8x8,8x8x4x4", "torus sizes")
	utilCmd.Flags().StringVar(&util.windows, "windows", "1,8,32,128", "window sizes")
	utilCmd.Flags().BoolVar(&util.backfill, "backfill", false, "add EASY backfilling")
	return exp
}

func runSchedExperiment(_ context.Context, kind string, o schedExperimentOptions, w io.Writer) error {
	eo, networks, windows, err := schedExperimentConfig(kind, o)
	if err != nil {
		return err
	}
	bar := cli.NewProgress(-1, kind, o.quiet)
	eo.Progress = func(done, total int) { bar.Add(1) }
	factory := func(g *topology.Graph) (alloc.Router, error) { return alloc.NewAngaraRouter(g, "angara*") }
	params, err := json.Marshal(map[string]any{"seed": o.seed, "stream": o.streamSpec, "transit_frac": o.transitFrac, "networks": o.networks, "windows": o.windows, "backfill": o.backfill, "sample": o.sample})
	if err != nil {
		return err
	}
	file := sched.ShardFile{Experiment: kind, Shard: fmt.Sprintf("%d/%d", eo.Shard.I, eo.Shard.N), Params: params}
	if kind == "solutions" {
		file.Solutions, err = sched.Solutions(networks, eo, factory)
	} else {
		file.Util, err = sched.Utilization(networks, windows, o.backfill, eo, factory)
	}
	bar.Done()
	if err != nil {
		return err
	}
	return reportExperiment(w, &o.out, &file, o.plot)
}

// schedExperimentConfig reads the flags of icn sched experiment kind:
// the experiment's options, its networks and (utilization) its windows.
func schedExperimentConfig(kind string, o schedExperimentOptions) (sched.ExperimentOptions, []string, []int, error) {
	var eo sched.ExperimentOptions
	p, err := sched.ParseSynthetic(o.streamSpec)
	if err != nil {
		return eo, nil, nil, err
	}
	sh, err := sched.ParseShard(o.shard)
	if err != nil {
		return eo, nil, nil, err
	}
	if err := checkTransitFrac(o.transitFrac); err != nil {
		return eo, nil, nil, err
	}
	networks := strings.Split(o.networks, ",")
	for _, n := range networks {
		if _, err := topology.Parse("torus:" + n); err != nil {
			return eo, nil, nil, fmt.Errorf("network %q: %v", n, err)
		}
	}
	var windows []int
	if kind == "utilization" {
		if windows, err = parseWindows(o.windows); err != nil {
			return eo, nil, nil, err
		}
	}
	eo = sched.ExperimentOptions{Seed: o.seed, Stream: p, TransitFrac: o.transitFrac, Shard: sh, SampleEvery: o.sample}
	return eo, networks, windows, nil
}

// transitFracUsage is the help of every --transit-frac.
const transitFracUsage = "transit limit T = ⌈frac·m⌉ for a job of m nodes (0: no transit nodes)"

// checkTransitFrac refuses a --transit-frac that is negative or not a
// number (sched.TransitLimit would take it as 0).
func checkTransitFrac(f float64) error {
	if f < 0 || math.IsNaN(f) {
		return fmt.Errorf("--transit-frac must not be negative")
	}
	return nil
}

func parseWindows(s string) ([]int, error) {
	var windows []int
	for _, w := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || x < 1 {
			return nil, fmt.Errorf("window %q is not a positive number", w)
		}
		windows = append(windows, x)
	}
	return windows, nil
}

func newSchedMergeCmd() *cobra.Command {
	var out output
	var plot string
	merge := &cobra.Command{
		Use:   "merge FILE…",
		Short: "Combine the --json outputs of a sharded experiment",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var rs []io.Reader
			for _, a := range args {
				f, err := os.Open(a)
				if err != nil {
					return err
				}
				defer f.Close()
				rs = append(rs, f)
			}
			file, err := sched.MergeShards(rs, args)
			if err != nil {
				return err
			}
			return reportExperiment(stdout(c), &out, file, plot)
		},
	}
	out.register(merge)
	merge.Flags().StringVar(&plot, "plot", "", "write a chart to FILE (.svg or .png)")
	return merge
}

func loadStream(spec string, machine int, strict bool, ppn int) (*sched.Stream, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	var s *sched.Stream
	switch kind {
	case "synthetic":
		p, err := sched.ParseSynthetic(arg)
		if err != nil {
			return nil, err
		}
		if s, err = sched.Synthetic(p, machine); err != nil {
			return nil, err
		}
	case "swf":
		f, err := os.Open(arg)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if s, err = sched.ParseSWF(f, arg, sched.SWFOptions{Strict: strict, ProcsPerNode: ppn}); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown job stream %q (want synthetic:… or swf:FILE)", spec)
	}
	s.Limit(machine)
	return s, nil
}

func reportExperiment(w io.Writer, out *output, file *sched.ShardFile, plot string) error {
	if file.Experiment == "solutions" {
		if plot != "" {
			ch := cli.Chart{Title: "Mean number of solutions found (FCFS run, baseline decisions)", YLabel: "solutions", Bars: true, LogY: false}
			var b, i, sb, si []float64
			for _, r := range file.Solutions {
				ch.Categories = append(ch.Categories, r.Network)
				b, i, sb, si = append(b, r.BaselineMean), append(i, r.ImprovedMean), append(sb, r.SeedBaseline), append(si, r.SeedImproved)
			}
			ch.Series = []cli.Series{{Name: "baseline (icn)", Y: b}, {Name: "improved (icn)", Y: i}, {Name: "baseline (seed)", Y: sb}, {Name: "improved (seed)", Y: si}}
			if err := cli.SavePlot(ch, plot); err != nil {
				return err
			}
		}
		if out.json {
			return cli.JSON(w, file)
		}
		t := cli.NewTable("NETWORK", "NODES", "ATTEMPTS", "BASELINE", "IMPROVED", "RATIO", "SEED BASE", "SEED IMPR", "SEED RATIO", "STARTED", "BASE|STARTED", "IMPR|STARTED")
		for _, r := range file.Solutions {
			t.Row(r.Network, r.Nodes, r.Attempts, r.BaselineMean, r.ImprovedMean, r.Ratio, r.SeedBaseline, r.SeedImproved, r.SeedRatio,
				r.StartedAttempts, r.BaselineMeanStarted, r.ImprovedMeanStarted)
		}
		return t.Write(w)
	}
	sum := sched.Summarize(file.Util)
	if plot != "" {
		ch := cli.Chart{Title: "Utilization gain of the improved algorithm", XLabel: "window", YLabel: "gain (percentage points)"}
		byNet := map[string]*cli.Series{}
		var order []string
		for _, s := range sum {
			se := byNet[s.Network]
			if se == nil {
				se = &cli.Series{Name: s.Network}
				byNet[s.Network] = se
				order = append(order, s.Network)
			}
			se.X = append(se.X, float64(s.Window))
			se.Y = append(se.Y, s.GainPoints)
		}
		for _, n := range order {
			ch.Series = append(ch.Series, *byNet[n])
		}
		if err := cli.SavePlot(ch, plot); err != nil {
			return err
		}
	}
	if out.json {
		return cli.JSON(w, struct {
			*sched.ShardFile
			Summary   []sched.UtilSummary `json:"summary"`
			Aggregate sched.UtilAggregate `json:"aggregate"`
		}{file, sum, sched.Aggregate(sum)})
	}
	t := cli.NewTable("NETWORK", "WINDOW", "U BASE", "U IMPR", "GAIN pp", "T_MEAN BASE", "T_MEAN IMPR", "RATIO", "SKIPPED B/I")
	for _, s := range sum {
		t.Row(s.Network, s.Window, fmt.Sprintf("%.2f%%", 100*s.BaselineU), fmt.Sprintf("%.2f%%", 100*s.ImprovedU), s.GainPoints,
			s.BaselineT, s.ImprovedT, s.TMeanRatio, fmt.Sprintf("%d/%d", s.BaselineSkip, s.ImprovedSkip))
	}
	if err := t.Write(w); err != nil {
		return err
	}
	if len(sum) > 0 {
		a := sched.Aggregate(sum)
		fmt.Fprintf(w, "\nutilization gain: mean %.2f pp (%.2f..%.2f), relative %+.2f%% (seed: +6.96%%, 0.5%%..16.5%%)\n", a.GainPoints, a.GainMin, a.GainMax, a.GainRelative)
		fmt.Fprintf(w, "T_mean ratio: mean of the rows %.2f, of the means %.2f, of the medians %.2f (seed: 1.83)\n", a.TMeanRatio, a.TMeanRatioOfMeans, a.TMeanRatioOfMedians)
	}
	return nil
}

// schedSimulateOptions are the flags of icn sched simulate.
type schedSimulateOptions struct {
	topo        topoFlags
	out         output
	jobs        string
	backfill    string
	algo        string
	rules       string
	scheduleOut string
	plot        string
	window      int
	transitFrac float64
	strict      bool
	quiet       bool
	ppn         int
	budget      budgetFlag
	startDelay  string
	interval    string
}

func newSchedSimulateCmd() *cobra.Command {
	var o schedSimulateOptions
	c := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a job stream (synthetic or SWF) on a torus, a switched fabric or a flat machine and report utilization and waiting",
		Example: `  icn sched simulate --topo torus:4x4x2 --jobs synthetic:load=0.8,span=1mo,seed=1 --window 8
  icn sched simulate --topo torus:8x8x4x4 --jobs swf:trace.swf --window 1 --backfill easy --algo baseline --json
  icn sched simulate --topo fattree:k=8,n=2 --jobs swf:trace.swf --schedule-out sched.swf --plot util.svg
  icn sched simulate --topo flat:240 --jobs swf:trace.swf --backfill easy
  icn sched simulate --topo torus:4x4x2 --jobs synthetic:jobs=200,seed=1 --start-delay 30 --pass-interval 2m`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runSchedSimulate(c.Context(), o, stdout(c))
		},
	}
	o.topo.register(c, "topo", "torus:4x4x2")
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.jobs, "jobs", "synthetic:load=0.8,span=1mo,seed=1", "job stream: synthetic:KEY=VAL,… (load, span, maxtime, mintime, jobs, sizes, maxnodes, overestimate, seed) or swf:FILE")
	f.IntVar(&o.window, "window", 1, "jobs scanned from the head of the queue (1 = FCFS)")
	f.StringVar(&o.backfill, "backfill", "none", "none, easy (EASY: the head job's reservation is kept), window (the window's later jobs start only if they end by the head's reservation: icn slurm agent's rule) or easy-accasim (accasim's EASYBackfilling rule: the reservation only says when the head is tried again)")
	f.StringVar(&o.algo, "algo", "improved", "improved or baseline (tori)")
	f.StringVar(&o.rules, "rules", "angara*", "routing rule (tori)")
	f.Float64Var(&o.transitFrac, "transit-frac", 1, transitFracUsage+"; tori and meshes")
	f.StringVar(&o.scheduleOut, "schedule-out", "", "write the schedule to FILE: standard workload format if FILE ends in .swf, else one JSON object per job (id, submit, start, end, nodes)")
	f.StringVar(&o.plot, "plot", "", "draw utilization over time to FILE (.svg/.png) and the wait-time distribution to FILE-wait.svg/.png")
	f.BoolVar(&o.strict, "strict", false, "fail on the first SWF problem instead of reporting it and skipping the line")
	f.IntVar(&o.ppn, "procs-per-node", 1, "SWF processors per node")
	f.StringVar(&o.startDelay, "start-delay", "0", "launch delay of every job (trace seconds, or a duration: 30, 2m, 1h), or @FILE of 'JOB-ID DELAY' lines: the job holds its nodes from its start and runs after the delay (as Slurm's launch); waits count to the start")
	f.StringVar(&o.interval, "pass-interval", "0", "schedule only at multiples of this many trace seconds (or a duration: 100, 2m), as a periodic scheduler such as icn slurm agent's rounds; 0 = at every arrival and end")
	registerBudget(c, &o.budget, "time one node-selection decision may take")
	return c
}

// simulateTiming reads --start-delay and --pass-interval.
// An empty value (options made without the flags) is 0.
func simulateTiming(o schedSimulateOptions) (delay func(sched.Job) float64, interval float64, err error) {
	if o.interval == "" {
		o.interval = "0"
	}
	if o.startDelay == "" {
		o.startDelay = "0"
	}
	if interval, err = sched.ParseDelay(o.interval); err != nil {
		return nil, 0, fmt.Errorf("--pass-interval: %v", err)
	}
	if name, ok := strings.CutPrefix(o.startDelay, "@"); ok {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, fmt.Errorf("--start-delay: %v", err)
		}
		defer f.Close()
		per, err := sched.ParseStartDelays(f, name)
		if err != nil {
			return nil, 0, fmt.Errorf("--start-delay: %v", err)
		}
		return sched.DelayOf(per, 0), interval, nil
	}
	every, err := sched.ParseDelay(o.startDelay)
	if err != nil {
		return nil, 0, fmt.Errorf("--start-delay: %v", err)
	}
	return sched.DelayOf(nil, every), interval, nil
}

func runSchedSimulate(_ context.Context, o schedSimulateOptions, w io.Writer) error {
	pol, err := schedPolicy(o.window, o.backfill)
	if err != nil {
		return err
	}
	if err := checkTransitFrac(o.transitFrac); err != nil {
		return err
	}
	delay, interval, err := simulateTiming(o)
	if err != nil {
		return err
	}
	pol.Interval = interval
	if interval > 0 && pol.Rule == sched.RuleAccasim {
		return fmt.Errorf("--pass-interval: --backfill easy-accasim schedules its own retries and takes no pass interval")
	}
	m, name, err := schedMachine(o)
	if err != nil {
		return err
	}
	stream, err := loadStream(o.jobs, m.Size(), o.strict, o.ppn)
	if err != nil {
		return err
	}
	reportStreamProblems(stream)
	bar := cli.NewProgress(len(stream.Jobs), "jobs", o.quiet)
	rep, err := sched.Simulate(sched.Config{Machine: m, Policy: pol, StartDelay: delay, Progress: func(int, int) { bar.Add(1) }}, stream)
	bar.Done()
	if err != nil {
		return err
	}
	policy := fmt.Sprintf("window %d%s", o.window, map[string]string{sched.RuleEASY: ", EASY backfilling", sched.RuleWindow: ", a reservation for the window's head", sched.RuleAccasim: ", accasim's EASY backfilling rule"}[pol.Rule])
	if interval > 0 {
		policy += fmt.Sprintf(", passes every %g s", interval)
	}
	if delay != nil {
		policy += ", start delays " + o.startDelay
	}
	if err := writeSchedule(o.scheduleOut, m, stream, rep, policy, o.ppn); err != nil {
		return err
	}
	if o.plot != "" {
		if err := plotSchedule(o.plot, rep, m.Size(), name); err != nil {
			return err
		}
	}
	if _, torus := m.(*sched.TorusMachine); torus {
		policy += fmt.Sprintf(", %s algorithm, rules %s", o.algo, o.rules)
	} else {
		policy += ", " + m.Describe()
	}
	return o.out.print(w, rep, func(w io.Writer) error { return writeSimReport(w, name, stream, policy, rep) })
}

func schedPolicy(window int, backfill string) (sched.Policy, error) {
	pol := sched.Policy{Window: window}
	switch backfill {
	case "", "none":
	case sched.RuleEASY, sched.RuleWindow, sched.RuleAccasim:
		pol.Backfill, pol.Rule = true, backfill
	default:
		return pol, fmt.Errorf("unknown --backfill %q (want none, easy, window or easy-accasim)", backfill)
	}
	if window < 1 {
		return pol, fmt.Errorf("--window must be at least 1, got %d", window)
	}
	if backfill == sched.RuleAccasim && window != 1 {
		return pol, fmt.Errorf("--backfill easy-accasim takes --window 1, got %d", window)
	}
	return pol, nil
}

// schedMachine builds the machine of --topo: flat:N, or the machine
// sched.NewMachine makes of the network.
func schedMachine(o schedSimulateOptions) (sched.Machine, string, error) {
	if n, flat, err := sched.ParseFlat(o.topo.spec); flat {
		if o.topo.failLinks != "" || o.topo.failNodes != "" {
			return nil, "", fmt.Errorf("flat:N has no network; --fail-links and --fail-nodes need one")
		}
		if err != nil {
			return nil, "", err
		}
		m, err := sched.NewFlatMachine(n, nil)
		return m, o.topo.spec, err
	}
	g, err := o.topo.load()
	if err != nil {
		return nil, "", err
	}
	m, err := sched.NewMachine(g, sched.MachineOptions{Algo: alloc.Algo(o.algo), Rules: o.rules, TransitFrac: o.transitFrac, Budget: o.budget.d})
	return m, g.Name(), err
}

// reportStreamProblems prints every problem of the input on stderr, one
// line each.
func reportStreamProblems(s *sched.Stream) {
	if !stderrProblems {
		return
	}
	type problem struct {
		p    sched.Skipped
		what string
	}
	var all []problem
	for _, p := range s.Skipped {
		all = append(all, problem{p, "skipped"})
	}
	for _, p := range s.Warnings {
		all = append(all, problem{p, "warning"})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].p.Line < all[j].p.Line })
	for _, p := range all {
		fmt.Fprintf(os.Stderr, "icn: %s\n", problemLine(s.Source, p.p, p.what))
	}
}

// stderrProblems lets tests silence reportStreamProblems.
var stderrProblems = true

func problemLine(src string, p sched.Skipped, what string) string {
	switch {
	case p.Line != 0 && p.ID != 0:
		return fmt.Sprintf("%s:%d: %s job %d: %s", src, p.Line, what, p.ID, p.Reason)
	case p.Line != 0:
		return fmt.Sprintf("%s:%d: %s: %s", src, p.Line, what, p.Reason)
	}
	return fmt.Sprintf("%s: %s job %d: %s", src, what, p.ID, p.Reason)
}

func writeSimReport(w io.Writer, name string, stream *sched.Stream, policy string, rep *sched.Report) error {
	t := cli.NewTable("METRIC", "VALUE")
	t.Row("network", name)
	t.Row("stream", stream.Source)
	t.Row("policy", policy)
	t.Row("jobs", rep.Jobs)
	t.Row("jobs done", rep.JobsDone)
	t.Row("jobs skipped", rep.JobsSkipped)
	t.Row("makespan", fmt.Sprintf("%.0f s (%.2f days)", rep.Makespan, rep.Makespan/86400))
	t.Row("utilization U", fmt.Sprintf("%.2f%%", 100*rep.Utilization))
	t.Row("relative wait T_mean", rep.TMean)
	t.Row("mean wait", fmt.Sprintf("%.0f s", rep.MeanWait))
	t.Row("mean bounded slowdown", rep.MeanBSLD)
	t.Row("allocation decisions", fmt.Sprintf("%d (%.2f s)", rep.Decisions, rep.AllocSeconds))
	if rep.DecisionsCut > 0 {
		t.Row("decisions cut by the budget", rep.DecisionsCut)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	for i, s := range rep.SkippedJobs {
		if i == 10 {
			fmt.Fprintf(w, "… and %d more skipped\n", len(rep.SkippedJobs)-10)
			break
		}
		switch {
		case s.ID != 0 && s.Line != 0:
			fmt.Fprintf(w, "skipped job %d (line %d): %s\n", s.ID, s.Line, s.Reason)
		case s.ID != 0:
			fmt.Fprintf(w, "skipped job %d: %s\n", s.ID, s.Reason)
		default:
			fmt.Fprintf(w, "skipped line %d: %s\n", s.Line, s.Reason)
		}
	}
	return nil
}

// writeSchedule writes --schedule-out: SWF for .swf files, else JSONL.
func writeSchedule(path string, m sched.Machine, stream *sched.Stream, rep *sched.Report, policy string, ppn int) error {
	if path == "" {
		return nil
	}
	var buf bytes.Buffer
	if strings.HasSuffix(strings.ToLower(path), ".swf") {
		if err := sched.WriteSWF(&buf, rep, stream, sched.SWFHeader{Machine: m.Describe(), Policy: policy, Nodes: m.Size(), ProcsPerNode: ppn}); err != nil {
			return err
		}
		return writeFileAtomic(path, buf.Bytes())
	}
	enc := json.NewEncoder(&buf)
	for _, r := range rep.Schedule {
		type rec struct {
			ID      int     `json:"id"`
			Submit  float64 `json:"submit"`
			Start   float64 `json:"start"`
			End     float64 `json:"end"`
			Nodes   [][]int `json:"nodes"`
			Active  int     `json:"active"`
			Skipped string  `json:"skipped,omitempty"`
		}
		nodes := r.Nodes
		if nodes == nil && r.NodeIDs() != nil {
			for _, v := range r.NodeIDs() {
				nodes = append(nodes, []int{v}) // machines without coordinates: [id]
			}
		}
		if err := enc.Encode(rec{r.ID, r.Submit, r.Start, r.End, nodes, r.Active, r.Skipped}); err != nil {
			return err
		}
	}
	return writeFileAtomic(path, buf.Bytes())
}

// plotSchedule draws utilization over time to path and the distribution
// of wait times to path with "-wait" before the extension.
func plotSchedule(path string, rep *sched.Report, nodes int, name string) error {
	x, y := sched.UtilizationCurve(rep.Schedule, nodes, 200)
	for i := range x {
		x[i] /= 86400
		y[i] *= 100
	}
	util := cli.Chart{Title: "Utilization over time (active nodes)", XLabel: "time (days)", YLabel: "utilization (%)",
		Series: []cli.Series{{Name: name, X: x, Y: y}}}
	if err := cli.SavePlot(util, path); err != nil {
		return err
	}
	wx, wy := sched.WaitCDF(rep.Schedule)
	for i := range wx {
		wx[i] /= 3600
		wy[i] *= 100
	}
	wait := cli.Chart{Title: "Wait-time distribution", XLabel: "wait (hours)", YLabel: "jobs waiting at most this long (%)",
		Series: []cli.Series{{Name: name, X: wx, Y: wy}}}
	ext := filepath.Ext(path)
	return cli.SavePlot(wait, strings.TrimSuffix(path, ext)+"-wait"+ext)
}
