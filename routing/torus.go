package routing

import (
	"fmt"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// torus is the fixed structure of an n-dimensional torus seen by the
// routing code: for node v and direction d, nb[v·nd+d] is the neighbour and
// ch[v·nd+d] the channel (a channel id of the topology graph). A mesh
// dimension has no wrap link: at its ends, nb and ch are −1 in the
// direction that leaves it (use live to test a channel).
type torus struct {
	g      *topology.Graph
	dims   []int
	wrap   []bool // per dimension: a ring (true) or a mesh line
	rings  bool   // every dimension is a ring
	n, nd  int
	nodes  int
	stride []int // per dimension: the id step of one position (X fastest)
	nb     []int32
	ch     []int32
	// per channel: source node and direction (chDir is 0xff for channels
	// that are not ring channels, which a torus does not have)
	chSrc  []int32
	chDir  []Dir
	up     []bool // per channel: link and both end nodes alive
	nodeUp []bool
}

// newTorus checks that g is a plain torus (one duplex ring per dimension,
// no switches) and indexes its channels by direction.
func newTorus(g *topology.Graph) (*torus, error) {
	nodes, err := checkTorusShape(g)
	if err != nil {
		return nil, err
	}
	dims := g.Dims()
	n := len(dims)
	t := &torus{g: g, dims: append([]int(nil), dims...), wrap: append([]bool(nil), g.Wrap()...), rings: true, n: n, nd: 2 * n, nodes: nodes}
	for _, w := range t.wrap {
		t.rings = t.rings && w
	}
	t.stride = make([]int, n)
	for i, step := 0, 1; i < n; i++ {
		t.stride[i] = step
		step *= dims[i]
	}
	t.nb = make([]int32, nodes*t.nd)
	t.ch = make([]int32, nodes*t.nd)
	for i := range t.ch {
		t.ch[i], t.nb[i] = -1, -1
	}
	nc := g.NumChannels()
	t.chSrc = make([]int32, nc)
	t.chDir = make([]Dir, nc)
	t.up = make([]bool, nc)
	t.nodeUp = make([]bool, nodes)
	coord := make([]int, n)
	for v := 0; v < nodes; v++ {
		if err := t.addNode(v, coord); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// checkTorusShape checks that g is a direct torus of at most MaxDims
// dimensions, every one of them a ring or a mesh line of at least 2
// nodes, and returns its number of nodes.
func checkTorusShape(g *topology.Graph) (int, error) {
	if g == nil {
		return 0, fmt.Errorf("no network")
	}
	dims := g.Dims()
	if len(dims) == 0 {
		return 0, fmt.Errorf("torus routing needs a torus; %s has no coordinates", g.Name())
	}
	if len(dims) > MaxDims {
		return 0, fmt.Errorf("torus routing handles at most %d dimensions, %s has %d", MaxDims, g.Name(), len(dims))
	}
	nodes := 1
	for _, d := range dims {
		if d < 2 {
			return 0, fmt.Errorf("torus dimension of size %d: want at least 2", d)
		}
		nodes *= d
	}
	if g.NumNodes() != nodes || !g.Direct() {
		return 0, fmt.Errorf("torus routing needs a direct torus (no switches or end nodes); %s has %d nodes for sizes %v", g.Name(), g.NumNodes(), dims)
	}
	return nodes, nil
}

// addNode records node v's state and its outgoing channel in every
// direction, checking the coordinates are mixed radix and every direction
// has exactly one link to the torus neighbour, none only where it would
// leave the end of a mesh dimension; coord is scratch space.
func (t *torus) addNode(v int, coord []int) error {
	g := t.g
	t.nodeUp[v] = !g.NodeFailed(v)
	for i := 0; i < t.n; i++ {
		coord[i] = g.CoordAt(v, i)
	}
	if g.NodeAt(coord) != v {
		return fmt.Errorf("node %d: coordinates are not mixed radix (X fastest)", v)
	}
	for _, c := range g.Out(v) {
		dim, sign := g.Dir(int(c))
		if dim < 0 || dim >= t.n {
			return fmt.Errorf("node %s has a link without a torus direction", g.NodeName(v))
		}
		d := Plus(dim)
		if sign < 0 {
			d = Minus(dim)
		}
		k := v*t.nd + int(d)
		if t.ch[k] >= 0 {
			return fmt.Errorf("node %s has several %s links; torus routing needs exactly one ring per dimension", g.NodeName(v), d)
		}
		w := g.Dst(int(c))
		want := coord[dim] + 1
		if d.Neg() {
			want = coord[dim] - 1
		}
		if t.wrap[dim] {
			want = (want + t.dims[dim]) % t.dims[dim]
		}
		if g.CoordAt(w, dim) != want {
			return fmt.Errorf("link %s does not join torus neighbours", g.ChannelName(int(c)))
		}
		t.ch[k] = c
		t.nb[k] = int32(w)
		t.chSrc[c] = int32(v)
		t.chDir[c] = d
		t.up[c] = g.Up(int(c))
	}
	for d := Dir(0); int(d) < t.nd; d++ {
		if t.ch[v*t.nd+int(d)] < 0 && !t.meshEnd(coord, d) {
			return fmt.Errorf("node %s has no %s link", g.NodeName(v), d)
		}
	}
	return nil
}

// meshEnd reports whether direction d leaves the end of a mesh dimension
// at coordinates coord (there is no link there).
func (t *torus) meshEnd(coord []int, d Dir) bool {
	i := d.Dim()
	if t.wrap[i] {
		return false
	}
	if d.Neg() {
		return coord[i] == 0
	}
	return coord[i] == t.dims[i]-1
}

// live reports whether channel c (−1 where a mesh dimension ends) exists
// and is alive in up.
func live(up []bool, c int32) bool { return c >= 0 && up[c] }

// chAt returns the channel leaving v in direction d.
func (t *torus) chAt(v int, d Dir) int32 { return t.ch[v*t.nd+int(d)] }

// nbAt returns the neighbour of v in direction d.
func (t *torus) nbAt(v int, d Dir) int32 { return t.nb[v*t.nd+int(d)] }

// inCh returns the channel that enters v moving in direction d (it leaves
// the neighbour of v in the opposite direction), or −1 at the end of a
// mesh dimension where none does.
func (t *torus) inCh(v int, d Dir) int32 {
	p := t.nb[v*t.nd+int(d.Opp())]
	if p < 0 {
		return -1
	}
	return t.ch[int(p)*t.nd+int(d)]
}

// coordString names node v by its coordinates.
func (t *torus) name(v int) string { return t.g.NodeName(v) }

// linkList returns the ids of the torus links (one per duplex cable).
func (t *torus) numLinks() int { return t.g.NumLinks() }

// meshLetters returns the letters of the torus's mesh dimensions, nil when
// every dimension is a ring (the "mesh" of the table files).
func (t *torus) meshLetters() []string { return MeshNames(t.wrap) }

// MeshNames returns the letters of the dimensions that do not wrap, as
// the table files' "mesh" lists them, or nil when every dimension does.
func MeshNames(wrap []bool) []string {
	if m := topology.MeshLetters(wrap); m != "" {
		return strings.Split(m, ",")
	}
	return nil
}

// meshFlags turns the mesh letters of a table file into wrap flags for n
// dimensions; a letter the torus lacks, a repeated or unknown one is an
// error.
func meshFlags(mesh []string, n int) ([]bool, error) {
	wrap := make([]bool, n)
	for i := range wrap {
		wrap[i] = true
	}
	for _, l := range mesh {
		i := topology.DimIndex(l)
		switch {
		case len(l) != 1 || i < 0:
			return nil, fmt.Errorf("mesh: unknown dimension %q (want letters X, Y, Z, W, V, U)", l)
		case i >= n:
			return nil, fmt.Errorf("mesh: the torus has %d dimensions, no dimension %s", n, topology.DimName(i))
		case !wrap[i]:
			return nil, fmt.Errorf("mesh: dimension %s named twice", topology.DimName(i))
		}
		wrap[i] = false
	}
	return wrap, nil
}
