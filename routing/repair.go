package routing

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Repair of a stored table after links fail: the routes that cross a
// failed channel get new ones, every other route is kept.
//
// Finding the routes. In version 2 of the stored form a route is either
// written out (a record) or predicted: the same steps as the last record
// before it at the same offset. The routes a record predicts are the
// pairs of its offset after it and before the next record of that offset,
// and each walks the record's steps translated. A translate from source a'
// crosses channel (u, d) (the channel leaving node u in direction d)
// exactly when the record's walk takes direction d at some displacement
// Δ from its source with a' = u − Δ. So the routes crossing a failed
// channel are found from the records alone, one candidate per record and
// matching step, without reading the predicted routes one by one.
//
// New routes. Each is a shortest legal route inside the table's set on
// the fabric with the failure, found depth-first over (node, rule state)
// within bounds growing from a length no route is shorter than, steps
// tried in order of their channel's load (the table's loads, updated
// route by route; pairSearch).
//
// Figures. Every route of a table the fabric manager keeps is a shortest
// legal route (a BFS table, or a repaired one): RepairStored checks that
// the table's route lengths sum to its π_perfect times its channels (the
// minimal sum) and refuses it otherwise. A failure removes channels, and
// under angara* changes order-violating turns, which only a route's
// first or last turn can take; the routes a changed turn could shorten
// or withdraw are searched again (turnRoutes), so every route stays
// minimal: the new minimal sum is the new sum of lengths, the new
// diameter the larger of the old and the longest new route (or, where a
// gained turn shortened a route of the old diameter, the longest route
// now), π_max the largest of the updated loads.

// ErrNotRepairable reports a table RepairStored does not repair: the
// caller builds a new one.
var ErrNotRepairable = errors.New("the table cannot be repaired in place")

// StoredRepair is a repaired table: its header and its routes in the
// stored form.
type StoredRepair struct {
	// Header is the table's header on the fabric with the failure (its
	// routes not listed): the new figures, deadlock-free, the fabric's
	// failures.
	Header *TableJSON
	// Routes are the table's routes after the repair: version 3 (the
	// routes as they were, with the new ones as patches), or version 2
	// when the patches grew past a sixteenth of the routes.
	Routes []byte
	// Rerouted is how many routes got new steps.
	Rerouted int
}

// RepairStored repairs a table kept in the stored form (tf its header,
// b its routes) after the channels in gone failed: on r, the fabric with
// the failure, every route crossing one of them gets the shortest legal
// route inside the set, the others are kept. load holds the table's
// routes per channel (topology channel ids), as they were; it is updated
// to the repaired table's. prev is the router of the fabric the table
// was made for (its figures hold there).
//
// Under angara* a failure changes which order-violating turns the rule
// admits; such a turn is only ever a route's first or last turn (an FS
// or LS step). So the routes that may take a turn withdrawn, or may get
// shorter by one gained, start at the tail of the turn's first channel
// or end at the head of its second: of those, each that took a withdrawn
// turn is routed again, and each a gained turn could make shorter
// (turnLower) takes the shortest such route if there is one.
//
// ErrNotRepairable (wrapped) says why a table is not repaired: a rule
// whose tables may deadlock (angara, which needs the table's own check),
// version 1 routes, or routes that are not all minimal. A pair left
// without a legal route is an *UnreachableError; load is then unusable.
func (r *Router) RepairStored(ctx context.Context, prev *Router, tf *TableJSON, b []byte, gone []int, load []int32) (*StoredRepair, error) {
	not := func(why string) error { return fmt.Errorf("%w: %s", ErrNotRepairable, why) }
	switch {
	case r.rule.Kind == Angara:
		return nil, not("angara tables may deadlock and are checked whole")
	case tf.Figures == nil:
		return nil, not("the table has no figures")
	case len(load) != len(r.up):
		return nil, fmt.Errorf("repair: %d channel loads for %d channels", len(load), len(r.up))
	}
	m := len(tf.Active)
	if m < 2 {
		return nil, not("fewer than two active nodes")
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	n := m * (m - 1)
	var base []byte
	var patches []storedPatch
	switch StoredRoutesVersion(b) {
	case 1:
		return nil, not("routes stored in version 1")
	case 2:
		base = b
	case 3:
		var err error
		if base, patches, err = splitStoredV3(b, n); err != nil {
			return nil, err
		}
	}
	rp, err := r.newRepair(tf, gone)
	if err != nil {
		return nil, err
	}
	s := r.getScratch()
	defer r.putScratch(s)
	if err := r.prepareSet(s, rp.ids, rp.transit); err != nil {
		return nil, err
	}
	channels, before := r.setChannels(s, gone)
	sum := int64(0)
	for _, x := range load {
		sum += int64(x)
	}
	if minimal := int64(math.Round(tf.Figures.PiPerfect * float64(before))); sum != minimal {
		return nil, not(fmt.Sprintf("its routes' lengths sum to %d, the minimal sum is %d", sum, minimal))
	}
	crossing, err := rp.crossing(ctx, base, patches)
	if err != nil {
		return nil, err
	}
	if rp.from, rp.to = rp.turnEnds(s, prev); len(rp.from)+len(rp.to) > 0 {
		if crossing, err = rp.turnRoutes(ctx, base, patches, crossing); err != nil {
			return nil, err
		}
	}
	for _, c := range crossing {
		if c.must {
			sum -= int64(rp.unload(c.runs, c.src, load))
		}
	}
	fresh, diameter, delta, shorter, err := rp.reroute(ctx, s, crossing, load, tf.Figures.Diameter)
	if err != nil {
		return nil, err
	}
	sum += delta
	pimax := int32(0)
	for _, x := range load {
		pimax = max(pimax, x)
	}
	all := mergePatches(patches, fresh)
	out := &StoredRepair{Routes: appendStoredV3(base, all), Rerouted: len(fresh)}
	if len(all) > n/16 {
		if out.Routes, err = RecodeStoredRoutes(out.Routes, tf, 2); err != nil {
			return nil, err
		}
	}
	diameter = max(diameter, tf.Figures.Diameter)
	if shorter {
		// A route of the old diameter got shorter: the longest now.
		if diameter, err = rp.diameter(base, all, out.Routes, tf); err != nil {
			return nil, err
		}
	}
	fig := Figures{Diameter: diameter, PiMax: int(pimax)}
	fig.PiPerfect, fig.BalanceFactor = piFigures(int(sum), channels, int(pimax))
	h := *tf
	h.Routes, h.Figures, h.DeadlockFree, h.Cycle = nil, &fig, true, nil
	h.FailedLinks, h.FailedNodes = failedNames(r.t.g)
	out.Header = &h
	return out, nil
}

// reroute gives new routes to the routes of crossing that need one
// (their old loads already off load, for those that must move): the
// patches, sorted by index, the longest new route, the change in the
// sum of lengths, and whether a route of length was made shorter.
func (rp *repair) reroute(ctx context.Context, s *scratch, crossing []crossingRoute, load []int32, length int) (fresh []storedPatch, diameter int, delta int64, shorter bool, err error) {
	r := rp.r
	search := newPairSearch(r, s, load, append(slices.Clone(rp.ids), rp.transit...))
	limit := 0
	for _, d := range r.t.dims {
		limit += 2 * d
	}
	// Each new route is checked as the verification checks a table's:
	// its steps walked on the fabric, inside the set, by the rule's
	// definitions rather than its automaton.
	inSet := make([]bool, r.t.nodes)
	for _, v := range rp.ids {
		inSet[v] = true
	}
	for _, v := range rp.transit {
		inSet[v] = true
	}
	var w verifyWorker
	fresh = make([]storedPatch, 0, len(crossing))
	var dirs []Dir
	// By destination: the searches for one target share their failures.
	order := slices.Clone(crossing)
	slices.SortStableFunc(order, func(a, b crossingRoute) int { return a.dst - b.dst })
	for k, c := range order {
		if k&63 == 0 && ctx.Err() != nil {
			return nil, 0, 0, false, context.Cause(ctx)
		}
		src, dst := rp.ids[c.src], rp.ids[c.dst]
		old := runsLen(c.runs)
		var got []Dir
		if c.turn {
			// Shorter than before only by a gained turn; else no
			// route is shorter than before.
			if got = search.shortcut(rp, c.src, c.dst, old-1, dirs[:0]); got != nil && !c.must {
				delta -= int64(rp.unload(c.runs, c.src, load))
			}
			shorter = shorter || got != nil && old == length
		}
		if got == nil && c.must {
			if got = search.route(src, dst, old, limit, dirs[:0]); got == nil {
				return nil, 0, 0, false, &UnreachableError{Src: src, Dst: dst, g: r.t.g}
			}
		}
		if got == nil {
			continue // kept: still legal and shortest
		}
		dirs = got
		search.addLoads(src, dirs)
		if v, ok := r.checkRoute(&w, src, dst, dirs, inSet); !ok {
			return nil, 0, 0, false, fmt.Errorf("internal error: a repaired route fails its check: %s", v.Msg)
		}
		delta += int64(len(dirs))
		diameter = max(diameter, len(dirs))
		rec := AppendRuns(nil, dirs)
		fresh = append(fresh, storedPatch{c.index, rec[len(rec)-countRuns(rec):]})
	}
	slices.SortFunc(fresh, func(a, b storedPatch) int { return a.index - b.index })
	return fresh, diameter, delta, shorter, nil
}

// diameter is the length of the longest route of the repaired table
// (base with the patches all, stored as routes): that of the written-out
// routes not replaced and of the patches when it reaches the old
// diameter (no route is longer than those and the old diameter), else
// from every route.
func (rp *repair) diameter(base []byte, all []storedPatch, routes []byte, tf *TableJSON) (int, error) {
	d := 0
	for _, p := range all {
		d = max(d, runsLen(p.runs))
	}
	k := 0
	for _, rec := range rp.recs {
		for k < len(all) && all[k].index < rec.index {
			k++
		}
		if k == len(all) || all[k].index != rec.index {
			d = max(d, runsLen(base[rec.at:rec.at+rec.l]))
		}
	}
	if d >= tf.Figures.Diameter {
		return d, nil
	}
	d = 0
	err := EachStoredRoute(routes, tf, func(int) {}, func(_, _ int, runs []byte) { d = max(d, runsLen(runs)) })
	return d, err
}

// countRuns is the number of run bytes at the end of one route as
// AppendRuns wrote it (its count's value).
func countRuns(rec []byte) int {
	n, _ := binary.Uvarint(rec)
	return int(n)
}

// repair is the state of one RepairStored: the table's set and the
// failed channels as the translates of its records are matched against
// them.
type repair struct {
	r       *Router
	m       int
	ids     []int   // active index → node id
	transit []int   // transit node ids
	actIdx  []int32 // node id → active index, −1
	off     *offsets
	gone    []goneChannel
	recs    []storedRecord // the base's records (crossing)
	// the turns the failure changed, by the active node a route taking
	// one as its first turn starts at (from) or as its last ends at (to)
	from, to map[int][]changedTurn
	// the table's route lengths from (fsLen) and to (lsLen) the active
	// nodes of gained turns, by the other end's index (turnLower)
	fsLen, lsLen map[int][]int16
}

// goneChannel is a failed channel as a step sees it: leaving the node at
// coordinates u in direction d.
type goneChannel struct {
	u [MaxDims]int32
	d Dir
}

// crossingRoute is a route that crosses a failed channel: its index, its
// ends (active indices) and its steps.
type crossingRoute struct {
	index, src, dst int
	runs            []byte
	// must: the route crosses a failed channel or takes a withdrawn
	// turn; turn: a gained turn could make it shorter
	must, turn bool
}

// runsLen is the number of steps of a route's run bytes.
func runsLen(runs []byte) int {
	n := 0
	for _, x := range runs {
		_, k := RunOf(x)
		n += k
	}
	return n
}

func (r *Router) newRepair(tf *TableJSON, gone []int) (*repair, error) {
	t := r.t
	if err := tf.onRouter(r); err != nil {
		return nil, err
	}
	rp := &repair{r: r, m: len(tf.Active), actIdx: make([]int32, t.nodes)}
	for i := range rp.actIdx {
		rp.actIdx[i] = -1
	}
	for i, c := range tf.Active {
		v := t.g.NodeAt(c)
		if v < 0 {
			return nil, fmt.Errorf("repair: active node %v is not a node of the torus", c)
		}
		rp.ids = append(rp.ids, v)
		rp.actIdx[v] = int32(i)
	}
	for _, c := range tf.Transit {
		v := t.g.NodeAt(c)
		if v < 0 {
			return nil, fmt.Errorf("repair: transit node %v is not a node of the torus", c)
		}
		rp.transit = append(rp.transit, v)
	}
	off, err := newOffsets(tf.Dims, tf.Active)
	if err != nil {
		return nil, fmt.Errorf("repair: %v", err)
	}
	rp.off = off
	for _, c := range gone {
		if c < 0 || c >= len(t.chSrc) {
			return nil, fmt.Errorf("repair: no channel %d", c)
		}
		v := int(t.chSrc[c])
		for d := range t.nd {
			if int(t.ch[v*t.nd+d]) == c {
				var g goneChannel
				t.coords(v, g.u[:])
				g.d = Dir(d)
				rp.gone = append(rp.gone, g)
			}
		}
	}
	return rp, nil
}

// coords writes node v's coordinates into c.
func (t *torus) coords(v int, c []int32) {
	for i := range t.n {
		c[i] = int32(v / t.stride[i] % t.dims[i])
	}
}

// setChannels counts the channels joining two nodes of the set marked in
// s on r's fabric, and those before the channels in gone failed.
func (r *Router) setChannels(s *scratch, gone []int) (now, before int) {
	t := r.t
	for _, list := range [2][]int32{s.act, s.trans} {
		for _, v := range list {
			for d := 0; d < t.nd; d++ {
				c := t.ch[int(v)*t.nd+d]
				if c < 0 || s.setStamp[t.nb[int(v)*t.nd+d]] != s.setEpoch {
					continue
				}
				if live(r.up, c) {
					now++
				} else if slices.Contains(gone, int(c)) && t.nodeUp[v] && t.nodeUp[t.nb[int(v)*t.nd+d]] {
					before++
				}
			}
		}
	}
	return now, now + before
}

// crossing returns the routes of the table (base version 2, patches
// replacing some of its routes) that cross a failed channel, by index.
func (rp *repair) crossing(ctx context.Context, base []byte, patches []storedPatch) ([]crossingRoute, error) {
	recs, err := storedRecords(base, rp.m)
	if err != nil {
		return nil, err
	}
	rp.recs = recs
	n := rp.m * (rp.m - 1)
	// next[k]: the index of the next record of record k's offset (n if
	// none): the routes record k predicts lie before it.
	next := make([]int, len(recs))
	keys := rp.off.table(n)
	for k := len(recs) - 1; k >= 0; k-- {
		src, dst := pairOf(recs[k].index, rp.m)
		key := rp.off.key(src, dst)
		next[k] = n
		if at, _, ok := keys.get(key); ok {
			next[k] = at
		}
		keys.set(key, recs[k].index, 0)
	}
	patched := func(i int) bool {
		_, found := slices.BinarySearchFunc(patches, i, func(p storedPatch, i int) int { return p.index - i })
		return found
	}
	var out []crossingRoute
	for k, rec := range recs {
		if k&4095 == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		runs := base[rec.at : rec.at+rec.l]
		src, dst := pairOf(rec.index, rp.m)
		rp.translates(src, dst, runs, func(a, b int) {
			if i := pairIndex(rp.m, a, b); i >= rec.index && i < next[k] && !patched(i) {
				out = append(out, crossingRoute{i, a, b, runs, true, false})
			}
		})
	}
	for _, p := range patches {
		src, dst := pairOf(p.index, rp.m)
		rp.translates(src, dst, p.runs, func(a, b int) {
			if a == src {
				out = append(out, crossingRoute{p.index, a, b, p.runs, true, false})
			}
		})
	}
	slices.SortFunc(out, func(a, b crossingRoute) int { return a.index - b.index })
	return slices.CompactFunc(out, func(a, b crossingRoute) bool { return a.index == b.index }), nil
}

// translates calls fn with the ends (active indices) of every translate
// of the route from active node src to dst (its steps runs) that crosses
// a failed channel: the translate's source is the channel's node less the
// displacement at which the route takes the channel's direction.
func (rp *repair) translates(src, dst int, runs []byte, fn func(a, b int)) {
	t := rp.r.t
	nd := t.n
	a0 := rp.off.coord[nd*src : nd*src+nd]
	b0 := rp.off.coord[nd*dst : nd*dst+nd]
	var disp [MaxDims]int32
	var a, b [MaxDims]int
	for _, x := range runs {
		d, steps := RunOf(x)
		dim := d.Dim()
		for range steps {
			for _, g := range rp.gone {
				if g.d != d {
					continue
				}
				ok := true
				for i := 0; i < nd && ok; i++ {
					p := int(g.u[i] - disp[i])
					if t.wrap[i] {
						p = ((p % t.dims[i]) + t.dims[i]) % t.dims[i]
					}
					q := p + int(b0[i]-a0[i])
					ok = p >= 0 && p < t.dims[i] && q >= 0 && q < t.dims[i]
					a[i], b[i] = p, q
				}
				if !ok {
					continue
				}
				ia, ib := rp.actIdx[CoordID(a[:nd], t.dims)], rp.actIdx[CoordID(b[:nd], t.dims)]
				if ia >= 0 && ib >= 0 {
					fn(int(ia), int(ib))
				}
			}
			if d.Neg() {
				disp[dim]--
			} else {
				disp[dim]++
			}
		}
	}
}

// unload takes the route from active node src (its steps runs) off the
// channel loads and returns its length.
func (rp *repair) unload(runs []byte, src int, load []int32) int {
	t := rp.r.t
	v := rp.ids[src]
	n := 0
	for _, x := range runs {
		d, steps := RunOf(x)
		for range steps {
			if c := t.chAt(v, d); c >= 0 {
				load[c]--
			}
			v = int(t.nbAt(v, d))
			n++
		}
	}
	return n
}

// storedRecord is a route written out in a version 2 value: its index
// and where its run bytes are.
type storedRecord struct {
	index, at, l int
}

// storedRecords lists the records of a version 2 value for m active
// nodes, skipping the predicted routes.
func storedRecords(b []byte, m int) ([]storedRecord, error) {
	bad := func(what string) error { return fmt.Errorf("stored routes damaged: %s", what) }
	n := uint64(m) * uint64(m-1)
	got, k := binary.Uvarint(b[3:])
	if k <= 0 || got != n {
		return nil, bad(fmt.Sprintf("route count is not that of a routing table of %d active nodes", m))
	}
	pos := 3 + k
	recs := make([]storedRecord, 0, len(b)/4)
	for i := uint64(0); i < n; {
		p, k := binary.Uvarint(b[pos:])
		if k <= 0 || p > n-i {
			return nil, bad(fmt.Sprintf("count of routes predicted after route %d", i))
		}
		pos += k
		if i += p; i == n {
			break
		}
		runs, rest, err := CutRuns(b[pos:], maxStoredDirs)
		if err != nil {
			return nil, bad(fmt.Sprintf("route %d steps: %v", i, err))
		}
		at := len(b) - len(rest) - len(runs)
		recs = append(recs, storedRecord{int(i), at, len(runs)})
		pos = len(b) - len(rest)
		i++
	}
	if pos != len(b) {
		return nil, bad(fmt.Sprintf("%d bytes after the last route", len(b)-pos))
	}
	return recs, nil
}

// pairSearch finds, inside the set marked in s, a shortest legal route
// (pairSearch.route): depth-first, at bounds increasing from a length no
// route is shorter than, steps tried in order of the load of their
// channel, cut where the steps taken and the torus distance left exceed
// the bound, and where the same node and rule state failed before at no
// more steps taken (it fails again: what is left of the bound is no
// larger). The first route found at the first bound that has one is
// therefore a shortest one; of those, the one the least loaded channels
// lead to first.
type pairSearch struct {
	r     *Router
	s     *scratch
	load  []int32
	local []int32 // node → index in the set, −1 outside
	// failed[i·S+q] is the fewest steps at which (node i, state q) failed
	// in the search of epoch stamp[i·S+q], times two, plus one if the
	// bound cut a step of that search (a larger bound may then succeed)
	failed []int16
	stamp  []uint32
	epoch  uint32
	// epochs: the epoch of each search (target, goal, bound) so far: a
	// failure does not depend on where the search came from, nor on the
	// loads, so a search for the same goal within the same bound reads
	// the failures of those before it
	epochs map[searchGoal]uint32
	last   uint32
	cuts   int      // steps the bound cut in the current search
	coord  []uint16 // node·dims + i → its coordinate in dimension i
	dist   [MaxDims][]int32
	to     int32
	path   []Dir
	// ls: the route must end with the steps tail (lsIn at the target,
	// then lsOut at lsAt)
	ls          bool
	lsIn, lsOut Dir
	lsAt        int32
	tail        []Dir
}

// goal reports whether a route at the target node in state q, g steps
// taken, ends there: the rule lets it end (or, ls, take its two last
// steps and end) within b steps.
func (ps *pairSearch) goal(v, q, g, b int32) bool {
	if !ps.ls {
		return ps.r.a.canEnd[q]
	}
	if g+2 > b {
		return false
	}
	ok := false
	ps.trans(v, q, ps.lsIn, func(q1 int32) {
		ps.trans(ps.lsAt, q1, ps.lsOut, func(q2 int32) {
			ok = ok || ps.r.a.canEnd[q2]
		})
	})
	return ok
}

func newPairSearch(r *Router, s *scratch, load []int32, set []int) *pairSearch {
	ps := &pairSearch{r: r, s: s, load: load, local: make([]int32, r.t.nodes)}
	for i := range ps.local {
		ps.local[i] = -1
	}
	for i, v := range set {
		ps.local[v] = int32(i)
	}
	n := len(set) * r.a.nstates
	ps.failed, ps.stamp = make([]int16, n), make([]uint32, n)
	ps.epochs = map[searchGoal]uint32{}
	t := r.t
	ps.coord = make([]uint16, t.nodes*t.n)
	for v := range t.nodes {
		for i := range t.n {
			ps.coord[v*t.n+i] = uint16(v / t.stride[i] % t.dims[i])
		}
	}
	for i := range t.n {
		ps.dist[i] = make([]int32, t.dims[i])
	}
	return ps
}

// searchGoal is what a search looks for: its target node, its bound,
// and the two last steps it must end with (ls).
type searchGoal struct {
	to, b, at int32
	ls        bool
	in, out   Dir
}

// begin starts a search within bound b for the goal set (target, ls):
// with the failures recorded by the searches for the same goal before.
func (ps *pairSearch) begin(b int32) {
	k := searchGoal{to: ps.to, b: b, ls: ps.ls}
	if ps.ls {
		k.at, k.in, k.out = ps.lsAt, ps.lsIn, ps.lsOut
	}
	if e, ok := ps.epochs[k]; ok {
		ps.epoch = e
		return
	}
	if ps.last++; ps.last == 0 {
		clear(ps.stamp)
		clear(ps.epochs)
		ps.last = 1
	}
	ps.epochs[k], ps.epoch = ps.last, ps.last
}

// target makes node v the search's target: the torus distance of every
// coordinate to its coordinate, dimension by dimension (bound).
func (ps *pairSearch) target(v int) {
	t := ps.r.t
	ps.to = int32(v)
	for i := range t.n {
		x := int32(ps.coord[v*t.n+i])
		row := ps.dist[i][:t.dims[i]]
		for y := range row {
			dx := int32(y) - x
			if dx < 0 {
				dx = -dx
			}
			if t.wrap[i] {
				dx = min(dx, int32(t.dims[i])-dx)
			}
			row[y] = dx
		}
	}
}

// bound is the torus distance from v to the target: no route is
// shorter.
func (ps *pairSearch) bound(v int32) int32 {
	n := ps.r.t.n
	c := ps.coord[int(v)*n : int(v)*n+n]
	h := int32(0)
	for i, x := range c {
		h += ps.dist[i][x]
	}
	return h
}

// route appends to dirs the steps of a shortest legal route from src to
// dst inside the set, no route being shorter than lower, and adds it to
// the loads; nil if there is none of at most limit steps.
func (ps *pairSearch) route(src, dst, lower, limit int, dirs []Dir) []Dir {
	r := ps.r
	ps.target(dst)
	first := max(lower, int(ps.bound(int32(src))))
	for b := first; b <= limit; b++ {
		ps.begin(int32(b))
		ps.path = ps.path[:0]
		ps.cuts = 0
		if ps.dfs(int32(src), int32(r.a.begin), 0, int32(b)) {
			return append(dirs, ps.path...)
		}
		if ps.cuts == 0 {
			break // no step was cut by the bound: none reaches dst
		}
		if b == first+2 && !r.pairReach(ps.s, int32(src), int32(dst)) {
			break // none at all (a search of the whole set, once)
		}
	}
	return nil
}

// addLoads adds the route from src with steps dirs to the loads.
func (ps *pairSearch) addLoads(src int, dirs []Dir) {
	t := ps.r.t
	v := src
	for _, d := range dirs {
		ps.load[t.chAt(v, d)]++
		v = int(t.nbAt(v, d))
	}
}

// trans calls fn with every state the rule moves to from state q at node
// v by a step in direction d.
func (ps *pairSearch) trans(v, q int32, d Dir, fn func(to int32)) {
	r := ps.r
	if r.a.self[q] == int8(d) {
		fn(q)
	}
	for _, mv := range r.moves[r.moveStart[q]:r.moveStart[q+1]] {
		if mv.dir == d && (!mv.cond || r.condOK(int(v), int(q), d)) {
			fn(mv.to)
		}
	}
}

// shortcut returns the shortest legal route inside the set from active
// node a to b of at most most steps that takes a gained turn as its
// first turn (an FS step) or its last (an LS step), appended to dirs;
// nil if there is none.
func (ps *pairSearch) shortcut(rp *repair, a, b, most int, dirs []Dir) []Dir {
	r, t := ps.r, ps.r.t
	src, dst := rp.ids[a], rp.ids[b]
	var best []Dir
	try := func(from int32, q int32, prefix []Dir, to int, lower int) {
		ps.target(to)
		for bd := lower; bd <= most; bd++ {
			ps.begin(int32(bd))
			ps.path = append(ps.path[:0], prefix...)
			ps.cuts = 0
			if ps.dfs(from, q, int32(len(prefix)), int32(bd)) {
				if n := len(ps.path) + len(ps.tail); best == nil || n < len(best) {
					best = append(append(best[:0], ps.path...), ps.tail...)
					most = n - 1
				}
				return
			}
			if ps.cuts == 0 {
				return
			}
		}
	}
	for _, ct := range rp.from[a] {
		c := int(ct.c)
		di, u := t.chDir[c], int32(t.g.Dst(c))
		w := t.nb[int(u)*t.nd+int(ct.d)]
		if !ct.gained || r.openOf(ps.s, int32(src))&(1<<di) == 0 || r.openOf(ps.s, u)&(1<<ct.d) == 0 {
			continue
		}
		lower := rp.turnLower(a, b, ct, true)
		if lower > most {
			continue
		}
		ps.trans(int32(src), int32(r.a.begin), di, func(q1 int32) {
			ps.trans(u, q1, ct.d, func(q2 int32) {
				ps.target(dst)
				try(w, q2, []Dir{di, ct.d}, dst, max(lower, 2+int(ps.bound(w))))
			})
		})
	}
	for _, ct := range rp.to[b] {
		c := int(ct.c)
		di, u, v := t.chDir[c], int32(t.g.Dst(c)), t.chSrc[c]
		if !ct.gained || r.openOf(ps.s, v)&(1<<di) == 0 || r.openOf(ps.s, u)&(1<<ct.d) == 0 {
			continue
		}
		lower := rp.turnLower(a, b, ct, false)
		if lower > most {
			continue
		}
		ps.ls, ps.lsIn, ps.lsOut, ps.lsAt = true, di, ct.d, u
		ps.tail = []Dir{di, ct.d}
		ps.target(int(v))
		try(int32(src), int32(r.a.begin), nil, int(v), max(lower, int(ps.bound(int32(src)))+2))
		ps.ls, ps.tail = false, nil
	}
	if best == nil {
		return nil
	}
	return append(dirs, best...)
}

// dfs extends ps.path from node v in rule state q, g steps taken, to the
// destination within b steps.
func (ps *pairSearch) dfs(v, q, g, b int32) bool {
	r, t := ps.r, ps.r.t
	if v == ps.to && ps.goal(v, q, g, b) {
		return true
	}
	if g+int32(len(ps.tail))+ps.bound(v) > b || g >= b {
		ps.cuts++
		return false
	}
	key := int(ps.local[v])*r.a.nstates + int(q)
	if f := ps.failed[key]; ps.stamp[key] == ps.epoch && int32(f>>1) <= g {
		ps.cuts += int(f & 1)
		return false
	}
	cuts := ps.cuts
	type step struct {
		d    Dir
		to   int32
		load int32
	}
	var steps [4 * MaxDims]step
	n := 0
	open := r.openOf(ps.s, v)
	base := int(v) * t.nd
	add := func(d Dir, to int32) {
		x := step{d, to, ps.load[t.ch[base+int(d)]]}
		k := n
		for ; k > 0 && steps[k-1].load > x.load; k-- {
			steps[k] = steps[k-1]
		}
		steps[k] = x
		n++
	}
	if sd := r.a.self[q]; sd >= 0 && open&(1<<sd) != 0 {
		add(Dir(sd), q)
	}
	for _, mv := range r.moves[r.moveStart[q]:r.moveStart[q+1]] {
		if open&(1<<mv.dir) == 0 || mv.cond && !r.condOK(int(v), int(q), mv.dir) {
			continue
		}
		if n < len(steps) {
			add(mv.dir, mv.to)
		}
	}
	for _, x := range steps[:n] {
		ps.path = append(ps.path, x.d)
		if ps.dfs(t.nb[base+int(x.d)], x.to, g+1, b) {
			return true
		}
		ps.path = ps.path[:len(ps.path)-1]
	}
	f := int16(g) << 1
	if ps.cuts > cuts {
		f |= 1
	}
	ps.stamp[key], ps.failed[key] = ps.epoch, f
	return false
}

// changedTurn is an order-violating turn admitted on one fabric and not
// on the other: after channel c, direction d.
type changedTurn struct {
	c      int32
	d      Dir
	gained bool // admitted now, not before
}

// turnEnds returns the turns between channels of the set marked in s
// that before and r admit differently, by the active node a route taking
// one as its first turn starts at (from) and as its last turn ends at
// (to).
func (rp *repair) turnEnds(s *scratch, before *Router) (from, to map[int][]changedTurn) {
	r, t := rp.r, rp.r.t
	if r.star == nil && (before == nil || before.star == nil) {
		return nil, nil
	}
	from, to = map[int][]changedTurn{}, map[int][]changedTurn{}
	for _, list := range [2][]int32{s.act, s.trans} {
		for _, v := range list {
			for e := range t.nd {
				c := t.ch[int(v)*t.nd+e]
				u := t.nb[int(v)*t.nd+e]
				if c < 0 || s.setStamp[u] != s.setEpoch {
					continue
				}
				for d := range t.nd {
					w := t.nb[int(u)*t.nd+d]
					if w < 0 || s.setStamp[w] != s.setEpoch || (before != nil && before.ExtraAllowed(int(c), Dir(d))) == r.ExtraAllowed(int(c), Dir(d)) {
						continue
					}
					ct := changedTurn{c, Dir(d), r.ExtraAllowed(int(c), Dir(d))}
					if a := rp.actIdx[v]; a >= 0 {
						from[int(a)] = append(from[int(a)], ct)
					}
					if b := rp.actIdx[w]; b >= 0 {
						to[int(b)] = append(to[int(b)], ct)
					}
				}
			}
		}
	}
	return from, to
}

// turnRoutes adds to crossing (sorted by index) the routes from the
// active nodes of from and to those of to whose first (from) or last (to)
// turn is one of the changed ones, or which are longer than the torus
// distance between their ends.
func (rp *repair) turnRoutes(ctx context.Context, base []byte, patches []storedPatch, crossing []crossingRoute) ([]crossingRoute, error) {
	m, from, to := rp.m, rp.from, rp.to
	var want []int // route indices, ascending
	for a := range from {
		for b := range m {
			if b != a {
				want = append(want, pairIndex(m, a, b))
			}
		}
	}
	for b := range to {
		for a := range m {
			if a != b {
				want = append(want, pairIndex(m, a, b))
			}
		}
	}
	// The lengths from and to the nodes of gained turns (turnLower).
	t := rp.r.t
	rp.fsLen, rp.lsLen = map[int][]int16{}, map[int][]int16{}
	for _, turns := range from {
		for _, ct := range turns {
			if u := rp.actIdx[t.g.Dst(int(ct.c))]; ct.gained && u >= 0 && rp.fsLen[int(u)] == nil {
				rp.fsLen[int(u)] = make([]int16, m)
				for b := range m {
					if b != int(u) {
						want = append(want, pairIndex(m, int(u), b))
					}
				}
			}
		}
	}
	for _, turns := range to {
		for _, ct := range turns {
			if u := rp.actIdx[t.g.Dst(int(ct.c))]; ct.gained && u >= 0 && rp.lsLen[int(u)] == nil {
				rp.lsLen[int(u)] = make([]int16, m)
				for a := range m {
					if a != int(u) {
						want = append(want, pairIndex(m, a, int(u)))
					}
				}
			}
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	routes, err := rp.lookup(base, patches, want)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	for k, i := range want {
		a, b := pairOf(i, m)
		if l := rp.fsLen[a]; l != nil {
			l[b] = int16(runsLen(routes[k]))
		}
		if l := rp.lsLen[b]; l != nil {
			l[a] = int16(runsLen(routes[k]))
		}
	}
	var dirs []Dir
	for k, i := range want {
		a, b := pairOf(i, m)
		if from[a] == nil && to[b] == nil {
			continue // looked up for the lengths only
		}
		dirs = AppendRunDirs(dirs[:0], routes[k])
		must := rp.takes(a, dirs, from[a], false) || rp.takes(a, dirs, to[b], true)
		if turn := rp.shorter(a, b, len(dirs), from[a], to[b]); must || turn {
			crossing = append(crossing, crossingRoute{i, a, b, routes[k], must, turn})
		}
	}
	slices.SortStableFunc(crossing, func(a, b crossingRoute) int { return a.index - b.index })
	out := crossing[:0]
	for _, c := range crossing {
		if n := len(out); n > 0 && out[n-1].index == c.index {
			out[n-1].must = out[n-1].must || c.must
			out[n-1].turn = out[n-1].turn || c.turn
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// shorter reports whether a route from active node a to b could be
// shorter than l steps by taking a gained turn as its first (from) or
// last (to) turn: the turn's two steps plus the torus distance from
// where they lead (to: from a to where they start) are fewer than l.
func (rp *repair) shorter(a, b, l int, from, to []changedTurn) bool {
	if l <= int(rp.distance(a, b)) {
		return false
	}
	for _, ct := range from {
		if ct.gained && rp.turnLower(a, b, ct, true) < l {
			return true
		}
	}
	for _, ct := range to {
		if ct.gained && rp.turnLower(a, b, ct, false) < l {
			return true
		}
	}
	return false
}

// turnLower is a length no route from active node a to b is shorter
// than that takes the gained turn ct as its first turn (fs) or its last.
// Taken first, the route is the turn's first step, then a route from the
// turn's node u without an FS step, at least as long as the shortest
// route from u before the failure (the table's, when u is active) unless
// a gained turn may shorten it at b; taken last, a route to u, then the
// turn's second step, likewise. Otherwise the torus distance from where
// the turn's steps lead (to: from a to where they start), plus two.
func (rp *repair) turnLower(a, b int, ct changedTurn, fs bool) int {
	t := rp.r.t
	u := t.g.Dst(int(ct.c)) // the turn's node
	var c [MaxDims]int32
	if fs {
		if ui := int(rp.actIdx[u]); ui >= 0 && ui != b && !hasGained(rp.to[b]) {
			return 1 + int(rp.fsLen[ui][b])
		}
		t.coords(int(t.nb[u*t.nd+int(ct.d)]), c[:])
		return 2 + int(rp.distanceTo(c[:], b))
	}
	if ui := int(rp.actIdx[u]); ui >= 0 && ui != a && !hasGained(rp.from[a]) {
		return int(rp.lsLen[ui][a]) + 1
	}
	t.coords(int(t.chSrc[ct.c]), c[:])
	return 2 + int(rp.distanceTo(c[:], a))
}

// hasGained reports whether one of the turns is gained.
func hasGained(turns []changedTurn) bool {
	return slices.ContainsFunc(turns, func(ct changedTurn) bool { return ct.gained })
}

// distanceTo is the torus distance from coordinates c to active node b.
func (rp *repair) distanceTo(c []int32, b int) int32 {
	t := rp.r.t
	nd := t.n
	cb := rp.off.coord[nd*b : nd*b+nd]
	h := int32(0)
	for i := range nd {
		dx := c[i] - cb[i]
		if dx < 0 {
			dx = -dx
		}
		if t.wrap[i] {
			dx = min(dx, int32(t.dims[i])-dx)
		}
		h += dx
	}
	return h
}

// distance is the torus distance between active nodes a and b.
func (rp *repair) distance(a, b int) int32 {
	nd := rp.r.t.n
	return rp.distanceTo(rp.off.coord[nd*a:nd*a+nd], b)
}

// takes reports whether the route from active node a with steps dirs
// takes one of the withdrawn turns as its first (last false) or last
// turn.
func (rp *repair) takes(a int, dirs []Dir, turns []changedTurn, last bool) bool {
	if len(turns) == 0 || len(dirs) < 2 {
		return false
	}
	t := rp.r.t
	k := 0
	if last {
		k = len(dirs) - 2
	}
	v := rp.ids[a]
	for _, d := range dirs[:k] {
		v = int(t.nbAt(v, d))
	}
	c := t.chAt(v, dirs[k])
	return slices.ContainsFunc(turns, func(ct changedTurn) bool { return !ct.gained && ct.c == c && ct.d == dirs[k+1] })
}

// lookup returns the run bytes of the routes want (indices, ascending) of
// a table stored as base (version 2) with patches: one pass over its
// records (crossing listed them), keeping the last of each offset.
func (rp *repair) lookup(base []byte, patches []storedPatch, want []int) ([][]byte, error) {
	recs := rp.recs
	last := rp.off.table(rp.m * (rp.m - 1))
	out := make([][]byte, len(want))
	k := 0
	for j, i := range want {
		for ; k < len(recs) && recs[k].index <= i; k++ {
			src, dst := pairOf(recs[k].index, rp.m)
			last.set(rp.off.key(src, dst), recs[k].at, recs[k].l)
		}
		if p, found := slices.BinarySearchFunc(patches, i, func(p storedPatch, i int) int { return p.index - i }); found {
			out[j] = patches[p].runs
			continue
		}
		src, dst := pairOf(i, rp.m)
		at, l, ok := last.get(rp.off.key(src, dst))
		if !ok {
			return nil, fmt.Errorf("stored routes damaged: route %d is predicted, but no route before it has its offset", i)
		}
		out[j] = base[at : at+l]
	}
	return out, nil
}
