package unicast

import (
	"fmt"
	"strings"
)

// Engine is one unicast routing engine, a value as OpenSM's osm_ucast_*
// modules are: its name, what it does and guarantees, what it can do
// (Caps), and the functions that route a whole fabric and bring the
// tables up to date after a change. Every engine is registered in
// Engines; Route, Rerouter, the CLI and the fabric manager find engines
// there and nowhere else.
type Engine struct {
	Name     string
	Summary  string // how it routes
	Deadlock string // what the engine guarantees about deadlock and why
	Caps     Caps
	// route computes the tables of the whole fabric f (o has its
	// defaults) and returns the state update needs (zero if none).
	route func(f *Fabric, o Options) (*Result, engineState, error)
	// update brings r's tables to f2, r's fabric in another state of
	// failures, and says how in st; nil: a full computation.
	update func(r *Rerouter, f2 *Fabric, st *UpdateStats) error
}

// Caps are what an engine can do and what it takes.
type Caps struct {
	// DeadlockFree: the tables are deadlock-free by construction, on one
	// lane or, for an engine with Lanes, when the lanes needed fit in
	// Options.Lanes.
	DeadlockFree bool `json:"deadlock_free"`
	// Lanes: paths are spread over virtual lanes (Options.Lanes) to break
	// dependency cycles; Result.LanesNeeded says how many were needed.
	// Without it every path is on lane 0.
	Lanes bool `json:"lanes"`
	// Balances: destinations are routed one after the other against the
	// load of the earlier ones, in both destination orders, and the
	// better is kept (Result.Order names it).
	Balances bool `json:"balances"`
	// Roots: the engine takes up*/down* roots (Options.Roots) and reports
	// those it used (Result.Roots).
	Roots bool `json:"roots"`
	// Fabrics the engine routes: "any", "fat trees" or "meshes and tori".
	Fabrics string `json:"fabrics"`
	// Update is what a Rerouter does after a change: "incremental" (only
	// what the change affects, equal to a full computation), "repair"
	// (only the routes that broke; valid, not equal) or "full".
	Update string `json:"update"`
}

// Engines is the registry of routing engines, in the order the CLI lists
// them (filled by init: the engines' functions look engines up here).
var Engines []Engine

func init() { Engines = engines() }

// engines returns the registered engines.
func engines() []Engine {
	return []Engine{
		{Name: "minhop",
			Summary:  "shortest paths; among the shortest ports of a switch the one carrying fewest end-node routes so far",
			Deadlock: "no guarantee: shortest paths on a ring or torus close channel-dependency cycles (the audit finds them)",
			Caps:     Caps{Balances: true, Fabrics: "any", Update: "full"},
			route:    routeMinHop},
		{Name: "updn",
			Summary:  "up*/down*: switches ranked by BFS distance from the roots (ties by GUID); a route never goes up after going down",
			Deadlock: "deadlock-free on one lane: up channels form an acyclic order, so no dependency cycle can close (Autonet)",
			Caps:     Caps{DeadlockFree: true, Balances: true, Roots: true, Fabrics: "any", Update: "full"},
			route:    routeUpDn},
		{Name: "ftree",
			Summary:  "fat-tree routing: destinations in tree order, each routed down from a top switch chosen by least-loaded up-ports, all other switches routed up towards it",
			Deadlock: "deadlock-free on one lane: every route goes up, then down (fat trees only)",
			Caps:     Caps{DeadlockFree: true, Fabrics: "fat trees", Update: "incremental"},
			route:    routeFTree,
			update:   (*Rerouter).updateFTree},
		{Name: "sssp",
			Summary:  "per-destination Dijkstra over switch links whose weights grow with the routes they already carry",
			Deadlock: "no guarantee: balanced paths may close dependency cycles",
			Caps:     Caps{Balances: true, Fabrics: "any", Update: "repair"},
			route:    func(f *Fabric, o Options) (*Result, engineState, error) { return routeSSSPKeep(f, o, false) },
			update:   func(r *Rerouter, f2 *Fabric, st *UpdateStats) error { return r.repairSSSP(f2, st, false) }},
		{Name: "dfsssp",
			Summary:  "sssp, then paths moved to further virtual lanes (weakest cycle edge first) until every lane's dependency graph is acyclic",
			Deadlock: "deadlock-free when the lanes needed fit in --lanes: each lane's CDG is acyclic (Dally–Seitz)",
			Caps:     Caps{DeadlockFree: true, Lanes: true, Balances: true, Fabrics: "any", Update: "repair"},
			route:    func(f *Fabric, o Options) (*Result, engineState, error) { return routeSSSPKeep(f, o, true) },
			update:   func(r *Rerouter, f2 *Fabric, st *UpdateStats) error { return r.repairSSSP(f2, st, true) }},
		{Name: "dor",
			Summary:  "dimension-order routing on a mesh or torus of switches (X, then Y, …; shorter way round on rings)",
			Deadlock: "mesh: deadlock-free on one lane (dimension order); torus: paths are layered onto lanes as in dfsssp, and when that needs as many lanes as the dateline rule, lane = one bit per ring whose wrap-around link the path crosses (2^rings lanes, provably acyclic)",
			Caps:     Caps{DeadlockFree: true, Lanes: true, Fabrics: "meshes and tori", Update: "full"},
			route:    routeDORLayered},
	}
}

// DefaultEngine is the engine the CLI routes with when none is named.
const DefaultEngine = "minhop"

// EngineNames returns the engine names.
func EngineNames() []string { return EngineNamesWith(func(Caps) bool { return true }) }

// EngineNamesWith returns the names of the engines whose capabilities
// satisfy keep, in the registry's order.
func EngineNamesWith(keep func(Caps) bool) []string {
	var out []string
	for _, e := range Engines {
		if keep(e.Caps) {
			out = append(out, e.Name)
		}
	}
	return out
}

// LookupEngine returns the engine registered under name, or an error
// naming the known ones.
func LookupEngine(name string) (*Engine, error) {
	for i := range Engines {
		if Engines[i].Name == name {
			return &Engines[i], nil
		}
	}
	return nil, fmt.Errorf("unknown engine %q (want %s)", name, strings.Join(EngineNames(), ", "))
}

// routeAll routes all of f with e (o has its defaults and names e).
func (e *Engine) routeAll(f *Fabric, o Options) (*Result, engineState, error) {
	if e.route == nil {
		return nil, engineState{}, fmt.Errorf("engine %s has no routing function (engines are made in package unicast)", e.Name)
	}
	res, st, err := e.route(f, o)
	if err != nil {
		return nil, engineState{}, err
	}
	res.Tables.Engine = e.Name
	return res, st, nil
}

// engineState is what an engine keeps between a Rerouter's updates.
type engineState struct {
	ft *ftreeRouter // ftree's
	sp *ssspState   // sssp's and dfsssp's weights and order
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// anyFabricEngines names the engines that route any fabric (for errors of
// those that do not).
func anyFabricEngines() string {
	return orList(EngineNamesWith(func(c Caps) bool { return c.Fabrics == "any" }))
}
