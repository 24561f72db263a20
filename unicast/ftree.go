package unicast

import (
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/par"
)

// fatTree is the level structure of a fat tree: leaf switches (those with
// end ports) are level 1, every other switch is one more than its distance
// from the nearest leaf, and every switch-to-switch cable must join
// adjacent levels.
type fatTree struct {
	level    []int // per switch index
	maxLevel int
	byLevel  [][]int // switch indices per level (index 1..maxLevel)
	order    []int   // terminal indices in tree order
}

// analyseFatTree checks that f is a fat tree and orders its end ports so
// that end ports under the same subtree are consecutive at every level
// (the order the shift permutation and ftree's balancing refer to). Levels
// come from the cabling, not from failures.
func analyseFatTree(f *Fabric) (*fatTree, error) {
	g := f.G
	S := len(f.switches)
	ft := &fatTree{level: make([]int, S)}
	var q []int
	for s := 0; s < S; s++ {
		ft.level[s] = 0
		if len(f.termsOf(s)) > 0 {
			ft.level[s] = 1
			q = append(q, s)
		}
	}
	if len(q) == 0 {
		return nil, fmt.Errorf("not a fat tree: no switch has end nodes")
	}
	nbrs := func(s int, fn func(y int)) {
		for _, c := range g.Out(int(f.switches[s])) {
			if y := f.swIndex[g.Dst(int(c))]; y >= 0 {
				fn(int(y))
			}
		}
	}
	for h := 0; h < len(q); h++ {
		x := q[h]
		nbrs(x, func(y int) {
			if ft.level[y] == 0 {
				ft.level[y] = ft.level[x] + 1
				q = append(q, y)
			}
		})
	}
	for s := 0; s < S; s++ {
		if ft.level[s] == 0 {
			return nil, fmt.Errorf("not a fat tree: switch %s is not connected to any leaf switch", g.NodeName(int(f.switches[s])))
		}
		ft.maxLevel = max(ft.maxLevel, ft.level[s])
	}
	for l := range g.Links() {
		lk := g.Link(l)
		a, b := f.swIndex[lk.A], f.swIndex[lk.B]
		if a < 0 || b < 0 {
			continue
		}
		if d := ft.level[a] - ft.level[b]; d != 1 && d != -1 {
			return nil, fmt.Errorf("not a fat tree: link %s joins switches %s and %s of levels %d and %d (links must join adjacent levels)",
				g.LinkName(l), g.NodeName(int(lk.A)), g.NodeName(int(lk.B)), ft.level[a], ft.level[b])
		}
	}
	ft.byLevel = make([][]int, ft.maxLevel+1)
	for s := 0; s < S; s++ {
		ft.byLevel[ft.level[s]] = append(ft.byLevel[ft.level[s]], s)
	}
	// anc[l][s]: smallest switch index at level l above s (S if none).
	anc := make([][]int, ft.maxLevel+1)
	for l := 1; l <= ft.maxLevel; l++ {
		anc[l] = make([]int, S)
		for s := range anc[l] {
			anc[l][s] = S
		}
		for _, s := range ft.byLevel[l] {
			anc[l][s] = s
		}
	}
	for l := ft.maxLevel - 1; l >= 1; l-- {
		for _, s := range ft.byLevel[l] {
			nbrs(s, func(p int) {
				if ft.level[p] != l+1 {
					return
				}
				for L := l + 1; L <= ft.maxLevel; L++ {
					anc[L][s] = min(anc[L][s], anc[L][p])
				}
			})
		}
	}
	leaves := append([]int(nil), ft.byLevel[1]...)
	sort.SliceStable(leaves, func(i, j int) bool {
		a, b := leaves[i], leaves[j]
		for L := ft.maxLevel; L >= 2; L-- {
			if anc[L][a] != anc[L][b] {
				return anc[L][a] < anc[L][b]
			}
		}
		return a < b
	})
	for _, s := range leaves {
		for _, ti := range f.termsOf(s) {
			ft.order = append(ft.order, int(ti))
		}
	}
	return ft, nil
}

// routeFTree is fat-tree routing. End ports are taken in tree order; for
// each, a main down path is chosen from its leaf upwards, at every level
// the parent whose down cable to us carries the fewest main paths so far
// (lowest port on ties). Every other ancestor of the leaf routes down
// towards the leaf; every other switch routes up, preferring a parent on
// the main path, so all sources meet the main path at its top. Routes go up,
// then down: deadlock-free on one lane, and on a full fat tree the choice
// of tops reproduces d-mod-k, so a shift permutation meets no contention.
// Switch LIDs are routed up*/down* with the top level as roots.
func routeFTree(f *Fabric, o Options) (*Tables, error) {
	ft, err := analyseFatTree(f)
	if err != nil {
		return nil, fmt.Errorf("ftree: %v (use minhop, updn or dfsssp)", err)
	}
	g := f.G
	S := len(f.switches)
	t := NewTables(f, "ftree")
	fillLocal(t)

	// Sequential part: the main paths, with their load counters.
	N := len(ft.order)
	L := ft.maxLevel
	chainSw := make([]int32, N*L) // chain switches above the leaf, -1 = end
	chainPort := make([]uint8, N*L)
	for i := range chainSw {
		chainSw[i] = -1
	}
	downCnt := make([]int32, g.NumChannels())
	for j, ti := range ft.order {
		if !f.termAlive(ti) {
			continue
		}
		x := f.terms[ti].Switch
		for k := 0; k < L; k++ {
			// Group x's live up links by parent.
			bestLoad, bestCh := int32(-1), -1
			xv := int(f.switches[x])
			outs := g.Out(xv)
			for i, c := range outs {
				ci := int(c)
				if !g.Up(ci) {
					continue
				}
				p := f.swIndex[g.Dst(ci)]
				if p < 0 || ft.level[p] != ft.level[x]+1 {
					continue
				}
				// Count the group once, at its first live link.
				first := true
				for _, c2 := range outs[:i] {
					if g.Up(int(c2)) && g.Dst(int(c2)) == g.Dst(ci) {
						first = false
						break
					}
				}
				if !first {
					continue
				}
				load, ch := int32(0), -1
				for _, c2 := range outs[i:] {
					c2i := int(c2)
					if !g.Up(c2i) || g.Dst(c2i) != g.Dst(ci) {
						continue
					}
					load += downCnt[c2i^1]
					if ch < 0 || downCnt[c2i^1] < downCnt[ch^1] {
						ch = c2i
					}
				}
				if bestCh < 0 || load < bestLoad {
					bestLoad, bestCh = load, ch
				}
			}
			if bestCh < 0 {
				break
			}
			downCnt[bestCh^1]++
			p := int(f.swIndex[g.Dst(bestCh)])
			chainSw[j*L+k] = int32(p)
			chainPort[j*L+k] = uint8(g.DstPort(bestCh))
			x = p
		}
	}

	// Parallel part: every destination's routes from its main path.
	adj := switchAdjacency(f)
	nw := par.Workers(o.Workers)
	const (
		free = iota
		downR
		upR
	)
	type scratch struct {
		state []uint8
		main  []bool
		cand  []uint8
		best  []uint8
		down  [][]int32 // down routers per level
	}
	scr := make([]scratch, nw)
	for i := range scr {
		scr[i].state = make([]uint8, S)
		scr[i].main = make([]bool, S)
		scr[i].down = make([][]int32, L+1)
	}
	var done atomic.Int64
	par.For(N, nw, func(w, j int) {
		if done.Add(1)%256 == 0 {
			o.Progress(256)
		}
		ti := ft.order[j]
		if !f.termAlive(ti) {
			return
		}
		sc := &scr[w]
		clear(sc.state)
		clear(sc.main)
		for l := range sc.down {
			sc.down[l] = sc.down[l][:0]
		}
		lid := f.terms[ti].LID
		leaf := f.terms[ti].Switch
		sc.state[leaf], sc.main[leaf] = downR, true
		sc.down[1] = append(sc.down[1], int32(leaf))
		for k := 0; k < L; k++ {
			p := chainSw[j*L+k]
			if p < 0 {
				break
			}
			t.lft[int(p)*t.stride+lid] = chainPort[j*L+k]
			sc.state[p], sc.main[p] = downR, true
			sc.down[ft.level[p]] = append(sc.down[ft.level[p]], p)
		}
		// Other ancestors route down, level by level upwards.
		for l := 2; l <= L; l++ {
			for _, x := range sc.down[l-1] {
				for e := adj.start[x]; e < adj.start[x+1]; e++ {
					p := adj.nb[e]
					if ft.level[p] != l || sc.state[p] != free {
						continue
					}
					sc.cand = sc.cand[:0]
					for e2 := adj.start[p]; e2 < adj.start[p+1]; e2++ {
						y := adj.nb[e2]
						if ft.level[y] == l-1 && sc.state[y] == downR {
							sc.cand = append(sc.cand, adj.port[e2])
						}
					}
					t.lft[int(p)*t.stride+lid] = sc.cand[j%len(sc.cand)]
					sc.state[p] = downR
					sc.down[l] = append(sc.down[l], p)
				}
			}
		}
		// Everything else routes up, top levels first.
		for l := L - 1; l >= 1; l-- {
			for _, y := range ft.byLevel[l] {
				if sc.state[y] != free {
					continue
				}
				sc.best = sc.best[:0]
				bestClass := 5
				for e := adj.start[y]; e < adj.start[y+1]; e++ {
					p := adj.nb[e]
					if ft.level[p] != l+1 || sc.state[p] == free {
						continue
					}
					class := 4
					switch {
					case sc.state[p] == downR && sc.main[p]:
						class = 1
					case sc.state[p] == downR:
						class = 2
					case sc.main[p]:
						class = 3
					}
					if class < bestClass {
						bestClass = class
						sc.best = sc.best[:0]
					}
					if class == bestClass {
						sc.best = append(sc.best, adj.port[e])
					}
				}
				if len(sc.best) == 0 {
					continue
				}
				t.lft[y*t.stride+lid] = sc.best[j%len(sc.best)]
				sc.state[y] = upR
				sc.main[y] = bestClass == 1 || bestClass == 3
			}
		}
	})

	// Switch LIDs: up*/down* with the top level as roots.
	rank := make([]int, S)
	for s := range rank {
		rank[s] = L - ft.level[s]
		if !f.switchAlive(s) {
			rank[s] = -1
		}
	}
	var sw []dest
	for _, d := range f.dests() {
		if d.term < 0 {
			sw = append(sw, d)
		}
	}
	if err := fillUpDown(t, rank, adj, o, sw); err != nil {
		return nil, err
	}
	return t, nil
}
