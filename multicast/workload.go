package multicast

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// Workload describes a set of multicast groups built from processes mapped
// onto the fabric's end nodes in order (process i runs on working end node
// i/PPN), as MPI communicators would be.
type Workload struct {
	// Kind is grid2d, grid3d, hier, random or file.
	Kind string
	// Dims are the process-grid extents (grid2d, grid3d), first fastest.
	Dims []int
	// PPN is the number of processes per end node (default 1).
	PPN int
	// Procs is the number of processes (hier, random; 0 = every slot).
	Procs int
	// Sizes are the group sizes per level (hier; the last one repeats).
	Sizes []int
	// Count, MinSize, MaxSize describe random groups.
	Count, MinSize, MaxSize int
	// Path is the group file (file).
	Path string
	// Map places the processes on end nodes (zero value: linear).
	Map  Mapping
	spec string
}

// Limits that keep a typo from allocating the machine away.
const (
	MaxProcs  = 1 << 24
	MaxGroups = 1 << 22
)

// WorkloadUsage describes the accepted workload specs.
const WorkloadUsage = `grid2d:AxB[,ppn=K]            each line of an A×B process grid is a group (A fastest)
grid3d:AxBxC[,ppn=K]          each line (row, column, pillar) of an A×B×C grid is a group
hier:size=S1[.S2…][,procs=P][,ppn=K]
                              consecutive groups of S1 processes; their leaders (first
                              members) form groups of S2, and so on up to one group
random:count=N,size=S|MIN-MAX[,procs=P][,ppn=K]
                              N groups of S distinct random processes (uses --seed)
file:PATH                     one group per line: [NAME:] NODE NODE … (names or ids, # comments)`

// String returns the spec the workload was parsed from.
func (w Workload) String() string { return w.spec }

// ParseWorkload parses a workload spec (see WorkloadUsage) without looking
// at a fabric.
func ParseWorkload(spec string) (Workload, error) {
	w := Workload{spec: spec, PPN: 1}
	kind, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok {
		return w, fmt.Errorf("workload %q: want KIND:ARGS (grid2d, grid3d, hier, random or file)", spec)
	}
	w.Kind = strings.ToLower(kind)
	if w.Kind == "file" {
		if rest == "" {
			return w, fmt.Errorf("workload %q: missing file path", spec)
		}
		w.Path = rest
		return w, nil
	}
	if err := w.parseArgs(kind, rest); err != nil {
		return w, fmt.Errorf("workload %q: %v", spec, err)
	}
	return w, nil
}

// parseArgs parses the arguments of a generated workload: the grid
// extents of grid2d and grid3d, then the KEY=VALUE items of the kind.
func (w *Workload) parseArgs(kind, rest string) error {
	items := strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ':' })
	if len(items) == 0 {
		return fmt.Errorf("missing arguments")
	}
	var allowed []string
	switch w.Kind {
	case "grid2d", "grid3d":
		if err := w.parseExtents(items[0]); err != nil {
			return err
		}
		items = items[1:]
		allowed = []string{"ppn"}
	case "hier":
		allowed = []string{"size", "procs", "ppn"}
	case "random":
		allowed = []string{"count", "size", "procs", "ppn"}
	default:
		return fmt.Errorf("unknown kind %q (want grid2d, grid3d, hier, random or file)", kind)
	}
	kv, err := parseKeyValues(items, allowed)
	if err != nil {
		return err
	}
	if err := w.parseCommonKeys(kv); err != nil {
		return err
	}
	switch w.Kind {
	case "hier":
		return w.parseHierKeys(kv)
	case "random":
		return w.parseRandomKeys(kv)
	}
	return nil
}

// parseExtents parses the AxB or AxBxC process grid of grid2d or grid3d.
func (w *Workload) parseExtents(item string) error {
	want := 2
	if w.Kind == "grid3d" {
		want = 3
	}
	parts := strings.Split(strings.ToLower(item), "x")
	if len(parts) != want {
		return fmt.Errorf("%s needs %d extents like %s", w.Kind, want, strings.Repeat("8x", want-1)+"8")
	}
	prod := 1
	for _, p := range parts {
		v, err := atoi(p, "grid extent", 1, MaxProcs)
		if err != nil {
			return err
		}
		prod *= v
		if prod > MaxProcs {
			return fmt.Errorf("more than %d processes", MaxProcs)
		}
		w.Dims = append(w.Dims, v)
	}
	return nil
}

// parseKeyValues splits KEY=VALUE items, allowing only the given keys and
// each at most once.
func parseKeyValues(items, allowed []string) (map[string]string, error) {
	kv := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || v == "" {
			return nil, fmt.Errorf("want KEY=VALUE, got %q", it)
		}
		if !contains(allowed, k) {
			return nil, fmt.Errorf("unknown key %q (want %s)", k, strings.Join(allowed, ", "))
		}
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("key %q given twice", k)
		}
		kv[k] = strings.TrimSpace(v)
	}
	return kv, nil
}

// parseCommonKeys reads ppn and procs.
func (w *Workload) parseCommonKeys(kv map[string]string) error {
	var err error
	if s, ok := kv["ppn"]; ok {
		if w.PPN, err = atoi(s, "ppn", 1, 1024); err != nil {
			return err
		}
	}
	if s, ok := kv["procs"]; ok {
		if w.Procs, err = atoi(s, "procs", 1, MaxProcs); err != nil {
			return err
		}
	}
	return nil
}

// parseHierKeys reads the group sizes S1.S2… of the hierarchy levels.
func (w *Workload) parseHierKeys(kv map[string]string) error {
	s, ok := kv["size"]
	if !ok {
		return fmt.Errorf("hier needs size=S1[.S2…]")
	}
	for _, p := range strings.Split(s, ".") {
		v, err := atoi(p, "size", 2, MaxProcs)
		if err != nil {
			return err
		}
		w.Sizes = append(w.Sizes, v)
	}
	if len(w.Sizes) > 64 {
		return fmt.Errorf("more than 64 levels")
	}
	return nil
}

// parseRandomKeys reads the group count and the size or size range of
// random groups.
func (w *Workload) parseRandomKeys(kv map[string]string) error {
	cs, ok1 := kv["count"]
	ss, ok2 := kv["size"]
	if !ok1 || !ok2 {
		return fmt.Errorf("random needs count=N and size=S or size=MIN-MAX")
	}
	var err error
	if w.Count, err = atoi(cs, "count", 1, MaxGroups); err != nil {
		return err
	}
	lo, hi, isRange := strings.Cut(ss, "-")
	if w.MinSize, err = atoi(lo, "size", 1, MaxProcs); err != nil {
		return err
	}
	w.MaxSize = w.MinSize
	if isRange {
		if w.MaxSize, err = atoi(hi, "size", 1, MaxProcs); err != nil {
			return err
		}
		if w.MaxSize < w.MinSize {
			return fmt.Errorf("size range %d-%d is empty", w.MinSize, w.MaxSize)
		}
	}
	if int64(w.Count)*int64(w.MaxSize) > 1<<26 {
		return fmt.Errorf("%d groups of up to %d members is too much", w.Count, w.MaxSize)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func atoi(s, what string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s %q is not an integer", what, s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%s %d out of range %d..%d", what, v, lo, hi)
	}
	return v, nil
}

// Groups builds the workload's groups on fabric g. seed drives random
// groups (each group's generator is derived from the seed and its index).
func (w Workload) Groups(g *topology.Graph, seed uint64) ([]Group, error) {
	if w.Kind == "file" {
		data, err := os.ReadFile(w.Path)
		if err != nil {
			return nil, fmt.Errorf("group file: %v", err)
		}
		return ParseGroups(g, data)
	}
	var slots []int32
	for _, v := range g.Endpoints() {
		if !g.NodeFailed(v) {
			slots = append(slots, int32(v))
		}
	}
	ppn := max(w.PPN, 1)
	capacity := len(slots) * ppn
	procs := w.Procs
	switch w.Kind {
	case "grid2d", "grid3d":
		procs = 1
		for _, d := range w.Dims {
			procs *= d
		}
	}
	if procs == 0 {
		procs = capacity
	}
	if procs > capacity {
		return nil, fmt.Errorf("workload %s needs %d processes; the fabric has %d working end nodes × %d per node = %d", w.spec, procs, len(slots), ppn, capacity)
	}
	if procs == 0 {
		return nil, fmt.Errorf("the fabric has no working end nodes")
	}
	nodes, err := w.Map.rankNodes(g, w, slots, ppn, procs, seed)
	if err != nil {
		return nil, err
	}
	m := &mapper{nodes: nodes, stamp: make([]uint32, g.NumNodes())}
	var out []Group
	switch w.Kind {
	case "grid2d", "grid3d":
		out = gridGroups(w.Dims, m)
	case "hier":
		out = hierGroups(procs, w.Sizes, m)
	case "random":
		if w.MaxSize > procs {
			return nil, fmt.Errorf("workload %s: groups of %d processes out of %d", w.spec, w.MaxSize, procs)
		}
		out = make([]Group, w.Count)
		for i := range out {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			size := w.MinSize + rng.IntN(w.MaxSize-w.MinSize+1)
			out[i] = m.group("rand."+strconv.Itoa(i), sample(rng, procs, size))
		}
	default:
		return nil, fmt.Errorf("unknown workload kind %q", w.Kind)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("workload %s has no group of two or more processes", w.spec)
	}
	if len(out) > MaxGroups {
		return nil, fmt.Errorf("workload %s has %d groups, more than %d", w.spec, len(out), MaxGroups)
	}
	return out, nil
}

// sample returns k distinct integers of [0,n) (Floyd's algorithm), in the
// order drawn.
func sample(rng *rand.Rand, n, k int) []int {
	seen := make(map[int]bool, k)
	out := make([]int, 0, k)
	for j := n - k; j < n; j++ {
		t := rng.IntN(j + 1)
		if seen[t] {
			t = j
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// mapper turns process lists into member lists of distinct nodes.
type mapper struct {
	nodes []int32 // rank -> end node
	stamp []uint32
	epoch uint32
}

func (m *mapper) group(name string, procs []int) Group {
	m.epoch++
	mem := make([]int32, 0, len(procs))
	for _, p := range procs {
		v := m.nodes[p]
		if m.stamp[v] != m.epoch {
			m.stamp[v] = m.epoch
			mem = append(mem, v)
		}
	}
	return Group{Name: name, Members: mem}
}

// gridGroups makes one group per grid line along every dimension whose
// extent is at least 2. Process ids are mixed radix, first dimension
// fastest.
func gridGroups(dims []int, m *mapper) []Group {
	n := len(dims)
	stride := make([]int, n)
	total := 1
	for i, d := range dims {
		stride[i] = total
		total *= d
	}
	var out []Group
	names := "XYZ"
	coord := make([]int, n)
	for dim := 0; dim < n; dim++ {
		if dims[dim] < 2 {
			continue
		}
		for p := 0; p < total; p++ {
			// p enumerates line starts: skip processes whose coordinate in
			// dim is not 0.
			if (p/stride[dim])%dims[dim] != 0 {
				continue
			}
			var b strings.Builder
			b.WriteByte(names[dim])
			for k := 0; k < n; k++ {
				coord[k] = (p / stride[k]) % dims[k]
				if k != dim {
					b.WriteString("." + strings.ToLower(names[k:k+1]) + strconv.Itoa(coord[k]))
				}
			}
			procs := make([]int, dims[dim])
			for x := range procs {
				procs[x] = p + x*stride[dim]
			}
			out = append(out, m.group(b.String(), procs))
		}
	}
	return out
}

// hierGroups makes consecutive groups of sizes[0] processes, then groups of
// sizes[1] of their leaders (first members), and so on until one group
// covers all remaining leaders. Groups of a single process are skipped.
func hierGroups(procs int, sizes []int, m *mapper) []Group {
	level := make([]int, procs)
	for i := range level {
		level[i] = i
	}
	var out []Group
	for l := 0; len(level) > 1; l++ {
		s := sizes[min(l, len(sizes)-1)]
		var leaders []int
		for i, k := 0, 0; i < len(level); i, k = i+s, k+1 {
			part := level[i:min(i+s, len(level))]
			leaders = append(leaders, part[0])
			if len(part) > 1 {
				out = append(out, m.group(fmt.Sprintf("L%d.%d", l+1, k), part))
			}
		}
		level = leaders
	}
	return out
}

// ParseGroups reads a group file: one group per line, "[NAME:] NODE NODE …"
// with nodes given by name (or by id when no node has that name), separated
// by spaces or commas; blank lines and text after '#' are ignored.
func ParseGroups(g *topology.Graph, data []byte) ([]Group, error) {
	var out []Group
	names := map[string]int{}
	for ln, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\r' })
		if len(fields) == 0 {
			continue
		}
		name := "line" + strconv.Itoa(ln+1)
		if f := fields[0]; strings.HasSuffix(f, ":") {
			name = strings.TrimSuffix(f, ":")
			if name == "" {
				return nil, fmt.Errorf("line %d: empty group name", ln+1)
			}
			fields = fields[1:]
		}
		if prev, dup := names[name]; dup {
			return nil, fmt.Errorf("line %d: group %q already defined on line %d", ln+1, name, prev)
		}
		names[name] = ln + 1
		if len(fields) == 0 {
			return nil, fmt.Errorf("line %d: group %q has no members", ln+1, name)
		}
		seen := make(map[int]bool, len(fields))
		mem := make([]int32, 0, len(fields))
		for _, f := range fields {
			v := g.NodeByName(f)
			if v < 0 {
				if id, err := strconv.Atoi(f); err == nil && id >= 0 && id < g.NumNodes() {
					v = id
				}
			}
			if v < 0 {
				return nil, fmt.Errorf("line %d: group %q: no node %q in the fabric", ln+1, name, f)
			}
			if seen[v] {
				return nil, fmt.Errorf("line %d: group %q lists node %s twice", ln+1, name, g.NodeName(v))
			}
			if g.NodeFailed(v) {
				return nil, fmt.Errorf("line %d: group %q: node %s is failed", ln+1, name, g.NodeName(v))
			}
			seen[v] = true
			mem = append(mem, int32(v))
		}
		out = append(out, Group{Name: name, Members: mem})
		if len(out) > MaxGroups {
			return nil, fmt.Errorf("more than %d groups", MaxGroups)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("group file has no groups")
	}
	return out, nil
}
