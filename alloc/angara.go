package alloc

import (
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
func (a *AngaraRouter) Table(active, transit []int, algo string) (TableFigures, error) {
	st, err := a.R.Figures(active, transit, algo)
	if err != nil {
		return TableFigures{}, err
	}
	return TableFigures{Diameter: st.Diameter, PiMax: float64(st.PiMax), PiPerfect: st.PiPerfect, BalanceFactor: st.BalanceFactor}, nil
}
