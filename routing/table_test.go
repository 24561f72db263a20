package routing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestTableFigures recomputes every figure of a table from its routes and
// from independent shortest legal distances (a plain BFS on the RG): the
// diameter, the loads, π_max over C(M_{a,t}), π_perfect = Σ shortest
// lengths / |C(M_{a,t})| and the balance factor; it also checks that the
// routes walk over the channels the table reports and that the pair index
// round-trips.
func TestTableFigures(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, spec := range []string{"4x4", "5x3", "4x3x2", "3x3x3", "2x3x2x2"} {
		for rep := 0; rep < 2; rep++ {
			g, order, active, transit, inSet := randomScenario(t, rng, spec, 0.08*float64(rep), rep == 1, false, false)
			for _, kind := range []Kind{Dirbit, AngaraMinus, AngaraStar, Angara} {
				r, err := NewRouter(g, Rule{Kind: kind, Order: order})
				if err != nil {
					t.Fatal(err)
				}
				tb, err := r.Build(context.Background(), active, transit, BuildOptions{})
				if err != nil {
					var ue *UnreachableError
					if errors.As(err, &ue) {
						continue
					}
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s/%d/%s", spec, rep, kind)
				dist := rgDistances(r, active, inSet)
				loads := make([]int, g.NumChannels())
				sum, diam := 0, 0
				var chans []int32
				for i := 0; i < tb.NumRoutes(); i++ {
					src, dst := tb.Pair(i)
					if tb.Index(src, dst) != i {
						t.Fatalf("%s: Index(Pair(%d)) = %d", name, i, tb.Index(src, dst))
					}
					rt := tb.Route(i)
					chans = tb.AppendChannels(i, chans[:0])
					if !slices.Equal(chans, rt.Channels) {
						t.Fatalf("%s: Route(%d).Channels differs from AppendChannels", name, i)
					}
					v := src
					for k, d := range rt.Dirs {
						want := r.t.chAt(v, d)
						if chans[k] != want {
							t.Fatalf("%s: channel %d of route %d", name, k, i)
						}
						loads[want]++
						v = int(r.t.nbAt(v, d))
					}
					if v != dst || len(rt.Dirs) != dist[[2]int{src, dst}] {
						t.Fatalf("%s: route %d ends at %d with %d steps, shortest %d", name, i, v, len(rt.Dirs), dist[[2]int{src, dst}])
					}
					sum += dist[[2]int{src, dst}]
					diam = max(diam, len(rt.Dirs))
				}
				nc, pimax := 0, 0
				for c := 0; c < g.NumChannels(); c++ {
					if g.Up(c) && inSet[g.Src(c)] && inSet[g.Dst(c)] {
						nc++
						pimax = max(pimax, loads[c])
					}
					if int32(loads[c]) != tb.Loads()[c] {
						t.Fatalf("%s: load of %s is %d, table says %d", name, g.ChannelName(c), loads[c], tb.Loads()[c])
					}
				}
				perfect := float64(sum) / float64(nc)
				want := Figures{Diameter: diam, PiMax: pimax, PiPerfect: perfect, BalanceFactor: (float64(pimax)/perfect - 1) * 100}
				if !statsClose(tb.Figures, want) || tb.Channels != nc {
					t.Fatalf("%s: %+v (|C| %d), want %+v (|C| %d)", name, tb.Figures, tb.Channels, want, nc)
				}
			}
		}
	}
}

// TestBaseline checks the coordinate algorithm on boxes: routes are the
// per-dimension shortest ways (inside the box for partial dimensions),
// ties on even rings are split by the parity of the source coordinates,
// and sets it cannot handle are refused.
func TestBaseline(t *testing.T) {
	for _, tc := range []struct{ spec, box string }{
		{"4x4", "*.*"}, {"6x4x2", "*.*.*"}, {"5x6", "1-3.*"}, {"8x4x4", "6-7.*.1-2,0-1.*.1-2"}, {"3x3x3", "0-1.0-1.0-1"},
	} {
		g := mustTorus(t, tc.spec)
		active, err := g.ParseNodes(tc.box)
		if err != nil {
			t.Fatal(err)
		}
		r := mustRouter(t, g, AngaraStar)
		tb, err := r.Build(context.Background(), active, nil, BuildOptions{Algo: Baseline})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.spec, tc.box, err)
		}
		full := make([]bool, len(g.Dims()))
		for k, d := range g.Dims() {
			seen := map[int]bool{}
			for _, v := range active {
				seen[g.CoordAt(v, k)] = true
			}
			full[k] = len(seen) == d
		}
		plusTies, ties := 0, 0
		for i := 0; i < tb.NumRoutes(); i++ {
			rt := tb.Route(i)
			want := 0
			for k, d := range g.Dims() {
				a, b := g.CoordAt(rt.Src, k), g.CoordAt(rt.Dst, k)
				delta := (b - a + d) % d
				if full[k] {
					want += min(delta, d-delta)
				} else {
					want += steps1D(a, b, d, active, g, k)
				}
				if full[k] && 2*delta == d {
					ties++
					if slices.Contains(rt.Dirs, Plus(k)) {
						plusTies++
					}
				}
			}
			if len(rt.Dirs) != want || rt.FS || rt.LS {
				t.Fatalf("%s: route %v→%v %s, want %d standard steps", tc.spec, g.NodeName(rt.Src), g.NodeName(rt.Dst), FormatDirs(rt.Dirs), want)
			}
		}
		if ties > 0 && 2*plusTies != ties {
			t.Errorf("%s: %d of %d ties go +", tc.spec, plusTies, ties)
		}
	}
	g := mustTorus(t, "4x4")
	r := mustRouter(t, g, AngaraMinus)
	for _, tc := range []struct{ active, transit, faults, want string }{
		{"0.0,2.0", "", "", "not contiguous"},
		{"0-1.0-1,2.0", "", "", "do not fill"},
		{"0-1.0-1", "2.0", "", "do not fill"},
		{"*.*", "", "1.1+X", "fault-free"},
	} {
		h, _ := g.ApplyFaults(tc.faults, "")
		rr := r
		if tc.faults != "" {
			rr = mustRouter(t, h, AngaraMinus)
		}
		a, _ := h.ParseNodes(tc.active)
		tr, _ := h.ParseNodes(tc.transit)
		if _, err := rr.Build(context.Background(), a, tr, BuildOptions{Algo: Baseline}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc, err, tc.want)
		}
	}
	// Transit nodes completing the rectangle: routes join active pairs
	// inside the box.
	a, _ := g.ParseNodes("0-2.0")
	tr, _ := g.ParseNodes("0-2.1")
	tb, err := r.Build(context.Background(), a, tr, BuildOptions{Algo: Baseline})
	if err != nil {
		t.Fatalf("baseline with transit: %v", err)
	}
	if tb.NumRoutes() != 6 || len(violations(tb)) != 0 {
		t.Fatalf("baseline with transit: %d routes, violations %v", tb.NumRoutes(), violations(tb))
	}
}

// steps1D is the distance inside the box's (contiguous, partial)
// coordinate range of dimension k.
func steps1D(a, b, d int, active []int, g interface{ CoordAt(v, i int) int }, k int) int {
	in := make([]bool, d)
	for _, v := range active {
		in[g.CoordAt(v, k)] = true
	}
	for _, step := range []int{1, d - 1} { // +, then −
		x, n := a, 0
		for x != b && in[x] {
			x = (x + step) % d
			n++
		}
		if x == b {
			return n
		}
	}
	return -1
}

func TestBadSets(t *testing.T) {
	g := mustTorus(t, "4x4")
	g, _ = g.ApplyFaults("", "3.3")
	r := mustRouter(t, g, AngaraStar)
	for _, tc := range []struct {
		active, transit []int
		want            string
	}{
		{nil, nil, "no active"},
		{[]int{0, 16}, nil, "outside the torus"},
		{[]int{0, -1}, nil, "outside the torus"},
		{[]int{0, 1, 0}, nil, "listed twice"},
		{[]int{0, 1}, []int{1}, "both active and transit"},
		{[]int{0, 1}, []int{2, 2}, "listed twice"},
		{[]int{0, 15}, nil, "failed"},
	} {
		_, _, err := r.ReachableFirst(tc.active, tc.transit)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v/%v: %v, want %q", tc.active, tc.transit, err, tc.want)
		}
		if _, err := r.Build(context.Background(), tc.active, tc.transit, BuildOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("table %v/%v: %v, want %q", tc.active, tc.transit, err, tc.want)
		}
	}
	// an unreachable set names a pair that has no route
	a, _ := g.ParseNodes("0.0,2.0")
	_, err := r.Build(context.Background(), a, nil, BuildOptions{})
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "from 0.0 to 2.0") {
		t.Errorf("unreachable: %v", err)
	}
	ok, bad, err := r.ReachableFirst(a, nil)
	if ok || err != nil || bad != [2]int{0, 2} {
		t.Errorf("Check: %v %v %v", ok, bad, err)
	}
	if _, err := NewRouter(mustTorus(t, "4x4"), Rule{Kind: Dirbit, Order: Order{0, 1, 2}}); err == nil {
		t.Error("short order accepted")
	}
	if _, err := NewRouter(mustTorus(t, "4x4"), Rule{Kind: 9}); err == nil {
		t.Error("unknown kind accepted")
	}
}

// TestReachableBatches compares Check with a per-pair RG search on sets of
// more than 64 active nodes (several 64-source batches), with failures.
func TestReachableBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, spec := range []string{"6x6x3", "5x5x5", "8x8x2"} {
		for rep := 0; rep < 3; rep++ {
			g, _, active, transit, inSet := randomScenario(t, rng, spec, []float64{0.02, 0.06, 0.12}[rep], rep > 0, false, rep == 2)
			for _, kind := range []Kind{Dirbit, AngaraMinus, AngaraStar} {
				r := mustRouter(t, g, kind)
				ok, bad, err := r.ReachableFirst(active, transit)
				if err != nil {
					t.Fatal(err)
				}
				dist := rgDistances(r, active, inSet)
				first := [2]int{-1, -1}
				for _, a := range active {
					for _, b := range active {
						if a != b && dist[[2]int{a, b}] < 0 && first[0] < 0 {
							first = [2]int{a, b}
						}
					}
				}
				if ok != (first[0] < 0) || (!ok && bad != first) {
					t.Fatalf("%s/%d/%s: Check %v %v, per-pair search first unreachable %v", spec, rep, kind, ok, bad, first)
				}
			}
		}
	}
}

// TestAngaraDeadlock: the BFS angara table on a 4x4 torus uses
// order-violating FS steps and is reported with a cycle made of its own
// dependencies, containing a turn; the angara* and angara− tables of the
// same torus are deadlock-free.
func TestAngaraDeadlock(t *testing.T) {
	g := mustTorus(t, "4x4")
	all := allNodes(g.NumNodes())
	tb, err := buildTable(g, Rule{Kind: Angara}, all, nil, BFS)
	if err != nil {
		t.Fatal(err)
	}
	if tb.DeadlockFree || len(tb.Cycle) < 2 {
		t.Fatalf("angara table: free=%v cycle %v", tb.DeadlockFree, tb.Cycle)
	}
	cg := tb.CDG()
	turn := false
	for i, c := range tb.Cycle {
		next := tb.Cycle[(i+1)%len(tb.Cycle)]
		if !cg.Reaches(int32(c), int32(next)) || g.Dst(c) != g.Src(next) {
			t.Fatalf("cycle step %s → %s is not a dependency", g.ChannelName(c), g.ChannelName(next))
		}
		d1, s1 := g.Dir(c)
		d2, s2 := g.Dir(next)
		turn = turn || d1 != d2 || s1 != s2
	}
	if !turn {
		t.Error("the reported cycle has no turn")
	}
	for _, k := range []Kind{AngaraMinus, AngaraStar, Dirbit, DOR} {
		tb, err := buildTable(g, Rule{Kind: k}, all, nil, BFS)
		if err != nil || !tb.DeadlockFree || tb.CDG().Deadlock(true) != nil {
			t.Errorf("%s: %v free=%v", k, err, tb != nil && tb.DeadlockFree)
		}
	}
}

// TestVerifyDetectsTampering corrupts stored routes and expects Verify to
// object.
func TestVerifyDetectsTampering(t *testing.T) {
	tb := buildFor(t, "4x4x2", "0.0.0+Y", AngaraMinus, "", "", BFS)
	if v := violations(tb); len(v) != 0 {
		t.Fatal(v)
	}
	i := tb.Index(0, 1)
	code := tb.code(i)
	saved := slices.Clone(code)
	code[2+int(tb.r.a.rank[Plus(0)])]++ // one more +X: arrives elsewhere
	if v := violations(tb); len(v) == 0 || v[0].Kind != "arrival" {
		t.Errorf("extra step: %v", v)
	}
	copy(code, saved)
	j := tb.Index(0, tb.Graph().NodeAt([]int{0, 1, 0}))
	c2 := tb.code(j)
	saved = slices.Clone(c2)
	clear(c2)
	c2[2+int(tb.r.a.rank[Plus(1)])] = 1 // +Y over the failed link
	if v := violations(tb); len(v) == 0 || v[0].Kind != "failed-link" {
		t.Errorf("failed link: %v", v)
	}
	copy(c2, saved)
	tb.Figures.PiMax++
	if v := violations(tb); len(v) == 0 || v[len(v)-1].Kind != "stats" {
		t.Errorf("stats: %v", v)
	}
}

// TestConcurrentRouter shares one Router between goroutines (run with
// -race) and checks that results do not depend on interleaving.
func TestConcurrentRouter(t *testing.T) {
	g := mustTorus(t, "4x4x3")
	g, _ = g.ApplyFaults("0.0.0+X,1.2.1+Z", "")
	r := mustRouter(t, g, AngaraStar)
	ref, err := r.Build(context.Background(), allNodes(g.NumNodes()), nil, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var refJSON bytes.Buffer
	ref.WriteJSON(&refJSON)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 3; k++ {
				if ok, _, err := r.ReachableFirst(allNodes(g.NumNodes()), nil); !ok || err != nil {
					errs <- fmt.Errorf("check: %v %v", ok, err)
				}
				tb, err := r.Build(context.Background(), allNodes(g.NumNodes()), nil, BuildOptions{})
				if err != nil {
					errs <- err
					return
				}
				var b bytes.Buffer
				tb.WriteJSON(&b)
				if !bytes.Equal(b.Bytes(), refJSON.Bytes()) {
					errs <- fmt.Errorf("tables differ")
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// LegalPath finds a route exactly for the pairs Check and a plain BFS on
// the RG find one, as short as the RG distance, over working links
// between nodes of the set.
func TestLegalPathMatchesRG(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 5))
	found, none := 0, 0
	for _, spec := range []string{"6x6x3", "5x5x5"} {
		for rep := 0; rep < 3; rep++ {
			g, _, active, transit, inSet := randomScenario(t, rng, spec, []float64{0.02, 0.06, 0.12}[rep], rep > 0, false, rep == 2)
			set := append(slices.Clone(active), transit...)
			for _, kind := range []Kind{Dirbit, AngaraMinus, AngaraStar} {
				r := mustRouter(t, g, kind)
				dist := rgDistances(r, active, inSet)
				for k := 0; k < 40; k++ {
					a, b := active[rng.IntN(len(active))], active[rng.IntN(len(active))]
					if a == b {
						continue
					}
					path, err := r.LegalPath(a, b, set, nil)
					if err != nil {
						t.Fatal(err)
					}
					d := dist[[2]int{a, b}]
					if (path == nil) != (d < 0) || path != nil && len(path)-1 != d {
						t.Fatalf("%s/%d/%s %s→%s: path %v, RG distance %d", spec, rep, kind, g.NodeName(a), g.NodeName(b), path, d)
					}
					if path == nil {
						none++
						// Through other live nodes: the extra nodes it
						// takes join the pair (a plain BFS on the RG).
						p2, err := r.LegalPath(a, b, set, others(g, inSet))
						if err != nil {
							t.Fatal(err)
						}
						if p2 != nil {
							in2 := slices.Clone(inSet)
							for _, v := range p2 {
								in2[v] = true
							}
							if d2 := rgDistances(r, []int{a, b}, in2)[[2]int{a, b}]; d2 < 0 {
								t.Fatalf("%s→%s: path %v through extra nodes, yet the RG does not join them", g.NodeName(a), g.NodeName(b), p2)
							}
						}
						continue
					}
					found++
					// With every other live node offered as extra, a pair
					// joined inside the set takes no extra node.
					withExtra, err := r.LegalPath(a, b, set, others(g, inSet))
					if err != nil || withExtra == nil || slices.ContainsFunc(withExtra, func(v int) bool { return !inSet[v] }) {
						t.Fatalf("%s→%s: with extra nodes %v %v, inside the set %v", g.NodeName(a), g.NodeName(b), withExtra, err, path)
					}
					if path[0] != a || path[len(path)-1] != b {
						t.Fatalf("path %v does not join %d and %d", path, a, b)
					}
					for i := 1; i < len(path); i++ {
						if !inSet[path[i]] || !slices.ContainsFunc(g.Out(path[i-1]), func(c int32) bool { return g.Up(int(c)) && g.Dst(int(c)) == path[i] }) {
							t.Fatalf("path %v: step %d leaves the set or no working link", path, i)
						}
					}
				}
			}
		}
	}
	if found == 0 || none == 0 {
		t.Fatalf("%d pairs with a path, %d without: the scenarios test too little", found, none)
	}
}

// others lists the live nodes outside the set.
func others(g *topology.Graph, inSet []bool) []int {
	var out []int
	for v := range inSet {
		if !inSet[v] && !g.NodeFailed(v) {
			out = append(out, v)
		}
	}
	return out
}

// MissingFrom and ReachableFrom name exactly the sources a BFS on the RG
// finds without a route to some active node, in the order asked, with
// the pair ReachableFirst names; and adding transit nodes never takes a
// route away (what the fabric manager's transit search relies on).
func TestMissingFromMatchesRG(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	sets, missed, partial := 0, 0, 0
	for _, spec := range []string{"6x6x3", "5x5x5", "8x8x3", "4x4x3:mesh=Z"} {
		for rep := 0; rep < 4; rep++ {
			g, order, active, transit, inSet := randomScenario(t, rng, spec, []float64{0, 0.03, 0.06, 0.12}[rep], rep >= 2, rep == 3, rep == 2)
			if len(active) < 2 {
				continue
			}
			for _, kind := range []Kind{Dirbit, AngaraMinus, AngaraStar} {
				r, err := NewRouter(g, Rule{Kind: kind, Order: order})
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s/%d/%s", spec, rep, kind)
				dist := rgDistances(r, active, inSet)
				misses := func(a int) bool {
					for _, b := range active {
						if b != a && dist[[2]int{a, b}] < 0 {
							return true
						}
					}
					return false
				}
				var want []int
				for _, a := range active {
					if misses(a) {
						want = append(want, a)
					}
				}
				slices.Sort(want)
				got, bad, err := r.MissingFrom(active, transit, nil)
				if err != nil {
					t.Fatal(err)
				}
				ok, firstBad, _ := r.ReachableFirst(active, transit)
				if !slices.Equal(got, want) || bad != firstBad || ok != (len(want) == 0) {
					t.Fatalf("%s: MissingFrom %v %v, brute force %v, ReachableFirst %v %v", name, got, bad, want, ok, firstBad)
				}
				sets++
				if len(want) > 0 {
					missed++
				}
				if len(want) > 0 && len(want) < len(active) {
					partial++
				}
				// Sources in a random order, some twice.
				srcs := slices.Clone(active)
				rng.Shuffle(len(srcs), func(i, j int) { srcs[i], srcs[j] = srcs[j], srcs[i] })
				srcs = append(srcs[:1+rng.IntN(len(srcs))], srcs[0])
				var wantOrder []int
				for _, a := range srcs {
					if misses(a) && !slices.Contains(wantOrder, a) {
						wantOrder = append(wantOrder, a)
					}
				}
				got, bad, err = r.MissingFrom(active, transit, srcs)
				if err != nil || !slices.Equal(got, wantOrder) {
					t.Fatalf("%s: MissingFrom(%v) %v %v, brute force %v", name, srcs, got, err, wantOrder)
				}
				ok, bad2, err := r.ReachableFrom(active, transit, srcs)
				if err != nil || ok != (len(wantOrder) == 0) || bad2 != bad {
					t.Fatalf("%s: ReachableFrom %v %v %v, MissingFrom's pair %v", name, ok, bad2, err, bad)
				}
				if len(wantOrder) > 0 {
					// The pair: the first missing source in the order
					// asked, then its smallest destination without a
					// route.
					a := wantOrder[0]
					b := -1
					for _, d := range active {
						if d != a && dist[[2]int{a, d}] < 0 && (b < 0 || d < b) {
							b = d
						}
					}
					if bad != [2]int{a, b} {
						t.Fatalf("%s: pair %v, want %v", name, bad, [2]int{a, b})
					}
				}
				// More transit nodes: never a source more.
				more := slices.Clone(transit)
				for v := range inSet {
					if !inSet[v] && !g.NodeFailed(v) && rng.IntN(3) == 0 {
						more = append(more, v)
					}
				}
				grown, _, err := r.MissingFrom(active, more, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range grown {
					if !slices.Contains(want, v) {
						t.Fatalf("%s: source %s misses with more transit nodes, not with fewer", name, g.NodeName(v))
					}
				}
			}
		}
	}
	if _, _, err := mustRouter(t, mustTorus(t, "4x4"), Dirbit).MissingFrom([]int{0, 1}, nil, []int{2}); err == nil {
		t.Fatal("a source outside the active nodes accepted")
	}
	t.Logf("%d sets, %d with misses, %d partly", sets, missed, partial)
	if missed < 5 || partial < 5 || missed == sets {
		t.Fatalf("%d sets, %d with misses, %d partly: the scenarios test too little", sets, missed, partial)
	}
}
