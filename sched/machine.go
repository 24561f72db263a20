package sched

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

// Machine is what the simulator places jobs on: a torus with node
// selection (TorusMachine), a machine without network constraints
// (FlatMachine) or a switched fabric with tree-aware placement
// (TreeMachine). Node ids are 0..Size()-1.
type Machine interface {
	// Describe names the machine and its placement rule in one line.
	Describe() string
	// Size is the number of nodes (failed ones included).
	Size() int
	// FreeCount is the number of nodes neither busy nor failed.
	FreeCount() int
	// Available reports whether node v is neither busy nor failed.
	Available(v int) bool
	// Place chooses nodes for job j on the current occupancy without
	// taking them; nodes listed in avoid must not be used. ok is false
	// if there is no placement now.
	Place(j Job, avoid []int) (p Placement, ok bool, err error)
	// Occupy gives nodes to job id; Release takes them back.
	Occupy(id int, nodes []int) error
	Release(id int, nodes []int)
	// Clone returns an independent copy of the occupancy (sharing the
	// immutable network) for look-ahead.
	Clone() Machine
	// Coord returns the coordinates of node v (nil on machines without).
	Coord(v int) []int
	// NodeName names node v as the network does.
	NodeName(v int) string
	// Unplaceable says why job j cannot be placed on the empty machine.
	Unplaceable(j Job) string
}

// Placement is a chosen node set: the first Active of Nodes do the work,
// the rest are transit nodes.
type Placement struct {
	Nodes   []int
	Active  int
	Seconds float64 // time the choice took
	// Cut: the choice was cut by the decision budget (the best set found
	// in time, see alloc.Result.Cut).
	Cut bool
	// Settled: the choice stopped once no placement left could beat it
	// on criteria 1 and 2 (alloc.Result.Settled; it depends on the
	// machine's state alone, so simulations stay reproducible).
	Settled bool
}

// pseudoJob marks nodes held out of a look-ahead placement.
const pseudoJob = 1 << 30

// TorusMachine places jobs on a torus with seed 001's node selection.
type TorusMachine struct {
	St      *alloc.State
	Sel     *alloc.Selector
	Router  alloc.Router
	Algo    alloc.Algo
	Transit func(int) int // transit limit for a job of m nodes
	// Budget bounds each decision (alloc.Request.Budget; 0 = none).
	// A simulation is reproducible only while no decision is cut, which
	// its report counts (Report.DecisionsCut).
	Budget time.Duration
	// Observe, if set, sees every placement on the live state (not the
	// look-ahead ones).
	Observe func(st *alloc.State, req alloc.Request)
}

// NewTorusMachine wraps a machine state and router; transit may be nil (0).
func NewTorusMachine(st *alloc.State, rt alloc.Router, algo alloc.Algo, transit func(int) int, workers int) *TorusMachine {
	if transit == nil {
		transit = func(int) int { return 0 }
	}
	sel := alloc.NewSelector(st)
	sel.Workers = workers
	return &TorusMachine{St: st, Sel: sel, Router: rt, Algo: algo, Transit: transit}
}

func (m *TorusMachine) Describe() string {
	return fmt.Sprintf("%s, %s node selection", m.St.Graph().Name(), m.Algo)
}
func (m *TorusMachine) Size() int            { return m.St.N() }
func (m *TorusMachine) FreeCount() int       { return m.St.FreeCount() }
func (m *TorusMachine) Available(v int) bool { return m.St.Available(v) }
func (m *TorusMachine) Coord(v int) []int    { return m.St.Graph().Coord(v) }
func (m *TorusMachine) NodeName(v int) string {
	return m.St.Graph().NodeName(v)
}
func (m *TorusMachine) Occupy(id int, nodes []int) error { return m.St.Occupy(id, nodes) }
func (m *TorusMachine) Release(id int, nodes []int)      { m.St.ReleaseNodes(id, nodes) }

func (m *TorusMachine) Clone() Machine {
	c := *m
	c.St = m.St.Clone()
	c.Observe = nil
	return &c
}

func (m *TorusMachine) Unplaceable(j Job) string {
	return fmt.Sprintf("cannot be placed even on the empty machine by the %s algorithm (%d nodes, transit ≤ %d)", m.Algo, j.Nodes, m.Transit(j.Nodes))
}

// fitter is implemented by machines that can tell whether a job has a
// placement now more cheaply than by choosing one (Fits is ok exactly
// when Place without avoid would be).
type fitter interface {
	Fits(j Job) (ok bool, seconds float64, err error)
}

// Fits implements fitter: node selection stops at the first reachable set.
// It has no budget: the simulation asks it whether a job can ever run
// (on the empty machine) and where an EASY reservation can start, facts
// a cut answer would get wrong.
func (m *TorusMachine) Fits(j Job) (bool, float64, error) {
	req := alloc.Request{Nodes: j.Nodes, Transit: m.Transit(j.Nodes), Algo: m.Algo, Fast: true, Exists: true}
	res, err := m.Sel.Select(m.St, m.Router, req)
	if err != nil {
		return false, 0, err
	}
	return res.Found > 0, res.Seconds, nil
}

// PlaceExhaustive is Place without the budget (see exhaustivePlacer).
func (m *TorusMachine) PlaceExhaustive(j Job, avoid []int) (Placement, bool, error) {
	c := *m
	c.Budget = 0
	return c.Place(j, avoid)
}

// exhaustivePlacer is implemented by machines whose Place has a budget:
// PlaceExhaustive decides without it.
type exhaustivePlacer interface {
	PlaceExhaustive(j Job, avoid []int) (Placement, bool, error)
}

func (m *TorusMachine) Place(j Job, avoid []int) (Placement, bool, error) {
	st := m.St
	if len(avoid) > 0 {
		st = st.Clone()
		var hold []int
		for _, v := range avoid {
			if st.Available(v) {
				hold = append(hold, v)
			}
		}
		if err := st.Occupy(pseudoJob, hold); err != nil {
			return Placement{}, false, err
		}
	}
	req := alloc.Request{Nodes: j.Nodes, Transit: m.Transit(j.Nodes), Algo: m.Algo, Fast: true, NoTable: true, Budget: m.Budget}
	if m.Observe != nil && len(avoid) == 0 {
		m.Observe(st, req)
	}
	res, err := m.Sel.Select(st, m.Router, req)
	if err != nil {
		return Placement{}, false, err
	}
	p := Placement{Seconds: res.Seconds, Cut: res.Cut != "", Settled: res.Settled}
	if res.Chosen == nil {
		return p, false, nil
	}
	p.Nodes = append(append([]int(nil), res.Chosen.Active...), res.Chosen.Transit...)
	p.Active = len(res.Chosen.Active)
	return p, true, nil
}

// MachineOptions say how NewMachine places jobs on a torus or mesh; a
// switched fabric takes none of them.
type MachineOptions struct {
	// Algo is the node-selection algorithm (alloc.Improved or
	// alloc.Baseline).
	Algo alloc.Algo
	// Rules is the routing rule the chosen sets must be reachable under
	// (alloc.NewAngaraRouter: dor, dirbit, angara-, angara, angara*).
	Rules string
	// TransitFrac sets the transit limit TransitLimit(TransitFrac, m) of
	// a job of m nodes (0: no transit node).
	TransitFrac float64
	// Budget bounds each decision (TorusMachine.Budget; 0: none).
	Budget time.Duration
}

// NewMachine builds the machine jobs are placed on in network g: on a
// torus or mesh, node selection chooses a reachable set for each job
// (TorusMachine, as o says); on a switched fabric, jobs are placed as
// Slurm's topology/tree plugin places them (TreeMachine). Any other
// network is refused: a machine without network constraints is flat:N
// (ParseFlat, NewFlatMachine).
func NewMachine(g *topology.Graph, o MachineOptions) (Machine, error) {
	if g.HasCoords() && g.Direct() {
		a, err := alloc.ParseAlgo(string(o.Algo))
		if err != nil {
			return nil, err
		}
		st, err := alloc.NewState(g)
		if err != nil {
			return nil, err
		}
		rt, err := alloc.NewAngaraRouter(g, o.Rules)
		if err != nil {
			return nil, err
		}
		frac := o.TransitFrac
		tm := NewTorusMachine(st, rt, a, func(m int) int { return TransitLimit(frac, m) }, 0)
		tm.Budget = o.Budget
		return tm, nil
	}
	if g.Count(topology.Switch) == 0 {
		return nil, fmt.Errorf("%s is neither a torus or mesh nor a switched fabric (use flat:N for a machine without network constraints)", g.Name())
	}
	m, err := NewTreeMachine(g)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ParseFlat reads the spec of a machine without network constraints,
// "flat:N" with N its number of nodes (NewFlatMachine checks N). flat
// is false when spec is not a flat:… spec (it names a network).
func ParseFlat(spec string) (n int, flat bool, err error) {
	arg, flat := strings.CutPrefix(spec, "flat:")
	if !flat {
		return 0, false, nil
	}
	if n, err = strconv.Atoi(arg); err != nil {
		return 0, true, fmt.Errorf("flat:%s: want flat:N with N the number of nodes", arg)
	}
	return n, true, nil
}
