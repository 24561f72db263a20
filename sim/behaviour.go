package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// This file is the simulator's one table of routings and one table of
// traffic patterns (BookSim's routing-function and traffic maps, with
// the properties icn needs beside them). NewNetwork resolves
// Config.Routing and Config.Traffic here once; the network keeps the
// entries (Network.algo, Network.traffic) and everything else asks them
// for behaviour and properties, never for a name. Adding a routing is a
// row here plus its functions; the hot paths call the resolved function
// values, with no lookup per flit.

// routingAlgo is one routing of the simulator: how NewNetwork prepares it,
// how many VC classes it uses, when it is deadlock-free, and what the
// core calls for a new packet and for a head flit at a router.
type routingAlgo struct {
	name string
	doc  string // one line for the CLI's help
	// coords: the routing follows torus/mesh/hypercube coordinates, so
	// the network must have them (buildCoords) and its rings get dateline
	// or bubble flow control; others refuse bubble flow control.
	coords bool
	// adaptive: a head may have several options and takes the one with
	// the most free credits; a non-adaptive (oblivious) routing gives one
	// option per head that does not change while it waits, and the core
	// caches it.
	adaptive bool
	// duato: a coordinate routing with adaptive VCs above its
	// dimension-order escape VCs (Duato's protocol), whose escape hop takes
	// the shorter way round a ring.
	duato bool
	// dirOrder: escape hops in direction order +X,+Y,…,−X,−Y,… (direction
	// bits) rather than dimension order.
	dirOrder bool
	// table: routes come from a routing table file (Config.Table), which
	// every other routing refuses.
	table bool
	// knownHops: the route between two terminals has a known hop count
	// (Network.hopFunc), so ZeroLoad has a closed form; false for
	// routings that detour through random intermediate groups.
	knownHops bool
	// build prepares the routing once the ports (and, with coords, the
	// coordinates and ring flow control) are set.
	build func(n *Network) error
	// classes is the number of VC classes, the VCs being split among them
	// (nil: one); called after build.
	classes func(n *Network) int
	// deadlock says why the configuration is not known to be
	// deadlock-free (too few VCs, a dependency cycle), or nil; nil
	// function: always deadlock-free.
	deadlock func(n *Network) error
	// source returns the routing state of a new packet from terminal ti
	// (node tm.node) to node dst, chosen at its source: direction bits,
	// and a table route or intermediate group (-1 if none); nil: none.
	// (Values, not the head, so that the head stays on headFlit's stack.)
	source func(n *Network, tm *terminal, ti int, dst int32) (dirs uint8, route int32)
	// route appends the options of head f at router r, which is not its
	// destination.
	route func(c *Core, w *worker, cs []cand, r int, f *flit) []cand
}

// routings is the registry of routings, in the order the CLI documents
// them.
var routings = []*routingAlgo{
	{name: RouteDOR, doc: "dimension order X, Y, Z, … (torus, mesh, hypercube)",
		coords: true, knownHops: true,
		build: refuseFaults, deadlock: deadlockDimOrder, source: sourceDirBits, route: routeCoord},
	{name: RouteDirbit, doc: "direction order +X,+Y,…,−X,−Y,… (Angara / Blue Gene direction bits)",
		coords: true, dirOrder: true, knownHops: true,
		build: refuseFaults, deadlock: deadlockDimOrder, source: sourceDirBits, route: routeCoord},
	{name: RouteAdaptive, doc: "minimal adaptive with a dimension-order escape (Duato)",
		coords: true, adaptive: true, duato: true, knownHops: true,
		build: refuseFaults, deadlock: deadlockDuato, source: sourceDirBits, route: routeCoord},
	{name: RouteTable, doc: "source routes from a routing table file (--table; direct tori)",
		coords: true, table: true, knownHops: true,
		build: (*Network).bindTable, deadlock: (*Network).checkTable, source: sourceTable, route: routeTable},
	{name: RouteMinhop, doc: "minimal adaptive over min-hop ports (any network)",
		adaptive: true, knownHops: true,
		build: buildMinhop, classes: minhopClasses, deadlock: deadlockMinhop, route: routeMinhop},
	{name: RouteUpDown, doc: "up*/down* from a BFS tree (any network)",
		adaptive: true, knownHops: true,
		build: buildUpDown, route: routeUpDown},
	{name: RouteValiant, doc: "dragonfly: minimal to a random intermediate group, then minimal",
		adaptive: true, knownHops: false,
		build: buildDragonfly, classes: dragonflyClasses, deadlock: deadlockDragonfly, source: sourceValiant, route: routeValiant},
	{name: RouteUGAL, doc: "dragonfly: UGAL-L, minimal or Valiant per packet at the source switch",
		adaptive: true, knownHops: false,
		build: buildDragonfly, classes: dragonflyClasses, deadlock: deadlockDragonfly, source: sourceValiant, route: routeUGAL},
}

// Routings lists the routing names in the order the CLI documents them.
var Routings = routingNames()

func routingNames() []string {
	out := make([]string, len(routings))
	for i, a := range routings {
		out[i] = a.name
	}
	return out
}

// routingByName returns the registered routing of that name, or an error
// listing the names.
func routingByName(name string) (*routingAlgo, error) {
	for _, a := range routings {
		if a.name == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("unknown routing %q (want %s)", name, strings.Join(Routings, ", "))
}

// trafficPattern is one traffic pattern: where a packet goes, and what
// the rest of the simulator needs to know about that.
type trafficPattern struct {
	name string
	doc  string // one line for the CLI's help
	// bookSim is BookSim2's name of the pattern ("" if BookSim has none).
	bookSim string
	// replay: the messages come from Config.Trace, so the pattern has no
	// injection rate and no synthetic destinations.
	replay bool
	// uniform: every packet goes to a uniformly random other terminal,
	// the traffic IdealThroughput's channel-load bounds are for.
	uniform bool
	// pattern builds the destination distribution over the terminals
	// (subset: the terminals are only some nodes, a routing table's
	// active ones).
	pattern func(cfg *Config, terms []int32, g *topology.Graph, subset bool) (*pattern, error)
}

// traffics is the registry of traffic patterns, in the order the CLI
// documents them.
var traffics = []*trafficPattern{
	{name: "uniform", doc: "uniform over the other terminals", bookSim: "uniform", uniform: true, pattern: uniformPattern},
	{name: "transpose", doc: "swap the two halves of the address bits", bookSim: "transpose", pattern: permutation(bitPermutation(transposeBits))},
	{name: "bitcomp", doc: "complement the address bits", bookSim: "bitcomp", pattern: permutation(bitPermutation(complementBits))},
	{name: "bitrev", doc: "reverse the address bits", bookSim: "bitrev", pattern: permutation(bitPermutation(reverseBits))},
	{name: "shuffle", doc: "rotate the address bits left by one", bookSim: "shuffle", pattern: permutation(bitPermutation(shuffleBits))},
	{name: "tornado", doc: "⌈k/2⌉−1 further in every dimension", bookSim: "tornado", pattern: permutation(shiftPermutation(tornadoShift))},
	{name: "neighbor", doc: "+1 in every dimension", bookSim: "neighbor", pattern: permutation(shiftPermutation(neighborShift))},
	{name: "hotspot", doc: "--hotspot-frac of the packets to the --hotspot nodes, the rest uniform", pattern: hotspotPattern},
	{name: "randperm", doc: "a random permutation with one cycle (seeded)", bookSim: "randperm", pattern: permutation(randomPermutation)},
	{name: "trace", doc: "messages replayed from --trace FILE", replay: true, pattern: tracePattern},
}

// TrafficPatterns lists the traffic names in the order the CLI documents
// them (the synthetic patterns, then "trace").
var TrafficPatterns = trafficNames()

func trafficNames() []string {
	out := make([]string, len(traffics))
	for i, t := range traffics {
		out[i] = t.name
	}
	return out
}

// trafficByName returns the registered traffic pattern of that name, or
// nil.
func trafficByName(name string) *trafficPattern {
	for _, t := range traffics {
		if t.name == name {
			return t
		}
	}
	return nil
}

// unknownTraffic is the error for a traffic name not in the registry.
func unknownTraffic(name string) error {
	return fmt.Errorf("unknown traffic %q (want %s)", name, strings.Join(TrafficPatterns, ", "))
}

// trafficOfBookSim returns icn's name of BookSim2's traffic pattern tr,
// or "" if icn does not model it.
func trafficOfBookSim(tr string) string {
	for _, t := range traffics {
		if t.bookSim != "" && t.bookSim == tr {
			return t.name
		}
	}
	return ""
}

// UsesTrace reports whether the traffic pattern of that name replays a
// trace (Config.Trace) rather than generating packets at a rate.
func UsesTrace(traffic string) bool {
	t := trafficByName(traffic)
	return t != nil && t.replay
}

// Choice is one registered routing or traffic pattern: its name and a
// one-line description.
type Choice struct{ Name, Doc string }

// RoutingChoices lists the routings (Config.Routing) with their
// descriptions, in the order of Routings.
func RoutingChoices() []Choice {
	out := make([]Choice, len(routings))
	for i, a := range routings {
		out[i] = Choice{a.name, a.doc}
	}
	return out
}

// TrafficChoices lists the traffic patterns (Config.Traffic) with their
// descriptions, in the order of TrafficPatterns.
func TrafficChoices() []Choice {
	out := make([]Choice, len(traffics))
	for i, t := range traffics {
		out[i] = Choice{t.name, t.doc}
	}
	return out
}

// pattern is a traffic pattern resolved over a network's terminals: a
// fixed destination per source (perm, the permutations), or else a share
// hotFrac of the packets to random terminals of hot and the rest to a
// uniformly random other terminal. dest draws from it per packet.
type pattern struct {
	perm    []int32 // fixed destination per source (permutations), nil if none
	hot     []int32 // hotspot terminals, nil if none
	hotFrac float64
	n       int
}

// dest draws the destination of a packet from source s.
func (p *pattern) dest(s int, rng *rand.Rand) int {
	if p.perm != nil {
		return int(p.perm[s])
	}
	if p.hot != nil && rng.Float64() < p.hotFrac {
		return int(p.hot[rng.IntN(len(p.hot))])
	}
	if p.n == 1 {
		return s
	}
	d := rng.IntN(p.n - 1)
	if d >= s {
		d++
	}
	return d
}
