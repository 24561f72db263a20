package routing

// starVariant selects variants of the R_A* construction and of the fault
// experiment for the fidelity experiments (TestRAStarVariants,
// TestFaultReadings); the zero value is the construction the routers and
// `icn experiment faults` use.
type starVariant struct {
	// noReversal leaves the turns (u,d) → (u+d,−d) out of the R_DOR
	// CDG: a minimal route never reverses, so no table uses them (the
	// direction bits forbid them inside the dirbit part; only FS or LS
	// steps could take them, and then the route is not minimal).
	noReversal bool
	// byDirection offers the candidates direction pair by direction
	// pair (Di, then Dj in the order), all nodes for each, instead of
	// node by node.
	byDirection bool
	// static tests every candidate against the R_DOR CDG alone, ignoring
	// the dependencies accepted before it (each candidate on its own
	// closes no cycle, but together they may: not deadlock-free). Every
	// greedy construction on the R_DOR CDG accepts a subset of these.
	static bool
	// allCandidates offers every order-violating dependency, also those
	// no FS or LS step can use (Di negative, Dj positive), as "every
	// edge e ∉ E" of the seed's theorem reads.
	allCandidates bool
	// ruleA replaces R_A* by R_A in the fault experiment: every FS/LS
	// transition, accepted or not (the upper bound of any R_A*).
	ruleA bool
	// incremental keeps, as failures accumulate, the dependencies
	// accepted for the previous failure set (those still alive are
	// offered first) instead of rebuilding R_A* from scratch.
	incremental bool
	// baseDirbit compares with plain dirbit routing instead of R_A−
	// (FS/LS obeying the direction bits as well as the order).
	baseDirbit bool
	// interleaved uses the direction order +X,−X,+Y,−Y,… in the fault
	// experiment instead of the seed's +X,+Y,…,−X,−Y,….
	interleaved bool
	// bTest replaces the exact cycle test by the seed's sufficient test
	// Di ∉ B(uj,Dj), B(u,D) being the directions of every route through
	// channel (u,D): of its ancestors and descendants in the CDG built so
	// far ("dynamic", sound), or in the R_DOR CDG alone ("static", not
	// proven deadlock-free once several are accepted).
	bTest string
	// shuffle offers the candidates in a random order (seeded, fixed).
	shuffle uint64
	// minimalCDG builds the R_DOR CDG from routes that are minimal on the
	// fault-free torus only: no reversal turns, and straight dependencies
	// (u,d) → (u+d,d) only in rings of size ≥ 4 (a minimal route runs at
	// most ⌊size/2⌋ hops along a ring). Not deadlock-free for detours.
	minimalCDG bool
	// bisectStar counts the failures angara* survives by bisection
	// between its first loss and the last failure, as for angara−, as if
	// its reachability only shrank (it need not: R_A* is rebuilt for
	// every failure set).
	bisectStar bool
	// lastStar counts the largest number of failures after which angara*
	// still reaches every pair, whatever happened before.
	lastStar bool
}

// experimentOrder is the direction order of the fault experiment.
func (v starVariant) experimentOrder(n int) Order {
	if !v.interleaved {
		return DefaultOrder(n)
	}
	o := make(Order, 0, 2*n)
	for d := 0; d < n; d++ {
		o = append(o, Plus(d), Minus(d))
	}
	return o
}
