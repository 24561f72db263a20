package alloc

import (
	"errors"
	"slices"
)

// maxHints is how many failed pairs are remembered per job size.
const maxHints = 16

// pairHints remembers, for each job size m, the ordered pairs of active
// nodes (as positions in the active list, which lists a placement's
// available nodes in coordinate order) that were last found without a
// route. Sets of one size from nearby or translated placements tend to
// fail on the same pair, and a single pair is much cheaper to decide
// than the whole set. The hints only order the work: every answer is the
// router's.
type pairHints struct {
	bySize map[int][][2]int32
	buf    [][2]int // node pairs handed to the router
	box    boxScratch
	links  liveLinks // the network's live links, for the connectivity check
}

// pairs returns the remembered pairs of size len(active) as node ids.
func (h *pairHints) pairs(active []int) [][2]int {
	h.buf = h.buf[:0]
	for _, p := range h.bySize[len(active)] {
		h.buf = append(h.buf, [2]int{active[p[0]], active[p[1]]})
	}
	return h.buf
}

// learn puts the failed pair bad (node ids) first among the hints of
// size len(active); a pair that is not one of active's is ignored.
func (h *pairHints) learn(active []int, bad [2]int) {
	i, j := slices.Index(active, bad[0]), slices.Index(active, bad[1])
	if i < 0 || j < 0 {
		return
	}
	if h.bySize == nil {
		h.bySize = map[int][][2]int32{}
	}
	p := [2]int32{int32(i), int32(j)}
	l := h.bySize[len(active)]
	if k := slices.Index(l, p); k >= 0 {
		l = slices.Delete(l, k, k+1)
	} else if len(l) >= maxHints {
		l = l[:maxHints-1]
	}
	h.bySize[len(active)] = slices.Insert(l, 0, p)
}

// answer reports whether the set is reachable: at once when the box of
// its active nodes lies inside it (boxCovers) or when the set does not
// connect them, else by the router, which tries the worker's remembered
// pairs first. Its questions belong to the enumeration phase: they end
// with errCut when the phase does.
func (d *decision) answer(w int, active, transit []int) (bool, error) {
	return d.answerUntil(w, active, transit, false, false)
}

// errNotYet is answerFirst's error when the sources it checked have
// routes to every active node: the set may still not be reachable.
var errNotYet = errors.New("no missing route found among the first sources")

// answerFirst is answer that checks the worker's remembered pairs and
// only the first batch of 64 sources of the router's full check (the
// sources likeliest to miss: see routing.Router.ReachableWithHints); it
// returns errNotYet when none misses and more sources are left. Most
// sets that are not reachable are told as cheaply as by answer, and a
// set that passes costs one batch instead of all.
func (d *decision) answerFirst(w int, active, transit []int) (bool, error) {
	return d.answerUntil(w, active, transit, false, true)
}

// answerConnected is answer that skips the connectivity and box checks
// when the caller knows the set is connected and not a box (prefix: the
// uniform path's sets, the first m nodes of a box that do not form one).
func (d *decision) answerConnected(w int, active, transit []int, prefix bool) (bool, error) {
	return d.answerUntil(w, active, transit, prefix, false)
}

// answerUntil is answerConnected, or with first answerFirst.
func (d *decision) answerUntil(w int, active, transit []int, prefix, first bool) (bool, error) {
	if d.clock.enum.Load() {
		return false, errCut
	}
	if d.sel.tune.cutAfterAsks > 0 && d.asked.Add(1) > int64(d.sel.tune.cutAfterAsks) {
		d.clock.enum.Store(true) // as if the budget ended here (tests)
		return false, errCut
	}
	h := &d.sel.hints[w]
	// Two shortcuts, unless the caller knows they do not apply (prefix):
	// a set holding the box of its active nodes is reachable (boxCovers),
	// and active nodes in different components of the set are not (routes
	// run inside it). Most sets asked about are not reachable and are told
	// by the pairs the worker learned, so the shortcuts are taken only
	// after those pairs have their routes: the router asks stop before its
	// first batch of sources, and gate takes them then (a router that asks
	// no stop answers alone, the same).
	gated, covered, apart := prefix, false, false
	gate := func() bool {
		if gated {
			return false
		}
		gated = true
		covered = d.boxes && d.sel.boxCovers(&h.box, active, transit)
		apart = !covered && !d.work[w].conn.joins(h.links.of(d.s.g), active, transit)
		return covered || apart
	}
	// A question of a large set outlasting the phase would outlast the
	// budget: it is given up with errCut when the phase ends.
	pairs := h.pairs(active)
	if prefix && len(active) > 1 {
		// The ends of a prefix set, after what the worker learned: the
		// last node ends its partial layer, where routes most often
		// miss, and a worker's first question has nothing learned yet.
		pairs = append(pairs, [2]int{active[len(active)-1], active[0]}, [2]int{active[0], active[len(active)-1]})
	}
	batches := 0
	stop := func() bool {
		if gate() {
			return true
		}
		batches++
		return first && batches > 1 || d.clock.enum.Load()
	}
	ok, bad, err := reachableUntil(d.rt, active, transit, pairs, stop)
	switch {
	case covered:
		return true, nil
	case apart:
		return false, nil
	case first && errors.Is(err, errCut) && !d.clock.enum.Load():
		return true, errNotYet
	}
	if err != nil || ok {
		return ok, err
	}
	h.learn(active, bad)
	return false, nil
}

// asker is answer for worker w as a function.
func (d *decision) asker(w int) func(active, transit []int) (bool, error) {
	return func(active, transit []int) (bool, error) { return d.answer(w, active, transit) }
}
