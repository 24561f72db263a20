package alloc

// blockScan is what the enumeration of one rectangle size knows about
// that size's blocks (placements without unavailable nodes, on a torus
// without failed links): they are all reachable and, when the router
// lets blocks share their reduction, all reduce the same way, so once one
// block's reduction has been pruned on criterion 1 every later block of
// the size is only counted (the bound only falls).
type blockScan struct {
	known bool // a block of the size has been reduced
	ok    bool // its reduction stayed within the bound
	kept  int  // transit nodes it kept
}

// blockShortcut reports whether the blocks of a size may be counted by
// blockScan: the improved algorithm on a torus without failed links, with
// shared block reductions, a full enumeration (not only placements that
// changed) and every placement counted.
func (d *decision) blockShortcut() bool {
	return !d.sel.tune.noBlockCounting && d.req.Algo == Improved && !d.sel.anyFault && d.shareBlocks &&
		d.changed == nil && !d.req.Exists && !d.req.CountOnly
}

// pruned reports whether a block of the size can no longer be a candidate.
func (b *blockScan) pruned(d *decision) bool {
	return b != nil && b.known && (!b.ok || int64(b.kept) > d.bestT.Load())
}

// record keeps the reduction of a block of the size.
func (b *blockScan) record(kept int, ok bool) {
	b.known, b.ok, b.kept = true, ok, kept
}
