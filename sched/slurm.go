package sched

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/icn-hpc/icn/topology"
	"go.yaml.in/yaml/v3"
)

// SlurmTopology is one entry of Slurm's topology.yaml (topology.yaml(5)):
// a named topology with exactly one of a tree (topology/tree) or a block
// (topology/block) definition.
type SlurmTopology struct {
	Topology       string      `yaml:"topology" json:"topology"`
	ClusterDefault bool        `yaml:"cluster_default" json:"cluster_default"`
	Tree           *SlurmTree  `yaml:"tree,omitempty" json:"tree,omitempty"`
	Block          *SlurmBlock `yaml:"block,omitempty" json:"block,omitempty"`
}

// SlurmTree lists the switches of a topology/tree definition.
type SlurmTree struct {
	Switches []SlurmSwitch `yaml:"switches" json:"switches"`
}

// SlurmSwitch is a switch with either child switches or nodes (hostlist
// expressions).
type SlurmSwitch struct {
	Switch   string `yaml:"switch" json:"switch"`
	Children string `yaml:"children,omitempty" json:"children,omitempty"`
	Nodes    string `yaml:"nodes,omitempty" json:"nodes,omitempty"`
}

// SlurmBlock is a topology/block definition: base blocks in order (each
// run of 2^k aligned consecutive blocks forms a larger block) and the
// allowed block sizes.
type SlurmBlock struct {
	BlockSizes []int             `yaml:"block_sizes" json:"block_sizes"`
	Blocks     []SlurmBlockEntry `yaml:"blocks" json:"blocks"`
}

// SlurmBlockEntry is one base block and its nodes (a hostlist).
type SlurmBlockEntry struct {
	Block string `yaml:"block" json:"block"`
	Nodes string `yaml:"nodes" json:"nodes"`
}

// SlurmTopologyOf describes network g for Slurm: a torus or mesh for
// topology/block (SlurmBlockTopology, base blocks of at most base nodes),
// a switched fabric for topology/tree (SlurmTreeTopology over its end
// nodes). Slurm sees n nodes, node i being vertex(i) of g: the node ids
// of a torus, the end nodes of a fabric in TreeMachine's order (the
// numbering icn sched simulate and icn alloc --hostlist use); names
// names them.
func SlurmTopologyOf(name string, g *topology.Graph, base int, names func(n int, vertex func(int) int) (NodeNamer, error)) (SlurmTopology, error) {
	if g.HasCoords() && g.Direct() {
		nn, err := names(g.NumNodes(), func(v int) int { return v })
		if err != nil {
			return SlurmTopology{}, err
		}
		return SlurmBlockTopology(name, g, nn, base)
	}
	m, err := NewTreeMachine(g)
	if err != nil {
		return SlurmTopology{}, err
	}
	nn, err := names(m.Size(), m.Vertex)
	if err != nil {
		return SlurmTopology{}, err
	}
	return SlurmTreeTopology(name, m, nn), nil
}

// SlurmTreeTopology describes a switched fabric for topology/tree: its
// leaf switches with their nodes, then one level of switches per hop
// distance at which leaves join (the groups tree placement uses), each
// with its child switches.
func SlurmTreeTopology(name string, m *TreeMachine, nn NodeNamer) SlurmTopology {
	var sw []SlurmSwitch
	levels := distinctLevels(m.groups)
	var prevNames []string // name of each group of the previous level
	var prevLevel [][]int
	for li, level := range levels {
		width := len(fmt.Sprint(max(0, len(level)-1)))
		names := make([]string, len(level))
		for gi := range level {
			names[gi] = fmt.Sprintf("l%ds%0*d", li, width, gi)
		}
		for gi, grp := range level {
			s := SlurmSwitch{Switch: names[gi]}
			if li == 0 {
				var nodes []string
				for _, v := range m.leaves[grp[0]] {
					nodes = append(nodes, nn.Name(v))
				}
				s.Nodes = Hostlist(nodes)
			} else {
				s.Children = Hostlist(childNames(grp, prevLevel, prevNames))
			}
			sw = append(sw, s)
		}
		prevNames, prevLevel = names, level
	}
	return SlurmTopology{Topology: name, ClusterDefault: true, Tree: &SlurmTree{Switches: sw}}
}

// distinctLevels drops levels that group the leaves as the level below
// does.
func distinctLevels(groups [][][]int) [][][]int {
	var out [][][]int
	for _, l := range groups {
		if len(out) == 0 || len(l) != len(out[len(out)-1]) {
			out = append(out, l)
		}
	}
	return out
}

// childNames names the groups of the level below that lie inside grp.
func childNames(grp []int, below [][]int, names []string) []string {
	in := map[int]bool{}
	for _, li := range grp {
		in[li] = true
	}
	var out []string
	for gi, g := range below {
		if in[g[0]] {
			out = append(out, names[gi])
		}
	}
	return out
}

// SlurmBlockTopology describes a torus for topology/block: the torus is
// halved along its longest even dimension until blocks have at most base
// nodes (base 0: 32), and the blocks are listed in the order of the
// halving, so every aligned run of 2^k blocks is a sub-torus brick of
// 2^k·base nodes; block_sizes lists base, 2·base, … up to the largest
// such brick.
func SlurmBlockTopology(name string, g *topology.Graph, nn NodeNamer, base int) (SlurmTopology, error) {
	dims := g.Dims()
	if !g.HasCoords() || !g.Direct() {
		return SlurmTopology{}, fmt.Errorf("%s: block topologies are made for tori and meshes", g.Name())
	}
	auto := base <= 0
	if auto {
		base = 32
	}
	splits, shape := halvings(dims, base)
	size := 1
	for _, d := range shape {
		size *= d
	}
	if !auto && size != base {
		return SlurmTopology{}, fmt.Errorf("%s cannot be cut into bricks of %d nodes by halving (nearest: %d)", g.Name(), base, size)
	}
	b := &SlurmBlock{}
	for s := size; s <= g.NumNodes() && len(b.BlockSizes) <= len(splits); s *= 2 {
		b.BlockSizes = append(b.BlockSizes, s)
	}
	var bricks [][]int
	brickStarts(dims, splits, make([]int, len(dims)), 0, &bricks)
	width := len(fmt.Sprint(max(0, len(bricks)-1)))
	for i, start := range bricks {
		var names []string
		forBrick(start, shape, dims, func(v int) { names = append(names, nn.Name(v)) })
		b.Blocks = append(b.Blocks, SlurmBlockEntry{Block: fmt.Sprintf("b%0*d", width, i), Nodes: Hostlist(names)})
	}
	return SlurmTopology{Topology: name, ClusterDefault: true, Block: b}, nil
}

// halvings returns the dimensions halved in turn (the longest even one
// each time) until a brick has at most base nodes, and the brick shape.
func halvings(dims []int, base int) (splits []int, shape []int) {
	shape = append([]int(nil), dims...)
	n := 1
	for _, d := range dims {
		n *= d
	}
	for n > base {
		best := -1
		for i, d := range shape {
			if d%2 == 0 && (best < 0 || d > shape[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		shape[best] /= 2
		n /= 2
		splits = append(splits, best)
	}
	return splits, shape
}

// brickStarts lists the start coordinates of the bricks in halving
// order (depth first).
func brickStarts(dims, splits, start []int, depth int, out *[][]int) {
	if depth == len(splits) {
		*out = append(*out, append([]int(nil), start...))
		return
	}
	d := splits[depth]
	half := dims[d]
	for _, s := range splits[:depth+1] {
		if s == d {
			half /= 2
		}
	}
	brickStarts(dims, splits, start, depth+1, out)
	up := append([]int(nil), start...)
	up[d] += half
	brickStarts(dims, splits, up, depth+1, out)
}

// forBrick calls f for every node of the brick (node id = mixed-radix
// coordinates, X fastest).
func forBrick(start, shape, dims []int, f func(v int)) {
	c := make([]int, len(dims))
	total := 1
	for _, s := range shape {
		total *= s
	}
	for k := 0; k < total; k++ {
		r := k
		v, mul := 0, 1
		for i := range dims {
			c[i] = start[i] + r%shape[i]
			r /= shape[i]
			v += c[i] * mul
			mul *= dims[i]
		}
		f(v)
	}
}

// WriteTopologyYAML writes topology.yaml: a YAML list of topologies.
func WriteTopologyYAML(w io.Writer, tops []SlurmTopology) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if _, err := io.WriteString(w, "---\n"); err != nil {
		return err
	}
	if err := enc.Encode(tops); err != nil {
		return err
	}
	return enc.Close()
}

// WriteTopologyConf writes the same topology in topology.conf's syntax
// (topology.conf(5)); it holds one topology.
func WriteTopologyConf(w io.Writer, t SlurmTopology) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, generated by icn slurm topology\n", t.Topology)
	switch {
	case t.Tree != nil:
		fmt.Fprintf(&b, "# slurm.conf: TopologyPlugin=topology/tree\n")
		for _, s := range t.Tree.Switches {
			if s.Nodes != "" {
				fmt.Fprintf(&b, "SwitchName=%s Nodes=%s\n", s.Switch, s.Nodes)
			} else {
				fmt.Fprintf(&b, "SwitchName=%s Switches=%s\n", s.Switch, s.Children)
			}
		}
	case t.Block != nil:
		fmt.Fprintf(&b, "# slurm.conf: TopologyPlugin=topology/block\n")
		for _, bl := range t.Block.Blocks {
			fmt.Fprintf(&b, "BlockName=%s Nodes=%s\n", bl.Block, bl.Nodes)
		}
		sizes := make([]string, len(t.Block.BlockSizes))
		for i, s := range t.Block.BlockSizes {
			sizes[i] = fmt.Sprint(s)
		}
		fmt.Fprintf(&b, "BlockSizes=%s\n", strings.Join(sizes, ","))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// BlockAsTree describes a torus's block topology for topology/tree, for
// Slurm releases before 23.11 (no topology/block): every base block is a
// leaf switch with its nodes, and every aligned run of 2^k blocks (a
// sub-torus brick, see SlurmBlockTopology) a switch over the two runs of
// 2^(k-1) it holds, up to one top switch; topology/tree then prefers the
// smallest brick that holds a job, as topology/block does.
func BlockAsTree(t SlurmTopology) (SlurmTopology, error) {
	if t.Block == nil || len(t.Block.Blocks) == 0 {
		return SlurmTopology{}, fmt.Errorf("not a block topology")
	}
	var sw []SlurmSwitch
	level := make([]string, len(t.Block.Blocks))
	for i, b := range t.Block.Blocks {
		sw = append(sw, SlurmSwitch{Switch: b.Block, Nodes: b.Nodes})
		level[i] = b.Block
	}
	for k := 1; len(level) > 1; k++ {
		var next []string
		for i := 0; i < len(level); i += 2 {
			kids := level[i:min(i+2, len(level))]
			name := fmt.Sprintf("brick%d_%d", k, i/2)
			sw = append(sw, SlurmSwitch{Switch: name, Children: strings.Join(kids, ",")})
			next = append(next, name)
		}
		level = next
	}
	return SlurmTopology{Topology: t.Topology, ClusterDefault: t.ClusterDefault, Tree: &SlurmTree{Switches: sw}}, nil
}

// SlurmFiles are the topology files written for one Slurm release:
// topology.conf always (topology/tree, or topology/block from 23.11 on)
// and topology.yaml from 25.05 on (YAML nil before). Topology is what
// they describe: a block topology is written as a tree before 23.11,
// which has no topology/block.
type SlurmFiles struct {
	Topology SlurmTopology
	For      string // "Slurm 24.11"
	Conf     []byte
	YAML     []byte
}

// DefaultSlurmRelease is the Slurm release topology files are written
// for unless another is named: the first that reads topology.yaml.
const DefaultSlurmRelease = "25.05"

// ParseSlurmRelease reads a Slurm release ("22.05", "23.11.4", "25.05")
// as major·100 + minor.
func ParseSlurmRelease(v string) (int, error) {
	var major, minor int
	if n, err := fmt.Sscanf(v, "%d.%d", &major, &minor); n != 2 || err != nil || major < 17 || minor < 0 || minor > 12 {
		return 0, fmt.Errorf("%q is not a Slurm release such as 22.05 or 24.11", v)
	}
	return major*100 + minor, nil
}

// SlurmTopologyFiles writes the files a Slurm release reads for top.
func SlurmTopologyFiles(top SlurmTopology, release string) (*SlurmFiles, error) {
	ver, err := ParseSlurmRelease(release)
	if err != nil {
		return nil, err
	}
	if top.Block != nil && ver < 2311 {
		if top, err = BlockAsTree(top); err != nil {
			return nil, err
		}
	}
	f := &SlurmFiles{Topology: top, For: "Slurm " + release}
	var conf bytes.Buffer
	fmt.Fprintf(&conf, "# for %s\n", f.For)
	if err := WriteTopologyConf(&conf, top); err != nil {
		return nil, err
	}
	f.Conf = conf.Bytes()
	if ver >= 2505 {
		var y bytes.Buffer
		if err := WriteTopologyYAML(&y, []SlurmTopology{top}); err != nil {
			return nil, err
		}
		f.YAML = y.Bytes()
	}
	return f, nil
}
