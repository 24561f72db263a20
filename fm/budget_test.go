package fm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/topology"
)

func openHeld(t *testing.T, budget time.Duration) (*Service, *gatedRouting, string) {
	t.Helper()
	held := &gatedRouting{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	factory := func(g *topology.Graph) (Routing, error) {
		rt, err := AngaraRouting("angara*")(g)
		held.Routing = rt
		return held, err
	}
	s, tok, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:4x4x4", NewRouting: factory, PlacementBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, held, tok
}

// TestPlacementCancelledCommitsNothing: a client that gives up while its
// job is being placed gets nothing committed, and the placement slot is
// free at once for the next request.
func TestPlacementCancelledCommitsNothing(t *testing.T) {
	s, held, _ := openHeld(t, -1) // no budget: only the client ends it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 8, Transit: 2})
		done <- err
	}()
	<-held.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled placement: %v", err)
	}
	if jobs, _ := s.Jobs(true); len(jobs) != 0 {
		t.Fatalf("a cancelled placement committed %+v", jobs)
	}
	close(held.gate)
	j, err := s.Submit("t", client.JobRequest{Nodes: 8, Transit: 2})
	if err != nil || j.ID != 1 {
		t.Fatalf("next placement: %+v %v", j, err)
	}
	checkDisjoint(t, s)
}

// TestPlacementBudget: a placement that outlives the service's budget
// ends with a 409 naming the budget and commits nothing; a request
// waiting behind it gives up when its own client does, without waiting
// for the first to finish.
func TestPlacementBudget(t *testing.T) {
	s, held, tok := openHeld(t, 200*time.Millisecond)
	h := api.New(s, api.Options{})
	post := func(ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, "POST", "/api/jobs", strings.NewReader(`{"nodes":8,"transit":2}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- post(context.Background()) }()
	<-held.entered
	// The second request waits for the slot; its client gives up.
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan *httptest.ResponseRecorder, 1)
	go func() { second <- post(ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case w := <-second:
		if w.Code == http.StatusCreated {
			t.Fatalf("a request whose client gave up was placed: %s", w.Body)
		}
	case <-first:
		t.Fatal("the waiting request waited for the first placement to end")
	}
	w := <-first
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "budget of 200ms") {
		t.Fatalf("over-budget placement: %d %s", w.Code, w.Body)
	}
	if jobs, _ := s.Jobs(true); len(jobs) != 0 {
		t.Fatalf("committed %+v", jobs)
	}
}

// TestPlacementBudgetTooSmallForTable: a job whose routing table alone
// is expected to take most of the budget is refused at once (409), with
// the estimate and the budget named, before it takes the placement slot;
// a job larger than the fabric is refused at once as a bad request
// (400), before any estimate.
func TestPlacementBudgetTooSmallForTable(t *testing.T) {
	s, _, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:8x8x8", NewRouting: AngaraRouting("angara*"), PlacementBudget: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.places.join(0) != nil { // the slot is taken: a refusal must not wait for it
		t.Fatal("the placement slot of a new service is taken")
	}
	_, err = s.Submit("t", client.JobRequest{Nodes: 256})
	if !errors.Is(err, client.ErrBudget) || !strings.Contains(err.Error(), "256-node job") || !strings.Contains(err.Error(), "budget of 10ms") || api.StatusOf(err) != http.StatusConflict {
		t.Fatalf("256 nodes in 10 ms: %v", err)
	}
	_, err = s.Submit("t", client.JobRequest{Nodes: 100000})
	if !errors.Is(err, client.ErrBadRequest) || errors.Is(err, client.ErrBudget) || !strings.Contains(err.Error(), "the fabric has only 512") || api.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("100 000 nodes on 512: %v", err)
	}
	s.places.release()
	if jobs, _ := s.Jobs(true); len(jobs) != 0 {
		t.Fatalf("committed %+v", jobs)
	}
}
