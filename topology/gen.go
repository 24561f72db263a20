package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// builtinFamilies are the spec families icn knows; each Build reads the
// text after "name:".
var builtinFamilies = []Family{
	{Name: "line", Usage: "line:N",
		Help:  "linear array of N nodes",
		Build: buildLine},
	{Name: "ring", Usage: "ring:N",
		Help:  "ring of N ≥ 2 nodes",
		Build: buildRing},
	{Name: "complete", Usage: "complete:N",
		Help:  "complete graph on N nodes",
		Build: buildComplete},
	{Name: "star", Usage: "star:N",
		Help:  "star of N nodes (node 0 is the centre)",
		Build: buildStar},
	{Name: "tree", Usage: "tree:N",
		Help:  "complete binary tree of N nodes (heap order)",
		Build: buildTree},
	{Name: "hypercube", Usage: "hypercube:D",
		Help:  "D-dimensional binary hypercube (2^D nodes)",
		Build: buildHypercube},
	{Name: "mesh", Usage: "mesh:AxBx…[:endpoints=E]",
		Help:  "n-dimensional mesh",
		Build: buildMesh},
	{Name: "torus", Usage: "torus:AxBx…[:mesh=L,L…][:rings=R1,R2,…][:steps=S1/S2/…][:endpoints=E]",
		Help:  "n-dimensional torus; mesh dimensions (letters X Y Z W V U, no wrap link), parallel rings per dimension, multiring dimensions, end nodes per switch",
		Build: buildTorus},
	{Name: "multiring", Usage: "multiring:N:s1,s2,…",
		Help:  "circulant graph: duplex rings ±s on N nodes",
		Build: buildMultiring},
	{Name: "fattree", Usage: "fattree:k=K,n=N | fattree:m=M,n=N",
		Help:  "k-ary n-tree (2k-port switches) or m-port n-tree",
		Build: buildFattree},
	{Name: "xgft", Usage: "xgft:m=M1.M2…,w=W1.W2…",
		Help:  "extended generalized fat tree XGFT(h; m; w)",
		Build: buildXgft},
	{Name: "pft", Usage: "pft:radix=R,levels=L,endpoints=E[,up=U1.U2…]",
		Help:  "pruned/tapered fat tree from switch radix, levels, end nodes and up-links per switch level",
		Build: buildPft},
	{Name: "bluelight", Usage: "bluelight",
		Help:  "pruned fat tree shaped like Sunway BlueLight: 8 704 end nodes, 8 shortest leaf-to-top paths",
		Build: buildBluelight},
	{Name: "taihulight", Usage: "taihulight",
		Help:  "pruned fat tree shaped like Sunway TaihuLight: 40 960 end nodes, 2 shortest leaf-to-top paths",
		Build: buildTaihulight},
	{Name: "director", Usage: "director:pods=P,leaves=L,ends=E,l2=M,cables=C | director:bluelight | director:taihulight",
		Help:  "3-level pruned fat tree under one director switch; bluelight = 34,8,32,4,2 (8 leaf-to-top paths), taihulight = 160,8,32,2,1 (2 paths)",
		Build: buildDirector},
	{Name: "dragonfly", Usage: "dragonfly:a=A,p=P,h=H[,g=G]",
		Help:  "dragonfly: A switches per group, P end nodes and H global links per switch",
		Build: buildDragonfly},
	{Name: "twolevel", Usage: "twolevel:groups=G,size=K",
		Help:  "two-level complete graph (IBM PERCS style): complete groups of K nodes, one cable between every pair of groups",
		Build: buildTwolevel},
}

func init() {
	for _, f := range builtinFamilies {
		RegisterFamily(f.Name, f.Usage, f.Help, f.Build)
	}
}

func buildLine(a string) (*Graph, error) {
	n, err := parseInt(a, "N", 1, MaxSpecNodes)
	if err != nil {
		return nil, err
	}
	return Grid([]int{n}, false, GridOpts{})
}

func buildRing(a string) (*Graph, error) {
	n, err := parseInt(a, "N", 2, MaxSpecNodes)
	if err != nil {
		return nil, err
	}
	return Grid([]int{n}, true, GridOpts{})
}

func buildComplete(a string) (*Graph, error) {
	n, err := parseInt(a, "N", 1, 4096)
	if err != nil {
		return nil, err
	}
	return Complete(n)
}

func buildStar(a string) (*Graph, error) {
	n, err := parseInt(a, "N", 2, MaxSpecNodes)
	if err != nil {
		return nil, err
	}
	return Star(n)
}

func buildTree(a string) (*Graph, error) {
	n, err := parseInt(a, "N", 1, MaxSpecNodes)
	if err != nil {
		return nil, err
	}
	return BinaryTree(n)
}

func buildHypercube(a string) (*Graph, error) {
	d, err := parseInt(a, "D", 0, 21)
	if err != nil {
		return nil, err
	}
	return Hypercube(d)
}

func buildMesh(a string) (*Graph, error) {
	return parseGrid(a, false)
}

func buildTorus(a string) (*Graph, error) {
	return parseGrid(a, true)
}

func buildMultiring(a string) (*Graph, error) {
	ns, ss, ok := strings.Cut(a, ":")
	if !ok {
		return nil, fmt.Errorf("missing ring steps")
	}
	n, err := parseInt(ns, "N", 2, MaxSpecNodes)
	if err != nil {
		return nil, err
	}
	steps, err := parseSteps(ss, n)
	if err != nil {
		return nil, err
	}
	return Multiring(n, steps)
}

func buildFattree(a string) (*Graph, error) {
	p, err := kv(a, "k", "m", "n")
	if err != nil {
		return nil, err
	}
	if err := need(p, "n"); err != nil {
		return nil, err
	}
	n, err := parseInt(p["n"], "n", 1, 16)
	if err != nil {
		return nil, err
	}
	_, hasK := p["k"]
	_, hasM := p["m"]
	switch {
	case hasK == hasM:
		return nil, fmt.Errorf("give exactly one of k (k-ary n-tree) or m (m-port n-tree)")
	case hasK:
		k, err := parseInt(p["k"], "k", 1, 1024)
		if err != nil {
			return nil, err
		}
		return KaryNTree(k, n)
	default:
		m, err := parseInt(p["m"], "m", 2, 2048)
		if err != nil {
			return nil, err
		}
		if m%2 != 0 {
			return nil, fmt.Errorf("m=%d must be even", m)
		}
		return MPortNTree(m, n)
	}
}

func buildXgft(a string) (*Graph, error) {
	p, err := kv(a, "m", "w")
	if err != nil {
		return nil, err
	}
	if err := need(p, "m", "w"); err != nil {
		return nil, err
	}
	m, err := intList(p["m"], "m", 1, 4096)
	if err != nil {
		return nil, err
	}
	w, err := intList(p["w"], "w", 1, 4096)
	if err != nil {
		return nil, err
	}
	return XGFT(m, w)
}

func buildPft(a string) (*Graph, error) {
	p, err := kv(a, "radix", "levels", "endpoints", "up")
	if err != nil {
		return nil, err
	}
	if err := need(p, "radix", "levels", "endpoints"); err != nil {
		return nil, err
	}
	r, err := parseInt(p["radix"], "radix", 2, 4096)
	if err != nil {
		return nil, err
	}
	l, err := parseInt(p["levels"], "levels", 1, 8)
	if err != nil {
		return nil, err
	}
	e, err := parseInt(p["endpoints"], "endpoints", 1, MaxSpecNodes)
	if err != nil {
		return nil, err
	}
	var up []int
	if s, ok := p["up"]; ok {
		if up, err = intList(s, "up", 1, r-1); err != nil {
			return nil, err
		}
	}
	return PrunedFatTree(r, l, e, up)
}

func buildBluelight(a string) (*Graph, error) {
	if a != "" {
		return nil, fmt.Errorf("takes no parameters")
	}
	return XGFT([]int{32, 8, 34}, []int{1, 4, 2})
}

func buildTaihulight(a string) (*Graph, error) {
	if a != "" {
		return nil, fmt.Errorf("takes no parameters")
	}
	return XGFT([]int{32, 8, 160}, []int{1, 2, 1})
}

func buildDirector(s string) (*Graph, error) {
	switch s {
	case "bluelight":
		return Director(34, 8, 32, 4, 2)
	case "taihulight":
		return Director(160, 8, 32, 2, 1)
	}
	p, err := kv(s, "pods", "leaves", "ends", "l2", "cables")
	if err != nil {
		return nil, err
	}
	if err := need(p, "pods", "leaves", "ends", "l2", "cables"); err != nil {
		return nil, err
	}
	var v [5]int
	for i, k := range []string{"pods", "leaves", "ends", "l2", "cables"} {
		if v[i], err = parseInt(p[k], k, 1, 1<<16); err != nil {
			return nil, err
		}
	}
	return Director(v[0], v[1], v[2], v[3], v[4])
}

func buildDragonfly(s string) (*Graph, error) {
	p, err := kv(s, "a", "p", "h", "g")
	if err != nil {
		return nil, err
	}
	if err := need(p, "a", "p", "h"); err != nil {
		return nil, err
	}
	a, err := parseInt(p["a"], "a", 1, 1024)
	if err != nil {
		return nil, err
	}
	pp, err := parseInt(p["p"], "p", 0, 1024)
	if err != nil {
		return nil, err
	}
	h, err := parseInt(p["h"], "h", 0, 1024)
	if err != nil {
		return nil, err
	}
	g := a*h + 1
	if gs, ok := p["g"]; ok {
		if g, err = parseInt(gs, "g", 1, a*h+1); err != nil {
			return nil, err
		}
	}
	return Dragonfly(a, pp, h, g)
}

func buildTwolevel(s string) (*Graph, error) {
	p, err := kv(s, "groups", "size")
	if err != nil {
		return nil, err
	}
	if err := need(p, "groups", "size"); err != nil {
		return nil, err
	}
	g, err := parseInt(p["groups"], "groups", 1, 4096)
	if err != nil {
		return nil, err
	}
	k, err := parseInt(p["size"], "size", 1, 1024)
	if err != nil {
		return nil, err
	}
	return TwoLevel(g, k)
}

// parseSteps parses multiring steps "1,3" or "±1,±3" for N nodes.
func parseSteps(s string, n int) ([]int, error) {
	var steps []int
	seen := map[int]int{}
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '.' }) {
		t := strings.TrimSpace(tok)
		t = strings.TrimPrefix(t, "±")
		t = strings.TrimPrefix(t, "+-")
		t = strings.TrimPrefix(t, "+")
		v, err := strconv.Atoi(t)
		if err != nil {
			return nil, fmt.Errorf("ring step %q is not a whole number", tok)
		}
		v = ((v % n) + n) % n
		if v == 0 {
			return nil, fmt.Errorf("ring step %s is 0 or a multiple of N=%d", tok, n)
		}
		canon := min(v, n-v)
		if prev, dup := seen[canon]; dup {
			return nil, fmt.Errorf("ring steps %d and %s give the same ring on N=%d", prev, tok, n)
		}
		seen[canon] = v
		steps = append(steps, v)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no ring steps")
	}
	return steps, nil
}

func parseGrid(a string, wrap bool) (*Graph, error) {
	parts := strings.SplitN(a, ":", 2)
	lo := 1
	if wrap {
		lo = 2
	}
	dims, err := parseDims(parts[0], lo)
	if err != nil {
		return nil, err
	}
	if len(dims) > 6 && wrap {
		return nil, fmt.Errorf("%d dimensions: at most 6 are supported", len(dims))
	}
	var o GridOpts
	if len(parts) == 2 {
		allowed := []string{"endpoints"}
		if wrap {
			allowed = append(allowed, "mesh", "rings", "steps")
		}
		p, err := kv(parts[1], allowed...)
		if err != nil {
			return nil, err
		}
		if o, err = gridOpts(p, dims); err != nil {
			return nil, err
		}
	}
	return Grid(dims, wrap, o)
}

// gridOpts reads the options of a torus or mesh spec for the given sizes.
func gridOpts(p map[string]string, dims []int) (GridOpts, error) {
	var o GridOpts
	var err error
	if s, ok := p["endpoints"]; ok {
		if o.Endpoints, err = parseInt(s, "endpoints", 0, 1024); err != nil {
			return o, err
		}
	}
	if s, ok := p["mesh"]; ok {
		if o.Mesh, err = parseMeshDims(s, len(dims)); err != nil {
			return o, err
		}
	}
	if s, ok := p["rings"]; ok {
		if o.Rings, err = intList(s, "rings", 1, 64); err != nil {
			return o, err
		}
		if len(o.Rings) != len(dims) {
			return o, fmt.Errorf("rings lists %d values for %d dimensions", len(o.Rings), len(dims))
		}
	}
	if s, ok := p["steps"]; ok {
		if _, both := p["rings"]; both {
			return o, fmt.Errorf("give rings or steps, not both")
		}
		per := strings.Split(s, "/")
		if len(per) != len(dims) {
			return o, fmt.Errorf("steps lists %d dimensions (separate them with '/') for %d dimensions", len(per), len(dims))
		}
		for i, ps := range per {
			st, err := parseSteps(ps, dims[i])
			if err != nil {
				return o, fmt.Errorf("dimension %s: %v", DimName(i), err)
			}
			if o.Mesh != nil && o.Mesh[i] && (len(st) != 1 || st[0] != 1) {
				return o, fmt.Errorf("dimension %s is a mesh: steps other than 1 apply to ring dimensions only", DimName(i))
			}
			o.Steps = append(o.Steps, st)
		}
	}
	return o, nil
}

// parseMeshDims parses the dimension letters of "mesh=W,U" for a torus
// of n dimensions into per-dimension flags.
func parseMeshDims(s string, n int) ([]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("mesh: empty list (name dimensions by letter: X, Y, Z, W, V, U)")
	}
	mesh := make([]bool, n)
	for _, tok := range strings.Split(s, ",") {
		l := strings.TrimSpace(tok)
		i := -1
		if len(l) == 1 {
			i = strings.IndexByte(dimLetters, strings.ToUpper(l)[0])
		}
		switch {
		case l == "":
			return nil, fmt.Errorf("mesh: empty item in %q", s)
		case i < 0:
			return nil, fmt.Errorf("mesh: unknown dimension %q (want letters X, Y, Z, W, V, U)", l)
		case i >= n:
			return nil, fmt.Errorf("mesh: the torus has %d dimensions (%s), no dimension %s", n, dimList(n), DimName(i))
		case mesh[i]:
			return nil, fmt.Errorf("mesh: dimension %s named twice", DimName(i))
		}
		mesh[i] = true
	}
	return mesh, nil
}

// dimList names the first n dimensions: "X, Y, Z".
func dimList(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = DimName(i)
	}
	return strings.Join(names, ", ")
}

// MeshLetters returns the letters of the dimensions that do not wrap
// ("W,U"), or "" when every dimension wraps: the value of a torus spec's
// mesh= option.
func MeshLetters(wrap []bool) string {
	var l []string
	for i, w := range wrap {
		if !w {
			l = append(l, DimName(i))
		}
	}
	return strings.Join(l, ",")
}

// TorusSpec returns the spec of the plain torus of the given sizes whose
// dimensions wrap as wrap says: "torus:4x4x2", "torus:4x4x2:mesh=Z".
func TorusSpec(dims []int, wrap []bool) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = strconv.Itoa(d)
	}
	spec := "torus:" + strings.Join(s, "x")
	if m := MeshLetters(wrap); m != "" {
		spec += ":mesh=" + m
	}
	return spec
}

// GridOpts are the options of Grid.
type GridOpts struct {
	Rings     []int   // parallel duplex rings per dimension (default 1)
	Steps     [][]int // per dimension multiring steps (default {1}); excludes Rings
	Endpoints int     // end nodes per switch; 0 = direct network
	// Mesh, if set, lists per dimension whether that dimension of a torus
	// is a mesh (no wrap link); a mesh (wrap false) ignores it.
	Mesh []bool
}

// Grid builds an n-dimensional torus (wrap), a torus whose dimensions
// o.Mesh names are meshes, or a mesh. Node ids are
// mixed-radix coordinates with X fastest. In a direct network (Endpoints =
// 0) nodes are endpoints named by coordinates ("1.0.3"); otherwise they are
// switches and each carries Endpoints end nodes named "1.0.3/0", "1.0.3/1", …
// with ids after all switches.
//
// Ports: dimension i, ring copy k (or step k) uses port base_i+2k+1 for the
// positive direction and base_i+2k+2 for the negative one, base_i being the
// ports of the dimensions before i; end nodes follow. In a ring dimension
// every node has both a +d and a −d link per ring even when the size is 2
// (the two neighbours coincide); a mesh dimension has no wrap link, so its
// two nodes of a size-2 dimension share one link. Ports exist for every
// direction at every node, so a port means the same direction everywhere.
func Grid(dims []int, wrap bool, o GridOpts) (*Graph, error) {
	nd := len(dims)
	if o.Mesh != nil && len(o.Mesh) != nd {
		return nil, fmt.Errorf("mesh lists %d flags for %d dimensions", len(o.Mesh), nd)
	}
	wraps := make([]bool, nd)
	allWrap := true
	for i := range wraps {
		wraps[i] = wrap && (o.Mesh == nil || !o.Mesh[i])
		allWrap = allWrap && wraps[i]
	}
	total := 1
	for _, d := range dims {
		total *= d
	}
	if total*(1+o.Endpoints) > MaxSpecNodes {
		return nil, fmt.Errorf("more than %d nodes", MaxSpecNodes)
	}
	copies := ringCopies(dims, o)
	base := make([]int, nd+1) // first port of each dimension's rings
	for i := range dims {
		base[i+1] = base[i] + 2*len(copies[i])
	}
	kind := Endpoint
	if o.Endpoints > 0 {
		kind = Switch
	}
	b := NewBuilder("")
	addGridNodes(b, dims, total, wraps, kind)
	connectRings(b, dims, wraps, copies, base)
	addGridEndpoints(b, dims, o.Endpoints, base[nd])
	if o.Endpoints == 0 {
		b.SetShape(gridShape(dims, wraps, o))
	}
	for v := 0; v < total; v++ {
		// Ring ports exist even where a mesh has no neighbour, so port
		// numbers mean the same direction on every node.
		if kind == Switch || !allWrap {
			b.nport[v] = uint16(base[nd] + o.Endpoints)
		}
	}
	return b.Build()
}

// ringCopies lists, per dimension, the step of each ring copy: o.Steps,
// o.Rings rings of step 1, or one ring of step 1.
func ringCopies(dims []int, o GridOpts) [][]int {
	copies := make([][]int, len(dims))
	for i := range dims {
		switch {
		case o.Steps != nil:
			copies[i] = o.Steps[i]
		case o.Rings != nil:
			for k := 0; k < o.Rings[i]; k++ {
				copies[i] = append(copies[i], 1)
			}
		default:
			copies[i] = []int{1}
		}
	}
	return copies
}

// addGridNodes adds one node of the given kind per coordinate, in
// encoding order.
func addGridNodes(b *Builder, dims []int, total int, wrap []bool, kind Kind) {
	b.SetDims(dims, wrap)
	c := make([]int, len(dims))
	for v := 0; v < total; v++ {
		decode(v, dims, c)
		b.AddNode(kind, CoordString(c), NodeOpts{Level: NoLevel, Group: NoGroup, Coord: c})
	}
}

// connectRings links every node to its neighbour s further along each
// dimension for every ring copy of step s (a mesh dimension drops the
// wrapping links); copy k of dimension i uses ports base[i]+2k+1 (out)
// and base[i]+2k+2 (in).
func connectRings(b *Builder, dims []int, wrap []bool, copies [][]int, base []int) {
	c := make([]int, len(dims))
	nb := make([]int, len(dims))
	for v := range b.kinds {
		decode(v, dims, c)
		for i := range dims {
			for k, s := range copies[i] {
				if !wrap[i] && c[i]+s >= dims[i] {
					continue
				}
				copy(nb, c)
				nb[i] = (c[i] + s) % dims[i]
				w := encode(nb, dims)
				b.ConnectPorts(v, base[i]+2*k+1, w, base[i]+2*k+2, LinkOpts{Dim: i})
			}
		}
	}
}

// addGridEndpoints hangs e end nodes off every switch, on the ports
// after the ring ports (firstPort+1…).
func addGridEndpoints(b *Builder, dims []int, e, firstPort int) {
	total := len(b.kinds)
	c := make([]int, len(dims))
	for v := 0; v < total; v++ {
		decode(v, dims, c)
		for j := 0; j < e; j++ {
			ep := b.AddNode(Endpoint, CoordString(c)+"/"+strconv.Itoa(j), NodeOpts{Level: NoLevel, Group: NoGroup, Coord: c})
			b.ConnectPorts(v, firstPort+j+1, ep, 1, LinkOpts{Dim: -1, Class: Access})
		}
	}
}

// gridShape describes a direct grid: "torus" when every dimension wraps,
// "mesh" when none does, "mixed" otherwise (plain instances only: one
// ring of step 1 per dimension). It is vertex-transitive when every mesh
// dimension has at most 2 nodes: rings, single links and single nodes
// are, and so is their Cartesian product.
func gridShape(dims []int, wrap []bool, o GridOpts) Shape {
	sh := Shape{VertexTransitive: true}
	rings, lines := 0, 0
	for i, w := range wrap {
		if w {
			rings++
		} else {
			lines++
			if dims[i] > 2 {
				sh.VertexTransitive = false
			}
		}
	}
	if o.Steps == nil && o.Rings == nil {
		switch {
		case lines == 0:
			sh.Family = "torus"
		case rings == 0:
			sh.Family = "mesh"
		default:
			sh.Family = "mixed"
		}
	}
	return sh
}

func decode(v int, dims, c []int) {
	for i, d := range dims {
		c[i] = v % d
		v /= d
	}
}

func encode(c, dims []int) int {
	v := 0
	for i := len(dims) - 1; i >= 0; i-- {
		v = v*dims[i] + c[i]
	}
	return v
}

// Hypercube builds the d-dimensional binary hypercube as the mesh 2x2x…x2:
// node id bit i is coordinate i.
func Hypercube(d int) (*Graph, error) {
	if d == 0 {
		return Grid([]int{1}, false, GridOpts{})
	}
	dims := make([]int, d)
	for i := range dims {
		dims[i] = 2
	}
	g, err := Grid(dims, false, GridOpts{})
	if err != nil {
		return nil, err
	}
	// A hypercube has one link per dimension: ports 1..d, not 2d.
	b := NewBuilder("")
	b.SetDims(dims, g.wrap)
	for v := 0; v < g.NumNodes(); v++ {
		b.AddNode(Endpoint, g.names[v], NodeOpts{Level: NoLevel, Group: NoGroup, Coord: g.Coord(v)})
	}
	for v := 0; v < g.NumNodes(); v++ {
		for i := 0; i < d; i++ {
			if v&(1<<i) == 0 {
				b.ConnectPorts(v, i+1, v|1<<i, i+1, LinkOpts{Dim: i})
			}
		}
	}
	b.SetShape(Shape{Family: "hypercube", VertexTransitive: true})
	return b.Build()
}

// Complete builds the complete graph K_n.
func Complete(n int) (*Graph, error) {
	b := NewBuilder("")
	for v := 0; v < n; v++ {
		b.AddNode(Endpoint, strconv.Itoa(v), NodeOpts{Level: NoLevel, Group: NoGroup})
	}
	for v := 0; v < n; v++ {
		for w := v + 1; w < n; w++ {
			b.ConnectPorts(v, w, w, v+1, Plain) // port of v towards w is w (1-based, skipping self)
		}
	}
	b.SetShape(Shape{Family: "complete", VertexTransitive: true})
	return b.Build()
}

// Star builds a star of n nodes; node 0 is the centre.
func Star(n int) (*Graph, error) {
	b := NewBuilder("")
	for v := 0; v < n; v++ {
		b.AddNode(Endpoint, strconv.Itoa(v), NodeOpts{Level: NoLevel, Group: NoGroup})
	}
	for v := 1; v < n; v++ {
		b.ConnectPorts(0, v, v, 1, Plain)
	}
	b.SetShape(Shape{Family: "star", VertexTransitive: n <= 2})
	return b.Build()
}

// BinaryTree builds a complete binary tree of n nodes in heap order (node i
// has children 2i+1 and 2i+2); port 1 leads to the parent.
func BinaryTree(n int) (*Graph, error) {
	b := NewBuilder("")
	for v := 0; v < n; v++ {
		b.AddNode(Endpoint, strconv.Itoa(v), NodeOpts{Level: NoLevel, Group: NoGroup})
	}
	for v := 1; v < n; v++ {
		parent := (v - 1) / 2
		b.ConnectPorts(parent, 2+(v-1)%2, v, 1, Plain)
	}
	b.SetShape(Shape{Family: "tree", VertexTransitive: n <= 2})
	return b.Build()
}

// Multiring builds the circulant graph on n nodes with duplex rings of the
// given steps: ring k joins i and i+steps[k] (mod n) for every i, through
// port 2k+1 (the +s direction) of i and port 2k+2 of i+s. Link Dim is the
// ring index k.
func Multiring(n int, steps []int) (*Graph, error) {
	b := NewBuilder("")
	for v := 0; v < n; v++ {
		b.AddNode(Endpoint, strconv.Itoa(v), NodeOpts{Level: NoLevel, Group: NoGroup})
	}
	for k, s := range steps {
		for v := 0; v < n; v++ {
			b.ConnectPorts(v, 2*k+1, (v+s)%n, 2*k+2, LinkOpts{Dim: k})
		}
	}
	b.SetShape(Shape{VertexTransitive: true})
	return b.Build()
}

// KaryNTree builds Petrini's k-ary n-tree: k^n end nodes, n levels of
// k^(n-1) switches with 2k ports (k down, k up; the top level uses only k).
func KaryNTree(k, n int) (*Graph, error) {
	m := make([]int, n)
	w := make([]int, n)
	for i := range m {
		m[i], w[i] = k, k
	}
	w[0] = 1
	return XGFT(m, w)
}

// MPortNTree builds Lin's m-port n-tree: 2(m/2)^n end nodes; every switch
// has m ports, the top level uses all of them downwards. m=40, n=3 gives the
// 16 000-node 3-level fat tree of 40-port switches.
func MPortNTree(m, n int) (*Graph, error) {
	ms := make([]int, n)
	ws := make([]int, n)
	for i := range ms {
		ms[i], ws[i] = m/2, m/2
	}
	ms[n-1] = m
	ws[0] = 1
	return XGFT(ms, ws)
}

// PrunedFatTree builds a fat tree of `levels` switch levels from switches
// of the given radix. up[i] is the number of up-links of a level-(i+1)
// switch (default radix/2: a full tree); the rest of its ports go down. The
// top level uses all ports downward. endpoints must be a multiple of the
// number of end nodes under one top-level subtree (the pod).
func PrunedFatTree(radix, levels, endpoints int, up []int) (*Graph, error) {
	if up == nil {
		for i := 1; i < levels; i++ {
			up = append(up, radix/2)
		}
	}
	if len(up) != levels-1 {
		return nil, fmt.Errorf("up lists %d values; a %d-level tree needs %d (one per non-top level)", len(up), levels, levels-1)
	}
	m := make([]int, levels)
	w := make([]int, levels)
	w[0] = 1
	pod := 1
	for i := 0; i < levels-1; i++ {
		m[i] = radix - up[i]
		if m[i] < 1 {
			return nil, fmt.Errorf("level %d: %d up-links leave no down port of %d", i+1, up[i], radix)
		}
		w[i+1] = up[i]
		pod *= m[i]
	}
	if endpoints%pod != 0 {
		return nil, fmt.Errorf("%d end nodes is not a multiple of %d (end nodes per top-level subtree)", endpoints, pod)
	}
	m[levels-1] = endpoints / pod
	if m[levels-1] > radix {
		return nil, fmt.Errorf("%d end nodes need %d subtrees under each top switch, more than radix %d", endpoints, m[levels-1], radix)
	}
	return XGFT(m, w)
}

// XGFT builds the extended generalized fat tree XGFT(h; m1..mh; w1..wh)
// (Öhring et al.): level-0 nodes are end nodes; a level-i switch has m_i
// children and every level-(i−1) node has w_i parents. End nodes come first
// (ids 0..Πm−1, named "h<i>"), then switches level by level ("L<level>-<i>").
// A level-i switch uses ports 1..m_i downward (child digit x_i → port
// x_i+1) and m_i+1..m_i+w_(i+1) upward; an end node uses ports 1..w_1.
func XGFT(m, w []int) (*Graph, error) {
	h := len(m)
	if h == 0 || len(w) != h {
		return nil, fmt.Errorf("m and w must list the same number (≥1) of levels, got %d and %d", len(m), len(w))
	}
	count := make([]int, h+1) // nodes per level
	W := make([]int, h+1)     // Π_{j≤i} w_j
	W[0] = 1
	for i := 1; i <= h; i++ {
		W[i] = W[i-1] * w[i-1]
		if W[i] > MaxSpecNodes {
			return nil, fmt.Errorf("too many switches")
		}
	}
	total := 0
	for i := 0; i <= h; i++ {
		c := W[i]
		for j := i; j < h; j++ {
			c *= m[j]
			if c > MaxSpecNodes {
				return nil, fmt.Errorf("more than %d nodes", MaxSpecNodes)
			}
		}
		count[i] = c
		total += c
	}
	if total > MaxSpecNodes {
		return nil, fmt.Errorf("more than %d nodes", MaxSpecNodes)
	}
	b := NewBuilder("")
	first := make([]int, h+1)
	for i := 0; i <= h; i++ {
		first[i] = b.NumNodes()
		for j := 0; j < count[i]; j++ {
			if i == 0 {
				b.AddNode(Endpoint, "h"+strconv.Itoa(j), NodeOpts{Level: 0, Group: NoGroup})
			} else {
				up := 0
				if i < h {
					up = w[i]
				}
				b.AddNode(Switch, fmt.Sprintf("L%d-%d", i, j), NodeOpts{Level: i, Group: NoGroup, Ports: m[i-1] + up})
			}
		}
	}
	for i := 1; i <= h; i++ {
		mi := m[i-1]
		childDown := 0
		if i > 1 {
			childDown = m[i-2]
		}
		for c := 0; c < count[i-1]; c++ {
			yc := c % W[i-1]
			xc := c / W[i-1]
			xi := xc % mi
			rest := xc / mi
			for y := 0; y < w[i-1]; y++ {
				parent := yc + W[i-1]*y + W[i]*rest
				b.ConnectPorts(first[i-1]+c, childDown+y+1, first[i]+parent, xi+1, Plain)
			}
		}
	}
	return b.Build()
}

// Dragonfly builds a dragonfly of g groups, each of a switches joined as a
// complete graph, each switch with p end nodes and h global links. With the
// maximum g = a·h+1 every pair of groups shares exactly one global link;
// for smaller g, (a·h)/(g−1) parallel links. Global link k of group i
// (owned by switch k/h) goes to group i+(k mod (g−1))+1 (mod g): the
// balanced "consecutive" arrangement. End nodes come first ("g<i>-s<j>-h<k>"),
// then switches ("g<i>-s<j>"). Switch ports: 1..p end nodes, then a−1 local,
// then h global.
func Dragonfly(a, p, h, g int) (*Graph, error) {
	if g < 1 {
		return nil, fmt.Errorf("need at least one group")
	}
	if g > 1 && (a*h)%(g-1) != 0 {
		return nil, fmt.Errorf("a·h=%d global links per group cannot be spread evenly over %d other groups", a*h, g-1)
	}
	if g == 1 && h > 0 {
		return nil, fmt.Errorf("one group leaves the %d global links per switch unconnected", h)
	}
	if g*a*(p+1) > MaxSpecNodes {
		return nil, fmt.Errorf("more than %d nodes", MaxSpecNodes)
	}
	b := NewBuilder("")
	sw := func(grp, s int) int { return g*a*p + grp*a + s }
	for grp := 0; grp < g; grp++ {
		for s := 0; s < a; s++ {
			for k := 0; k < p; k++ {
				b.AddNode(Endpoint, fmt.Sprintf("g%d-s%d-h%d", grp, s, k), NodeOpts{Level: 0, Group: grp})
			}
		}
	}
	for grp := 0; grp < g; grp++ {
		for s := 0; s < a; s++ {
			b.AddNode(Switch, fmt.Sprintf("g%d-s%d", grp, s), NodeOpts{Level: 1, Group: grp, Ports: p + a - 1 + h})
		}
	}
	for grp := 0; grp < g; grp++ {
		for s := 0; s < a; s++ {
			for k := 0; k < p; k++ {
				b.ConnectPorts(sw(grp, s), k+1, (grp*a+s)*p+k, 1, LinkOpts{Dim: -1, Class: Access})
			}
		}
	}
	localPort := func(s, t int) int { // port of switch s towards switch t in its group
		if t < s {
			return p + t + 1
		}
		return p + t
	}
	for grp := 0; grp < g; grp++ {
		for s := 0; s < a; s++ {
			for t := s + 1; t < a; t++ {
				b.ConnectPorts(sw(grp, s), localPort(s, t), sw(grp, t), localPort(t, s), LinkOpts{Dim: -1, Class: Local})
			}
		}
	}
	if g > 1 {
		for grp := 0; grp < g; grp++ {
			for k := 0; k < a*h; k++ {
				off := k % (g - 1)
				copyIdx := k / (g - 1)
				peer := (grp + off + 1) % g
				if peer < grp {
					continue // created from the other side
				}
				k2 := (g - 2 - off) + copyIdx*(g-1)
				b.ConnectPorts(sw(grp, k/h), p+a-1+k%h+1, sw(peer, k2/h), p+a-1+k2%h+1, LinkOpts{Dim: -1, Class: Global})
			}
		}
	}
	return b.Build()
}

// TwoLevel builds a two-level complete graph in the style of IBM PERCS:
// groups of k nodes joined as complete graphs (local links), and one global
// link between every pair of groups, spread round-robin over the nodes of
// each group. Nodes are named "g<i>-n<j>".
func TwoLevel(groups, k int) (*Graph, error) {
	if groups*k > MaxSpecNodes {
		return nil, fmt.Errorf("more than %d nodes", MaxSpecNodes)
	}
	b := NewBuilder("")
	for gi := 0; gi < groups; gi++ {
		for j := 0; j < k; j++ {
			b.AddNode(Endpoint, fmt.Sprintf("g%d-n%d", gi, j), NodeOpts{Level: NoLevel, Group: gi})
		}
	}
	for gi := 0; gi < groups; gi++ {
		for x := 0; x < k; x++ {
			for y := x + 1; y < k; y++ {
				b.Connect(gi*k+x, gi*k+y, LinkOpts{Dim: -1, Class: Local})
			}
		}
	}
	for gi := 0; gi < groups; gi++ {
		for gj := gi + 1; gj < groups; gj++ {
			oi := gj - gi - 1            // index of gj among gi's peers
			oj := groups - 1 - (gj - gi) // index of gi among gj's peers, walking forward
			b.Connect(gi*k+oi%k, gj*k+oj%k, LinkOpts{Dim: -1, Class: Global})
		}
	}
	return b.Build()
}

// Director builds a 3-level pruned fat tree whose top level is one large
// (director) switch: pods of `leaves` leaf switches with `ends` end nodes
// each; every leaf has one cable to each of the pod's `l2` middle switches,
// and every middle switch `cables` parallel cables to the top. A leaf then
// has l2·cables shortest paths to the top switch, the redundancy the seed
// describes for Sunway BlueLight (8 paths: l2=4, cables=2) and TaihuLight
// (2 paths: l2=2, cables=1). In the XGFT models of the topology package
// every top switch is reached by exactly one path, so only root rotation
// has a choice there; here only link rotation has.
//
// Nodes are named like the XGFT generator's: end nodes "h<i>", leaves
// "L1-<i>", middle switches "L2-<i>", the top "L3-0".
func Director(pods, leaves, ends, l2, cables int) (*Graph, error) {
	for _, p := range []struct {
		v    int
		name string
	}{{pods, "pods"}, {leaves, "leaves"}, {ends, "ends"}, {l2, "l2"}, {cables, "cables"}} {
		if p.v < 1 {
			return nil, fmt.Errorf("director: %s=%d must be at least 1", p.name, p.v)
		}
	}
	total := int64(pods) * int64(leaves) * int64(ends)
	if total > 1<<22 || int64(pods)*int64(l2)*int64(cables) > MaxPorts || leaves+cables > MaxPorts || ends+l2 > MaxPorts {
		return nil, fmt.Errorf("director: too large")
	}
	b := NewBuilder(fmt.Sprintf("director:pods=%d,leaves=%d,ends=%d,l2=%d,cables=%d", pods, leaves, ends, l2, cables))
	ep := func(i int) int { return i }
	nEnds := pods * leaves * ends
	for i := 0; i < nEnds; i++ {
		b.AddNode(Endpoint, "h"+strconv.Itoa(i), NodeOpts{Level: 0, Group: NoGroup, Ports: 1})
	}
	leaf := func(p, l int) int { return nEnds + p*leaves + l }
	for i := 0; i < pods*leaves; i++ {
		b.AddNode(Switch, "L1-"+strconv.Itoa(i), NodeOpts{Level: 1, Group: NoGroup, Ports: ends + l2})
	}
	mid := func(p, m int) int { return nEnds + pods*leaves + p*l2 + m }
	for i := 0; i < pods*l2; i++ {
		b.AddNode(Switch, "L2-"+strconv.Itoa(i), NodeOpts{Level: 2, Group: NoGroup, Ports: leaves + cables})
	}
	top := b.AddNode(Switch, "L3-0", NodeOpts{Level: 3, Group: NoGroup, Ports: pods * l2 * cables})
	for p := 0; p < pods; p++ {
		for l := 0; l < leaves; l++ {
			for e := 0; e < ends; e++ {
				b.ConnectPorts(leaf(p, l), e+1, ep((p*leaves+l)*ends+e), 1, LinkOpts{Dim: -1, Class: Access})
			}
			for m := 0; m < l2; m++ {
				b.ConnectPorts(leaf(p, l), ends+m+1, mid(p, m), l+1, Plain)
			}
		}
		for m := 0; m < l2; m++ {
			for c := 0; c < cables; c++ {
				b.ConnectPorts(mid(p, m), leaves+c+1, top, (p*l2+m)*cables+c+1, Plain)
			}
		}
	}
	return b.Build()
}
