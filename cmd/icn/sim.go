package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/multiring"
	"github.com/icn-hpc/icn/sim"
	"github.com/spf13/cobra"
)

// simFlags are the flags shared by icn sim and icn sim sweep.
type simFlags struct {
	tf                         topoFlags
	routing, table, fc         string
	dateline, router, stages   string
	speculative, termLinks     bool
	tailCredit                 bool
	creditDelay, inSpeedup     int
	booksim                    string
	traffic, hotspot, trace    string
	process, switching, packet string
	hotFrac, burst             float64
	vcs, buf, rdelay, llat     int
	cycles, warmup, workers    int
	seed                       uint64
	force, quiet               bool
	plot                       string
}

func (f *simFlags) register(c *cobra.Command) {
	d := sim.DefaultConfig()
	f.tf.register(c, "topo", "")
	fl := c.Flags()
	fl.StringVar(&f.routing, "routing", d.Routing, "routing: "+strings.Join(sim.Routings, ", "))
	fl.StringVar(&f.table, "table", "", "routing table file written by `icn route --json` (with --routing table)")
	fl.StringVar(&f.fc, "fc", "", "torus ring flow control: dateline (2 VC classes) or bubble (Angara/Blue Gene; needs --switching vct) (default dateline)")
	fl.StringVar(&f.dateline, "dateline", sim.DatelineBookSim, "dateline VC classes on torus rings: booksim (class 1 on a whole ring the packet wraps, as BookSim's dim_order_torus) or ahead (class 0 until the wrap link, 1 after it and on unwrapped rings)")
	fl.StringVar(&f.traffic, "traffic", d.Traffic, "traffic: "+strings.Join(sim.TrafficPatterns, ", "))
	fl.StringVar(&f.hotspot, "hotspot", "", "hotspot nodes for --traffic hotspot (names or coordinate patterns, comma-separated)")
	fl.Float64Var(&f.hotFrac, "hotspot-frac", d.HotspotFrac, "share of packets sent to the hotspots")
	fl.StringVar(&f.trace, "trace", "", "trace file for --traffic trace: lines 'cycle src dst size'")
	fl.StringVar(&f.process, "process", d.Process, "injection process: bernoulli or onoff")
	fl.Float64Var(&f.burst, "burst", d.Burst, "mean on-period in cycles of the on/off process")
	fl.IntVar(&f.vcs, "vcs", d.VCs, "virtual channels per physical channel")
	fl.IntVar(&f.buf, "buf", d.Buf, "flits per virtual-channel buffer")
	fl.StringVar(&f.switching, "switching", d.Switching, "switching: wormhole, vct (virtual cut-through) or saf (store-and-forward)")
	fl.StringVar(&f.packet, "packet", "1", "packet size in flits: P, or a mix 'P1,P2' / 'P1:w1,P2:w2'")
	fl.IntVar(&f.rdelay, "router-delay", d.RouterDelay, "router pipeline delay in cycles")
	fl.StringVar(&f.router, "router", sim.RouterLumped, "router model: lumped (every flit waits --router-delay cycles) or staged (BookSim's RC, VA, SA, ST pipeline: the next packet of a VC is routed only after the previous tail left)")
	fl.StringVar(&f.stages, "stages", "1,1,1,1", "staged router: cycles of route computation, VC allocation, switch allocation and traversal (BookSim routing_delay, vc_alloc_delay, sw_alloc_delay, st_final_delay)")
	fl.BoolVar(&f.speculative, "speculative", false, "staged router: VC and switch allocation in the same cycle (BookSim speculative = 1)")
	fl.StringVar(&f.booksim, "booksim", "", "read the run from a BookSim2 configuration FILE (keys icn models; others are refused by name); options given here override it")
	fl.BoolVar(&f.termLinks, "terminal-links", false, "1-cycle injection and ejection channels between terminals and routers (as BookSim)")
	fl.IntVar(&f.llat, "link-latency", d.LinkLatency, "link latency in cycles (credits return as fast)")
	fl.IntVar(&f.creditDelay, "credit-delay", 0, "extra cycles every credit takes back upstream (BookSim credit_delay)")
	fl.BoolVar(&f.tailCredit, "tail-credit", false, "free an output VC only when its packet's tail credit has come back, not as the tail leaves (BookSim wait_for_tail_credit = 1)")
	fl.IntVar(&f.inSpeedup, "input-speedup", 1, "crossbar inputs per input port; VC v uses input v mod N, so up to N flits of a port cross the switch per cycle (BookSim input_speedup)")
	fl.IntVar(&f.cycles, "cycles", d.Cycles, "measurement cycles per load point")
	fl.IntVar(&f.warmup, "warmup", 0, "warm-up cycles (0 = until latency and throughput settle)")
	fl.Uint64Var(&f.seed, "seed", d.Seed, "random seed (same seed, same output)")
	fl.IntVar(&f.workers, "workers", 0, "goroutines (0 = all cores)")
	fl.BoolVar(&f.force, "force", false, "simulate configurations that are not shown deadlock-free (deadlocks are then detected and reported)")
	fl.StringVar(&f.plot, "plot", "", "write the latency-vs-load chart to FILE (.svg or .png)")
}

// applyBookSim reads --booksim and sets every option the file gives that
// the command line did not (a sweep keeps its own loads).
func (f *simFlags) applyBookSim(c *cobra.Command) error {
	if f.booksim == "" {
		return nil
	}
	data, err := os.ReadFile(f.booksim)
	if err != nil {
		return fmt.Errorf("--booksim: %v", err)
	}
	bf, err := sim.ParseBookSim(data)
	if err != nil {
		return fmt.Errorf("%s: %v", f.booksim, err)
	}
	return bf.Overlay(func(name, v string) error {
		fl := c.Flags().Lookup(name)
		if fl == nil || fl.Changed {
			return nil
		}
		if err := fl.Value.Set(v); err != nil {
			return fmt.Errorf("%s: %s = %s: %v", f.booksim, name, v, err)
		}
		return nil
	})
}

// build parses the topology and every file and returns a network ready to
// simulate. needRate is false for trace runs.
func (f *simFlags) build(needRate bool, rate float64) (*sim.Network, sim.Config, error) {
	cfg := sim.DefaultConfig()
	cfg.Routing, cfg.FlowControl, cfg.Traffic, cfg.Process = f.routing, f.fc, f.traffic, f.process
	cfg.Dateline, cfg.Router, cfg.TerminalLinks = f.dateline, f.router, f.termLinks
	cfg.CreditDelay, cfg.TailCredit, cfg.InputSpeedup = f.creditDelay, f.tailCredit, f.inSpeedup
	st, err := sim.ParseStages(f.stages)
	if err != nil {
		return nil, cfg, fmt.Errorf("--%v", err)
	}
	st.Speculative = f.speculative
	cfg.Stages = st
	cfg.Switching, cfg.VCs, cfg.Buf, cfg.RouterDelay, cfg.LinkLatency = f.switching, f.vcs, f.buf, f.rdelay, f.llat
	cfg.HotspotFrac, cfg.Burst, cfg.Cycles, cfg.Warmup, cfg.Seed, cfg.Force = f.hotFrac, f.burst, f.cycles, f.warmup, f.seed, f.force
	cfg.Rate = rate
	sizes, err := sim.ParseSizes(f.packet)
	if err != nil {
		return nil, cfg, fmt.Errorf("--packet: %v", err)
	}
	cfg.Sizes = sizes
	failLinks := f.tf.failLinks
	if f.table != "" {
		data, err := os.ReadFile(f.table)
		if err != nil {
			return nil, cfg, fmt.Errorf("--table: %v", err)
		}
		t, err := sim.ParseTable(data)
		if err != nil {
			return nil, cfg, fmt.Errorf("%s: %v", f.table, err)
		}
		cfg.Table = t
		if failLinks == "" && len(t.FailedLinks) > 0 {
			failLinks = strings.Join(t.FailedLinks, ",")
		}
	}
	g, err := loadTopo(f.tf.spec, failLinks, f.tf.failNodes)
	if err != nil {
		return nil, cfg, err
	}
	if f.hotspot != "" {
		hs, err := readArgFile(f.hotspot)
		if err != nil {
			return nil, cfg, fmt.Errorf("--hotspot: %v", err)
		}
		if cfg.Hotspots, err = g.ParseNodes(hs); err != nil {
			return nil, cfg, fmt.Errorf("--hotspot: %v", err)
		}
	}
	if f.trace != "" {
		if !sim.UsesTrace(cfg.Traffic) {
			return nil, cfg, fmt.Errorf("--trace needs --traffic trace")
		}
		fh, err := os.Open(f.trace)
		if err != nil {
			return nil, cfg, fmt.Errorf("--trace: %v", err)
		}
		defer fh.Close()
		tr, err := sim.ParseTrace(fh)
		if err != nil {
			return nil, cfg, fmt.Errorf("%s: %v", f.trace, err)
		}
		cfg.Trace = tr
	}
	n, err := sim.NewNetwork(g, cfg, needRate)
	if err != nil {
		return nil, cfg, err
	}
	for _, w := range n.Warnings() {
		fmt.Fprintln(os.Stderr, "icn: warning: "+w)
	}
	return n, n.Config(), nil
}

// parseSeries reads "X1,X2,…" or "FROM:TO:STEP" (at most 1000 values),
// each in (lo, hi]; what names the values in errors ("injection rate",
// "--loads fraction").
func parseSeries(s, what string, lo, hi float64) ([]float64, error) {
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		var v [3]float64
		for i, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return nil, fmt.Errorf("%s range %q: %q is not a number", what, s, p)
			}
			v[i] = x
		}
		return seriesRange(v[0], v[1], v[2], what, lo, hi)
	}
	var out []float64
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		x, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not a number", what, p)
		}
		if !(x > lo && x <= hi) {
			return nil, fmt.Errorf("%s %g out of range: want %g < x ≤ %g", what, x, lo, hi)
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s given", what)
	}
	return out, nil
}

// seriesRange lists from, from+step, … up to to, each in (lo, hi].
func seriesRange(from, to, step float64, what string, lo, hi float64) ([]float64, error) {
	if !(from > lo && from <= hi) || !(to > lo && to <= hi) {
		return nil, fmt.Errorf("%s range %g..%g out of range: want %g < x ≤ %g", what, from, to, lo, hi)
	}
	if !(step > 0) || to < from {
		return nil, fmt.Errorf("%s range %g..%g step %g is empty", what, from, to, step)
	}
	if (to-from)/step > 1000 {
		return nil, fmt.Errorf("%s range %g..%g step %g has more than 1000 points", what, from, to, step)
	}
	var out []float64
	for i := 0; ; i++ {
		x := from + float64(i)*step
		if x > to+1e-9 {
			break
		}
		out = append(out, math.Round(x*1e9)/1e9)
	}
	return out, nil
}

// parseRates reads injection rates in flits/node/cycle: "0.1,0.2" or
// "0.1:0.9:0.1" (from:to:step).
func parseRates(s string) ([]float64, error) { return parseSeries(s, "injection rate", 0, 1) }

// simExit turns a deadlock into exit status 1 with its message.
func simExit(err error) error {
	var de *sim.DeadlockError
	if errors.As(err, &de) {
		return &exitError{1, err}
	}
	return err
}

// simChoicesHelp lists the simulator's routings and traffic patterns
// with their descriptions, from its registries.
func simChoicesHelp() string {
	var b strings.Builder
	for _, sec := range []struct {
		title   string
		choices []sim.Choice
	}{{"Routings (--routing):", sim.RoutingChoices()}, {"Traffic patterns (--traffic):", sim.TrafficChoices()}} {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(sec.title + "\n")
		for _, c := range sec.choices {
			fmt.Fprintf(&b, "  %-10s %s\n", c.Name, c.Doc)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// simOptions are the flags of `icn sim`.
type simOptions struct {
	sim     simFlags
	out     output
	rates   string
	rateSet bool // --rate was given on the command line
}

// newSimCmd is `icn sim`: one or more load points, or a trace, and the
// sweep, validate and multiring subcommands.
func newSimCmd() *cobra.Command {
	var o simOptions
	c := &cobra.Command{
		Use:   "sim",
		Short: "Cycle-level network simulation: latency and throughput per offered load",
		Long: `Simulate a network cycle by cycle: input-queued virtual-channel routers with
credit flow control, wormhole / virtual cut-through / store-and-forward
switching, dateline or bubble flow control on torus rings. Each load point
runs a warm-up until latency and throughput settle, a measurement window
(--cycles) and a drain until every measured packet has arrived; flit
conservation is checked on every run and deadlocks are detected and
reported (exit status 1). Loads are flits per node per cycle. See docs/sim.md.

` + simChoicesHelp(),
		Example: `  icn sim --topo torus:8x8 --routing dor --traffic uniform --rate 0.3
  icn sim --topo torus:8x8 --rate 0.1,0.3,0.5 --json
  icn sim --topo torus:4x4x4 --routing dirbit --switching vct --fc bubble --vcs 1 --packet 4 --rate 0.2
  icn sim --topo torus:8x8 --routing table --table table.json --switching vct --fc bubble --vcs 1 --buf 8 --rate 0.2
  icn sim --topo fattree:k=4,n=3 --routing minhop --traffic bitrev --rate 0.5
  icn sim --topo dragonfly:a=4,p=2,h=2 --routing ugal --vcs 3 --rate 0.4
  icn sim --topo torus:4x4 --traffic trace --trace msgs.txt
  icn sim --topo torus:8x8 --router staged --stages 1,1,1,1 --terminal-links --rate 0.2
  icn sim --booksim torus88.cfg --rate 0.2`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.sim.applyBookSim(c); err != nil {
				return err
			}
			o.rateSet = c.Flags().Changed("rate")
			return runSim(c.Context(), o, stdout(c))
		},
	}
	o.sim.register(c)
	o.out.register(c)
	c.Flags().StringVar(&o.rates, "rate", "0.1", "offered load(s) in flits/node/cycle: X, X1,X2,… or FROM:TO:STEP")
	c.AddCommand(newSimSweepCmd(), newSimValidateCmd(), newSimMultiringCmd())
	return c
}

// runSim simulates the load points (or the trace), writes them to w and
// returns exit status 1 when a point deadlocked.
func runSim(_ context.Context, o simOptions, w io.Writer) error {
	trace := sim.UsesTrace(o.sim.traffic)
	rs, err := simRates(o, trace)
	if err != nil {
		return err
	}
	first := 0.0
	if len(rs) > 0 {
		first = rs[0]
	}
	n, cfg, err := o.sim.build(!trace, first)
	if err != nil {
		return err
	}
	var pts []sim.Point
	if trace {
		pts, err = simTrace(n, cfg)
	} else {
		pts, err = simLoads(n, cfg, rs, o.sim.workers, o.sim.quiet)
	}
	if err != nil {
		return err
	}
	if o.sim.plot != "" {
		if err := cli.SavePlot(latencyChart(n, pts), o.sim.plot); err != nil {
			return err
		}
	}
	if err := o.out.print(w, pts, func(w io.Writer) error { return writePoints(w, n, cfg, pts, trace) }); err != nil {
		return err
	}
	for _, p := range pts {
		if p.Deadlock != "" {
			return &exitError{1, fmt.Errorf("at load %g: %s", p.Offered, p.Deadlock)}
		}
	}
	return nil
}

// simRates parses --rate; a trace run takes none (the trace gives the
// messages) and refuses one given on the command line.
func simRates(o simOptions, trace bool) ([]float64, error) {
	if !trace {
		return parseRates(o.rates)
	}
	if o.rateSet {
		return nil, fmt.Errorf("--rate does not apply to --traffic trace (the trace gives the messages)")
	}
	return nil, nil
}

// simTrace replays the trace as one point; a deadlock is exit status 1.
func simTrace(n *sim.Network, cfg sim.Config) ([]sim.Point, error) {
	cfg.Workers = 1
	p, err := sim.RunTrace(n, cfg)
	if err != nil {
		return nil, simExit(err)
	}
	return []sim.Point{p}, nil
}

// simLoads runs every offered load (in parallel), with a progress bar when
// there is more than one.
func simLoads(n *sim.Network, cfg sim.Config, rs []float64, workers int, quiet bool) ([]sim.Point, error) {
	bar := cli.NewProgress(len(rs), "simulating", quiet || len(rs) < 2)
	if len(rs) == 1 {
		cfg.Workers = sim.PartitionWorkers(n, workers)
	}
	pts, err := sim.RunRates(n, cfg, rs, workers, func() { bar.Add(1) })
	bar.Done()
	return pts, err
}

// writePoints writes the load points as a table and the network, router and
// bound summary under it.
func writePoints(w io.Writer, n *sim.Network, cfg sim.Config, pts []sim.Point, trace bool) error {
	t := cli.NewTable("offered", "accepted", "latency avg", "p50", "p99", "max", "hops", "packets", "stable", "converged")
	for _, p := range pts {
		off := cli.Float(p.Offered)
		if trace {
			off = "trace " + cli.Float(p.Injected)
		}
		stable := cli.Cell(p.Stable)
		if p.Deadlock != "" {
			stable = "DEADLOCK"
		}
		t.Row(off, p.Accepted, p.LatencyAvg, p.LatencyP50, p.LatencyP99, p.LatencyMax, p.HopsAvg, p.Packets, stable, p.Converged)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	g := n.Graph()
	fmt.Fprintf(w, "\n%s, %s routing, %s switching, %d VCs × %d flits, %d terminals; every run conserved flits and packets\n",
		g.Name(), cfg.Routing, cfg.Switching, cfg.VCs, cfg.Buf, len(n.Terminals()))
	fmt.Fprintf(w, "%s\n", cfg.RouterSummary())
	if h, t0, ok := n.ZeroLoad(cfg); ok {
		fmt.Fprintf(w, "zero-load latency (analytic): %s cycles over %s hops on average\n", cli.Float(t0), cli.Float(h))
	}
	if ideal, note := n.IdealThroughput(); ideal > 0 {
		fmt.Fprintf(w, "ideal throughput: %s flits/node/cycle (%s)\n", cli.Float(ideal), note)
	}
	for _, p := range pts {
		if p.Deadlock != "" {
			fmt.Fprintf(w, "load %s: %s\n", cli.Float(p.Offered), p.Deadlock)
		}
	}
	return nil
}

// latencyChart plots average and 99th-percentile latency against offered
// load.
func latencyChart(n *sim.Network, pts []sim.Point) cli.Chart {
	ps := append([]sim.Point(nil), pts...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Offered < ps[j].Offered })
	avg := cli.Series{Name: "average latency"}
	p99 := cli.Series{Name: "99th percentile"}
	for _, p := range ps {
		if p.Packets == 0 {
			continue
		}
		avg.X, avg.Y = append(avg.X, p.Offered), append(avg.Y, p.LatencyAvg)
		p99.X, p99.Y = append(p99.X, p.Offered), append(p99.Y, p.LatencyP99)
	}
	return cli.Chart{Title: "Latency vs offered load: " + n.Graph().Name(), XLabel: "offered load (flits/node/cycle)",
		YLabel: "latency (cycles)", Series: []cli.Series{avg, p99}, LogY: true}
}

// simSweepOptions are the flags of `icn sim sweep`.
type simSweepOptions struct {
	sim            simFlags
	out            output
	from, to, step float64
	rates          string
	refine         int
}

// newSimSweepCmd is `icn sim sweep`: a latency-vs-load curve and the
// saturation point.
func newSimSweepCmd() *cobra.Command {
	var o simSweepOptions
	c := &cobra.Command{
		Use:   "sweep",
		Short: "Latency-vs-load curve and automatic saturation search",
		Long: `Simulate a range of offered loads (in parallel, one load per core), then
bisect between the highest stable and the lowest unstable load (--refine
rounds) to find the saturation throughput: the highest offered load at which
every measured packet drains and the accepted throughput is at least 95% of
the injected load. On tori and meshes with uniform traffic the saturation is
also given as a fraction of the ideal channel-load bound (8/k, 4/k).`,
		Example: `  icn sim sweep --topo torus:8x8 --routing dor --traffic uniform
  icn sim sweep --topo torus:8x8 --from 0.1 --to 1 --step 0.1 --json --plot lat.svg
  icn sim sweep --topo fattree:k=4,n=3 --routing minhop --traffic randperm
  icn sim sweep --booksim torus88.cfg --from 0.05 --to 0.6 --step 0.05`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.sim.applyBookSim(c); err != nil {
				return err
			}
			return runSimSweep(c.Context(), o, stdout(c))
		},
	}
	o.sim.register(c)
	o.out.register(c)
	c.Flags().Float64Var(&o.from, "from", 0.05, "lowest offered load")
	c.Flags().Float64Var(&o.to, "to", 1, "highest offered load")
	c.Flags().Float64Var(&o.step, "step", 0.05, "load step")
	c.Flags().StringVar(&o.rates, "rates", "", "explicit loads instead of --from/--to/--step: X1,X2,… or FROM:TO:STEP")
	c.Flags().IntVar(&o.refine, "refine", 4, "bisection rounds to narrow the saturation point")
	return c
}

// runSimSweep simulates the loads, bisects towards saturation and writes
// the curve and the saturation point to w.
func runSimSweep(_ context.Context, o simSweepOptions, w io.Writer) error {
	if sim.UsesTrace(o.sim.traffic) {
		return fmt.Errorf("a sweep varies the offered load; a trace fixes it (use icn sim --traffic trace)")
	}
	rs, err := sweepRates(o)
	if err != nil {
		return err
	}
	if o.refine < 0 || o.refine > 20 {
		return fmt.Errorf("--refine %d out of range 0..20", o.refine)
	}
	n, cfg, err := o.sim.build(true, rs[0])
	if err != nil {
		return err
	}
	k := max(1, par.Workers(o.sim.workers))
	bar := cli.NewProgress(len(rs)+o.refine*k, "sweeping", o.sim.quiet)
	res, err := sim.Sweep(n, cfg, rs, o.refine, o.sim.workers, func() { bar.Add(1) })
	bar.Done()
	if err != nil {
		return err
	}
	if o.sim.plot != "" {
		if err := cli.SavePlot(latencyChart(n, res.Points), o.sim.plot); err != nil {
			return err
		}
	}
	return o.out.print(w, res, func(w io.Writer) error { return writeSweep(w, n, cfg, res) })
}

// sweepRates is --rates when given, else --from/--to/--step.
func sweepRates(o simSweepOptions) ([]float64, error) {
	if o.rates != "" {
		return parseRates(o.rates)
	}
	return seriesRange(o.from, o.to, o.step, "injection rate", 0, 1)
}

// writeSweep writes the sweep's points and its saturation line.
func writeSweep(w io.Writer, n *sim.Network, cfg sim.Config, res *sim.SweepResult) error {
	if err := writePoints(w, n, cfg, res.Points, false); err != nil {
		return err
	}
	if res.Reached {
		fmt.Fprintf(w, "saturation: %s flits/node/cycle offered (%s accepted)", cli.Float(res.Saturation), cli.Float(res.SaturationAccepted))
	} else {
		fmt.Fprintf(w, "saturation not reached: stable up to %s flits/node/cycle", cli.Float(res.Saturation))
	}
	if res.Ideal > 0 {
		fmt.Fprintf(w, " = %.1f%% of the ideal %s", 100*res.Fraction, cli.Float(res.Ideal))
	}
	fmt.Fprintln(w)
	return nil
}

// simValidateOptions are the flags of `icn sim validate`.
type simValidateOptions struct {
	out          output
	quick, quiet bool
	seed         uint64
	workers      int
}

// newSimValidateCmd is `icn sim validate`: the simulator's validation
// report.
func newSimValidateCmd() *cobra.Command {
	var o simValidateOptions
	c := &cobra.Command{
		Use:   "validate",
		Short: "Check the simulator against analytic values, bounds and the seeds (exit status 1 on any failure)",
		Long: `Run the simulator's validation report:
  - zero-load latency equals the analytic value (hops × per-hop delay +
    serialization) within 2% on tori, meshes, hypercubes, fat trees and
    dragonflies, for wormhole, virtual cut-through and store-and-forward;
  - on k-ary 2-cube tori with uniform traffic and DOR the accepted
    throughput never exceeds the ideal bound 8/k, and the saturation
    throughput is reported as a fraction of it;
  - flits and packets are conserved on every run;
  - deadlocks are detected and reported (an Angara table with a turn cycle,
    a torus ring without dateline VCs), never hang;
  - multiring effective capacities by simulation against the analytic
    values and the seed's 15, 21.8, 30.5 and 65;
  - collective cost models against message-step simulation.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runSimValidate(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	c.Flags().BoolVar(&o.quick, "quick", false, "shorter runs (coarser, for a smoke test)")
	c.Flags().Uint64Var(&o.seed, "seed", 1, "random seed")
	c.Flags().IntVar(&o.workers, "workers", 0, "goroutines (0 = all cores)")
	return c
}

// runSimValidate runs the simulator's and the collective models' checks,
// writes them to w and returns exit status 1 when any failed.
func runSimValidate(_ context.Context, o simValidateOptions, w io.Writer) error {
	bar := cli.NewProgress(-1, "validating", o.quiet)
	checks, err := sim.Validate(sim.ValidateOptions{Quick: o.quick, Seed: o.seed, Workers: o.workers, Progress: func(string) { bar.Add(1) }})
	if err == nil {
		var more []sim.Check
		more, err = collectiveChecks(o.quick)
		checks = append(checks, more...)
	}
	bar.Done()
	if err != nil {
		return err
	}
	failed := 0
	for _, ch := range checks {
		if !ch.Pass {
			failed++
		}
	}
	res := struct {
		Checks []sim.Check `json:"checks"`
		Failed int         `json:"failed"`
	}{checks, failed}
	if err := o.out.print(w, res, func(w io.Writer) error { return writeChecks(w, checks, failed) }); err != nil {
		return err
	}
	if failed > 0 {
		return &exitError{1, fmt.Errorf("%d of %d validation checks failed", failed, len(checks))}
	}
	return nil
}

// writeChecks writes the validation checks as a table and a count.
func writeChecks(w io.Writer, checks []sim.Check, failed int) error {
	t := cli.NewTable("check", "expected", "measured", "result")
	for _, ch := range checks {
		v := "PASS"
		if !ch.Pass {
			v = "FAIL"
		}
		t.Row(ch.Name, ch.Expected, ch.Measured, v)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d checks, %d failed\n", len(checks), failed)
	return nil
}

// simMultiringOptions are the flags of `icn sim multiring`.
type simMultiringOptions struct {
	out                      output
	n, copies, cycles, iters int
	steps, schedule, loads   string
	loadBase                 float64
	seed                     uint64
}

// newSimMultiringCmd is `icn sim multiring`: a multiring's effective
// capacity and its latency against load by slotted-ring simulation, beside
// the delay of seed 000's formula (2.1).
func newSimMultiringCmd() *cobra.Command {
	var o simMultiringOptions
	c := &cobra.Command{
		Use:   "multiring",
		Short: "Effective capacity and latency of a non-switched multiring by slotted-ring simulation (seed 000 §2–3)",
		Long: `Simulate a multiring as slotted rings (the seed's segmented ring): every
link holds one packet per slot time, a node removes the packets addressed
to it and inserts its own into free slots (transit first), and every packet
rides one ring chosen by the route schedule. The effective capacity is the
largest total load (packets per slot time over all nodes) at which no
ring's queues grow, found by bisection, and is compared with the analytic
C = N(N-1)/L.

The latency table runs the loads --loads (fractions of --load-base, by
default the analytic C) and prints the simulated latency in slot times, its
wait (latency minus the zero-load latency: hops + 1), and the delay seed
000's formula (2.1) predicts, tau = F/(c - s), ring by ring with
F = s(1 - (1 + 1/m)/(2L)) for a slotted ring whose slots are independent
(L the ring's mean hops, m the rings; see docs/sim.md).

--n, --steps and --copies name the multiring as in 'icn multiring
capacity', and --schedule computes its route schedule the same way:
shortest splits a route equally among the rings on which it is shortest,
balanced is the seed's load-equalising heuristic (table 2.3), optimal the
linear program. --schedule FILE instead reads a schedule made elsewhere
(JSON: the output of 'icn multiring capacity --json', or
{"n","steps","shares"}); --n, --steps and --copies are then not used.`,
		Example: `  icn sim multiring --n 16 --steps ±1,±3
  icn sim multiring --n 32 --steps ±1 --copies 4
  icn sim multiring --n 32 --steps ±1,±2,±3,±7 --schedule balanced
  icn sim multiring --n 32 --steps ±1,±2,±3,±7 --schedule balanced --iters 0 --loads 0.5,0.8 --load-base 30.5`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runSimMultiring(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	c.Flags().IntVar(&o.n, "n", 16, "number of nodes N")
	c.Flags().StringVar(&o.steps, "steps", "±1,±3", stepsUsage)
	c.Flags().IntVar(&o.copies, "copies", 1, copiesUsage)
	c.Flags().StringVar(&o.schedule, "schedule", multiring.Shortest, "route schedule: "+scheduleKindsUsage+", or a JSON FILE (see above)")
	c.Flags().IntVar(&o.cycles, "cycles", 40000, "slot times per load point")
	c.Flags().IntVar(&o.iters, "iters", 14, "bisection rounds for the effective capacity (0: skip it)")
	c.Flags().StringVar(&o.loads, "loads", "0.1:0.9:0.1", "latency table loads as fractions of --load-base: X1,X2,… or FROM:TO:STEP ('none': no table)")
	c.Flags().Float64Var(&o.loadBase, "load-base", 0, "total load (packets per slot time) the --loads fractions refer to (default: the schedule's analytic C)")
	c.Flags().Uint64Var(&o.seed, "seed", 1, "random seed")
	return c
}

// simMultiringResult is the JSON of `icn sim multiring`: the capacity
// search (when run) and the latency table.
type simMultiringResult struct {
	sim.RingCapacityResult
	LoadBase float64              `json:"load_base"`
	Model    sim.RingDelayModel   `json:"delay_model"`
	Latency  []sim.RingDelayPoint `json:"latency"`
}

// runSimMultiring finds the multiring's effective capacity and its latency
// against load by simulation and writes them to w beside the analytic
// capacity and the delay of formula (2.1).
func runSimMultiring(_ context.Context, o simMultiringOptions, w io.Writer) error {
	if o.cycles < 1000 || o.cycles > 1<<26 {
		return fmt.Errorf("--cycles %d out of range 1000..%d", o.cycles, 1<<26)
	}
	if o.iters < 0 || o.iters > 40 {
		return fmt.Errorf("--iters %d out of range 0..40", o.iters)
	}
	if !(o.loadBase >= 0 && o.loadBase <= 1e6) {
		return fmt.Errorf("--load-base %g out of range 0..1e6 packets per slot time", o.loadBase)
	}
	fractions, err := parseLoadFractions(o.loads)
	if err != nil {
		return err
	}
	s, err := ringSchedule(o)
	if err != nil {
		return err
	}
	res := simMultiringResult{RingCapacityResult: sim.NewRingCapacityResult(s),
		LoadBase: o.loadBase, Model: sim.NewRingDelayModel(s), Latency: []sim.RingDelayPoint{}}
	if res.LoadBase == 0 {
		res.LoadBase = res.Analytic
	}
	if o.iters > 0 {
		res.RingCapacityResult = sim.RingCapacity(s, o.seed, o.cycles, o.iters)
	}
	if len(fractions) > 0 {
		res.Latency = sim.RingLatencySweep(s, fractions, res.LoadBase, o.seed, max(o.cycles/10, 4*s.M.N), o.cycles, 0)
	}
	return o.out.print(w, res, func(w io.Writer) error { return writeSimMultiring(w, res, o.iters > 0) })
}

// writeSimMultiring prints the capacity and the latency table.
func writeSimMultiring(w io.Writer, res simMultiringResult, capacity bool) error {
	kv := []any{"nodes N", res.N, "rings (signed steps)", fmt.Sprint(res.Steps), "schedule", res.Schedule,
		"analytic C = N(N-1)/max L_j", res.Analytic}
	if capacity {
		kv = append(kv, "simulated effective capacity", res.Simulated, "simulated / analytic", res.Simulated/res.Analytic)
	}
	if len(res.Latency) > 0 {
		kv = append(kv, "zero-load latency (hops + 1)", res.Model.ZeroLoadLatency())
	}
	if err := cli.KV(w, kv...); err != nil || len(res.Latency) == 0 {
		return err
	}
	fmt.Fprintf(w, "\nlatency in slot times against load s = fraction × %s packets/slot; τ (2.1) = Σ_j w_j F_j/(c_j − s_j)\n\n", cli.Float(res.LoadBase))
	t := cli.NewTable("s/base", "load s", "accepted", "latency", "wait", "τ (2.1)", "latency (2.1)", "wait/τ", "stable")
	for _, p := range res.Latency {
		t.Row(p.Fraction, p.Load, p.Accepted, p.Latency, p.Wait, optFloat(p.Tau), optFloat(p.Latency21), optFloat(p.Ratio), p.Stable)
	}
	return t.Write(w)
}

// optFloat is a table cell for a value that may be absent ("∞" for a
// prediction at or above a ring's capacity).
func optFloat(v *float64) any {
	if v == nil {
		return "∞"
	}
	return *v
}

// parseLoadFractions reads --loads: "none", "X1,X2,…" or "FROM:TO:STEP",
// every fraction of --load-base in (0, 2].
func parseLoadFractions(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "none" {
		return nil, nil
	}
	return parseSeries(s, "--loads fraction", 0, 2)
}

// ringSchedule is the route schedule --schedule names: shortest, balanced
// or optimal on the multiring of --n, --steps and --copies, computed as
// `icn multiring capacity` computes it, or one read from a JSON file; the
// simulator's size limits apply to both.
func ringSchedule(o simMultiringOptions) (*multiring.Schedule, error) {
	var s *multiring.Schedule
	if slices.Contains(multiring.ScheduleKinds, o.schedule) {
		m, err := parseMultiring(o.n, o.steps, o.copies)
		if err != nil {
			return nil, err
		}
		if s, err = m.Schedule(o.schedule); err != nil {
			return nil, err
		}
	} else {
		data, err := os.ReadFile(o.schedule)
		if err != nil {
			return nil, fmt.Errorf("--schedule %s: want %s or a schedule FILE: %v", o.schedule, strings.Join(multiring.ScheduleKinds, ", "), err)
		}
		if s, err = multiring.ParseSchedule(data); err != nil {
			return nil, fmt.Errorf("%s: %v", o.schedule, err)
		}
	}
	if err := sim.CheckRingSize(s); err != nil {
		return nil, err
	}
	return s, nil
}
