package multicast

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icn-hpc/icn/topology"
)

type stateLog struct {
	mu  sync.Mutex
	log map[string][]State
}

func (l *stateLog) add(gid string, s State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.log == nil {
		l.log = map[string][]State{}
	}
	l.log[gid] = append(l.log[gid], s)
}

func (l *stateLog) get(gid string) []State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log[gid])
}

func newTestManager(t *testing.T, spec string) (*Manager, *ManualClock, *stateLog, fabric) {
	f := loadFabric(t, spec)
	clock := NewManualClock(time.Unix(1000, 0))
	log := &stateLog{}
	m := NewManager(NewRouter(f.h, Algo{Kind: FULB, Rotate: true}, Options{}), ManagerOptions{
		JoinTimeout: 5 * time.Second, LeaveTimeout: 3 * time.Second, Linger: time.Second,
		Clock: clock, OnState: log.add,
	})
	return m, clock, log, f
}

func totalLoad(m *Manager, f fabric) int {
	n := 0
	for l := 0; l < f.g.NumLinks(); l++ {
		n += m.Load(l)
	}
	return n
}

// The full life of a group: created by the first join, routed once when
// the last join arrives, leaves do not re-route, destroyed when all left,
// forgotten after the linger time.
func TestProtocolLifecycle(t *testing.T) {
	m, clock, log, f := newTestManager(t, "fattree:k=4,n=3")
	members := []int{0, 5, 17, 42}
	for i, v := range members {
		rec, err := m.Join("g", v, len(members))
		if err != nil {
			t.Fatal(err)
		}
		want := ReceivingJoinReq
		if i == len(members)-1 {
			want = Ready
		}
		if rec.State != want || rec.Joined != i+1 {
			t.Fatalf("after join %d: %+v", i, rec)
		}
		if i < len(members)-1 && totalLoad(m, f) != 0 {
			t.Fatal("routes computed before every join arrived")
		}
	}
	tree, err := m.Tree("g")
	if err != nil {
		t.Fatal(err)
	}
	var mem []int32
	for _, v := range members {
		mem = append(mem, int32(v))
	}
	if _, err := NewVerifier(f.h).Verify(mem, tree); err != nil {
		t.Fatalf("tree: %v", err)
	}
	if totalLoad(m, f) != len(tree.Edges) {
		t.Fatalf("load %d, tree has %d edges", totalLoad(m, f), len(tree.Edges))
	}
	for i, v := range members[:3] {
		rec, err := m.Leave("g", v)
		if err != nil || rec.State != ReceivingLeaveReq || rec.Left != i+1 {
			t.Fatalf("leave %d: %+v %v", i, rec, err)
		}
		again, _ := m.Tree("g")
		if again.Root != tree.Root || !slices.Equal(again.Edges, tree.Edges) {
			t.Fatal("tree changed after a leave")
		}
	}
	rec, err := m.Leave("g", members[3])
	if err != nil || rec.State != Destroying || rec.Reason != "all members left" {
		t.Fatalf("last leave: %+v %v", rec, err)
	}
	if totalLoad(m, f) != 0 {
		t.Fatal("load not released")
	}
	want := []State{ReceivingJoinReq, ComputingRoutes, Ready, ReceivingLeaveReq, Destroying}
	if got := log.get("g"); !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	clock.Advance(999 * time.Millisecond)
	if rec, err := m.Query("g"); err != nil || rec.State != Destroying {
		t.Fatalf("before linger: %+v %v", rec, err)
	}
	clock.Advance(time.Millisecond)
	if _, err := m.Query("g"); !errors.Is(err, ErrNoGroup) {
		t.Fatalf("after linger: %v", err)
	}
}

// Requests that break the rules get protocol errors and change nothing.
func TestProtocolBadRequests(t *testing.T) {
	m, _, _, f := newTestManager(t, "fattree:k=4,n=3")
	if _, err := m.Join("g", 1, 3); err != nil {
		t.Fatal(err)
	}
	check := func(err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("got %v, want %v", err, want)
		}
	}
	_, err := m.Join("g", 1, 3)
	check(err, ErrDuplicateJoin)
	_, err = m.Join("g", 2, 4)
	check(err, ErrCountMismatch)
	_, err = m.Leave("g", 1)
	check(err, ErrWrongState)
	_, err = m.Leave("g", 9)
	check(err, ErrNotMember)
	_, err = m.Leave("nosuch", 1)
	check(err, ErrNoGroup)
	_, err = m.Join("g", -1, 3)
	check(err, ErrBadRequest)
	_, err = m.Join("g", f.g.NumNodes(), 3)
	check(err, ErrBadRequest)
	_, err = m.Join("g", 2, 0)
	check(err, ErrBadRequest)
	_, err = m.Join("", 2, 3)
	check(err, ErrBadRequest)
	_, err = m.Tree("g")
	check(err, ErrWrongState)
	if rec, _ := m.Query("g"); rec.Joined != 1 || rec.State != ReceivingJoinReq {
		t.Fatalf("state changed: %+v", rec)
	}
	m.Join("g", 2, 3)
	m.Join("g", 3, 3)
	_, err = m.Join("g", 4, 3)
	check(err, ErrWrongState) // complete
	m.Leave("g", 2)
	_, err = m.Leave("g", 2)
	check(err, ErrDuplicateLeave)
	_, err = m.Leave("g", 4)
	check(err, ErrNotMember)
}

// Lost joins: the group waits, then is destroyed at the join timeout and
// never routed; lost leaves: destroyed at the leave timeout, load released.
func TestProtocolLostRequests(t *testing.T) {
	m, clock, log, f := newTestManager(t, "torus:4x4:endpoints=2")
	m.Join("a", 0, 3)
	m.Join("a", 1, 3) // the third join is lost
	clock.Advance(5*time.Second - time.Nanosecond)
	if rec, _ := m.Query("a"); rec.State != ReceivingJoinReq {
		t.Fatalf("before timeout: %+v", rec)
	}
	clock.Advance(time.Nanosecond)
	m.Expire()
	rec, _ := m.Query("a")
	if rec.State != Destroying || rec.Reason != "join timeout: 2 of 3 members joined" {
		t.Fatalf("after timeout: %+v", rec)
	}
	if slices.Contains(log.get("a"), ComputingRoutes) || totalLoad(m, f) != 0 {
		t.Fatal("an incomplete group was routed")
	}
	// A late join after the destruction starts a new incarnation.
	if rec, err := m.Join("a", 2, 3); err != nil || rec.Joined != 1 || rec.State != ReceivingJoinReq {
		t.Fatalf("late join: %+v %v", rec, err)
	}

	for _, v := range []int{3, 4, 5} {
		m.Join("b", v, 3)
	}
	load := totalLoad(m, f)
	if load == 0 {
		t.Fatal("b not routed")
	}
	m.Leave("b", 3) // two leaves are lost
	clock.Advance(3 * time.Second)
	rec, _ = m.Query("b")
	if rec.State != Destroying || rec.Reason != "leave timeout: 1 of 3 members left" || totalLoad(m, f) != 0 {
		t.Fatalf("after leave timeout: %+v, load %d", rec, totalLoad(m, f))
	}
	// The join timeout of the new "a" still runs from its own first join.
	clock.Advance(2 * time.Second)
	if rec, _ := m.Query("a"); rec.State != Destroying {
		t.Fatalf("new incarnation: %+v", rec)
	}
}

// Many groups joined concurrently, every member twice (duplicates), while
// process 0 of each group polls its state; then all leave concurrently.
// Run with -race.
func TestProtocolConcurrentJoiners(t *testing.T) {
	m, _, log, f := newTestManager(t, "fattree:k=4,n=3")
	w, _ := ParseWorkload("grid2d:8x8")
	gs, err := w.Groups(f.g, 1)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var dups, oks atomic.Int64
	for _, g := range gs {
		for _, v := range g.Members {
			for k := 0; k < 2; k++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := m.Join(g.Name, int(v), len(g.Members))
					switch {
					case err == nil:
						oks.Add(1)
					case errors.Is(err, ErrDuplicateJoin):
						dups.Add(1)
					default:
						t.Error(err)
					}
				}()
			}
		}
		wg.Add(1)
		go func() { // process 0 polls until Ready
			defer wg.Done()
			for {
				rec, err := m.Query(g.Name)
				if err == nil && rec.State == Ready {
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	members := 0
	for _, g := range gs {
		members += len(g.Members)
	}
	if int(oks.Load()) != members || int(dups.Load()) != members {
		t.Fatalf("%d joins accepted, %d duplicates; want %d each", oks.Load(), dups.Load(), members)
	}
	v := NewVerifier(f.h)
	var trees []Tree
	for _, g := range gs {
		if got := log.get(g.Name); !slices.Equal(got, []State{ReceivingJoinReq, ComputingRoutes, Ready}) {
			t.Fatalf("%s: states %v", g.Name, got)
		}
		tr, err := m.Tree(g.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(g.Members, tr); err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		trees = append(trees, tr)
	}
	efi := LinkEFI(f.g, trees)
	for l := range efi {
		if m.Load(l) != int(efi[l]) {
			t.Fatalf("link %d: load %d, EFI of the installed trees %d", l, m.Load(l), efi[l])
		}
	}
	for _, g := range gs {
		for _, v := range g.Members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := m.Leave(g.Name, int(v)); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	for _, rec := range m.Groups() {
		if rec.State != Destroying {
			t.Fatalf("%s: %v after all left", rec.GID, rec.State)
		}
	}
	if totalLoad(m, f) != 0 {
		t.Fatal("load left after every group was destroyed")
	}
}

// The simulation of the whole protocol with losses: every group either
// becomes Ready or times out, leaves never re-route, no load is left.
func TestSimulateProtocol(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	w, _ := ParseWorkload("grid3d:4x4x4")
	gs, _ := w.Groups(f.g, 1)
	for _, loss := range []float64{0, 0.03, 0.5, 1} {
		rep, err := SimulateProtocol(f.h, Algo{Kind: FULB, Rotate: true}, gs, loss, 5)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Ready+rep.JoinTimeouts+rep.NeverCreated != rep.Groups || rep.AllLeft+rep.LeaveTimeouts != rep.Ready ||
			rep.Reroutes != 0 || rep.LoadLeft != 0 {
			t.Fatalf("loss %v: %+v", loss, rep)
		}
		if loss == 0 && (rep.Ready != rep.Groups || rep.AllLeft != rep.Groups) {
			t.Fatalf("no loss: %+v", rep)
		}
		if loss == 1 && rep.Ready != 0 {
			t.Fatalf("all lost: %+v", rep)
		}
		if rep.Joins != 3*64 {
			t.Fatal(fmt.Sprint(rep))
		}
	}
}

// A group that cannot be routed (members in two parts of a broken fabric)
// ends in Destroying with the reason, and holds no load.
func TestProtocolRoutingFailure(t *testing.T) {
	f := loadFabric(t, "fattree:k=2,n=2")
	g, _ := f.g.WithFaults([]int{linkOf(f.g, "h1")}, nil)
	h := mustHops(t, g)
	m := NewManager(NewRouter(h, Algo{Kind: FULB, Rotate: true}, Options{}), ManagerOptions{Clock: NewManualClock(time.Unix(0, 0))})
	m.Join("g", 0, 2)
	rec, err := m.Join("g", 1, 2)
	if err == nil || rec.State != Destroying || !strings.Contains(rec.Reason, "cannot be reached") {
		t.Fatalf("%+v %v", rec, err)
	}
	for l := 0; l < g.NumLinks(); l++ {
		if m.Load(l) != 0 {
			t.Fatal("load left")
		}
	}
}

// Retries: with every transmission lost a client sends each request
// 1+Retries times and nothing is created; with 20% loss and 6 retries every
// group becomes Ready and is torn down by its leaves, while without
// retries groups are lost. The books balance in every case.
func TestSimulateProtocolRetries(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	w, _ := ParseWorkload("grid3d:4x4x4")
	gs, _ := w.Groups(f.g, 1)
	a := Algo{Kind: FULB, Rotate: true}
	run := func(o ProtocolOptions) *ProtocolReport {
		t.Helper()
		rep, err := SimulateProtocolWith(f.h, a, gs, o)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Ready+rep.JoinTimeouts+rep.NeverCreated != rep.Groups || rep.GroupsLost != rep.Groups-rep.Ready ||
			rep.AllLeft+rep.LeaveTimeouts != rep.Ready || rep.Reroutes != 0 || rep.LoadLeft != 0 || rep.Joins != 192 {
			t.Fatalf("%+v: %+v", o, rep)
		}
		return rep
	}
	all := run(ProtocolOptions{Loss: 1, Retries: 3, Seed: 2})
	if all.JoinRetries != 3*all.Joins || all.LostJoins != 4*all.Joins || all.NeverCreated != all.Groups {
		t.Fatalf("all lost: %+v", all)
	}
	with := run(ProtocolOptions{Loss: 0.2, Retries: 6, Seed: 2})
	if with.GroupsLost != 0 || with.AllLeft != with.Groups || with.LostAnswers == 0 || with.JoinRetries < with.LostJoins {
		t.Fatalf("with retries: %+v", with)
	}
	without := run(ProtocolOptions{Loss: 0.2, Seed: 2})
	if without.GroupsLost == 0 || without.JoinRetries != 0 || without.LostAnswers != 0 {
		t.Fatalf("without retries: %+v", without)
	}
	if _, err := SimulateProtocolWith(f.h, a, gs, ProtocolOptions{Retries: 7, Backoff: 100 * time.Millisecond}); err == nil {
		t.Fatal("retries outlasting the join timeout accepted")
	}
}

// The deadline heap fires every timeout exactly when a scan of all groups
// would: groups created, half-left and destroyed at staggered times are
// compared with their expected state after every clock step.
func TestProtocolDeadlinesMatchScan(t *testing.T) {
	m, clock, _, f := newTestManager(t, "fattree:k=4,n=3") // join 5 s, leave 3 s, linger 1 s
	start := clock.Now()
	type plan struct {
		created, left time.Duration // left < 0: never left
		complete      bool
	}
	var plans []plan
	for i := 0; i < 60; i++ {
		p := plan{created: time.Duration(i) * 250 * time.Millisecond, left: -1, complete: i%3 != 0}
		if p.complete && i%2 == 0 {
			p.left = p.created + time.Duration(i%7)*700*time.Millisecond
		}
		plans = append(plans, p)
	}
	want := func(p plan, now time.Duration) (State, bool) {
		switch {
		case now < p.created:
			return 0, false
		case !p.complete && now < p.created+5*time.Second:
			return ReceivingJoinReq, true
		case !p.complete && now < p.created+6*time.Second:
			return Destroying, true
		case !p.complete:
			return 0, false
		case p.left < 0 || now < p.left:
			return Ready, true
		case now < p.left+3*time.Second:
			return ReceivingLeaveReq, true
		case now < p.left+4*time.Second:
			return Destroying, true
		}
		return 0, false
	}
	for step := time.Duration(0); step < 30*time.Second; step += 50 * time.Millisecond {
		clock.Advance(start.Add(step).Sub(clock.Now()))
		for i, p := range plans {
			gid := fmt.Sprint("g", i)
			if p.created == step {
				m.Join(gid, 0, 2)
				if p.complete {
					m.Join(gid, 1+i%10, 2)
				}
			}
			if p.left == step {
				m.Leave(gid, 0)
			}
		}
		m.Expire()
		for i, p := range plans {
			st, exists := want(p, step)
			rec, err := m.Query(fmt.Sprint("g", i))
			if exists != (err == nil) || (exists && rec.State != st) {
				t.Fatalf("group %d at %v: %+v %v, want %v (exists %v)", i, step, rec, err, st, exists)
			}
		}
	}
	for i, p := range plans {
		if p.complete && p.left < 0 {
			m.Leave(fmt.Sprint("g", i), 0)
			m.Leave(fmt.Sprint("g", i), 1+i%10)
		}
	}
	if totalLoad(m, f) != 0 {
		t.Fatal("load left")
	}
}

// Adopting the trees of one manager into a fresh one on the same fabric
// reproduces its groups and loads; a tree that no longer holds (a failed
// link) or a group already present is refused and changes nothing.
func TestAdoptTrees(t *testing.T) {
	for _, spec := range []string{"fattree:k=4,n=3", "torus:4x4x2"} {
		a, _, _, f := newTestManager(t, spec)
		groups := map[string][]int{}
		for k := 0; k < 6; k++ {
			gid := fmt.Sprintf("g%d", k)
			var ms []int
			for _, v := range []int{k, 3 + 2*k, 11 + k, 20 + 3*k} {
				if v < f.g.NumNodes() && !slices.Contains(ms, v) && (f.g.Direct() || f.g.Kind(v) != topology.Switch) {
					ms = append(ms, v)
				}
			}
			for _, v := range ms {
				if _, err := a.Join(gid, v, len(ms)); err != nil {
					t.Fatalf("%s join: %v", spec, err)
				}
			}
			groups[gid] = ms
		}
		b, _, _, _ := newTestManager(t, spec)
		for gid, ms := range groups {
			tr, err := a.Tree(gid)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := b.Adopt(gid, len(ms), ms, tr, CheckAll)
			if err != nil || rec.State != Ready {
				t.Fatalf("%s adopt %s: %+v %v", spec, gid, rec, err)
			}
			if _, err := b.Adopt(gid, len(ms), ms, tr, CheckAll); !errors.Is(err, ErrWrongState) {
				t.Fatalf("%s: second adopt of %s: %v", spec, gid, err)
			}
		}
		for l := 0; l < f.g.NumLinks(); l++ {
			if a.Load(l) != b.Load(l) {
				t.Fatalf("%s: link %d load %d adopted, %d routed", spec, l, b.Load(l), a.Load(l))
			}
		}
		// The same trees on a fabric that lost a link one of them uses.
		tr, _ := a.Tree("g0")
		failed := int(tr.Edges[len(tr.Edges)/2] >> 1)
		g2, err := f.g.WithFaults([]int{failed}, nil)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := topology.MinHops(g2, 0)
		if err != nil {
			t.Fatal(err)
		}
		c := NewManager(NewRouter(h2, Algo{Kind: FULB, Rotate: true}, Options{}), ManagerOptions{})
		for _, check := range []AdoptCheck{CheckAll, CheckShape} {
			if _, err := c.Adopt("g0", len(groups["g0"]), groups["g0"], tr, check); err == nil || !strings.Contains(err.Error(), "failed link") {
				t.Fatalf("%s: tree over failed link %d adopted (check %d): %v", spec, failed, check, err)
			}
		}
		for l := 0; l < g2.NumLinks(); l++ {
			if c.Load(l) != 0 {
				t.Fatalf("%s: refused adoption left load on link %d", spec, l)
			}
		}
		if _, err := c.Query("g0"); err == nil {
			t.Fatalf("%s: refused adoption left a group", spec)
		}
	}
}
