package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/benchscen"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/sim"
	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
	"github.com/spf13/cobra"
)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// benchRow is one measurement with the baseline measured in the same run.
type benchRow struct {
	Name     string  `json:"name"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Baseline string  `json:"baseline,omitempty"`
	BaseVal  float64 `json:"baseline_value,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"` // baseline / value for times, value / baseline for rates
}

// benchOptions are the flags of `icn bench`.
type benchOptions struct {
	out   output
	quick bool
	log   io.Writer // where the progress lines go (nil: standard error)
}

// newBenchCmd is `icn bench`: icn's key speeds, each against a baseline
// measured in the same run.
func newBenchCmd() *cobra.Command {
	var o benchOptions
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure icn's key speeds on this machine, each against a baseline run in the same process",
		Long: `Runs a fixed set of measurements and reports each with a baseline taken in the same run:
topology all-pairs distances on all cores vs one core, a verified BFS routing table, sssp unicast
tables of a fat tree on all cores vs one, a node-selection
decision at 50% occupancy on all cores vs one, the exhaustive
decision for a job of an eighth of an idle torus on all cores vs one and under a budget, FULB-MC vs SSSP-MC-new on the TaihuLight-shaped fabric,
and simulated router-cycles per second. The package benchmarks (go test -bench) hold more.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.log = c.ErrOrStderr()
			return runBench(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	c.Flags().BoolVar(&o.quick, "quick", false, "smaller instances (seconds instead of a minute)")
	return c
}

// runBench takes every measurement in order and writes the rows to w.
func runBench(_ context.Context, o benchOptions, w io.Writer) error {
	if o.log == nil {
		o.log = os.Stderr
	}
	b := bench{quick: o.quick, log: o.log}
	rows, err := b.rows()
	if err != nil {
		return err
	}
	type report struct {
		Cores int        `json:"cores"`
		Rows  []benchRow `json:"results"`
	}
	cores := runtime.GOMAXPROCS(0)
	return o.out.print(w, report{cores, rows}, func(wr io.Writer) error {
		t := cli.NewTable("MEASUREMENT", "VALUE", "UNIT", "BASELINE (same run)", "BASELINE VALUE", "RATIO")
		for _, r := range rows {
			if r.Baseline == "" {
				t.Row(r.Name, r.Value, r.Unit, "-", "-", "-")
				continue
			}
			t.Row(r.Name, r.Value, r.Unit, r.Baseline, r.BaseVal, r.Ratio)
		}
		fmt.Fprintf(wr, "%d cores\n", cores)
		return t.Write(wr)
	})
}

// bench is one run of icn bench: the instance size and the progress log.
type bench struct {
	quick bool
	log   io.Writer
}

// step announces a measurement on the progress log.
func (b bench) step(name string) { fmt.Fprintf(b.log, "bench: %s…\n", name) }

// network parses the full-size spec, or the small one with --quick.
func (b bench) network(full, small string) (string, *topology.Graph, error) {
	return b.scenario(benchscen.Network{Full: full, Quick: small})
}

// scenario parses the network of a scenario the package benchmarks share
// (benchscen) at the size of this run.
func (b bench) scenario(n benchscen.Network) (string, *topology.Graph, error) {
	spec := n.Spec(b.quick)
	g, err := topology.Parse(spec)
	return spec, g, err
}

// wholeTorus returns g's router under the tables' rule and every node of
// g, the active set of the whole-torus table rows.
func wholeTorus(g *topology.Graph) (*routing.Router, []int, error) {
	rule, err := routing.ParseRule(benchscen.TableRule)
	if err != nil {
		return nil, nil, err
	}
	r, err := routing.NewRouter(g, rule)
	if err != nil {
		return nil, nil, err
	}
	all := make([]int, g.NumNodes())
	for i := range all {
		all[i] = i
	}
	return r, all, nil
}

// timeIt is the wall time of f.
func timeIt(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// benchTorus is the torus the routing-table and selection rows share.
type benchTorus struct {
	spec string
	g    *topology.Graph
	r    *routing.Router
}

// rows takes the measurements in their report order.
func (b bench) rows() ([]benchRow, error) {
	var rows []benchRow
	row, err := b.distances()
	if err != nil {
		return nil, err
	}
	rows = append(rows, row)
	row, tor, err := b.routingTable()
	if err != nil {
		return nil, err
	}
	rows = append(rows, row)
	if row, err = b.tableCores(); err != nil {
		return nil, err
	}
	rows = append(rows, row)
	more, err := routeBenchRows(b.quick, b.step)
	if err != nil {
		return nil, err
	}
	rows = append(rows, more...)
	if row, err = b.sssp(); err != nil {
		return nil, err
	}
	rows = append(rows, row)
	if row, err = b.selection(tor); err != nil {
		return nil, err
	}
	rows = append(rows, row)
	b.step("node selection, half of X busy")
	if more, err = benchHalfXSelection(b.network, timeIt); err != nil {
		return nil, err
	}
	rows = append(rows, more...)
	b.step("node selection, slab job")
	if more, err = benchSlabSelection(b.network, timeIt); err != nil {
		return nil, err
	}
	rows = append(rows, more...)
	if more, err = b.multicast(); err != nil {
		return nil, err
	}
	rows = append(rows, more...)
	if more, err = b.simulator(); err != nil {
		return nil, err
	}
	return append(rows, more...), nil
}

// distances times all-pairs distances (generic algorithm) on all cores
// against one core.
func (b bench) distances() (benchRow, error) {
	b.step("all-pairs distances")
	spec, g, err := b.scenario(benchscen.AllPairs)
	if err != nil {
		return benchRow{}, err
	}
	t1, _ := timeIt(func() error {
		topology.Distances(g, topology.MetricsOptions{ForceGeneric: true, Workers: 1})
		return nil
	})
	tn, _ := timeIt(func() error { topology.Distances(g, topology.MetricsOptions{ForceGeneric: true}); return nil })
	return benchRow{Name: "all-pairs BFS " + spec, Value: ms(tn), Unit: "ms", Baseline: "1 core", BaseVal: ms(t1), Ratio: t1.Seconds() / tn.Seconds()}, nil
}

// sssp times the sssp unicast engine on a fat tree on all cores against
// one core (the same tables either way): benchscen.SSSPTables.
func (b bench) sssp() (benchRow, error) {
	sc := benchscen.SSSPTables
	b.step(sc.Engine + " unicast tables")
	spec, g, err := b.scenario(sc.Fabric)
	if err != nil {
		return benchRow{}, err
	}
	f, err := unicast.NewFabric(g, nil)
	if err != nil {
		return benchRow{}, err
	}
	t1, err := timeIt(func() error {
		_, e := unicast.Route(context.Background(), f, unicast.Options{Engine: sc.Engine, Workers: 1})
		return e
	})
	if err != nil {
		return benchRow{}, err
	}
	tn, _ := timeIt(func() error {
		_, e := unicast.Route(context.Background(), f, unicast.Options{Engine: sc.Engine})
		return e
	})
	return benchRow{Name: sc.Engine + " unicast tables " + spec, Value: ms(tn), Unit: "ms", Baseline: "1 core", BaseVal: ms(t1), Ratio: t1.Seconds() / tn.Seconds()}, nil
}

// routingTable times a verified BFS routing table with the whole torus
// active against the baseline algorithm, and returns the torus and its
// router for the selection rows.
func (b bench) routingTable() (benchRow, benchTorus, error) {
	b.step("routing table")
	spec, g, err := b.scenario(benchscen.TableVsBaseline)
	if err != nil {
		return benchRow{}, benchTorus{}, err
	}
	r, all, err := wholeTorus(g)
	if err != nil {
		return benchRow{}, benchTorus{}, err
	}
	var tb *routing.Table
	tt, err := timeIt(func() error {
		var e error
		tb, e = r.Build(context.Background(), all, nil, routing.BuildOptions{})
		return e
	})
	if err != nil {
		return benchRow{}, benchTorus{}, err
	}
	tbb, err := timeIt(func() error {
		_, e := r.Build(context.Background(), all, nil, routing.BuildOptions{Algo: routing.Baseline})
		return e
	})
	if err != nil {
		return benchRow{}, benchTorus{}, err
	}
	row := benchRow{Name: fmt.Sprintf("BFS table + verification %s (%d routes)", spec, tb.NumRoutes()), Value: ms(tt), Unit: "ms",
		Baseline: "baseline algorithm", BaseVal: ms(tbb), Ratio: tbb.Seconds() / tt.Seconds()}
	return row, benchTorus{spec, g, r}, nil
}

// tableCores times the verified BFS table of a whole torus (the same
// table either way) on all cores against one core (GOMAXPROCS 1).
func (b bench) tableCores() (benchRow, error) {
	b.step("routing table, all cores vs one")
	spec, g, err := b.scenario(benchscen.WholeTable)
	if err != nil {
		return benchRow{}, err
	}
	r, all, err := wholeTorus(g)
	if err != nil {
		return benchRow{}, err
	}
	build := func() error { _, e := r.Build(context.Background(), all, nil, routing.BuildOptions{}); return e }
	cores := runtime.GOMAXPROCS(1)
	t1, err := timeIt(build)
	runtime.GOMAXPROCS(cores)
	if err != nil {
		return benchRow{}, err
	}
	tn, err := timeIt(build)
	if err != nil {
		return benchRow{}, err
	}
	return benchRow{Name: fmt.Sprintf("BFS table + verification %s on %d cores", spec, cores), Value: ms(tn), Unit: "ms",
		Baseline: "1 core", BaseVal: ms(t1), Ratio: t1.Seconds() / tn.Seconds()}, nil
}

// selection fills the torus to 50% with random jobs and times one
// allocation decision on all cores against one core.
func (b bench) selection(tor benchTorus) (benchRow, error) {
	b.step("node selection")
	st, err := alloc.NewState(tor.g)
	if err != nil {
		return benchRow{}, err
	}
	ar := &alloc.AngaraRouter{R: tor.r}
	sel := alloc.NewSelector(st)
	rnd := rand.New(rand.NewPCG(1, 1))
	for job := 1; st.Busy() < st.N()/2 && job < 10000; job++ {
		m := 1 << rnd.IntN(5)
		res, err := sel.Select(st, ar, alloc.Request{Nodes: m, Transit: m / 4})
		if err != nil {
			return benchRow{}, err
		}
		if res.Chosen != nil {
			st.Occupy(job, append(append([]int(nil), res.Chosen.Active...), res.Chosen.Transit...))
		}
	}
	req := alloc.Request{Nodes: 16, Transit: 4}
	sel.Workers = 1
	ts1, err := timeIt(func() error { _, e := sel.Select(st, ar, req); return e })
	if err != nil {
		return benchRow{}, err
	}
	sel.Workers = 0
	tsn, _ := timeIt(func() error { _, e := sel.Select(st, ar, req); return e })
	return benchRow{Name: fmt.Sprintf("allocation decision %s at 50%%, m=16 T=4", tor.spec), Value: ms(tsn), Unit: "ms",
		Baseline: "1 core", BaseVal: ms(ts1), Ratio: ts1.Seconds() / tsn.Seconds()}, nil
}

// multicast runs FULB-MC and SSSP-MC-new on the same groups
// (benchscen.FULBvsSSSP): time and maximal EFI.
func (b bench) multicast() ([]benchRow, error) {
	b.step("multicast")
	sc := benchscen.FULBvsSSSP
	mspec, mg, err := b.scenario(sc.Fabric)
	if err != nil {
		return nil, err
	}
	wspec := sc.Groups.Spec(b.quick)
	h, err := topology.MinHops(mg, 0)
	if err != nil {
		return nil, err
	}
	w, err := multicast.ParseWorkload(wspec)
	if err != nil {
		return nil, err
	}
	groups, err := w.Groups(mg, 1)
	if err != nil {
		return nil, err
	}
	run := func(name string) (*multicast.Result, error) {
		a, err := multicast.ParseAlgo(name)
		if err != nil {
			return nil, err
		}
		return multicast.Run(h, a, groups, multicast.Options{}, nil)
	}
	fulb, err := run(sc.Algo)
	if err != nil {
		return nil, err
	}
	sssp, err := run(sc.Baseline)
	if err != nil {
		return nil, err
	}
	algo, base := multicastName(sc.Algo), multicastName(sc.Baseline)
	return []benchRow{
		{Name: fmt.Sprintf("%s %s, %d groups of %s", algo, mspec, len(groups), wspec), Value: 1000 * fulb.Seconds, Unit: "ms",
			Baseline: base, BaseVal: 1000 * sssp.Seconds, Ratio: sssp.Seconds / fulb.Seconds},
		{Name: algo + " max EFI", Value: float64(fulb.Max), Unit: "groups",
			Baseline: base, BaseVal: float64(sssp.Max), Ratio: float64(fulb.Max) / float64(max(1, sssp.Max))},
	}, nil
}

// multicastName writes a multicast engine's name as the papers do:
// fulb → FULB-MC, sssp-new → SSSP-MC-new.
func multicastName(algo string) string {
	base, rest, ok := strings.Cut(algo, "-")
	s := strings.ToUpper(base) + "-MC"
	if ok {
		s += "-" + rest
	}
	return s
}

// simulator measures router-cycles per second of the lumped router near
// saturation and of BookSim's staged router against it.
func (b bench) simulator() ([]benchRow, error) {
	b.step("simulator")
	sg, err := topology.Parse("torus:8x8")
	if err != nil {
		return nil, err
	}
	cfg := sim.DefaultConfig()
	cfg.Rate = 0.5
	cfg.Cycles = 20000
	if b.quick {
		cfg.Cycles = 4000
	}
	cyc := float64(cfg.Cycles) * float64(sg.NumNodes())
	lumped, err := simRouterCycles(sg, cfg, cyc)
	if err != nil {
		return nil, err
	}
	scfg := cfg
	scfg.Rate, scfg.Router, scfg.Stages, scfg.TerminalLinks = 0.25, sim.RouterStaged, sim.BookSimStages, true
	staged, err := simRouterCycles(sg, scfg, cyc)
	if err != nil {
		return nil, err
	}
	part, err := b.partitionedSimulator()
	if err != nil {
		return nil, err
	}
	return []benchRow{
		part,
		{Name: "simulator, torus 8x8, uniform DOR at 0.5 flits/node/cycle (baseline of the next row)", Value: lumped, Unit: "router-cycles/s (measurement phase)"},
		{Name: "simulator, torus 8x8, staged 4-stage router (BookSim's) at 0.25 flits/node/cycle", Value: staged,
			Unit: "router-cycles/s (measurement phase)", Baseline: "lumped router at 0.5", BaseVal: lumped, Ratio: staged / lumped},
	}, nil
}

// partitionedSimulator times one load point on a 2 048-router torus with
// the routers split over every core, against the same run on one core.
func (b bench) partitionedSimulator() (benchRow, error) {
	g, err := topology.Parse("torus:64x32")
	if err != nil {
		return benchRow{}, err
	}
	cfg := sim.DefaultConfig()
	cfg.Rate, cfg.Cycles, cfg.Warmup = 0.1, 2000, 500
	if b.quick {
		cfg.Cycles, cfg.Warmup = 400, 100
	}
	cyc := float64(cfg.Cycles) * float64(g.NumNodes())
	one := cfg
	one.Workers = 1
	base, err := simRouterCycles(g, one, cyc)
	if err != nil {
		return benchRow{}, err
	}
	cfg.Workers = runtime.GOMAXPROCS(0)
	all, err := simRouterCycles(g, cfg, cyc)
	if err != nil {
		return benchRow{}, err
	}
	return benchRow{Name: "simulator, torus 64x32, uniform DOR at 0.1 flits/node/cycle, routers over all cores", Value: all,
		Unit: "router-cycles/s (measurement phase)", Baseline: "1 core", BaseVal: base, Ratio: all / base}, nil
}

// simRouterCycles runs one load point and returns the measured
// router-cycles (cyc) per second of wall time.
func simRouterCycles(g *topology.Graph, cfg sim.Config, cyc float64) (float64, error) {
	nw, err := sim.NewNetwork(g, cfg, true)
	if err != nil {
		return 0, err
	}
	ts, err := timeIt(func() error { _, e := sim.Run(nw, cfg); return e })
	if err != nil {
		return 0, err
	}
	return cyc / ts.Seconds(), nil
}

// benchHalfXSelection times allocation decisions on a torus whose nodes
// with X below d_X/2 are busy (issue 14's "half of X busy" state), on all
// cores against one core in the same run.
func benchHalfXSelection(network func(full, small string) (string, *topology.Graph, error), timeIt func(func() error) (time.Duration, error)) ([]benchRow, error) {
	spec, g, err := network("torus:16x8x8x4", "torus:8x8x4x4")
	if err != nil {
		return nil, err
	}
	st, ar, err := selectionOn(g)
	if err != nil {
		return nil, err
	}
	var busy []int
	for v := 0; v < g.NumNodes(); v++ {
		if g.Coord(v)[0] < g.Dims()[0]/2 {
			busy = append(busy, v)
		}
	}
	if err := st.Occupy(1, busy); err != nil {
		return nil, err
	}
	var rows []benchRow
	for _, m := range []int{8, 128, 512} {
		req := alloc.Request{Nodes: m, Transit: m / 4}
		sel := alloc.NewSelector(st)
		sel.Workers = 1
		t1, err := timeIt(func() error { _, e := sel.Select(st, ar, req); return e })
		if err != nil {
			return nil, err
		}
		sel.Workers = 0
		tn, _ := timeIt(func() error { _, e := sel.Select(st, ar, req); return e })
		rows = append(rows, benchRow{Name: fmt.Sprintf("allocation decision %s, half of X busy, m=%d T=%d", spec, m, m/4), Value: ms(tn), Unit: "ms",
			Baseline: "1 core", BaseVal: ms(t1), Ratio: t1.Seconds() / tn.Seconds()})
	}
	return rows, nil
}

// benchSlabSelection times the exhaustive decision for a job of an
// eighth of an idle torus (4 096 nodes on 32x32x32: the slabs of three
// orientations tie on criteria 1 and 2, and their tie-break tables
// decide) on all cores against one core, and the same decision with a
// budget of a fifth of that time against the exhaustive one.
func benchSlabSelection(network func(full, small string) (string, *topology.Graph, error), timeIt func(func() error) (time.Duration, error)) ([]benchRow, error) {
	spec, g, err := network("torus:32x32x32", "torus:8x8x8")
	if err != nil {
		return nil, err
	}
	st, ar, err := selectionOn(g)
	if err != nil {
		return nil, err
	}
	req := alloc.Request{Nodes: st.N() / 8}
	decide := func(workers int, budget time.Duration) (time.Duration, error) {
		sel := alloc.NewSelector(st) // a fresh selector: no tables cached
		sel.Workers = workers
		r := req
		r.Budget = budget
		return timeIt(func() error { _, e := sel.Select(st, ar, r); return e })
	}
	t1, err := decide(1, 0)
	if err != nil {
		return nil, err
	}
	tn, err := decide(0, 0)
	if err != nil {
		return nil, err
	}
	budget := tn / 5
	tb, err := decide(0, budget)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("allocation decision %s idle, m=%d T=0", spec, req.Nodes)
	return []benchRow{
		{Name: name + ", exhaustive", Value: ms(tn), Unit: "ms", Baseline: "1 core", BaseVal: ms(t1), Ratio: t1.Seconds() / tn.Seconds()},
		{Name: fmt.Sprintf("%s, budget %v", name, budget.Round(time.Millisecond)), Value: ms(tb), Unit: "ms", Baseline: "exhaustive", BaseVal: ms(tn), Ratio: tn.Seconds() / tb.Seconds()},
	}, nil
}

// selectionOn returns an idle machine state on g and its angara* router,
// what the node-selection rows decide on.
func selectionOn(g *topology.Graph) (*alloc.State, *alloc.AngaraRouter, error) {
	st, err := alloc.NewState(g)
	if err != nil {
		return nil, nil, err
	}
	ar, err := alloc.NewAngaraRouter(g, "angara*")
	return st, ar, err
}
