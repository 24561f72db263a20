package routing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// bruteForce enumerates every route that the rule's definition (seed 001
// §2.1) allows from every set node, independently of RG and of
// Router.legal: an optional First Step (positive), then the standard part
// built per direction in order, then an optional Last Step (negative).
// Each standard segment is 0..d steps long: a longer one contains a full
// ring loop whose removal leaves a legal route (removing exactly d steps
// may drop the direction, which changes an FS/LS boundary, so d itself
// is kept). It returns, per ordered pair of active nodes, the length of
// the shortest legal route inside the set, or -1.
func bruteForce(r *Router, active []int, inSet []bool) map[[2]int]int {
	t := r.t
	n := t.n
	order := r.order
	rank := r.a.rank
	kind := r.rule.Kind
	isAct := make([]bool, t.nodes)
	for _, v := range active {
		isAct[v] = true
	}
	best := map[[2]int]int{}
	for _, a := range active {
		for _, b := range active {
			if a != b {
				best[[2]int{a, b}] = -1
			}
		}
	}
	// standard parts as counts per rank
	var parts [][]int
	cnt := make([]int, 2*n)
	var rec func(k int)
	switch kind {
	case DOR:
		rec = func(k int) {
			if k == 2*n {
				parts = append(parts, append([]int(nil), cnt...))
				return
			}
			for c := 0; c <= t.dims[order[k].Dim()]; c++ {
				cnt[k] = c
				rec(k + 1)
			}
			cnt[k] = 0
		}
	default:
		rec = func(dim int) {
			if dim == n {
				parts = append(parts, append([]int(nil), cnt...))
				return
			}
			rec(dim + 1)
			for _, d := range []Dir{Plus(dim), Minus(dim)} {
				for c := 1; c <= t.dims[dim]; c++ {
					cnt[rank[d]] = c
					rec(dim + 1)
				}
				cnt[rank[d]] = 0
			}
		}
	}
	rec(0)
	fsOpts := []int{-1}
	lsOpts := []int{-1}
	if kind.HasFSLS() {
		for dim := 0; dim < n; dim++ {
			fsOpts = append(fsOpts, int(Plus(dim)))
			lsOpts = append(lsOpts, int(Minus(dim)))
		}
	}
	okBoundary := func(from, to Dir, in int32) bool {
		switch {
		case rank[to] >= rank[from]:
			return true
		case kind == Angara:
			return true
		case kind == AngaraStar:
			return r.ExtraAllowed(int(in), to)
		}
		return false
	}
	var seq []Dir
	for _, src := range active {
		for _, p := range parts {
			for _, fs := range fsOpts {
				for _, ls := range lsOpts {
					seq = seq[:0]
					if fs >= 0 {
						seq = append(seq, Dir(fs))
					}
					for k, c := range p {
						for i := 0; i < c; i++ {
							seq = append(seq, order[k])
						}
					}
					if ls >= 0 {
						seq = append(seq, Dir(ls))
					}
					if len(seq) == 0 {
						continue
					}
					// walk
					v := src
					ok := true
					var prevCh int32 = -1
					for k, d := range seq {
						c := t.chAt(v, d)
						if !live(r.up, c) {
							ok = false
							break
						}
						if k > 0 {
							isFSBoundary := fs >= 0 && k == 1
							isLSBoundary := ls >= 0 && k == len(seq)-1
							if (isFSBoundary || isLSBoundary) && !okBoundary(seq[k-1], d, prevCh) {
								ok = false
								break
							}
						}
						prevCh = c
						v = int(t.nbAt(v, d))
						if k+1 < len(seq) && !inSet[v] {
							ok = false
							break
						}
					}
					if !ok || !isAct[v] || v == src {
						continue
					}
					key := [2]int{src, v}
					if l := best[key]; l < 0 || len(seq) < l {
						best[key] = len(seq)
					}
				}
			}
		}
	}
	return best
}

// rgDistances runs a plain BFS on the RG (through its public Succ) from
// every active node, restricted to the set.
func rgDistances(r *Router, active []int, inSet []bool) map[[2]int]int {
	rg := r.RG()
	out := map[[2]int]int{}
	var buf []Edge
	for _, a := range active {
		dist := map[int]int{rg.Begin(a): 0}
		queue := []int{rg.Begin(a)}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			buf = rg.Succ(x, buf[:0])
			for _, e := range buf {
				if !inSet[rg.Node(e.To)] {
					continue
				}
				if _, seen := dist[e.To]; seen {
					continue
				}
				if e.Step {
					dist[e.To] = dist[x] + 1
				} else {
					dist[e.To] = dist[x]
				}
				queue = append(queue, e.To)
			}
		}
		for _, b := range active {
			if b == a {
				continue
			}
			d, ok := dist[rg.End(b)]
			if !ok {
				d = -1
			}
			out[[2]int{a, b}] = d
		}
	}
	return out
}

// randomScenario draws failed links, a direction order and a set.
func randomScenario(t *testing.T, rng *rand.Rand, spec string, failFrac float64, subset, randomOrder, failNode bool) (*topology.Graph, Order, []int, []int, []bool) {
	g := mustTorus(t, spec)
	n := len(g.Dims())
	var links, nodes []int
	for l := 0; l < g.NumLinks(); l++ {
		if rng.Float64() < failFrac {
			links = append(links, l)
		}
	}
	if failNode {
		nodes = append(nodes, rng.IntN(g.NumNodes()))
	}
	g, err := g.WithFaults(links, nodes)
	if err != nil {
		t.Fatal(err)
	}
	var order Order
	if randomOrder {
		order = DefaultOrder(n)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	inSet := make([]bool, g.NumNodes())
	var active, transit []int
	for v := 0; v < g.NumNodes(); v++ {
		if g.NodeFailed(v) {
			continue
		}
		switch {
		case !subset || rng.Float64() < 0.5:
			active = append(active, v)
			inSet[v] = true
		case rng.Float64() < 0.6:
			transit = append(transit, v)
			inSet[v] = true
		}
	}
	return g, order, active, transit, inSet
}

// TestBruteForceRG proves on small tori (≤ 3D, ≤ 4 per dimension; some
// dimensions meshes) with
// random failed links and nodes, random direction orders and random sets,
// for every rule, that a legal route exists iff RG has a path, that
// Reachable agrees, and that BFS tables consist of shortest legal routes
// and pass verification.
func TestBruteForceRG(t *testing.T) {
	specs := []string{"4", "3x4", "4x2", "2x2", "3x3", "2x3x2", "3x2x3", "4x4x2", "2x2x2", "4x3x2",
		"4:mesh=X", "3x4:mesh=X", "2x2:mesh=X", "2x3x2:mesh=X,Z", "4x3x2:mesh=Z"}
	if !testing.Short() {
		specs = append(specs, "4x4x4", "3x3x3")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	trials := 0
	for _, spec := range specs {
		for rep := 0; rep < 3; rep++ {
			fail := []float64{0, 0.12, 0.3}[rep]
			subset := rep > 0 && rng.IntN(2) == 0
			g, order, active, transit, inSet := randomScenario(t, rng, spec, fail, subset, rng.IntN(3) == 0, rep == 2 && rng.IntN(2) == 0)
			if len(active) == 0 {
				continue
			}
			for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
				name := fmt.Sprintf("%s/fail=%v/%s/order=%v", spec, fail, kind, order)
				r, err := NewRouter(g, Rule{Kind: kind, Order: order})
				if err != nil {
					t.Fatal(name, err)
				}
				trials++
				want := bruteForce(r, active, inSet)
				got := rgDistances(r, active, inSet)
				all := true
				for k, w := range want {
					if got[k] != w {
						t.Fatalf("%s: %v→%v brute force %d, RG %d", name, g.NodeName(k[0]), g.NodeName(k[1]), w, got[k])
					}
					if w < 0 {
						all = false
					}
				}
				ok, bad, err := r.ReachableFirst(active, transit)
				if err != nil {
					t.Fatal(name, err)
				}
				if ok != all {
					t.Fatalf("%s: Reachable %v, brute force %v", name, ok, all)
				}
				if !ok {
					if want[bad] >= 0 {
						t.Fatalf("%s: reported pair %v is reachable", name, bad)
					}
					if _, err := r.Build(context.Background(), active, transit, BuildOptions{}); err == nil {
						t.Fatalf("%s: table built for an unreachable set", name)
					}
					continue
				}
				tb, err := r.Build(context.Background(), active, transit, BuildOptions{})
				if err != nil {
					t.Fatal(name, err)
				}
				for i := 0; i < tb.NumRoutes(); i++ {
					s, d := tb.Pair(i)
					if l := tb.Len(i); l != want[[2]int{s, d}] {
						t.Fatalf("%s: route %v→%v has %d steps, shortest legal is %d", name, s, d, l, want[[2]int{s, d}])
					}
				}
				if v := violations(tb); len(v) > 0 {
					t.Fatalf("%s: %v", name, v[0])
				}
				if kind != Angara && !tb.DeadlockFree {
					t.Fatalf("%s: table deadlocks", name)
				}
			}
		}
	}
	t.Logf("%d scenarios", trials)
}
