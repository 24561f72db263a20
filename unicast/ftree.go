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
	// portRank[s*256+p] is port p's index among switch s's cabled up
	// ports (to the level above) or among its cabled down ports (to the
	// level below), in port order; nUp and nDown count them.
	portRank   []uint8
	nUp, nDown []int
}

// analyseFatTree checks that f is a fat tree and orders its end ports so
// that end ports under the same subtree are consecutive at every level
// (the order the shift permutation and ftree's balancing refer to). Levels
// come from the cabling, not from failures.
func analyseFatTree(f *Fabric) (*fatTree, error) {
	ft := &fatTree{}
	if err := ft.assignLevels(f); err != nil {
		return nil, err
	}
	if err := ft.checkAdjacentLevels(f); err != nil {
		return nil, err
	}
	ft.byLevel = make([][]int, ft.maxLevel+1)
	for s := range ft.level {
		ft.byLevel[ft.level[s]] = append(ft.byLevel[ft.level[s]], s)
	}
	anc := ft.ancestors(f)
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
	ft.rankPorts(f)
	return ft, nil
}

// rankPorts numbers every switch's cabled up and down ports.
func (ft *fatTree) rankPorts(f *Fabric) {
	g := f.G
	S := len(f.switches)
	ft.portRank = make([]uint8, S*256)
	ft.nUp, ft.nDown = make([]int, S), make([]int, S)
	for s, v := range f.switches {
		for p := 1; p <= g.NumPorts(int(v)); p++ {
			c := g.PortChannel(int(v), p)
			if c < 0 {
				continue
			}
			y := f.swIndex[g.Dst(c)]
			switch {
			case y < 0:
			case ft.level[y] == ft.level[s]+1:
				ft.portRank[s*256+p] = uint8(ft.nUp[s])
				ft.nUp[s]++
			case ft.level[y] == ft.level[s]-1:
				ft.portRank[s*256+p] = uint8(ft.nDown[s])
				ft.nDown[s]++
			}
		}
	}
}

// pick chooses, for the j-th end port, one of switch s's candidate ports
// cs (up ports when up, else down ports): the first at or after position
// j mod n, cyclically, in the list of all n cabled ports of that
// direction. On an intact fabric where every port is a candidate this is
// port j mod n (d-mod-k); a port that fails moves only the end ports that
// had chosen it.
func (ft *fatTree) pick(s int, cs []uint8, j int, up bool) uint8 {
	n := ft.nDown[s]
	if up {
		n = ft.nUp[s]
	}
	best, bestD := cs[0], n
	for _, p := range cs {
		if d := ft.cyc(s, p, j, n); d < bestD {
			best, bestD = p, d
		}
	}
	return best
}

// cyc is port p's distance from position j mod n, cyclically.
func (ft *fatTree) cyc(s int, p uint8, j, n int) int {
	return ((int(ft.portRank[s*256+int(p)])-j)%n + n) % n
}

// switchNeighbours calls fn for the switch at the far end of every link
// of switch s.
func switchNeighbours(f *Fabric, s int, fn func(y int)) {
	g := f.G
	for _, c := range g.Out(int(f.switches[s])) {
		if y := f.swIndex[g.Dst(int(c))]; y >= 0 {
			fn(int(y))
		}
	}
}

// assignLevels gives leaf switches (those with end nodes) level 1 and
// every other switch its breadth-first distance from the leaves plus one.
func (ft *fatTree) assignLevels(f *Fabric) error {
	S := len(f.switches)
	ft.level = make([]int, S)
	var q []int
	for s := 0; s < S; s++ {
		if len(f.termsOf(s)) > 0 {
			ft.level[s] = 1
			q = append(q, s)
		}
	}
	if len(q) == 0 {
		return fmt.Errorf("not a fat tree: no switch has end nodes")
	}
	for h := 0; h < len(q); h++ {
		x := q[h]
		switchNeighbours(f, x, func(y int) {
			if ft.level[y] == 0 {
				ft.level[y] = ft.level[x] + 1
				q = append(q, y)
			}
		})
	}
	for s := 0; s < S; s++ {
		if ft.level[s] == 0 {
			return fmt.Errorf("not a fat tree: switch %s is not connected to any leaf switch", f.G.NodeName(int(f.switches[s])))
		}
		ft.maxLevel = max(ft.maxLevel, ft.level[s])
	}
	return nil
}

// checkAdjacentLevels fails on a switch-to-switch link that does not join
// adjacent levels.
func (ft *fatTree) checkAdjacentLevels(f *Fabric) error {
	g := f.G
	for l := range g.Links() {
		lk := g.Link(l)
		a, b := f.swIndex[lk.A], f.swIndex[lk.B]
		if a < 0 || b < 0 {
			continue
		}
		if d := ft.level[a] - ft.level[b]; d != 1 && d != -1 {
			return fmt.Errorf("not a fat tree: link %s joins switches %s and %s of levels %d and %d (links must join adjacent levels)",
				g.LinkName(l), g.NodeName(int(lk.A)), g.NodeName(int(lk.B)), ft.level[a], ft.level[b])
		}
	}
	return nil
}

// ancestors returns anc[l][s]: the smallest switch index at level l above
// switch s (S if none).
func (ft *fatTree) ancestors(f *Fabric) [][]int {
	S := len(f.switches)
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
			switchNeighbours(f, s, func(p int) {
				if ft.level[p] != l+1 {
					return
				}
				for L := l + 1; L <= ft.maxLevel; L++ {
					anc[L][s] = min(anc[L][s], anc[L][p])
				}
			})
		}
	}
	return anc
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
// The router is kept for the Rerouter's incremental updates.
func routeFTree(f *Fabric, o Options) (*Result, engineState, error) {
	fr, err := newFTreeRouter(f, o)
	if err != nil {
		return nil, engineState{}, err
	}
	return &Result{Tables: fr.t, LanesNeeded: 1}, engineState{ft: fr}, nil
}

// newFTreeRouter routes f in full and keeps the router's state.
func newFTreeRouter(f *Fabric, o Options) (*ftreeRouter, error) {
	ft, err := analyseFatTree(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (use %s)", o.Engine, err, anyFabricEngines())
	}
	t := NewTables(f, o.Engine)
	fillLocal(t)
	fr := &ftreeRouter{f: f, ft: ft, t: t, L: ft.maxLevel, adj: switchAdjacency(f)}
	fr.chooseMainPaths()
	fr.routeEndPorts(o)
	return fr, fr.routeSwitchLIDs(o)
}

// ftreeRouter holds the state of one ftree run.
type ftreeRouter struct {
	f   *Fabric
	ft  *fatTree
	t   *Tables
	L   int // levels
	adj *swAdj
	// Main path of the j-th end port in tree order: the switches above
	// its leaf ([j*L+k], -1 = end) and the down port each uses.
	chainSw   []int32
	chainPort []uint8
	// ud routes the switch LIDs (up*/down*, top level as roots).
	ud *upDownTable
	// Live up channels of each switch grouped by parent
	// (upGroups[upStart[x]:upStart[x+1]] index upChans).
	upStart  []int32
	upGroups []chanRange
	upChans  []int32
}

// ftree switch states while one destination is routed.
const (
	ftFree = iota
	ftDown
	ftUp
)

// ftreeScratch is one worker's state for routing a destination.
type ftreeScratch struct {
	state []uint8
	main  []bool
	cand  []uint8
	best  []uint8
	down  [][]int32 // down routers per level
	_     [64]byte  // per worker: keeps what workers write off each other's cache lines
}

// chooseMainPaths picks, sequentially, every end port's main path with
// its load counters.
func (fr *ftreeRouter) chooseMainPaths() {
	f, ft, L := fr.f, fr.ft, fr.L
	N := len(ft.order)
	fr.groupUpLinks()
	fr.chainSw = make([]int32, N*L)
	fr.chainPort = make([]uint8, N*L)
	for i := range fr.chainSw {
		fr.chainSw[i] = -1
	}
	downCnt := make([]int32, f.G.NumChannels())
	for j, ti := range ft.order {
		if !f.termAlive(ti) {
			continue
		}
		x := f.terms[ti].Switch
		for k := 0; k < L; k++ {
			bestCh := fr.leastLoadedParent(x, downCnt)
			if bestCh < 0 {
				break
			}
			downCnt[bestCh^1]++
			p := int(f.swIndex[f.G.Dst(bestCh)])
			fr.chainSw[j*L+k] = int32(p)
			fr.chainPort[j*L+k] = uint8(f.G.DstPort(bestCh))
			x = p
		}
	}
}

// leastLoadedParent returns the up channel of switch x to the parent whose
// live down cables to x carry the fewest main paths (and, of those
// cables, the least loaded), or -1. Parents are taken in the order of
// their first live cable (the first on ties), cables in port order.
func (fr *ftreeRouter) leastLoadedParent(x int, downCnt []int32) int {
	bestLoad, bestCh := int32(-1), -1
	for _, grp := range fr.upGroups[fr.upStart[x]:fr.upStart[x+1]] {
		load, ch := int32(0), -1
		for _, c := range fr.upChans[grp.start:grp.end] {
			ci := int(c)
			load += downCnt[ci^1]
			if ch < 0 || downCnt[ci^1] < downCnt[ch^1] {
				ch = ci
			}
		}
		if bestCh < 0 || load < bestLoad {
			bestLoad, bestCh = load, ch
		}
	}
	return bestCh
}

// groupUpLinks lists every switch's live up channels grouped by parent
// (groups in the order of their first channel in g.Out, channels in that
// order).
func (fr *ftreeRouter) groupUpLinks() {
	f, g, ft := fr.f, fr.f.G, fr.ft
	S := len(f.switches)
	fr.upStart = make([]int32, S+1)
	fr.upGroups, fr.upChans = nil, nil
	for x := 0; x < S; x++ {
		outs := g.Out(int(f.switches[x]))
		for i, c := range outs {
			ci := int(c)
			if !g.Up(ci) {
				continue
			}
			p := f.swIndex[g.Dst(ci)]
			if p < 0 || ft.level[p] != ft.level[x]+1 {
				continue
			}
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
			grp := chanRange{start: int32(len(fr.upChans))}
			for _, c2 := range outs[i:] {
				if g.Up(int(c2)) && g.Dst(int(c2)) == g.Dst(ci) {
					fr.upChans = append(fr.upChans, c2)
				}
			}
			grp.end = int32(len(fr.upChans))
			fr.upGroups = append(fr.upGroups, grp)
		}
		fr.upStart[x+1] = int32(len(fr.upGroups))
	}
}

type chanRange struct{ start, end int32 }

// routeEndPorts routes every end port from its main path, in parallel.
func (fr *ftreeRouter) routeEndPorts(o Options) {
	S := len(fr.f.switches)
	nw := par.Workers(o.Workers)
	scr := make([]ftreeScratch, nw)
	for i := range scr {
		scr[i] = ftreeScratch{state: make([]uint8, S), main: make([]bool, S), down: make([][]int32, fr.L+1)}
	}
	var done atomic.Int64
	par.For(len(fr.ft.order), nw, func(w, j int) {
		if done.Add(1)%256 == 0 {
			o.Progress(256)
		}
		if fr.f.termAlive(fr.ft.order[j]) {
			fr.routeEndPort(&scr[w], j)
		}
	})
}

// routeEndPort routes the j-th end port in tree order: its main path, the
// other ancestors down, everything else up.
func (fr *ftreeRouter) routeEndPort(sc *ftreeScratch, j int) {
	clear(sc.state)
	clear(sc.main)
	for l := range sc.down {
		sc.down[l] = sc.down[l][:0]
	}
	tm := fr.f.terms[fr.ft.order[j]]
	leaf := tm.Switch
	sc.state[leaf], sc.main[leaf] = ftDown, true
	sc.down[1] = append(sc.down[1], int32(leaf))
	for k := 0; k < fr.L; k++ {
		p := fr.chainSw[j*fr.L+k]
		if p < 0 {
			break
		}
		fr.t.lft[int(p)*fr.t.stride+tm.LID] = fr.chainPort[j*fr.L+k]
		sc.state[p], sc.main[p] = ftDown, true
		sc.down[fr.ft.level[p]] = append(sc.down[fr.ft.level[p]], p)
	}
	fr.routeDownAncestors(sc, j, tm.LID)
	fr.routeUp(sc, j, tm.LID)
}

// routeDownAncestors makes the other ancestors of the leaf route down,
// level by level upwards.
func (fr *ftreeRouter) routeDownAncestors(sc *ftreeScratch, j, lid int) {
	adj, ft := fr.adj, fr.ft
	for l := 2; l <= fr.L; l++ {
		for _, x := range sc.down[l-1] {
			for e := adj.start[x]; e < adj.start[x+1]; e++ {
				p := adj.nb[e]
				if ft.level[p] != l || sc.state[p] != ftFree {
					continue
				}
				sc.cand = sc.cand[:0]
				for e2 := adj.start[p]; e2 < adj.start[p+1]; e2++ {
					y := adj.nb[e2]
					if ft.level[y] == l-1 && sc.state[y] == ftDown {
						sc.cand = append(sc.cand, adj.port[e2])
					}
				}
				fr.t.lft[int(p)*fr.t.stride+lid] = ft.pick(int(p), sc.cand, j, false)
				sc.state[p] = ftDown
				sc.down[l] = append(sc.down[l], p)
			}
		}
	}
}

// routeUp makes every other switch route up, top levels first, preferring
// a parent on the main path that routes down.
func (fr *ftreeRouter) routeUp(sc *ftreeScratch, j, lid int) {
	adj, ft := fr.adj, fr.ft
	for l := fr.L - 1; l >= 1; l-- {
		for _, y := range ft.byLevel[l] {
			if sc.state[y] != ftFree {
				continue
			}
			sc.best = sc.best[:0]
			bestClass := 5
			for e := adj.start[y]; e < adj.start[y+1]; e++ {
				p := adj.nb[e]
				if ft.level[p] != l+1 || sc.state[p] == ftFree {
					continue
				}
				class := 4
				switch {
				case sc.state[p] == ftDown && sc.main[p]:
					class = 1
				case sc.state[p] == ftDown:
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
			fr.t.lft[y*fr.t.stride+lid] = ft.pick(y, sc.best, j, true)
			sc.state[y] = ftUp
			sc.main[y] = bestClass == 1 || bestClass == 3
		}
	}
}

// ranks returns the up*/down* rank of every switch: the top level is 0,
// dead switches -1.
func (fr *ftreeRouter) ranks() []int {
	f := fr.f
	rank := make([]int, len(f.switches))
	for s := range rank {
		rank[s] = fr.L - fr.ft.level[s]
		if !f.switchAlive(s) {
			rank[s] = -1
		}
	}
	return rank
}

// routeSwitchLIDs routes the switch LIDs up*/down* with the top level as
// roots. Switch LIDs carry no end-port routes, so no balancing applies:
// every switch takes its first legal port (see upDownFirst).
func (fr *ftreeRouter) routeSwitchLIDs(o Options) error {
	u, err := newUpDown(fr.f, fr.adj, fr.ranks(), o.Workers, o.Progress)
	if err != nil {
		return err
	}
	fr.ud = u
	par.For(len(fr.f.switches), o.Workers, func(_, t int) { fr.fillSwitchLID(t) })
	return nil
}

// fillSwitchLID sets every switch's entry for target switch t's LID.
func (fr *ftreeRouter) fillSwitchLID(t int) {
	f, S := fr.f, len(fr.f.switches)
	lid := int(f.swLID[t])
	alive := f.switchAlive(t)
	var buf [MaxPort + 1]uint8
	for s := 0; s < S; s++ {
		if s == t {
			continue
		}
		p := uint8(noPort)
		if alive && f.switchAlive(s) {
			if cs := fr.ud.cand(fr.adj, s, t, buf[:0]); len(cs) > 0 {
				p = cs[0]
			}
		}
		fr.t.lft[s*fr.t.stride+lid] = p
	}
	if alive {
		fr.t.lft[t*fr.t.stride+lid] = 0
	} else {
		fr.t.lft[t*fr.t.stride+lid] = noPort
	}
}
