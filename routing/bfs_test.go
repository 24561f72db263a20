package routing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBFSMatchesReference checks that the set-local search with one
// source per round builds exactly the table of the sequential reference
// (same routes, same loads, same figures) on random tori, failures, orders
// and sets under every rule, and whole fault-free tori under angara*.
func TestBFSMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 14))
	type tcase struct {
		spec           string
		fail           float64
		subset, rorder bool
	}
	var cases []tcase
	for _, spec := range []string{"4x4", "5x3", "6x2", "4x3x2", "3x3x3", "4x4x2", "2x3x2x2", "3x2x2x2"} {
		cases = append(cases, tcase{spec, 0, false, false}, tcase{spec, 0.06, true, true}, tcase{spec, 0.1, false, true}, tcase{spec, 0.03, true, false})
	}
	built := 0
	for ci, c := range cases {
		g, order, active, transit, _ := randomScenario(t, rng, c.spec, c.fail, c.subset, c.rorder, ci%3 == 0)
		for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
			r, err := NewRouter(g, Rule{Kind: kind, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s/%d/%s", c.spec, ci, kind)
			ref, errRef := r.buildRef(active, transit)
			fast, errFast := r.Build(context.Background(), active, transit, BuildOptions{Batch: 1})
			var ue *UnreachableError
			if errRef != nil || errFast != nil {
				if !errors.As(errRef, &ue) || !errors.As(errFast, &ue) {
					t.Fatalf("%s: reference error %v, fast error %v", name, errRef, errFast)
				}
				continue
			}
			sameTable(t, name, ref, fast)
			built++
		}
	}
	if built < len(cases) {
		t.Fatalf("only %d reachable scenarios", built)
	}
	t.Logf("%d tables compared", built)
	for _, spec := range []string{"8x8", "6x5x4", "4x4x4x2"} {
		g := mustTorus(t, spec)
		r := mustRouter(t, g, AngaraStar)
		all := allNodes(g.NumNodes())
		ref, err := r.buildRef(all, nil)
		if err != nil {
			t.Fatal(err)
		}
		fast, err := r.Build(context.Background(), all, nil, BuildOptions{Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		sameTable(t, spec, ref, fast)
	}
}

func sameTable(t *testing.T, name string, a, b *Table) {
	t.Helper()
	if !bytes.Equal(a.codes, b.codes) {
		for i := 0; i < a.NumRoutes(); i++ {
			if !bytes.Equal(a.code(i), b.code(i)) {
				src, dst := a.Pair(i)
				t.Fatalf("%s: route %d→%d: reference %v, fast %v", name, src, dst, a.Route(i).Dirs, b.Route(i).Dirs)
			}
		}
	}
	if !slices.Equal(a.loads, b.loads) {
		t.Fatalf("%s: loads differ", name)
	}
	if a.Figures != b.Figures || a.SumLength != b.SumLength {
		t.Fatalf("%s: figures %+v vs %+v", name, a.Figures, b.Figures)
	}
}

// TestBFSWorkersIndependent checks that rounds of several sources give the
// same table whatever the number of workers (1, 2, 3, 8, on the pool even
// for these small sets), and that every such table is verified (minimal,
// legal, deadlock-free).
func TestBFSWorkersIndependent(t *testing.T) {
	for _, limit := range []int{defaultTuning().maxOrderNodes, 0} { // exact order of heuristic 1, interleaved chains
		bfsWorkersIndependent(t, func(tu *tuning) { tu.poolMinRoutes, tu.maxOrderNodes = 0, limit })
	}
}

func bfsWorkersIndependent(t *testing.T, tune func(*tuning)) {
	rng := rand.New(rand.NewPCG(9, 3))
	compared := 0
	for _, spec := range []string{"6x6", "4x4x3", "3x3x2x2", "5x4"} {
		g, order, active, transit, _ := randomScenario(t, rng, spec, 0.04, true, false, false)
		r, err := newTunedRouter(g, Rule{Kind: AngaraStar, Order: order}, tune)
		if err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{2, 5} {
			var first *Table
			for _, w := range []int{1, 2, 3, 8} {
				tb, err := r.Build(context.Background(), active, transit, BuildOptions{Batch: batch, Workers: w})
				if err != nil {
					var ue *UnreachableError
					if errors.As(err, &ue) {
						break
					}
					t.Fatal(err)
				}
				if v := violations(tb); len(v) > 0 {
					t.Fatalf("%s batch %d: %v", spec, batch, v[0])
				}
				if first == nil {
					first = tb
				} else {
					sameTable(t, fmt.Sprintf("%s/batch %d/workers %d", spec, batch, w), first, tb)
					compared++
				}
			}
		}
	}
	if compared == 0 {
		t.Fatal("no reachable scenario")
	}
}

// TestTranslatedOrder checks that on whole fault-free tori the order of
// heuristic 1 from one translated distance row equals the order from a
// search per source, for every rule and random direction orders.
func TestTranslatedOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 8))
	for _, spec := range []string{"4x4", "5x3", "4x3x2", "3x3x3", "2x3x2x2"} {
		g := mustTorus(t, spec)
		for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
			n := len(g.Dims())
			order := DefaultOrder(n)
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			r, err := NewRouter(g, Rule{Kind: kind, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			s := r.getScratch()
			if err := r.prepareSet(s, allNodes(g.NumNodes()), nil); err != nil {
				t.Fatal(err)
			}
			bs := &bfsSearch{p: r.plan, ls: r.newLocalSet(s, true), tune: &r.tune}
			r.putScratch(s)
			ws := []*bfsWorker{bs.newWorker()}
			searched := chainOrder(bs.ls.m, bs.orderNext(ws, true))
			bs.translate = newTorusShift(r.t)
			translated := chainOrder(bs.ls.m, bs.orderNext(ws, true))
			if searched == nil || !slices.Equal(searched, translated) {
				t.Fatalf("%s %s %s: searched %v, translated %v", spec, kind, order, searched, translated)
			}
		}
	}
}

// TestTopCandidates checks the next round of the interleaved chains
// chosen from each row's best B unscheduled candidates against a scan of
// the whole rows, on random rows with many ties.
func TestTopCandidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 17))
	for trial := 0; trial < 2000; trial++ {
		m, B := 1+rng.IntN(40), 1+rng.IntN(8)
		nr := 1 + rng.IntN(B)
		rows := make([][]int32, nr)
		for k := range rows {
			rows[k] = make([]int32, m)
			for v := range rows[k] {
				rows[k][v] = int32(rng.IntN(5))
			}
		}
		scheduled := make([]bool, m)
		for v := range scheduled {
			scheduled[v] = rng.IntN(3) == 0
		}
		// the whole-row scan: the k-th pick is the unscheduled node
		// farthest in row k mod nr, the smallest index among equals
		want := []int{}
		sch := slices.Clone(scheduled)
		for k := 0; k < B; k++ {
			best, far := -1, int32(-1)
			for v, d := range rows[k%nr] {
				if !sch[v] && d > far {
					best, far = v, d
				}
			}
			if best < 0 {
				break
			}
			sch[best] = true
			want = append(want, best)
		}
		j := &tableJob{B: B, round: make([]int, nr), cands: make([][]int32, nr), scheduled: slices.Clone(scheduled)}
		for k := range rows {
			j.cands[k] = topCandidates(nil, rows[k], scheduled, B)
		}
		if got := j.nextRound(); !slices.Equal(got, want) {
			t.Fatalf("rows %v, scheduled %v, B %d: next round %v, want %v", rows, scheduled, B, got, want)
		}
	}
}

// chainOrder is the order of heuristic 1 given its step (nil: none).
func chainOrder(m int, next func(cur int, done []bool) int) []int {
	if next == nil {
		return nil
	}
	order := make([]int, 0, m)
	done := make([]bool, m)
	for cur := 0; len(order) < m; {
		order = append(order, cur)
		done[cur] = true
		if len(order) < m {
			cur = next(cur, done)
		}
	}
	return order
}

// TestQuickCodeAgrees: the table verification's check from route codes
// accepts exactly the routes the definitional check accepts, on random
// tables (every route) and on randomly altered codes.
func TestQuickCodeAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 4))
	tested, altered := 0, 0
	for ci, spec := range []string{"4x4", "5x3", "4x3x2", "3x3x3", "2x3x2x2", "6x2", "3x3x2"} {
		g, order, active, transit, inSet := randomScenario(t, rng, spec, 0.06, ci%2 == 0, true, false)
		for _, kind := range []Kind{DOR, Dirbit, AngaraMinus, Angara, AngaraStar} {
			r, err := NewRouter(g, Rule{Kind: kind, Order: order})
			if err != nil {
				t.Fatal(err)
			}
			tb, err := r.Build(context.Background(), active, transit, BuildOptions{})
			if err != nil {
				continue
			}
			set := append(append([]int(nil), tb.Active...), tb.Transit...)
			rc := r.newRouteChecker(set, inSet)
			w1, w2 := rc.newWorker(), rc.newWorker()
			for i := 0; i < tb.NumRoutes(); i++ {
				src, dst := tb.Pair(i)
				if !rc.quickCode(w1, tb, i, src, dst) {
					t.Fatalf("%s %s: valid route %d rejected by the code check", spec, kind, i)
				}
				tested++
				// alter the code and compare both checks
				c := tb.code(i)
				save := slices.Clone(c)
				c[rng.IntN(len(c))] = byte(rng.IntN(4))
				dirs := tb.AppendDirs(i, nil)
				n2 := w2.nviol
				rc.check(w2, i, src, dst, dirs)
				valid := w2.nviol == n2
				if rc.quickCode(w1, tb, i, src, dst) && !valid {
					t.Fatalf("%s %s: altered route %d %v accepted by the code check", spec, kind, i, dirs)
				}
				altered++
				copy(c, save)
			}
		}
	}
	if tested == 0 {
		t.Fatal("no table built")
	}
	t.Logf("%d routes, %d altered codes", tested, altered)
}

// TestBFSPoolStops checks the ends of a construction on the pool of
// workers other than success, for 1, 2, 3 and 8 workers: a context
// cancelled after half the sources stops it with the context's error,
// and an unreachable pair is reported as the same pair whatever the
// number of workers.
func TestBFSPoolStops(t *testing.T) {
	g := mustTorus(t, "8x8x4")
	r := mustRouter(t, g, AngaraStar)
	all := allNodes(g.NumNodes())
	for _, w := range []int{1, 2, 3, 8} {
		ctx, cancel := context.WithCancel(context.Background())
		progress := func(done, total int) {
			if done == total/2 {
				cancel()
			}
		}
		_, err := r.Build(ctx, all, nil, BuildOptions{Workers: w, Progress: progress})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%d workers: cancelled build returned %v", w, err)
		}
	}
	// two planes that do not touch: the pair the first search misses
	// is reported
	planes, err := g.ParseNodes("*.*.0,*.*.2")
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for _, w := range []int{1, 2, 3, 8} {
		_, err := r.Build(context.Background(), planes, nil, BuildOptions{Workers: w})
		var ue *UnreachableError
		if !errors.As(err, &ue) {
			t.Fatalf("%d workers: want an unreachable pair, got %v", w, err)
		}
		if first == "" {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("%d workers: %v, with 1 worker: %s", w, err, first)
		}
	}
}
