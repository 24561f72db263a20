package fm

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
)

// openBudgeted opens a service on torus:4x4x4 in dir with the given
// failure budget and table builder hooks.
func openBudgeted(t *testing.T, dir string, budget time.Duration, hooks tableHooks) *Service {
	t.Helper()
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "torus:4x4x4", NewRouting: AngaraRouting("angara*"),
		MulticastTimeout: 5 * time.Second, FailureBudget: budget, tables: hooks})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitBuilt waits until no job of s has a pending table (the builder runs
// on its own), at most a minute.
func waitBuilt(t *testing.T, s *Service) {
	t.Helper()
	for end := time.Now().Add(time.Minute); s.Stats().JobsPending > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d tables still pending after a minute", s.Stats().JobsPending)
		}
	}
}

// effectOn returns the effect of a failure change on job id (nil: none).
func effectOn(res *client.FailureResult, id int) *client.JobEffect {
	for i := range res.Jobs {
		if res.Jobs[i].ID == id {
			return &res.Jobs[i]
		}
	}
	return nil
}

// TestFailureBudgetDefersTables: under a failure budget that has always
// ended (1 ns), a failure answers with every job that needs a new table
// pending (no table, RoutingNext rerouted; jobs the failure does not
// reach keep theirs), and the table builder then gives each the outcome
// a service without a budget gives at once. Two services take the same
// placements and the same failures side by side: after a failed transit
// node (the job dropped it, with free nodes added as transit where its
// own have no route left, or broken keeping it) both end with the same
// records, tables included; after a failed link, with jobs re-routed or
// broken alike. Every step keeps the nodes disjoint in memory and in the
// store, and every job verifies or is broken with its reason; a restart
// while a deferred table is pending builds it.
func TestFailureBudgetDefersTables(t *testing.T) {
	dir := t.TempDir()
	now := openBudgeted(t, t.TempDir(), -1, tableHooks{})
	defer now.Close()
	release := make(chan struct{})
	later := openBudgeted(t, dir, time.Nanosecond, tableHooks{hold: func(ctx context.Context, id int) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}})
	var jobs []*client.JobRecord
	place := func(i int) *client.JobRecord {
		req := client.JobRequest{Nodes: 5 + i%3, Transit: 4}
		a, errA := now.Submit("t", req)
		b, errB := later.Submit("t", req)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("placement %d: %v and %v", i, errA, errB)
		}
		if errA != nil {
			t.Fatal(errA)
		}
		if !slices.Equal(a.Active, b.Active) || !slices.Equal(a.TransitNodes, b.TransitNodes) {
			t.Fatalf("placement %d differs: %v+%v and %v+%v", i, a.Active, a.TransitNodes, b.Active, b.TransitNodes)
		}
		jobs = append(jobs, a)
		return a
	}
	// The first job with transit nodes loses one while free nodes are
	// many; then more jobs are placed, and lose a transit node or a link
	// their first route takes.
	var changes, links []client.FailureChange
	for i := 0; len(changes) == 0; i++ {
		if j := place(i); len(j.TransitNodes) > 0 {
			changes = append(changes, client.FailureChange{Node: j.TransitNodes[0]})
		}
	}
	placeMore := func() {
		for i := len(jobs); i < 7; i++ {
			j := place(i)
			if len(j.TransitNodes) > 0 {
				changes = append(changes, client.FailureChange{Node: j.TransitNodes[0]})
			} else {
				links = append(links, client.FailureChange{Link: firstLink(t, j)})
			}
		}
		changes = append(changes, links...)
	}
	results := map[client.RouteState]int{}
	builderAdded, builderDropped := 0, 0    // transit nodes the builder added, failed ones it dropped
	var labels []string                     // the changes so far, as Affected names them
	deferredBy := map[int]map[string]bool{} // job → the changes that deferred its table
	for k := 0; k < len(changes); k++ {
		ch := changes[k]
		before := map[int]*client.JobRecord{}
		all, _ := later.Jobs(false)
		for _, j := range all {
			before[j.ID] = j
		}
		resNow, err := now.ChangeFailure(context.Background(), "t", ch)
		if err != nil {
			t.Fatal(err)
		}
		resLater, err := later.ChangeFailure(context.Background(), "t", ch)
		if err != nil {
			t.Fatal(err)
		}
		// The answer: every job the change re-routed or broke at once is
		// pending, and the same jobs are affected.
		if !slices.Equal(resNow.AffectedJobs, resLater.AffectedJobs) {
			t.Fatalf("%+v: jobs affected %v at once, %v deferred", ch, resNow.AffectedJobs, resLater.AffectedJobs)
		}
		deferred := 0
		subject, err := applyChange(&store.FabricRecord{}, now.base, ch)
		if err != nil {
			t.Fatal(err)
		}
		label := actionName(ch) + " " + subject
		labels = append(labels, label)
		for _, e := range resLater.Jobs {
			en := effectOn(resNow, e.ID)
			j, _ := later.Job(e.ID)
			switch {
			case e.Result == client.RoutePending:
				deferred++
				if deferredBy[e.ID] == nil {
					deferredBy[e.ID] = map[string]bool{}
				}
				deferredBy[e.ID][label] = true
				if e.State != "pending" || j.Routing != client.RoutePending || j.RoutingNext != client.RouteRerouted || j.Table != nil {
					t.Fatalf("%+v: deferred job %d: effect %+v, record routing %q next %q table %v", ch, e.ID, e, j.Routing, j.RoutingNext, j.Table != nil)
				}
				if ok, _, _ := later.VerifyJob(e.ID); ok {
					t.Fatalf("job %d verifies while its table is pending", e.ID)
				}
			case e.Result != en.Result || e.Problem != en.Problem:
				// Decided without a table's build (a failed active node).
				t.Fatalf("%+v: job %d %+v at once, %+v deferred", ch, e.ID, en, e)
			}
			if e.Result == client.RoutePending && len(e.TransitDropped) > 0 {
				t.Fatalf("%+v: deferred job %d dropped %v before its table was built", ch, e.ID, e.TransitDropped)
			}
		}
		if later.Stats().JobsPending != deferred {
			t.Fatalf("%d jobs pending, %d deferred", later.Stats().JobsPending, deferred)
		}
		checkDisjoint(t, later)
		if k == 0 {
			// A restart with the deferred tables pending builds them.
			if err := later.Close(); err != nil {
				t.Fatal(err)
			}
			close(release)
			later = openBudgeted(t, dir, time.Nanosecond, tableHooks{})
			defer later.Close()
		}
		waitBuilt(t, later)
		checkDisjoint(t, later)
		checkJobsRouted(t, later)
		for _, e := range resNow.Jobs {
			a, _ := now.Job(e.ID)
			b, _ := later.Job(e.ID)
			results[b.Routing]++
			// Deferred, a job names the change as affecting it.
			var affected []string
			for _, l := range labels {
				if slices.Contains(a.Affected, l) || deferredBy[e.ID][l] {
					affected = append(affected, l)
				}
			}
			if a.Routing != b.Routing || !slices.Equal(a.Active, b.Active) || !slices.Equal(affected, b.Affected) {
				t.Fatalf("%+v: job %d at once %q %v, built later %q %v", ch, e.ID, a.Routing, a.Affected, b.Routing, b.Affected)
			}
			if deferredBy[e.ID][label] && b.Routing == client.RouteRerouted {
				if ch.Node != "" && slices.Contains(before[e.ID].TransitNodes, ch.Node) {
					builderDropped++
				}
				for _, n := range b.TransitNodes {
					if !slices.Contains(before[e.ID].TransitNodes, n) {
						builderAdded++
					}
				}
			}
			if ch.Node == "" {
				continue // (at once, the table may be repaired in place)
			}
			// (A job broken at once keeps its old table; deferred, it had
			// none left.)
			if !slices.Equal(a.TransitNodes, b.TransitNodes) || a.Problem != b.Problem ||
				(a.Routing != client.RouteBroken && *a.Table.Figures != *b.Table.Figures) {
				t.Fatalf("%+v: job %d at once %v %q, built later %v %q", ch, e.ID, a.TransitNodes, a.Problem, b.TransitNodes, b.Problem)
			}
		}
		if fa, fb := countFree(now.Fabric()), countFree(later.Fabric()); fa != fb {
			t.Fatalf("%+v: %d free nodes at once, %d built later", ch, fa, fb)
		}
		if k == 0 {
			placeMore()
		}
	}
	t.Logf("outcomes %v; the builder added %d transit nodes and dropped %d failed ones", results, builderAdded, builderDropped)
	if results[client.RouteRerouted] == 0 || builderAdded == 0 || builderDropped == 0 {
		t.Fatalf("the builder re-routed no job, added no transit node or dropped no failed one: %v, %d added, %d dropped", results, builderAdded, builderDropped)
	}
}
