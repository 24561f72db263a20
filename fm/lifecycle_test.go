package fm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// switchLinks returns the names of the links between two switches of g.
func switchLinks(g *topology.Graph) []string {
	var out []string
	for l := 0; l < g.NumLinks(); l++ {
		if lk := g.Link(l); g.Kind(int(lk.A)) == topology.Switch && g.Kind(int(lk.B)) == topology.Switch {
			out = append(out, g.LinkName(l))
		}
	}
	return out
}

// settleGoroutines waits until at most n goroutines run (those of the
// service may still be returning from their last deferred call when
// Close returns) and fails with their stacks if they do not settle.
func settleGoroutines(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if runtime.NumGoroutine() <= n {
			return
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Fatalf("%d goroutines after Close, %d before Open:\n%s", runtime.NumGoroutine(), n, buf)
}

// TestHookRunsOutsideChanges: a hook that blocks (OpenSM hung) keeps
// nobody waiting: failure reports return and every read answers while
// it blocks; the dumps written meanwhile make it run once more, for the
// newest; the status says when it ran, whether a run is pending, and
// its error.
func TestHookRunsOutsideChanges(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "lfts.dump")
	entered, release := make(chan struct{}, 8), make(chan struct{})
	var mu sync.Mutex
	var dumps [][]byte // the dump each run saw
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "fattree:k=4,n=3", NewRouting: AngaraRouting("angara*"),
		Unicast: &UnicastConfig{Engine: "ftree", LFTOut: out, Hook: func(ctx context.Context, path string) error {
			b, _ := os.ReadFile(path)
			mu.Lock()
			dumps = append(dumps, b)
			n := len(dumps)
			mu.Unlock()
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			if n > 1 {
				return fmt.Errorf("opensm: reload %d refused", n)
			}
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-entered // the start's dump: the hook blocks now
	h := api.New(s, api.Options{OpenRead: true})
	links := switchLinks(s.g)
	var last *client.FailureResult
	for _, l := range links[:2] {
		// If the report waited for the hook, this would never return.
		if last, err = s.ChangeFailure(t.Context(), "t", client.FailureChange{Link: l}); err != nil {
			t.Fatal(err)
		}
		if u := last.Unicast; !u.Written || !u.HookPending || u.HookRan != nil {
			t.Fatalf("status while the hook blocks: %+v", u)
		}
	}
	for _, path := range []string{"/api/fabric/unicast", "/api/fabric", "/api/fabric/load", "/api/mcast", "/api/jobs", "/metrics"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s while the hook blocks: %d %s", path, rec.Code, rec.Body)
		}
	}
	close(release)
	waitHook(s)
	newest, _ := os.ReadFile(out)
	mu.Lock()
	runs := slices.Clone(dumps)
	mu.Unlock()
	// Two dumps written during the first run: one more run, for the
	// newest.
	if len(runs) != 2 || !bytes.Equal(runs[1], newest) || bytes.Equal(runs[0], newest) {
		t.Fatalf("%d hook runs after two dumps written during the first (want 2, the second on the newest dump)", len(runs))
	}
	if u := s.Unicast(); u.HookPending || u.HookRan == nil || !strings.Contains(u.HookError, "reload 2 refused") {
		t.Fatalf("status after the hook ran: %+v", u)
	}
}

// TestCloseStopsEverything: Close with the hook blocked (it waits for
// its context only) and a rebalance possibly running returns after
// cancelling them; then no goroutine of the service is left, the ticker
// has stopped, and every change is refused with ErrClosing (503).
func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	entered := make(chan struct{}, 8)
	var cause atomic.Value
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "fattree:k=4,n=3", NewRouting: AngaraRouting("angara*"),
		Unicast: &UnicastConfig{Engine: "sssp", LFTOut: filepath.Join(dir, "lfts.dump"), Hook: func(ctx context.Context, path string) error {
			entered <- struct{}{}
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return ctx.Err()
		}}})
	if err != nil {
		t.Fatal(err)
	}
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		s.RunTicker(time.Hour, nil) // stops when the service closes
	}()
	<-entered
	// An sssp repair: a rebalance starts in the background.
	if res, err := s.ChangeFailure(t.Context(), "t", client.FailureChange{Link: switchLinks(s.g)[0]}); err != nil || res.Unicast.Mode != "repair" {
		t.Fatalf("failure: %v %+v", err, res)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-ticked
	if c, _ := cause.Load().(error); !errors.Is(c, client.ErrClosing) {
		t.Fatalf("the blocked hook's context ended with %v, want ErrClosing", c)
	}
	settleGoroutines(t, before)
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := t.Context()
	for what, err := range map[string]error{
		"failure": func() error {
			_, err := s.ChangeFailure(ctx, "t", client.FailureChange{Link: switchLinks(s.g)[1]})
			return err
		}(),
		"submit":  func() error { _, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 1}); return err }(),
		"release": func() error { _, err := s.ReleaseContext(ctx, "t", 1); return err }(),
		"join": func() error {
			_, err := s.mc.join(ctx, "t", client.McastRequest{Group: "g", Member: s.g.NodeName(0), MemberCount: 2})
			return err
		}(),
	} {
		if !errors.Is(err, client.ErrClosing) || api.StatusOf(err) != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "closing") {
			t.Errorf("%s after Close: %v", what, err)
		}
	}
}

// holdRouting blocks every table computation, while hold is set, until
// its context ends.
type holdRouting struct {
	Routing
	hold    *atomic.Bool
	entered chan struct{}
}

func (r *holdRouting) Routes(ctx context.Context, active, transit []int) (*routing.TableJSON, client.TableStats, error) {
	if r.hold.Load() {
		select {
		case r.entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, client.TableStats{}, ctx.Err()
	}
	return r.Routing.Routes(ctx, active, transit)
}

// storedState is what a fresh Open of a copy of the service's database
// holds: the failures, each running job's record (table included) and
// each node's job, as text to compare.
func storedState(t *testing.T, s *Service) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backup(f, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fresh, _, err := Open(Config{DBPath: path, NewRouting: AngaraRouting("angara*"), RotateToken: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	return memoryState(t, fresh)
}

// memoryState is the service's state in memory, as storedState gives it.
func memoryState(t *testing.T, s *Service) string {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var b strings.Builder
	fmt.Fprintf(&b, "failed links %v nodes %v\n", s.fabric.FailedLinks, s.fabric.FailedNodes)
	for _, id := range sortedIDs(s.jobs) {
		data, err := client.MarshalJSON(s.jobs[id])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "job %d %s\n", id, data)
	}
	if s.state != nil {
		for v := 0; v < s.g.NumNodes(); v++ {
			if o := s.state.Owner(v); o != 0 {
				fmt.Fprintf(&b, "node %s job %d\n", s.g.NodeName(v), o)
			}
		}
		if s.state.Graph() != s.g {
			b.WriteString("node state on another fabric than the service's\n")
		}
	}
	return b.String()
}

// TestChangeFailureRacingClose: a failure report whose re-routing is
// under way when Close begins stops and commits nothing; one racing
// Close either commits fully before Close or fails with ErrClosing; no
// write reaches the store after Close, and no goroutine is left.
func TestChangeFailureRacingClose(t *testing.T) {
	before := runtime.NumGoroutine()
	var hold atomic.Bool
	entered := make(chan struct{}, 1)
	factory := func(g *topology.Graph) (Routing, error) {
		rt, err := AngaraRouting("angara*")(g)
		if err != nil {
			return nil, err
		}
		return &holdRouting{Routing: rt, hold: &hold, entered: entered}, nil
	}
	open := func(dir, topo string) *Service {
		s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: topo, NewRouting: factory})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Two neighbouring nodes on torus:4x4 whose link fails: the job
	// gains transit nodes, and its table on them is held.
	dir := t.TempDir()
	s := open(dir, "torus:4x4")
	if _, err := s.Submit("t", client.JobRequest{Nodes: 2}); err != nil {
		t.Fatal(err)
	}
	var closed atomic.Bool
	s.store.SetBeforeWrite(func() {
		if closed.Load() {
			t.Error("a write began after Close returned")
		}
	})
	want := memoryState(t, s)
	link := firstLink(t, s.jobs[1])
	hold.Store(true)
	errc := make(chan error, 1)
	go func() {
		_, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link})
		errc <- err
	}()
	select {
	case <-entered: // re-routing job 1, blocked until its context ends
	case err := <-errc:
		t.Fatalf("the failure report did not re-route job 1: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed.Store(true)
	if err := <-errc; !errors.Is(err, client.ErrClosing) {
		t.Fatalf("failure report stopped by Close: %v", err)
	}
	hold.Store(false)
	s = open(dir, "")
	if got := memoryState(t, s); got != want {
		t.Fatalf("a stopped failure report changed the store:\n%s\nwant\n%s", got, want)
	}
	s.Close()

	// Racing without a hold: whichever comes first (Close begins later
	// in later rounds).
	for i := 0; i < 8; i++ {
		dir := t.TempDir()
		s := open(dir, "torus:4x4x2")
		if _, err := s.Submit("t", client.JobRequest{Nodes: 4, Transit: 1}); err != nil {
			t.Fatal(err)
		}
		link := firstLink(t, s.jobs[1])
		var closed atomic.Bool
		s.store.SetBeforeWrite(func() {
			if closed.Load() {
				t.Error("a write began after Close returned")
			}
		})
		start, errc := make(chan struct{}), make(chan error, 1)
		go func() {
			<-start
			_, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link})
			errc <- err
		}()
		close(start)
		for k := 0; k < i*i*50; k++ {
			runtime.Gosched()
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		closed.Store(true)
		err := <-errc
		if err != nil && !errors.Is(err, client.ErrClosing) {
			t.Fatalf("failure report racing Close: %v", err)
		}
		s = open(dir, "")
		failed := slices.Contains(s.fabric.FailedLinks, link)
		if (err == nil) != failed {
			t.Fatalf("failure report racing Close returned %v, the store has the failure: %v", err, failed)
		}
		checkJobsRouted(t, s)
		s.Close()
	}
	settleGoroutines(t, before)
}

// TestGroupReadsDuringJoinWrite: while a join's store write is held,
// every read of the groups answers (from the groups as stored: the
// join is not in them yet), in the API and the metrics.
func TestGroupReadsDuringJoinWrite(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4x2", nil)
	defer s.Close()
	ctx := t.Context()
	for _, m := range []string{"0.0.0", "2.1.0", "3.3.1"} {
		if _, err := s.mc.join(ctx, "t", client.McastRequest{Group: "a", Member: m, MemberCount: 3}); err != nil {
			t.Fatal(err)
		}
	}
	wantEFI := slices.Clone(s.mc.linkEFI())
	entered, release := make(chan struct{}), make(chan struct{})
	s.store.SetFailWrites(func() error {
		entered <- struct{}{}
		<-release
		return nil // the write commits once released
	})
	done := make(chan error, 1)
	go func() {
		_, err := s.mc.join(ctx, "t", client.McastRequest{Group: "b", Member: "1.1.0", MemberCount: 2})
		done <- err
	}()
	<-entered // the join holds the group writers' lock and its write is open
	// Were any of these to wait for the join's lock, they would never
	// return.
	if gs := s.mc.list(); len(gs) != 1 || gs[0].ID != "a" || gs[0].State != "Ready" {
		t.Fatalf("groups while a join is written: %+v", gs)
	}
	if _, err := s.mc.get("b"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("group b visible before its join was stored: %v", err)
	}
	if g, err := s.mc.get("a"); err != nil || len(g.Edges) == 0 {
		t.Fatalf("group a while a join is written: %+v %v", g, err)
	}
	if n, st := s.mc.count(), s.mc.byState(); n != 1 || st["Ready"] != 1 {
		t.Fatalf("count %d states %v", n, st)
	}
	if !slices.Equal(s.mc.linkEFI(), wantEFI) || s.mc.maxEFI() != 1 {
		t.Fatalf("EFI while a join is written: max %d", s.mc.maxEFI())
	}
	h := api.New(s, api.Options{OpenRead: true})
	for _, path := range []string{"/api/mcast", "/api/mcast/a", "/api/fabric/load", "/metrics"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s while a join is written: %d %s", path, rec.Code, rec.Body)
		}
		if path == "/metrics" && !strings.Contains(rec.Body.String(), "icn_multicast_groups 1") {
			t.Fatalf("metrics while a join is written count other than the stored group")
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.store.SetFailWrites(nil)
	if gs := s.mc.list(); len(gs) != 2 || gs[1].ID != "b" {
		t.Fatalf("groups after the join was stored: %+v", gs)
	}
}

// TestMemoryMatchesStore runs random sequences of failures, repairs,
// placements, migrations and releases on small tori, some of them on a
// full disk and some cancelled before they start: after each, the
// service's state in memory (failures, jobs with their tables, the job
// of every node) equals what a fresh Open of its database holds, and a
// change that failed left both as they were.
func TestMemoryMatchesStore(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s, _ := openTest(t, t.TempDir(), "torus:4x4x2", nil)
			defer s.Close()
			rng := rand.New(rand.NewPCG(seed, 7))
			cancelled, cancel := context.WithCancel(context.Background())
			cancel()
			changed := 0
			for step := 0; step < 40; step++ {
				before := memoryState(t, s)
				full := rng.IntN(8) == 0
				if full {
					s.store.SetFailWrites(func() error { return errors.New("no space left on device") })
				}
				what, err := randomChange(s, rng, cancelled)
				s.store.SetFailWrites(nil)
				if what == "cancelled failure" && !errors.Is(err, context.Canceled) {
					t.Fatalf("step %d: a failure change whose context had ended returned %v", step, err)
				}
				now := memoryState(t, s)
				if stored := storedState(t, s); now != stored {
					t.Fatalf("step %d (%s, err %v): memory\n%s\nstore\n%s", step, what, err, now, stored)
				}
				switch {
				case full && err == nil && what != "none":
					t.Fatalf("step %d: %s succeeded on a full disk", step, what)
				case err != nil && now != before:
					t.Fatalf("step %d: %s failed (%v) and changed the state", step, what, err)
				case err == nil && now != before:
					changed++
				}
			}
			checkDisjoint(t, s)
			if changed < 10 {
				t.Fatalf("only %d of 40 steps changed anything", changed)
			}
		})
	}
}

// randomChange makes one random change: a placement, a release, a
// migration, a failure or repair of a link or node (the links of jobs
// most often, so that repairs add transit nodes), or a failure change
// whose context has ended.
func randomChange(s *Service, rng *rand.Rand, cancelled context.Context) (string, error) {
	ctx := context.Background()
	s.mu.RLock()
	jobs := make([]*client.JobRecord, 0, len(s.jobs))
	for _, id := range sortedIDs(s.jobs) {
		jobs = append(jobs, s.jobs[id])
	}
	failedLinks, failedNodes, g := slices.Clone(s.fabric.FailedLinks), slices.Clone(s.fabric.FailedNodes), s.g
	s.mu.RUnlock()
	switch k := rng.IntN(10); {
	case k < 3:
		_, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 2 + rng.IntN(4), Transit: rng.IntN(3)})
		if errors.Is(err, client.ErrConflict) {
			return "none", nil // does not fit now
		}
		return "submit", err
	case k == 3 && len(jobs) > 0:
		_, err := s.ReleaseContext(ctx, "t", jobs[rng.IntN(len(jobs))].ID)
		return "release", err
	case k == 4 && len(jobs) > 0:
		_, err := s.MigrateContext(ctx, "t", jobs[rng.IntN(len(jobs))].ID)
		if errors.Is(err, client.ErrConflict) {
			return "none", nil
		}
		return "migrate", err
	case k == 5 && len(failedLinks)+len(failedNodes) > 0:
		if i := rng.IntN(len(failedLinks) + len(failedNodes)); i < len(failedLinks) {
			_, err := s.ChangeFailure(ctx, "t", client.FailureChange{Link: failedLinks[i], Repair: true})
			return "repair link", err
		} else {
			_, err := s.ChangeFailure(ctx, "t", client.FailureChange{Node: failedNodes[i-len(failedLinks)], Repair: true})
			return "repair node", err
		}
	case k == 6:
		_, err := s.ChangeFailure(cancelled, "t", client.FailureChange{Link: g.LinkName(rng.IntN(g.NumLinks()))})
		return "cancelled failure", err
	case k == 7:
		_, err := s.ChangeFailure(ctx, "t", client.FailureChange{Node: g.NodeName(rng.IntN(g.NumNodes()))})
		return "fail node", err
	default:
		link := g.LinkName(rng.IntN(g.NumLinks()))
		if len(jobs) > 0 {
			// A link between two nodes of a job, if it has one.
			j := jobs[rng.IntN(len(jobs))]
			nodes, _ := nodesByName(g, j.Active)
			for _, a := range nodes {
				for _, c := range g.Out(a) {
					if slices.Contains(nodes, g.Dst(int(c))) && g.Up(int(c)) {
						link = g.LinkName(int(c) >> 1)
					}
				}
			}
		}
		_, err := s.ChangeFailure(ctx, "t", client.FailureChange{Link: link})
		return "fail link", err
	}
}
