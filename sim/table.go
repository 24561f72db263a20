package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// Table is a routing table in the exchange format printed by
// `icn route --json`: torus sizes, the routing rules, and one route per
// ordered pair of active nodes as a list of directions ("+X", "-Z", …),
// first/last steps included in order.
type Table struct {
	Dims []int
	// Mesh names the dimensions that are meshes (no wrap link) by letter,
	// as the table file lists them; none on a torus of rings.
	Mesh  []string
	Rules string
	// DeadlockFree is the producer's own verdict (nil if absent).
	DeadlockFree *bool
	Routes       []TableRoute
	// FailedLinks and FailedNodes name the failures the table was built
	// for (link names such as "0.0+X", node names), if the file lists them.
	FailedLinks, FailedNodes []string
}

// TableRoute is one route; Src and Dst are mixed-radix node ids (X fastest).
type TableRoute struct {
	Src, Dst int
	Dirs     []uint8 // direction codes: 2*dim + (1 if negative)
}

// Limits of table files.
const (
	maxTableDims   = 6
	maxTableNodes  = 1 << 16
	maxTableRoutes = 1 << 24
)

type tableFile struct {
	Dims   []int    `json:"dims"`
	Mesh   []string `json:"mesh"`
	Rules  string
	Routes []struct {
		Src  []int    `json:"src"`
		Dst  []int    `json:"dst"`
		Dirs []string `json:"dirs"`
	} `json:"routes"`
	DeadlockFree *bool    `json:"deadlock_free"`
	FailedLinks  []string `json:"failed_links"`
	FailedNodes  []string `json:"failed_nodes"`
}

// ParseTable reads a routing table in the `icn route --json` format and
// checks it for internal consistency (coordinates in range, known
// directions, no duplicate or self routes). Whether it fits a network is
// checked when the simulation is built.
func ParseTable(data []byte) (*Table, error) {
	var f tableFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("routing table: %v", oneLine(err.Error()))
	}
	if dec.More() {
		return nil, fmt.Errorf("routing table: trailing data after the JSON object")
	}
	if len(f.Dims) == 0 || len(f.Dims) > maxTableDims {
		return nil, fmt.Errorf("routing table: dims must list 1..%d torus sizes, got %d", maxTableDims, len(f.Dims))
	}
	nodes := 1
	for i, d := range f.Dims {
		if d < 2 || d > maxTableNodes {
			return nil, fmt.Errorf("routing table: size %d of dimension %s out of range 2..%d", d, topology.DimName(i), maxTableNodes)
		}
		nodes *= d
		if nodes > maxTableNodes {
			return nil, fmt.Errorf("routing table: more than %d nodes", maxTableNodes)
		}
	}
	if len(f.Routes) == 0 {
		return nil, fmt.Errorf("routing table: no routes")
	}
	if len(f.Routes) > maxTableRoutes {
		return nil, fmt.Errorf("routing table: %d routes exceed the limit %d", len(f.Routes), maxTableRoutes)
	}
	maxLen := 0
	for _, d := range f.Dims {
		maxLen += d
	}
	maxLen = min(4*maxLen, 255)
	for k, l := range f.Mesh {
		if i := topology.DimIndex(l); len(l) != 1 || i < 0 || i >= len(f.Dims) {
			return nil, fmt.Errorf("routing table: mesh names %q, not a dimension of a %d-dimensional torus", l, len(f.Dims))
		}
		for _, m := range f.Mesh[:k] {
			if topology.DimIndex(m) == topology.DimIndex(l) {
				return nil, fmt.Errorf("routing table: mesh names dimension %s twice", topology.DimName(topology.DimIndex(l)))
			}
		}
	}
	t := &Table{Dims: f.Dims, Mesh: f.Mesh, Rules: f.Rules, DeadlockFree: f.DeadlockFree, Routes: make([]TableRoute, len(f.Routes)),
		FailedLinks: f.FailedLinks, FailedNodes: f.FailedNodes}
	seen := make(map[int64]bool, len(f.Routes))
	for i, r := range f.Routes {
		src, err := tableNode(f.Dims, r.Src)
		if err != nil {
			return nil, fmt.Errorf("routing table: route %d: src %v", i, err)
		}
		dst, err := tableNode(f.Dims, r.Dst)
		if err != nil {
			return nil, fmt.Errorf("routing table: route %d: dst %v", i, err)
		}
		if src == dst {
			return nil, fmt.Errorf("routing table: route %d goes from %s to itself", i, coordName(r.Src))
		}
		key := int64(src)*int64(nodes) + int64(dst)
		if seen[key] {
			return nil, fmt.Errorf("routing table: two routes from %s to %s", coordName(r.Src), coordName(r.Dst))
		}
		seen[key] = true
		if len(r.Dirs) == 0 || len(r.Dirs) > maxLen {
			return nil, fmt.Errorf("routing table: route %s→%s has %d steps (want 1..%d)", coordName(r.Src), coordName(r.Dst), len(r.Dirs), maxLen)
		}
		dirs := make([]uint8, len(r.Dirs))
		for k, s := range r.Dirs {
			d, err := ParseDir(s, len(f.Dims))
			if err != nil {
				return nil, fmt.Errorf("routing table: route %s→%s step %d: %v", coordName(r.Src), coordName(r.Dst), k+1, err)
			}
			dirs[k] = d
		}
		t.Routes[i] = TableRoute{Src: src, Dst: dst, Dirs: dirs}
	}
	return t, nil
}

// ParseDir parses a direction such as "+X", "-Y", "−Z" or "+D6" into its
// code 2*dim + (1 if negative).
func ParseDir(s string, nd int) (uint8, error) {
	neg := false
	switch {
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	case strings.HasPrefix(s, "-"):
		s, neg = s[1:], true
	case strings.HasPrefix(s, "−"):
		s, neg = s[len("−"):], true
	default:
		return 0, fmt.Errorf("direction %q must start with + or -", s)
	}
	d := topology.DimIndex(s)
	if d < 0 || d >= nd {
		return 0, fmt.Errorf("direction %q names no dimension of a %d-dimensional torus", s, nd)
	}
	code := uint8(2 * d)
	if neg {
		code++
	}
	return code, nil
}

// DirName is the inverse of ParseDir.
func DirName(code uint8) string {
	s := "+"
	if code&1 == 1 {
		s = "-"
	}
	return s + topology.DimName(int(code>>1))
}

func tableNode(dims, c []int) (int, error) {
	if len(c) != len(dims) {
		return 0, fmt.Errorf("%v has %d coordinates, the torus has %d dimensions", c, len(c), len(dims))
	}
	id, mul := 0, 1
	for i, x := range c {
		if x < 0 || x >= dims[i] {
			return 0, fmt.Errorf("%v: coordinate %d outside 0..%d", c, x, dims[i]-1)
		}
		id += x * mul
		mul *= dims[i]
	}
	return id, nil
}

func coordName(c []int) string { return topology.CoordString(c) }

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// boundTable is a table checked against a network.
type boundTable struct {
	active []int32 // node of each active index (terminals), increasing
	index  []int32 // active index of a node, -1 if not active
	route  []int32 // route index by srcActive*len(active)+dstActive, -1 on the diagonal
	start  []int32 // dirs of route k: dirs[start[k]:start[k+1]]
	dirs   []uint8
	cls    []uint8 // dateline VC class of every step
}

// bind checks that t fits g: g is a direct torus with one ring or line
// per dimension and the same sizes and mesh dimensions, every route follows existing working links
// and arrives, every ordered pair of active nodes has a route, and no
// active node has failed. dirPort gives the channel leaving a node in a
// direction (-1 if none).
func (t *Table) bind(g *topology.Graph, dirChan func(v int, code uint8) int) (*boundTable, error) {
	if err := t.checkDims(g); err != nil {
		return nil, err
	}
	bt := &boundTable{}
	if err := bt.indexActive(t, g); err != nil {
		return nil, err
	}
	if err := bt.checkComplete(t, g); err != nil {
		return nil, err
	}
	if err := bt.traceRoutes(t, g, dirChan); err != nil {
		return nil, err
	}
	bt.datelineClasses(t, g.Dims())
	return bt, nil
}

// checkDims reports whether the table was computed for a torus of g's size
// and mesh dimensions.
func (t *Table) checkDims(g *topology.Graph) error {
	dims := g.Dims()
	if len(dims) != len(t.Dims) {
		return fmt.Errorf("routing table is for a %d-dimensional torus %s, the network %s has %d dimensions", len(t.Dims), dimsString(t.Dims), g.Name(), len(dims))
	}
	for i := range dims {
		if dims[i] != t.Dims[i] {
			return fmt.Errorf("routing table is for torus %s, the network is %s", dimsString(t.Dims), dimsString(dims))
		}
	}
	wrap := make([]bool, len(dims))
	for i := range wrap {
		wrap[i] = true
	}
	for _, l := range t.Mesh {
		wrap[topology.DimIndex(l)] = false
	}
	if got, want := topology.MeshLetters(wrap), topology.MeshLetters(g.Wrap()); got != want {
		return fmt.Errorf("routing table is for %s, the network is %s", topology.TorusSpec(t.Dims, wrap), topology.TorusSpec(dims, g.Wrap()))
	}
	return nil
}

// indexActive numbers the active nodes (every route end) in node order;
// none of them may have failed.
func (bt *boundTable) indexActive(t *Table, g *topology.Graph) error {
	n := g.NumNodes()
	bt.index = make([]int32, n)
	for i := range bt.index {
		bt.index[i] = -1
	}
	for _, r := range t.Routes {
		for _, v := range [2]int{r.Src, r.Dst} {
			if bt.index[v] < 0 {
				bt.index[v] = 0
			}
		}
	}
	for v := 0; v < n; v++ {
		if bt.index[v] >= 0 {
			if g.NodeFailed(v) {
				return fmt.Errorf("routing table uses node %s as an active node, but it has failed", g.NodeName(v))
			}
			bt.index[v] = int32(len(bt.active))
			bt.active = append(bt.active, int32(v))
		}
	}
	return nil
}

// checkComplete reports the first ordered pair of active nodes the table
// has no route for.
func (bt *boundTable) checkComplete(t *Table, g *topology.Graph) error {
	a := len(bt.active)
	if len(t.Routes) == a*(a-1) {
		return nil
	}
	have := make([]bool, a*a)
	for _, r := range t.Routes {
		have[int(bt.index[r.Src])*a+int(bt.index[r.Dst])] = true
	}
	for i := 0; i < a; i++ {
		for j := 0; j < a; j++ {
			if i != j && !have[i*a+j] {
				return fmt.Errorf("routing table has no route from %s to %s (both are active nodes)", g.NodeName(int(bt.active[i])), g.NodeName(int(bt.active[j])))
			}
		}
	}
	return nil
}

// traceRoutes follows every route hop by hop over g's working links, checks
// that it arrives, and stores its directions.
func (bt *boundTable) traceRoutes(t *Table, g *topology.Graph, dirChan func(v int, code uint8) int) error {
	a := len(bt.active)
	bt.route = make([]int32, a*a)
	for i := range bt.route {
		bt.route[i] = -1
	}
	bt.start = make([]int32, 0, len(t.Routes)+1)
	for k, r := range t.Routes {
		bt.route[int(bt.index[r.Src])*a+int(bt.index[r.Dst])] = int32(k)
		bt.start = append(bt.start, int32(len(bt.dirs)))
		v := r.Src
		for s, d := range r.Dirs {
			c := dirChan(v, d)
			if c < 0 {
				return fmt.Errorf("route %s→%s step %d (%s): node %s has no such link", g.NodeName(r.Src), g.NodeName(r.Dst), s+1, DirName(d), g.NodeName(v))
			}
			if !g.Up(c) {
				return fmt.Errorf("route %s→%s step %d uses failed link %s", g.NodeName(r.Src), g.NodeName(r.Dst), s+1, g.ChannelName(c))
			}
			v = g.Dst(c)
		}
		if v != r.Dst {
			return fmt.Errorf("route %s→%s does not arrive: it ends at %s", g.NodeName(r.Src), g.NodeName(r.Dst), g.NodeName(v))
		}
		bt.dirs = append(bt.dirs, r.Dirs...)
	}
	bt.start = append(bt.start, int32(len(bt.dirs)))
	return nil
}

// datelineClasses gives every hop its dateline class: a hop uses class 0
// while the wrap link of its direction still lies ahead within the current
// run of equal directions, class 1 once it is behind (or never needed).
func (bt *boundTable) datelineClasses(t *Table, dims []int) {
	bt.cls = make([]uint8, len(bt.dirs))
	c := make([]int, len(dims))
	for k, r := range t.Routes {
		decodeCoords(r.Src, dims, c)
		ds := bt.dirs[bt.start[k]:bt.start[k+1]]
		cls := bt.cls[bt.start[k]:bt.start[k+1]]
		for s := 0; s < len(ds); {
			e := s
			for e < len(ds) && ds[e] == ds[s] {
				e++
			}
			dim := int(ds[s] >> 1)
			c[dim] = runClasses(cls[s:e], ds[s]&1 == 1, c[dim], dims[dim])
			s = e
		}
	}
}

// runClasses sets the classes of a run of hops in one direction (neg: the
// negative one) starting at coordinate x on a ring of size k, and returns the coordinate
// where the run ends.
func runClasses(cls []uint8, neg bool, x, k int) int {
	for h := range cls {
		// wrap ahead in [h, end)?
		steps := len(cls) - h
		var wraps bool
		if neg {
			wraps = x-steps < 0
		} else {
			wraps = x+steps >= k
		}
		if !wraps {
			cls[h] = 1
		}
		if neg {
			x = (x - 1 + k) % k
		} else {
			x = (x + 1) % k
		}
	}
	return x
}

func decodeCoords(v int, dims, c []int) {
	for i, d := range dims {
		c[i] = v % d
		v /= d
	}
}

func dimsString(d []int) string {
	s := make([]string, len(d))
	for i, x := range d {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "x")
}
