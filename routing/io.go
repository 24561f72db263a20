package routing

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// TableJSON is the file format of `icn route --json`, read back by
// `icn route check`. The fields dims, rules, routes, stats and
// deadlock_free are those of issue 3; order, algo, active, transit,
// failed_links, failed_nodes and cycle are additions that let a check
// rebuild the exact network and set.
type TableJSON struct {
	Dims []int `json:"dims"`
	// Mesh names the dimensions that are meshes (no wrap link), by
	// letter ("W", "U"); absent on a torus whose every dimension is a
	// ring.
	Mesh         []string    `json:"mesh,omitempty"`
	Rules        string      `json:"rules"`
	Routes       []RouteJSON `json:"routes"`
	Figures      *Figures    `json:"stats"`
	DeadlockFree bool        `json:"deadlock_free"`
	Order        []string    `json:"order,omitempty"`
	Algo         string      `json:"algo,omitempty"`
	Active       [][]int     `json:"active,omitempty"`
	Transit      [][]int     `json:"transit,omitempty"`
	FailedLinks  []string    `json:"failed_links,omitempty"`
	FailedNodes  []string    `json:"failed_nodes,omitempty"`
	Cycle        []string    `json:"cycle,omitempty"`
}

// RouteJSON is one route: source and destination coordinates and the
// direction of every step ("+X", "-Y", …), FS/LS steps included in order.
type RouteJSON struct {
	Src  []int    `json:"src"`
	Dst  []int    `json:"dst"`
	Dirs []string `json:"dirs"`
}

// WriteJSON writes the table in the TableJSON format, streaming the routes
// (one per line) so that large tables need no extra memory.
func (tb *Table) WriteJSON(w io.Writer) error {
	h := tb.JSONHeader()
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString("{\n")
	putJSONField(bw, "dims", h.Dims, false)
	if h.Mesh != nil {
		putJSONField(bw, "mesh", h.Mesh, false)
	}
	putJSONField(bw, "rules", h.Rules, false)
	tb.writeJSONRoutes(bw)
	writeJSONTrailer(bw, h)
	bw.WriteString("}\n")
	return bw.Flush()
}

// putJSONField writes one `  "key": value` line of the top-level object.
func putJSONField(bw *bufio.Writer, key string, v any, last bool) {
	b, _ := json.Marshal(v)
	bw.WriteString("  " + strconv.Quote(key) + ": ")
	bw.Write(b)
	if !last {
		bw.WriteString(",")
	}
	bw.WriteString("\n")
}

// writeJSONRoutes writes the "routes" array, one route object per line:
// the routes of a window of sources are encoded on all cores, one buffer
// per source, and written in order.
func (tb *Table) writeJSONRoutes(bw *bufio.Writer) {
	g := tb.Graph()
	bw.WriteString("  \"routes\": [")
	m := len(tb.Active)
	nw := tableWorkers(0, m, defaultPoolMinRoutes)
	window := 4 * nw
	bufs := make([][]byte, window)
	dirs := make([][]Dir, nw)
	for a0 := 0; a0 < m; a0 += window {
		a1 := min(a0+window, m)
		par.For(a1-a0, nw, func(wi, k int) {
			b := bufs[k][:0]
			for i := (a0 + k) * (m - 1); i < (a0+k+1)*(m-1); i++ {
				src, dst := tb.Pair(i)
				dirs[wi] = tb.AppendDirs(i, dirs[wi][:0])
				if i > 0 {
					b = append(b, ',')
				}
				b = appendRouteJSON(b, g, src, dst, dirs[wi])
			}
			bufs[k] = b
		})
		for _, b := range bufs[:a1-a0] {
			bw.Write(b)
		}
	}
	if tb.NumRoutes() > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n")
}

// appendRouteJSON appends one route as `{"src":[…],"dst":[…],"dirs":[…]}`
// on a new, indented line.
func appendRouteJSON(b []byte, g *topology.Graph, src, dst int, dirs []Dir) []byte {
	b = append(b, "\n    {\"src\":"...)
	b = appendInts(b, g, src)
	b = append(b, ",\"dst\":"...)
	b = appendInts(b, g, dst)
	b = append(b, ",\"dirs\":["...)
	for k, d := range dirs {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, quotedDirs[d]...)
	}
	return append(b, "]}"...)
}

// writeJSONTrailer writes the keys after the routes: the statistics, the
// verdict and what a check needs to rebuild the network and the set.
func writeJSONTrailer(bw *bufio.Writer, h *TableJSON) {
	putJSONField(bw, "stats", h.Figures, false)
	putJSONField(bw, "deadlock_free", h.DeadlockFree, false)
	putJSONField(bw, "order", h.Order, false)
	putJSONField(bw, "algo", h.Algo, false)
	if len(h.Transit) > 0 {
		putJSONField(bw, "transit", h.Transit, false)
	}
	if len(h.FailedLinks) > 0 {
		putJSONField(bw, "failed_links", h.FailedLinks, false)
	}
	if len(h.FailedNodes) > 0 {
		putJSONField(bw, "failed_nodes", h.FailedNodes, false)
	}
	if len(h.Cycle) > 0 {
		putJSONField(bw, "cycle", h.Cycle, false)
	}
	putJSONField(bw, "active", h.Active, true)
}

// quotedDirs holds "\"+X\"", … so that routes are written without
// building a string per step.
var quotedDirs = func() [2 * MaxDims]string {
	var q [2 * MaxDims]string
	for d := range q {
		q[d] = strconv.Quote(Dir(d).String())
	}
	return q
}()

func appendInts(b []byte, g *topology.Graph, v int) []byte {
	b = append(b, '[')
	for i := range g.Dims() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(g.CoordAt(v, i)), 10)
	}
	return append(b, ']')
}

// ReadTableJSON decodes a table file written by WriteJSON (or by hand)
// and checks its structure; semantic checks are Verify's job.
func ReadTableJSON(r io.Reader) (*TableJSON, error) {
	var tf TableJSON
	if err := json.NewDecoder(r).Decode(&tf); err != nil {
		return nil, fmt.Errorf("table file: not a valid table: %v", err)
	}
	switch {
	case tf.Dims == nil:
		return nil, fmt.Errorf("table file: missing \"dims\"")
	case tf.Rules == "":
		return nil, fmt.Errorf("table file: missing \"rules\"")
	case tf.Routes == nil:
		return nil, fmt.Errorf("table file: missing \"routes\"")
	}
	if len(tf.Dims) == 0 || len(tf.Dims) > MaxDims {
		return nil, fmt.Errorf("table file: dims must list 1..%d sizes", MaxDims)
	}
	if _, err := meshFlags(tf.Mesh, len(tf.Dims)); err != nil {
		return nil, fmt.Errorf("table file: %v", err)
	}
	total := 1
	for _, d := range tf.Dims {
		if d < 2 || d > 1<<15 {
			return nil, fmt.Errorf("table file: torus size %d out of range 2..32768", d)
		}
		total *= d
		if total > topology.MaxSpecNodes {
			return nil, fmt.Errorf("table file: more than %d nodes", topology.MaxSpecNodes)
		}
	}
	return &tf, nil
}

// ---- per-node routing tables (text) ----

// WriteNodeTables writes the table as per-node routing tables in the text
// format of docs/routing.md:
//
//	# icn node tables v1
//	torus 4x4x2          (4x4x2:mesh=Z when Z is a mesh)
//	rule angara*
//	order +X,+Y,+Z,-X,-Y,-Z
//	node 0.0.0
//	1.0.0 +X
//	0.1.1 fs:+Z +Y
//	…
//
// One "node" section per active source, one line per destination: the
// destination coordinates and the steps; "fs:" marks a non-standard First
// Step and "ls:" a non-standard Last Step. Blank lines and lines starting
// with '#' are comments.
func (tb *Table) WriteNodeTables(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	g := tb.Graph()
	fmt.Fprintf(bw, "# icn node tables v1: one section per source node, one line per destination\n")
	fmt.Fprintf(bw, "torus %s\nrule %s\norder %s\n", strings.TrimPrefix(topology.TorusSpec(g.Dims(), g.Wrap()), "torus:"), tb.Rule.Kind, tb.r.order)
	m := len(tb.Active)
	var dirs []Dir
	for a := 0; a < m; a++ {
		fmt.Fprintf(bw, "node %s\n", g.NodeName(tb.Active[a]))
		for b := 0; b < m; b++ {
			if a == b {
				continue
			}
			i := pairIndex(m, a, b)
			c := tb.code(i)
			dirs = tb.AppendDirs(i, dirs[:0])
			bw.WriteString(g.NodeName(tb.Active[b]))
			for k, d := range dirs {
				bw.WriteByte(' ')
				if k == 0 && c[0] != 0 {
					bw.WriteString("fs:")
				}
				if k == len(dirs)-1 && c[1] != 0 {
					bw.WriteString("ls:")
				}
				bw.WriteString(d.String())
			}
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

// NodeTables is a parsed per-node table file.
type NodeTables struct {
	Dims []int
	// Wrap says per dimension whether it is a ring (false: a mesh).
	Wrap   []bool
	Rule   Rule
	Routes []Route // Src/Dst are node ids of the torus (mixed radix, X fastest)
}

// ReadNodeTables parses the text format written by WriteNodeTables.
func ReadNodeTables(r io.Reader) (*NodeTables, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	p := &nodeTablesParser{nt: &NodeTables{}, src: -1}
	for sc.Scan() {
		p.line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		if err := p.parseLine(strings.Fields(text)); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return p.finish()
}

// nodeTablesParser holds the state of ReadNodeTables between lines: the
// torus and rule of the header, the node whose routes follow, and the line
// number for messages.
type nodeTablesParser struct {
	nt        *NodeTables
	g         *topology.Graph
	src       int
	line      int
	orderText string
	haveRule  bool
}

// parseLine handles one non-empty, non-comment line split into fields.
func (p *nodeTablesParser) parseLine(f []string) error {
	switch {
	case f[0] == "torus":
		return p.parseTorus(f)
	case f[0] == "rule":
		return p.parseRule(f)
	case f[0] == "order":
		if len(f) != 2 || p.orderText != "" {
			return fmt.Errorf("line %d: want one \"order +X,…\" line", p.line)
		}
		p.orderText = f[1]
		return nil
	case p.g == nil || !p.haveRule:
		return fmt.Errorf("line %d: the \"torus\" and \"rule\" lines must come first", p.line)
	case f[0] == "node":
		if len(f) != 2 {
			return fmt.Errorf("line %d: want \"node COORDS\"", p.line)
		}
		v, err := p.coord(f[1])
		if err != nil {
			return err
		}
		p.src = v
		return nil
	default:
		return p.parseRoute(f)
	}
}

// parseTorus reads the "torus D1xD2…[:mesh=L,…]" header line.
func (p *nodeTablesParser) parseTorus(f []string) error {
	if p.g != nil || len(f) != 2 {
		return fmt.Errorf("line %d: want one \"torus D1xD2…[:mesh=L,…]\" line", p.line)
	}
	if _, opts, _ := strings.Cut(f[1], ":"); opts != "" && !strings.HasPrefix(strings.ToLower(opts), "mesh=") || strings.Count(f[1], ":") > 1 {
		return fmt.Errorf("line %d: the torus line takes sizes and mesh= only, got %q", p.line, f[1])
	}
	g, err := topology.Parse("torus:" + f[1])
	if err != nil {
		return fmt.Errorf("line %d: %v", p.line, err)
	}
	p.g = g
	if len(g.Dims()) > MaxDims {
		return fmt.Errorf("line %d: at most %d dimensions", p.line, MaxDims)
	}
	p.nt.Dims, p.nt.Wrap = g.Dims(), g.Wrap()
	return nil
}

// parseRule reads the "rule NAME" header line.
func (p *nodeTablesParser) parseRule(f []string) error {
	if len(f) != 2 || p.haveRule {
		return fmt.Errorf("line %d: want one \"rule NAME\" line", p.line)
	}
	var err error
	if p.nt.Rule, err = ParseRule(f[1]); err != nil {
		return fmt.Errorf("line %d: %v", p.line, err)
	}
	p.haveRule = true
	return nil
}

// coord parses the coordinates of exactly one node.
func (p *nodeTablesParser) coord(s string) (int, error) {
	vs, err := p.g.ParseNodes(s)
	if err != nil || len(vs) != 1 || strings.ContainsAny(s, "*-,") {
		return -1, fmt.Errorf("line %d: %q is not the coordinates of one node", p.line, s)
	}
	return vs[0], nil
}

// parseRoute reads "DST STEP…" of the current node: directions, the first
// optionally marked fs:, the last optionally marked ls:.
func (p *nodeTablesParser) parseRoute(f []string) error {
	if p.src < 0 {
		return fmt.Errorf("line %d: a route before the first \"node\" line", p.line)
	}
	dst, err := p.coord(f[0])
	if err != nil {
		return err
	}
	rt := Route{Src: p.src, Dst: dst}
	for k, s := range f[1:] {
		if rest, ok := strings.CutPrefix(s, "fs:"); ok {
			if k != 0 {
				return fmt.Errorf("line %d: fs: marks the first step only", p.line)
			}
			rt.FS, s = true, rest
		}
		if rest, ok := strings.CutPrefix(s, "ls:"); ok {
			if k != len(f)-2 {
				return fmt.Errorf("line %d: ls: marks the last step only", p.line)
			}
			rt.LS, s = true, rest
		}
		d, err := ParseDir(s)
		if err != nil {
			return fmt.Errorf("line %d: %v", p.line, err)
		}
		if d.Dim() >= len(p.nt.Dims) {
			return fmt.Errorf("line %d: %s is not a direction of this torus", p.line, d)
		}
		rt.Dirs = append(rt.Dirs, d)
	}
	if len(rt.Dirs) == 0 {
		return fmt.Errorf("line %d: route without steps", p.line)
	}
	p.nt.Routes = append(p.nt.Routes, rt)
	return nil
}

// finish checks the header was complete and applies the order line.
func (p *nodeTablesParser) finish() (*NodeTables, error) {
	if p.g == nil || !p.haveRule {
		return nil, fmt.Errorf("node tables: missing \"torus\" or \"rule\" line")
	}
	if p.orderText != "" {
		o, err := ParseOrder(p.orderText, len(p.nt.Dims))
		if err != nil {
			return nil, err
		}
		p.nt.Rule.Order = o
	}
	return p.nt, nil
}
