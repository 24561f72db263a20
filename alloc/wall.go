package alloc

// splitByWall reports whether the available nodes of r (avail of them,
// the first m in r's order, X fastest, active and the others transit)
// certainly do not join the active nodes: some cross-section of r strictly
// inside a dimension that r does not take whole (no ring link joins r's
// two ends there) holds no available node, and both sides of it hold an
// active node. No link of the set crosses the wall, so the set is not
// reachable (the connectivity test on the listed nodes says the same).
func (g *grid) splitByWall(r Rect, avail, m int, ws *workerScratch) bool {
	total := vol(r.Size)
	ws.lo = append(ws.lo[:0], r.Start...)
	ws.hi = append(ws.hi[:0], r.Size...)
	for i, d := range g.dims {
		if r.Size[i] >= d || r.Size[i] < 3 {
			continue
		}
		layer, holes := total/r.Size[i], total-avail
		if holes < layer {
			continue // too few unavailable nodes for a wall
		}
		from := 1
		if holes == layer {
			// A wall would hold every unavailable node: it can only be
			// the first slab with one.
			from = g.firstHoleSlab(r, i, ws)
			if from < 1 {
				continue
			}
		}
		for k := from; k < r.Size[i]-1; k++ {
			ws.lo[i], ws.hi[i] = r.Start[i]+k, 1
			full := g.unavailable(ws.lo, ws.hi) == layer
			ws.lo[i], ws.hi[i] = r.Start[i], r.Size[i]
			if full && g.activeBothSides(r, i, k, avail, m, ws) {
				return true
			}
			if holes == layer {
				break
			}
		}
	}
	return false
}

// firstHoleSlab returns the least offset k of dimension i whose slab of
// r holds an unavailable node (r holds one), by bisection on the counts
// of the slabs before it (ws.lo/hi are r's box and are restored).
func (g *grid) firstHoleSlab(r Rect, i int, ws *workerScratch) int {
	lo, hi := 0, r.Size[i]-1 // the answer is in [lo, hi]
	for lo < hi {
		mid := (lo + hi) / 2
		ws.hi[i] = mid + 1 // slabs 0..mid
		if g.unavailable(ws.lo, ws.hi) > 0 {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	ws.hi[i] = r.Size[i]
	return lo
}

// activeBothSides reports whether both sides of the wall at offset k of
// dimension i of r hold an active node (a sufficient test; ws.lo/hi are
// r's box apart from dimension i and are restored). Either side has an
// active node when it has more available nodes than there are transit
// nodes. Or, in the first row of r (offset 0 in the dimensions above i,
// which comes first in r's order, its nodes before the wall first): when
// both sides of the row hold an available node and the side before the
// wall fewer than m, the first available node of each side is among the
// first m.
func (g *grid) activeBothSides(r Rect, i, k, avail, m int, ws *workerScratch) bool {
	defer func() {
		ws.lo[i], ws.hi[i] = r.Start[i], r.Size[i]
		copy(ws.hi[i+1:], r.Size[i+1:])
	}()
	layer := vol(r.Size) / r.Size[i]
	ws.lo[i], ws.hi[i] = r.Start[i], k
	before := k*layer - g.unavailable(ws.lo, ws.hi)
	if transit := avail - m; before > transit && avail-before > transit {
		return true
	}
	row := 1 // nodes of the first row per offset of dimension i
	for l := range i {
		row *= r.Size[l]
	}
	for l := i + 1; l < len(r.Size); l++ {
		ws.hi[l] = 1
	}
	a := k*row - g.unavailable(ws.lo, ws.hi)
	ws.lo[i], ws.hi[i] = r.Start[i]+k+1, r.Size[i]-k-1
	b := (r.Size[i]-k-1)*row - g.unavailable(ws.lo, ws.hi)
	return a >= 1 && b >= 1 && a < m
}
