package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/sched"
	"github.com/spf13/cobra"
)

func newSlurmCmd() *cobra.Command {
	slurm := &cobra.Command{Use: "slurm", Short: "Describe a network in Slurm's configuration formats"}
	slurm.AddCommand(newSlurmTopologyCmd())
	return slurm
}

// slurmTopologyOptions are the flags of icn slurm topology.
type slurmTopologyOptions struct {
	fabric    topoFlags
	out       output
	prefix    string
	name      string
	dir       string
	format    string
	blockSize int
}

func newSlurmTopologyCmd() *cobra.Command {
	var o slurmTopologyOptions
	c := &cobra.Command{
		Use:   "topology",
		Short: "Write Slurm's topology.yaml (tree for switched fabrics, block for tori) and topology.conf",
		Long: `Prints topology.yaml for the network (or topology.conf with --format conf);
with --out DIR writes both files into DIR and prints a summary. Nodes are
named PREFIX and their number, zero-padded (nid0000…), in the order of the
network's end nodes (tori: node id, X fastest), as icn alloc --hostlist and
icn sched simulate number them.`,
		Example: `  icn slurm topology --fabric fattree:k=8,n=2 --nodes-prefix nid
  icn slurm topology --fabric file:fabric.ibnet --out /etc/slurm
  icn slurm topology --fabric torus:8x8x4x4 --block-size 64 --format conf`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runSlurmTopology(c.Context(), o, stdout(c))
		},
	}
	o.fabric.register(c, "fabric", "")
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.prefix, "nodes-prefix", "nid", "prefix of node names")
	f.StringVar(&o.name, "name", "default", "name of the topology (partitions refer to it)")
	f.StringVar(&o.dir, "out", "", "write topology.yaml and topology.conf into DIR")
	f.StringVar(&o.format, "format", "yaml", "what to print without --out: yaml or conf")
	f.IntVar(&o.blockSize, "block-size", 0, "nodes per base block on a torus (0: halve down to at most 32)")
	return c
}

func runSlurmTopology(_ context.Context, o slurmTopologyOptions, w io.Writer) error {
	if o.format != "yaml" && o.format != "conf" {
		return fmt.Errorf("unknown --format %q (want yaml or conf)", o.format)
	}
	if o.prefix == "" || o.prefix[len(o.prefix)-1] >= '0' && o.prefix[len(o.prefix)-1] <= '9' {
		return fmt.Errorf("--nodes-prefix must be non-empty and not end in a digit")
	}
	if o.fabric.spec == "" {
		return fmt.Errorf("no fabric given (use --fabric SPEC or --fabric file:PATH)")
	}
	g, err := o.fabric.load()
	if err != nil {
		return err
	}
	var top sched.SlurmTopology
	var nodes int
	if g.HasCoords() && g.Direct() {
		nodes = g.NumNodes()
		top, err = sched.SlurmBlockTopology(o.name, g, sched.NewNodeNamer(o.prefix, nodes), o.blockSize)
	} else {
		var m *sched.TreeMachine
		if m, err = sched.NewTreeMachine(g); err == nil {
			nodes = m.Size()
			top = sched.SlurmTreeTopology(o.name, m, sched.NewNodeNamer(o.prefix, nodes))
		}
	}
	if err != nil {
		return err
	}
	var y, conf bytes.Buffer
	if err := sched.WriteTopologyYAML(&y, []sched.SlurmTopology{top}); err != nil {
		return err
	}
	if err := sched.WriteTopologyConf(&conf, top); err != nil {
		return err
	}
	if o.dir == "" && !o.out.json {
		if o.format == "conf" {
			_, err = w.Write(conf.Bytes())
		} else {
			_, err = w.Write(y.Bytes())
		}
		return err
	}
	if o.dir != "" {
		if err := writeFileAtomic(filepath.Join(o.dir, "topology.yaml"), y.Bytes()); err != nil {
			return err
		}
		if err := writeFileAtomic(filepath.Join(o.dir, "topology.conf"), conf.Bytes()); err != nil {
			return err
		}
	}
	return o.out.print(w, top, func(w io.Writer) error {
		t := cli.NewTable("FIELD", "VALUE")
		t.Row("network", g.Name())
		t.Row("nodes", nodes)
		if top.Tree != nil {
			t.Row("plugin", "topology/tree")
			t.Row("switches", len(top.Tree.Switches))
		} else {
			t.Row("plugin", "topology/block")
			t.Row("blocks", len(top.Block.Blocks))
			t.Row("block sizes", fmt.Sprint(top.Block.BlockSizes))
		}
		t.Row("written", filepath.Join(o.dir, "topology.yaml")+", "+filepath.Join(o.dir, "topology.conf"))
		return t.Write(w)
	})
}
