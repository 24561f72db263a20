package multicast

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// Mapping places a workload's processes (MPI ranks) on end nodes.
//
//   - linear: rank r on the (r/ppn)-th working end node, in node order
//     (the default; on the seed's torus a grid line falls on torus rings).
//   - random: the node slots (ppn per working end node) in a random order
//     drawn from the seed.
//   - blocked:B1xB2[xB3]: the process grid is cut into blocks of
//     B1×B2(×B3) ranks; blocks are numbered like ranks (first dimension
//     fastest) and the ranks of one block take consecutive slots, so a
//     block shares end nodes and switches (grid workloads only).
//   - file:PATH: line i names the end node of rank i (names or ids, '#'
//     comments, a node may appear several times); ppn is ignored.
type Mapping struct {
	Kind  string // linear, random, blocked, file
	Block []int  // blocked
	Path  string // file
	spec  string
}

// MappingUsage describes the accepted --map values.
const MappingUsage = "linear (rank r on end node r/ppn), random (seeded shuffle of the node slots), blocked:B1xB2[xB3] (blocks of the process grid on consecutive slots), file:PATH (line i = end node of rank i)"

// String returns the mapping's spec.
func (mp Mapping) String() string {
	if mp.spec == "" {
		return "linear"
	}
	return mp.spec
}

// ParseMapping parses a --map value (see MappingUsage).
func ParseMapping(spec string) (Mapping, error) {
	spec = strings.TrimSpace(spec)
	mp := Mapping{spec: spec}
	kind, rest, _ := strings.Cut(spec, ":")
	mp.Kind = strings.ToLower(kind)
	switch mp.Kind {
	case "", "linear", "random":
		if mp.Kind == "" {
			mp.Kind, mp.spec = "linear", "linear"
		}
		if rest != "" {
			return mp, fmt.Errorf("mapping %q: %s takes no arguments", spec, mp.Kind)
		}
	case "blocked":
		parts := strings.Split(strings.ToLower(rest), "x")
		if rest == "" || len(parts) > 3 {
			return mp, fmt.Errorf("mapping %q: want blocked:B1xB2[xB3]", spec)
		}
		for _, p := range parts {
			v, err := atoi(p, "block extent", 1, MaxProcs)
			if err != nil {
				return mp, fmt.Errorf("mapping %q: %v", spec, err)
			}
			mp.Block = append(mp.Block, v)
		}
	case "file":
		if rest == "" {
			return mp, fmt.Errorf("mapping %q: missing file path", spec)
		}
		mp.Path = rest
	default:
		return mp, fmt.Errorf("mapping %q: unknown kind %q (want linear, random, blocked:… or file:PATH)", spec, kind)
	}
	return mp, nil
}

// rankNodes returns the end node of every rank 0..procs-1.
func (mp Mapping) rankNodes(g *topology.Graph, w Workload, slots []int32, ppn, procs int, seed uint64) ([]int32, error) {
	switch mp.Kind {
	case "random":
		pos := make([]int32, len(slots)*ppn)
		for i := range pos {
			pos[i] = int32(i)
		}
		rng := rand.New(rand.NewPCG(seed, 0x6d6170))
		rng.Shuffle(len(pos), func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
		out := make([]int32, procs)
		for r := range out {
			out[r] = slots[int(pos[r])/ppn]
		}
		return out, nil
	case "blocked":
		return mp.blockedNodes(w, slots, ppn, procs)
	case "file":
		data, err := os.ReadFile(mp.Path)
		if err != nil {
			return nil, fmt.Errorf("mapping file: %v", err)
		}
		return ParseRankFile(g, data, procs)
	}
	out := make([]int32, procs)
	for r := range out {
		out[r] = slots[r/ppn]
	}
	return out, nil
}

// blockedNodes maps the ranks of a process grid block by block.
func (mp Mapping) blockedNodes(w Workload, slots []int32, ppn, procs int) ([]int32, error) {
	if w.Kind != "grid2d" && w.Kind != "grid3d" {
		return nil, fmt.Errorf("mapping %s: blocked mappings need a grid2d or grid3d workload", mp)
	}
	if len(mp.Block) != len(w.Dims) {
		return nil, fmt.Errorf("mapping %s: %d block extents for a %d-dimensional grid", mp, len(mp.Block), len(w.Dims))
	}
	n := len(w.Dims)
	nb := make([]int, n) // blocks per dimension
	for i, d := range w.Dims {
		if d%mp.Block[i] != 0 {
			return nil, fmt.Errorf("mapping %s: block extent %d does not divide the grid extent %d", mp, mp.Block[i], d)
		}
		nb[i] = d / mp.Block[i]
	}
	vol := 1
	for _, b := range mp.Block {
		vol *= b
	}
	out := make([]int32, procs)
	coord := make([]int, n)
	for r := range out {
		rest := r
		for i, d := range w.Dims {
			coord[i] = rest % d
			rest /= d
		}
		blockID, inBlock, bs, is := 0, 0, 1, 1
		for i := range n {
			blockID += (coord[i] / mp.Block[i]) * bs
			inBlock += (coord[i] % mp.Block[i]) * is
			bs *= nb[i]
			is *= mp.Block[i]
		}
		out[r] = slots[(blockID*vol+inBlock)/ppn]
	}
	return out, nil
}

// ParseRankFile reads a rank file: line i (blank lines and '#' comments
// skipped) names the end node of rank i, by name or id. It needs at least
// procs ranks; further lines are ignored.
func ParseRankFile(g *topology.Graph, data []byte, procs int) ([]int32, error) {
	out := make([]int32, 0, procs)
	for ln, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if len(out) == procs {
			break
		}
		if strings.ContainsAny(line, " \t,") {
			return nil, fmt.Errorf("mapping file line %d: one node per line, got %q", ln+1, line)
		}
		v := g.NodeByName(line)
		if v < 0 {
			if id, err := strconv.Atoi(line); err == nil && id >= 0 && id < g.NumNodes() {
				v = id
			}
		}
		if v < 0 {
			return nil, fmt.Errorf("mapping file line %d: no node %q in the fabric", ln+1, line)
		}
		if g.Kind(v) != topology.Endpoint {
			return nil, fmt.Errorf("mapping file line %d: %s is not an end node", ln+1, g.NodeName(v))
		}
		if g.NodeFailed(v) {
			return nil, fmt.Errorf("mapping file line %d: end node %s is failed", ln+1, g.NodeName(v))
		}
		out = append(out, int32(v))
	}
	if len(out) < procs {
		return nil, fmt.Errorf("mapping file places %d ranks; the workload has %d", len(out), procs)
	}
	return out, nil
}
