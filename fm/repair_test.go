package fm

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// failBetween places a 2-node job on torus:4x4 and fails the link
// between its nodes, which leaves the pair without a legal route inside
// the job's nodes.
func failBetween(t *testing.T, extra int) (*Service, *client.JobRecord, *client.FailureResult, string) {
	t.Helper()
	dir := t.TempDir()
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "torus:4x4", NewRouting: AngaraRouting("angara*"), RepairExtra: extra})
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.Submit("test", client.JobRequest{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.g.NodeByName(j.Active[0]), s.g.NodeByName(j.Active[1])
	link := ""
	for _, c := range s.g.Out(a) {
		if s.g.Dst(int(c)) == b {
			link = s.g.LinkName(int(c) >> 1)
		}
	}
	if link == "" {
		t.Fatalf("job nodes %v are not neighbours", j.Active)
	}
	res, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: link})
	if err != nil {
		t.Fatal(err)
	}
	return s, j, res, dir
}

// TestRepairAddsTransit: a failure that leaves a job's own nodes without a
// legal route adds free neighbours as transit nodes (the seed's remedy)
// instead of breaking the job: the job is rerouted with a verified table,
// holds the added nodes, and keeps them across a restart; with no extra
// transit allowed it is broken as before.
func TestRepairAddsTransit(t *testing.T) {
	s, j, res, dir := failBetween(t, 0)
	if len(res.Jobs) != 1 || res.Jobs[0].Result != "rerouted" || len(res.Jobs[0].TransitAdded) == 0 ||
		res.Jobs[0].State != "rerouted" || !slices.Equal(res.AffectedJobs, []int{j.ID}) || len(res.BrokenJobs) != 0 {
		t.Fatalf("failure result: %+v", res)
	}
	e := res.Jobs[0]
	if len(e.TransitAdded) > DefaultRepairExtra {
		t.Fatalf("%d transit nodes added, allowance %d", len(e.TransitAdded), DefaultRepairExtra)
	}
	got := s.jobs[j.ID]
	if got.Routing != "rerouted" || !slices.Equal(got.TransitNodes, e.TransitAdded) {
		t.Fatalf("job after the repair: %+v", got)
	}
	if ok, problem, _ := s.VerifyJob(j.ID); !ok {
		t.Fatalf("repaired table does not verify: %s", problem)
	}
	for _, n := range e.TransitAdded {
		if owner := s.state.Owner(s.g.NodeByName(n)); owner != j.ID {
			t.Fatalf("added transit node %s owned by %d", n, owner)
		}
	}
	s.Close()
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), NewRouting: AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	if after := s.jobs[j.ID]; after == nil || !slices.Equal(after.TransitNodes, e.TransitAdded) {
		t.Fatalf("after restart: %+v", after)
	}
	s.Close()

	s, j, res, dir = failBetween(t, -1)
	if len(res.Jobs) != 1 || res.Jobs[0].Result != "broken" || len(res.Jobs[0].TransitAdded) != 0 {
		t.Fatalf("without extra transit: %+v", res)
	}
	// The broken job keeps its table; its stored routes are read back
	// whole after a restart (the failure rewrote only the record).
	want := mustTable(s.jobs[j.ID])
	s.Close()
	s, _, err = Open(Config{DBPath: filepath.Join(dir, "fm.db"), NewRouting: AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	broken := s.jobs[j.ID]
	if broken == nil || broken.Routing != "broken" || !reflect.DeepEqual(mustTable(broken).Routes, want.Routes) || len(want.Routes) == 0 {
		t.Fatalf("broken job after a restart: %+v", broken)
	}
}

// countingRouting counts the tables re-verified.
type countingRouting struct {
	Routing
	checks *atomic.Int64
}

func (c countingRouting) VerifyTable(tf *routing.TableJSON) error {
	c.checks.Add(1)
	return c.Routing.VerifyTable(tf)
}

// TestFailureTouchesOnlyItsJobs: a failed link that no job's routes use
// re-checks no table; one that some jobs use re-checks exactly those, and
// the others keep their tables (which still verify).
func TestFailureTouchesOnlyItsJobs(t *testing.T) {
	var checks atomic.Int64
	angara := AngaraRouting("angara*")
	s, _, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:8x8x8",
		NewRouting: func(g *topology.Graph) (Routing, error) {
			r, err := angara(g)
			return countingRouting{r, &checks}, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 4 {
		if _, err := s.Submit("test", client.JobRequest{Nodes: 16, Transit: 4}); err != nil {
			t.Fatal(err)
		}
	}
	loads := s.LinkLoads()
	users := func(l int) (n int) {
		for _, j := range s.jobs {
			used := false
			walkTableLinks(s.g, mustTable(j), func(k int) { used = used || k == l })
			if used {
				n++
			}
		}
		return n
	}
	idle, busy := -1, -1
	for l, n := range loads {
		lk := s.g.Link(l)
		if n == 0 && idle < 0 && s.state.Available(int(lk.A)) && s.state.Available(int(lk.B)) {
			idle = l
		}
		if n > 0 && busy < 0 {
			busy = l
		}
	}
	if idle < 0 || busy < 0 {
		t.Fatal("no idle or no busy link")
	}
	checks.Store(0)
	res, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: s.g.LinkName(idle)})
	if err != nil || len(res.Jobs) != 0 || checks.Load() != 0 {
		t.Fatalf("idle link: %v, %+v, %d tables re-checked", err, res, checks.Load())
	}
	want := users(busy)
	before := map[int]*routing.TableJSON{}
	for id, j := range s.jobs {
		before[id] = j.Table
	}
	checks.Store(0)
	res, err = s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: s.g.LinkName(busy)})
	if err != nil {
		t.Fatal(err)
	}
	// The jobs whose routes cross the link are re-routed without
	// verifying their old tables (a route crosses the failed link); the
	// others keep theirs.
	if len(res.Jobs) != want || checks.Load() != 0 {
		t.Fatalf("link used by %d jobs: %d re-routed, %d old tables re-checked", want, len(res.Jobs), checks.Load())
	}
	for id, j := range s.jobs {
		i := slices.IndexFunc(res.Jobs, func(e client.JobEffect) bool { return e.ID == id })
		switch {
		case i < 0 && j.Table != before[id]:
			t.Fatalf("job %d: not touched, table replaced", id)
		case i >= 0 && res.Jobs[i].Result == "rerouted" && j.Table == before[id]:
			t.Fatalf("job %d: rerouted on its old table", id)
		case i >= 0 && res.Jobs[i].Result == "broken" && j.Routing != "broken":
			t.Fatalf("job %d: reported broken, is %q", id, j.Routing)
		}
	}
	for _, j := range s.jobs {
		if ok, problem, _ := s.VerifyJob(j.ID); !ok && j.Routing != "broken" {
			t.Fatalf("job %d does not verify after the failure: %s", j.ID, problem)
		}
	}
}

// TestReadsCachedPerVersion: link loads are computed once per version of
// the fabric and the jobs (the same answer is shared until a job or a
// failure changes), and follow every change.
func TestReadsCachedPerVersion(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	defer s.Close()
	f0 := s.FabricJSON()
	j, err := s.Submit("test", client.JobRequest{Nodes: 8})
	if err != nil {
		t.Fatal(err)
	}
	f1, f2 := s.FabricJSON(), s.FabricJSON()
	if &f1[0] != &f2[0] || bytes.Equal(f0, f1) || !bytes.Contains(f1, []byte(`"job": 1`)) {
		t.Error("fabric answer not shared within a version, or not renewed by a placement")
	}
	a, b := s.LinkLoads(), s.LinkLoads()
	if &a[0] != &b[0] {
		t.Error("link loads computed twice for one version")
	}
	sum := func(l []int) (n int) {
		for _, x := range l {
			n += x
		}
		return n
	}
	if sum(a) == 0 {
		t.Fatal("a running job loads no link")
	}
	if _, err := s.Release("test", j.ID); err != nil {
		t.Fatal(err)
	}
	if c := s.LinkLoads(); &c[0] == &a[0] || sum(c) != 0 {
		t.Errorf("link loads after the release: %d routes", sum(c))
	}
	m1, err := s.WaitMetrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: "0.0.0+X"}); err != nil {
		t.Fatal(err)
	}
	if m2, err := s.WaitMetrics(context.Background()); err != nil || reflect.DeepEqual(m1.Metrics, m2.Metrics) {
		t.Errorf("metrics unchanged by a failed link (%v)", err)
	}
}

// TestWalkTableLinksMatchesSteps: the link of every step found through
// the direction table equals the one found by following each step's
// channel out of its node, on 3D and 4D tori.
func TestWalkTableLinksMatchesSteps(t *testing.T) {
	for _, topo := range []string{"torus:4x4x4", "torus:6x4x2x2"} {
		s, _ := openTest(t, t.TempDir(), topo, nil)
		for _, m := range []int{5, 12, 16} {
			if _, err := s.Submit("test", client.JobRequest{Nodes: m, Transit: 3}); err != nil {
				t.Fatal(err)
			}
		}
		g, dims := s.g, s.g.Dims()
		for _, j := range s.jobs {
			var got, want []int
			walkTableLinks(g, mustTable(j), func(l int) { got = append(got, l) })
			for _, r := range mustTable(j).Routes {
				c := slices.Clone(r.Src)
				for _, d := range r.Dirs {
					dim, sign := topology.DimIndex(d[1:]), 1
					if d[0] == '-' {
						sign = -1
					}
					for _, ch := range g.Out(g.NodeAt(c)) {
						if dd, ss := g.Dir(int(ch)); dd == dim && ss == sign {
							want = append(want, int(ch)>>1)
							break
						}
					}
					c[dim] = (c[dim] + sign + dims[dim]) % dims[dim]
				}
			}
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("%s job %d: %d links walked, %d by steps", topo, j.ID, len(got), len(want))
			}
		}
		s.Close()
	}
}
