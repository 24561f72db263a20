package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// mixedTori are small tori with mesh dimensions.
var mixedTori = []string{
	"4x3x2:mesh=Z", "4x4x3:mesh=Y", "3x2x2x2:mesh=Y,W", "5x4:mesh=X", "4x4:mesh=X,Y",
	"6x3:mesh=Y", "2x2:mesh=Y", "4x2x3:mesh=X,Z", "3:mesh=X",
}

// checkRouteChannels checks that route i of tb walks real links of g from
// its source to its destination, each step in its direction and, along a
// mesh dimension, one coordinate up or down without wrapping.
func checkRouteChannels(t *testing.T, name string, g *topology.Graph, tb *Table, i int) {
	t.Helper()
	rt := tb.Route(i)
	if len(rt.Channels) != len(rt.Dirs) {
		t.Fatalf("%s: route %d: %d channels for %d steps", name, i, len(rt.Channels), len(rt.Dirs))
	}
	v := rt.Src
	for k, c := range rt.Channels {
		if c < 0 || int(c) >= g.NumChannels() || g.Src(int(c)) != v {
			t.Fatalf("%s: route %s→%s step %d: channel %d does not leave %s", name, g.NodeName(rt.Src), g.NodeName(rt.Dst), k+1, c, g.NodeName(v))
		}
		dim, sign := g.Dir(int(c))
		d := rt.Dirs[k]
		if dim != d.Dim() || (sign < 0) != d.Neg() {
			t.Fatalf("%s: step %d takes %s over a %d/%d channel", name, k+1, d, dim, sign)
		}
		w := g.Dst(int(c))
		if !g.Wrap()[dim] && g.CoordAt(w, dim)-g.CoordAt(v, dim) != sign {
			t.Fatalf("%s: step %d from %s to %s wraps around mesh dimension %s", name, k+1, g.NodeName(v), g.NodeName(w), topology.DimName(dim))
		}
		v = w
	}
	if v != rt.Dst {
		t.Fatalf("%s: route %d ends at %s, not %s", name, i, g.NodeName(v), g.NodeName(rt.Dst))
	}
}

// TestMixedToriRoutes: on fault-free tori with mesh dimensions, for every
// rule and random direction orders, the BFS and baseline tables of the
// whole torus verify (R_A* and the others but R_A are deadlock-free),
// use only real links (never a wrap link of a mesh dimension) and give
// every pair a route as long as its distance in the graph (each rule
// allows the dimension-ordered route that goes each dimension's short
// way, the one way along a mesh dimension).
func TestMixedToriRoutes(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 3))
	for _, spec := range mixedTori {
		g := mustTorus(t, spec)
		dist := make([][]int32, g.NumNodes())
		for v := range dist {
			dist[v] = make([]int32, g.NumNodes())
			topology.BFS(g, v, dist[v], nil)
		}
		all := allNodes(g.NumNodes())
		for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
			for _, random := range []bool{false, true} {
				var order Order
				if random {
					order = DefaultOrder(len(g.Dims()))
					rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				}
				name := fmt.Sprintf("%s/%s/order=%v", spec, kind, order)
				r, err := NewRouter(g, Rule{Kind: kind, Order: order})
				if err != nil {
					t.Fatal(name, err)
				}
				for _, algo := range []Algo{BFS, Baseline} {
					tb, err := r.Build(context.Background(), all, nil, BuildOptions{Algo: algo})
					if err != nil {
						t.Fatalf("%s/%s: %v", name, algo, err)
					}
					if v := violations(tb); len(v) > 0 {
						t.Fatalf("%s/%s: %v", name, algo, v[0])
					}
					if kind != Angara && !tb.DeadlockFree {
						t.Fatalf("%s/%s: deadlocks", name, algo)
					}
					for i := 0; i < tb.NumRoutes(); i++ {
						src, dst := tb.Pair(i)
						if tb.Len(i) != int(dist[src][dst]) {
							t.Fatalf("%s/%s: route %s→%s has %d steps, distance %d", name, algo, g.NodeName(src), g.NodeName(dst), tb.Len(i), dist[src][dst])
						}
						checkRouteChannels(t, name, g, tb, i)
					}
				}
			}
		}
	}
}

// TestMixedToriFailures: with failed links and random sets on tori with
// mesh dimensions, BFS tables use only live, real links and pass the
// independent verification (deadlock-free; TestBruteForceRG checks that
// their routes are the shortest legal ones).
func TestMixedToriFailures(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 4))
	built := 0
	for trial := 0; trial < 150; trial++ {
		spec := mixedTori[trial%len(mixedTori)]
		g, order, active, transit, _ := randomScenario(t, rng, spec, 0.1, trial%2 == 1, trial%3 == 0, trial%4 == 3)
		if len(active) < 2 {
			continue
		}
		for _, kind := range []Kind{Dirbit, AngaraMinus, AngaraStar} {
			r, err := NewRouter(g, Rule{Kind: kind, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			tb, err := r.Build(context.Background(), active, transit, BuildOptions{})
			if err != nil {
				continue // not reachable under this rule
			}
			built++
			name := fmt.Sprintf("%s/%s/trial %d", spec, kind, trial)
			if v := violations(tb); len(v) > 0 || !tb.DeadlockFree {
				t.Fatalf("%s: violations %v, deadlock-free %v", name, v, tb.DeadlockFree)
			}
			for i := 0; i < tb.NumRoutes(); i++ {
				checkRouteChannels(t, name, g, tb, i)
				for _, c := range tb.Route(i).Channels {
					if !g.Up(int(c)) {
						t.Fatalf("%s: route %d uses the failed %s", name, i, g.ChannelName(int(c)))
					}
				}
			}
		}
	}
	if built < 80 {
		t.Fatalf("only %d tables built", built)
	}
}

// TestMixedToriTranslates: a set translated along the rings it does not
// cover (any shift) and along the mesh dimensions (staying inside) gets
// the same table under the rules whose routes depend only on the set,
// and under angara* translated along the rings when its accepted
// dependencies are the same at every ring translate
// (ExtrasRingInvariant; they differ from node to node along the mesh
// dimensions).
func TestMixedToriTranslates(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 5))
	compared, star := 0, 0
	for trial := 0; trial < 40; trial++ {
		spec := []string{"6x5:mesh=X", "5x4x3:mesh=Y", "4x4x2:mesh=X,Z", "4x3x2x2:mesh=Y,W"}[trial%4]
		g := mustTorus(t, spec)
		dims, wrap := g.Dims(), g.Wrap()
		size := make([]int, len(dims))
		for i, d := range dims {
			size[i] = 1 + rng.IntN(d)
			if !wrap[i] && size[i] == d && d > 2 {
				size[i]-- // room to move along the mesh dimension
			}
		}
		active, transit := randomBoxSet(t, rng, dims, size, 1, -1)
		kind := []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar}[trial%5]
		r, err := NewRouter(g, Rule{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		if kind == AngaraStar {
			if _, acc := r.ExtraDependencies(); acc == 0 || !r.ExtrasRingInvariant() {
				t.Fatalf("%s: angara* accepted %d dependencies, ring invariant %v", spec, acc, r.ExtrasRingInvariant())
			}
			star++
		}
		base, err := r.Build(context.Background(), active, transit, BuildOptions{})
		if err != nil {
			continue
		}
		for k := 0; k < 6; k++ {
			sh := make([]int, len(dims))
			for i, d := range dims {
				switch {
				case wrap[i] && size[i] == d:
					// a whole ring: the frame starts at 0, it does not move
				case wrap[i]:
					sh[i] = rng.IntN(d)
				case kind == AngaraStar:
					// the mesh position stays: its accepted
					// dependencies are not those of another
				default:
					sh[i] = rng.IntN(d - size[i] + 1)
				}
			}
			move := func(list []int) []int {
				out := make([]int, len(list))
				for j, v := range list {
					out[j] = shiftNode(dims, v, sh)
				}
				return out
			}
			other, err := r.Build(context.Background(), move(active), move(transit), BuildOptions{})
			if err != nil {
				t.Fatalf("%s %s: reachable at 0, not translated by %v: %v", spec, kind, sh, err)
			}
			if base.Figures != other.Figures || base.SumLength != other.SumLength {
				t.Fatalf("%s %s: figures %+v, translated by %v %+v", spec, kind, base.Figures, sh, other.Figures)
			}
			for i := 0; i < base.NumRoutes(); i++ {
				ra := base.Route(i)
				rb := other.Route(other.Index(shiftNode(dims, ra.Src, sh), shiftNode(dims, ra.Dst, sh)))
				if !slices.Equal(ra.Dirs, rb.Dirs) || ra.FS != rb.FS || ra.LS != rb.LS {
					t.Fatalf("%s %s: route %v, translated by %v %v", spec, kind, ra.Dirs, sh, rb.Dirs)
				}
			}
			compared++
		}
	}
	if compared < 80 || star < 6 {
		t.Fatalf("only %d translates compared, %d sets under angara*", compared, star)
	}
}

// TestExtrasRingInvariant: the check of routing's R_A* construction finds
// the accepted dependencies of the fault-free mixed tori the same at
// every ring translate, and finds them not so when one channel's are
// changed, or after a failed link (whose neighbourhood accepts others).
func TestExtrasRingInvariant(t *testing.T) {
	for _, spec := range []string{"6x5:mesh=X", "5x4x3:mesh=Y", "4x3x2x2:mesh=Y,W", "6x5x4x2x3x2:mesh=W,U"} {
		g := mustTorus(t, spec)
		r, err := NewRouter(g, Rule{Kind: AngaraStar})
		if err != nil {
			t.Fatal(err)
		}
		if !r.ExtrasRingInvariant() {
			t.Fatalf("%s: accepted dependencies differ along the rings", spec)
		}
		extra := slices.Clone(r.star.extra)
		c := slices.IndexFunc(extra, func(e uint16) bool { return e != 0 })
		extra[c] ^= extra[c] & -extra[c] // one accepted continuation less
		if extrasRingInvariant(r.t, extra) {
			t.Fatalf("%s: channel %d changed, still found invariant", spec, c)
		}
		failed, err := g.WithFaults([]int{c / 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rf, err := NewRouter(failed, Rule{Kind: AngaraStar})
		if err != nil {
			t.Fatal(err)
		}
		if _, acc := rf.ExtraDependencies(); acc > 0 && rf.ExtrasRingInvariant() {
			t.Fatalf("%s: with link %d failed, found invariant", spec, c/2)
		}
	}
	// The other rules accept nothing, and are invariant.
	r, err := NewRouter(mustTorus(t, "4x3:mesh=Y"), Rule{Kind: Angara})
	if err != nil || !r.ExtrasRingInvariant() {
		t.Fatalf("angara: %v %v", err, r.ExtrasRingInvariant())
	}
}

// TestMixedToriFiles: tables of a torus with mesh dimensions name them in
// every file format, the files verify against the same torus, a torus
// without those meshes refuses them, and a route stepping off the end
// of a mesh dimension is a violation, not a crash.
func TestMixedToriFiles(t *testing.T) {
	tb := buildFor(t, "4x3x2:mesh=Z", "0.0.0+X", AngaraStar, "", "", BFS)
	b := tableJSON(t, tb)
	tf, err := ReadTableJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tf.Mesh, []string{"Z"}) {
		t.Fatalf("mesh %v in the JSON table", tf.Mesh)
	}
	rep, _, err := verifyJSON(tf, "", "")
	if err != nil || len(rep.Violations) > 0 {
		t.Fatalf("JSON table: %v %v", err, rep)
	}
	for _, f := range [][]byte{b, compactBytes(t, tb)} {
		rep, r, err := verifyFile(bytes.NewReader(f), "", "", 1)
		if err != nil || len(rep.Violations) > 0 || !slices.Equal(r.Graph().Wrap(), []bool{true, true, false}) {
			t.Fatalf("verifyFile: %v %v", err, rep)
		}
	}
	var nt bytes.Buffer
	if err := tb.WriteNodeTables(&nt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(nt.String(), "\ntorus 4x3x2:mesh=Z\n") {
		t.Fatalf("node tables header:\n%.200s", nt.String())
	}
	parsed, err := ReadNodeTables(&nt)
	if err != nil || !slices.Equal(parsed.Wrap, []bool{true, true, false}) || len(parsed.Routes) != tb.NumRoutes() {
		t.Fatalf("node tables: %v, wrap %v", err, parsed)
	}
	// the same table against the torus without mesh dimensions
	full := mustRouter(t, mustTorus(t, "4x3x2"), AngaraStar)
	if _, err := full.Verify(context.Background(), tf, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "mesh dimensions [Z] do not match the torus's []") {
		t.Fatalf("a mesh table verified against a torus: %v", err)
	}
	// a route that steps off the end of the mesh dimension
	bad := *tf
	bad.Routes = slices.Clone(tf.Routes)
	for i, rt := range bad.Routes {
		if rt.Src[2] == 1 && rt.Dst[2] == 0 {
			bad.Routes[i].Dirs = []string{"+Z"}
			break
		}
	}
	rep, _, err = verifyJSON(&bad, "", "")
	if err != nil || len(rep.Violations) == 0 || !strings.Contains(fmt.Sprint(rep.Violations), "has no +Z link (dimension Z is a mesh") {
		t.Fatalf("a route off the mesh end: %v %v", err, rep.Violations)
	}
	for _, m := range [][]string{{"V"}, {"Z", "Z"}, {"Q"}, {""}} {
		bad := *tf
		bad.Mesh = m
		buf, err := json.Marshal(&bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTableJSON(bytes.NewReader(buf)); err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "mesh:") {
			t.Errorf("mesh %q: %v", m, err)
		}
	}
	if _, err := ReadNodeTables(strings.NewReader("torus 4x3x2:mesh=V\nrule dor\n")); err == nil || !strings.Contains(err.Error(), "no dimension V") {
		t.Errorf("node tables with mesh=V: %v", err)
	}
	if _, err := ReadNodeTables(strings.NewReader("torus 4x3x2:rings=1,1,2\nrule dor\n")); err == nil || !strings.Contains(err.Error(), "mesh= only") {
		t.Errorf("node tables with rings: %v", err)
	}
}

// TestMixedToriLegalPath: LegalPath never crosses the end of a mesh
// dimension and agrees with reachability of the pair.
func TestMixedToriLegalPath(t *testing.T) {
	g := mustTorus(t, "5x4:mesh=X")
	r := mustRouter(t, g, AngaraMinus)
	// 0.0 and 4.0: along X only through 1..3 (no wrap link between them)
	p, err := r.LegalPath(g.NodeByName("0.0"), g.NodeByName("4.0"), nil, []int{g.NodeByName("1.0"), g.NodeByName("2.0"), g.NodeByName("3.0")})
	if err != nil || len(p) != 5 {
		t.Fatalf("path %v %v", p, err)
	}
	p, err = r.LegalPath(g.NodeByName("0.0"), g.NodeByName("4.0"), nil, nil)
	if err != nil || p != nil {
		t.Fatalf("a path %v (%v) between the two ends of a mesh dimension without the nodes between", p, err)
	}
}
