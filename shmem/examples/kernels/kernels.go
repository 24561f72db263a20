// Package kernels holds the example computations of the shmem package —
// halo-exchange stencils, a distributed histogram with atomics and an
// irregular scatter of single-word puts — each checked against a
// sequential computation of the same answer. The programs under
// shmem/examples run them under icn shmem run; the tests run them on
// in-process jobs.
package kernels

import (
	"fmt"
	"math/rand/v2"

	"github.com/icn-hpc/icn/shmem"
)

// block returns the range [lo, hi) of n items owned by part p of parts.
func block(n, parts, p int) (lo, hi int) {
	return n * p / parts, n * (p + 1) / parts
}

// Stencil1D runs steps Jacobi steps of u' = (u[i-1] + 2u[i] + u[i+1]) / 4
// on n cells with fixed zero boundaries, distributed in blocks. Each step
// puts the PE's edge cells into its neighbours' ghost cells (single-word
// puts) and synchronises with BarrierAll: once so the ghosts have arrived,
// once so no neighbour overwrites them before they are used. It returns an
// error if any cell differs from the sequential computation.
func Stencil1D(w *shmem.World, n, steps int) error {
	me, np := w.MyPE(), w.NPEs()
	if n < np {
		return fmt.Errorf("stencil1d: %d cells for %d PEs", n, np)
	}
	lo, hi := block(n, np, me)
	// the co-array holds the largest block plus two ghosts; ghosts at 0 and m+1
	maxb := (n + np - 1) / np
	u, err := shmem.NewCoarray[float64](w, maxb+2)
	if err != nil {
		return err
	}
	defer u.Free()
	m := hi - lo
	cur := u.Local()
	for i := 0; i < m; i++ {
		cur[i+1] = initial1D(lo + i)
	}
	next := make([]float64, m+2)
	if err := w.BarrierAll(); err != nil {
		return err
	}
	for s := 0; s < steps; s++ {
		if me > 0 { // my first cell is the right ghost of the left PE
			l0, l1 := block(n, np, me-1)
			if err := u.PutValue(me-1, l1-l0+1, cur[1]); err != nil {
				return err
			}
		}
		if me < np-1 {
			if err := u.PutValue(me+1, 0, cur[m]); err != nil {
				return err
			}
		}
		if err := w.BarrierAll(); err != nil { // ghosts have arrived
			return err
		}
		for i := 1; i <= m; i++ {
			next[i] = (cur[i-1] + 2*cur[i] + cur[i+1]) / 4
		}
		if err := w.BarrierAll(); err != nil { // neighbours have read my edges
			return err
		}
		copy(cur[1:m+1], next[1:m+1])
	}
	ref := seq1D(n, steps)
	for i := 0; i < m; i++ {
		if cur[i+1] != ref[lo+i] {
			return fmt.Errorf("stencil1d: PE %d cell %d = %v, sequential %v", me, lo+i, cur[i+1], ref[lo+i])
		}
	}
	return w.BarrierAll()
}

func initial1D(i int) float64 { return float64((i*7919)%101) / 10 }

func seq1D(n, steps int) []float64 {
	cur := make([]float64, n+2)
	next := make([]float64, n+2)
	for i := 0; i < n; i++ {
		cur[i+1] = initial1D(i)
	}
	for s := 0; s < steps; s++ {
		for i := 1; i <= n; i++ {
			next[i] = (cur[i-1] + 2*cur[i] + cur[i+1]) / 4
		}
		copy(cur[1:n+1], next[1:n+1])
	}
	return cur[1 : n+1]
}

// Grid2D factors np into px*py as square as possible (px >= py).
func Grid2D(np int) (px, py int) {
	py = 1
	for d := 1; d*d <= np; d++ {
		if np%d == 0 {
			py = d
		}
	}
	return np / py, py
}

// Stencil2D runs steps 5-point Jacobi steps on an nx×ny grid (fixed zero
// boundary) distributed over a px×py process grid. Rows of the halo go as
// one put each; columns go element by element as single-word puts, the
// seed's style of many small remote writes. Checked against the sequential
// computation.
func Stencil2D(w *shmem.World, nx, ny, steps int) error {
	me, np := w.MyPE(), w.NPEs()
	px, py := Grid2D(np)
	if nx < px || ny < py {
		return fmt.Errorf("stencil2d: grid %dx%d too small for %dx%d PEs", nx, ny, px, py)
	}
	cx, cy := me%px, me/px
	x0, x1 := block(nx, px, cx)
	y0, y1 := block(ny, py, cy)
	bx, by := x1-x0, y1-y0
	// local block with a ghost ring, row-major with the largest row width
	W := (nx+px-1)/px + 2
	H := (ny+py-1)/py + 2
	u, err := shmem.NewCoarray[float64](w, W*H)
	if err != nil {
		return err
	}
	defer u.Free()
	cur := u.Local()
	at := func(x, y int) int { return y*W + x } // x, y in ghost coordinates
	for y := 0; y < by; y++ {
		for x := 0; x < bx; x++ {
			cur[at(x+1, y+1)] = initial2D(x0+x, y0+y)
		}
	}
	next := make([]float64, W*H)
	pe := func(cx, cy int) int { return cy*px + cx }
	dims := func(cx, cy int) (int, int) {
		a, b := block(nx, px, cx)
		c, d := block(ny, py, cy)
		return b - a, d - c
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	for s := 0; s < steps; s++ {
		if cy > 0 { // my top row -> bottom ghost row of the PE above
			_, h := dims(cx, cy-1)
			if err := u.Put(pe(cx, cy-1), at(1, h+1), cur[at(1, 1):at(1, 1)+bx]); err != nil {
				return err
			}
		}
		if cy < py-1 { // my bottom row -> top ghost row of the PE below
			if err := u.Put(pe(cx, cy+1), at(1, 0), cur[at(1, by):at(1, by)+bx]); err != nil {
				return err
			}
		}
		for y := 1; y <= by; y++ {
			if cx > 0 { // my left column -> right ghost column of the left PE
				wl, _ := dims(cx-1, cy)
				if err := u.PutValue(pe(cx-1, cy), at(wl+1, y), cur[at(1, y)]); err != nil {
					return err
				}
			}
			if cx < px-1 {
				if err := u.PutValue(pe(cx+1, cy), at(0, y), cur[at(bx, y)]); err != nil {
					return err
				}
			}
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		for y := 1; y <= by; y++ {
			for x := 1; x <= bx; x++ {
				next[at(x, y)] = (cur[at(x-1, y)] + cur[at(x+1, y)] + cur[at(x, y-1)] + cur[at(x, y+1)]) / 4
			}
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		for y := 1; y <= by; y++ {
			copy(cur[at(1, y):at(bx+1, y)], next[at(1, y):at(bx+1, y)])
		}
	}
	ref := seq2D(nx, ny, steps)
	for y := 0; y < by; y++ {
		for x := 0; x < bx; x++ {
			if got, want := cur[at(x+1, y+1)], ref[(y0+y)*nx+x0+x]; got != want {
				return fmt.Errorf("stencil2d: PE %d cell (%d,%d) = %v, sequential %v", me, x0+x, y0+y, got, want)
			}
		}
	}
	return w.BarrierAll()
}

func initial2D(x, y int) float64 { return float64((x*31+y*17)%23) / 4 }

func seq2D(nx, ny, steps int) []float64 {
	W, H := nx+2, ny+2
	cur := make([]float64, W*H)
	next := make([]float64, W*H)
	for y := 0; y < ny; y++ {
		for x := 0; x < nx; x++ {
			cur[(y+1)*W+x+1] = initial2D(x, y)
		}
	}
	for s := 0; s < steps; s++ {
		for y := 1; y <= ny; y++ {
			for x := 1; x <= nx; x++ {
				i := y*W + x
				next[i] = (cur[i-1] + cur[i+1] + cur[i-W] + cur[i+W]) / 4
			}
		}
		cur, next = next, cur
	}
	out := make([]float64, nx*ny)
	for y := 0; y < ny; y++ {
		for x := 0; x < nx; x++ {
			out[y*nx+x] = cur[(y+1)*W+x+1]
		}
	}
	return out
}

// keys returns PE pe's k keys in [0, bins).
func keys(seed uint64, pe, k, bins int) []int {
	r := rand.New(rand.NewPCG(seed, uint64(pe)))
	out := make([]int, k)
	for i := range out {
		// skewed: half the keys fall into the first tenth of the bins
		if r.IntN(2) == 0 {
			out[i] = r.IntN(max(bins/10, 1))
		} else {
			out[i] = r.IntN(bins)
		}
	}
	return out
}

// Histogram counts k random keys per PE into bins distributed cyclically
// (bin b lives on PE b mod np), every key one non-fetching remote atomic
// add, and checks every bin against the sequential count. It returns the
// number of updates this PE issued.
func Histogram(w *shmem.World, bins, k int, seed uint64) (int, error) {
	me, np := w.MyPE(), w.NPEs()
	h, err := shmem.NewCoarray[int64](w, (bins+np-1)/np)
	if err != nil {
		return 0, err
	}
	defer h.Free()
	for _, b := range keys(seed, me, k, bins) {
		if err := shmem.AtomicAdd(h, b%np, b/np, 1); err != nil {
			return 0, err
		}
	}
	if err := w.BarrierAll(); err != nil {
		return 0, err
	}
	ref := make([]int64, bins)
	for p := 0; p < np; p++ {
		for _, b := range keys(seed, p, k, bins) {
			ref[b]++
		}
	}
	loc := h.Local()
	for b := me; b < bins; b += np {
		if loc[b/np] != ref[b] {
			return 0, fmt.Errorf("histogram: bin %d = %d, sequential %d", b, loc[b/np], ref[b])
		}
	}
	return k, w.BarrierAll()
}

// permutation returns a seeded random permutation of n.
func permutation(n int, seed uint64) []int {
	return rand.New(rand.NewPCG(seed, 0x5ca77e4)).Perm(n)
}

func value(i int) int64 { return int64(i)*1_000_003 + 7 }

// Scatter is the irregular kernel that motivates the seed: a global array
// of n words is distributed in blocks; every PE sends each of its source
// elements to a random global position (a seeded permutation), one
// single-word put each, then one barrier. Every PE checks its block
// against the sequential scatter. It returns the number of puts issued.
func Scatter(w *shmem.World, n int, seed uint64) (int, error) {
	me, np := w.MyPE(), w.NPEs()
	if n < np {
		return 0, fmt.Errorf("scatter: %d elements for %d PEs", n, np)
	}
	maxb := (n + np - 1) / np
	dst, err := shmem.NewCoarray[int64](w, maxb)
	if err != nil {
		return 0, err
	}
	defer dst.Free()
	perm := permutation(n, seed)
	// owner of global index g: the block containing it
	starts := make([]int, np+1)
	for p := 0; p <= np; p++ {
		starts[p], _ = block(n, np, min(p, np-1))
		if p == np {
			starts[p] = n
		}
	}
	owner := func(g int) int {
		p := g * np / n
		for starts[p] > g {
			p--
		}
		for starts[p+1] <= g {
			p++
		}
		return p
	}
	lo, hi := block(n, np, me)
	for i := lo; i < hi; i++ {
		g := perm[i]
		p := owner(g)
		if err := dst.PutValue(p, g-starts[p], value(i)); err != nil {
			return 0, err
		}
	}
	if err := w.BarrierAll(); err != nil {
		return 0, err
	}
	ref := make([]int64, n)
	for i, g := range perm {
		ref[g] = value(i)
	}
	loc := dst.Local()
	for g := lo; g < hi; g++ {
		if loc[g-lo] != ref[g] {
			return 0, fmt.Errorf("scatter: element %d = %d, sequential %d", g, loc[g-lo], ref[g])
		}
	}
	return hi - lo, w.BarrierAll()
}
