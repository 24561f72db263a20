package unicast

import (
	"sort"
	"sync"

	"github.com/icn-hpc/icn/internal/par"
)

// Destination order.
//
// Engines that balance (minhop, updn, sssp, dfsssp) route destinations one
// after the other, each seeing the load of the earlier ones, so the order
// matters. Ordering by LID makes the result depend on how the subnet
// manager numbered the ports; icn orders by structure instead and tries
// two orders, keeping the one whose busiest switch-to-switch channel
// carries fewer end-port routes (the switch-grouped one on ties):
//
//   - switch-grouped: the end ports of one switch back to back (switches
//     with more end ports first, then by GUID; a switch's ports by port
//     GUID), as OpenSM's sssp/dfsssp order them;
//     best on fat trees, where a leaf's destinations then spread over the
//     spines;
//   - interleaved: one end port of every switch in turn (switches with more
//     end ports first); best on dragonflies, tori and fabrics with failed
//     links, where consecutive destinations then start from different
//     switches.
//
// GUIDs, not LIDs or the order of the fabric file, fix the sequence, so
// the same fabric gets the same tables however it was numbered or listed.
// Switch LIDs follow in both orders (their routes are not counted).

// destOrder is a named way to list the live destinations.
type destOrder struct {
	name string
	list func(f *Fabric) []dest
}

var destOrders = []destOrder{{"switch-grouped", groupedDests}, {"interleaved", interleavedDests}}

// groupedDests lists the live end ports switch by switch, then the switch
// LIDs in switch order.
func groupedDests(f *Fabric) []dest {
	var out []dest
	for _, s := range switchesByTerms(f) {
		for _, ti := range f.termsByGUID(s) {
			if f.termAlive(int(ti)) {
				tm := f.terms[ti]
				out = append(out, dest{lid: tm.LID, sw: s, port: tm.SwPort, term: int(ti), alive: true})
			}
		}
	}
	return append(out, switchDests(f)...)
}

// interleavedDests lists the live end ports round-robin over switches
// (switches with more end ports first, then in fabric order), then the
// switch LIDs in switch order.
func interleavedDests(f *Fabric) []dest {
	byTerms := switchesByTerms(f)
	var out []dest
	for k := 0; ; k++ {
		added := false
		for _, s := range byTerms {
			ts := f.termsByGUID(s)
			if k >= len(ts) {
				continue
			}
			added = true
			ti := int(ts[k])
			if !f.termAlive(ti) {
				continue
			}
			tm := f.terms[ti]
			out = append(out, dest{lid: tm.LID, sw: s, port: tm.SwPort, term: ti, alive: true})
		}
		if !added {
			break
		}
	}
	return append(out, switchDests(f)...)
}

// switchesByTerms returns the switch indices, those with more end ports
// first, then by GUID.
func switchesByTerms(f *Fabric) []int {
	byTerms := f.switchesByGUID()
	sort.SliceStable(byTerms, func(a, b int) bool { return len(f.termsOf(byTerms[a])) > len(f.termsOf(byTerms[b])) })
	return byTerms
}

// termsByGUID returns the terminals cabled to switch s by port GUID.
func (f *Fabric) termsByGUID(s int) []int32 {
	ts := append([]int32(nil), f.termsOf(s)...)
	sort.Slice(ts, func(a, b int) bool { return f.terms[ts[a]].GUID < f.terms[ts[b]].GUID })
	return ts
}

// switchDests lists the live switch LIDs by switch GUID.
func switchDests(f *Fabric) []dest {
	var out []dest
	for _, s := range f.switchesByGUID() {
		if f.switchAlive(s) {
			out = append(out, dest{lid: int(f.swLID[s]), sw: s, term: -1, alive: true})
		}
	}
	return out
}

// bestOrder routes with every destination order and keeps the tables
// whose busiest switch channel carries the fewest end-port routes.
func bestOrder(f *Fabric, o Options, route func(ds []dest) (*Tables, error)) (*Tables, string, error) {
	ts := make([]*Tables, len(destOrders))
	loads := make([]int64, len(destOrders))
	for i, ord := range destOrders {
		t, err := route(ord.list(f))
		if err != nil {
			return nil, "", err
		}
		ts[i], loads[i] = t, maxSwitchLoad(t, o.Workers)
	}
	i := leastLoaded(loads)
	return ts[i], destOrders[i].name, nil
}

// bestOrderConcurrent is bestOrder with the orders routed at the same
// time, the workers split between them (for engines whose destinations
// are routed one after the other). route gets the order's index and its
// workers. It returns the index of the order kept.
func bestOrderConcurrent(f *Fabric, o Options, route func(i int, ds []dest, workers int) (*Tables, error)) (*Tables, int, error) {
	n := len(destOrders)
	nw := par.Workers(o.Workers)
	ts := make([]*Tables, n)
	loads := make([]int64, n)
	errs := make([]error, n)
	one := func(i, workers int) {
		if ts[i], errs[i] = route(i, destOrders[i].list(f), workers); errs[i] == nil {
			loads[i] = maxSwitchLoad(ts[i], workers)
		}
	}
	if nw < n {
		for i := range n {
			if one(i, orderWorkers(nw, i)); errs[i] != nil {
				return nil, 0, errs[i]
			}
		}
	} else {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				one(i, orderWorkers(nw, i))
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, 0, err
			}
		}
	}
	i := leastLoaded(loads)
	return ts[i], i, nil
}

// orderWorkers is how many of nw workers bestOrderConcurrent gives
// destination order i: all of them when the orders run one after the
// other (fewer workers than orders), else a share.
func orderWorkers(nw, i int) int {
	n := len(destOrders)
	if nw < n {
		return nw
	}
	return nw/n + btoi(i < nw%n)
}

// leastLoaded returns the index of the smallest load, the first on ties.
func leastLoaded(loads []int64) int {
	best := 0
	for i, l := range loads {
		if l < loads[best] {
			best = i
		}
	}
	return best
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// maxSwitchLoad returns the most end-port routes any live switch-to-switch
// channel carries under t (the audit's max_link_routes).
func maxSwitchLoad(t *Tables, workers int) int64 {
	f := t.F
	g := f.G
	S := len(f.switches)
	fl := newFastLFT(t, switchAdjacency(f))
	srcW := sourceWeights(f)
	nw := par.Workers(workers)
	type scratch struct {
		treeScratch
		sum  []int64
		load []int64
		_    [64]byte // per worker: keeps what workers write off each other's cache lines
	}
	scr := make([]scratch, nw)
	for i := range scr {
		scr[i] = scratch{treeScratch: newTreeScratch(S), sum: make([]int64, S), load: make([]int64, g.NumChannels())}
	}
	var terms []int
	for i := range f.terms {
		if f.termAlive(i) {
			terms = append(terms, i)
		}
	}
	par.For(len(terms), nw, func(w, k int) {
		sc := &scr[w]
		tm := f.terms[terms[k]]
		order := fl.treeOrder(tm.LID, &sc.treeScratch)
		for _, u := range order {
			sc.sum[u] = int64(srcW[u])
		}
		for p := 1; p <= g.NumPorts(tm.Node); p++ {
			if _, ti := f.Owner(f.portLID(tm.Node, p)); ti >= 0 && f.termAlive(ti) && sc.depth[f.terms[ti].Switch] >= 0 {
				sc.sum[f.terms[ti].Switch]-- // the node does not send to itself
			}
		}
		for _, u := range order {
			if v := sc.nxt[u]; v >= 0 {
				sc.sum[v] += sc.sum[u]
				sc.load[g.PortChannel(f.Switch(int(u)), t.Port(int(u), tm.LID))] += sc.sum[u]
			}
		}
	})
	var most int64
	for c := 0; c < g.NumChannels(); c++ {
		if f.swIndex[g.Src(c)] < 0 || f.swIndex[g.Dst(c)] < 0 || !g.Up(c) {
			continue
		}
		var l int64
		for i := range scr {
			l += scr[i].load[c]
		}
		most = max(most, l)
	}
	return most
}
