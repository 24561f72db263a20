package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// mcastOptions are the flags of `icn mcast`.
type mcastOptions struct {
	topo                                                   topoFlags
	out                                                    output
	groups, algos, rootMetric, treesOut, plotPath, mapSpec string
	seed                                                   uint64
	workers                                                int
	quiet                                                  bool
}

// newMcastCmd is `icn mcast`: it routes a workload's multicast groups
// itself and holds the multicast subcommands, with the join/leave client
// commands of serve.go.
func newMcastCmd() *cobra.Command {
	var o mcastOptions
	c := &cobra.Command{
		Use:   "mcast",
		Short: "Multicast routing for large fabrics: MINHOP-MC, SSSP-MC, FULB-MC, EFI, join/leave protocol (seed 004)",
		Long: `Route every multicast group of a workload with one or more engines, verify every
tree (a tree, reaching every member, of minimal height for its root) and report
the per-link edge forwarding index (EFI: groups per link) and the route time.

Engines: minhop (OpenSM MINHOP-MC: first best root, top-down, lowest port),
minhop-new and sssp-new (root rotation: least-loaded best root), sssp (Dijkstra
with weight = large constant + groups on the link), fulb (root rotation plus
bottom-up link rotation). Suffix +1g (sssp, sssp-new, fulb) prefers paths with
the fewest dragonfly global links among the minimal ones.

Workloads (--groups):
` + multicast.WorkloadUsage,
		Example: `  icn mcast --topo taihulight --groups grid3d:32x40x32 --algo minhop,sssp-new,fulb
  icn mcast --topo dragonfly:a=18,p=9,h=9 --groups grid3d:81x27x12 --algo minhop-new,fulb,fulb+1g --json
  icn mcast --topo fattree:k=4,n=3 --groups file:groups.txt --trees-out trees.json
  icn mcast experiment --families all
  icn mcast hops --topo fattree:k=2,n=2 --switch L1-0`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.topo.spec == "" && o.groups == "" {
				return c.Help()
			}
			return runMcast(c.Context(), o, stdout(c))
		},
	}
	o.topo.register(c, "topo", "")
	c.Flags().Lookup("topo").Usage += "; also director:bluelight, director:taihulight or director:pods=P,leaves=L,ends=E,l2=M,cables=C (pruned tree under one top switch)"
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.groups, "groups", "", "workload: grid2d:AxB, grid3d:AxBxC, hier:…, random:…, file:PATH (see --help), or @FILE")
	f.StringVar(&o.algos, "algo", "minhop-new,sssp-new,fulb", "engines, comma-separated: minhop, minhop-new, sssp, sssp-new, fulb (+1g for sssp/fulb)")
	f.StringVar(&o.rootMetric, "root-metric", "max", "root choice: max (smallest largest distance, minimal height) or mean (smallest total distance)")
	f.Uint64Var(&o.seed, "seed", 1, "seed for random workloads and the random mapping")
	f.StringVar(&o.mapSpec, "map", "linear", "process-to-node mapping: "+multicast.MappingUsage)
	f.StringVar(&o.treesOut, "trees-out", "", "write every group's root, members and tree edges (node-name pairs) as JSON to FILE")
	f.StringVar(&o.plotPath, "plot", "", "write a histogram of link EFI per engine to FILE (.svg or .png)")
	f.IntVar(&o.workers, "workers", 0, "goroutines for the min-hop table (0 = all cores)")
	c.AddCommand(newMcastHopsCmd(), newMcastExperimentCmd(), newMcastVerifyCmd(), newMcastProtocolCmd(), newMcastSimulateCmd())
	c.AddCommand(mcastClientCmds()...)
	return c
}

// mcastRequest is the parsed input of `icn mcast`: engines, root metric
// and workload (with its mapping).
type mcastRequest struct {
	algos []multicast.Algo
	root  multicast.RootMetric
	work  multicast.Workload
}

// parseMcastRequest checks the flags of `icn mcast` in the order the
// command always reported them.
func parseMcastRequest(o mcastOptions) (mcastRequest, error) {
	var r mcastRequest
	if o.groups == "" {
		return r, fmt.Errorf("no workload given (use --groups, e.g. grid3d:8x8x8)")
	}
	var err error
	if r.algos, err = multicast.ParseAlgos(o.algos); err != nil {
		return r, err
	}
	if r.root, err = multicast.ParseRootMetric(o.rootMetric); err != nil {
		return r, err
	}
	if o.plotPath != "" {
		if err := checkPlotPath(o.plotPath); err != nil {
			return r, err
		}
	}
	wspec, err := readArgFile(o.groups)
	if err != nil {
		return r, fmt.Errorf("--groups: %v", err)
	}
	if r.work, err = multicast.ParseWorkload(strings.TrimSpace(wspec)); err != nil {
		return r, err
	}
	if r.work.Map, err = multicast.ParseMapping(o.mapSpec); err != nil {
		return r, fmt.Errorf("--map: %v", err)
	}
	return r, nil
}

// runMcast routes every group of the workload with each engine, writes
// the trees and the plot asked for and prints one row per engine.
func runMcast(_ context.Context, o mcastOptions, w io.Writer) error {
	r, err := parseMcastRequest(o)
	if err != nil {
		return err
	}
	g, err := loadMcastTopo(&o.topo)
	if err != nil {
		return err
	}
	gs, err := r.work.Groups(g, o.seed)
	if err != nil {
		return err
	}
	spin := cli.NewProgress(-1, "min-hop table", o.quiet)
	t0 := time.Now()
	h, err := topology.MinHops(g, o.workers)
	spin.Done()
	if err != nil {
		return err
	}
	hopSec := time.Since(t0).Seconds()
	results, err := routeMcastGroups(h, r, gs, o.quiet)
	if err != nil {
		return err
	}
	for _, res := range results {
		res.Topo, res.Workload, res.HopTableBytes = o.topo.spec, r.work.String(), h.Bytes()
	}
	if err := writeMcastFiles(o, g, r.work, gs, results); err != nil {
		return err
	}
	return o.out.print(w, results, func(wr io.Writer) error {
		fmt.Fprintf(wr, "fabric %s: %d end nodes, %d switches; min-hop table %s in %.2f s\n",
			o.topo.spec, g.Count(topology.Endpoint), len(h.Routers()), bytesString(h.Bytes()), hopSec)
		fmt.Fprintf(wr, "workload %s (mapping %s): %d groups, %d members\n\n", r.work, r.work.Map, len(gs), results[0].Members)
		return writeMcastTable(wr, results)
	})
}

// routeMcastGroups routes the groups with each engine in turn, with one
// progress bar over all of them.
func routeMcastGroups(h *topology.HopTable, r mcastRequest, gs []multicast.Group, quiet bool) ([]*multicast.Result, error) {
	bar := cli.NewProgress(len(gs)*len(r.algos), "routing", quiet)
	defer bar.Done()
	var results []*multicast.Result
	for _, a := range r.algos {
		last := 0
		res, err := multicast.Run(h, a, gs, multicast.Options{Root: r.root}, func(done int) {
			if done-last >= 64 || done == len(gs) {
				bar.Add(done - last)
				last = done
			}
		})
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	return results, nil
}

// writeMcastFiles writes the --trees-out file and the --plot histogram.
func writeMcastFiles(o mcastOptions, g *topology.Graph, work multicast.Workload, gs []multicast.Group, results []*multicast.Result) error {
	if o.treesOut != "" {
		var buf bytes.Buffer
		if err := multicast.WriteTrees(&buf, g, o.topo.spec, work.String(), gs, results); err != nil {
			return err
		}
		if err := writeFileAtomic(o.treesOut, buf.Bytes()); err != nil {
			return fmt.Errorf("--trees-out: %w", err)
		}
	}
	if o.plotPath != "" {
		if err := cli.SavePlot(efiHistogram(results), o.plotPath); err != nil {
			return err
		}
	}
	return nil
}

// mcastHopsOptions are the flags of `icn mcast hops`.
type mcastHopsOptions struct {
	topo      topoFlags
	out       output
	sw, dests string
	workers   int
}

func newMcastHopsCmd() *cobra.Command {
	var o mcastHopsOptions
	c := &cobra.Command{
		Use:   "hops",
		Short: "Min-hop table of a switch: hops to each destination through every port, column 0 = minimum",
		Example: `  icn mcast hops --topo fattree:k=2,n=2                 # table size and build time
  icn mcast hops --topo fattree:k=2,n=2 --switch L1-0   # all rows of one switch
  icn mcast hops --topo torus:4x4:endpoints=1 --switch 0.0 --dest 2.2/0,1.0 --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMcastHops(c.Context(), o, stdout(c))
		},
	}
	o.topo.register(c, "topo", "")
	o.out.register(c)
	c.Flags().StringVar(&o.sw, "switch", "", "switch whose table to print (by name)")
	c.Flags().StringVar(&o.dests, "dest", "", "destinations, comma-separated node names (default all nodes)")
	c.Flags().IntVar(&o.workers, "workers", 0, "goroutines (0 = all cores)")
	return c
}

// runMcastHops builds the min-hop table and prints its size and build
// time, or with --switch the rows of one switch.
func runMcastHops(_ context.Context, o mcastHopsOptions, w io.Writer) error {
	g, err := loadMcastTopo(&o.topo)
	if err != nil {
		return err
	}
	t0 := time.Now()
	h, err := topology.MinHops(g, o.workers)
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	if o.sw == "" {
		return writeHopTableSummary(w, o, g, h, secs)
	}
	s := g.NodeByName(o.sw)
	if s < 0 {
		return fmt.Errorf("--switch: no node %q", o.sw)
	}
	if h.RouterIndex(s) < 0 {
		return fmt.Errorf("--switch: %s is an end node; min-hop tables belong to switches", o.sw)
	}
	var ds []int
	if o.dests != "" {
		for _, name := range strings.Split(o.dests, ",") {
			name = strings.TrimSpace(name)
			d := g.NodeByName(name)
			if d < 0 {
				return fmt.Errorf("--dest: no node %q", name)
			}
			ds = append(ds, d)
		}
	}
	rows := multicast.HopRows(h, s, ds)
	return o.out.print(w, rows, func(w io.Writer) error {
		head := []string{"dest", "0 (min)"}
		for p := 1; p <= g.NumPorts(s); p++ {
			head = append(head, fmt.Sprint(p))
		}
		t := cli.NewTable(head...)
		for _, r := range rows {
			cells := []any{r.Dest, hopCell(r.Min)}
			for _, x := range r.Ports {
				cells = append(cells, hopCell(x))
			}
			t.Row(cells...)
		}
		return t.Write(w)
	})
}

// writeHopTableSummary prints the size and build time of a min-hop table.
func writeHopTableSummary(w io.Writer, o mcastHopsOptions, g *topology.Graph, h *topology.HopTable, secs float64) error {
	sum := struct {
		Topo    string  `json:"topo"`
		Routers int     `json:"routers"`
		Nodes   int     `json:"nodes"`
		Bytes   int     `json:"bytes"`
		Seconds float64 `json:"seconds"`
		Workers int     `json:"workers"`
	}{o.topo.spec, len(h.Routers()), g.NumNodes(), h.Bytes(), secs, par.Workers(o.workers)}
	return o.out.print(w, sum, func(w io.Writer) error {
		return cli.KV(w, "fabric", o.topo.spec, "switches (rows)", sum.Routers, "destinations", sum.Nodes,
			"memory", bytesString(sum.Bytes), "build time", fmt.Sprintf("%.3f s on %d goroutines", secs, sum.Workers))
	})
}

// mcastExperimentOptions are the flags of `icn mcast experiment`.
type mcastExperimentOptions struct {
	out                              output
	fabric, algos, plotPath, mapSpec string
	seed                             uint64
	workers                          int
	quiet                            bool
}

func newMcastExperimentCmd() *cobra.Command {
	var o mcastExperimentOptions
	c := &cobra.Command{
		Use:   "experiment",
		Short: "The seed's comparisons (tables 3–12): every engine on the seed's fabrics and workloads",
		Example: `  icn mcast experiment --families taihulight
  icn mcast experiment --families dragonfly --algo minhop-new,sssp-new,fulb,fulb+1g
  icn mcast experiment --families all --json > mcast.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMcastExperiment(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.fabric, "families", "all", "the seed's fabrics: fattree, torus, dragonfly, bluelight, taihulight (comma-separated) or all")
	// --fabric was this flag's name; elsewhere it names one network (like
	// --topo), so it is kept only for old scripts.
	f.StringVar(&o.fabric, "fabric", "all", "old name of --families")
	f.MarkDeprecated("fabric", "use --families (--fabric names one network in other commands)")
	f.StringVar(&o.algos, "algo", "", "engines (default: the fabric's list, all five plus +1g on the dragonfly)")
	f.Uint64Var(&o.seed, "seed", 1, "seed for the random workloads and the random mapping")
	f.StringVar(&o.mapSpec, "map", "linear", "process-to-node mapping: "+multicast.MappingUsage)
	f.StringVar(&o.plotPath, "plot", "", "bar chart of max EFI per workload and engine (.svg or .png)")
	f.IntVar(&o.workers, "workers", 0, "goroutines for the min-hop tables (0 = all cores)")
	return c
}

// seedFabrics parses --families: "all" or a comma-separated list of the
// seed's fabrics.
func seedFabrics(spec string) ([]multicast.SeedFabric, error) {
	if spec == "all" {
		return multicast.SeedFabrics, nil
	}
	var fabrics []multicast.SeedFabric
	for _, name := range strings.Split(spec, ",") {
		f, err := multicast.FindFabric(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		fabrics = append(fabrics, f)
	}
	return fabrics, nil
}

// runMcastExperiment runs the seed's comparisons on each fabric asked
// for (progress lines on stderr unless quiet) and prints their tables.
func runMcastExperiment(_ context.Context, o mcastExperimentOptions, w io.Writer) error {
	fabrics, err := seedFabrics(o.fabric)
	if err != nil {
		return err
	}
	mp, err := multicast.ParseMapping(o.mapSpec)
	if err != nil {
		return fmt.Errorf("--map: %v", err)
	}
	var as []multicast.Algo
	if o.algos != "" {
		if as, err = multicast.ParseAlgos(o.algos); err != nil {
			return err
		}
	}
	if o.plotPath != "" {
		if err := checkPlotPath(o.plotPath); err != nil {
			return err
		}
	}
	var exps []*multicast.Experiment
	for _, f := range fabrics {
		ex, err := multicast.RunExperimentWith(f, as, o.seed, o.workers, mp, func(line string) {
			if !o.quiet && !cli.Quiet {
				fmt.Fprintln(os.Stderr, line)
				cli.Reported()
			}
		})
		if err != nil {
			return err
		}
		exps = append(exps, ex)
	}
	if o.plotPath != "" {
		if err := cli.SavePlot(experimentChart(exps), o.plotPath); err != nil {
			return err
		}
	}
	return o.out.print(w, exps, func(w io.Writer) error {
		for _, ex := range exps {
			if err := writeExperiment(w, ex); err != nil {
				return err
			}
		}
		return nil
	})
}

// loadMcastTopo is topoFlags.load that also accepts the multicast
// package's director:… fabrics.
// loadMcastWorkload parses a group workload and its process mapping,
// builds the fabric, the groups on it and its min-hop table.
func loadMcastWorkload(spec, mapping string, tf *topoFlags, seed uint64) (*topology.Graph, []multicast.Group, *topology.HopTable, error) {
	wl, err := multicast.ParseWorkload(spec)
	if err != nil {
		return nil, nil, nil, err
	}
	if wl.Map, err = multicast.ParseMapping(mapping); err != nil {
		return nil, nil, nil, fmt.Errorf("--map: %v", err)
	}
	g, err := loadMcastTopo(tf)
	if err != nil {
		return nil, nil, nil, err
	}
	gs, err := wl.Groups(g, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	h, err := topology.MinHops(g, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	return g, gs, h, nil
}

func loadMcastTopo(tf *topoFlags) (*topology.Graph, error) {
	if !strings.HasPrefix(tf.spec, multicast.DirectorPrefix) {
		return tf.load()
	}
	g, err := multicast.ParseDirector(tf.spec)
	if err != nil {
		return nil, err
	}
	fl, err := readArgFile(tf.failLinks)
	if err != nil {
		return nil, fmt.Errorf("--fail-links: %v", err)
	}
	fn, err := readArgFile(tf.failNodes)
	if err != nil {
		return nil, fmt.Errorf("--fail-nodes: %v", err)
	}
	return g.ApplyFaults(fl, fn)
}

func hopCell(h int) string {
	if h >= topology.Unreachable {
		return "-"
	}
	return fmt.Sprint(h)
}

func bytesString(b int) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

func checkPlotPath(p string) error {
	switch strings.ToLower(p[strings.LastIndexByte(p, '.')+1:]) {
	case "svg", "png", "pdf":
		return nil
	}
	return fmt.Errorf("--plot %q: extension must be .svg, .png or .pdf", p)
}

func writeMcastTable(w io.Writer, results []*multicast.Result) error {
	t := cli.NewTable("algo", "groups", "max EFI", "max EFI sw-sw", "max EFI global", "mean EFI", "links used", "max height", "route s", "tree s", "root s", "verified")
	for _, r := range results {
		var glob any = "-"
		if r.MaxGlobal > 0 {
			glob = r.MaxGlobal
		}
		t.Row(r.Algo, r.Groups, r.Max, r.MaxSwitch, glob, r.Mean, r.LinksUsed, r.MaxHeight,
			fmt.Sprintf("%.4f", r.Seconds), fmt.Sprintf("%.4f", r.TreeSeconds), fmt.Sprintf("%.4f", r.RootSeconds), r.Verified)
	}
	return t.Write(w)
}

func writeExperiment(w io.Writer, ex *multicast.Experiment) error {
	f := ex.Fabric
	fmt.Fprintf(w, "== %s (%s, mapping %s): %d end nodes, %d switches; seed tables %s; min-hop table %s in %.2f s\n",
		f.Name, f.Spec, ex.Mapping, ex.EndNodes, ex.Switches, f.Tables, bytesString(ex.HopTableBytes), ex.HopSeconds)
	if len(ex.Rows) == 0 {
		return nil
	}
	var algos []string
	for _, r := range ex.Rows[0].Results {
		algos = append(algos, r.Algo)
	}
	for _, part := range []struct {
		title string
		cell  func(*multicast.Result) any
	}{
		{"max EFI", func(r *multicast.Result) any { return r.Max }},
		{"mean EFI", func(r *multicast.Result) any { return r.Mean }},
		{"route time s (tree building; root choice in brackets)", func(r *multicast.Result) any {
			return fmt.Sprintf("%.3f (%.3f)", r.TreeSeconds, r.RootSeconds)
		}},
	} {
		fmt.Fprintf(w, "\n%s\n", part.title)
		t := cli.NewTable(append([]string{"workload", "groups", "height"}, algos...)...)
		for _, row := range ex.Rows {
			cells := []any{row.Workload, row.Groups, row.Results[0].MaxHeight}
			for _, r := range row.Results {
				cells = append(cells, part.cell(r))
			}
			t.Row(cells...)
		}
		if err := t.Write(w); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	return nil
}

func efiHistogram(results []*multicast.Result) cli.Chart {
	ch := cli.Chart{Title: "links by EFI", XLabel: "EFI (groups on the link)", YLabel: "links", LogY: true}
	for _, r := range results {
		count := map[int]int{}
		top := 0
		for _, e := range r.EFI {
			if e > 0 {
				count[int(e)]++
				top = max(top, int(e))
			}
		}
		s := cli.Series{Name: r.Algo}
		for e := 1; e <= top; e++ {
			if count[e] > 0 {
				s.X = append(s.X, float64(e))
				s.Y = append(s.Y, float64(count[e]))
			}
		}
		ch.Series = append(ch.Series, s)
	}
	return ch
}

func experimentChart(exps []*multicast.Experiment) cli.Chart {
	ch := cli.Chart{Title: "max EFI per workload", YLabel: "max EFI", Bars: true}
	idx := map[string]int{}
	for _, ex := range exps {
		for _, row := range ex.Rows {
			label := shortWorkload(row.Workload)
			if len(exps) > 1 {
				label = ex.Fabric.Name[:min(2, len(ex.Fabric.Name))] + " " + label
			}
			ch.Categories = append(ch.Categories, label)
		}
	}
	k := 0
	for _, ex := range exps {
		for _, row := range ex.Rows {
			for _, r := range row.Results {
				i, ok := idx[r.Algo]
				if !ok {
					i = len(ch.Series)
					idx[r.Algo] = i
					ch.Series = append(ch.Series, cli.Series{Name: r.Algo, Y: make([]float64, len(ch.Categories))})
				}
				ch.Series[i].Y[k] = float64(r.Max)
			}
			k++
		}
	}
	if len(ch.Categories) > 8 {
		// Too many groups of bars for the fixed bar width: draw lines over
		// the row number of the tables instead.
		ch.Bars = false
		ch.Title = "max EFI per workload (x = row of the tables, fabrics in order)"
		ch.XLabel = "workload"
		for i := range ch.Series {
			ch.Series[i].X = make([]float64, len(ch.Categories))
			for k := range ch.Series[i].X {
				ch.Series[i].X[k] = float64(k + 1)
			}
		}
		ch.LogY = true
		ch.Categories = nil
	}
	return ch
}

// shortWorkload abbreviates a workload spec for a chart axis:
// grid3d:32x32x34,ppn=4 → 32x32x34/4, random:… → rand, hier:… → hier.
func shortWorkload(w string) string {
	kind, rest, _ := strings.Cut(w, ":")
	ppn := ""
	if i := strings.Index(rest, "ppn="); i >= 0 {
		ppn = "/" + strings.SplitN(rest[i+4:], ",", 2)[0]
	}
	switch kind {
	case "grid2d", "grid3d":
		return strings.SplitN(rest, ",", 2)[0] + ppn
	case "random":
		return "rand" + ppn
	}
	return kind + ppn
}
