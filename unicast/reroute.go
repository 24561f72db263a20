package unicast

import (
	"bytes"
	"context"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// Rerouter keeps one engine's tables of a fabric current as its links and
// nodes fail and come back: Update takes the fabric in its new state and
// routes again only what the change can affect. What that is depends on
// the engine (Engine.Caps.Update):
//
//   - ftree: incremental and exact. The main paths are chosen again (a
//     cheap sequential pass); an end port is routed again when its main
//     path changed or when a changed link is one its routing consults (see
//     ftreeRouter.affects); switch LIDs are routed again where a changed
//     link is consulted by the up*/down* column of their switch. The tables
//     equal a full computation on the new fabric, byte for byte (tested on
//     random failure sequences). A switch coming back is routed in full.
//   - sssp, dfsssp: repair. Only the destinations whose routes used a
//     failed link or node are routed again, against the link weights of
//     all other routes (dfsssp then layers all paths onto lanes again), so
//     every pair is delivered at once; the sequential balancing of a full
//     run depends on every earlier destination, so the repaired tables are
//     valid but not those of a full run (UpdateStats.Exact is false): call
//     Full for those.
//   - minhop, updn, dor: a full computation.
//
// A Rerouter is not safe for concurrent use. Graphs passed to it must not
// change afterwards (give each state its own graph, as Graph.WithFaults
// does).
type Rerouter struct {
	o   Options
	eng *Engine
	ann *Annotations
	res *Result
	f   *Fabric
	engineState
}

// UpdateStats says how Update produced its tables.
type UpdateStats struct {
	// Mode is "incremental" (only what the change affects, exact),
	// "repair" (only destinations that lost their routes; valid, not
	// exact) or "full".
	Mode string `json:"mode"`
	// Why a full computation was needed (empty for the other modes).
	Why string `json:"why,omitempty"`
	// Exact: the tables equal a full computation on the new fabric.
	Exact bool `json:"exact"`
	// Rerouted destination LIDs of Destinations.
	Rerouted     int `json:"rerouted_destinations"`
	Destinations int `json:"destinations"`
	// Changed LFT entries against the previous tables.
	Changed int64   `json:"changed_entries"`
	Seconds float64 `json:"seconds"`
}

// NewRerouter routes g in full with o and keeps what later updates need;
// when ctx ends, sssp and dfsssp stop early with its error.
func NewRerouter(ctx context.Context, g *topology.Graph, ann *Annotations, o Options) (*Rerouter, error) {
	e, err := o.engine()
	if err != nil {
		return nil, err
	}
	if o, err = o.withDefaults(); err != nil {
		return nil, err
	}
	r := &Rerouter{o: o, eng: e, ann: ann}
	defer r.during(ctx)()
	f, err := NewFabric(g, ann)
	if err != nil {
		return nil, err
	}
	if err := r.full(f); err != nil {
		return nil, err
	}
	return r, nil
}

// during makes ctx the context of the Rerouter's call in progress; the
// function it returns ends that.
func (r *Rerouter) during(ctx context.Context) func() {
	r.o.ctx = ctx
	return func() { r.o.ctx = nil }
}

// Result returns the current tables.
func (r *Rerouter) Result() *Result { return r.res }

// full routes f from scratch and keeps the engine's state.
func (r *Rerouter) full(f *Fabric) error {
	o, err := r.o.withDefaults()
	if err != nil {
		return err
	}
	res, st, err := r.eng.routeAll(f, o)
	if err != nil {
		return err
	}
	r.res, r.engineState, r.f = res, st, f
	return nil
}

// Full routes the current fabric from scratch (what Update approximates
// when it repairs), stopped early (sssp and dfsssp) when ctx ends; the
// previous tables then stay current.
func (r *Rerouter) Full(ctx context.Context) (*Result, error) {
	defer r.during(ctx)()
	if err := r.full(r.f); err != nil {
		return nil, err
	}
	return r.res, nil
}

// linkChange is a switch-to-switch link whose state differs between two
// fabrics; for fat trees a is the lower end.
type linkChange struct {
	a, b   int   // switch indices
	pa, pb uint8 // the link's port at a and at b
	up     bool  // state in the new fabric
}

// Update routes g, the fabric of the last call in another state of
// failures; when ctx ends, sssp and dfsssp stop early with its error. On
// error the previous tables stay current.
func (r *Rerouter) Update(ctx context.Context, g *topology.Graph) (*Result, UpdateStats, error) {
	defer r.during(ctx)()
	start := time.Now()
	var st UpdateStats
	prev := r.res.Tables
	f2, err := NewFabric(g, r.ann)
	if err != nil {
		return nil, st, err
	}
	if why := sameCabling(r.f, f2); why != "" {
		st.Mode, st.Why, st.Exact = "full", why, true
		if err := r.full(f2); err != nil {
			return nil, st, err
		}
	} else {
		if r.eng.update != nil {
			err = r.eng.update(r, f2, &st)
		} else {
			st.Mode, st.Why, st.Exact = "full", r.eng.Name+" has no incremental update", true
			err = r.full(f2)
		}
		if err != nil {
			return nil, st, err
		}
	}
	st.Destinations = r.Destinations()
	if st.Mode == "full" {
		st.Rerouted = st.Destinations
	}
	if st.Mode != "repair" {
		st.Changed = ChangedEntries(prev, r.res.Tables)
	}
	st.Seconds = time.Since(start).Seconds()
	return r.res, st, nil
}

// sameCabling says why f2 is not f1 in another state of failures ("" if
// it is): the same switches, end ports, LIDs and links.
func sameCabling(f1, f2 *Fabric) string {
	g1, g2 := f1.G, f2.G
	if g1.NumNodes() != g2.NumNodes() || g1.NumLinks() != g2.NumLinks() || len(f1.switches) != len(f2.switches) || len(f1.terms) != len(f2.terms) || f1.maxLID != f2.maxLID {
		return "the cabling changed"
	}
	for l := range g1.NumLinks() {
		if g1.Link(l) != g2.Link(l) {
			return "the cabling changed"
		}
	}
	for i := range f1.swLID {
		if f1.swLID[i] != f2.swLID[i] {
			return "the LIDs changed"
		}
	}
	for i := range f1.terms {
		if f1.terms[i] != f2.terms[i] {
			return "the LIDs changed"
		}
	}
	return ""
}

// switchLinkChanges lists the switch-to-switch links whose state differs
// between f1 and f2 (same cabling).
func switchLinkChanges(f1, f2 *Fabric) []linkChange {
	g1, g2 := f1.G, f2.G
	var out []linkChange
	for l := range g2.NumLinks() {
		lk := g2.Link(l)
		a, b := f2.swIndex[lk.A], f2.swIndex[lk.B]
		if a < 0 || b < 0 {
			continue
		}
		if u := g2.Up(2 * l); u != g1.Up(2*l) {
			out = append(out, linkChange{a: int(a), b: int(b), pa: uint8(g2.SrcPort(2 * l)), pb: uint8(g2.DstPort(2 * l)), up: u})
		}
	}
	return out
}

// cloneFor copies t for fabric f (same LIDs and switches).
func (t *Tables) cloneFor(f *Fabric) *Tables {
	c := *t
	c.F = f
	c.lft = append([]uint8(nil), t.lft...)
	if t.lanes != nil {
		c.lanes = append([]uint8(nil), t.lanes...)
	}
	return &c
}

// ChangedEntries counts the LFT entries that differ between a and b
// (tables of the same LIDs and switches; all of b's otherwise).
func ChangedEntries(a, b *Tables) int64 {
	if len(a.lft) != len(b.lft) {
		return int64(len(b.lft))
	}
	var n int64
	const chunk = 4096
	for i := 0; i < len(a.lft); i += chunk {
		x, y := a.lft[i:min(i+chunk, len(a.lft))], b.lft[i:min(i+chunk, len(b.lft))]
		if bytes.Equal(x, y) {
			continue
		}
		for k := range x {
			if x[k] != y[k] {
				n++
			}
		}
	}
	return n
}

// Destinations counts the live LIDs of the current fabric (those routed).
func (r *Rerouter) Destinations() int { return len(liveLIDs(r.f)) }
