package fm

import (
	"context"
	"runtime"

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
	tb, err := a.R.Build(ctx, active, transit, routing.BuildOptions{Workers: computeWorkers()})
	if err != nil {
		return nil, client.TableStats{}, err
	}
	tf, err := tb.JSON(ctx)
	if err != nil {
		return nil, client.TableStats{}, err
	}
	return tf, client.TableStats{Figures: tb.Figures, DeadlockFree: tb.DeadlockFree}, nil
}

// RoutesEncoded is Routes made as the service keeps a job's table: the
// table's header and its routes encoded for the store, straight from the
// routing table (tableEncoded).
func (a *angaraRouting) RoutesEncoded(ctx context.Context, active, transit []int) (*routing.TableJSON, []byte, client.TableStats, []int32, error) {
	tb, err := a.R.Build(ctx, active, transit, routing.BuildOptions{Workers: computeWorkers()})
	if err != nil {
		return nil, nil, client.TableStats{}, nil, err
	}
	tf, routes, err := tableEncoded(ctx, tb)
	if err != nil {
		return nil, nil, client.TableStats{}, nil, err
	}
	return tf, routes, client.TableStats{Figures: tb.Figures, DeadlockFree: tb.DeadlockFree}, tb.Loads(), nil
}

// encodedRouting is a Routing that makes a job's table as the service
// keeps it (angaraRouting.RoutesEncoded), with the routes the table puts
// on each channel (topology channel ids).
type encodedRouting interface {
	RoutesEncoded(ctx context.Context, active, transit []int) (*routing.TableJSON, []byte, client.TableStats, []int32, error)
}

// newTable builds the verified table of a set of active and transit
// nodes with r: the table, without its routes when r makes it as the
// service keeps it (encodedRouting), its routes encoded for the store (a
// 16 384-node job's 268 million routes take 1.8 GB so, 19 GB in the
// file format), and what it puts on the links, from the loads the build
// counted (nil where r gives none: they are then counted from the
// routes; a 4 888-node job's 24 million routes take about a second so).
func newTable(ctx context.Context, r Routing, active, transit []int) (*routing.TableJSON, []byte, client.TableStats, *jobLinks, error) {
	if er, ok := r.(encodedRouting); ok {
		tf, routes, stats, load, err := er.RoutesEncoded(ctx, active, transit)
		if err != nil {
			return nil, nil, stats, nil, err
		}
		return tf, routes, stats, linksOfChannelLoads(tf, load), nil
	}
	tf, stats, err := r.Routes(ctx, active, transit)
	if err != nil {
		return nil, nil, stats, nil, err
	}
	routes, err := routing.EncodeStoredRoutes(tf)
	if err != nil {
		return nil, nil, stats, nil, err
	}
	return tf, routes, stats, nil, nil
}

// linksOfChannelLoads is what table tb puts on the links, from the
// routes it puts on each channel (load, by topology channel id: link l's
// channel 2l goes from its end A to its end B).
func linksOfChannelLoads(tb *routing.TableJSON, load []int32) *jobLinks {
	links := len(load) / 2
	e := &jobLinks{tb: tb, set: make([]uint64, (links+63)/64)}
	for l := range links {
		if n := load[2*l] + load[2*l+1]; n > 0 {
			e.set[l>>6] |= 1 << (l & 63)
			e.links = append(e.links, int32(l))
			e.routes = append(e.routes, n)
			e.ab = append(e.ab, load[2*l])
		}
	}
	return e
}

// storedVerifier is a Routing that verifies a table kept encoded without
// decoding its routes (a 10 000-node job's 100 million routes take 7 GB
// decoded).
type storedVerifier interface {
	VerifyStored(tf *routing.TableJSON, routes []byte) error
}

// verifyEncoded verifies with r a table whose routes may be kept encoded
// (routes, when tf has none: read in their stored form where r can,
// else decoded for the check).
func verifyEncoded(r Routing, tf *routing.TableJSON, routes []byte) error {
	if tf.Routes == nil && routes != nil {
		if sv, ok := r.(storedVerifier); ok {
			return sv.VerifyStored(tf, routes)
		}
		c := *tf
		if err := routing.DecodeStoredRoutes(routes, &c); err != nil {
			return err
		}
		tf = &c
	}
	return r.VerifyTable(tf)
}

func (a *angaraRouting) ReachableFirst(active, transit []int) (bool, [2]int, error) {
	return a.R.ReachableFirst(active, transit)
}

func (a *angaraRouting) MissingFrom(active, transit, sources []int) ([]int, [2]int, error) {
	return a.R.MissingFrom(active, transit, sources)
}

func (a *angaraRouting) ReachableFrom(active, transit, sources []int) (bool, [2]int, error) {
	return a.R.ReachableFrom(active, transit, sources)
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
	return a.verify(&c)
}

// VerifyStored is VerifyTable for a table whose routes are kept in the
// stored form (routing.StoredTable), read without decoding them.
func (a *angaraRouting) VerifyStored(tf *routing.TableJSON, routes []byte) error {
	c := *tf
	c.FailedLinks, c.FailedNodes = nil, nil
	return a.verify(routing.StoredTable{Header: &c, Routes: routes})
}

func (a *angaraRouting) verify(t routing.Verifiable) error {
	rep, err := a.R.Verify(context.Background(), t, routing.VerifyOptions{})
	if err != nil {
		return err
	}
	return rep.Err()
}
