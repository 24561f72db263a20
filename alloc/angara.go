package alloc

import (
	"context"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// AngaraRouter is the Router of an Angara torus: reachability and verified
// routing tables under a routing rule (routing package).
type AngaraRouter struct {
	R *routing.Router
}

// NewAngaraRouter prepares routing on g under the named rule (dor,
// dirbit, angara-, angara, angara*).
func NewAngaraRouter(g *topology.Graph, rule string) (*AngaraRouter, error) {
	r, err := routing.ParseRule(rule)
	if err != nil {
		return nil, err
	}
	rt, err := routing.NewRouter(g, r)
	if err != nil {
		return nil, err
	}
	return &AngaraRouter{R: rt}, nil
}

// Reachable implements Router.
func (a *AngaraRouter) Reachable(active, transit []int) (bool, error) {
	return a.R.Reachable(active, transit)
}

// Table implements Router: the table is built and verified (deadlock
// freedom included) by the routing package.
func (a *AngaraRouter) Table(active, transit []int, algo string) (routing.Stats, error) {
	return a.TableContext(context.Background(), active, transit, algo)
}

// UnverifiedTable builds a table without verifying it and returns its
// figures and the table; VerifyTable verifies it later. Select builds its
// tie-break tables this way and verifies only the chosen one.
func (a *AngaraRouter) UnverifiedTable(active, transit []int, algo string) (routing.Stats, any, error) {
	return a.UnverifiedTableContext(context.Background(), active, transit, algo)
}

// VerifyTable verifies a table from UnverifiedTable.
func (a *AngaraRouter) VerifyTable(tb any) error {
	return a.VerifyTableContext(context.Background(), tb)
}

// unverifiedTables is implemented by routers that can build a table
// without verifying it and verify it later.
type unverifiedTables interface {
	UnverifiedTable(active, transit []int, algo string) (routing.Stats, any, error)
	VerifyTable(tb any) error
}

// TranslationInvariant reports whether the router's answers for a set
// depend only on the set up to a translation of the torus: true on a
// torus without failed links or nodes when R_A* accepted no extra
// dependency (then a route's legality depends only on its directions and
// on the set it stays in).
func (a *AngaraRouter) TranslationInvariant() bool {
	_, accepted := a.R.ExtraDependencies()
	return accepted == 0 && faultFreeTorus(a.R.Graph())
}

// TranslationInvariant implements the same promise as AngaraRouter's: on
// a torus without failures, connectivity inside a set is invariant under
// translation.
func (r GraphRouter) TranslationInvariant() bool { return faultFreeTorus(r.G) }

// translationInvariant is implemented by routers that may declare their
// answers invariant under translation of the set.
type translationInvariant interface{ TranslationInvariant() bool }

func faultFreeTorus(g *topology.Graph) bool {
	for _, w := range g.Wrap() {
		if !w {
			return false
		}
	}
	return len(g.FailedLinks()) == 0 && len(g.FailedNodes()) == 0
}

// BlocksLocal reports whether the router's answers for a block (a
// rectangle of available nodes without a failed link inside) depend only
// on the block's size. With failed links anywhere on the torus they may
// not: R_A* accepts dependencies that depend on all failures, and blocks
// of one size were found to reduce and route differently under angara*
// and angara (TestBlockSharingUnderFailures), so this holds only where
// the router is translation invariant (a fault-free torus).
func (a *AngaraRouter) BlocksLocal() bool { return a.TranslationInvariant() }

// BlocksLocal implements the same promise as AngaraRouter's: connectivity
// inside a set depends only on the set's links.
func (r GraphRouter) BlocksLocal() bool { return true }

// blocksLocal is implemented by routers that may declare that blocks of
// one size share their answers.
type blocksLocal interface{ BlocksLocal() bool }

// TableContext is Table stopped when ctx ends (with ctx's error).
func (a *AngaraRouter) TableContext(ctx context.Context, active, transit []int, algo string) (routing.Stats, error) {
	al, err := routing.ParseAlgo(algo)
	if err != nil {
		return routing.Stats{}, err
	}
	tb, err := a.R.BuildTableOpts(active, transit, al, routing.TableOptions{Context: ctx})
	if err != nil {
		return routing.Stats{}, err
	}
	return tb.Stats, nil
}

// UnverifiedTableContext is UnverifiedTable stopped when ctx ends.
func (a *AngaraRouter) UnverifiedTableContext(ctx context.Context, active, transit []int, algo string) (routing.Stats, any, error) {
	al, err := routing.ParseAlgo(algo)
	if err != nil {
		return routing.Stats{}, nil, err
	}
	tb, err := a.R.BuildUnverifiedContext(ctx, active, transit, al)
	if err != nil {
		return routing.Stats{}, nil, err
	}
	return tb.Stats, tb, nil
}

// VerifyTableContext is VerifyTable stopped when ctx ends.
func (a *AngaraRouter) VerifyTableContext(ctx context.Context, tb any) error {
	return a.R.VerifyContext(ctx, tb.(*routing.Table))
}
