package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

func init() {
	topo := &cobra.Command{Use: "topo", Short: "Generate, import, export and measure network topologies"}
	root.AddCommand(topo)

	// icn topo show
	{
		var tf topoFlags
		var out output
		var exact bool
		var seed uint64
		c := &cobra.Command{
			Use:   "show SPEC",
			Short: "Metrics of a network: size, degree, diameter, average distance, bisection, connectivity, cost",
			Example: `  icn topo show torus:4x4x4
  icn topo show dragonfly:a=4,p=2,h=2 --json
  icn topo show torus:8x8 --fail-links 0.0+X,3.4+Y`,
			Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				tf.spec = args[0]
				g, err := tf.load()
				if err != nil {
					return err
				}
				o := topology.MetricsOptions{Seed: seed}
				if exact {
					o.DistanceBudget, o.ConnectivityBudget, o.BisectionBudget = 1e18, 1e18, 1e12
				}
				bar := cli.NewProgress(-1, "measuring", false)
				o.Progress = func(done, total int) { bar.Add(1) }
				start := time.Now()
				m := topology.Measure(g, o)
				bar.Done()
				res := struct {
					Spec string `json:"spec"`
					topology.Metrics
					Seconds float64 `json:"seconds"`
				}{args[0], m, time.Since(start).Seconds()}
				return out.print(stdout(c), res, func(w io.Writer) error {
					return writeMetrics(w, args[0], m)
				})
			},
		}
		tf.registerFaults(c)
		out.register(c)
		c.Flags().BoolVar(&exact, "exact", false, "insist on exact algorithms whatever the cost")
		c.Flags().Uint64Var(&seed, "seed", 1, "seed for sampled distances on very large networks")
		topo.AddCommand(c)
	}

	// icn topo export
	{
		var tf topoFlags
		var format, outPath string
		c := &cobra.Command{
			Use:   "export SPEC",
			Short: "Write a network as JSON, Graphviz DOT or ibnetdiscover text",
			Args:  cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				tf.spec = args[0]
				g, err := tf.load()
				if err != nil {
					return err
				}
				var buf bytes.Buffer
				switch format {
				case "json":
					err = g.WriteJSON(&buf)
				case "dot":
					err = g.WriteDOT(&buf)
				case "ibnetdiscover", "ibnet":
					err = writeIBNetExport(&buf, g, tf.spec)
				default:
					return fmt.Errorf("unknown format %q (want json, dot or ibnetdiscover)", format)
				}
				if err != nil {
					return err
				}
				if outPath == "" || outPath == "-" {
					_, err = stdout(c).Write(buf.Bytes())
					return err
				}
				return writeFileAtomic(outPath, buf.Bytes())
			},
		}
		tf.registerFaults(c)
		c.Flags().StringVar(&format, "format", "json", "json, dot or ibnetdiscover")
		c.Flags().StringVarP(&outPath, "output", "o", "", "write to FILE instead of standard output")
		topo.AddCommand(c)
	}

	// icn topo import
	{
		var out output
		var convert string
		c := &cobra.Command{
			Use:   "import FILE",
			Short: "Read and validate a topology file (ibnetdiscover/ibsim, JSON, YAML) and summarise it",
			Args:  cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				g, err := topology.LoadFile(args[0])
				if err != nil {
					return err
				}
				if convert != "" {
					var buf bytes.Buffer
					if err := g.WriteJSON(&buf); err != nil {
						return err
					}
					if err := writeFileAtomic(convert, buf.Bytes()); err != nil {
						return err
					}
				}
				sum := struct {
					File      string `json:"file"`
					Nodes     int    `json:"nodes"`
					Endpoints int    `json:"endpoints"`
					Switches  int    `json:"switches"`
					Links     int    `json:"links"`
				}{args[0], g.NumNodes(), g.Count(topology.Endpoint), g.Count(topology.Switch), g.NumLinks()}
				return out.print(stdout(c), sum, func(w io.Writer) error {
					return cli.KV(w, "file", sum.File, "nodes", sum.Nodes, "endpoints", sum.Endpoints,
						"switches", sum.Switches, "links", sum.Links)
				})
			},
		}
		out.register(c)
		c.Flags().StringVar(&convert, "to-json", "", "also write the network as icn JSON to FILE")
		topo.AddCommand(c)
	}

	// icn topo families
	{
		var out output
		c := &cobra.Command{
			Use:   "families",
			Short: "List the topology spec families",
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				fams := topology.Families()
				type row struct {
					Name  string `json:"name"`
					Usage string `json:"usage"`
					Help  string `json:"help"`
				}
				rows := make([]row, len(fams))
				for i, f := range fams {
					rows[i] = row{f.Name, f.Usage, f.Help}
				}
				return out.print(stdout(c), rows, func(w io.Writer) error {
					t := cli.NewTable("FAMILY", "USAGE", "DESCRIPTION")
					for _, r := range rows {
						t.Row(r.Name, r.Usage, r.Help)
					}
					return t.Write(w)
				})
			},
		}
		out.register(c)
		topo.AddCommand(c)
	}

	// icn topo embed
	{
		var out output
		var guest, host, method string
		c := &cobra.Command{
			Use:     "embed",
			Short:   "Map a ring/mesh/torus onto a hypercube (Gray code) and report congestion, dilation, expansion",
			Example: "  icn topo embed --guest ring:16 --host hypercube:4\n  icn topo embed --guest mesh:4x8 --host hypercube:5 --map identity",
			Args:    cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				g, err := topology.Parse(guest)
				if err != nil {
					return err
				}
				h, err := topology.Parse(host)
				if err != nil {
					return err
				}
				var e *topology.Embedding
				switch method {
				case "gray":
					e, err = topology.GrayEmbedding(g, h)
				case "identity":
					e, err = topology.IdentityEmbedding(g, h)
				default:
					return fmt.Errorf("unknown --map %q (want gray or identity)", method)
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
				}{guest, host, method, st}
				return out.print(stdout(c), res, func(w io.Writer) error {
					return cli.KV(w, "guest", guest, "host", host, "map", method, "congestion", st.Congestion,
						"dilation", st.Dilation, "expansion", st.Expansion, "load", st.Load)
				})
			},
		}
		out.register(c)
		c.Flags().StringVar(&guest, "guest", "ring:8", "logical network (ring, mesh or torus with power-of-two sizes)")
		c.Flags().StringVar(&host, "host", "hypercube:3", "physical network")
		c.Flags().StringVar(&method, "map", "gray", "gray or identity")
		topo.AddCommand(c)
	}
}

func writeMetrics(w io.Writer, spec string, m topology.Metrics) error {
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
	tmp, err := os.CreateTemp(dirOf(path), ".icn-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			if i == 0 {
				return "/"
			}
			return path[:i]
		}
	}
	return "."
}
