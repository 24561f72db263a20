package alloc

import (
	"context"

	"github.com/icn-hpc/icn/routing"
)

// Router answers the routing questions node selection asks about a set
// M_{a,t} = active ∪ transit on the state's network (with its failures).
// AngaraRouter implements it with the routing package (Angara rules).
//
// An answer depends only on the router, the network with its failures
// and the node lists asked about, never on which other nodes are busy:
// a Selector keeps answers between decisions while the router, the
// graph and its failures stay the same. A decision calls the methods
// from several goroutines at once.
type Router interface {
	// Props states what the router guarantees about its answers; Select
	// takes a shortcut only where the guarantee it needs holds. It is
	// the same for the router's whole life.
	Props() RouterProps
	// Reachable reports whether every ordered pair of active nodes has a
	// legal route whose nodes all lie in active ∪ transit.
	Reachable(active, transit []int) (bool, error)
	// ReachableWithHints gives Reachable's answer, trying the ordered
	// pairs of active nodes in pairs first: the set is not reachable as
	// soon as one pair has no route inside it, which is cheaper to decide
	// than the whole set. When the set is not reachable, bad names a pair
	// without a route, or is {-1, -1}. The hints only order the work: a
	// router without a cheaper path answers with Reachable.
	ReachableWithHints(active, transit []int, pairs [][2]int) (ok bool, bad [2]int, err error)
	// Table builds the routing table of a reachable set as o says and
	// returns its figures; it stops with ctx's error when ctx ends. A
	// Router reads o.Algo, o.Workers (the figures do not depend on it)
	// and o.Unverified, and may ignore the rest. The table is verified,
	// deadlock freedom included, unless o.Unverified: then the figures
	// are those the verified table has, and the table comes back for
	// VerifyUnverified (nil when building it verified it already, and
	// always nil without o.Unverified). Select ranks its tie-break
	// tables unverified and verifies only the winner's.
	Table(ctx context.Context, active, transit []int, o routing.BuildOptions) (routing.Figures, *routing.Table, error)
	// VerifyUnverified verifies a table that Table left unverified, as
	// Table would have (nil: nothing to verify), on at most workers
	// goroutines (0: all cores); it stops with ctx's error when ctx
	// ends.
	VerifyUnverified(ctx context.Context, tb *routing.Table, workers int) error
}

// reacherUntil is a Router whose reachability check of a large set can be
// stopped between batches of sources (AngaraRouter); the uniform path
// asks through it, when the router has it, so that a question does not
// outlast the budget.
type reacherUntil interface {
	ReachableWithHintsUntil(active, transit []int, pairs [][2]int, stop func() bool) (bool, [2]int, error)
}

// reachableUntil asks rt about a set with hints, stopping with errCut when
// stop reports true if rt can stop.
func reachableUntil(rt Router, active, transit []int, pairs [][2]int, stop func() bool) (bool, [2]int, error) {
	if r, ok := rt.(reacherUntil); ok {
		return r.ReachableWithHintsUntil(active, transit, pairs, stop)
	}
	return rt.ReachableWithHints(active, transit, pairs)
}

// RouterProps are the guarantees a Router gives about its answers. The
// zero value promises nothing, and Select then asks about every set.
type RouterProps struct {
	// TranslationInvariant: the answers for a set, reachability and the
	// table's figures, depend only on the set up to a translation of the
	// torus, so placements of one size with the same pattern of
	// unavailable nodes share them, within a decision and across
	// decisions.
	TranslationInvariant bool
	// BlocksLocal: the answers for a block (a rectangle of available
	// nodes without a failed link inside) depend only on its size, so
	// blocks of one size share their reduction and table figures.
	BlocksLocal bool
	// BoxesReachable: a set is reachable when the smallest box (cyclic
	// intervals on rings) holding its active nodes lies inside it and no
	// node of the box has a failed link (see boxCovers).
	BoxesReachable bool
	// RingInvariant: without unavailable nodes the answers for a set
	// depend only on the set up to a translation along the ring
	// dimensions (a torus with mesh dimensions and no failure), so on an
	// empty machine placements that differ only along rings are decided
	// once (the uniform path).
	RingInvariant bool
	// RingLower, when not nil, is a router that is RingInvariant on this
	// machine and whose legal routes are all legal here too, so a set it
	// reaches this router reaches as well, at every translate (R_A− below
	// R_A* on a torus with mesh dimensions). The uniform path asks it
	// about the sets that could beat the best φ where this router's own
	// answers are not invariant along the rings.
	RingLower Router
	// RingUpper, when not nil, is a router that is RingInvariant on this
	// machine and under which every route legal here is legal too, so a
	// set it does not reach this router reaches at no translate (R_A
	// above R_A*).
	RingUpper Router
}
