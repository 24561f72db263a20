package fm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/routing"
)

// firstLink names the link a job's first route leaves its source on.
func firstLink(t *testing.T, j *client.JobRecord) string {
	t.Helper()
	for _, r := range mustTable(j).Routes {
		if len(r.Dirs) > 0 {
			parts := make([]string, len(r.Src))
			for i, c := range r.Src {
				parts[i] = fmt.Sprint(c)
			}
			return strings.Join(parts, ".") + r.Dirs[0]
		}
	}
	t.Fatal("job has no route with a step")
	return ""
}

// checkJobsRouted: every running job either verifies on the current
// fabric or is broken with a reason.
func checkJobsRouted(t *testing.T, s *Service) {
	t.Helper()
	jobs, _ := s.Jobs(false)
	for _, j := range jobs {
		ok, problem, err := s.VerifyJob(j.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case j.Routing == "broken" && (j.Problem == "" || j.Reachable):
			t.Errorf("job %d broken without a reason: %+v", j.ID, j)
		case j.Routing != "broken" && !ok:
			t.Errorf("job %d (%s) does not verify: %s", j.ID, j.RoutingName(), problem)
		}
	}
}

// TestFailureReroutesJobs: a failed link a job's table uses gives it a
// new verified table on the same nodes (or marks it broken with the
// pair), atomically with the failure record; a failed node of a job
// breaks it; migrate places it anew; a repair restores broken jobs.
func TestFailureReroutesJobs(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:4x4x4", nil)
	var jobs []*client.JobRecord
	for i := 0; i < 6; i++ {
		j, err := s.Submit("t", client.JobRequest{Nodes: 6, Transit: 3})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	link := firstLink(t, jobs[0])
	res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link})
	if err != nil {
		t.Fatal(err)
	}
	var e0 *client.JobEffect
	for i := range res.Jobs {
		if res.Jobs[i].ID == jobs[0].ID {
			e0 = &res.Jobs[i]
		}
	}
	if e0 == nil || (e0.Result != "rerouted" && e0.Result != "broken") {
		t.Fatalf("failing %s, used by job %d: effects %+v", link, jobs[0].ID, res.Jobs)
	}
	if e0.Result == "broken" && (e0.Unreachable == nil || e0.Problem == "") {
		t.Fatalf("broken without the unreachable pair: %+v", e0)
	}
	checkJobsRouted(t, s)
	j0, _ := s.Job(jobs[0].ID)
	if !slices.Equal(j0.Active, jobs[0].Active) {
		t.Fatal("re-routing moved the job")
	}
	ev, _ := s.Audit(0, 1000)
	last := ev[len(ev)-1]
	if last.Action != "link.fail" || !strings.Contains(string(last.Detail), fmt.Sprintf(`"id":%d`, jobs[0].ID)) {
		t.Fatalf("audit entry: %s %s", last.Action, last.Detail)
	}

	// A failed active node breaks its job; migrate moves it.
	victim := jobs[1]
	res, err = s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: victim.Active[0]})
	if err != nil || !slices.Contains(res.BrokenJobs, victim.ID) {
		t.Fatalf("node failure: %+v %v", res, err)
	}
	vb, _ := s.Job(victim.ID)
	if vb.Routing != "broken" || vb.Reachable || vb.Problem == "" {
		t.Fatalf("job on a failed node: %+v", vb)
	}
	checkJobsRouted(t, s)
	nb := 0
	all, _ := s.Jobs(false)
	for _, j := range all {
		if j.Routing == "broken" {
			nb++
		}
	}
	if got := metricValue(t, s, "icn_jobs_broken"); nb < 1 || got != fmt.Sprint(nb) {
		t.Fatalf("icn_jobs_broken = %s, %d jobs broken", got, nb)
	}
	m, err := s.Migrate("t", victim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(m.Active, victim.Active[0]) || m.Routing != "migrated" || !m.Reachable {
		t.Fatalf("migrated job: %+v", m)
	}
	checkJobsRouted(t, s)
	checkDisjoint(t, s)
	if _, err := s.Migrate("t", 999); err == nil {
		t.Fatal("migrating an unknown job succeeded")
	}

	// Break another job, then repair: it is routed again first.
	other := jobs[2]
	if res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: other.Active[1]}); err != nil || !slices.Contains(res.BrokenJobs, other.ID) {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: other.Active[1], Repair: true})
	if err != nil || len(res.Jobs) == 0 || res.Jobs[0].ID != other.ID || res.Jobs[0].Result != "rerouted" {
		t.Fatalf("repair did not re-route the broken job first: %+v %v", res, err)
	}
	if j, _ := s.Job(other.ID); j.Routing != "" || !j.Reachable {
		t.Fatalf("repaired job: %+v", j)
	}
	checkJobsRouted(t, s)
	// Leave one job broken on a failed node across the restart.
	kept := jobs[3]
	if res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: kept.Active[0]}); err != nil || !slices.Contains(res.BrokenJobs, kept.ID) {
		t.Fatalf("%+v %v", res, err)
	}
	s.Close()

	// After a restart the records are as committed.
	s2, _ := openTest(t, dir, "", nil)
	defer s2.Close()
	checkJobsRouted(t, s2)
	checkDisjoint(t, s2)
	if j, _ := s2.Job(kept.ID); j.Routing != "broken" {
		t.Fatalf("broken job after restart: %+v", j)
	}
	if _, err := s2.Submit("t", client.JobRequest{Nodes: 60}); err == nil {
		t.Fatal("placed a job over a failed node")
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"jobs"`) {
		t.Fatal("failure result without jobs")
	}
}

// metricValue scrapes one unlabelled metric from the service's /metrics.
func metricValue(t *testing.T, s *Service, name string) string {
	t.Helper()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// TestFailureRepairsTableInPlace: a failed link inside a job whose rings
// stay whole elsewhere is repaired in place (routing.RepairStored): the
// job keeps every route that did not cross the link, its routes are kept
// in version 3 of the stored form, it verifies whole on the new fabric,
// its link loads are those counted again from its routes, and it reads
// back the same after a restart. A second failure repairs it again.
func TestFailureRepairsTableInPlace(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:6x6x4", nil)
	j, err := s.Submit("t", client.JobRequest{Nodes: 72})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		j, _ = s.Job(j.ID)
		before := mustTable(j)
		jl := s.tableLinks(s.g, j)
		busiest := 0
		for i := range jl.links {
			if jl.routes[i] > jl.routes[busiest] {
				busiest = i
			}
		}
		link := s.g.LinkName(int(jl.links[busiest]))
		res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 1 || res.Jobs[0].Result != "rerouted" {
			t.Fatalf("failure of %s: effects %+v", link, res.Jobs)
		}
		s.mu.RLock()
		kept := s.jobs[j.ID]
		s.mu.RUnlock()
		if v := routing.StoredRoutesVersion(kept.StoredRoutes); kept.Table.Routes != nil || v != 3 {
			t.Fatalf("round %d: routes in version %d, want a repair's 3", round, v)
		}
		checkJobsRouted(t, s)
		got := mustTable(kept)
		same := 0
		for i, r := range before.Routes {
			crosses := false
			walkTableLinks(s.g, &routing.TableJSON{Dims: before.Dims, Routes: []routing.RouteJSON{r}}, func(l int) {
				crosses = crosses || s.g.LinkName(l) == link
			})
			if !crosses && slices.Equal(r.Dirs, got.Routes[i].Dirs) {
				same++
			}
		}
		if same < len(before.Routes)*9/10 {
			t.Fatalf("round %d: %d of %d routes kept", round, same, len(before.Routes))
		}
		var lc linkCounter
		if fresh, cached := lc.count(s.dirsOf(s.g), kept.Table, kept.StoredRoutes), s.tableLinks(s.g, kept); !reflect.DeepEqual(fresh.routes, cached.routes) || !reflect.DeepEqual(fresh.ab, cached.ab) || !reflect.DeepEqual(fresh.links, cached.links) {
			t.Fatalf("round %d: the repaired loads differ from those counted from the routes", round)
		}
		t.Logf("failure of %s: %d of %d routes kept, π_max %d → %d", link, same, len(before.Routes), before.Figures.PiMax, got.Figures.PiMax)
	}
	j, _ = s.Job(j.ID)
	want := mustTable(j)
	s.Close()
	s, _ = openTest(t, dir, "torus:6x6x4", nil)
	defer s.Close()
	back, _ := s.Job(j.ID)
	if !reflect.DeepEqual(mustTable(back).Routes, want.Routes) {
		t.Fatal("the repaired routes read back differ")
	}
	checkJobsRouted(t, s)
}

// TestFailedTransitNodeLeavesJob: a failed node a job holds as a transit
// node leaves the job's set instead of breaking the job (no process of
// the job runs there). The job gets a verified table on the rest of its
// nodes, with free nodes added where it needs them, or is broken with
// the unreachable pair when none is left (a full torus); in every case
// its record no longer names the node, the node is held by no job, and
// so it stays across a restart; repaired, the node is free again.
func TestFailedTransitNodeLeavesJob(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			dir := t.TempDir()
			s, _ := openTest(t, dir, "torus:4x4x4", nil)
			var withTransit []*client.JobRecord
			for i := 0; ; i++ {
				if !full && len(withTransit) == 1 {
					break
				}
				j, err := s.Submit("t", client.JobRequest{Nodes: 5 + i%3, Transit: 4})
				if errors.Is(err, client.ErrConflict) || errors.Is(err, client.ErrBadRequest) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(j.TransitNodes) > 0 {
					withTransit = append(withTransit, j)
				}
			}
			if len(withTransit) == 0 {
				t.Fatal("no job with transit nodes")
			}
			for full {
				// The rest in one-node jobs: no free node is left.
				if _, err := s.Submit("t", client.JobRequest{Nodes: 1}); err != nil {
					if countFree(s.Fabric()) != 0 {
						t.Fatal(err)
					}
					break
				}
			}
			results := map[client.RouteState]int{}
			for _, j := range withTransit {
				node := j.TransitNodes[0]
				res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Node: node})
				if err != nil {
					t.Fatal(err)
				}
				var e *client.JobEffect
				for i := range res.Jobs {
					if res.Jobs[i].ID == j.ID {
						e = &res.Jobs[i]
					}
				}
				if e == nil {
					t.Fatalf("failing transit node %s of job %d: no effect on it", node, j.ID)
				}
				results[e.Result]++
				after, _ := s.Job(j.ID)
				switch {
				case e.Result == client.RouteBroken:
					// Kept, with the unreachable pair without it.
					if e.Unreachable == nil || len(e.TransitDropped) > 0 || !slices.Equal(after.TransitNodes, j.TransitNodes) {
						t.Errorf("job %d broken: %+v, transit %v", j.ID, e, after.TransitNodes)
					}
				case !slices.Equal(e.TransitDropped, []string{node}) || slices.Contains(after.TransitNodes, node) || !slices.Equal(after.Active, j.Active):
					t.Fatalf("job %d after its transit node %s failed: %+v, active %v transit %v", j.ID, node, e, after.Active, after.TransitNodes)
				}
				if len(after.TransitNodes) > j.TransitLimit+2 {
					t.Errorf("job %d holds %d transit nodes, allowance %d + 2", j.ID, len(after.TransitNodes), j.TransitLimit)
				}
				for _, n := range s.Fabric().Nodes {
					if holder := map[bool]int{true: j.ID}[e.Result == client.RouteBroken]; n.Name == node && (n.Job != holder || !n.Failed) {
						t.Errorf("failed node %s: job %d, failed %v", node, n.Job, n.Failed)
					}
				}
				checkJobsRouted(t, s)
				checkDisjoint(t, s)
			}
			t.Logf("results %v", results)
			if want := map[bool]client.RouteState{false: client.RouteRerouted, true: client.RouteBroken}[full]; results[want] == 0 {
				t.Errorf("no job %s after losing a transit node: %v", want, results)
			}
			before, _ := s.Jobs(false)
			s.Close()
			s2, _ := openTest(t, dir, "", nil)
			defer s2.Close()
			checkDisjoint(t, s2)
			checkJobsRouted(t, s2)
			again, _ := s2.Jobs(false)
			for i := range before {
				if !slices.Equal(before[i].TransitNodes, again[i].TransitNodes) {
					t.Errorf("job %d's transit nodes %v, after a restart %v", before[i].ID, before[i].TransitNodes, again[i].TransitNodes)
				}
			}
			node := withTransit[0].TransitNodes[0]
			if _, err := s2.ChangeFailure(context.Background(), "t", client.FailureChange{Node: node, Repair: true}); err != nil {
				t.Fatal(err)
			}
			holder := 0 // a broken job kept it
			if j, _ := s2.Job(withTransit[0].ID); slices.Contains(j.TransitNodes, node) {
				holder = j.ID
			}
			for _, n := range s2.Fabric().Nodes {
				if n.Name == node && (n.Job != holder || n.Failed) {
					t.Errorf("repaired node %s: job %d (want %d), failed %v", node, n.Job, holder, n.Failed)
				}
			}
			checkJobsRouted(t, s2)
			checkDisjoint(t, s2)
		})
	}
}

func countFree(f client.FabricView) int {
	n := 0
	for _, v := range f.Nodes {
		if v.Job == 0 && !v.Failed {
			n++
		}
	}
	return n
}
