package unicast

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/internal/par"
)

// Engine describes a routing engine.
type Engine struct {
	Name     string
	Summary  string
	Deadlock string // what the engine guarantees about deadlock and why
}

// Engines lists the routing engines in the order the CLI shows them.
var Engines = []Engine{
	{"minhop", "shortest paths; among the shortest ports of a switch the one carrying fewest end-node routes so far",
		"no guarantee: shortest paths on a ring or torus close channel-dependency cycles (the audit finds them)"},
	{"updn", "up*/down*: switches ranked by BFS distance from the roots (ties by GUID); a route never goes up after going down",
		"deadlock-free on one lane: up channels form an acyclic order, so no dependency cycle can close (Autonet)"},
	{"ftree", "fat-tree routing: destinations in tree order, each routed down from a top switch chosen by least-loaded up-ports, all other switches routed up towards it",
		"deadlock-free on one lane: every route goes up, then down (fat trees only)"},
	{"sssp", "per-destination Dijkstra over switch links whose weights grow with the routes they already carry",
		"no guarantee: balanced paths may close dependency cycles"},
	{"dfsssp", "sssp, then paths moved to further virtual lanes (weakest cycle edge first) until every lane's dependency graph is acyclic",
		"deadlock-free when the lanes needed fit in --lanes: each lane's CDG is acyclic (Dally–Seitz)"},
	{"dor", "dimension-order routing on a mesh or torus of switches (X, then Y, …; shorter way round on rings)",
		"mesh: deadlock-free on one lane (dimension order); torus: paths are layered onto lanes as in dfsssp, and when that needs as many lanes as the dateline rule, lane = one bit per ring whose wrap-around link the path crosses (2^rings lanes, provably acyclic)"},
}

// EngineNames returns the engine names.
func EngineNames() []string {
	out := make([]string, len(Engines))
	for i, e := range Engines {
		out[i] = e.Name
	}
	return out
}

// Options control Route.
type Options struct {
	Engine string
	// Roots are the up*/down* root switches (node ids); nil = automatic.
	Roots []int
	// Lanes is the number of virtual lanes dfsssp (and dor on tori) may use;
	// 0 means 8.
	Lanes int
	// Workers bounds parallelism (0 = all cores).
	Workers int
	// Progress, if set, is called with units of work done (from several
	// goroutines).
	Progress func(n int)
	// Context, if set, stops sssp and dfsssp early with its error.
	Context context.Context
	// sssp overrides sssp's thresholds (tests; nil: defaultSSSPLimits).
	sssp *ssspLimits
}

// Result is the outcome of Route.
type Result struct {
	Tables *Tables
	Roots  []int // up*/down* roots used (node ids), updn only
	// LanesNeeded is the number of lanes the layering needed; for engines
	// without layering it is 1. LaneLimit reports that the layering ran out
	// of lanes (the last lane keeps a cycle).
	LanesNeeded int
	LaneLimit   bool
	// LayerSeconds is the time the lane layering took (dfsssp, dor on tori);
	// LayerBreaks the cycles it broke and LayerMoved the paths it moved.
	LayerSeconds float64
	LayerBreaks  int
	LayerMoved   int64
	// Order is the destination order kept by the engines that try two
	// (minhop, updn, sssp, dfsssp): "switch-grouped" or "interleaved".
	Order string
}

// DefaultLanes is the lane budget when Options.Lanes is 0.
const DefaultLanes = 8

// MaxLanes is the number of data virtual lanes InfiniBand offers.
const MaxLanes = 15

// Route computes forwarding tables for f with the chosen engine.
func Route(f *Fabric, o Options) (*Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	res := &Result{LanesNeeded: 1}
	switch o.Engine {
	case "minhop":
		res.Tables, res.Order, err = routeMinHop(f, o)
	case "updn":
		res.Tables, res.Roots, res.Order, err = routeUpDn(f, o)
	case "ftree":
		res.Tables, err = routeFTree(f, o)
	case "sssp", "dfsssp":
		res, _, err = routeSSSPKeep(f, o)
	case "dor":
		var dl *dateline
		res.Tables, dl, err = routeDOR(f, o)
		if err == nil && dl != nil {
			// Layering usually needs fewer lanes than the 2^rings of the
			// dateline rule; use the rule when layering does not beat it.
			start := time.Now()
			var lr layerResult
			limit := min(o.Lanes, 1<<dl.bits-1)
			if limit >= 1 {
				lr, err = layer(res.Tables, limit, o.Workers, o.Progress)
			}
			res.LayerBreaks, res.LayerMoved = lr.breaks, lr.moved
			if err == nil && (limit < 1 || lr.limit) {
				if 1<<dl.bits <= o.Lanes {
					dl.assign(res.Tables)
					lr = layerResult{needed: 1 << dl.bits}
				}
			}
			res.LanesNeeded, res.LaneLimit = lr.needed, lr.limit
			res.LayerSeconds = time.Since(start).Seconds()
		}
	default:
		return nil, fmt.Errorf("unknown engine %q (want %s)", o.Engine, strings.Join(EngineNames(), ", "))
	}
	if err != nil {
		return nil, err
	}
	res.Tables.Engine = o.Engine
	return res, nil
}

// withDefaults checks o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Lanes == 0 {
		o.Lanes = DefaultLanes
	}
	if o.Lanes < 1 || o.Lanes > MaxLanes {
		return o, fmt.Errorf("--lanes %d: want 1..%d", o.Lanes, MaxLanes)
	}
	if o.Progress == nil {
		o.Progress = func(int) {}
	}
	if o.Roots != nil && o.Engine != "updn" {
		return o, fmt.Errorf("roots apply to the updn engine only")
	}
	return o, nil
}

// routeSSSPKeep routes f with sssp or dfsssp (o has its defaults) and
// returns the state of the destination order kept.
func routeSSSPKeep(f *Fabric, o Options) (*Result, *ssspState, error) {
	states := make([]*ssspState, len(destOrders))
	res := &Result{LanesNeeded: 1}
	adj := switchAdjacency(f)
	// The layers are laid out for the team of the first order (the
	// other's is the same size or one less).
	team := o.ssspTeam(len(f.switches), orderWorkers(par.Workers(o.Workers), 0))
	trees := ssspTrees(f, adj, o.Workers, o.ssspLimits().treesMaxBytes, team)
	t, kept, err := bestOrderConcurrent(f, o, func(i int, ds []dest, workers int) (*Tables, error) {
		t, st, err := routeSSSPWith(f, o, ds, adj, trees, workers)
		states[i] = st
		return t, err
	})
	if err != nil {
		return nil, nil, err
	}
	res.Tables, res.Order = t, destOrders[kept].name
	if o.Engine == "dfsssp" {
		if err := layerInto(res, o); err != nil {
			return nil, nil, err
		}
	}
	res.Tables.Engine = o.Engine
	return res, states[kept], nil
}

// layerInto layers res's paths onto at most o.Lanes lanes (dfsssp).
func layerInto(res *Result, o Options) error {
	start := time.Now()
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	lr, err := layerContext(ctx, res.Tables, o.Lanes, o.Workers, o.Progress)
	res.LanesNeeded, res.LaneLimit = lr.needed, lr.limit
	res.LayerBreaks, res.LayerMoved = lr.breaks, lr.moved
	res.LayerSeconds = time.Since(start).Seconds()
	return err
}

// candFunc appends to buf the ports switch s may use towards switch t
// (t != s), in increasing port order.
type candFunc func(worker, s, t int, buf []uint8) []uint8

// balanced fills every live switch's table: for each destination (end
// ports first, in LID order) it takes the candidate port that carries the
// fewest end-port routes so far (lowest port on ties), OpenSM's port
// balancing. Switches are independent, so they run in parallel; candidate
// sets are computed once per (switch, target switch).
func balanced(t *Tables, ds []dest, cand candFunc, workers int, progress func(int)) {
	f := t.F
	S := len(f.switches)
	nw := par.Workers(workers)
	type scratch struct {
		off []int32
		ln  []uint8
		buf []uint8
		cnt []int32
		_   [64]byte // per worker: keeps what workers write off each other's cache lines
	}
	scr := make([]scratch, nw)
	for i := range scr {
		scr[i].off = make([]int32, S)
		scr[i].ln = make([]uint8, S)
		scr[i].cnt = make([]int32, MaxPort+1)
	}
	var done atomic.Int64
	par.For(S, nw, func(w, s int) {
		defer func() {
			if done.Add(1)%64 == 0 {
				progress(64)
			}
		}()
		if !f.switchAlive(s) {
			return
		}
		sc := &scr[w]
		for i := range sc.off {
			sc.off[i] = -1
		}
		sc.buf = sc.buf[:0]
		clear(sc.cnt)
		row := t.row(s)
		for _, d := range ds {
			if !d.alive || d.sw == s || d.sw < 0 {
				continue
			}
			o := sc.off[d.sw]
			if o < 0 {
				o = int32(len(sc.buf))
				sc.buf = cand(w, s, d.sw, sc.buf)
				sc.off[d.sw] = o
				sc.ln[d.sw] = uint8(len(sc.buf) - int(o))
			}
			cs := sc.buf[o : o+int32(sc.ln[d.sw])]
			if len(cs) == 0 {
				continue
			}
			best := cs[0]
			for _, p := range cs[1:] {
				if sc.cnt[p] < sc.cnt[best] {
					best = p
				}
			}
			row[d.lid] = best
			if d.term >= 0 {
				sc.cnt[best]++
			}
		}
	})
}

// sortedInts returns a sorted copy.
func sortedInts(a []int) []int {
	b := append([]int(nil), a...)
	sort.Ints(b)
	return b
}
