package fm

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// gatedRouting blocks every table computation until the gate opens or
// its context ends: a placement that takes as long as the test wants and
// stops when its caller gives up, as the real table build does.
type gatedRouting struct {
	Routing
	entered chan struct{}
	gate    chan struct{}
}

func (r *gatedRouting) Routes(ctx context.Context, active, transit []int) (*routing.TableJSON, client.TableStats, error) {
	select {
	case r.entered <- struct{}{}:
	default:
	}
	select {
	case <-r.gate:
	case <-ctx.Done():
		return nil, client.TableStats{}, ctx.Err()
	}
	return r.Routing.Routes(ctx, active, transit)
}

// TestNoStallDuringPlacement: while a placement computes (blocked here),
// reads answer and a failure report commits; the placement then sees
// the fabric changed and computes once more on the new one.
func TestNoStallDuringPlacement(t *testing.T) {
	// Which nodes this placement takes on an empty fabric (selection is
	// deterministic): failing one of them during the placement forces
	// the recomputation.
	ref, _ := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	rj, err := ref.Submit("t", client.JobRequest{Nodes: 8, Transit: 2})
	ref.Close()
	if err != nil {
		t.Fatal(err)
	}
	victim := rj.Active[0]
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	var gated sync.Once
	factory := func(g *topology.Graph) (Routing, error) {
		rt, err := AngaraRouting("angara*")(g)
		if err != nil {
			return nil, err
		}
		return &gatedRouting{Routing: rt, entered: entered, gate: gate}, nil
	}
	s, _, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:4x4x4", NewRouting: factory})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	var placed *client.JobRecord
	go func() {
		var err error
		placed, err = s.Submit("t", client.JobRequest{Nodes: 8, Transit: 2})
		done <- err
	}()
	<-entered // the placement is computing its table now
	if _, err := s.Jobs(false); err != nil {
		t.Fatal(err)
	}
	_ = s.Fabric()
	_ = s.LinkLoads()
	if _, err := s.Audit(0, 10); err != nil {
		t.Fatal(err)
	}
	// A failure report commits while the placement still waits (its own
	// re-check has no jobs to route, so it does not touch the gate).
	res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: victim})
	if err != nil || len(res.FailedNodes) != 1 {
		t.Fatalf("failure during placement: %+v %v", res, err)
	}
	select {
	case err := <-done:
		t.Fatalf("placement finished while blocked: %v", err)
	default:
	}
	gated.Do(func() { close(gate) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Placed again on the fabric with the failure: its table verifies
	// there and avoids the failed node.
	if ok, problem, _ := s.VerifyJob(placed.ID); !ok || slices.Contains(placed.Active, victim) || slices.Contains(placed.TransitNodes, victim) {
		t.Fatalf("job placed across a failure (%s): %v", problem, placed.Active)
	}
	checkDisjoint(t, s)
}

// TestReadsDuringPlacementRace runs reads, placements, releases and
// failure changes together (meant for -race): no node double-booked,
// every running job routed or broken with a reason.
func TestReadsDuringPlacementRace(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	defer s.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.Fabric()
				jobs, _ := s.Jobs(false)
				for _, j := range jobs {
					s.Job(j.ID)
					s.VerifyJob(j.ID)
				}
				s.LinkLoads()
			}
		}()
	}
	var pw sync.WaitGroup
	for w := 0; w < 3; w++ {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for i := 0; i < 6; i++ {
				j, err := s.Submit("t", client.JobRequest{Nodes: 3 + i%3, Transit: 2})
				if err != nil && !errors.Is(err, client.ErrConflict) {
					t.Error(err)
					return
				}
				if j != nil && i%2 == 0 {
					s.Release("t", j.ID)
				}
			}
		}()
	}
	for _, l := range []string{"1.1.1+X", "2.2.2+Y", "3.0.1+Z"} {
		if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: l}); err != nil {
			t.Error(err)
		}
	}
	pw.Wait()
	close(stop)
	wg.Wait()
	checkDisjoint(t, s)
	checkJobsRouted(t, s)
}
