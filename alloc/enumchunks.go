package alloc

import "github.com/icn-hpc/icn/internal/par"

// chunkPlacements is how many placements of one rectangle size a worker
// examines as one piece of work. A decision's sizes differ widely in cost
// (the first sizes examined, before the criterion-1 bound falls, or those
// with many placements holding unavailable nodes), so handing out whole
// sizes left one worker with the slowest size while the others idled: on
// the 240-node torus of the cluster replays the slowest size of a
// decision took a third of its enumeration.
const chunkPlacements = 64

// sizeChunk is a run of placements of one size: indices lo..hi-1 in the
// order placements enumerates them.
type sizeChunk struct {
	si, lo, hi int
}

// examineSizes examines every placement of the sizes listed (indices into
// d.sizes) on all cores, in chunks of placements, except those the
// decision's φ filter leaves out, and adds each size's outcome to
// results. A size's chunks are merged in enumeration order, so each
// size's counts and candidates, in their order, are those of one
// enumeration of the size.
func (d *decision) examineSizes(sizes []int, results []sizeResult) {
	if !d.phiDone {
		d.phi, d.phiDone = d.newPhiFilter(), true
	}
	var chunks []sizeChunk
	limit := make([]int, len(d.sel.dims))
	for _, si := range sizes {
		n := placementLimits(d.sel.dims, d.sel.wrap, d.sizes[si], limit)
		for lo := 0; lo < n; lo += chunkPlacements {
			chunks = append(chunks, sizeChunk{si, lo, min(lo+chunkPlacements, n)})
		}
	}
	parts := make([]sizeResult, len(chunks))
	if f := d.phi; f != nil && f.exact {
		d.examineByPhi(chunks, parts, results)
		return
	}
	par.For(len(chunks), d.sel.Workers, func(w, k int) {
		c := chunks[k]
		size := d.sizes[c.si]
		out := &parts[k]
		var blocks *blockScan
		if d.blockShortcut() {
			// Per chunk: every chunk's first block is reduced (by the
			// memo, after the first), and what blockScan skips is only
			// counted, so the counts are a whole size's.
			blocks = &blockScan{}
		}
		placementRange(d.sel.dims, d.sel.wrap, size, c.lo, c.hi, func(st []int) bool {
			if d.phi != nil && d.phi.skip(c.si, st, d.sel.dims) {
				out.examined++ // decided without a question
				return true
			}
			return d.examine(w, size, st, out, blocks)
		})
	})
	for k, c := range chunks {
		results[c.si].add(&parts[k])
	}
}

// examineByPhi is examineSizes with the φ filter's exact test: the
// placements the filter keeps are listed with φ after their set without
// transit nodes (criterion 1 is settled at 0, so only such sets can be
// candidates), those below φ* are left out, and the others are examined
// from the largest φ down (examineEntries).
func (d *decision) examineByPhi(chunks []sizeChunk, parts, results []sizeResult) {
	f := d.phi
	N := d.s.N()
	lists := make([][]boundedEntry, len(chunks))
	par.For(len(chunks), d.sel.Workers, func(w, k int) {
		c := chunks[k]
		size := d.sizes[c.si]
		out := &parts[k]
		placementRange(d.sel.dims, d.sel.wrap, size, c.lo, c.hi, func(st []int) bool {
			if d.stop.Load() || d.clock.enum.Load() {
				d.cutHit.Store(d.clock.enum.Load())
				return false
			}
			if f.skip(c.si, st, d.sel.dims) {
				out.examined++ // decided without a question
				return true
			}
			boxes := d.stairBoxes(w, size, st)
			if boxes == nil {
				out.examined++ // fewer than m available nodes: no set
				return true
			}
			phi, ok := f.bl.phiReaching(boxes, d.sel.dims, N)
			if !ok {
				out.examined++ // below φ*
				return true
			}
			lists[k] = append(lists[k], boundedEntry{si: int32(c.si), v: int32(enc(st, d.sel.dims)), phi: phi})
			return true
		})
	})
	for k, c := range chunks {
		results[c.si].add(&parts[k])
	}
	var all []boundedEntry
	for _, l := range lists {
		all = append(all, l...)
	}
	d.examineEntries(all, results, true)
}
