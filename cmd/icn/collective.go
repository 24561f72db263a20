package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/icn-hpc/icn/collective"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/sim"
	"github.com/spf13/cobra"
)

// collectiveOptions are the flags of icn collective.
type collectiveOptions struct {
	out     output
	spec    string
	ops     string
	modes   string
	p       collective.Params
	sim     bool
	workers int
}

// collectiveRow is one operation under one switching mode, with the
// simulated time when --sim asks for it.
type collectiveRow struct {
	collective.Result
	Simulated *float64 `json:"simulated,omitempty"`
	Ratio     *float64 `json:"sim_over_model,omitempty"`
}

func newCollectiveCmd() *cobra.Command {
	var o collectiveOptions
	c := &cobra.Command{
		Use:   "collective",
		Short: "Communication cost of collective operations on rings, 2D tori and hypercubes (seed 002 §3)",
		Long: `Model the time of a collective operation with start-up time ts, per-hop
header time th and per-word time tw for messages of m words, under
store-and-forward (t = ts + (m·tw + th)·l per message) and cut-through
(t = ts + m·tw + th·l) switching. Operations: bcast (one-to-all broadcast),
allgather (all-to-all broadcast), reduce (the seed's reduction: combined
result on every processor), scan (prefix sum), scatter, gather, alltoall
(total exchange), shift (circular q-shift, --shift q).

With --sim the same algorithm runs as message steps in the cycle-level
simulator (one word = one flit = tw = 1 cycle; router delay and start-up
derived from th and ts; all-port nodes) and the simulated time is shown
next to the model. See docs/sim.md for every formula.`,
		Example: `  icn collective --topo hypercube:4 --op bcast --m 100 --ts 50 --tw 1 --th 2
  icn collective --topo torus:8x8 --op alltoall --m 16 --mode sf
  icn collective --topo ring:16 --m 32 --ts 10 --th 2 --sim
  icn collective --topo hypercube:5 --op shift --shift 5 --mode ct --sim --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runCollective(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.spec, "topo", "", "ring:P, torus:QxQ or hypercube:D")
	f.StringVar(&o.ops, "op", "all", "operation(s): "+strings.Join(collective.Ops, ", ")+", comma-separated, or all")
	f.StringVar(&o.modes, "mode", "both", "switching: sf (store-and-forward), ct (cut-through) or both")
	f.IntVar(&o.p.M, "m", 16, "message length in words")
	f.Float64Var(&o.p.Ts, "ts", 10, "start-up time per message")
	f.Float64Var(&o.p.Tw, "tw", 1, "time per word per link")
	f.Float64Var(&o.p.Th, "th", 2, "time per hop for the header")
	f.IntVar(&o.p.Shift, "shift", 1, "shift distance q of the circular shift")
	f.BoolVar(&o.sim, "sim", false, "also run the algorithm in the simulator and show both times")
	f.IntVar(&o.workers, "workers", 0, "goroutines for --sim (0 = all cores)")
	return c
}

// runCollective models (and with --sim simulates) the chosen operations
// and writes the table or JSON to w.
func runCollective(_ context.Context, o collectiveOptions, w io.Writer) error {
	t, err := collective.ParseModelTopo(o.spec)
	if err != nil {
		return err
	}
	if err := o.p.Check(); err != nil {
		return err
	}
	opList, err := collectiveOps(t, o.ops, o.p)
	if err != nil {
		return err
	}
	modeList, err := collectiveModes(o.modes)
	if err != nil {
		return err
	}
	var rows []collectiveRow
	for _, op := range opList {
		for _, m := range modeList {
			r, err := collective.Cost(t, op, m, o.p)
			if err != nil {
				return err
			}
			rows = append(rows, collectiveRow{Result: r})
		}
	}
	if o.sim {
		if err := simulateCollectives(t, rows, o.p, o.workers); err != nil {
			return err
		}
	}
	return o.out.print(w, rows, func(w io.Writer) error {
		return writeCollectiveTable(w, t, rows, o.p, o.sim)
	})
}

// collectiveOps parses --op: "all" or a list of operations the model knows.
func collectiveOps(t collective.Topo, ops string, p collective.Params) ([]string, error) {
	if ops == "all" {
		return collective.Ops, nil
	}
	var list []string
	for _, op := range strings.Split(ops, ",") {
		op = strings.TrimSpace(op)
		if _, err := collective.Cost(t, op, collective.SF, p); err != nil {
			return nil, err
		}
		list = append(list, op)
	}
	return list, nil
}

// collectiveModes parses --mode: both, or one switching mode.
func collectiveModes(modes string) ([]collective.Mode, error) {
	if modes == "both" {
		return []collective.Mode{collective.SF, collective.CT}, nil
	}
	m, err := collective.ParseMode(modes)
	if err != nil {
		return nil, err
	}
	return []collective.Mode{m}, nil
}

// simulateCollectives runs every row's algorithm in the simulator, on all
// workers, and fills in the simulated time and its ratio to the model.
func simulateCollectives(t collective.Topo, rows []collectiveRow, p collective.Params, workers int) error {
	errs := make([]error, len(rows))
	par.For(len(rows), workers, func(_, i int) {
		cyc, err := collective.Simulate(t, rows[i].Op, rows[i].Mode, p)
		if err != nil {
			errs[i] = err
			return
		}
		v := float64(cyc)
		rows[i].Simulated = &v
		if rows[i].Time > 0 {
			ratio := v / rows[i].Time
			rows[i].Ratio = &ratio
		}
	})
	return errors.Join(errs...)
}

// writeCollectiveTable prints the rows and the parameters they share.
func writeCollectiveTable(w io.Writer, t collective.Topo, rows []collectiveRow, p collective.Params, simulated bool) error {
	h := []string{"op", "mode", "model time", "steps", "formula"}
	if simulated {
		h = append(h, "simulated", "sim/model")
	}
	tb := cli.NewTable(h...)
	for _, r := range rows {
		vals := []any{r.Op, string(r.Mode), r.Time, r.Steps, r.Formula}
		if simulated {
			vals = append(vals, *r.Simulated, *r.Ratio)
		}
		tb.Row(vals...)
	}
	if err := tb.Write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s, p = %d, m = %d words, ts = %s, tw = %s, th = %s", t.Spec, t.P, p.M, cli.Float(p.Ts), cli.Float(p.Tw), cli.Float(p.Th))
	if p.Shift != 1 {
		fmt.Fprintf(w, ", shift q = %d", p.Shift)
	}
	fmt.Fprintln(w)
	return nil
}

// collectiveChecks compares the models with message-step simulation for
// the validation report.
func collectiveChecks(quick bool) ([]sim.Check, error) {
	topos := []string{"ring:8", "torus:4x4", "hypercube:4"}
	if quick {
		topos = []string{"ring:8", "hypercube:3"}
	}
	p := collective.Params{M: 16, Ts: 6, Tw: 1, Th: 2, Shift: 3}
	type job struct {
		t    collective.Topo
		op   string
		mode collective.Mode
	}
	var jobs []job
	for _, s := range topos {
		t, err := collective.ParseModelTopo(s)
		if err != nil {
			return nil, err
		}
		for _, op := range collective.Ops {
			for _, m := range []collective.Mode{collective.SF, collective.CT} {
				jobs = append(jobs, job{t, op, m})
			}
		}
	}
	checks := make([]sim.Check, len(jobs))
	errs := make([]error, len(jobs))
	par.For(len(jobs), 0, func(_, i int) {
		j := jobs[i]
		r, err := collective.Cost(j.t, j.op, j.mode, p)
		if err != nil {
			errs[i] = err
			return
		}
		cyc, err := collective.Simulate(j.t, j.op, j.mode, p)
		if err != nil {
			errs[i] = err
			return
		}
		dev := 0.0
		if r.Time > 0 {
			dev = (float64(cyc) - r.Time) / r.Time
		}
		checks[i] = sim.Check{
			Name:     fmt.Sprintf("collective %s %s %s: model vs simulation", j.t.Spec, j.op, j.mode),
			Expected: fmt.Sprintf("%s (model) ±%d%%", cli.Float(r.Time), int(collectiveTolerance*100)),
			Measured: fmt.Sprintf("%d cycles (%+.1f%%)", cyc, 100*dev),
			Value:    float64(cyc), Ref: r.Time, Pass: math.Abs(dev) <= collectiveTolerance,
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return checks, nil
}

// collectiveTolerance is how far simulation may deviate from the model.
const collectiveTolerance = 0.02
