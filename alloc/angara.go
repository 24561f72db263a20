package alloc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// AngaraRouter is the Router of an Angara torus: reachability and verified
// routing tables under a routing rule (routing package).
type AngaraRouter struct {
	R *routing.Router

	ringOnce     sync.Once
	lower, upper Router // R_A− and R_A with the same order, for an R_A* router that accepted dependencies
}

var _ Router = (*AngaraRouter)(nil)

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

// Props implements Router. Answers are translation invariant on a torus
// without failed links or nodes when R_A* accepted no extra dependency or
// accepted the same ones at every translate (routing's
// ExtrasRingInvariant): then a route's legality depends only on its
// directions and on the set it stays in. Blocks share their answers only
// there too: with failed links anywhere on the torus, R_A* accepts
// dependencies that depend on all failures, and blocks of one size were
// found to reduce and route differently under angara* and angara
// (TestBlockSharingUnderFailures). Every rule allows the straight
// direction-ordered route inside a box.
func (a *AngaraRouter) Props() RouterProps {
	_, accepted := a.R.ExtraDependencies()
	g := a.R.Graph()
	sameExtras := accepted == 0 || a.R.ExtrasRingInvariant()
	invariant := sameExtras && faultFreeTorus(g)
	// Translations along the rings map a torus with mesh dimensions onto
	// itself, directions included, and the rules look only at directions
	// and at the accepted dependencies.
	ring := sameExtras && len(g.FailedLinks()) == 0 && len(g.FailedNodes()) == 0
	p := RouterProps{TranslationInvariant: invariant, BlocksLocal: invariant, BoxesReachable: true, RingInvariant: ring}
	if !ring && accepted > 0 && len(g.FailedLinks()) == 0 && len(g.FailedNodes()) == 0 {
		p.RingLower, p.RingUpper = a.ringBounds()
	}
	return p
}

// ringBounds returns R_A− and R_A with the router's direction order: R_A*
// is R_A− plus some of the order-breaking FS/LS transitions R_A allows,
// so a route legal under R_A− is legal under R_A*, and one legal under
// R_A* is legal under R_A; neither depends on the position (nil when they
// cannot be built).
func (a *AngaraRouter) ringBounds() (lower, upper Router) {
	a.ringOnce.Do(func() {
		rule := a.R.Rule()
		if rule.Kind != routing.AngaraStar {
			return
		}
		rule.Kind = routing.AngaraMinus
		lo, err := routing.NewRouter(a.R.Graph(), rule)
		if err != nil {
			return
		}
		rule.Kind = routing.Angara
		up, err := routing.NewRouter(a.R.Graph(), rule)
		if err != nil {
			return
		}
		a.lower, a.upper = &AngaraRouter{R: lo}, &AngaraRouter{R: up}
	})
	return a.lower, a.upper
}

// faultFreeTorus reports whether g is a torus (every dimension a ring)
// without failed links or nodes.
func faultFreeTorus(g *topology.Graph) bool {
	for _, w := range g.Wrap() {
		if !w {
			return false
		}
	}
	return len(g.FailedLinks()) == 0 && len(g.FailedNodes()) == 0
}

// Reachable implements Router.
func (a *AngaraRouter) Reachable(active, transit []int) (bool, error) {
	return a.R.Reachable(active, transit)
}

// ReachableWithHints implements Router with
// routing.Router.ReachableWithHints.
func (a *AngaraRouter) ReachableWithHints(active, transit []int, pairs [][2]int) (bool, [2]int, error) {
	return a.R.ReachableWithHints(active, transit, pairs)
}

// ReachableWithHintsUntil is ReachableWithHints that gives up with errCut
// when stop reports true (see reacherUntil).
func (a *AngaraRouter) ReachableWithHintsUntil(active, transit []int, pairs [][2]int, stop func() bool) (bool, [2]int, error) {
	ok, bad, err := a.R.ReachableWithHintsUntil(active, transit, pairs, stop)
	if errors.Is(err, routing.ErrStopped) {
		err = errCut
	}
	return ok, bad, err
}

// Table implements Router with routing.Router.Build: the table is built
// and, unless o.Unverified, verified (deadlock freedom included) by the
// routing package.
func (a *AngaraRouter) Table(ctx context.Context, active, transit []int, o routing.BuildOptions) (routing.Figures, *routing.Table, error) {
	tb, err := a.R.Build(ctx, active, transit, o)
	if err != nil {
		return routing.Figures{}, nil, err
	}
	if !o.Unverified {
		return tb.Figures, nil, nil
	}
	return tb.Figures, tb, nil
}

// VerifyUnverified implements Router with routing.Router.Verify.
func (a *AngaraRouter) VerifyUnverified(ctx context.Context, tb *routing.Table, workers int) error {
	if tb == nil {
		return nil
	}
	rep, err := a.R.Verify(ctx, tb, routing.VerifyOptions{Workers: workers})
	if err != nil {
		return err
	}
	if err := rep.Err(); err != nil {
		return fmt.Errorf("internal error: the %s table fails verification: %w", tb.Algo, err)
	}
	return nil
}
