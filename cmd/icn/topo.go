package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// newTopoCmd is `icn topo`: generate, import, export and measure networks.
func newTopoCmd() *cobra.Command {
	c := &cobra.Command{Use: "topo", Short: "Generate, import, export and measure network topologies"}
	c.AddCommand(newTopoShowCmd(), newTopoExportCmd(), newTopoImportCmd(), newTopoFamiliesCmd(), newTopoEmbedCmd())
	return c
}

// topoShowOptions are the flags of `icn topo show`; topo.spec is the
// argument.
type topoShowOptions struct {
	topo  topoFlags
	out   output
	exact bool
	seed  uint64
}

// specArg takes the network from the positional argument or --topo (one
// of them).
func specArg(t *topoFlags, args []string) error {
	switch {
	case len(args) == 1 && t.spec != "":
		return &exitError{2, fmt.Errorf("give the network once: as an argument or with --topo")}
	case len(args) == 1:
		t.spec = args[0]
	case t.spec == "":
		return &exitError{2, fmt.Errorf("give the network: a spec or file as the argument, or --topo")}
	}
	return nil
}

func newTopoShowCmd() *cobra.Command {
	var o topoShowOptions
	c := &cobra.Command{
		Use:   "show [SPEC]",
		Short: "Metrics of a network: size, degree, diameter, average distance, bisection, connectivity, cost",
		Example: `  icn topo show torus:4x4x4
  icn topo show dragonfly:a=4,p=2,h=2 --json
  icn topo show torus:8x8 --fail-links 0.0+X,3.4+Y`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := specArg(&o.topo, args); err != nil {
				return err
			}
			return runTopoShow(c.Context(), o, stdout(c))
		},
	}
	o.topo.register(c, "topo", "")
	o.out.register(c)
	c.Flags().BoolVar(&o.exact, "exact", false, "insist on exact algorithms whatever the cost")
	c.Flags().Uint64Var(&o.seed, "seed", 1, "seed for sampled distances on very large networks")
	return c
}

// runTopoShow measures the network and writes its metrics to w.
func runTopoShow(_ context.Context, o topoShowOptions, w io.Writer) error {
	g, err := o.topo.load()
	if err != nil {
		return err
	}
	mo := topology.MetricsOptions{Seed: o.seed}
	if o.exact {
		mo.DistanceBudget, mo.ConnectivityBudget, mo.BisectionBudget = 1e18, 1e18, 1e12
	}
	bar := cli.NewProgress(-1, "measuring", false)
	mo.Progress = func(done, total int) { bar.Add(1) }
	start := time.Now()
	m := topology.Measure(g, mo)
	bar.Done()
	res := struct {
		Spec string `json:"spec"`
		// Dims and Wrap are the coordinate extents and, per dimension,
		// whether it is a ring (true) or a mesh line (false).
		Dims []int  `json:"dims,omitempty"`
		Wrap []bool `json:"wrap,omitempty"`
		topology.Metrics
		Seconds float64 `json:"seconds"`
	}{o.topo.spec, g.Dims(), g.Wrap(), m, time.Since(start).Seconds()}
	return o.out.print(w, res, func(w io.Writer) error {
		return writeMetrics(w, o.topo.spec, g, m)
	})
}

// dimsRow describes the coordinate dimensions of g for `icn topo show`:
// "24x23x24x2x3x2" and which dimensions are rings and which meshes.
func dimsRow(g *topology.Graph) (string, string) {
	dims := make([]string, len(g.Dims()))
	var rings, lines []string
	for i, d := range g.Dims() {
		dims[i] = strconv.Itoa(d)
		if g.Wrap()[i] {
			rings = append(rings, topology.DimName(i))
		} else {
			lines = append(lines, topology.DimName(i))
		}
	}
	var how []string
	if len(rings) > 0 {
		how = append(how, "torus (wrap) "+strings.Join(rings, " "))
	}
	if len(lines) > 0 {
		how = append(how, "mesh (no wrap) "+strings.Join(lines, " "))
	}
	return strings.Join(dims, "x"), strings.Join(how, "; ")
}

// topoExportOptions are the flags of `icn topo export`; topo.spec is the
// argument.
type topoExportOptions struct {
	topo    topoFlags
	format  string
	outPath string
}

func newTopoExportCmd() *cobra.Command {
	var o topoExportOptions
	c := &cobra.Command{
		Use:   "export [SPEC]",
		Short: "Write a network as JSON, Graphviz DOT or ibnetdiscover text",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := specArg(&o.topo, args); err != nil {
				return err
			}
			return runTopoExport(c.Context(), o, stdout(c))
		},
	}
	o.topo.register(c, "topo", "")
	c.Flags().StringVar(&o.format, "format", "json", "json, dot or ibnetdiscover")
	c.Flags().StringVarP(&o.outPath, "output", "o", "", "write to FILE instead of standard output")
	return c
}

// runTopoExport writes the network in the chosen format to the output
// file, or to w when there is none (or it is "-").
func runTopoExport(_ context.Context, o topoExportOptions, w io.Writer) error {
	g, err := o.topo.load()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch o.format {
	case "json":
		err = g.WriteJSON(&buf)
	case "dot":
		err = g.WriteDOT(&buf)
	case "ibnetdiscover", "ibnet":
		err = writeIBNetExport(&buf, g, o.topo.spec)
	default:
		return fmt.Errorf("unknown format %q (want json, dot or ibnetdiscover)", o.format)
	}
	if err != nil {
		return err
	}
	if o.outPath == "" || o.outPath == "-" {
		_, err = w.Write(buf.Bytes())
		return err
	}
	return writeFileAtomic(o.outPath, buf.Bytes())
}

// topoImportOptions are the flags of `icn topo import`; file is the
// argument.
type topoImportOptions struct {
	out     output
	file    string
	convert string
}

func newTopoImportCmd() *cobra.Command {
	var o topoImportOptions
	c := &cobra.Command{
		Use:   "import FILE",
		Short: "Read and validate a topology file (ibnetdiscover/ibsim, JSON, YAML) and summarise it",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			return runTopoImport(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	c.Flags().StringVar(&o.convert, "to-json", "", "also write the network as icn JSON to FILE")
	return c
}

// runTopoImport reads the file, optionally converts it to icn JSON and
// writes its summary to w.
func runTopoImport(_ context.Context, o topoImportOptions, w io.Writer) error {
	g, err := topology.LoadFile(o.file)
	if err != nil {
		return err
	}
	if o.convert != "" {
		var buf bytes.Buffer
		if err := g.WriteJSON(&buf); err != nil {
			return err
		}
		if err := writeFileAtomic(o.convert, buf.Bytes()); err != nil {
			return err
		}
	}
	sum := struct {
		File      string `json:"file"`
		Nodes     int    `json:"nodes"`
		Endpoints int    `json:"endpoints"`
		Switches  int    `json:"switches"`
		Links     int    `json:"links"`
	}{o.file, g.NumNodes(), g.Count(topology.Endpoint), g.Count(topology.Switch), g.NumLinks()}
	return o.out.print(w, sum, func(w io.Writer) error {
		return cli.KV(w, "file", sum.File, "nodes", sum.Nodes, "endpoints", sum.Endpoints,
			"switches", sum.Switches, "links", sum.Links)
	})
}

// topoFamiliesOptions are the flags of `icn topo families`.
type topoFamiliesOptions struct {
	out output
}

func newTopoFamiliesCmd() *cobra.Command {
	var o topoFamiliesOptions
	c := &cobra.Command{
		Use:   "families",
		Short: "List the topology spec families",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runTopoFamilies(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	return c
}

// topoFamilyRow is one spec family in `icn topo families`.
type topoFamilyRow struct {
	Name  string `json:"name"`
	Usage string `json:"usage"`
	Help  string `json:"help"`
}

// runTopoFamilies lists the topology spec families.
func runTopoFamilies(_ context.Context, o topoFamiliesOptions, w io.Writer) error {
	fams := topology.Families()
	rows := make([]topoFamilyRow, len(fams))
	for i, f := range fams {
		rows[i] = topoFamilyRow{f.Name, f.Usage, f.Help}
	}
	return o.out.print(w, rows, func(w io.Writer) error {
		t := cli.NewTable("FAMILY", "USAGE", "DESCRIPTION")
		for _, r := range rows {
			t.Row(r.Name, r.Usage, r.Help)
		}
		return t.Write(w)
	})
}

// topoEmbedOptions are the flags of `icn topo embed`.
type topoEmbedOptions struct {
	out                 output
	guest, host, method string
}

func newTopoEmbedCmd() *cobra.Command {
	var o topoEmbedOptions
	c := &cobra.Command{
		Use:     "embed",
		Short:   "Map a ring/mesh/torus onto a hypercube (Gray code) and report congestion, dilation, expansion",
		Example: "  icn topo embed --guest ring:16 --host hypercube:4\n  icn topo embed --guest mesh:4x8 --host hypercube:5 --map identity",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runTopoEmbed(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	c.Flags().StringVar(&o.guest, "guest", "ring:8", "logical network (ring, mesh or torus with power-of-two sizes)")
	c.Flags().StringVar(&o.host, "host", "hypercube:3", "physical network")
	c.Flags().StringVar(&o.method, "map", "gray", "gray or identity")
	return c
}

// runTopoEmbed embeds the guest network in the host and writes the
// embedding's congestion, dilation, expansion and load to w.
func runTopoEmbed(_ context.Context, o topoEmbedOptions, w io.Writer) error {
	g, err := topology.Parse(o.guest)
	if err != nil {
		return err
	}
	h, err := topology.Parse(o.host)
	if err != nil {
		return err
	}
	var e *topology.Embedding
	switch o.method {
	case "gray":
		e, err = topology.GrayEmbedding(g, h)
	case "identity":
		e, err = topology.IdentityEmbedding(g, h)
	default:
		return fmt.Errorf("unknown --map %q (want gray or identity)", o.method)
	}
	if err != nil {
		return err
	}
	st, err := e.Measure()
	if err != nil {
		return err
	}
	res := struct {
		Guest string `json:"guest"`
		Host  string `json:"host"`
		Map   string `json:"map"`
		topology.EmbeddingStats
	}{o.guest, o.host, o.method, st}
	return o.out.print(w, res, func(w io.Writer) error {
		return cli.KV(w, "guest", o.guest, "host", o.host, "map", o.method, "congestion", st.Congestion,
			"dilation", st.Dilation, "expansion", st.Expansion, "load", st.Load)
	})
}

func writeMetrics(w io.Writer, spec string, g *topology.Graph, m topology.Metrics) error {
	label := func(exact bool, method string) string {
		if exact {
			return "exact: " + method
		}
		return "BOUND: " + method
	}
	diam := any(m.Diameter)
	if !m.Connected {
		diam = fmt.Sprintf("disconnected (%d unreachable pairs)", m.UnreachablePairs)
	}
	t := cli.NewTable("METRIC", "VALUE", "HOW")
	t.Row("network", spec, "")
	if g != nil && g.HasCoords() {
		dims, how := dimsRow(g)
		t.Row("dimensions", dims, how)
	}
	t.Row("nodes", m.Nodes, fmt.Sprintf("%d endpoints, %d switches", m.Endpoints, m.Switches))
	t.Row("links", m.Links, fmt.Sprintf("%d out of service, %d failed nodes", m.FailedLinks, m.FailedNodes))
	t.Row("degree", fmt.Sprintf("%d..%d", m.DegreeMin, m.DegreeMax), "links per live node")
	t.Row("diameter", diam, label(m.DistanceExact, m.DistanceMethod))
	t.Row("avg distance", m.AvgDistance, fmt.Sprintf("over %d terminals", m.Terminals))
	t.Row("bisection width", m.BisectionWidth, label(m.BisectionExact, m.BisectionMethod))
	t.Row("connectivity", m.Connectivity, label(m.ConnectivityExact, m.ConnectivityMethod))
	t.Row("cost", m.Cost, "links in service")
	return t.Write(w)
}

// writeFileAtomic writes data to path via a temporary file and rename, so a
// failure never leaves a half-written file.
func writeFileAtomic(path string, data []byte) error {
	return routeWriteFile(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
