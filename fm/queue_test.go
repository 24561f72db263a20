package fm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/topology"
)

// TestPlacementQueue: while a long placement holds the slot, small
// submits queue behind it: none gets a 5xx, they are served by virtual
// deadline (the smallest first, requests of one size in arrival order,
// a big one that was queued first after them), each has its whole
// budget from its turn (every request waits longer than the budget and
// is still placed), and a request whose client leaves drops out of the
// queue without placing anything. The long placement itself, whose
// table runs past the budget, answers 201 with its table pending (not
// 409, not 503).
func TestPlacementQueue(t *testing.T) {
	const budget = time.Second
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} // arrivals: all at one time
	held := &gatedRouting{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	factory := func(g *topology.Graph) (Routing, error) {
		rt, err := AngaraRouting("angara*")(g)
		held.Routing = rt
		return held, err
	}
	s, tok, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:4x4x4", NewRouting: factory,
		PlacementBudget: budget, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	queued := make(chan struct{}, 16)
	s.places.mu.Lock()
	s.places.queued = func() { queued <- struct{}{} }
	s.places.mu.Unlock()
	h := api.New(s, api.Options{})
	post := func(ctx context.Context, nodes int) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, "POST", "/api/jobs", strings.NewReader(fmt.Sprintf(`{"nodes":%d,"name":"n%d"}`, nodes, nodes)))
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- post(context.Background(), 8) }()
	<-held.entered // the long placement holds the slot, blocked in its table
	requests := []struct {
		name  string
		nodes int
	}{{"big", 24}, {"a1", 2}, {"b1", 4}, {"a2", 2}, {"gone", 2}, {"a3", 2}}
	answers := make([]chan *httptest.ResponseRecorder, len(requests))
	gone, leave := context.WithCancel(context.Background())
	defer leave()
	for i, r := range requests {
		ctx := context.Background()
		if r.name == "gone" {
			ctx = gone
		}
		answers[i] = make(chan *httptest.ResponseRecorder, 1)
		go func() { answers[i] <- post(ctx, r.nodes) }()
		<-queued // in the queue before the next one arrives
	}
	leave()
	if w := <-answers[4]; w.Code != 499 {
		t.Fatalf("a request whose client left: %d %s", w.Code, w.Body)
	}
	s.places.mu.Lock()
	waiting := len(s.places.waiting)
	s.places.mu.Unlock()
	if waiting != len(requests)-1 {
		t.Fatalf("%d requests wait, want %d (the one that left is out)", waiting, len(requests)-1)
	}
	w := <-first // the long placement's table ran out of its budget: built after the answer
	var long client.JobRecord
	if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &long) != nil || long.Routing != client.RoutePending {
		t.Fatalf("the long placement: %d %s", w.Code, w.Body)
	}
	close(held.gate)
	served := map[string]int{} // name → job id: ids are given in the order of service
	for i, r := range requests {
		if r.name == "gone" {
			continue // answered above
		}
		w := <-answers[i]
		if w.Code != http.StatusCreated {
			t.Fatalf("%s, after waiting longer than the budget: %d %s", r.name, w.Code, w.Body)
		}
		var j client.JobRecord
		if err := json.Unmarshal(w.Body.Bytes(), &j); err != nil {
			t.Fatal(err)
		}
		served[r.name] = j.ID
	}
	order := []string{"a1", "a2", "a3", "b1", "big"}
	if !slices.IsSortedFunc(order, func(a, b string) int { return served[a] - served[b] }) {
		t.Errorf("served in the order %v, want %v", served, order)
	}
	if jobs, _ := s.Jobs(true); len(jobs) != len(order)+1 {
		t.Errorf("%d jobs placed, want %d", len(jobs), len(order)+1)
	}
	checkDisjoint(t, s)
}

// TestPlacementQueueServesBigInTime: a big request waiting while small
// ones keep arriving (one a second, each expected to take 1 s, the big
// one 10 s) is served as soon as its virtual deadline is the earliest:
// after the nine smalls whose deadlines come before its own, before the
// tenth, whose deadline equals it (it arrived first).
func TestPlacementQueueServesBigInTime(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	q := &placeQueue{now: clk.Now, expected: func(m int) time.Duration { return time.Duration(m) * time.Second }}
	if q.join(1) != nil {
		t.Fatal("a free slot was not taken at once")
	}
	big := q.join(10)
	for k := 0; ; k++ {
		small := q.join(1)
		q.release() // the holder ends; the earliest deadline is served
		select {
		case <-big.ready:
			if k != 9 {
				t.Fatalf("the big request was served when small %d arrived, want 9", k)
			}
			q.release()
			select {
			case <-small.ready:
			default:
				t.Fatal("the small request left waiting after the big one")
			}
			return
		case <-small.ready:
		}
		if k > 9 {
			t.Fatal("the big request starves")
		}
		clk.Add(time.Second)
	}
}
