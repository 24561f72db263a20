package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/sim"
	"github.com/icn-hpc/icn/topology"
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

func init() {
	var out output
	var quick bool
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure icn's key speeds on this machine, each against a baseline run in the same process",
		Long: `Runs a fixed set of measurements and reports each with a baseline taken in the same run:
topology all-pairs distances on all cores vs one core, a verified BFS routing table, a node-selection
decision at 50% occupancy on all cores vs one, FULB-MC vs SSSP-MC-new on the TaihuLight-shaped fabric,
and simulated router-cycles per second. The package benchmarks (go test -bench) hold more.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var rows []benchRow
			step := func(name string) { fmt.Fprintf(c.ErrOrStderr(), "bench: %s…\n", name) }
			timeIt := func(f func() error) (time.Duration, error) {
				start := time.Now()
				err := f()
				return time.Since(start), err
			}
			cores := runtime.GOMAXPROCS(0)
			// network parses the full-size spec, or the small one with --quick.
			network := func(full, small string) (string, *topology.Graph, error) {
				spec := full
				if quick {
					spec = small
				}
				g, err := topology.Parse(spec)
				return spec, g, err
			}

			// 1. All-pairs distances, generic algorithm.
			step("all-pairs distances")
			spec, g, err := network("torus:16x16x16", "torus:8x8x8")
			if err != nil {
				return err
			}
			t1, _ := timeIt(func() error {
				topology.Distances(g, topology.MetricsOptions{ForceGeneric: true, Workers: 1})
				return nil
			})
			tn, _ := timeIt(func() error { topology.Distances(g, topology.MetricsOptions{ForceGeneric: true}); return nil })
			rows = append(rows, benchRow{Name: "all-pairs BFS " + spec, Value: ms(tn), Unit: "ms", Baseline: "1 core", BaseVal: ms(t1), Ratio: t1.Seconds() / tn.Seconds()})

			// 2. Verified BFS routing table, whole torus active.
			step("routing table")
			tspec, tg, err := network("torus:8x8x4x4", "torus:4x4x4x2")
			if err != nil {
				return err
			}
			rule, _ := routing.ParseRule("angara*")
			r, err := routing.NewRouter(tg, rule)
			if err != nil {
				return err
			}
			all := make([]int, tg.NumNodes())
			for i := range all {
				all[i] = i
			}
			var tb *routing.Table
			tt, err := timeIt(func() error { var e error; tb, e = r.BuildTable(all, nil, routing.BFS); return e })
			if err != nil {
				return err
			}
			tbb, err := timeIt(func() error { _, e := r.BuildTable(all, nil, routing.Baseline); return e })
			if err != nil {
				return err
			}
			rows = append(rows, benchRow{Name: fmt.Sprintf("BFS table + verification %s (%d routes)", tspec, tb.NumRoutes()), Value: ms(tt), Unit: "ms",
				Baseline: "baseline algorithm", BaseVal: ms(tbb), Ratio: tbb.Seconds() / tt.Seconds()})
			more, err := routeBenchRows(quick, step)
			if err != nil {
				return err
			}
			rows = append(rows, more...)

			// 3. Node selection at 50% occupancy.
			step("node selection")
			st, err := alloc.NewState(tg)
			if err != nil {
				return err
			}
			ar := &alloc.AngaraRouter{R: r}
			sel := alloc.NewSelector(st)
			rnd := rand.New(rand.NewPCG(1, 1))
			for job := 1; st.Busy() < st.N()/2 && job < 10000; job++ {
				m := 1 << rnd.IntN(5)
				res, err := sel.Select(st, ar, alloc.Request{Nodes: m, Transit: m / 4})
				if err != nil {
					return err
				}
				if res.Chosen != nil {
					st.Occupy(job, append(append([]int(nil), res.Chosen.Active...), res.Chosen.Transit...))
				}
			}
			req := alloc.Request{Nodes: 16, Transit: 4}
			sel.Workers = 1
			ts1, err := timeIt(func() error { _, e := sel.Select(st, ar, req); return e })
			if err != nil {
				return err
			}
			sel.Workers = 0
			tsn, _ := timeIt(func() error { _, e := sel.Select(st, ar, req); return e })
			rows = append(rows, benchRow{Name: fmt.Sprintf("allocation decision %s at 50%%, m=16 T=4", tspec), Value: ms(tsn), Unit: "ms",
				Baseline: "1 core", BaseVal: ms(ts1), Ratio: ts1.Seconds() / tsn.Seconds()})

			// 3b. Node selection on a half-busy torus (half of X busy).
			step("node selection, half of X busy")
			hrows, err := benchHalfXSelection(network, timeIt)
			if err != nil {
				return err
			}
			rows = append(rows, hrows...)

			// 4. Multicast: FULB vs SSSP-new.
			step("multicast")
			mspec, mg, err := network("taihulight", "fattree:k=8,n=3")
			if err != nil {
				return err
			}
			wspec := "grid3d:32x40x32"
			if quick {
				wspec = "grid2d:32x16"
			}
			h, err := topology.MinHops(mg, 0)
			if err != nil {
				return err
			}
			w, err := multicast.ParseWorkload(wspec)
			if err != nil {
				return err
			}
			groups, err := w.Groups(mg, 1)
			if err != nil {
				return err
			}
			run := func(name string) (*multicast.Result, error) {
				a, err := multicast.ParseAlgo(name)
				if err != nil {
					return nil, err
				}
				return multicast.Run(h, a, groups, multicast.Options{}, nil)
			}
			fulb, err := run("fulb")
			if err != nil {
				return err
			}
			sssp, err := run("sssp-new")
			if err != nil {
				return err
			}
			rows = append(rows, benchRow{Name: fmt.Sprintf("FULB-MC %s, %d groups of %s", mspec, len(groups), wspec), Value: 1000 * fulb.Seconds, Unit: "ms",
				Baseline: "SSSP-MC-new", BaseVal: 1000 * sssp.Seconds, Ratio: sssp.Seconds / fulb.Seconds})
			rows = append(rows, benchRow{Name: "FULB-MC max EFI", Value: float64(fulb.Max), Unit: "groups",
				Baseline: "SSSP-MC-new", BaseVal: float64(sssp.Max), Ratio: float64(fulb.Max) / float64(max(1, sssp.Max))})

			// 5. Simulator speed near saturation.
			step("simulator")
			sg, err := topology.Parse("torus:8x8")
			if err != nil {
				return err
			}
			cfg := sim.DefaultConfig()
			cfg.Rate = 0.5
			cfg.Cycles = 20000
			if quick {
				cfg.Cycles = 4000
			}
			nw, err := sim.NewNetwork(sg, cfg, true)
			if err != nil {
				return err
			}
			var pt sim.Point
			ts, err := timeIt(func() error { var e error; pt, e = sim.Run(nw, cfg); return e })
			if err != nil {
				return err
			}
			_ = pt
			cyc := float64(cfg.Cycles) * float64(sg.NumNodes())
			rows = append(rows, benchRow{Name: "simulator, torus 8x8, uniform DOR at 0.5 flits/node/cycle", Value: cyc / ts.Seconds(), Unit: "router-cycles/s (measurement phase)"})
			lumpedRate := cyc / ts.Seconds()
			scfg := cfg
			scfg.Rate, scfg.Router, scfg.Stages, scfg.TerminalLinks = 0.25, sim.RouterStaged, sim.BookSimStages, true
			if nw, err = sim.NewNetwork(sg, scfg, true); err != nil {
				return err
			}
			if ts, err = timeIt(func() error { _, e := sim.Run(nw, scfg); return e }); err != nil {
				return err
			}
			rows = append(rows, benchRow{Name: "simulator, torus 8x8, staged 4-stage router (BookSim's) at 0.25 flits/node/cycle", Value: cyc / ts.Seconds(),
				Unit: "router-cycles/s (measurement phase)", Baseline: "lumped router at 0.5", BaseVal: lumpedRate, Ratio: cyc / ts.Seconds() / lumpedRate})

			type report struct {
				Cores int        `json:"cores"`
				Rows  []benchRow `json:"results"`
			}
			return out.print(stdout(c), report{cores, rows}, func(wr io.Writer) error {
				t := cli.NewTable("MEASUREMENT", "VALUE", "UNIT", "BASELINE (same run)", "BASELINE VALUE", "RATIO")
				for _, r := range rows {
					t.Row(r.Name, r.Value, r.Unit, r.Baseline, r.BaseVal, r.Ratio)
				}
				fmt.Fprintf(wr, "%d cores\n", cores)
				return t.Write(wr)
			})
		},
	}
	out.register(c)
	c.Flags().BoolVar(&quick, "quick", false, "smaller instances (seconds instead of a minute)")
	root.AddCommand(c)
}

// benchHalfXSelection times allocation decisions on a torus whose nodes
// with X below d_X/2 are busy (issue 14's "half of X busy" state), on all
// cores against one core in the same run.
func benchHalfXSelection(network func(full, small string) (string, *topology.Graph, error), timeIt func(func() error) (time.Duration, error)) ([]benchRow, error) {
	spec, g, err := network("torus:16x8x8x4", "torus:8x8x4x4")
	if err != nil {
		return nil, err
	}
	st, err := alloc.NewState(g)
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
	ar, err := alloc.NewAngaraRouter(g, "angara*")
	if err != nil {
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
