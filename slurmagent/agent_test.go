package slurmagent

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/sched"
	"github.com/prometheus/client_golang/prometheus"
)

// fakeSlurm is a partition in memory: pinning a held job starts it on
// the pinned nodes (as slurmctld does once the hold is released).
type fakeSlurm struct {
	jobs    map[int]*Job
	nodes   map[string]*Node
	pinErr  error
	pinned  map[int][]string
	drained []string
	// holdErr, if set, refuses Hold for that job (as slurmctld refuses
	// an update of a job larger than its partition).
	holdErr map[int]error
	parts   map[string][]string
}

func newFakeSlurm(names []string) *fakeSlurm {
	f := &fakeSlurm{jobs: map[int]*Job{}, nodes: map[string]*Node{}, pinned: map[int][]string{}, holdErr: map[int]error{}, parts: map[string][]string{}}
	for _, n := range names {
		f.nodes[n] = &Node{Name: n, State: "idle"}
		f.parts[n] = []string{"torus"}
	}
	return f
}

func (f *fakeSlurm) submit(id, nodes int) {
	f.jobs[id] = &Job{ID: id, State: "PENDING", Nodes: nodes, Reason: "JobHeldUser", Comment: CommentWaiting}
}

func (f *fakeSlurm) Jobs(ctx context.Context, partition string) ([]Job, error) {
	var out []Job
	for _, j := range f.jobs {
		out = append(out, *j)
	}
	slices.SortFunc(out, func(a, b Job) int { return a.ID - b.ID })
	return out, nil
}

func (f *fakeSlurm) Pin(ctx context.Context, id int, hostlist string, count int, comment, admin string) error {
	if f.pinErr != nil {
		return f.pinErr
	}
	names, err := sched.ExpandHostlist(hostlist)
	if err != nil || len(names) != count {
		return fmt.Errorf("bad pin %q %d", hostlist, count)
	}
	j := f.jobs[id]
	j.State, j.Reason, j.NodeList, j.Comment, j.Start = "RUNNING", "None", hostlist, comment, time.Now()
	f.pinned[id] = names
	return nil
}

func (f *fakeSlurm) Hold(ctx context.Context, id int, comment string) error {
	if err := f.holdErr[id]; err != nil {
		return err
	}
	f.jobs[id].Comment, f.jobs[id].Reason = comment, "JobHeldAdmin"
	return nil
}

func (f *fakeSlurm) UserHold(ctx context.Context, id int) error {
	f.jobs[id].Reason = "JobHeldUser"
	return nil
}

func (f *fakeSlurm) NodePartitions(ctx context.Context) (map[string][]string, error) {
	return f.parts, nil
}

func (f *fakeSlurm) Nodes(ctx context.Context) ([]Node, error) {
	var out []Node
	for _, n := range f.nodes {
		out = append(out, *n)
	}
	return out, nil
}

func (f *fakeSlurm) Drain(ctx context.Context, node, reason string) error {
	f.nodes[node].State, f.nodes[node].Reason = "drain", reason
	f.drained = append(f.drained, node)
	return nil
}

func testService(t *testing.T, topo string) (*fm.Service, *Client) {
	t.Helper()
	svc, tok, err := fm.Open(fm.Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: topo, NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, api.Options{}))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	return svc, &Client{C: client.New(srv.URL, tok)}
}

// The agent's rounds against a partition in memory and a real fabric
// manager: held jobs are placed within the window and pinned to exactly
// icn's nodes; a job that can never run says why and stays held; a job
// that does not fit now waits; ended jobs are released; a restarted agent
// pins a job placed but not pinned before; failures go both ways.
func TestAgentRounds(t *testing.T) {
	ctx := context.Background()
	svc, cl := testService(t, "torus:4x4")
	nn := sched.NewNodeNamer("nid", 16)
	var names []string
	for v := 0; v < 16; v++ {
		names = append(names, nn.Name(v))
	}
	sl := newFakeSlurm(names)
	a, err := New(ctx, Config{Partition: "torus", Window: 2}, sl, cl)
	if err != nil {
		t.Fatal(err)
	}
	sl.submit(1, 4)
	sl.submit(2, 40) // more than the fabric has
	sl.submit(3, 4)
	sl.submit(4, 4)
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	// Window 2: jobs 1 and 2 considered; 1 placed, 2 refused for good.
	if sl.jobs[1].State != "RUNNING" || sl.jobs[3].State != "PENDING" {
		t.Fatalf("after one round: %+v %+v", sl.jobs[1], sl.jobs[3])
	}
	if c := sl.jobs[2].Comment; !strings.HasPrefix(c, "icn: refused:") || !strings.Contains(c, "only 16 nodes") {
		t.Fatalf("job 2's comment: %q", c)
	}
	checkPinned(t, svc, sl, names)
	a.Round(ctx)
	a.Round(ctx)
	if sl.jobs[3].State != "RUNNING" || sl.jobs[4].State != "RUNNING" {
		t.Fatalf("jobs 3, 4 not placed: %+v %+v", sl.jobs[3], sl.jobs[4])
	}
	checkPinned(t, svc, sl, names)
	// A job that does not fit now waits with the reason.
	sl.submit(5, 8)
	a.Round(ctx)
	if sl.jobs[5].State != "PENDING" || !strings.HasPrefix(sl.jobs[5].Comment, "icn: waiting") {
		t.Fatalf("job 5: %+v", sl.jobs[5])
	}
	// Job 1 ends: its nodes are freed in icn, and job 5 goes on them.
	delete(sl.jobs, 1)
	a.Round(ctx)
	running, _ := svc.Jobs(false)
	for _, r := range running {
		if r.Name == "slurm-1" {
			t.Fatal("job 1 ended in Slurm but still holds its nodes in icn")
		}
	}
	// Placed in icn but Slurm refused the pin: the nodes are freed.
	sl.submit(6, 1)
	sl.pinErr = fmt.Errorf("slurmctld down")
	delete(sl.jobs, 3)
	a.Round(ctx)
	running, _ = svc.Jobs(false)
	for _, r := range running {
		if r.Name == "slurm-6" {
			t.Fatal("a placement Slurm refused still holds its nodes")
		}
	}
	sl.pinErr = nil
	// A placement made before a restart (here: directly in icn) is
	// pinned by the next agent to the same nodes.
	sl.submit(7, 1)
	r, err := cl.Submit(ctx, client.JobRequest{Name: "slurm-7", Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := New(ctx, Config{Partition: "torus", Window: 2}, sl, cl)
	if err != nil {
		t.Fatal(err)
	}
	a2.Round(ctx)
	if got := sl.pinned[7]; len(got) != 1 || got[0] != names[nodeID(svc, r.Active[0])] {
		t.Fatalf("job 7 pinned to %v, icn placed it on %v", got, r.Active)
	}
	checkPinned(t, svc, sl, names)
	// Failures: a node Slurm drains fails in icn; a node icn fails is
	// drained in Slurm.
	sl.nodes[names[15]].State, sl.nodes[names[15]].Reason = "down*", "Not responding"
	if _, err := svc.ChangeFailure(context.Background(), "test", client.FailureChange{Node: svc.Fabric().Nodes[14].Name}); err != nil {
		t.Fatal(err)
	}
	a2.Round(ctx)
	fv := svc.Fabric()
	if !fv.Nodes[15].Failed || sl.nodes[names[14]].State != "drain" || !strings.HasPrefix(sl.nodes[names[14]].Reason, "icn:") {
		t.Fatalf("failures: icn node 15 failed %v; Slurm %s %+v", fv.Nodes[15].Failed, names[14], sl.nodes[names[14]])
	}
	// The drained node is not failed back from Slurm (its reason is icn's).
	a2.Round(ctx)
	if len(sl.drained) != 1 {
		t.Fatalf("drained %v", sl.drained)
	}
}

// checkPinned: every running job of the fake partition runs on exactly
// the nodes icn holds for it, and no node serves two jobs.
func checkPinned(t *testing.T, svc *fm.Service, sl *fakeSlurm, names []string) {
	t.Helper()
	running, _ := svc.Jobs(false)
	owner := map[string]int{}
	for _, r := range running {
		var id int
		if _, err := fmt.Sscanf(r.Name, "slurm-%d", &id); err != nil {
			continue
		}
		j := sl.jobs[id]
		if j == nil || j.State != "RUNNING" {
			continue
		}
		var want []string
		for _, c := range append(append([]string(nil), r.Active...), r.TransitNodes...) {
			want = append(want, names[nodeID(svc, c)])
		}
		got := slices.Clone(sl.pinned[id])
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("job %d pinned to %v, icn holds %v", id, got, want)
		}
		for _, n := range got {
			if o, dup := owner[n]; dup {
				t.Fatalf("node %s pinned to jobs %d and %d", n, o, id)
			}
			owner[n] = id
		}
	}
}

// pendingTables is a fabric manager whose placements keep their routing
// table pending until the test marks it verified: the real service's
// jobs, shown with routing "pending" while their id is in pending.
type pendingTables struct {
	*Client
	pending map[int]bool
}

func (m *pendingTables) show(r *client.JobRecord) {
	if m.pending[r.ID] {
		r.Routing = client.RoutePending
	}
}

func (m *pendingTables) Submit(ctx context.Context, req client.JobRequest) (*client.JobRecord, error) {
	r, err := m.Client.Submit(ctx, req)
	if err == nil && !r.Replayed {
		m.pending[r.ID] = true
	}
	if r != nil {
		m.show(r)
	}
	return r, err
}

func (m *pendingTables) Jobs(ctx context.Context) ([]client.JobRecord, error) {
	jobs, err := m.Client.Jobs(ctx)
	for i := range jobs {
		m.show(&jobs[i])
	}
	return jobs, err
}

func (m *pendingTables) Job(ctx context.Context, id int) (*client.JobRecord, error) {
	r, err := m.Client.Job(ctx, id)
	if r != nil {
		m.show(r)
	}
	return r, err
}

// TestAgentHoldsUntilTableVerified: a job the fabric manager placed with
// its routing table pending stays held in Slurm (not pinned, so not
// released to run; its comment says why), is not placed twice, and is
// pinned to icn's nodes by the first round after its table is verified.
func TestAgentHoldsUntilTableVerified(t *testing.T) {
	ctx := context.Background()
	svc, cl := testService(t, "torus:4x4")
	nn := sched.NewNodeNamer("nid", 16)
	var names []string
	for v := 0; v < 16; v++ {
		names = append(names, nn.Name(v))
	}
	sl := newFakeSlurm(names)
	m := &pendingTables{Client: cl, pending: map[int]bool{}}
	a, err := New(ctx, Config{Partition: "torus", Window: 2}, sl, m)
	if err != nil {
		t.Fatal(err)
	}
	sl.submit(1, 4)
	for round := range 2 {
		if err := a.Round(ctx); err != nil {
			t.Fatal(err)
		}
		j := sl.jobs[1]
		if j.State != "PENDING" || len(sl.pinned[1]) != 0 || !strings.Contains(j.Comment, "waiting for its routing table") {
			t.Fatalf("round %d, table pending: %+v pinned %v", round, j, sl.pinned[1])
		}
		if running, _ := svc.Jobs(false); len(running) != 1 {
			t.Fatalf("round %d: %d icn jobs, want the one placement", round, len(running))
		}
	}
	for id := range m.pending {
		m.pending[id] = false // verified
	}
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if sl.jobs[1].State != "RUNNING" || len(sl.pinned[1]) != 4 {
		t.Fatalf("after the table was verified: %+v pinned %v", sl.jobs[1], sl.pinned[1])
	}
	checkPinned(t, svc, sl, names)
}

func torusNames(n int) []string {
	nn := sched.NewNodeNamer("nid", n)
	var names []string
	for v := 0; v < n; v++ {
		names = append(names, nn.Name(v))
	}
	return names
}

// counter reads one series of a counter vector.
func counter(t *testing.T, reg *prometheus.Registry, name, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if outcome == "" || l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
			if outcome == "" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestAgentBadJobAndMetrics: a job whose comment Slurm will not update
// (slurmctld refuses any update of a job larger than its partition) does
// not stop the round: the jobs after it are placed in the same round.
// It is refused once and then takes no place in the window; decisions
// are counted per job, not per round; decision times are logged in
// milliseconds; the transit allowance is rounded up as the CLI rounds it.
func TestAgentBadJobAndMetrics(t *testing.T) {
	ctx := context.Background()
	svc, cl := testService(t, "torus:4x4")
	names := torusNames(16)
	sl := newFakeSlurm(names)
	reg := prometheus.NewRegistry()
	var log syncBuffer
	a, err := New(ctx, Config{Partition: "torus", Window: 2, Transit: 0.6, Log: &log, Registry: reg}, sl, cl)
	if err != nil {
		t.Fatal(err)
	}
	sl.submit(1, 40) // more than the fabric has
	sl.holdErr[1] = fmt.Errorf("scontrol update JobId=1: Requested partition configuration not available now")
	sl.submit(2, 4)
	sl.submit(3, 5)
	sl.submit(4, 2)
	if err := a.Round(ctx); err != nil {
		t.Fatalf("a bad job ended the round: %v", err)
	}
	if sl.jobs[2].State != "RUNNING" {
		t.Fatalf("job 2 after the refused job 1: %+v", sl.jobs[2])
	}
	for range 5 {
		if err := a.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Job 1 no longer takes a place in the window: 3 and 4 were placed
	// (window 2) in the next round.
	if sl.jobs[3].State != "RUNNING" || sl.jobs[4].State != "RUNNING" {
		t.Fatalf("jobs 3, 4 behind a refused job: %+v %+v", sl.jobs[3], sl.jobs[4])
	}
	checkPinned(t, svc, sl, names)
	if got := counter(t, reg, "icn_slurm_agent_decisions_total", "refused"); got != 1 {
		t.Fatalf("refused decisions: %v after 6 rounds with one refused job, want 1", got)
	}
	if got := counter(t, reg, "icn_slurm_agent_decisions_total", "placed"); got != 3 {
		t.Fatalf("placed decisions: %v, want 3", got)
	}
	// Transit allowance ⌈0.6·m⌉: 3 for 4 nodes, 3 for 5, 2 for 2.
	running, _ := svc.Jobs(false)
	want := map[string]int{"slurm-2": 3, "slurm-3": 3, "slurm-4": 2}
	for _, r := range running {
		if w, ok := want[r.Name]; ok && r.TransitLimit != w {
			t.Fatalf("%s: transit limit %d, want %d (⌈0.6·%d⌉)", r.Name, r.TransitLimit, w, r.Nodes)
		}
	}
	if !strings.Contains(log.String(), " ms (") || strings.Contains(log.String(), "0.00 s") {
		t.Fatalf("decision times not in milliseconds:\n%s", log.String())
	}
	// A job that waits is counted once however many rounds it waits.
	sl.submit(5, 16)
	for range 3 {
		a.Round(ctx)
	}
	if got := counter(t, reg, "icn_slurm_agent_decisions_total", "wait"); got != 1 {
		t.Fatalf("wait decisions: %v for one job over 3 rounds, want 1", got)
	}
}

// TestAgentHolds: a job its user holds is left held (and shown as the
// user's hold) until the user releases it, then placed; a job held for
// icn is shown as Slurm's admin hold; a job found pending without a hold
// or placement (requeued after its placement ended) is held for icn and
// then placed.
func TestAgentHolds(t *testing.T) {
	ctx := context.Background()
	svc, cl := testService(t, "torus:4x4")
	names := torusNames(16)
	sl := newFakeSlurm(names)
	reg := prometheus.NewRegistry()
	a, err := New(ctx, Config{Partition: "torus", Window: 4, Registry: reg}, sl, cl)
	if err != nil {
		t.Fatal(err)
	}
	sl.submit(1, 16) // fills the fabric
	sl.submit(2, 2)
	sl.jobs[2].Comment = CommentUserHold
	sl.submit(3, 2) // waits behind job 1
	for range 2 {
		if err := a.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if j := sl.jobs[2]; j.State != "PENDING" || j.Reason != "JobHeldUser" || j.Comment != CommentUserHold {
		t.Fatalf("user-held job 2: %+v", j)
	}
	if j := sl.jobs[3]; j.State != "PENDING" || j.Reason != "JobHeldAdmin" || !strings.HasPrefix(j.Comment, "icn: waiting") {
		t.Fatalf("job 3 waiting for icn: %+v", j)
	}
	delete(sl.jobs, 1)
	a.Round(ctx)
	a.Round(ctx)
	if sl.jobs[2].State != "PENDING" || len(sl.pinned[2]) != 0 {
		t.Fatalf("user-held job 2 placed while held: %+v", sl.jobs[2])
	}
	// The user releases job 2: the script turns the release into icn's
	// hold (comment back to waiting); the agent places it.
	sl.jobs[2].Comment = CommentWaiting
	a.Round(ctx)
	if sl.jobs[2].State != "RUNNING" {
		t.Fatalf("job 2 after its user released it: %+v", sl.jobs[2])
	}
	// Job 3 was requeued after its placement ended: pending, not held.
	sl.jobs[3] = &Job{ID: 3, State: "PENDING", Nodes: 2, Reason: "BeginTime", Comment: "icn: job 9"}
	for _, r := range must(svc.Jobs(false)) {
		if r.Name == "slurm-3" {
			svc.Release("test", r.ID)
		}
	}
	sl.pinned[3] = nil
	a.Round(ctx)
	if got := counter(t, reg, "icn_slurm_agent_unplaced_total", ""); got != 1 {
		t.Fatalf("unplaced: %v, want 1", got)
	}
	if sl.jobs[3].State != "PENDING" || sl.jobs[3].Reason != "JobHeldAdmin" {
		t.Fatalf("requeued job 3 not held for icn: %+v", sl.jobs[3])
	}
	a.Round(ctx)
	if sl.jobs[3].State != "RUNNING" {
		t.Fatalf("job 3 not placed again: %+v", sl.jobs[3])
	}
	checkPinned(t, svc, sl, names)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestAgentOwnsItsNodes: the agent refuses to start, and its rounds
// refuse to place, while a node of the partition is in another
// partition, naming the nodes and the partition; AllowSharedNodes lets
// it start.
func TestAgentOwnsItsNodes(t *testing.T) {
	ctx := context.Background()
	_, cl := testService(t, "torus:4x4")
	names := torusNames(16)
	sl := newFakeSlurm(names)
	sl.parts[names[3]] = []string{"torus", "plain"}
	sl.parts[names[4]] = []string{"plain", "torus"}
	_, err := New(ctx, Config{Partition: "torus"}, sl, cl)
	if err == nil || !strings.Contains(err.Error(), "nid[03-04]") || !strings.Contains(err.Error(), "partition plain") {
		t.Fatalf("shared nodes: %v", err)
	}
	a, err := New(ctx, Config{Partition: "torus", AllowSharedNodes: true}, sl, cl)
	if err != nil {
		t.Fatal(err)
	}
	sl.submit(1, 2)
	if err := a.Round(ctx); err != nil || sl.jobs[1].State != "RUNNING" {
		t.Fatalf("with shared nodes allowed: %v %+v", err, sl.jobs[1])
	}
	sl.parts[names[3]] = []string{"torus"}
	sl.parts[names[4]] = []string{"torus"}
	a, err = New(ctx, Config{Partition: "torus"}, sl, cl)
	if err != nil {
		t.Fatal(err)
	}
	sl.parts[names[7]] = []string{"torus", "debug"}
	sl.submit(2, 2)
	if err := a.Round(ctx); err == nil || !strings.Contains(err.Error(), "debug") || sl.jobs[2].State != "PENDING" {
		t.Fatalf("a node shared after the start: %v %+v", err, sl.jobs[2])
	}
}

// TestAgentReservation: while the window's head waits, a later job
// starts only if it ends, by its time limit, by the head's reservation
// (the earliest time the head has a placement when the running jobs end
// by their limits); the head's comment says the reservation, the others'
// why they wait.
func TestAgentReservation(t *testing.T) {
	ctx := context.Background()
	svc, cl := testService(t, "torus:4x4")
	names := torusNames(16)
	sl := newFakeSlurm(names)
	a, err := New(ctx, Config{Partition: "torus", Window: 4}, sl, cl)
	if err != nil {
		t.Fatal(err)
	}
	limit := func(id int, d time.Duration) { sl.jobs[id].TimeLimit = d }
	sl.submit(1, 12)
	limit(1, 100*time.Second)
	a.Round(ctx)
	if sl.jobs[1].State != "RUNNING" {
		t.Fatalf("job 1: %+v", sl.jobs[1])
	}
	sl.submit(2, 8) // waits for job 1's nodes: the head
	limit(2, 60*time.Second)
	sl.submit(3, 2) // ends before job 1 can have ended
	limit(3, 30*time.Second)
	sl.submit(4, 2) // would run past the reservation
	limit(4, 500*time.Second)
	sl.submit(5, 2) // no time limit
	a.Round(ctx)
	by := sl.jobs[1].Start.Add(100 * time.Second)
	want := time.Unix(by.Unix(), 0)
	if want.Before(by) {
		want = want.Add(time.Second)
	}
	if c := sl.jobs[2].Comment; sl.jobs[2].State != "PENDING" || !strings.Contains(c, "reserved to start by "+want.UTC().Format("15:04:05")+" UTC") {
		t.Fatalf("head job 2: %+v (want a reservation at %v)", sl.jobs[2], want)
	}
	if sl.jobs[3].State != "RUNNING" {
		t.Fatalf("job 3, ending before the reservation, did not start: %+v", sl.jobs[3])
	}
	for _, id := range []int{4, 5} {
		if j := sl.jobs[id]; j.State != "PENDING" || !strings.HasPrefix(j.Comment, "icn: waiting behind job 2") {
			t.Fatalf("job %d started ahead of the head or does not say why it waits: %+v", id, j)
		}
	}
	checkPinned(t, svc, sl, names)
	// Job 1 ends: the head starts, then the others.
	delete(sl.jobs, 1)
	delete(sl.jobs, 3)
	a.Round(ctx)
	a.Round(ctx)
	for _, id := range []int{2, 4, 5} {
		if sl.jobs[id].State != "RUNNING" {
			t.Fatalf("job %d after job 1 ended: %+v", id, sl.jobs[id])
		}
	}
}

// squeue's time limits and start times as the agent reads them.
func TestParseSqueue(t *testing.T) {
	for s, want := range map[string]time.Duration{"1:00": time.Minute, "10:00": 10 * time.Minute, "1:00:00": time.Hour,
		"2-03:04:05": 51*time.Hour + 4*time.Minute + 5*time.Second, "30": 30 * time.Minute, "UNLIMITED": 0, "INVALID": 0, "": 0, "1:2:3:4": 0} {
		if got := parseTimeLimit(s); got != want {
			t.Errorf("parseTimeLimit(%q) = %v, want %v", s, got, want)
		}
	}
	jobs, err := parseSqueue("7|RUNNING|2|None|nid[00-01]|(null)|1:00|2026-01-02T03:04:05|icn: a|b\n8|PENDING|4|JobHeldAdmin||(null)|UNLIMITED|N/A|(null)\n9_1|PENDING|1|x||||N/A|\n")
	if err != nil || len(jobs) != 2 {
		t.Fatalf("%v %+v", err, jobs)
	}
	if j := jobs[0]; j.TimeLimit != time.Minute || j.Start.Format("2006-01-02T15:04:05") != "2026-01-02T03:04:05" || j.Comment != "icn: a|b" || j.ReqNodes != "" {
		t.Fatalf("job 7: %+v", j)
	}
	if j := jobs[1]; j.TimeLimit != 0 || !j.Start.IsZero() || j.Comment != "" {
		t.Fatalf("job 8: %+v", j)
	}
	if _, err := parseSqueue("7|RUNNING|2\n"); err == nil {
		t.Fatal("a short line was accepted")
	}
}

// submitRecorder is the fabric manager, recording the transit allowance
// of every placement the agent asks for.
type submitRecorder struct {
	*Client
	transit map[string]int
}

func (r *submitRecorder) Submit(ctx context.Context, req client.JobRequest) (*client.JobRecord, error) {
	r.transit[req.Name] = req.Transit
	return r.Client.Submit(ctx, req)
}

// The agent asks for ⌈--transit·m⌉ transit nodes (0 for none), as every
// command rounds a transit fraction (cmd/icn's TestTransitFracSameEverywhere
// has the same table), and refuses fractions outside 0..1.
func TestAgentTransitFractions(t *testing.T) {
	ctx := context.Background()
	sizes := []int{1, 2, 3, 4, 5, 8, 10}
	for _, c := range []struct {
		frac float64
		want []int // T for each of sizes
	}{
		{0, []int{0, 0, 0, 0, 0, 0, 0}},
		{0.25, []int{1, 1, 1, 1, 2, 2, 3}},
		{0.6, []int{1, 2, 2, 3, 3, 5, 6}},
		{1, []int{1, 2, 3, 4, 5, 8, 10}},
	} {
		_, cl := testService(t, "torus:8x8x2")
		sl := newFakeSlurm(torusNames(128))
		rec := &submitRecorder{Client: cl, transit: map[string]int{}}
		a, err := New(ctx, Config{Partition: "torus", Window: len(sizes), Transit: c.frac}, sl, rec)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range sizes {
			sl.submit(i+1, m)
		}
		if err := a.Round(ctx); err != nil {
			t.Fatal(err)
		}
		for i, m := range sizes {
			name := fmt.Sprintf("slurm-%d", i+1)
			if got, ok := rec.transit[name]; !ok || got != c.want[i] {
				t.Errorf("--transit %g, %d nodes: asked for %d transit nodes (asked: %v), want %d", c.frac, m, got, ok, c.want[i])
			}
			if got := a.cfg.TransitLimit(m); got != c.want[i] {
				t.Errorf("Config{Transit: %g}.TransitLimit(%d) = %d, want %d", c.frac, m, got, c.want[i])
			}
		}
	}
	for _, frac := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := New(ctx, Config{Partition: "torus", Transit: frac}, nil, nil); err == nil || !strings.Contains(err.Error(), "outside 0..1") {
			t.Errorf("transit fraction %g: %v, want refused", frac, err)
		}
	}
}

// The agent asks the fabric manager for the algorithm it was given
// (improved by default; baseline for seed 001's comparisons), and the
// fabric manager's records say which one placed each job.
func TestAgentAlgo(t *testing.T) {
	ctx := context.Background()
	for _, algo := range []alloc.Algo{"", alloc.Baseline, alloc.Improved} {
		_, cl := testService(t, "torus:4x4x2")
		sl := newFakeSlurm(torusNames(32))
		a, err := New(ctx, Config{Partition: "torus", Window: 2, Algo: algo}, sl, cl)
		if err != nil {
			t.Fatal(err)
		}
		sl.submit(1, 4)
		sl.submit(2, 2) // sizes whose rectangles the baseline places without transit nodes
		if err := a.Round(ctx); err != nil {
			t.Fatal(err)
		}
		want := algo
		if want == "" {
			want = alloc.Improved
		}
		jobs, err := cl.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 2 {
			t.Fatalf("algo %q: %d jobs placed, want 2", algo, len(jobs))
		}
		for _, j := range jobs {
			if j.Algo != string(want) {
				t.Errorf("algo %q: job %s placed by %q", algo, j.Name, j.Algo)
			}
		}
	}
	if _, err := New(ctx, Config{Partition: "torus", Algo: "fastest"}, nil, nil); err == nil {
		t.Error("an unknown algorithm was accepted")
	}
}
