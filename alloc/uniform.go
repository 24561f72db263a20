package alloc

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/par"
)

// On a torus without unavailable nodes and failed links, translation is an
// automorphism of the machine and of the router's answers: every placement
// of a rectangle size is a translate of the size's first placement, with
// the same reachability, reduction, table figures and φ after allocation.
// A decision there (uniform) examines one placement per size and counts
// the others: the first placement of a size is the first in enumeration
// order among its translates, so the set chosen is the one the direct
// enumeration chooses (TestUniformMatchesEnumeration), and the counts
// (Found, Distinct, Examined) are the enumeration's. φ after a set is
// computed from the shapes of the free rectangles rather than from lists
// of them (emptyPhi).

// uniformAfter is the number of placements above which a decision on an
// empty torus takes the uniform path; below it the decision enumerates
// (milliseconds) exactly as before, so replays of small machines stay as
// they were.
const uniformAfter = 1 << 19

// questionPairSeconds estimates a reachability question's time per
// ordered pair of the set's active nodes and core (measured on 2 cores:
// 120 questions on sets of 4 096 nodes in 14 s, 1 035 of 1 024 nodes in
// 3.3 s).
const questionPairSeconds = 7e-9

// uniform reports whether the decision may take the uniform path.
func (d *decision) uniform() bool {
	sel := d.sel
	if d.req.Algo != Improved || d.req.CountOnly || d.req.Exists || sel.anyFault ||
		!(d.ringInvariant || d.req.Budget > 0 && d.boxes) || d.s.FreeCount() != d.s.N() ||
		sel.tune.cutAfter > 0 || sel.tune.cutAfterAsks > 0 || d.changed != nil || sel.tune.noUniform {
		return false
	}
	return sel.tune.forceUniform || d.manyPlacements()
}

// placementCount is the number of placements of a rectangle size.
func placementCount(dims []int, wrap []bool, size []int) int {
	n := 1
	for i, d := range dims {
		n *= startsAlong(d, wrap[i], size[i])
	}
	return n
}

// manyPlacements reports whether the decision's sizes have more than
// uniformAfter placements in all.
func (d *decision) manyPlacements() bool {
	total := 0
	for _, size := range d.sizes {
		total += placementCount(d.sel.dims, d.sel.wrap, size)
		if total > uniformAfter {
			return true
		}
	}
	return false
}

// enumerateUniform examines the first placement of every size and counts
// its translates as examined and found alike (blocks are reachable). The
// sizes of volume m come first: their sets have no transit node, so
// criterion 1 is settled at 0 when one exists, and the set of a larger
// size can only compete without transit nodes: its first m nodes, when
// they are reachable alone. Where those form a box that is known without
// asking; otherwise the reachability question (the expensive part on a
// large torus) is asked only when the set's φ can reach the best φ of
// the sets known so far, or, without a budget, for every such size so
// that the counts are the enumeration's.
func (d *decision) enumerateUniform() ([]sizeResult, bool) {
	// Without answers invariant along the rings (R_A* on a torus with
	// mesh dimensions accepts dependencies that depend on the whole
	// torus), only sets that need no answer of the router are decided
	// for their translates: boxes (reachable under every rule) of m
	// nodes, and larger blocks whose first m nodes form a box. Sets that
	// would need a question can then only tie, or the path is given up.
	loose := !d.ringInvariant
	results := make([]sizeResult, len(d.sizes))
	var first, rest []int
	for _, si := range d.sizeOrder() {
		if vol(d.sizes[si]) == d.m {
			first = append(first, si)
		} else {
			rest = append(rest, si)
		}
	}
	cap := d.meshPositions()
	one := func(w, si int) {
		size := d.sizes[si]
		out := &results[si]
		count := ringCount(d.sel.dims, d.sel.wrap, size)
		placementsBelow(d.sel.dims, d.sel.wrap, size, cap, func(st []int) bool {
			ex, found := out.examined, out.found
			ok := d.examine(w, size, st, out, nil)
			out.examined += (out.examined - ex) * (count - 1)
			out.found += (out.found - found) * (count - 1)
			return ok
		})
	}
	run := func(list []int, f func(w, si int)) {
		par.For(len(list), d.sel.Workers, func(w, k int) { f(w, list[k]) })
	}
	run(first, one)
	if d.bestT.Load() > 0 {
		if loose {
			return nil, false
		}
		run(rest, one)
		return results, true
	}
	deferred := make([]bool, len(d.sizes))
	run(rest, func(w, si int) {
		size := d.sizes[si]
		if leadingBlock(size, d.m) != nil {
			one(w, si)
			return
		}
		if d.clock.enum.Load() {
			d.cutHit.Store(true)
			return
		}
		count := placementCount(d.sel.dims, d.sel.wrap, size)
		results[si].examined, results[si].found = count, count
		deferred[si] = true
	})
	var top int64
	for _, r := range results {
		for _, c := range r.cands {
			if f, ok := d.emptyPhi(c, top); ok {
				top = max(top, f.Phi)
			}
		}
	}
	ask, beats := d.uniformAsks(rest, deferred, cap, top, loose)
	if beats {
		return nil, false
	}
	if loose {
		// Translates were not compared by their tables.
		d.tiesLeft.Store(true)
		d.looseBeater(ask, results)
		return results, true
	}
	d.askAlone(ask, results)
	return results, true
}

// meshPositions bounds the starts the uniform path examines: one
// placement per position along the mesh dimensions (start 0 along the
// rings) stands for its ring translates.
func (d *decision) meshPositions() []int {
	cap := make([]int, len(d.sel.dims))
	for i, di := range d.sel.dims {
		cap[i] = 1
		if !d.sel.wrap[i] {
			cap[i] = di
		}
	}
	return cap
}

// uniformPlacement is the placement of size index si at st whose first m
// nodes make a set without transit nodes (the uniform path's sets).
func (d *decision) uniformPlacement(si int, st []int) placement {
	size := d.sizes[si]
	return placement{rect: Rect{Start: st, Size: size}, nTransit: vol(size) - d.m, block: true, blockSize: size}
}

// uniformAsks lists the sets of the deferred sizes (those whose first m
// nodes are not a box) that must be asked about, given top, the best φ
// of the sets known. Sets that can only tie on φ matter for criteria 3–4
// alone; with a budget their questions are asked only as far as their
// expected time fits the table allowance (questionPairSeconds per
// ordered pair of active nodes), in order, so that the answer does not
// depend on timing; the others are left out and the answer is complete
// for criteria 1–2. Sets that could beat the best φ known are always
// asked; when the router's answers are not ring invariant (loose) they
// are listed with their φ for looseBeater, or, without a router below
// it, beats reports that the path must give way.
func (d *decision) uniformAsks(rest []int, deferred []bool, cap []int, top int64, loose bool) (ask []*uniformRep, beats bool) {
	// The sets, in order; their candidates and φ after allocation (the
	// costly part) on all cores, then weighed in order.
	type set struct {
		si   int
		st   []int
		c    *candidate
		f    Fragmentation
		ok   bool // φ reaches the bound
		done bool // weighed before the rank phase ended
	}
	var sets []set
	for _, si := range rest {
		if deferred[si] {
			placementsBelow(d.sel.dims, d.sel.wrap, d.sizes[si], cap, func(st []int) bool {
				sets = append(sets, set{si: si, st: slices.Clone(st)})
				return true
			})
		}
	}
	bound, weigh := top, d.req.Budget > 0
	if loose {
		bound, weigh = top+1, true
	}
	par.For(len(sets), d.sel.Workers, func(w, k int) {
		if d.clock.rank.Load() {
			return
		}
		e := &sets[k]
		e.c = d.newCandidate(w, d.uniformPlacement(e.si, e.st), []int{})
		if weigh {
			// Exact when ok (emptyPhi).
			e.f, e.ok = d.emptyPhi(e.c, bound)
		}
		e.done = true
	})
	allow := tableAllowShare * d.req.Budget.Seconds() * float64(par.Workers(d.sel.Workers))
	spent := 0.0
	for _, e := range sets {
		if !e.done || d.clock.rank.Load() {
			// Sets left unweighed could beat the best φ.
			d.rankCut.Store(true)
			break
		}
		if loose {
			if !e.ok {
				d.tiesLeft.Store(true)
				continue
			}
			if d.ringLower == nil {
				return ask, true // could beat the best φ: give up
			}
			// Asked later, in order of φ (looseBeater).
			ask = append(ask, &uniformRep{si: e.si, st: e.st, c: e.c, phi: e.f.Phi})
			continue
		}
		if weigh {
			if !e.ok {
				continue // cannot tie on φ: not asked
			}
			if e.f.Phi <= top { // ties at best
				spent += float64(d.m) * float64(d.m) * questionPairSeconds
				if spent > allow {
					d.tiesLeft.Store(true)
					continue
				}
			}
		}
		ask = append(ask, &uniformRep{si: e.si, st: e.st, c: e.c})
	}
	return ask, false
}

// askAlone asks whether each set's active nodes are reachable alone, on
// all cores, and adds those that are to their sizes' candidates in size
// and placement order.
func (d *decision) askAlone(ask []*uniformRep, results []sizeResult) {
	par.For(len(ask), d.sel.Workers, func(w, k int) {
		if d.clock.rank.Load() {
			d.rankCut.Store(true)
			return
		}
		r := ask[k]
		ok, err := d.uniformAlone(w, d.uniformPlacement(r.si, r.st))
		switch {
		case errors.Is(err, errCut):
			d.rankCut.Store(true)
		case err != nil:
			results[r.si].err = err
		default:
			r.ok = ok
		}
	})
	for _, r := range ask {
		if r.ok {
			results[r.si].cands = append(results[r.si].cands, r.c)
		}
	}
}

// uniformAlone is alone for a set of the uniform path: the first m nodes,
// in id order, of an empty box that does not wrap (its start is 0 along
// the rings). Such a set is connected: every node but the first has a
// neighbour before it in id order (one step down the first dimension
// where it is not at the box's start), and not a box (a box is answered
// before asking: leadingBlock), so only the router is asked (the
// connectivity and box checks are shortcuts: the router's answer is the
// same).
func (d *decision) uniformAlone(w int, p placement) (bool, error) {
	return d.aloneAsked(w, p, true, d.askConnected)
}

// uniformRep is a set the uniform path asks about: the first m nodes of
// the placement of size index si at st, its candidate, its φ after
// allocation (loose) and the answer.
type uniformRep struct {
	si    int
	st    []int
	c     *candidate
	phi   int64
	ok    bool
	moved bool // loose: st is a translate of the first placement, whose candidate c is not
}

// looseBeater decides the sets that could beat the best φ of the boxes
// when the router's answers are not invariant along the rings: in order
// of φ (then of enumeration), the first set reached at some translate
// beats every later one, so the sets after it are not asked. A set is
// asked of R_A− first (ringLower: reached there, it is reached here at
// every translate, and its first placement stands for it), else at each
// of its translates (firstReachedTranslate). The sets are asked on all
// cores, each only while no set before it was found reached, so the one
// chosen does not depend on timing; the budget's rank phase ends the
// questions, and the answer is then complete for criterion 1 only.
func (d *decision) looseBeater(ask []*uniformRep, results []sizeResult) {
	slices.SortStableFunc(ask, func(a, b *uniformRep) int { return cmp.Compare(b.phi, a.phi) })
	n := len(ask)
	var next, first, cutAt atomic.Int64
	first.Store(int64(n))
	cutAt.Store(int64(n))
	lower := func(a *atomic.Int64, k int) {
		for cur := a.Load(); int64(k) < cur && !a.CompareAndSwap(cur, int64(k)); cur = a.Load() {
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for range min(par.Workers(d.sel.Workers), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= n || int64(k) >= first.Load() {
					return
				}
				if d.clock.rank.Load() {
					lower(&cutAt, k)
					return
				}
				r := ask[k]
				size := d.sizes[r.si]
				p := d.uniformPlacement(r.si, r.st)
				active, _ := d.listed(p)
				ok, bad, err := reachableUntil(d.ringLower, active, nil, nil, d.clock.rank.Load)
				if err == nil && !ok {
					pos := [2]int{-1, -1}
					if bad[0] >= 0 {
						pos = [2]int{slices.Index(active, bad[0]), slices.Index(active, bad[1])}
					}
					var st []int
					if st, ok, err = d.reachedAtSomeTranslate(size, r.st, active, pos); ok {
						r.st, r.moved = st, true // its candidate is made after the workers end
					}
				}
				switch {
				case errors.Is(err, errCut):
					lower(&cutAt, k)
					return
				case err != nil:
					errs[k] = err
				case ok:
					r.ok = true
					lower(&first, k)
				}
			}
		}()
	}
	wg.Wait()
	f := int(first.Load())
	if int(cutAt.Load()) < f {
		// A set before the first found reached was left unanswered.
		d.rankCut.Store(true)
	}
	for k := range f {
		if errs[k] != nil {
			results[ask[k].si].err = errs[k]
			return
		}
	}
	if f < n {
		r := ask[f]
		if r.moved {
			// Candidates live in the workers' arenas: made here, by one
			// goroutine, not by the worker that found the translate.
			r.c = d.newCandidate(0, d.uniformPlacement(r.si, r.st), []int{})
		}
		results[r.si].cands = append(results[r.si].cands, r.c)
	}
}

// reachedAtSomeTranslate is firstReachedTranslate for a set R_A− does not
// reach (active, with pos a pair it does not connect), asked first of the
// router above (ringUpper): what it does not reach is reached at no
// translate.
func (d *decision) reachedAtSomeTranslate(size, st, active []int, pos [2]int) ([]int, bool, error) {
	if d.ringUpper != nil {
		var hints [][2]int
		if pos[0] >= 0 {
			hints = [][2]int{{active[pos[0]], active[pos[1]]}}
		}
		ok, _, err := reachableUntil(d.ringUpper, active, nil, hints, d.clock.rank.Load)
		if err != nil || !ok {
			return nil, false, err
		}
	}
	return d.firstReachedTranslate(size, st, pos)
}

// firstReachedTranslate looks for the first translate along the rings, in
// enumeration order, of the placement of size at st (its positions along
// the mesh dimensions kept) whose first m nodes the decision's router
// reaches alone. bad names positions in the active list of a pair that
// R_A− does not connect (or −1): where R_A* does not connect it either
// the set is not reached, which one pair's question tells, so most
// translates cost little. Translates are asked in chunks on all cores;
// the budget's rank phase ends the scan with errCut.
func (d *decision) firstReachedTranslate(size, st []int, bad [2]int) ([]int, bool, error) {
	sel := d.sel
	n := len(sel.dims)
	limit := make([]int, n)
	placementLimits(sel.dims, sel.wrap, size, limit)
	total := 1
	for i := range limit {
		if !sel.wrap[i] {
			limit[i] = 1 // the mesh position is st's
		}
		total *= limit[i]
	}
	const chunk = 64
	chunks := (total + chunk - 1) / chunk
	var first atomic.Int64
	first.Store(int64(total))
	var cut atomic.Bool
	errs := make([]error, chunks)
	par.For(chunks, sel.Workers, func(_, k int) {
		start := make([]int, n)
		var known pairHints // the pairs without a route at earlier translates
		seeded := bad[0] < 0
		for idx := k * chunk; idx < min(total, (k+1)*chunk); idx++ {
			if int64(idx) >= first.Load() {
				return // an earlier translate is reached
			}
			if d.clock.rank.Load() {
				cut.Store(true)
				return
			}
			ringTranslate(start, st, sel.wrap, limit, idx)
			p := placement{rect: Rect{Start: start, Size: size}, nTransit: vol(size) - d.m, block: true, blockSize: size}
			active, _ := d.listed(p)
			if !seeded {
				known.learn(active, [2]int{active[bad[0]], active[bad[1]]})
				seeded = true
			}
			ok, nb, err := reachableUntil(d.rt, active, nil, known.pairs(active), d.clock.rank.Load)
			if !ok && nb[0] >= 0 {
				known.learn(active, nb)
			}
			if errors.Is(err, errCut) {
				cut.Store(true)
				return
			}
			if err != nil {
				errs[k] = err
				return
			}
			if ok {
				for {
					f := first.Load()
					if int64(idx) >= f || first.CompareAndSwap(f, int64(idx)) {
						break
					}
				}
				return
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	if cut.Load() {
		return nil, false, errCut // a translate before the first found may not have been asked
	}
	f := int(first.Load())
	if f == total {
		return nil, false, nil
	}
	out := make([]int, n)
	ringTranslate(out, st, sel.wrap, limit, f)
	return out, true, nil
}

// ringTranslate fills start with translate idx of st along the rings
// (limit[i] starts along ring i, the first dimension fastest; st's
// positions along the mesh dimensions kept).
func ringTranslate(start, st []int, wrap []bool, limit []int, idx int) {
	for i := range start {
		start[i] = st[i]
		if wrap[i] {
			start[i] = idx % limit[i]
			idx /= limit[i]
		}
	}
}

// uniformDistinct counts the distinct sets with the fewest transit nodes
// that the translates of the candidates (one per size, before repeated
// sets were dropped) make. Candidates with the same set at the first
// placement make the same sets at every common translate; along a
// dimension a size covers whole its sets have one position, otherwise
// every position on the ring.
func (d *decision) uniformDistinct(results []sizeResult) int {
	minT := int(d.bestT.Load())
	groups := map[string][][]int{}
	var keys []string
	ks := &d.sel.keys
	for si, r := range results {
		for _, c := range r.cands {
			if c.nTransit > minT {
				continue
			}
			ks.buf = d.appendSetKey(ks.buf[:0], c, &ks.keyScratch)
			k := string(ks.buf)
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], d.sizes[si])
		}
	}
	total := 0
	for _, k := range keys {
		total += d.translateUnion(groups[k])
	}
	return total
}

// translateUnion counts the positions of the union of the sizes'
// translates (whole dimensions at 0, the others anywhere on the ring).
func (d *decision) translateUnion(sizes [][]int) int {
	dims, wrap := d.sel.dims, d.sel.wrap
	// Along a mesh dimension a set has the one position it was found at.
	whole := func(size []int, i int) bool { return size[i] == dims[i] || !wrap[i] }
	// A size that is whole in no dimension where another is not covers
	// the others' positions.
	for _, a := range sizes {
		dominates := true
		for _, b := range sizes {
			for i := range dims {
				if whole(a, i) && !whole(b, i) {
					dominates = false
				}
			}
		}
		if dominates {
			return ringCount(dims, wrap, a)
		}
	}
	// Otherwise mark the positions.
	seen := make([]bool, d.s.N())
	c := make([]int, len(dims))
	n := 0
	for _, a := range sizes {
		for v := range seen {
			dec(v, dims, c)
			ok := true
			for i := range dims {
				if whole(a, i) && c[i] != 0 {
					ok = false
					break
				}
			}
			if ok && !seen[v] {
				seen[v] = true
				n++
			}
		}
	}
	return n
}

// emptyPhi is φ after the candidate's set is taken from an empty torus
// (levelCache.afterAtLeast's answer, ok false when certainly below
// bound), from the shapes of the free rectangles: a rectangle shape R
// has P(R) placements, and those that meet a box B number ∏ min(d_i,
// R_i+B_i−1) over the dimensions where R is not whole. For a set of
// several boxes (a reduced block) each shape's placements that meet any
// box are marked; a shape none of whose placements can miss the set's
// largest box is skipped without marking.
func (d *decision) emptyPhi(c *candidate, bound int64) (Fragmentation, bool) {
	dims := d.sel.dims
	n := int64(d.s.N())
	left := d.s.N() - c.nodeCount()
	boxes := d.setBoxes(c)
	// The largest box bounds every shape's count from above.
	big := 0
	for i, b := range boxes {
		if b.Volume() > boxes[big].Volume() {
			big = i
		}
	}
	exact := len(boxes) == 1
	var mark []bool
	shapes := d.sel.shapes
	// The first shape that fits in what is left (volumes fall).
	k0, _ := slices.BinarySearchFunc(shapes, left, func(r []int, left int) int { return cmp.Compare(left, vol(r)) })
	for k := k0; k < len(shapes); {
		v := vol(shapes[k])
		end := k
		for end < len(shapes) && vol(shapes[end]) == v {
			end++
		}
		// Placements missing every box miss the largest: their count
		// bounds the level's from above, and φ with it, before the
		// exact count (the costly part) is made.
		upper := 0
		for _, r := range shapes[k:end] {
			upper += placementCount(dims, d.sel.wrap, r) - meets(dims, d.sel.wrap, r, boxes[big])
		}
		if upper == 0 {
			k = end
			continue
		}
		if n*int64(v)+int64(upper) < bound {
			return Fragmentation{}, false
		}
		kept := upper
		if !exact {
			kept = 0
			for _, r := range shapes[k:end] {
				if placementCount(dims, d.sel.wrap, r) == meets(dims, d.sel.wrap, r, boxes[big]) {
					continue
				}
				if mark == nil {
					mark = make([]bool, d.s.N())
				}
				kept += missesAll(dims, d.sel.wrap, r, boxes, mark)
			}
		}
		if kept > 0 {
			f := Fragmentation{Phi: n*int64(v) + int64(kept), LargestNodes: v, LargestCount: kept}
			return f, f.Phi >= bound
		}
		k = end
	}
	return Fragmentation{}, bound <= 0
}

// ringCount is the number of placements of a size that differ only
// along the rings.
func ringCount(dims []int, wrap []bool, size []int) int {
	n := 1
	for i, d := range dims {
		if wrap[i] && size[i] < d {
			n *= d
		}
	}
	return n
}

// meetRange is the first start and the number of starts of shape r in
// dimension i that meet the box b there (0 when none does).
func meetRange(d int, wrap bool, r int, b Rect, i int) (lo, n int) {
	bs, bl := b.Start[i], b.Size[i]
	switch {
	case r == d:
		return 0, 1
	case wrap:
		return ((bs-r+1)%d + d) % d, min(d, r+bl-1)
	}
	lo, hi := max(0, bs-r+1), min(d-r, bs+bl-1)
	return lo, max(0, hi-lo+1)
}

// meets is the number of placements of shape r that meet the box b.
func meets(dims []int, wrap []bool, r []int, b Rect) int {
	p := 1
	for i, d := range dims {
		_, n := meetRange(d, wrap[i], r[i], b, i)
		p *= n
	}
	return p
}

// missesAll counts the placements of shape r (on a torus) that meet none
// of the boxes, marking in mark (len N, cleared on return) the starts
// that meet one.
func missesAll(dims []int, wrap []bool, r []int, boxes []Rect, mark []bool) int {
	n := len(dims)
	met := 0
	lo := make([]int, n)
	ext := make([]int, n)
	off := make([]int, n)
	c := make([]int, n)
	var touched []int
boxes:
	for _, b := range boxes {
		for i, d := range dims {
			lo[i], ext[i] = meetRange(d, wrap[i], r[i], b, i)
			if ext[i] == 0 {
				continue boxes
			}
		}
		clear(off)
		for {
			for i, d := range dims {
				c[i] = (lo[i] + off[i]) % d
			}
			v := enc(c, dims)
			if !mark[v] {
				mark[v] = true
				touched = append(touched, v)
				met++
			}
			i := 0
			for ; i < n; i++ {
				if off[i]++; off[i] < ext[i] {
					break
				}
				off[i] = 0
			}
			if i == n {
				break
			}
		}
	}
	for _, v := range touched {
		mark[v] = false
	}
	return placementCount(dims, wrap, r) - met
}

// setBoxes lists disjoint boxes that make up a candidate's set: its
// rectangle when the set is the whole rectangle, a block's active boxes
// and its kept transit nodes one by one otherwise.
func (d *decision) setBoxes(c *candidate) []Rect {
	dims := d.sel.dims
	if c.Holes == 0 && c.nodeCount() == c.Rect.Volume() {
		return []Rect{c.Rect}
	}
	var out []Rect
	n := len(dims)
	at := func(start, off []int) []int {
		s := make([]int, n)
		for i, x := range dims {
			s[i] = (start[i] + off[i]) % x
		}
		return s
	}
	if b := c.lazy; b != nil {
		off, size := make([]int, n), make([]int, n)
		b.forBoxes(off, size, func(off, size []int) {
			out = append(out, Rect{Start: at(b.start, off), Size: slices.Clone(size)})
		})
		b.forTransit(make([]int, n), func(o []int) {
			out = append(out, Rect{Start: at(b.start, o), Size: ones(n)})
		})
		return mergeLeadingBox(out, dims)
	}
	cc := make([]int, n)
	for _, l := range [][]int{c.Active, c.Transit} {
		for _, v := range l {
			dec(v, dims, cc)
			out = append(out, Rect{Start: slices.Clone(cc), Size: ones(n)})
		}
	}
	return out
}

// mergeLeadingBox returns the boxes as one box when together they are
// one (a block's first m nodes often are), else unchanged.
func mergeLeadingBox(boxes []Rect, dims []int) []Rect {
	if len(boxes) < 2 {
		return boxes
	}
	n := len(dims)
	lo, hi := slices.Clone(boxes[0].Start), make([]int, n)
	total := 0
	for _, b := range boxes {
		total += b.Volume()
	}
	// Offsets from the first box's start (sets from a block do not wrap
	// relative to it beyond the block).
	for i := range hi {
		hi[i] = boxes[0].Start[i] + boxes[0].Size[i]
	}
	for _, b := range boxes[1:] {
		for i, d := range dims {
			s := b.Start[i]
			if s < boxes[0].Start[i] {
				s += d
			}
			lo[i] = min(lo[i], s)
			hi[i] = max(hi[i], s+b.Size[i])
		}
	}
	size := make([]int, n)
	v := 1
	for i := range size {
		size[i] = hi[i] - lo[i]
		v *= size[i]
	}
	if v != total {
		return boxes
	}
	for i, d := range dims {
		lo[i] %= d
	}
	return []Rect{{Start: lo, Size: size}}
}

func ones(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = 1
	}
	return o
}
