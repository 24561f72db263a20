package routing

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// TableJSON is the file format of `icn route --json`, read back by
// `icn route check`. The fields dims, rules, routes, stats and
// deadlock_free are those of issue 3; order, algo, active, transit,
// failed_links, failed_nodes and cycle are additions that let a check
// rebuild the exact network and set.
type TableJSON struct {
	Dims         []int       `json:"dims"`
	Rules        string      `json:"rules"`
	Routes       []RouteJSON `json:"routes"`
	Stats        *Stats      `json:"stats"`
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
	bw := bufio.NewWriterSize(w, 1<<16)
	g := tb.Graph()
	t := tb.r.t
	put := func(key string, v any, last bool) {
		b, _ := json.Marshal(v)
		bw.WriteString("  " + strconv.Quote(key) + ": ")
		bw.Write(b)
		if !last {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
	}
	coords := func(vs []int) [][]int {
		out := make([][]int, len(vs))
		for i, v := range vs {
			out[i] = g.Coord(v)
		}
		return out
	}
	bw.WriteString("{\n")
	put("dims", t.dims, false)
	put("rules", tb.Rule.Kind.String(), false)
	bw.WriteString("  \"routes\": [")
	var dirs []Dir
	var b []byte
	for i := 0; i < tb.NumRoutes(); i++ {
		src, dst := tb.Pair(i)
		dirs = tb.AppendDirs(i, dirs[:0])
		b = b[:0]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\"src\":"...)
		b = appendInts(b, g, src)
		b = append(b, ",\"dst\":"...)
		b = appendInts(b, g, dst)
		b = append(b, ",\"dirs\":["...)
		for k, d := range dirs {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, d.String()...)
			b = append(b, '"')
		}
		b = append(b, "]}"...)
		bw.Write(b)
	}
	if tb.NumRoutes() > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n")
	put("stats", tb.Stats, false)
	put("deadlock_free", tb.DeadlockFree, false)
	put("order", strings.Split(tb.r.order.String(), ","), false)
	put("algo", tb.Algo.String(), false)
	if len(tb.Transit) > 0 {
		put("transit", coords(tb.Transit), false)
	}
	var fl, fn []string
	for _, l := range g.FailedLinks() {
		fl = append(fl, g.LinkName(l))
	}
	for _, v := range g.FailedNodes() {
		fn = append(fn, g.NodeName(v))
	}
	if len(fl) > 0 {
		put("failed_links", fl, false)
	}
	if len(fn) > 0 {
		put("failed_nodes", fn, false)
	}
	if len(tb.Cycle) > 0 {
		cyc := make([]string, len(tb.Cycle))
		for i, c := range tb.Cycle {
			cyc[i] = g.ChannelName(c)
		}
		put("cycle", cyc, false)
	}
	put("active", coords(tb.Active), true)
	bw.WriteString("}\n")
	return bw.Flush()
}

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
// and checks its structure; semantic checks are CheckTable's job.
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

// CheckTable re-verifies a table file: it rebuilds the torus from dims and
// the failures named in the file plus extraLinks/extraNodes (lists as
// accepted by topology.Graph.ApplyFaults), and checks that every ordered
// pair of active nodes has exactly one route, that every route obeys the
// rule, arrives, avoids failed links and keeps its transit nodes inside
// the set, that the claimed figures match and that the channel
// dependencies have no cycle with a turn. A structurally corrupt file is
// an error; everything else is reported as violations.
func CheckTable(tf *TableJSON, extraLinks, extraNodes string) (*Report, *Router, error) {
	parts := make([]string, len(tf.Dims))
	for i, d := range tf.Dims {
		parts[i] = strconv.Itoa(d)
	}
	g, err := topology.Parse("torus:" + strings.Join(parts, "x"))
	if err != nil {
		return nil, nil, fmt.Errorf("table file: %v", err)
	}
	if g, err = g.ApplyFaults(strings.Join(tf.FailedLinks, ","), strings.Join(tf.FailedNodes, ",")); err != nil {
		return nil, nil, fmt.Errorf("table file: %v", err)
	}
	if g, err = g.ApplyFaults(extraLinks, extraNodes); err != nil {
		return nil, nil, err
	}
	rule, err := ParseRule(tf.Rules)
	if err != nil {
		return nil, nil, fmt.Errorf("table file: %v", err)
	}
	n := len(tf.Dims)
	if len(tf.Order) > 0 {
		if rule.Order, err = ParseOrder(strings.Join(tf.Order, ","), n); err != nil {
			return nil, nil, fmt.Errorf("table file: %v", err)
		}
	}
	r, err := NewRouter(g, rule)
	if err != nil {
		return nil, nil, err
	}
	rep, err := r.CheckJSON(tf)
	return rep, r, err
}

// CheckJSON verifies a table in the file format against this router's
// network and rule (the rule named in the file must be the router's), the
// way CheckTable does, without building a new router: a service that keeps
// one router per fabric state uses it to re-check stored tables after
// failures.
func (r *Router) CheckJSON(tf *TableJSON) (*Report, error) {
	g := r.t.g
	n := len(r.t.dims)
	if !slices.Equal(tf.Dims, r.t.dims) {
		return nil, fmt.Errorf("table file: dims %v do not match the torus %v", tf.Dims, r.t.dims)
	}
	rule, err := ParseRule(tf.Rules)
	if err != nil {
		return nil, fmt.Errorf("table file: %v", err)
	}
	if len(tf.Order) > 0 {
		if rule.Order, err = ParseOrder(strings.Join(tf.Order, ","), n); err != nil {
			return nil, fmt.Errorf("table file: %v", err)
		}
	}
	if rule.String() != r.rule.String() {
		return nil, fmt.Errorf("table file: rule %s differs from the router's %s", rule, r.rule)
	}
	node := func(what string, c []int) (int, error) {
		if len(c) != n {
			return -1, fmt.Errorf("table file: %s %v has %d coordinates, the torus has %d dimensions", what, c, len(c), n)
		}
		for i, x := range c {
			if x < 0 || x >= tf.Dims[i] {
				return -1, fmt.Errorf("table file: %s %v is outside the torus", what, c)
			}
		}
		return g.NodeAt(c), nil
	}
	// the set
	var active, transit []int
	inSet := make([]bool, g.NumNodes())
	if len(tf.Active) > 0 {
		for _, c := range tf.Active {
			v, err := node("active node", c)
			if err != nil {
				return nil, err
			}
			if inSet[v] {
				return nil, fmt.Errorf("table file: active node %s listed twice", g.NodeName(v))
			}
			inSet[v] = true
			active = append(active, v)
		}
	} else {
		for i, rt := range tf.Routes {
			for _, c := range [][]int{rt.Src, rt.Dst} {
				v, err := node(fmt.Sprintf("route %d endpoint", i+1), c)
				if err != nil {
					return nil, err
				}
				if !inSet[v] {
					inSet[v] = true
					active = append(active, v)
				}
			}
		}
	}
	slices.Sort(active)
	for _, c := range tf.Transit {
		v, err := node("transit node", c)
		if err != nil {
			return nil, err
		}
		if inSet[v] {
			return nil, fmt.Errorf("table file: transit node %s is also listed as active or twice", g.NodeName(v))
		}
		inSet[v] = true
		transit = append(transit, v)
	}
	// routes
	type rt struct {
		src, dst int
		dirs     []Dir
	}
	routes := make([]rt, len(tf.Routes))
	m := len(active)
	seen := make([]bool, m*m)
	var viol []Violation
	addV := func(v Violation) {
		if len(viol) < maxViolations {
			viol = append(viol, v)
		}
	}
	keep := routes[:0]
	for i, x := range tf.Routes {
		src, err := node(fmt.Sprintf("route %d source", i+1), x.Src)
		if err != nil {
			return nil, err
		}
		dst, err := node(fmt.Sprintf("route %d destination", i+1), x.Dst)
		if err != nil {
			return nil, err
		}
		dirs := make([]Dir, len(x.Dirs))
		for k, s := range x.Dirs {
			d, err := ParseDir(s)
			if err != nil {
				return nil, fmt.Errorf("table file: route %d: %v", i+1, err)
			}
			if d.Dim() >= n {
				return nil, fmt.Errorf("table file: route %d: %s is not a direction of a %d-dimensional torus", i+1, d, n)
			}
			dirs[k] = d
		}
		a, okA := slices.BinarySearch(active, src)
		b, okB := slices.BinarySearch(active, dst)
		switch {
		case !okA || !okB:
			addV(Violation{"not-active", src, dst, fmt.Sprintf("route %s → %s joins a node that is not active", g.NodeName(src), g.NodeName(dst)), 0})
			continue
		case a == b:
			addV(Violation{"arrival", src, dst, fmt.Sprintf("route from %s to itself", g.NodeName(src)), 0})
			continue
		case seen[a*m+b]:
			addV(Violation{"duplicate", src, dst, fmt.Sprintf("second route %s → %s", g.NodeName(src), g.NodeName(dst)), 0})
			continue
		}
		seen[a*m+b] = true
		keep = append(keep, rt{src, dst, dirs})
	}
	routes = keep
	for a := 0; a < m; a++ {
		for b := 0; b < m; b++ {
			if a != b && !seen[a*m+b] {
				addV(Violation{"missing", active[a], active[b], fmt.Sprintf("no route %s → %s", g.NodeName(active[a]), g.NodeName(active[b])), 0})
			}
		}
	}
	for _, v := range active {
		if g.NodeFailed(v) {
			addV(Violation{"failed-link", v, -1, fmt.Sprintf("active node %s is failed", g.NodeName(v)), 0})
		}
	}
	set := append(append([]int(nil), active...), transit...)
	rep := r.verifyRoutes(len(routes), func(i int, buf []Dir) (int, int, []Dir) {
		return routes[i].src, routes[i].dst, append(buf, routes[i].dirs...)
	}, set, inSet, 0)
	rep.Violations = append(viol, rep.Violations...)
	// π_perfect is defined over minimal routes: recompute the minimal
	// lengths when the set is reachable.
	minSum := rep.SumLength
	if ok, _, err := r.Check(active, transit); err == nil && ok && m > 1 {
		if s, err := r.minimalSum(active, transit, 0); err == nil {
			minSum = s
		}
	}
	rep.Stats.PiPerfect, rep.Stats.BalanceFactor = piFigures(minSum, rep.Channels, rep.Stats.PiMax)
	if tf.Stats != nil && !statsClose(*tf.Stats, rep.Stats) {
		rep.Violations = append(rep.Violations, Violation{"stats", -1, -1, fmt.Sprintf("the file claims %+v, the routes give %+v", *tf.Stats, rep.Stats), 0})
	}
	if rep.Cycle != nil {
		rep.Violations = append(rep.Violations, Violation{"deadlock", -1, -1, "channel dependency cycle with a turn: " + r.CycleString(rep.Cycle), 0})
	} else if !tf.DeadlockFree && len(tf.Routes) > 0 {
		rep.Violations = append(rep.Violations, Violation{"stats", -1, -1, "the file says deadlock_free is false, but the dependencies have no cycle with a turn", 0})
	}
	return rep, nil
}

// ---- per-node routing tables (text) ----

// WriteNodeTables writes the table as per-node routing tables in the text
// format of docs/routing.md:
//
//	# icn node tables v1
//	torus 4x4x2
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
	parts := make([]string, len(g.Dims()))
	for i, d := range g.Dims() {
		parts[i] = strconv.Itoa(d)
	}
	fmt.Fprintf(bw, "# icn node tables v1: one section per source node, one line per destination\n")
	fmt.Fprintf(bw, "torus %s\nrule %s\norder %s\n", strings.Join(parts, "x"), tb.Rule.Kind, tb.r.order)
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
	Dims   []int
	Rule   Rule
	Routes []Route // Src/Dst are node ids of the torus (mixed radix, X fastest)
}

// ReadNodeTables parses the text format written by WriteNodeTables.
func ReadNodeTables(r io.Reader) (*NodeTables, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	nt := &NodeTables{}
	var g *topology.Graph
	src := -1
	line := 0
	var orderText string
	haveRule := false
	coord := func(s string) (int, error) {
		vs, err := g.ParseNodes(s)
		if err != nil || len(vs) != 1 || strings.ContainsAny(s, "*-,") {
			return -1, fmt.Errorf("line %d: %q is not the coordinates of one node", line, s)
		}
		return vs[0], nil
	}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		f := strings.Fields(text)
		switch {
		case f[0] == "torus":
			if g != nil || len(f) != 2 {
				return nil, fmt.Errorf("line %d: want one \"torus D1xD2…\" line", line)
			}
			var err error
			if g, err = topology.Parse("torus:" + f[1]); err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			if len(g.Dims()) > MaxDims {
				return nil, fmt.Errorf("line %d: at most %d dimensions", line, MaxDims)
			}
			nt.Dims = g.Dims()
		case f[0] == "rule":
			if len(f) != 2 || haveRule {
				return nil, fmt.Errorf("line %d: want one \"rule NAME\" line", line)
			}
			var err error
			if nt.Rule, err = ParseRule(f[1]); err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			haveRule = true
		case f[0] == "order":
			if len(f) != 2 || orderText != "" {
				return nil, fmt.Errorf("line %d: want one \"order +X,…\" line", line)
			}
			orderText = f[1]
		case g == nil || !haveRule:
			return nil, fmt.Errorf("line %d: the \"torus\" and \"rule\" lines must come first", line)
		case f[0] == "node":
			if len(f) != 2 {
				return nil, fmt.Errorf("line %d: want \"node COORDS\"", line)
			}
			v, err := coord(f[1])
			if err != nil {
				return nil, err
			}
			src = v
		default:
			if src < 0 {
				return nil, fmt.Errorf("line %d: a route before the first \"node\" line", line)
			}
			dst, err := coord(f[0])
			if err != nil {
				return nil, err
			}
			rt := Route{Src: src, Dst: dst}
			for k, s := range f[1:] {
				if rest, ok := strings.CutPrefix(s, "fs:"); ok {
					if k != 0 {
						return nil, fmt.Errorf("line %d: fs: marks the first step only", line)
					}
					rt.FS, s = true, rest
				}
				if rest, ok := strings.CutPrefix(s, "ls:"); ok {
					if k != len(f)-2 {
						return nil, fmt.Errorf("line %d: ls: marks the last step only", line)
					}
					rt.LS, s = true, rest
				}
				d, err := ParseDir(s)
				if err != nil {
					return nil, fmt.Errorf("line %d: %v", line, err)
				}
				if d.Dim() >= len(nt.Dims) {
					return nil, fmt.Errorf("line %d: %s is not a direction of this torus", line, d)
				}
				rt.Dirs = append(rt.Dirs, d)
			}
			if len(rt.Dirs) == 0 {
				return nil, fmt.Errorf("line %d: route without steps", line)
			}
			nt.Routes = append(nt.Routes, rt)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if g == nil || !haveRule {
		return nil, fmt.Errorf("node tables: missing \"torus\" or \"rule\" line")
	}
	if orderText != "" {
		o, err := ParseOrder(orderText, len(nt.Dims))
		if err != nil {
			return nil, err
		}
		nt.Rule.Order = o
	}
	return nt, nil
}
