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

// Options control Route.
type Options struct {
	// Engine names a registered engine (Engines).
	Engine string
	// Roots are the up*/down* root switches (node ids) of an engine with
	// Caps.Roots; nil = automatic.
	Roots []int
	// Lanes is the number of virtual lanes an engine with Caps.Lanes may
	// use; 0 means 8.
	Lanes int
	// Workers bounds parallelism (0 = all cores).
	Workers int
	// Progress, if set, is called with units of work done (from several
	// goroutines).
	Progress func(n int)
	// ctx is the context of the call in progress, which Route,
	// NewRerouter and the Rerouter's methods set from their argument:
	// sssp and dfsssp stop early with its error when it ends.
	ctx context.Context
	// sssp overrides sssp's thresholds (tests; nil: defaultSSSPLimits).
	sssp *ssspLimits
}

// Result is the outcome of Route.
type Result struct {
	Tables *Tables
	Roots  []int // up*/down* roots used (node ids), engines with Caps.Roots only
	// LanesNeeded is the number of lanes the layering needed; for engines
	// without layering it is 1. LaneLimit reports that the layering ran out
	// of lanes (the last lane keeps a cycle).
	LanesNeeded int
	LaneLimit   bool
	// LayerSeconds is the time the lane layering took (engines with
	// Caps.Lanes);
	// LayerBreaks the cycles it broke and LayerMoved the paths it moved.
	LayerSeconds float64
	LayerBreaks  int
	LayerMoved   int64
	// Order is the destination order kept by the engines that try two
	// (Caps.Balances): "switch-grouped" or "interleaved".
	Order string
}

// DefaultLanes is the lane budget when Options.Lanes is 0.
const DefaultLanes = 8

// MaxLanes is the number of data virtual lanes InfiniBand offers.
const MaxLanes = 15

// Route computes forwarding tables for f with the engine o names; an
// unknown name is an error that lists the registered ones. When ctx
// ends, sssp and dfsssp stop early with its error.
func Route(ctx context.Context, f *Fabric, o Options) (*Result, error) {
	o.ctx = ctx
	e, err := o.engine()
	if err != nil {
		return nil, err
	}
	if o, err = o.withDefaults(); err != nil {
		return nil, err
	}
	res, _, err := e.routeAll(f, o)
	return res, err
}

// engine returns the engine o names, checking the options that only some
// engines take.
func (o Options) engine() (*Engine, error) {
	e, err := LookupEngine(o.Engine)
	if err != nil {
		return nil, err
	}
	if o.Roots != nil && !e.Caps.Roots {
		return nil, fmt.Errorf("roots apply to the %s engine only", strings.Join(EngineNamesWith(func(c Caps) bool { return c.Roots }), ", "))
	}
	return e, nil
}

// withDefaults checks o's lanes and fills in its defaults.
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
	return o, nil
}

// routeSSSPKeep routes f with sssp, or with dfsssp when layered (o has
// its defaults), and keeps the state of the destination order kept.
func routeSSSPKeep(f *Fabric, o Options, layered bool) (*Result, engineState, error) {
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
		return nil, engineState{}, err
	}
	res.Tables, res.Order = t, destOrders[kept].name
	if layered {
		if err := layerInto(res, o); err != nil {
			return nil, engineState{}, err
		}
	}
	return res, engineState{sp: states[kept]}, nil
}

// layerInto layers res's paths onto at most o.Lanes lanes (dfsssp).
func layerInto(res *Result, o Options) error {
	start := time.Now()
	ctx := o.ctx
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
