package multicast

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/icn-hpc/icn/topology"
)

// TreesFormat identifies the trees file written by WriteTrees.
const TreesFormat = "icn-mcast-trees/1"

// TreesFile is the JSON document written by --trees-out: for every engine
// and group the root and the tree edges as pairs of node names (parent,
// child), plus the parent's port of every edge so parallel cables are told
// apart. A third party can rebuild the trees and the per-link EFI from it.
type TreesFile struct {
	Format   string     `json:"format"`
	Topo     string     `json:"topo"`
	Workload string     `json:"workload"`
	Runs     []TreesRun `json:"runs"`
}

// TreesRun is one engine's trees.
type TreesRun struct {
	Algo      string       `json:"algo"`
	MaxEFI    int          `json:"max_efi"`
	MaxHeight int          `json:"max_height"`
	Groups    []TreeRecord `json:"groups"`
}

// TreeRecord is one group's tree.
type TreeRecord struct {
	Name    string      `json:"name"`
	Root    string      `json:"root"`
	Members []string    `json:"members"`
	Edges   [][2]string `json:"edges"`
	Ports   []int       `json:"ports,omitempty"`
}

// WriteTrees streams the trees of every result as a TreesFile.
func WriteTrees(w io.Writer, g *topology.Graph, topo, workload string, groups []Group, results []*Result) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	head, err := json.Marshal(struct {
		Format   string `json:"format"`
		Topo     string `json:"topo"`
		Workload string `json:"workload"`
	}{TreesFormat, topo, workload})
	if err != nil {
		return err
	}
	bw.Write(head[:len(head)-1])
	bw.WriteString(",\n\"runs\":[")
	for i, res := range results {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n{\"algo\":%q,\"max_efi\":%d,\"max_height\":%d,\"groups\":[", res.Algo, res.Max, res.MaxHeight)
		for k, t := range res.Trees {
			rec := TreeRecord{Name: groups[k].Name, Root: g.NodeName(int(t.Root)),
				Members: make([]string, len(groups[k].Members)), Edges: make([][2]string, len(t.Edges)), Ports: make([]int, len(t.Edges))}
			for j, m := range groups[k].Members {
				rec.Members[j] = g.NodeName(int(m))
			}
			for j, c := range t.Edges {
				rec.Edges[j] = [2]string{g.NodeName(g.Src(int(c))), g.NodeName(g.Dst(int(c)))}
				rec.Ports[j] = g.SrcPort(int(c))
			}
			b, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			if k > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n")
			bw.Write(b)
		}
		bw.WriteString("\n]}")
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// ReadTrees parses a TreesFile.
func ReadTrees(r io.Reader) (*TreesFile, error) {
	var f TreesFile
	dec := json.NewDecoder(r)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("trees file: %v", err)
	}
	if f.Format != TreesFormat {
		return nil, fmt.Errorf("trees file: format %q, want %q", f.Format, TreesFormat)
	}
	return &f, nil
}

// Resolve turns a run's records into groups and trees on fabric g. An edge
// is the channel leaving the parent through the recorded port (or the
// parent's first working link to the child if no port is recorded).
func (run *TreesRun) Resolve(g *topology.Graph) ([]Group, []Tree, error) {
	node := func(name, what string, gi int) (int32, error) {
		v := g.NodeByName(name)
		if v < 0 {
			return -1, fmt.Errorf("run %s, group %d (%s): %s %q is not a node of the fabric", run.Algo, gi, run.Groups[gi].Name, what, name)
		}
		return int32(v), nil
	}
	groups := make([]Group, len(run.Groups))
	trees := make([]Tree, len(run.Groups))
	for i, rec := range run.Groups {
		groups[i].Name = rec.Name
		for _, m := range rec.Members {
			v, err := node(m, "member", i)
			if err != nil {
				return nil, nil, err
			}
			groups[i].Members = append(groups[i].Members, v)
		}
		root, err := node(rec.Root, "root", i)
		if err != nil {
			return nil, nil, err
		}
		trees[i].Root = root
		if rec.Ports != nil && len(rec.Ports) != len(rec.Edges) {
			return nil, nil, fmt.Errorf("run %s, group %s: %d ports for %d edges", run.Algo, rec.Name, len(rec.Ports), len(rec.Edges))
		}
		for j, e := range rec.Edges {
			p, err := node(e[0], "edge end", i)
			if err != nil {
				return nil, nil, err
			}
			x, err := node(e[1], "edge end", i)
			if err != nil {
				return nil, nil, err
			}
			c := -1
			if rec.Ports != nil {
				c = g.PortChannel(int(p), rec.Ports[j])
				if c >= 0 && g.Dst(c) != int(x) {
					return nil, nil, fmt.Errorf("run %s, group %s: port %d of %s leads to %s, not %s", run.Algo, rec.Name, rec.Ports[j], e[0], g.NodeName(g.Dst(c)), e[1])
				}
			} else {
				for _, ch := range g.Out(int(p)) {
					if g.Dst(int(ch)) == int(x) && g.Up(int(ch)) {
						c = int(ch)
						break
					}
				}
			}
			if c < 0 {
				return nil, nil, fmt.Errorf("run %s, group %s: no link %s→%s", run.Algo, rec.Name, e[0], e[1])
			}
			trees[i].Edges = append(trees[i].Edges, int32(c))
		}
	}
	return groups, trees, nil
}

// CheckRun verifies every tree of a resolved run and recomputes the EFI.
// It returns the statistics and the largest tree height.
func CheckRun(h *topology.HopTable, groups []Group, trees []Tree) (EFIStats, int, error) {
	v := NewVerifier(h)
	ck := newMemberChecker(h.Graph())
	height := 0
	for i := range groups {
		if err := ck.check(groups[i].Members); err != nil {
			return EFIStats{}, 0, fmt.Errorf("group %s: %v", groups[i].Name, err)
		}
		ht, err := v.Verify(groups[i].Members, trees[i])
		if err != nil {
			return EFIStats{}, 0, fmt.Errorf("group %s: %v", groups[i].Name, err)
		}
		height = max(height, ht)
	}
	return SummariseEFI(h, LinkEFI(h.Graph(), trees)), height, nil
}
