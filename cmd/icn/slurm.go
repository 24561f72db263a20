package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/sched"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

func newSlurmCmd() *cobra.Command {
	slurm := &cobra.Command{Use: "slurm", Short: "Describe a network for Slurm, and place Slurm's jobs through the fabric manager"}
	slurm.AddCommand(newSlurmTopologyCmd(), newSlurmAgentCmd(), newSlurmInstallCmd())
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
	names     string
	blockSize int
	version   string
	stderr    io.Writer
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
			o.stderr = c.ErrOrStderr()
			return runSlurmTopology(c.Context(), o, stdout(c))
		},
	}
	o.fabric.register(c, "fabric", "")
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.prefix, "nodes-prefix", "nid", "prefix of numbered node names")
	f.StringVar(&o.names, "names", "auto", "node names: host (first word of each end node's description, as ibnetdiscover shows it), number (PREFIX and number), or auto (host when every end node has a distinct valid one)")
	f.StringVar(&o.name, "name", "default", "name of the topology (partitions refer to it)")
	f.StringVar(&o.dir, "out", "", "write topology.yaml and topology.conf into DIR")
	f.StringVar(&o.format, "format", "yaml", "what to print without --out: yaml or conf")
	f.IntVar(&o.blockSize, "block-size", 0, "nodes per base block on a torus (0: halve down to at most 32)")
	f.StringVar(&o.version, "slurm-version", sched.DefaultSlurmRelease, "the Slurm release the files are for: before 23.11 a torus is written for topology/tree (no topology/block), before 25.05 no topology.yaml is written")
	return c
}

func runSlurmTopology(_ context.Context, o slurmTopologyOptions, w io.Writer) error {
	if o.stderr == nil {
		o.stderr = io.Discard
	}
	if o.names == "" {
		o.names = "auto"
	}
	if o.version == "" {
		o.version = sched.DefaultSlurmRelease
	}
	if o.names != "auto" && o.names != "host" && o.names != "number" {
		return fmt.Errorf("unknown --names %q (want auto, host or number)", o.names)
	}
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
	var nodes int
	var naming string
	top, err := sched.SlurmTopologyOf(o.name, g, o.blockSize, func(n int, vertex func(int) int) (nn sched.NodeNamer, err error) {
		nodes = n
		nn, naming, err = slurmNodeNames(g, vertex, n, o)
		return nn, err
	})
	if err != nil {
		return err
	}
	files, err := sched.SlurmTopologyFiles(top, o.version)
	if err != nil {
		return fmt.Errorf("--slurm-version: %v", err)
	}
	top = files.Topology
	if o.dir == "" && !o.out.json {
		if o.format == "yaml" && files.YAML == nil {
			return fmt.Errorf("slurm %s reads no topology.yaml (25.05 and later do): use --format conf", o.version)
		}
		if o.format == "conf" {
			_, err = w.Write(files.Conf)
		} else {
			_, err = w.Write(files.YAML)
		}
		return err
	}
	if o.dir != "" {
		if err := os.MkdirAll(o.dir, 0o755); err != nil {
			return fmt.Errorf("--out: %v", err)
		}
		if files.YAML != nil {
			if err := writeFileAtomic(filepath.Join(o.dir, "topology.yaml"), files.YAML); err != nil {
				return err
			}
		}
		if err := writeFileAtomic(filepath.Join(o.dir, "topology.conf"), files.Conf); err != nil {
			return err
		}
	}
	return o.out.print(w, top, func(w io.Writer) error {
		t := cli.NewTable("FIELD", "VALUE")
		t.Row("network", g.Name())
		t.Row("nodes", nodes)
		t.Row("node names", naming)
		if top.Tree != nil {
			t.Row("plugin", "topology/tree")
			t.Row("switches", len(top.Tree.Switches))
		} else {
			t.Row("plugin", "topology/block")
			t.Row("blocks", len(top.Block.Blocks))
			t.Row("block sizes", fmt.Sprint(top.Block.BlockSizes))
		}
		t.Row("for", files.For)
		written := filepath.Join(o.dir, "topology.conf")
		if files.YAML != nil {
			written = filepath.Join(o.dir, "topology.yaml") + ", " + written
		}
		t.Row("written", written)
		return t.Write(w)
	})
}

// slurmNodeNames chooses how the n end nodes (node i is graph vertex
// vertex(i)) are named in Slurm: by the host names of their descriptions
// (the names slurm.conf uses on a real cluster) or by PREFIX and number.
// It returns the namer and a note saying which.
func slurmNodeNames(g *topology.Graph, vertex func(int) int, n int, o slurmTopologyOptions) (sched.NodeNamer, string, error) {
	numbered := sched.NewNodeNamer(o.prefix, n)
	numNote := fmt.Sprintf("%s and number, network order", o.prefix)
	if o.names == "number" {
		return numbered, numNote, nil
	}
	names, err := hostNames(g, vertex, n)
	switch {
	case err == nil:
		return sched.NamedNodes(names), "host names from node descriptions", nil
	case o.names == "host":
		return sched.NodeNamer{}, "", fmt.Errorf("--names host: %v", err)
	}
	described := false
	for i := 0; i < n && !described; i++ {
		described = g.Desc(vertex(i)) != ""
	}
	if described {
		fmt.Fprintf(o.stderr, "icn: warning: node descriptions not used as Slurm names (%v); nodes are named %s…\n", err, numbered.Name(0))
	}
	return numbered, numNote, nil
}

// hostNames returns the host name of every end node, or why they cannot
// name Slurm nodes (a node without one, an invalid or a repeated one).
func hostNames(g *topology.Graph, vertex func(int) int, n int) ([]string, error) {
	names := make([]string, n)
	seen := make(map[string]int, n)
	for i := range names {
		v := vertex(i)
		h := g.HostName(v)
		if h == "" {
			return nil, fmt.Errorf("end node %s has no description", g.NodeName(v))
		}
		if err := sched.CheckHostName(h); err != nil {
			return nil, fmt.Errorf("end node %s: %v", g.NodeName(v), err)
		}
		if j, dup := seen[h]; dup {
			return nil, fmt.Errorf("end nodes %s and %s share the host name %q", g.NodeName(vertex(j)), g.NodeName(v), h)
		}
		seen[h] = i
		names[i] = h
	}
	return names, nil
}
