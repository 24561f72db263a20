package fm

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// AngaraRouting returns the routing factory of an Angara torus under the
// named rule (angara* by default in the service).
func AngaraRouting(rule string) RoutingFactory {
	return func(g *topology.Graph) (Routing, error) {
		ar, err := alloc.NewAngaraRouter(g, rule)
		if err != nil {
			return nil, err
		}
		return &angaraRouting{AngaraRouter: ar}, nil
	}
}

// computeWorkers is how many cores a placement or a re-routing uses: all
// but one, which stays free for requests (on one core, that one).
func computeWorkers() int { return max(1, runtime.GOMAXPROCS(0)-1) }

type angaraRouting struct {
	*alloc.AngaraRouter
}

func (a *angaraRouting) Rules() string { return a.R.Rule().String() }

func (a *angaraRouting) Routes(ctx context.Context, active, transit []int) (*routing.TableJSON, client.TableStats, error) {
	tb, err := a.R.BuildTableOpts(active, transit, routing.BFS, routing.TableOptions{Context: ctx, Workers: computeWorkers()})
	if err != nil {
		return nil, client.TableStats{}, err
	}
	tf, err := tableJSONContext(ctx, tb)
	if err != nil {
		return nil, client.TableStats{}, err
	}
	return tf, client.TableStats{Stats: tb.Stats, DeadlockFree: tb.DeadlockFree}, nil
}

func (a *angaraRouting) ReachableFirst(active, transit []int) (bool, [2]int, error) {
	return a.R.ReachableFirst(active, transit)
}

func (a *angaraRouting) LegalPath(src, dst int, set, extra []int) ([]int, error) {
	return a.R.LegalPath(src, dst, set, extra)
}

func (a *angaraRouting) ExtraTurns(c int) uint16 {
	var turns uint16
	for d := range 2 * len(a.R.Dims()) {
		if a.R.ExtraAllowed(c, routing.Dir(d)) {
			turns |= 1 << d
		}
	}
	return turns
}

func (a *angaraRouting) VerifyTable(tf *routing.TableJSON) error {
	c := *tf
	// The failures recorded with the table are those of its creation; the
	// router knows the current ones.
	c.FailedLinks, c.FailedNodes = nil, nil
	rep, err := a.R.VerifyJSON(&c)
	if err != nil {
		return err
	}
	if len(rep.Violations) > 0 {
		var msgs []string
		for i, v := range rep.Violations {
			if i == 3 {
				msgs = append(msgs, fmt.Sprintf("and %d more", len(rep.Violations)-3))
				break
			}
			msgs = append(msgs, v.String())
		}
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}
