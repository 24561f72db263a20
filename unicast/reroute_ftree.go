package unicast

import (
	"github.com/icn-hpc/icn/internal/par"
)

// Incremental ftree.
//
// routeEndPort routes one end port from its main path alone: it reads the
// switch adjacency only when a down switch offers itself to its parents
// (routeDownAncestors) and when a switch routing up lists its parents
// (routeUp). So a changed link a–b (a the lower end) can alter the routes
// to end port j only if, in j's routing before the change, a routed down
// (b then counted a among its down children, unless b lies on j's main
// path and is not routed from its children), or a routed up and b was one
// of its parents in the class it chose from (the chosen index into that
// class depends on the class's size), or a had no route and the link came
// up. Until the first switch that consults a changed link the routing
// runs as before, so every other end port keeps its routes exactly.
// affects tests these conditions on the tables before the change.

// updateFTree brings the ftree tables to f2 (same cabling).
func (r *Rerouter) updateFTree(f2 *Fabric, st *UpdateStats) error {
	old := r.ft
	f1 := old.f
	S := len(f2.switches)
	for s := 0; s < S; s++ {
		if !f1.switchAlive(s) && f2.switchAlive(s) {
			st.Mode, st.Why, st.Exact = "full", "a switch came back", true
			return r.full(f2)
		}
	}
	ch := switchLinkChanges(f1, f2)
	ft := old.ft
	for i := range ch {
		if c := &ch[i]; ft.level[c.a] > ft.level[c.b] {
			c.a, c.b, c.pa, c.pb = c.b, c.a, c.pb, c.pa
		}
	}
	nfr := &ftreeRouter{f: f2, ft: ft, t: old.t.cloneFor(f2), L: old.L, adj: switchAdjacency(f2)}
	nfr.chooseMainPaths()
	t := nfr.t
	swDied := false
	for s := 0; s < S; s++ {
		if f1.switchAlive(s) && !f2.switchAlive(s) {
			swDied = true
			row := t.row(s)
			for i := range row {
				row[i] = noPort
			}
		}
	}
	// End ports.
	N, L := len(ft.order), old.L
	aff := make([]bool, N)
	par.For(N, r.o.Workers, func(_, j int) {
		ti := ft.order[j]
		a1, a2 := f1.termAlive(ti), f2.termAlive(ti)
		switch {
		case a1 != a2:
			aff[j] = true
			return
		case !a2:
			return
		}
		for k := j * L; k < (j+1)*L; k++ {
			if old.chainSw[k] != nfr.chainSw[k] || old.chainPort[k] != nfr.chainPort[k] {
				aff[j] = true
				return
			}
		}
		for _, c := range ch {
			if old.affects(j, c, f2) {
				aff[j] = true
				return
			}
		}
	})
	var todo []int
	for j, a := range aff {
		if a {
			todo = append(todo, j)
		}
	}
	nw := par.Workers(r.o.Workers)
	scr := make([]ftreeScratch, nw)
	for i := range scr {
		scr[i] = ftreeScratch{state: make([]uint8, S), main: make([]bool, S), down: make([][]int32, L+1)}
	}
	par.For(len(todo), nw, func(w, k int) {
		j := todo[k]
		tm := f2.terms[ft.order[j]]
		for s := 0; s < S; s++ {
			t.lft[s*t.stride+tm.LID] = noPort
		}
		if f2.termAlive(ft.order[j]) {
			t.lft[tm.Switch*t.stride+tm.LID] = uint8(tm.SwPort)
			nfr.routeEndPort(&scr[w], j)
		}
	})
	st.Rerouted = len(todo)
	// Switch LIDs.
	if swDied {
		if err := nfr.routeSwitchLIDs(r.o); err != nil {
			return err
		}
		st.Rerouted += S
	} else {
		st.Rerouted += nfr.updateSwitchLIDs(old.ud, ch, r.o.Workers)
	}
	st.Mode, st.Exact = "incremental", true
	r.ft, r.f = nfr, f2
	r.res = &Result{Tables: t, LanesNeeded: 1}
	return nil
}

// ftreeClass ranks a parent for a switch routing up (routeUp's classes).
func ftreeClass(state uint8, main bool) int {
	switch {
	case state == ftDown && main:
		return 1
	case state == ftDown:
		return 2
	case main:
		return 3
	}
	return 4
}

// stateOf reads switch x's state in the routing of the end port with LID
// lid on leaf switch leaf from the tables.
func (fr *ftreeRouter) stateOf(x, lid, leaf int) uint8 {
	if x == leaf {
		return ftDown
	}
	p := fr.t.lft[x*fr.t.stride+lid]
	if p == noPort {
		return ftFree
	}
	y := fr.f.swNext(x, int(p))
	switch {
	case y < 0:
		return ftFree
	case fr.ft.level[y] < fr.ft.level[x]:
		return ftDown
	}
	return ftUp
}

// onChain reports whether switch x is on the j-th end port's main path.
func (fr *ftreeRouter) onChain(j, x int) bool {
	for k := j * fr.L; k < (j+1)*fr.L && fr.chainSw[k] >= 0; k++ {
		if int(fr.chainSw[k]) == x {
			return true
		}
	}
	return false
}

// class returns routeUp's class of switch x for the j-th end port.
func (fr *ftreeRouter) class(x, j, lid, leaf int) int {
	st := fr.stateOf(x, lid, leaf)
	// main: a down switch is on the main path (or the leaf); a switch
	// routing up inherits it from the parent it chose.
	y := x
	for steps := 0; steps <= fr.L+1; steps++ {
		switch fr.stateOf(y, lid, leaf) {
		case ftDown:
			return ftreeClass(st, y == leaf || fr.onChain(j, y))
		case ftFree:
			return ftreeClass(st, false)
		}
		y = fr.f.swNext(y, int(fr.t.lft[y*fr.t.stride+lid]))
	}
	return ftreeClass(st, false)
}

// affects reports whether changed link c can alter the routes of the j-th
// end port (see the comment at the top of this file); fr is the routing
// before the change, f2 the fabric after it.
func (fr *ftreeRouter) affects(j int, c linkChange, f2 *Fabric) bool {
	tm := fr.f.terms[fr.ft.order[j]]
	lid, leaf := tm.LID, tm.Switch
	switch fr.stateOf(c.a, lid, leaf) {
	case ftDown:
		// b counts a among its down children (unless b is on the main
		// path): its pick moves if it had picked this link, or if the
		// link comes up ahead of its pick.
		if !f2.switchAlive(c.b) || fr.onChain(j, c.b) {
			return false
		}
		pb := fr.t.lft[c.b*fr.t.stride+lid]
		if !c.up {
			return pb == c.pb
		}
		return pb == noPort || fr.ahead(c.b, c.pb, pb, j, false)
	case ftUp:
		if !f2.switchAlive(c.a) {
			return false
		}
		pa := fr.t.lft[c.a*fr.t.stride+lid]
		if !c.up {
			return pa == c.pa
		}
		if fr.stateOf(c.b, lid, leaf) == ftFree {
			return false
		}
		chosen := fr.f.swNext(c.a, int(pa))
		cb, cc := fr.class(c.b, j, lid, leaf), fr.class(chosen, j, lid, leaf)
		return cb < cc || cb == cc && fr.ahead(c.a, c.pa, pa, j, true)
	}
	return c.up && f2.switchAlive(c.a)
}

// ahead reports whether port p of switch s comes before port q in the
// cyclic order pick uses for the j-th end port.
func (fr *ftreeRouter) ahead(s int, p, q uint8, j int, up bool) bool {
	ft := fr.ft
	n := ft.nDown[s]
	if up {
		n = ft.nUp[s]
	}
	return ft.cyc(s, p, j, n) < ft.cyc(s, q, j, n)
}

// updateSwitchLIDs brings the switch-LID routes to fr's fabric after the
// link changes ch (no switch changed state), starting from the up*/down*
// table old of the previous fabric; it returns the switch LIDs whose
// column was computed again.
func (fr *ftreeRouter) updateSwitchLIDs(old *upDownTable, ch []linkChange, workers int) int {
	S := old.S
	u := *old
	u.cell = append([]uint16(nil), old.cell...)
	fr.ud = &u
	redo := make([]bool, S)
	nw := par.Workers(workers)
	qs := make([][]int32, nw)
	ends := map[int]bool{}
	for _, c := range ch {
		ends[c.a], ends[c.b] = true, true
	}
	par.For(S, nw, func(w, t int) {
		for _, c := range ch {
			if u.consults(fr.adj, t, c, len(ch) == 1) {
				redo[t] = true
				break
			}
		}
		if redo[t] {
			qs[w] = u.fillColumn(fr.adj, t, qs[w])
			fr.fillSwitchLID(t)
			return
		}
		for s := range ends {
			fr.setSwitchLIDEntry(s, t)
		}
	})
	n := 0
	for _, x := range redo {
		if x {
			n++
		}
	}
	return n
}

// setSwitchLIDEntry sets switch s's entry for target switch t's LID.
func (fr *ftreeRouter) setSwitchLIDEntry(s, t int) {
	f := fr.f
	if s == t || !f.switchAlive(s) || !f.switchAlive(t) {
		return
	}
	var buf [MaxPort + 1]uint8
	p := uint8(noPort)
	if cs := fr.ud.cand(fr.adj, s, t, buf[:0]); len(cs) > 0 {
		p = cs[0]
	}
	fr.t.lft[s*fr.t.stride+int(f.swLID[t])] = p
}

// consults reports whether computing column t (as in the table before the
// change) reads changed link c; adj is the adjacency after the change.
// With tieOK (c is the only change), a failed link an equally short
// up-neighbour can replace does not count.
func (u *upDownTable) consults(adj *swAdj, t int, c linkChange, tieOK bool) bool {
	col := u.cell[t*u.S : (t+1)*u.S]
	lo, hi := c.a, c.b
	if u.key[lo] < u.key[hi] {
		lo, hi = hi, lo
	}
	cl, chh := col[lo], col[hi]
	if cl != udUnreach && cl&udDown != 0 {
		return true // the down search from lo reaches hi
	}
	if chh == udUnreach {
		return false
	}
	if cl == udUnreach {
		return c.up
	}
	dh, dl := chh&udDist, cl&udDist
	if c.up {
		return dh+1 < dl
	}
	if dh+1 != dl {
		return false
	}
	if tieOK {
		for _, y := range adj.of(lo) {
			if cy := col[y]; u.key[y] < u.key[lo] && cy != udUnreach && (cy&udDist)+1 == dl {
				return false
			}
		}
	}
	return true
}
