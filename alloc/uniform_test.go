package alloc

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// TestUniformMatchesEnumeration compares the uniform path (one placement
// per size on an empty torus) with the direct enumeration on small empty
// tori: the same set, rectangle, counts, φ and table figures.
func TestUniformMatchesEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 1))
	specs := []string{"torus:4x4x4", "torus:6x4x2", "torus:5x3x4", "torus:8x4", "torus:4x4x2x2", "torus:3x5x2",
		"torus:4x3x2:mesh=Z", "torus:4x4x3:mesh=Y", "torus:3x2x2x3:mesh=Y,W", "torus:5x4x2:mesh=X,Z"}
	for trial := 0; trial < 250; trial++ {
		spec := specs[trial%len(specs)]
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		rt, err := NewAngaraRouter(g, []string{"angara*", "angara"}[trial%2])
		if err != nil {
			t.Fatal(err)
		}
		m := 1 + r.IntN(s.N()/2)
		req := Request{Nodes: m, Transit: r.IntN(m/2 + 2)}
		want, err := NewSelector(s).Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		sel := NewSelector(s)
		sel.tune.forceUniform = true
		got, err := sel.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s m=%d T=%d", spec, m, req.Transit)
		if got.Found != want.Found || got.Distinct != want.Distinct || got.Examined != want.Examined || got.Ranked != want.Ranked {
			t.Fatalf("%s: uniform found %d distinct %d examined %d ranked %d, enumeration %d %d %d %d", name,
				got.Found, got.Distinct, got.Examined, got.Ranked, want.Found, want.Distinct, want.Examined, want.Ranked)
		}
		if (got.Chosen == nil) != (want.Chosen == nil) {
			t.Fatalf("%s: uniform chose %v, enumeration %v", name, got.Chosen, want.Chosen)
		}
		if want.Chosen == nil {
			continue
		}
		a, b := got.Chosen, want.Chosen
		if !reflect.DeepEqual(a.Active, b.Active) || !reflect.DeepEqual(a.Transit, b.Transit) ||
			!reflect.DeepEqual(a.Rect, b.Rect) || a.Frag != b.Frag || !reflect.DeepEqual(a.Figures, b.Figures) {
			t.Fatalf("%s: uniform chose %+v, enumeration %+v", name, a, b)
		}
		// With a budget, questions for sets that cannot tie on φ are
		// not asked: the same transit count and φ, complete for
		// criteria 1–2 at least.
		req.Budget = time.Hour
		sel = NewSelector(s)
		sel.tune.forceUniform = true
		bud, err := sel.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		if bud.Chosen == nil || len(bud.Chosen.Transit) != len(b.Transit) || bud.Chosen.Frag != b.Frag ||
			bud.Found != want.Found || bud.Complete < CompletePhi || bud.Distinct > want.Distinct {
			t.Fatalf("%s: uniform with a budget chose %+v (found %d, distinct %d, complete %d), enumeration %+v (%d, %d)",
				name, bud.Chosen, bud.Found, bud.Distinct, bud.Complete, b, want.Found, want.Distinct)
		}
		// A router that promises no invariance: only sets that need no
		// answer are decided for their translates, or the decision
		// falls back; criteria 1–2 as the enumeration.
		sel = NewSelector(s)
		sel.tune.forceUniform = true
		loose, err := sel.Select(s, looseRouter{rt}, req)
		if err != nil {
			t.Fatal(err)
		}
		if loose.Chosen == nil || len(loose.Chosen.Transit) != len(b.Transit) || loose.Chosen.Frag != b.Frag {
			t.Fatalf("%s: uniform without invariance chose %+v, enumeration %+v", name, loose.Chosen, b)
		}
		// The same router with R_A− below it (RingLower) and R_A above
		// (RingUpper): sets that could beat the best φ are asked of
		// R_A−, then of R_A, then translate by translate; criteria 1–2
		// as the enumeration.
		lower, err := NewAngaraRouter(g, "angara-")
		if err != nil {
			t.Fatal(err)
		}
		upper, err := NewAngaraRouter(g, "angara")
		if err != nil {
			t.Fatal(err)
		}
		sel = NewSelector(s)
		sel.tune.forceUniform = true
		low, err := sel.Select(s, lowerRouter{rt, lower, upper}, req)
		if err != nil {
			t.Fatal(err)
		}
		if low.Chosen == nil || len(low.Chosen.Transit) != len(b.Transit) || low.Chosen.Frag != b.Frag || low.Complete < CompletePhi {
			t.Fatalf("%s: uniform with R_A− below chose %+v (complete %d), enumeration %+v", name, low.Chosen, low.Complete, b)
		}
		if ok, err := rt.Reachable(low.Chosen.Active, low.Chosen.Transit); err != nil || !ok {
			t.Fatalf("%s: uniform with R_A− below chose a set the router does not reach: %v", name, err)
		}
	}
}

// TestEmptyPhiMatchesPhi checks φ after a set taken from an empty torus,
// from the shapes of the free rectangles, against Phi on the state with
// the set taken, for boxes and reduced blocks of random sizes.
func TestEmptyPhiMatchesPhi(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 2))
	for trial := 0; trial < 200; trial++ {
		spec := []string{"torus:4x4x4", "torus:6x4x2", "torus:5x3x4", "torus:8x4", "torus:4x3x2x2",
			"torus:4x3x2:mesh=Z", "torus:4x4x3:mesh=Y", "torus:3x2x2x3:mesh=Y,W"}[trial%8]
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		dims := s.Dims()
		size := make([]int, len(dims))
		start := make([]int, len(dims))
		for i, d := range dims {
			size[i] = 1 + r.IntN(d)
			switch {
			case size[i] == d:
			case s.wrap[i]:
				start[i] = r.IntN(d)
			default:
				start[i] = r.IntN(d - size[i] + 1)
			}
		}
		v := vol(size)
		m := 1 + r.IntN(v)
		var keep []int
		if r.IntN(2) == 0 {
			keep = []int{}
			for j := 0; j < v-m; j++ {
				if r.IntN(2) == 0 {
					keep = append(keep, j)
				}
			}
		}
		c := &candidate{}
		c.Rect = Rect{Start: start, Size: size}
		c.block = blockSet{start: start, size: size, m: m, keep: keep}
		c.lazy = &c.block
		c.nTransit = v - m
		if keep != nil {
			c.nTransit = len(keep)
		}
		sel := NewSelector(s)
		sel.prepare(s)
		rt, err := NewAngaraRouter(g, "angara*")
		if err != nil {
			t.Fatal(err)
		}
		d := sel.newDecision(s, rt, Request{Nodes: m})
		got, ok := d.emptyPhi(c, 0)
		active, transit := c.lazy.nodes(dims)
		after := s.Clone()
		if err := after.Occupy(1, append(active, transit...)); err != nil {
			t.Fatal(err)
		}
		if want := Phi(after); !ok || got != want {
			t.Fatalf("%s set %v m=%d keep %v: emptyPhi %+v (%v), Phi %+v", spec, c.Rect, m, keep, got, ok, want)
		}
	}
}

// TestBoundedMatchesEnumeration compares the bounded path (placements
// whose φ bound falls below φ* are not examined) with the direct
// enumeration on random busy states of small tori: the same set, φ and
// transit count. So does a bounded path given up because the bound
// phase ended before its free rectangles were listed (boundSpent): the
// placements are enumerated directly, with the same answer.
func TestBoundedMatchesEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 3))
	specs := []string{"torus:4x4x4", "torus:6x4x2", "torus:5x3x4", "torus:8x4", "torus:4x4x2x2", "torus:3x5x2",
		"torus:4x3x2:mesh=Z", "torus:3x2x2x3:mesh=Y,W"}
	bounded, gaveUp, seeded, cutReps := 0, int64(0), int64(0), 0
	var skips atomic.Int64    // placements left out below a candidate's φ
	var topStops atomic.Int64 // listings ended by a candidate of φ_top
	const trials = 500
	for trial := 0; trial < trials; trial++ {
		spec := specs[trial%len(specs)]
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		var busy []int
		p := 0.5 * r.Float64()
		for v := 0; v < s.N(); v++ {
			if r.Float64() < p {
				busy = append(busy, v)
			}
		}
		if err := s.Occupy(1, busy); err != nil {
			t.Fatal(err)
		}
		rt, err := NewAngaraRouter(g, []string{"angara*", "angara"}[trial%2])
		if err != nil {
			t.Fatal(err)
		}
		m := 1 + r.IntN(max(1, s.FreeCount()/2))
		req := Request{Nodes: m, Transit: r.IntN(m/2 + 2)}
		want, err := NewSelector(s).Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		sel := NewSelector(s)
		sel.tune.forceBounded = true
		sel.tune.boundMasks = trial%3 == 0
		sel.tune.boundDirect = trial%3 == 1
		sel.tune.barSkips = &skips
		sel.tune.topStops = &topStops
		sel.tune.listWave = trial % 3 // 0: the default
		req.Budget = time.Hour
		got, err := sel.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s busy %v m=%d T=%d", spec, busy, m, req.Transit)
		if (got.Chosen == nil) != (want.Chosen == nil) {
			t.Fatalf("%s: bounded chose %v, enumeration %v", name, got.Chosen, want.Chosen)
		}
		// Examining the placements of φ_top as their sizes are listed
		// chooses what examining them after the whole list does.
		whole := NewSelector(s)
		whole.tune = sel.tune
		whole.tune.wholeList, whole.tune.topStops = true, nil
		all, err := whole.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(all.Chosen, got.Chosen) || all.Complete != got.Complete {
			t.Fatalf("%s: listed by waves chose %+v (complete %d), listed whole %+v (complete %d)", name, got.Chosen, got.Complete, all.Chosen, all.Complete)
		}
		spent := NewSelector(s)
		spent.tune.forceBounded, spent.tune.boundSpent = true, true
		late, err := spent.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		gaveUp += spent.boundGaveUp.Load()
		seeded += sel.boundSeeded.Load()
		if !reflect.DeepEqual(late.Chosen, want.Chosen) || late.Complete != want.Complete {
			t.Fatalf("%s: the bounded path given up chose %+v (complete %d), enumeration %+v (complete %d)", name, late.Chosen, late.Complete, want.Chosen, want.Complete)
		}
		// A budget that ends while the promising starts are found still
		// leaves each size's representative, a set of φ*, even when the
		// cache kept none of the answers found before.
		cutSel := NewSelector(s)
		cutSel.tune.forceBounded, cutSel.tune.boundMasks, cutSel.tune.cutMasks = true, true, true
		cutSel.tune.forgetAnswers = trial%2 == 0
		cut, err := cutSel.Select(s, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		if cut.Cut != "" && cut.Settled {
			if cut.Chosen == nil || len(cut.Chosen.Transit) != 0 || cut.Complete != CompleteTransit || cut.Chosen.Frag.Phi > want.Chosen.Frag.Phi {
				t.Fatalf("%s: cut while the promising starts were found: %+v (complete %d), enumeration %+v", name, cut.Chosen, cut.Complete, want.Chosen)
			}
			checkChosen(t, name+" (cut)", s, rt, m, cut.Chosen)
			cutReps++
		}
		if want.Chosen == nil {
			continue
		}
		if got.Settled {
			bounded++
		}
		a, b := got.Chosen, want.Chosen
		if len(a.Transit) != len(b.Transit) || a.Frag != b.Frag || got.Complete < CompletePhi {
			t.Fatalf("%s: bounded chose %+v (complete %d, settled %v), enumeration %+v", name, a, got.Complete, got.Settled, b)
		}
		// The bounded path looks for no set that only ties: its set may
		// be another of the tied ones, so it is checked on its own.
		checkChosen(t, name, s, rt, m, a)
	}
	if bounded < trials/4 {
		t.Fatalf("only %d of %d decisions took the bounded path", bounded, trials)
	}
	if seeded < trials/12 {
		t.Fatalf("only %d of %d decisions took φ* from a seed", seeded, trials)
	}
	if skips.Load() == 0 {
		t.Fatal("no placement was left out below a candidate's φ")
	}
	if topStops.Load() == 0 {
		t.Fatal("no listing was ended by a candidate of φ_top")
	}
	if cutReps < trials/12 {
		t.Fatalf("only %d of %d decisions cut while finding the promising starts kept a set of φ*", cutReps, trials)
	}
	t.Logf("%d decisions settled by the bounded path, %d with φ* from a seed, %d bounded paths given up, %d cut with a set of φ*", bounded, seeded, gaveUp, cutReps)
	if gaveUp < trials/4 {
		t.Fatalf("only %d of %d bounded paths were given up at the bound phase's end", gaveUp, trials)
	}
}

// TestWindowSums compares the sliding sums with the prefix-sum query on
// random states of small tori and meshes, for every size and start.
func TestWindowSums(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 4))
	for _, spec := range []string{"torus:4x3x5", "mesh:4x3x2", "torus:3x2x2x3", "torus:7x5", "torus:5x4x3:mesh=Y"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		var busy []int
		for v := 0; v < s.N(); v++ {
			if r.IntN(3) == 0 {
				busy = append(busy, v)
			}
		}
		if err := s.Occupy(1, busy); err != nil {
			t.Fatal(err)
		}
		ws, gr := newWindowSums(s), newGrid(s)
		for _, size := range Shapes(s.Dims()) {
			sums := ws.sums(size)
			placements(s.Dims(), s.wrap, size, func(st []int) bool {
				if got, want := int(sums[enc(st, s.Dims())]), gr.unavailable(st, size); got != want {
					t.Fatalf("%s size %v at %v: window sum %d, prefix sums %d", spec, size, st, got, want)
				}
				return true
			})
		}
	}
}

// TestNoFitCarriedOver fills small tori job by job with one selector,
// which carries the sizes without a free placement from one decision to
// the next while nodes are only taken, and with a fresh selector per
// decision: the same sets and φ; then frees a job (the marks are
// dropped) and compares again.
func TestNoFitCarriedOver(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 5))
	for _, spec := range []string{"torus:4x4x4", "torus:6x4x2", "torus:4x3x2x2"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		rt, err := NewAngaraRouter(g, "angara*")
		if err != nil {
			t.Fatal(err)
		}
		kept := NewSelector(s)
		for job := 1; job < 40; job++ {
			if job%7 == 0 {
				s.Release(job - 3)
			}
			m := 1 + r.IntN(4)
			req := Request{Nodes: m, Transit: r.IntN(3)}
			a, err := kept.Select(s, rt, req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewSelector(s).Select(s, rt, req)
			if err != nil {
				t.Fatal(err)
			}
			if (a.Chosen == nil) != (b.Chosen == nil) {
				t.Fatalf("%s job %d: kept selector chose %v, fresh %v", spec, job, a.Chosen, b.Chosen)
			}
			if a.Chosen == nil {
				continue
			}
			if !reflect.DeepEqual(a.Chosen.Active, b.Chosen.Active) || a.Chosen.Frag != b.Chosen.Frag {
				t.Fatalf("%s job %d: kept selector chose %+v, fresh %+v", spec, job, a.Chosen, b.Chosen)
			}
			if err := s.Occupy(job, append(slices.Clone(a.Chosen.Active), a.Chosen.Transit...)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// looseRouter is a router that promises only that boxes are reachable.
type looseRouter struct{ Router }

func (l looseRouter) Props() RouterProps { return RouterProps{BoxesReachable: true} }

// lowerRouter promises only that boxes are reachable, and names
// ring-invariant routers below and above it.
type lowerRouter struct {
	Router
	lower, upper Router
}

func (l lowerRouter) Props() RouterProps {
	return RouterProps{BoxesReachable: true, RingLower: l.lower, RingUpper: l.upper}
}

// TestRingBounds checks the order the loose uniform path relies on: on
// tori with mesh dimensions where R_A* accepted dependencies, a set R_A−
// reaches R_A* reaches, and a set R_A* reaches R_A reaches (random sets
// of random sizes), and both bounds are ring invariant. R_A* itself is
// ring invariant there (its accepted dependencies are the same at every
// ring translate), so its Props name no bounds: the loose path is for
// routers that are not (lowerRouter).
func TestRingBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 3))
	tried, between := 0, 0
	for _, spec := range []string{"torus:4x3x2:mesh=Z", "torus:4x4x3:mesh=Y", "torus:3x2x2x3:mesh=Y,W", "torus:5x4x2:mesh=X,Z"} {
		g, rt := angaraOn(t, spec)
		p := rt.Props()
		if !p.RingInvariant || p.RingLower != nil || p.RingUpper != nil {
			t.Fatalf("%s: props %+v", spec, p)
		}
		if _, accepted := rt.R.ExtraDependencies(); accepted == 0 {
			continue
		}
		var b RouterProps
		b.RingLower, b.RingUpper = rt.ringBounds()
		p = b
		if !p.RingLower.Props().RingInvariant || !p.RingUpper.Props().RingInvariant {
			t.Fatalf("%s: bounds not ring invariant", spec)
		}
		n := g.NumNodes()
		for trial := 0; trial < 300; trial++ {
			k := 2 + r.IntN(n-1)
			set := r.Perm(n)[:k]
			a := 1 + r.IntN(k)
			active, transit := set[:a], set[a:]
			lo, err1 := p.RingLower.Reachable(active, transit)
			mid, err2 := rt.Reachable(active, transit)
			up, err3 := p.RingUpper.Reachable(active, transit)
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatal(err)
			}
			tried++
			if lo && !mid || mid && !up {
				t.Fatalf("%s: active %v transit %v: R_A− %v, R_A* %v, R_A %v", spec, active, transit, lo, mid, up)
			}
			if !lo && up {
				between++
			}
		}
	}
	if tried == 0 || between == 0 {
		t.Fatalf("no set tells the bounds apart (%d tried)", tried)
	}
}

// checkChosen checks a chosen set on its own: m active nodes, all of the
// set available, reachable, and φ after it as claimed (Phi of the state
// with the set taken).
func checkChosen(t *testing.T, name string, s *State, rt Router, m int, c *Candidate) {
	t.Helper()
	if len(c.Active) != m {
		t.Fatalf("%s: %d active nodes, want %d", name, len(c.Active), m)
	}
	set := append(slices.Clone(c.Active), c.Transit...)
	for _, v := range set {
		if !s.Available(v) {
			t.Fatalf("%s: node %d of the set is not available", name, v)
		}
	}
	ok, err := rt.Reachable(c.Active, c.Transit)
	if err != nil || !ok {
		t.Fatalf("%s: the chosen set is not reachable (%v)", name, err)
	}
	after := s.Clone()
	if err := after.Occupy(99, set); err != nil {
		t.Fatal(err)
	}
	if f := Phi(after); f != c.Frag {
		t.Fatalf("%s: φ after the set is %+v, the answer says %+v", name, f, c.Frag)
	}
}

// TestFitLatticeMatchesScan compares the fit lattice (with witnesses
// carried from earlier states, as a selector carries them, its scans
// probing starts first or not) and its bitsets of free starts (all kept,
// or every other round none but the available nodes') with a plain scan of every placement, for every size
// of small tori, meshes and mixed tori as random nodes are taken and
// freed.
func TestFitLatticeMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 9))
	for _, spec := range []string{"torus:5x4x3", "mesh:4x5x2", "torus:3x2x4x2", "torus:6x4:mesh=Y", "torus:7", "torus:3x2x2x3x2:mesh=W,V"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		dims := s.Dims()
		var witness []int32
		for round := 0; round < 12; round++ {
			for v := 0; v < s.N(); v++ {
				switch {
				case s.Available(v) && r.IntN(8) == 0:
					if err := s.Occupy(1+v, []int{v}); err != nil {
						t.Fatal(err)
					}
				case !s.Available(v) && r.IntN(6) == 0:
					s.Release(1 + v)
				}
			}
			gr := newGrid(s)
			f := newFitLattice(dims, s.wrap, gr)
			f.s = s
			if witness != nil {
				copy(f.witness, witness)
			}
			if round%2 == 1 {
				f.fitBits().limit = 0 // nothing kept but the available nodes
			}
			if round%3 == 0 {
				f.probe = 0 // every scan in the bitsets
			}
			size := make([]int, len(dims))
			for idx := range f.state {
				x := idx
				for i, d := range dims {
					size[i] = x%d + 1
					x /= d
				}
				want := false
				placements(dims, s.wrap, size, func(st []int) bool {
					want = gr.unavailable(st, size) == 0
					return !want
				})
				if got := f.fits(size); got != want {
					t.Fatalf("%s round %d, size %v: fits %v, a scan of every placement says %v", spec, round, size, got, want)
				}
				free := f.fitBits().free(idx, size)
				placements(dims, s.wrap, size, func(st []int) bool {
					v := enc(st, dims)
					if got, want := free[v/64]>>(v%64)&1 == 1, gr.unavailable(st, size) == 0; got != want {
						t.Fatalf("%s round %d, size %v at %v: free %v, its nodes say %v", spec, round, size, st, got, want)
					}
					return true
				})
				if want {
					st := make([]int, len(dims))
					dec(int(f.witness[idx]), dims, st)
					if gr.unavailable(st, size) != 0 {
						t.Fatalf("%s round %d, size %v: the witness at %v is not free", spec, round, size, st)
					}
				}
			}
			witness = slices.Clone(f.witness)
		}
	}
}

// TestStairBoxesAreTheSet checks the exact test of φ the bounded path uses: on random
// busy states of small tori, for random rectangles with at least m
// available nodes, the available nodes of the union of stairBoxes are
// exactly the first m available nodes of the rectangle (the set without
// transit nodes), and a rectangle with fewer has no boxes.
func TestStairBoxesAreTheSet(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 11))
	for _, spec := range []string{"torus:5x4x3", "torus:4x3x2x3", "mesh:6x5", "torus:6x4:mesh=Y"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		dims := s.Dims()
		var busy []int
		for v := 0; v < s.N(); v++ {
			if r.IntN(4) == 0 {
				busy = append(busy, v)
			}
		}
		rt := occupiedAngara(t, s, busy)
		sel := NewSelector(s)
		sel.prepare(s)
		checked := 0
		for trial := 0; trial < 400; trial++ {
			size := make([]int, len(dims))
			for i, d := range dims {
				size[i] = 1 + r.IntN(d)
			}
			st := make([]int, len(dims))
			limit := make([]int, len(dims))
			if placementLimits(dims, s.wrap, size, limit) == 0 {
				continue
			}
			for i := range st {
				st[i] = r.IntN(limit[i])
			}
			holes := sel.grid.unavailable(st, size)
			if vol(size)-holes < 1 {
				continue
			}
			m := 1 + r.IntN(vol(size)-holes)
			d := sel.newDecision(s, rt, Request{Nodes: m})
			var ws workerScratch
			var avail []int
			for _, x := range ws.rectNodes(dims, st, size) {
				if s.Available(x) {
					avail = append(avail, x)
				}
			}
			set := map[int]bool{}
			for _, x := range avail[:m] {
				set[x] = true
			}
			union := map[int]bool{}
			for _, b := range d.stairBoxes(0, size, st) {
				for _, x := range ws.rectNodes(dims, b.Start, b.Size) {
					if s.Available(x) {
						union[x] = true
					}
				}
			}
			if !maps.Equal(union, set) {
				t.Fatalf("%s %v@%v m=%d: the boxes %v hold %d available nodes, not the set's %d", spec, size, st, m, d.stairBoxes(0, size, st), len(union), len(set))
			}
			if len(avail) < vol(size) && sel.newDecision(s, rt, Request{Nodes: len(avail) + 1}).stairBoxes(0, size, st) != nil {
				t.Fatalf("%s %v@%v: boxes for %d nodes in a rectangle of %d available", spec, size, st, len(avail)+1, len(avail))
			}
			checked++
		}
		if checked < 200 {
			t.Fatalf("%s: only %d rectangles checked", spec, checked)
		}
	}
}

// TestRectMaskMatchesCounts compares rectMask (a bit per rectangle)
// with the cover counter's counts: for random levels of up to 64 or 200
// random rectangles (one word per set of rectangles, or several) on
// small tori, meshes and mixed tori, random boxes and random counts at
// the level of φ*, the same starts among the box's placements.
func TestRectMaskMatchesCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 17))
	for _, spec := range []string{"torus:5x4x3", "mesh:4x5x2", "torus:3x2x4x2", "torus:6x4:mesh=Y", "torus:3x2x2x3x2:mesh=W,V", "torus:13x5:mesh=Y", "torus:70x2"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewState(g)
		dims := s.Dims()
		cc := newCoverCounter(dims, s.wrap)
		buf := make([]int32, s.N())
		limit := make([]int, len(dims))
		for trial := 0; trial < 200; trial++ {
			randomBox := func() Rect {
				for {
					size := make([]int, len(dims))
					for i, d := range dims {
						size[i] = 1 + r.IntN(d)
					}
					if placementLimits(dims, s.wrap, size, limit) == 0 {
						continue
					}
					st := make([]int, len(dims))
					for i := range st {
						st[i] = r.IntN(limit[i])
					}
					return Rect{Start: st, Size: size}
				}
			}
			var bl boundLevels
			left := 1 + r.IntN([]int{64, 200}[trial%2])
			for left > 0 {
				k := min(left, 1+r.IntN(12))
				left -= k
				var rs []Rect
				for range k {
					rs = append(rs, randomBox())
				}
				bl.vols = append(bl.vols, 1)
				bl.rects = append(bl.rects, rs)
			}
			bl.starLevel = len(bl.rects) - 1
			bl.starCount = r.IntN(len(bl.rects[bl.starLevel]) + 1)
			bl.beat = r.IntN(2) == 0
			a := randomBox().Size
			want := make([]uint64, (s.N()+63)/64)
			for li, rs := range bl.rects {
				cc.count(a, rs, buf)
				for v, met := range buf {
					if len(rs)-int(met) >= bl.need(li) {
						want[v/64] |= 1 << (v % 64)
					}
				}
			}
			got := make([]uint64, len(want))
			bl.rectMask(a, dims, s.wrap, got)
			placements(dims, s.wrap, a, func(st []int) bool {
				v := enc(st, dims)
				if g, w := got[v/64]>>(v%64)&1, want[v/64]>>(v%64)&1; g != w {
					t.Fatalf("%s box %v at %v, levels %v (φ* %d at %d, beat %v): rect mask %d, counts %d", spec, a, st, bl.rects, bl.starCount, bl.starLevel, bl.beat, g, w)
				}
				return true
			})
		}
	}
}
