package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// output is the --json flag every command shares.
type output struct {
	json bool
}

func (o *output) register(c *cobra.Command) {
	c.Flags().BoolVar(&o.json, "json", false, "print exact JSON instead of a table")
}

// print writes v as JSON when --json is set, otherwise calls table.
func (o *output) print(w io.Writer, v any, table func(io.Writer) error) error {
	if o.json {
		return cli.JSON(w, v)
	}
	return table(w)
}

func stdout(c *cobra.Command) io.Writer { return c.OutOrStdout() }

// readArgFile reads a value that may be given as @FILE.
func readArgFile(v string) (string, error) {
	if len(v) > 1 && v[0] == '@' {
		b, err := os.ReadFile(v[1:])
		return string(b), err
	}
	return v, nil
}

// topoFlags are the flags every command that takes a network shares.
type topoFlags struct {
	spec      string
	failLinks string
	failNodes string
}

func (t *topoFlags) register(c *cobra.Command, name, def string) {
	c.Flags().StringVar(&t.spec, name, def, topoUsage)
	t.registerFaults(c)
}

// The --topo flag's usage: any network, or (registerTorus) a torus or
// mesh, with examples the command takes.
const (
	topoUsage      = "network: a spec (e.g. torus:4x4x4, dragonfly:a=4,p=2,h=2) or file:PATH (JSON/YAML/ibnetdiscover)"
	topoTorusUsage = "torus or mesh: a spec (e.g. torus:4x4x4, torus:8x8:mesh=Y) or file:PATH (JSON/YAML with coordinates)"
)

// registerTorus is register for a command that needs a torus or mesh.
func (t *topoFlags) registerTorus(c *cobra.Command, name, def string) {
	c.Flags().StringVar(&t.spec, name, def, topoTorusUsage)
	t.registerFaults(c)
}

func (t *topoFlags) registerFaults(c *cobra.Command) {
	c.Flags().StringVar(&t.failLinks, "fail-links", "", "failed links: NODE+X, NODE-Y, NODE[PORT], A~B, comma-separated, or @FILE")
	c.Flags().StringVar(&t.failNodes, "fail-nodes", "", "failed nodes: names or coordinate patterns (0.1.*), comma-separated, or @FILE")
}

// load builds the network and applies the failure lists.
func (t *topoFlags) load() (*topology.Graph, error) {
	return loadTopo(t.spec, t.failLinks, t.failNodes)
}

func loadTopo(spec, failLinks, failNodes string) (*topology.Graph, error) {
	if spec == "" {
		return nil, fmt.Errorf("no network given (use --topo SPEC)")
	}
	g, err := topology.Parse(spec)
	if err != nil {
		return nil, err
	}
	fl, err := readArgFile(failLinks)
	if err != nil {
		return nil, fmt.Errorf("--fail-links: %v", err)
	}
	fn, err := readArgFile(failNodes)
	if err != nil {
		return nil, fmt.Errorf("--fail-nodes: %v", err)
	}
	g, err = g.ApplyFaults(fl, fn)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// budgetFlag is a --budget duration: non-negative, 0 = none.
type budgetFlag struct{ d time.Duration }

func (b *budgetFlag) String() string { return b.d.String() }
func (b *budgetFlag) Type() string   { return "duration" }
func (b *budgetFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 10s, 500ms, 0 for none)", s)
	}
	if d < 0 {
		return fmt.Errorf("%s is negative (0 means no budget)", s)
	}
	b.d = d
	return nil
}

// registerBudget adds --budget to a command that selects node sets;
// what says what the budget bounds.
func registerBudget(c *cobra.Command, b *budgetFlag, what string) {
	b.d = alloc.DefaultBudget
	c.Flags().Var(b, "budget", what+"; when it ends, the best set found so far is taken (0 = none: every placement examined, as seed 001's experiments do)")
}
