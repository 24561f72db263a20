package routing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestSetFrame checks setFrame against its definition (refFrame) on
// random sets: random subsets of small tori (often several projections'
// runs tie), boxes at random places with random active/transit splits,
// and whole tori; and checks that identity is reported exactly when every
// set node lies at or after the frame's start in every dimension, in
// which case the relative order of the set nodes is their id order.
func TestSetFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 7))
	identities, wrapped := 0, 0
	for trial := 0; trial < 600; trial++ {
		spec := []string{"4x4x3", "5x4", "6x4x2", "7x3", "2x3x2x2", "8x5"}[trial%6]
		g := mustTorus(t, spec)
		dims := g.Dims()
		r := mustRouter(t, g, DOR)
		var set []int
		switch trial % 3 {
		case 0: // random subset
			for v := 0; v < g.NumNodes(); v++ {
				if rng.IntN(4) == 0 {
					set = append(set, v)
				}
			}
		case 1: // a box, sometimes a whole ring
			start, size := make([]int, len(dims)), make([]int, len(dims))
			for i, d := range dims {
				start[i], size[i] = rng.IntN(d), 1+rng.IntN(d)
			}
			set = boxNodes(dims, start, size)
		default:
			set = allNodes(g.NumNodes())
		}
		if len(set) == 0 {
			continue
		}
		rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
		cut := 1 + rng.IntN(len(set))
		active, transit := set[:cut], set[cut:]
		s := r.getScratch()
		if err := r.prepareSet(s, active, transit); err != nil {
			t.Fatal(err)
		}
		start, identity := r.setFrame(s)
		want, _ := refFrame(r.t, s.act, s.trans)
		if !slices.Equal(start, want) {
			t.Fatalf("%s: active %v transit %v: frame %v, by definition %v", spec, s.act, s.trans, start, want)
		}
		after := true // every set node at or after the start
		nodes := append(slices.Clone(s.act), s.trans...)
		for _, v := range nodes {
			for i := range dims {
				if g.CoordAt(int(v), i) < start[i] {
					after = false
				}
			}
		}
		if identity != after {
			t.Fatalf("%s: active %v transit %v frame %v: identity %v, every node after the start %v", spec, s.act, s.trans, start, identity, after)
		}
		byKey := slices.Clone(nodes)
		r.t.sortRelative(byKey, start)
		if identity {
			identities++
			if !slices.IsSorted(byKey) {
				t.Fatalf("%s: frame %v reported identity, relative order %v", spec, start, byKey)
			}
		} else if !slices.IsSorted(byKey) {
			wrapped++
		}
		r.putScratch(s)
	}
	if identities < 50 || wrapped < 50 {
		t.Fatalf("%d identity frames, %d renumbered sets: the test exercises too little", identities, wrapped)
	}
}

// TestTranslatedTables checks that BFS tables do not depend on where a
// set lies on the torus: for a random connected set (a box with a few
// holes, a random active/transit split) and every translate T of it, the
// route from T(u) to T(v) in the translate's table is the route from u to
// v in the original's (same directions, translated channels), the loads
// are translated and the figures are equal. The translates wrap around
// the rings in one, several or no dimensions. In a dimension where the
// box is a whole ring the frame is decided by the active nodes (a layer
// of transit nodes, so all translates compare) or, where they cover the
// ring too, starts at 0: there only translates that do not move the set
// along that ring are compared (the numbering, and so the tie-breaks,
// may differ for the others).
//
// On a torus with failed links the failures are translated with the set
// (a new network per translate); then DOR and angara route translates
// alike, but not angara*: R_A* accepts its extra dependencies greedily in
// a fixed order of the whole torus's channels, so translating the
// failures changes which ones it accepts (it does for most translates of
// random failures), and with them the routes. Angara* is left out there.
//
// The same comparison with the id numbering (relativeOrder off) must
// find differences, or the test would prove nothing.
func TestTranslatedTables(t *testing.T) {
	all := []Kind{DOR, Dirbit, Angara, AngaraStar}
	cases := []struct {
		spec  string
		size  []int
		holes int
		// transitLayer is the dimension whose first layer of the box is
		// all transit (−1: none); every other layer of the box in it has
		// an active node
		transitLayer int
		// fixed lists the dimensions where the frame starts at 0 (whole
		// rings covered by the active nodes)
		fixed []int
		fails int // failed links (translated with the set)
		kinds []Kind
	}{
		{"4x4x3", []int{3, 2, 2}, 2, -1, nil, 0, all},
		{"5x4", []int{3, 3}, 1, -1, nil, 0, all},
		{"6x4x2", []int{4, 3, 1}, 2, -1, nil, 0, all},
		{"6x4x3", []int{5, 3, 2}, 3, -1, nil, 0, all},
		{"4x4x3", []int{4, 2, 2}, 2, 0, nil, 0, all},          // whole X ring, one transit layer
		{"6x4x2", []int{3, 4, 1}, 2, 1, nil, 0, all},          // whole Y ring, one transit layer
		{"6x4x2", []int{6, 2, 1}, 1, 0, nil, 0, all},          // whole X ring, one transit layer, thin
		{"4x4x3", []int{4, 4, 2}, 2, -1, []int{0, 1}, 0, all}, // a slab of whole X and Y rings
		{"6x4x2", []int{6, 3, 1}, 2, -1, []int{0}, 0, all},
		{"5x4", []int{3, 3}, 1, -1, nil, 3, []Kind{DOR, Angara}},
		{"4x4x3", []int{3, 3, 2}, 2, -1, nil, 5, []Kind{DOR, Angara}},
	}
	rng := rand.New(rand.NewPCG(3, 29))
	compared, idDiffers := 0, 0
	for ci, c := range cases {
		g0 := mustTorus(t, c.spec)
		dims := g0.Dims()
		tor, err := newTorus(g0)
		if err != nil {
			t.Fatal(err)
		}
		// failed links: half of them inside the box, where they change
		// the routes
		box := boxNodes(dims, make([]int, len(dims)), c.size)
		var fails []int
		for len(fails) < c.fails {
			l := rng.IntN(g0.NumLinks())
			k := g0.Link(l)
			inside := slices.Contains(box, int(k.A)) && slices.Contains(box, int(k.B))
			if !slices.Contains(fails, l) && (inside || len(fails)%2 == 1) {
				fails = append(fails, l)
			}
		}
		g := g0
		if len(fails) > 0 {
			if g, err = g0.WithFaults(fails, nil); err != nil {
				t.Fatal(err)
			}
		}
		// a set every rule of the case can route
		var active, transit []int
		for try := 0; ; try++ {
			if try == 1000 {
				t.Fatalf("case %d: no random set reachable under all of %v", ci, c.kinds)
			}
			active, transit = randomBoxSet(t, rng, dims, c.size, c.holes, c.transitLayer)
			if reachableUnder(t, g, c.kinds, active, transit) {
				break
			}
		}
		_, decided := refFrame(tor, toInt32(active), toInt32(transit))
		for i := range dims {
			if decided[i] == slices.Contains(c.fixed, i) {
				t.Fatalf("case %d: frame decided %v, want it fixed at 0 in dimensions %v", ci, decided, c.fixed)
			}
		}
		before := compared
		for _, kind := range c.kinds {
			name := fmt.Sprintf("case %d %s %v %s", ci, c.spec, c.size, kind)
			base, err := translatedTable(t, g0, kind, fails, active, transit, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for shift := 0; shift < g0.NumNodes(); shift++ {
				sh := coords(dims, shift)
				if slices.ContainsFunc(c.fixed, func(i int) bool { return sh[i] != 0 }) {
					continue
				}
				other, err := translatedTable(t, g0, kind, fails, active, transit, sh, nil)
				if err != nil {
					t.Fatalf("%s: reachable, the translate by %v is not: %v", name, sh, err)
				}
				if err := sameUpToShift(base, other, sh); err != nil {
					t.Fatalf("%s: translate by %v: %v", name, sh, err)
				}
				compared++
				byID, err := translatedTable(t, g0, kind, fails, active, transit, sh, func(tu *tuning) { tu.idOrder = true })
				if err != nil {
					t.Fatal(err)
				}
				if sameUpToShift(base, byID, sh) != nil {
					idDiffers++
				}
			}
		}
		t.Logf("case %d: %d translates compared", ci, compared-before)
	}
	if compared < 500 || idDiffers < 50 {
		t.Fatalf("%d translates compared, %d of them differ when numbered by id: the test exercises too little", compared, idDiffers)
	}
	t.Logf("%d translates compared, %d differ when numbered by id", compared, idDiffers)
}

// reachableUnder reports whether the set is reachable on g under every
// rule of kinds.
func reachableUnder(t *testing.T, g *topology.Graph, kinds []Kind, active, transit []int) bool {
	t.Helper()
	for _, kind := range kinds {
		ok, _, err := reachableIn(g, Rule{Kind: kind}, active, transit)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return false
		}
	}
	return true
}

// randomBoxSet returns a random connected set in the box of the given
// size at the origin: the box less up to holes nodes (each removed only
// if the set stays connected and still uses every coordinate of the box),
// a quarter of the rest transit, at least two active. With transitLayer
// ≥ 0 the box's first layer in that dimension is all transit and every
// other layer has an active node.
func randomBoxSet(t *testing.T, rng *rand.Rand, dims, size []int, holes, transitLayer int) (active, transit []int) {
	t.Helper()
	set := boxNodes(dims, make([]int, len(dims)), size)
	for k := 0; k < holes; k++ {
		i := rng.IntN(len(set))
		rest := slices.Delete(slices.Clone(set), i, i+1)
		if connectedSet(dims, rest) && slices.Equal(projections(dims, rest), projections(dims, set)) {
			set = rest
		}
	}
	isActive := map[int]bool{}
	for _, v := range set {
		isActive[v] = rng.IntN(4) > 0
	}
	if transitLayer >= 0 {
		for x := 0; x < size[transitLayer]; x++ {
			var layer []int
			for _, v := range set {
				if coords(dims, v)[transitLayer] == x {
					layer = append(layer, v)
				}
			}
			if x == 0 {
				for _, v := range layer {
					isActive[v] = false
				}
			} else if !slices.ContainsFunc(layer, func(v int) bool { return isActive[v] }) {
				isActive[layer[rng.IntN(len(layer))]] = true
			}
		}
	}
	for _, v := range set {
		if isActive[v] {
			active = append(active, v)
		} else {
			transit = append(transit, v)
		}
	}
	for len(active) < 2 {
		k := rng.IntN(len(transit))
		active = append(active, transit[k])
		transit = slices.Delete(transit, k, k+1)
	}
	return active, transit
}

// connectedSet reports whether the nodes are connected by torus links
// between them.
func connectedSet(dims []int, nodes []int) bool {
	in := map[int]bool{}
	for _, v := range nodes {
		in[v] = true
	}
	seen := map[int]bool{nodes[0]: true}
	stack := []int{nodes[0]}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c := coords(dims, v)
		for i, d := range dims {
			for _, step := range []int{1, d - 1} {
				w := slices.Clone(c)
				w[i] = (w[i] + step) % d
				if u := nodeOf(dims, w); in[u] && !seen[u] {
					seen[u] = true
					stack = append(stack, u)
				}
			}
		}
	}
	return len(seen) == len(in)
}

// projections lists, per dimension, the coordinates the nodes use.
func projections(dims []int, nodes []int) []string {
	out := make([]string, len(dims))
	for i, d := range dims {
		used := make([]byte, d)
		for k := range used {
			used[k] = '.'
		}
		for _, v := range nodes {
			used[coords(dims, v)[i]] = '#'
		}
		out[i] = string(used)
	}
	return out
}

func coords(dims []int, v int) []int {
	c := make([]int, len(dims))
	for i, d := range dims {
		c[i], v = v%d, v/d
	}
	return c
}

func nodeOf(dims, c []int) int {
	v, mul := 0, 1
	for i, d := range dims {
		v += c[i] * mul
		mul *= d
	}
	return v
}

// shiftNode translates node v by sh (nil: no shift).
func shiftNode(dims []int, v int, sh []int) int {
	if sh == nil {
		return v
	}
	c := coords(dims, v)
	for i, d := range dims {
		c[i] = (c[i] + sh[i]) % d
	}
	return nodeOf(dims, c)
}

// shiftChannel translates channel c of torus tor by sh: the channel in
// the same direction from the translated source.
func shiftChannel(tor *torus, c int32, sh []int) int32 {
	return tor.chAt(shiftNode(tor.dims, int(tor.chSrc[c]), sh), tor.chDir[c])
}

func toInt32(list []int) []int32 {
	out := make([]int32, len(list))
	for i, v := range list {
		out[i] = int32(v)
	}
	return out
}

// translatedTable builds the table of the set translated by sh on g0
// with the given links failed, also translated.
func translatedTable(t *testing.T, g0 *topology.Graph, kind Kind, fails, active, transit []int, sh []int, tune func(*tuning)) (*Table, error) {
	t.Helper()
	dims := g0.Dims()
	tor, err := newTorus(g0)
	if err != nil {
		t.Fatal(err)
	}
	move := func(list []int) []int {
		out := make([]int, len(list))
		for i, v := range list {
			out[i] = shiftNode(dims, v, sh)
		}
		return out
	}
	var links []int
	for _, l := range fails {
		links = append(links, topology.LinkOf(int(shiftChannel(tor, int32(2*l), sh))))
	}
	g := g0
	if len(links) > 0 {
		if g, err = g0.WithFaults(links, nil); err != nil {
			t.Fatal(err)
		}
	}
	if tune == nil {
		tune = func(*tuning) {}
	}
	r, err := newTunedRouter(g, Rule{Kind: kind}, tune)
	if err != nil {
		t.Fatal(err)
	}
	return r.Build(context.Background(), move(active), move(transit), BuildOptions{})
}

// sameUpToShift compares table a with table b of the set translated by
// sh: routes pair by pair, loads channel by channel, figures.
func sameUpToShift(a, b *Table, sh []int) error {
	if a.Figures != b.Figures || a.SumLength != b.SumLength || a.Channels != b.Channels || a.DeadlockFree != b.DeadlockFree {
		return fmt.Errorf("figures %+v (sum %d) and %+v (sum %d)", a.Figures, a.SumLength, b.Figures, b.SumLength)
	}
	tor := a.r.t
	for i := 0; i < a.NumRoutes(); i++ {
		ra := a.Route(i)
		j := b.Index(shiftNode(tor.dims, ra.Src, sh), shiftNode(tor.dims, ra.Dst, sh))
		if j < 0 {
			return fmt.Errorf("no route %d→%d in the translate", ra.Src, ra.Dst)
		}
		rb := b.Route(j)
		if !slices.Equal(ra.Dirs, rb.Dirs) || ra.FS != rb.FS || ra.LS != rb.LS {
			return fmt.Errorf("route %d→%d: %v (FS %v LS %v), translated %v (FS %v LS %v)", ra.Src, ra.Dst, ra.Dirs, ra.FS, ra.LS, rb.Dirs, rb.FS, rb.LS)
		}
		for k, c := range ra.Channels {
			if shiftChannel(tor, c, sh) != rb.Channels[k] {
				return fmt.Errorf("route %d→%d: channel %d not translated", ra.Src, ra.Dst, k)
			}
		}
	}
	la, lb := a.Loads(), b.Loads()
	for c := range la {
		if la[c] != lb[shiftChannel(tor, int32(c), sh)] {
			return fmt.Errorf("load of channel %d: %d, translated %d", c, la[c], lb[shiftChannel(tor, int32(c), sh)])
		}
	}
	return nil
}

// TestRelativeOrderKeepsIdTables checks that sets whose frame does not
// wrap around a ring (boxes that do not wrap, most random sets that
// cover the rings, whole tori) get exactly the table of the id
// numbering, route for route and load for load, on random tori with
// failures under every rule; boxes that wrap must be renumbered.
func TestRelativeOrderKeepsIdTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 5))
	compared, renumbered := 0, 0
	for trial := 0; trial < 80; trial++ {
		spec := []string{"6x5", "4x4x3", "5x3x4", "6x4x2", "3x2x3x2"}[trial%5]
		g, order, active, transit, _ := randomScenario(t, rng, spec, 0.05, trial%2 == 0, true, false)
		dims := g.Dims()
		if trial%2 == 1 {
			// a box with random holes and split that does not wrap, or
			// that wraps in the first dimension
			start, size := make([]int, len(dims)), make([]int, len(dims))
			for i, d := range dims {
				size[i] = 1 + rng.IntN(d)
				start[i] = rng.IntN(d - size[i] + 1)
			}
			if trial%4 == 3 {
				size[0], start[0] = 2+rng.IntN(dims[0]-2), dims[0]-1
			}
			active, transit = nil, nil
			for _, v := range boxNodes(dims, start, size) {
				switch {
				case g.NodeFailed(v) || rng.IntN(8) == 0:
				case len(active) < 2 || rng.IntN(3) > 0:
					active = append(active, v)
				default:
					transit = append(transit, v)
				}
			}
		}
		for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
			r, err := NewRouter(g, Rule{Kind: kind, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			s := r.getScratch()
			if err := r.prepareSet(s, active, transit); err != nil {
				t.Fatal(err)
			}
			_, identity := r.setFrame(s)
			r.putScratch(s)
			rel, errRel := r.Build(context.Background(), active, transit, BuildOptions{Batch: 2})
			r.tune.idOrder = true
			byID, errID := r.Build(context.Background(), active, transit, BuildOptions{Batch: 2})
			r.tune.idOrder = false
			if (errRel == nil) != (errID == nil) {
				t.Fatalf("%s %s: errors %v / %v", spec, kind, errRel, errID)
			}
			if errRel != nil {
				continue
			}
			if identity {
				sameTable(t, fmt.Sprintf("%s/%d/%s", spec, trial, kind), byID, rel)
				compared++
			} else {
				renumbered++
			}
		}
	}
	if compared < 50 || renumbered < 20 {
		t.Fatalf("%d tables compared, %d sets renumbered: the test exercises too little", compared, renumbered)
	}
}
