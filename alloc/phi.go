package alloc

// MaximalFreeRectangles lists every maximal free sub-rectangle (MSS): a
// rectangle of available nodes that cannot grow in any direction, because
// the ring is complete or the next layer holds an unavailable node (or, on
// a mesh, the border). Exhaustive: O(N²·2ⁿ); for small tori and reports.
func MaximalFreeRectangles(s *State) []Rect {
	g := newGrid(s)
	var out []Rect
	n := len(s.dims)
	ext := make([]int, n)
	exs := make([]int, n)
	for _, size := range Shapes(s.dims) {
		placements(s.dims, s.wrap, size, func(start []int) bool {
			if g.unavailable(start, size) != 0 {
				return true
			}
			for i := 0; i < n; i++ {
				if size[i] == s.dims[i] {
					continue
				}
				copy(ext, size)
				ext[i]++
				// grow downwards
				copy(exs, start)
				exs[i] = start[i] - 1
				if s.wrap[i] {
					exs[i] = (exs[i] + s.dims[i]) % s.dims[i]
					if ext[i] == s.dims[i] {
						exs[i] = 0
					}
				}
				if exs[i] >= 0 && g.fits(exs, ext) && g.unavailable(exs, ext) == 0 {
					return true
				}
				// grow upwards
				copy(exs, start)
				if ext[i] == s.dims[i] {
					exs[i] = 0
				}
				if g.fits(exs, ext) && g.unavailable(exs, ext) == 0 {
					return true
				}
			}
			out = append(out, Rect{Start: append([]int(nil), start...), Size: append([]int(nil), size...)})
			return true
		})
	}
	return out
}

// Fragmentation is φ(I, S) = |N|·(nodes in the largest MSS) + (number of
// largest MSSs), with its two parts. Larger is better (less fragmented).
type Fragmentation struct {
	Phi          int64 `json:"phi"`
	LargestNodes int   `json:"largest_mss_nodes"`
	LargestCount int   `json:"largest_mss_count"`
}

// Phi computes the fragmentation score of the state. A free rectangle of
// the largest volume is necessarily maximal, so it suffices to find the
// largest volume with a free placement and count the free placements of
// that volume: shapes are tried in decreasing volume and the search stops
// at the first volume that has one.
func Phi(s *State) Fragmentation {
	g := newGrid(s)
	free := s.FreeCount()
	best, count := 0, 0
	for _, size := range Shapes(s.dims) { // by volume, descending
		v := vol(size)
		if v > free {
			continue
		}
		if best > 0 && v < best {
			break
		}
		placements(s.dims, s.wrap, size, func(start []int) bool {
			if g.unavailable(start, size) == 0 {
				best = v
				count++
			}
			return true
		})
	}
	return Fragmentation{Phi: int64(s.N())*int64(best) + int64(count), LargestNodes: best, LargestCount: count}
}
