package slurmagent

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/sched"
)

// fakeSlurm is a partition in memory: pinning a held job starts it on
// the pinned nodes (as slurmctld does once the hold is released).
type fakeSlurm struct {
	jobs    map[int]*Job
	nodes   map[string]*Node
	pinErr  error
	pinned  map[int][]string
	drained []string
}

func newFakeSlurm(names []string) *fakeSlurm {
	f := &fakeSlurm{jobs: map[int]*Job{}, nodes: map[string]*Node{}, pinned: map[int][]string{}}
	for _, n := range names {
		f.nodes[n] = &Node{Name: n, State: "idle"}
	}
	return f
}

func (f *fakeSlurm) submit(id, nodes int) {
	f.jobs[id] = &Job{ID: id, State: "PENDING", Nodes: nodes, Reason: "JobHeldUser"}
}

func (f *fakeSlurm) Jobs(ctx context.Context, partition string) ([]Job, error) {
	var out []Job
	for _, j := range f.jobs {
		out = append(out, *j)
	}
	slices.SortFunc(out, func(a, b Job) int { return a.ID - b.ID })
	return out, nil
}

func (f *fakeSlurm) Pin(ctx context.Context, id int, hostlist string, count int, comment string) error {
	if f.pinErr != nil {
		return f.pinErr
	}
	names, err := sched.ExpandHostlist(hostlist)
	if err != nil || len(names) != count {
		return fmt.Errorf("bad pin %q %d", hostlist, count)
	}
	j := f.jobs[id]
	j.State, j.Reason, j.NodeList, j.Comment = "RUNNING", "None", hostlist, comment
	f.pinned[id] = names
	return nil
}

func (f *fakeSlurm) Annotate(ctx context.Context, id int, comment string) error {
	f.jobs[id].Comment = comment
	return nil
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
	if sl.jobs[5].State != "PENDING" || !strings.HasPrefix(sl.jobs[5].Comment, "icn: waiting:") {
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
