package fm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// ChangeFailure fails or repairs a link or node. Every running job whose
// table no longer verifies on the new fabric gets a new verified table on
// its own node set (rerouted), or else on its set with free nodes added
// as transit nodes, within its transit allowance plus Config.RepairExtra
// (rerouted, TransitAdded), or, if neither exists, is marked broken with
// the unreachable pair; a repair first re-routes broken jobs, then
// re-balances rerouted ones (back to RouteOriginal once no failure is
// left among their nodes). A table is verified again only where the
// change can affect it (recheckJob). The failure record and every job
// change are one transaction. The routing work runs on a snapshot,
// concurrently per job, without the service lock; reads and placements
// go on meanwhile.
//
// The re-routing stops when ctx ends or the service closes, and nothing
// is committed then (the error says which; ErrClosing for the latter).
// The multicast trees and the unicast tables follow the committed change
// before ChangeFailure returns; the unicast hook runs in the background
// and is not waited for.
func (s *Service) ChangeFailure(ctx context.Context, actor string, ch client.FailureChange) (*client.FailureResult, error) {
	if (ch.Link == "") == (ch.Node == "") {
		return nil, badRequest("give exactly one of link or node")
	}
	ctx, end, err := s.beginWrite(ctx, "the failure change was not made")
	if err != nil {
		return nil, err
	}
	defer end()
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	if ctx.Err() != nil {
		return nil, stopped(ctx, "the failure change was not made")
	}
	s.mu.RLock()
	rec, base, before := s.fabric, s.base, s.routing
	s.mu.RUnlock()
	rec.FailedLinks = slices.Clone(rec.FailedLinks)
	rec.FailedNodes = slices.Clone(rec.FailedNodes)
	subject, err := applyChange(&rec, base, ch)
	if err != nil {
		return nil, err
	}
	rec.Updated = s.cfg.Now().UTC()
	md, err := s.buildModel(rec, base)
	if err != nil {
		return nil, err
	}
	md.ctx = ctx
	rc := &recheckSpec{md: md, stop: ctx, repair: ch.Repair, label: actionName(ch) + " " + subject,
		touches: s.touchedBy(md, ch, subject), reaches: reachedBy(before, md, ch, subject),
		before: before, gone: goneChannels(md.g, ch, subject)}
	if b := s.cfg.FailureBudget; b > 0 && !ch.Repair {
		// The re-routing runs under the failure budget: a job not
		// re-routed when it ends is committed with a pending table.
		jm := *md
		var cancel context.CancelFunc
		jm.ctx, cancel = context.WithTimeout(ctx, b)
		defer cancel()
		rc.md, rc.budgeted = &jm, true
	}
	s.mu.RLock()
	placing := s.state != nil
	s.mu.RUnlock()
	if placing && md.routing == nil {
		// A torus that takes jobs must stay so (running jobs need it).
		return nil, fmt.Errorf("%w: after this change the fabric could not route jobs: %s", client.ErrConflict, md.noJobs)
	}
	if ch.Node != "" && !ch.Repair {
		rc.failedNode = subject
	}
	if placing && s.cfg.RepairExtra >= 0 {
		s.mu.RLock()
		rc.free = s.state.Clone()
		s.mu.RUnlock()
	}
	results := s.recheckRounds(rc) // returns holding commitMu
	if ctx.Err() != nil {
		// The re-routing may have stopped half way: commit nothing.
		s.commitMu.Unlock()
		return nil, stopped(ctx, "the failure change was not made")
	}
	res, err := s.commitFailure(ctx, actor, ch, subject, md, results)
	s.commitMu.Unlock()
	if err == nil && slices.ContainsFunc(res.Jobs, func(e client.JobEffect) bool { return e.Result == client.RoutePending }) {
		s.kickTables() // the deferred tables
	}
	if err == nil {
		// The new fabric's metrics, in the background.
		s.refreshMetrics()
		// Multicast trees follow the fabric (under changeMu, so in order).
		res.Groups = s.mc.fabricChanged(md.g, !ch.Repair)
		res.Unicast = s.refreshUnicast(md.g)
	}
	return res, err
}

// recheckRounds re-checks every running job on md: up to three rounds
// without a lock, each taking the jobs placed or migrated since the last,
// then a last round for any still new under commitMu.
//
// Lock contract: called with changeMu held (one fabric change at a time)
// and neither mu nor commitMu held. It takes mu for reading only to list
// the jobs; the routing work runs without any lock, so reads, placements
// and releases go on. It returns holding commitMu, after a last round
// under it: nothing commits between that round and the caller's commit,
// which must unlock commitMu.
func (s *Service) recheckRounds(rc *recheckSpec) map[int]recheckResult {
	done := map[int]*client.JobRecord{} // job version re-checked
	results := map[int]recheckResult{}
	pending := func() []*client.JobRecord {
		s.mu.RLock()
		defer s.mu.RUnlock()
		var todo []*client.JobRecord
		for id, j := range s.jobs {
			if done[id] != j {
				todo = append(todo, j)
			}
		}
		return todo
	}
	check := func(todo []*client.JobRecord) {
		for _, r := range s.recheck(rc, todo) {
			done[r.old.ID] = r.old
			results[r.old.ID] = r
		}
	}
	// Jobs placed or migrated meanwhile are re-checked in another round,
	// without any lock; the last round holds commitMu, so that nothing
	// commits between it and the failure's commit (reads go on). When
	// the change's context ends, no further round runs (the caller then
	// commits nothing).
	ctx := rc.stop
	for round := 0; round < 3 && ctx.Err() == nil; round++ {
		todo := pending()
		if len(todo) == 0 {
			break
		}
		if round == 0 {
			s.pruneLinks(todo)
		}
		check(todo)
	}
	s.commitMu.Lock()
	if todo := pending(); len(todo) > 0 && ctx.Err() == nil {
		check(todo)
	}
	return results
}

// recheckSpec is one failure change as the re-check of the jobs sees it.
type recheckSpec struct {
	// md is the fabric after the change; its context ends with the
	// failure budget (budgeted) or with stop, the change's own context
	// (when stop ends, nothing is committed).
	md       *model
	stop     context.Context
	budgeted bool
	repair   bool
	label    string       // the change, as the jobs' Affected lists name it
	free     *alloc.State // nodes a job may gain as transit (checked again at commit); nil: none
	// touches: a route of the job crosses the failure, or the job holds
	// the failed node (touchedBy); reaches: the change lies among the
	// job's nodes or changes the rule's turns there (reachedBy).
	touches, reaches func(*client.JobRecord) bool
	// before is the routing of the fabric before the change; gone the
	// channels a link failure took down (nil for other changes): the
	// tables whose routes cross them are repaired in place where they
	// can be (repairTable).
	before Routing
	gone   []int
	// failedNode names the node a node failure takes down ("" for other
	// changes): a job that holds it as a transit node drops it.
	failedNode string
}

// goneChannels returns the channels a failure takes away: the two of the
// link a link failure names, or every channel into and out of the node a
// node failure names (nil for a repair).
func goneChannels(g *topology.Graph, ch client.FailureChange, subject string) []int {
	if ch.Repair {
		return nil
	}
	if ch.Node != "" {
		vs, err := g.ParseNodes(subject)
		if err != nil || len(vs) != 1 {
			return nil
		}
		var gone []int
		for _, c := range g.Out(vs[0]) {
			gone = append(gone, int(c), int(c)^1)
		}
		return gone
	}
	ls, err := g.ParseLinks(subject)
	if err != nil || len(ls) != 1 {
		return nil
	}
	return []int{2 * ls[0], 2*ls[0] + 1}
}

type recheckResult struct {
	old, new *client.JobRecord // new is nil if the job is unchanged
	effect   client.JobEffect
	routes   []byte    // new's routes encoded for the store when it has a new table
	links    *jobLinks // what those routes put on the links
}

// recheck re-verifies jobs on the new model and re-routes those that need
// it, concurrently; broken jobs go first. Under a failure budget
// (rc.budgeted) it answers when the budget ends: the jobs not yet taken
// are checked then with the budget spent (one that needs a new table is
// deferred: RoutePending), and a job the failure crosses whose
// re-routing still runs after failureGrace is deferred without waiting
// for it (that work stops at its next check of the context, and its
// outcome is dropped); the checks of jobs it does not cross are waited
// for.
func (s *Service) recheck(rc *recheckSpec, jobs []*client.JobRecord) []recheckResult {
	sort.Slice(jobs, func(a, b int) bool {
		ba, bb := jobs[a].Routing == client.RouteBroken, jobs[b].Routing == client.RouteBroken
		if ba != bb {
			return ba
		}
		return jobs[a].ID < jobs[b].ID
	})
	out := make([]recheckResult, len(jobs))
	settled := make([]bool, len(jobs))
	var (
		mu     sync.Mutex // out, settled, closed
		closed bool       // answered: later outcomes are dropped
		next   atomic.Int64
		wg     sync.WaitGroup
	)
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(jobs) {
				return
			}
			r := recheckResult{old: jobs[i]}
			if rc.stop.Err() == nil { // else the change stopped: it commits nothing
				r = s.recheckJob(rc, jobs[i])
			}
			var links *jobLinks
			if r.new != nil && r.new.Table != nil && r.new.Table != r.old.Table {
				// The new table is kept encoded, with its links:
				// known from its build or repair, else counted here
				// (work the next read of the link loads would do), in
				// parallel and without locks.
				keepEncoded(r.new, r.routes)
				if links = r.links; links == nil {
					var lc linkCounter
					jl := lc.count(s.dirsOf(rc.md.g), r.new.Table, r.routes)
					r.links, links = &jl, &jl
				}
			}
			mu.Lock()
			if !closed {
				out[i], settled[i] = r, true
				if links != nil {
					s.keepLinks(r.new.ID, *links)
				}
			}
			mu.Unlock()
		}
	}
	nw := min(computeWorkers(), len(jobs)) // (a core stays free for requests)
	wg.Add(nw)
	for range nw {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	if !rc.budgeted {
		wg.Wait()
		return out
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
		return out
	case <-rc.md.context().Done():
	}
	// The budget ended (or the change stopped): the jobs nobody took are
	// checked here too, and the workers get failureGrace to settle the
	// ones they hold.
	work()
	select {
	case <-finished:
	case <-time.After(failureGrace):
	}
	// A job the failure does not cross is waited for: its check is not
	// budgeted (recheckJob), and its table most likely holds.
	mu.Lock()
	var open []int
	for i := range jobs {
		if !settled[i] {
			open = append(open, i)
		}
	}
	mu.Unlock()
	crossed := make([]bool, len(jobs))
	for _, i := range open {
		crossed[i] = rc.touches(jobs[i])
	}
	for {
		mu.Lock()
		waiting := false
		for i := range jobs {
			waiting = waiting || !settled[i] && !crossed[i]
		}
		if !waiting || rc.stop.Err() != nil {
			closed = true
			for i, j := range jobs {
				if !settled[i] {
					out[i] = rc.cut(j)
				}
			}
			mu.Unlock()
			return out
		}
		mu.Unlock()
		select {
		case <-finished:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// failureGrace is how long a failure change waits, once its budget has
// ended, for re-routings that have not yet seen it.
const failureGrace = 20 * time.Millisecond

// overBudget reports whether the failure budget has ended while the
// change goes on: a job that needs more work is deferred.
func (rc *recheckSpec) overBudget() bool {
	return rc.budgeted && rc.md.context().Err() != nil && rc.stop.Err() == nil
}

// cut is the outcome for job j when the failure budget ends before its
// re-check does: a broken job stays as it was (a table found later would
// only have been a bonus of this change), any other is deferred.
func (rc *recheckSpec) cut(j *client.JobRecord) recheckResult {
	if j.Routing == client.RouteBroken {
		return recheckResult{old: j}
	}
	return rc.deferred(j)
}

// deferred is job j committed with a pending table after a failure whose
// budget ended before its new table was found: no table (its routes
// cross the failure, or were not checked again in time), and the table
// builder builds and verifies one after the answer, adding free nodes as
// transit where its own leave a pair without a legal route
// (buildPending); it then becomes RouteRerouted, or RouteBroken.
func (rc *recheckSpec) deferred(j *client.JobRecord) recheckResult {
	c := *j
	c.Table, c.Stats, c.StoredRoutes = nil, client.TableStats{}, nil
	c.Problem, c.Unreachable = "", nil
	c.Routing, c.RoutingNext = client.RoutePending, rc.rerouted(j)
	c.Affected = append(slices.Clone(j.Affected), rc.label)
	return recheckResult{old: j, new: &c, effect: client.JobEffect{ID: j.ID, Result: client.RoutePending, State: c.RoutingName()}}
}

// recheckJob re-checks one job on the new model and gives it a new
// table where it needs one: on its own nodes, else (a pair without a
// legal route) with free nodes added as transit, else it is broken with
// the pair that has no legal route.
//
// A table holds on a fabric when its routes avoid the failed links and
// nodes and every turn they take is one the fabric's rule admits: the
// order-violating turns angara* admits depend on all failures of the
// fabric (a repair can withdraw a turn a detour took, a failure
// elsewhere one any table took), and so do the minimal lengths its
// figures are measured against. A table that held before the change
// therefore still holds unless a route crosses the failure (touches: it
// is re-routed without verifying it again) or the change reaches inside
// the job's nodes (reaches: the changed link or node is among them, or
// the rule's turns changed between two of its links); only then is it
// checked again (by the in-place repair after a failure, by a whole
// verification after a repair of the fabric), so a job that no change
// reaches (placed on a healthy fabric, away from the failures) is never
// checked again.
func (s *Service) recheckJob(rc *recheckSpec, j *client.JobRecord) recheckResult {
	r := recheckResult{old: j}
	md := rc.md
	if md.routing == nil || j.Routing == client.RoutePending {
		// A pending table is built on the fabric of its time, which
		// finds a pair the change left without a route (tables.go).
		return r
	}
	if rc.failedNode != "" && slices.Contains(j.TransitNodes, rc.failedNode) && !slices.Contains(j.Active, rc.failedNode) {
		return s.dropFailedTransit(rc, j)
	}
	if rc.failedNode != "" && slices.Contains(j.Active, rc.failedNode) {
		// No table of the job's nodes can avoid its own node: it is
		// broken at once (migrate it), without trying one.
		return rc.broken(j, fmt.Errorf("node %s of the job has failed", rc.failedNode))
	}
	reached := sync.OnceValue(func() bool { return rc.reaches(j) })
	holds := func() bool {
		if !reached() {
			return true
		}
		return verifyEncoded(md.routing, j.Table, encodedRoutes(j)) == nil
	}
	works := func() bool { return false } // whether the job may keep its table if no new one is found
	var rep *repaired                     // the in-place repair, once tried
	switch {
	case j.Table == nil:
	case j.Routing == client.RouteBroken:
		if !rc.repair && !rc.touches(j) {
			return r // a failure elsewhere gives it no route back
		}
	case !rc.repair && rc.touches(j):
		// A route crosses the failure: the table does not hold.
	case rc.repair && j.Routing == client.RouteRerouted && (reached() || !failureAmong(md.g, j)):
		// A detour: re-balanced on the repaired fabric, and back to a
		// table of the original kind once no failure is left among its
		// nodes.
		works = holds
	case !reached():
		return r
	case !rc.repair && len(rc.gone) > 0:
		// A failure that no route crosses changed the rule's turns
		// among the job's links (or failed a link between two of its
		// nodes): the in-place repair finds the routes whose turns
		// changed, at a fraction of a whole verification's cost. With
		// none to move and the same figures, the table holds. The
		// failure budget does not cut this check: the table most
		// likely holds, and a job deferred would lose it until a new
		// one is built (only its re-routing, if it needs one, is
		// budgeted).
		rep = s.repairTableCtx(rc.stop, rc, j)
		if rep.err == nil && rep.rerouted == 0 && *rep.table.Figures == *j.Table.Figures {
			return r
		}
		var un *routing.UnreachableError
		if rep.err != nil && !errors.As(rep.err, &un) && holds() {
			return r // not repaired so, and it verifies
		}
	case holds():
		return r
	}
	if rep == nil {
		if rc.overBudget() {
			return rc.cut(j)
		}
		rep = s.repairTable(rc, j)
	}
	return s.rerouteJob(rc, j, rep, works)
}

// rerouteJob gives job j a new table after a change its table does not
// survive: the in-place repair rep, else a table built anew on its
// nodes, else (a pair without a legal route) one with free nodes added
// as transit; else it keeps its table where works says it still holds,
// or is broken with the reason.
func (s *Service) rerouteJob(rc *recheckSpec, j *client.JobRecord, rep *repaired, works func() bool) recheckResult {
	md := rc.md
	r := recheckResult{old: j}
	c := *j
	c.Problem, c.Unreachable = "", nil
	table, routes, stats, links, err := rep.table, rep.routes, rep.stats, rep.links, rep.err
	if err == nil {
		c.Table, c.Stats, c.Reachable, c.Routing = table, stats, true, rc.rerouted(j)
		r.new, r.effect, r.routes, r.links = &c, client.JobEffect{ID: j.ID, Result: client.RouteRerouted, State: c.RoutingName()}, routes, links
		return r
	}
	known := [2]int{-1, -1}
	var un *routing.UnreachableError
	if rc.overBudget() && !errors.As(err, &un) {
		return rc.cut(j) // the budget ended before a table was found
	}
	if errors.As(err, &un) {
		// The repair found a pair without a route inside the job's
		// nodes: no table of them can be built.
		known = [2]int{un.Src, un.Dst}
		err = &unreachableError{[2]string{md.g.NodeName(un.Src), md.g.NodeName(un.Dst)}}
	} else {
		table, routes, stats, links, err = s.routeJob(md, j)
	}
	if err == nil {
		c.Table, c.Stats, c.Reachable, c.Routing = table, stats, true, rc.rerouted(j)
		r.new, r.effect, r.routes, r.links = &c, client.JobEffect{ID: j.ID, Result: client.RouteRerouted, State: c.RoutingName()}, routes, links
		return r
	}
	if rc.overBudget() {
		// The budget ended before a table was found, or before the
		// table's build or the transit search ended: the table builder
		// takes it from here.
		return rc.cut(j)
	}
	if works() {
		return r // keeps its detour table, which still holds
	}
	var unreachable *unreachableError
	if errors.As(err, &unreachable) && rc.free != nil {
		if known[0] < 0 {
			known = [2]int{md.g.NodeByName(unreachable.pair[0]), md.g.NodeByName(unreachable.pair[1])}
		}
		added, table, routes, stats, links, xerr := s.extendTransit(md, j, rc.free, known)
		if xerr != nil && rc.overBudget() {
			return rc.cut(j)
		}
		if xerr == nil {
			c.TransitNodes = append(slices.Clone(j.TransitNodes), names(md.g, added)...)
			c.Table, c.Stats, c.Reachable, c.Routing = table, stats, true, rc.rerouted(j)
			c.Affected = append(slices.Clone(j.Affected), rc.label)
			r.new, r.effect, r.routes, r.links = &c, client.JobEffect{ID: j.ID, Result: client.RouteRerouted, State: c.RoutingName(), TransitAdded: names(md.g, added)}, routes, links
			return r
		}
	}
	if j.Routing == client.RouteBroken && rc.repair {
		return r // stays broken
	}
	return rc.broken(j, err)
}

// broken is job j broken by the change, for the reason err: it keeps its
// nodes and its table (which names them).
func (rc *recheckSpec) broken(j *client.JobRecord, err error) recheckResult {
	c := *j
	c.Problem, c.Unreachable = err.Error(), nil
	if up, ok := err.(*unreachableError); ok {
		c.Unreachable = &up.pair
	}
	c.Reachable, c.Routing = false, client.RouteBroken
	c.Affected = append(slices.Clone(j.Affected), rc.label)
	return recheckResult{old: j, new: &c, effect: client.JobEffect{ID: j.ID, Result: client.RouteBroken, State: c.RoutingName(), Problem: c.Problem, Unreachable: c.Unreachable}}
}

// dropFailedTransit handles the failure of one of job j's transit nodes.
// None of the job's processes runs there, so the node leaves the job's
// set rather than breaking it: the job gets a table built anew on the
// rest of its nodes, else with free nodes added as transit (the node's
// place in its allowance is free again); the record then no longer lists
// the node, and the commit releases it from the job (nextFailureState).
// The old table is not repaired in place: its set names the node. With
// no route left without the node, the job is broken with the
// unreachable pair and keeps the node, as a job whose active node
// failed does.
func (s *Service) dropFailedTransit(rc *recheckSpec, j *client.JobRecord) recheckResult {
	k := *j
	k.TransitNodes = slices.DeleteFunc(slices.Clone(j.TransitNodes), func(n string) bool { return n == rc.failedNode })
	r := s.rerouteJob(rc, &k, &repaired{err: errNotRepaired}, func() bool { return false })
	r.old = j
	if r.new != nil && r.new.Routing == client.RoutePending {
		// Over the failure budget: the table builder drops the node
		// when it has a table without it (else the job is broken and
		// keeps it, as here).
		return rc.deferred(j)
	}
	if r.new == nil || r.new.Routing == client.RouteBroken {
		// No route is left without the node: the job is broken and
		// keeps it, with the table it names (a repair of the node
		// re-routes the job on its whole set).
		c := *j
		c.Reachable, c.Routing = false, client.RouteBroken
		c.Problem = transitFailedProblem([]string{rc.failedNode}, "")
		if r.new != nil {
			c.Problem = transitFailedProblem([]string{rc.failedNode}, r.new.Problem)
			c.Unreachable = r.new.Unreachable
		}
		c.Affected = append(slices.Clone(j.Affected), rc.label)
		r.new, r.effect = &c, client.JobEffect{ID: j.ID, Result: client.RouteBroken, State: c.RoutingName(), Problem: c.Problem, Unreachable: c.Unreachable}
		return r
	}
	if !slices.Contains(r.new.Affected, rc.label) {
		r.new.Affected = append(slices.Clone(r.new.Affected), rc.label)
	}
	r.effect.TransitDropped = []string{rc.failedNode}
	return r
}

// transitFailedProblem is the problem of a job broken by the failure of
// its transit nodes (names), with what keeps it from a table without
// them (without; "" if nothing is known).
func transitFailedProblem(nodes []string, without string) string {
	p := fmt.Sprintf("its transit node %s has failed", nodes[0])
	them := "it"
	if len(nodes) > 1 {
		p, them = fmt.Sprintf("its transit nodes %s have failed", strings.Join(nodes, " ")), "them"
	}
	if without == "" {
		return p
	}
	return p + ", and without " + them + " " + without
}

// rerouted is the routing state of job j on the new table the change
// gave it. A failure puts it on a detour (RouteRerouted). A repair puts a
// job that was on a detour (rerouted or broken) back on a table of its
// original kind only when no failure is left among its nodes (the table
// is built around those), and leaves the state of a job that was not
// (its table only follows the rule of the repaired fabric).
func (rc *recheckSpec) rerouted(j *client.JobRecord) client.RouteState {
	switch {
	case !rc.repair:
		return client.RouteRerouted
	case j.Routing != client.RouteRerouted && j.Routing != client.RouteBroken:
		return j.Routing
	case failureAmong(rc.md.g, j):
		return client.RouteRerouted
	}
	return client.RouteOriginal
}

// jobNodes marks the nodes job j holds (active and transit) on g; ok is
// false if one has no such name.
func jobNodes(g *topology.Graph, j *client.JobRecord) (in []bool, nodes []int, ok bool) {
	nodes, err := nodesByName(g, append(slices.Clone(j.Active), j.TransitNodes...))
	if err != nil {
		return nil, nil, false
	}
	in = make([]bool, g.NumNodes())
	for _, v := range nodes {
		in[v] = true
	}
	return in, nodes, true
}

// failureAmong reports whether a failed link of g joins two of job j's
// nodes or one of its nodes has failed: the failures a table on the
// job's nodes is built around.
func failureAmong(g *topology.Graph, j *client.JobRecord) bool {
	in, nodes, ok := jobNodes(g, j)
	if !ok {
		return true
	}
	for _, v := range nodes {
		if g.NodeFailed(v) {
			return true
		}
	}
	for _, l := range g.FailedLinks() {
		if lk := g.Link(l); in[lk.A] && in[lk.B] {
			return true
		}
	}
	return false
}

// reachedBy returns whether the change (of the link or node named
// subject) reaches inside a job's nodes, where it could make a table
// that held on the fabric before (routing before) fail on md: the
// changed link joins two of its nodes, the changed node is one of them,
// or the rule admits other order-violating turns than before at one of
// its nodes between two of its links (a route's first and last turns
// and the minimal lengths inside the set depend on those, nothing else
// outside the set does).
func reachedBy(before Routing, md *model, ch client.FailureChange, subject string) func(*client.JobRecord) bool {
	g := md.g
	var ends []int // the changed link's two nodes, or the changed node
	if ch.Link != "" {
		if ls, err := g.ParseLinks(subject); err == nil && len(ls) == 1 {
			lk := g.Link(ls[0])
			ends = []int{int(lk.A), int(lk.B)}
		}
	} else if vs, err := g.ParseNodes(subject); err == nil && len(vs) == 1 {
		ends = []int{vs[0]}
	}
	return func(j *client.JobRecord) bool {
		in, nodes, ok := jobNodes(g, j)
		if !ok {
			return true
		}
		if len(ends) > 0 && (ch.Link == "" || len(ends) == 2) {
			among := true
			for _, v := range ends {
				among = among && in[v]
			}
			if among {
				return true
			}
		}
		if before == nil || md.routing == nil {
			return false
		}
		return turnsDiffer(g, before, md.routing, in, nodes)
	}
}

// turnsDiffer reports whether routings a and b admit different
// order-violating turns at a node of the set (in, nodes) between two of
// its links: from a channel that comes from a node of the set into a
// direction that leads to one.
func turnsDiffer(g *topology.Graph, a, b Routing, in []bool, nodes []int) bool {
	for _, u := range nodes {
		for _, o := range g.Out(u) {
			if !in[g.Dst(int(o))] {
				continue
			}
			c := int(o) ^ 1 // the channel into u from that neighbour
			diff := a.ExtraTurns(c) ^ b.ExtraTurns(c)
			if diff == 0 {
				continue
			}
			for _, next := range g.Out(u) {
				dim, sign := g.Dir(int(next))
				if dim < 0 {
					continue
				}
				d := 2 * dim
				if sign < 0 {
					d++
				}
				if diff&(1<<d) != 0 && in[g.Dst(int(next))] {
					return true
				}
			}
		}
	}
	return false
}

// unreachableError names a pair of active nodes with no legal route.
type unreachableError struct{ pair [2]string }

func (e *unreachableError) Error() string {
	return fmt.Sprintf("no legal route from %s to %s inside the job's nodes", e.pair[0], e.pair[1])
}

// routeJob builds a verified table for a job's node set on a model: its
// header and its routes encoded for the store (newTable).
func (s *Service) routeJob(md *model, j *client.JobRecord) (*routing.TableJSON, []byte, client.TableStats, *jobLinks, error) {
	active, err := nodesByName(md.g, j.Active)
	if err != nil {
		return nil, nil, client.TableStats{}, nil, err
	}
	transit, err := nodesByName(md.g, j.TransitNodes)
	if err != nil {
		return nil, nil, client.TableStats{}, nil, err
	}
	for _, v := range append(slices.Clone(active), transit...) {
		if md.g.NodeFailed(v) {
			return nil, nil, client.TableStats{}, nil, fmt.Errorf("node %s of the job has failed", md.g.NodeName(v))
		}
	}
	if ok, pair, err := md.routing.ReachableFirst(active, transit); err != nil {
		return nil, nil, client.TableStats{}, nil, err
	} else if !ok {
		return nil, nil, client.TableStats{}, nil, &unreachableError{[2]string{md.g.NodeName(pair[0]), md.g.NodeName(pair[1])}}
	}
	return newTable(md.context(), md.routing, active, transit)
}

// commitFailure stores the fabric record and the job changes in one
// transaction, then swaps the model in (callers hold commitMu).
// Everything that can fail is computed before the store commits: the
// new node state is a copy, on the new fabric, with the transit nodes
// repairs added; after the commit only values are swapped in, under mu.
func (s *Service) commitFailure(ctx context.Context, actor string, ch client.FailureChange, subject string, md *model, results map[int]recheckResult) (*client.FailureResult, error) {
	res := &client.FailureResult{Change: ch, FailedLinks: md.rec.FailedLinks, FailedNodes: md.rec.FailedNodes,
		AffectedJobs: []int{}, BrokenJobs: []int{}, Jobs: []client.JobEffect{}, Groups: []client.GroupEffect{}}
	if res.FailedLinks == nil {
		res.FailedLinks = []string{}
	}
	if res.FailedNodes == nil {
		res.FailedNodes = []string{}
	}
	changed := map[int]*client.JobRecord{}
	for id, r := range results {
		// Only jobs still running in the version that was re-checked.
		if r.new != nil && s.jobs[id] == r.old {
			changed[id] = r.new
		}
	}
	ids := sortedIDs(changed)
	// Callers hold commitMu: jobs, nodes and fabric change only under it,
	// so they are read here without mu, which is taken only to swap the
	// committed change in (reads wait for that, not for the disk).
	next, err := s.nextFailureState(ch, subject, md, ids, changed, results)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		e := results[id].effect
		res.Jobs = append(res.Jobs, e)
		res.AffectedJobs = append(res.AffectedJobs, id)
		if e.Result == client.RouteBroken {
			res.BrokenJobs = append(res.BrokenJobs, id)
		}
	}
	_, err = s.commit(ctx, actor, func(tx *store.Tx) error {
		if err := tx.PutFabric(md.rec); err != nil {
			return err
		}
		for _, id := range ids {
			j, r := changed[id], results[id]
			var err error
			switch {
			case j.Table != nil && j.Table == r.old.Table:
				// A job left on its table (broken): its routes are stored.
				err = tx.PutJobHead(j)
			case r.new == j:
				if err = tx.PutJob(j, r.routes); err == nil && r.links != nil && r.routes != nil {
					err = tx.PutJobLoads(j.ID, loadsOf(*r.links))
				}
			default:
				err = tx.PutJob(j, nil)
			}
			if err != nil {
				return err
			}
		}
		return tx.Log(actionName(ch), subject, map[string]any{"affected_jobs": res.AffectedJobs, "broken_jobs": res.BrokenJobs, "jobs": res.Jobs})
	})
	if err != nil {
		return nil, fmt.Errorf("storage: %w (nothing changed)", err)
	}
	// Committed: from here on nothing may fail.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fabric, s.g, s.routing, s.noJobs = md.rec, md.g, md.routing, md.noJobs
	if next != nil {
		s.state = next
	}
	s.fabricVer++
	for _, id := range ids {
		s.jobs[id] = changed[id]
		s.jobsChanged()
	}
	return res, nil
}

// nextFailureState returns the node state after a failure change (nil on
// a fabric that takes no jobs): a copy of the current one on the new
// fabric, holding the transit nodes that repairs added. Those must still
// be free (placements went on meanwhile, and two jobs may have chosen
// the same node): a job that lost one is broken after all, in changed
// and results. Callers hold commitMu.
func (s *Service) nextFailureState(ch client.FailureChange, subject string, md *model, ids []int, changed map[int]*client.JobRecord, results map[int]recheckResult) (*alloc.State, error) {
	var next *alloc.State
	if s.state != nil {
		var err error
		if next, err = s.state.WithGraph(md.g); err != nil {
			return nil, fmt.Errorf("%w: the new fabric does not fit the nodes' state: %v (nothing changed)", client.ErrConflict, err)
		}
	}
	for _, id := range ids {
		e := results[id].effect
		if len(e.TransitAdded) > 0 {
			added, err := nodesByName(md.g, e.TransitAdded)
			if err == nil && next != nil {
				err = next.Occupy(id, added) // changes nothing if it fails
			}
			if err != nil || next == nil {
				old := results[id].old
				c := *old
				c.Reachable, c.Routing = false, client.RouteBroken
				c.Problem = "no legal route inside the job's nodes, and a free node that would have given one was taken meanwhile: migrate it"
				c.Affected = append(slices.Clone(old.Affected), actionName(ch)+" "+subject)
				changed[id] = &c
				results[id] = recheckResult{old: old, new: &c, effect: client.JobEffect{ID: id, Result: client.RouteBroken, State: c.RoutingName(), Problem: c.Problem}}
				continue
			}
		}
		if len(e.TransitDropped) > 0 && next != nil {
			// A failed transit node left the job.
			if dropped, err := nodesByName(md.g, e.TransitDropped); err == nil {
				next.ReleaseNodes(id, dropped)
			}
		}
	}
	return next, nil
}

// applyChange updates the failure lists of rec and returns the canonical
// name of the link or node.
func applyChange(rec *store.FabricRecord, base interface {
	ParseLinks(string) ([]int, error)
	ParseNodes(string) ([]int, error)
	LinkName(int) string
	NodeName(int) string
}, ch client.FailureChange) (string, error) {
	if ch.Link != "" {
		ls, err := base.ParseLinks(ch.Link)
		if err != nil || len(ls) != 1 {
			if err == nil {
				err = fmt.Errorf("%q names %d links", ch.Link, len(ls))
			}
			return "", fmt.Errorf("%w: %v", client.ErrNotFound, err)
		}
		subject := base.LinkName(ls[0])
		rec.FailedLinks = toggle(rec.FailedLinks, subject, !ch.Repair)
		return subject, nil
	}
	vs, err := base.ParseNodes(ch.Node)
	if err != nil || len(vs) != 1 {
		if err == nil {
			err = fmt.Errorf("%q names %d nodes", ch.Node, len(vs))
		}
		return "", fmt.Errorf("%w: %v", client.ErrNotFound, err)
	}
	subject := base.NodeName(vs[0])
	rec.FailedNodes = toggle(rec.FailedNodes, subject, !ch.Repair)
	return subject, nil
}

func actionName(ch client.FailureChange) string {
	kind := "link"
	if ch.Node != "" {
		kind = "node"
	}
	if ch.Repair {
		return kind + ".repair"
	}
	return kind + ".fail"
}

func toggle(list []string, name string, on bool) []string {
	i := slices.Index(list, name)
	switch {
	case on && i < 0:
		list = append(list, name)
		sort.Strings(list)
	case !on && i >= 0:
		list = slices.Delete(list, i, i+1)
	}
	return list
}

// extendTransit looks for free nodes that, added to the job's set as
// transit nodes, give every pair of its active nodes a legal route again:
// for a pair without one, the free nodes of a legal route between them
// through the job's and free nodes, with the fewest free nodes, are added
// (Routing.LegalPath), until every pair has a legal route; it gives up
// when a pair has none even through every free node, or when the job's
// transit allowance left plus Config.RepairExtra would be exceeded. Added
// nodes the routes do not need are dropped again, last first. It returns
// the nodes added and the set's verified table (newTable).
func (s *Service) extendTransit(md *model, j *client.JobRecord, free *alloc.State, known [2]int) ([]int, *routing.TableJSON, []byte, client.TableStats, *jobLinks, error) {
	budget := max(0, j.TransitLimit-len(j.TransitNodes)) + max(0, s.cfg.RepairExtra)
	active, err := nodesByName(md.g, j.Active)
	if err != nil {
		return nil, nil, nil, client.TableStats{}, nil, err
	}
	transit, err := nodesByName(md.g, j.TransitNodes)
	if err != nil {
		return nil, nil, nil, client.TableStats{}, nil, err
	}
	// Legal routes only grow with the set (Routing.MissingFrom), so
	// once nodes are added only the sources that missed a destination
	// before are asked again, and once some of the added nodes are
	// dropped, only those that missed one at first. The pairs are taken
	// in the order of their sources, and each check stops at the first
	// batch of sources with a missing pair (Routing.ReachableFrom): a
	// set of thousands of nodes is checked from tens of sources at a
	// time rather than from all of them.
	with := func(extra []int) []int { return append(slices.Clone(transit), extra...) }
	in := make([]bool, md.g.NumNodes())
	set := append(slices.Clone(active), transit...)
	for _, v := range set {
		in[v] = true
	}
	var pool []int // every free node may serve
	for v := range in {
		if !in[v] && !md.g.NodeFailed(v) && free.Available(v) {
			pool = append(pool, v)
		}
	}
	// Whether a way between two nodes has a route does not depend on
	// the nodes added (the job's nodes and the free ones are searched
	// either way): a pair known to be missing that has no route even so
	// ends the search before the set is checked.
	if known[0] >= 0 {
		for _, ends := range [2][2]int{known, {known[1], known[0]}} {
			if _, ok, err := freeRoute(md, ends, set, nil, pool); err != nil {
				return nil, nil, nil, client.TableStats{}, nil, err
			} else if !ok {
				return nil, nil, nil, client.TableStats{}, nil, fmt.Errorf("no legal route from %s to %s even through every free node", md.g.NodeName(ends[0]), md.g.NodeName(ends[1]))
			}
		}
	}
	missing, pair, err := md.routing.MissingFrom(active, transit, nil)
	if err != nil {
		return nil, nil, nil, client.TableStats{}, nil, err
	}
	first := missing
	var added []int
	reason := map[int][2]int{} // the pair each added node was added for
	for len(missing) > 0 {
		if err := md.context().Err(); err != nil {
			return nil, nil, nil, client.TableStats{}, nil, err
		}
		// A pair needs routes both ways: the free nodes of the route
		// with the fewest of them one way, then the other way with those
		// nodes counted as the job's own; of the two orders, the one
		// that adds fewer nodes.
		// The first way without a route ends the search (above).
		var fresh []int
		for _, order := range [2][2]int{{pair[0], pair[1]}, {pair[1], pair[0]}} {
			var f []int
			for _, ends := range [2][2]int{order, {order[1], order[0]}} {
				nodes, ok, err := freeRoute(md, ends, set, append(slices.Clone(added), f...), pool)
				if err != nil {
					return nil, nil, nil, client.TableStats{}, nil, err
				}
				if !ok {
					return nil, nil, nil, client.TableStats{}, nil, fmt.Errorf("no legal route from %s to %s even through every free node", md.g.NodeName(ends[0]), md.g.NodeName(ends[1]))
				}
				f = append(f, nodes...)
			}
			if len(f) > 0 && (fresh == nil || len(f) < len(fresh)) {
				fresh = f
			}
		}
		switch {
		case len(fresh) == 0:
			// Both ways have routes, through the job's nodes alone: the
			// set is reachable after all.
			return nil, nil, nil, client.TableStats{}, nil, fmt.Errorf("no free node joins %s and %s", md.g.NodeName(pair[0]), md.g.NodeName(pair[1]))
		case len(added)+len(fresh) > budget:
			return nil, nil, nil, client.TableStats{}, nil, fmt.Errorf("legal routes need more than %d free nodes as transit (the allowance left plus the repair's extra)", budget)
		}
		for _, v := range fresh {
			reason[v] = pair
		}
		added = append(added, fresh...)
		ok, next, err := md.routing.ReachableFrom(active, with(added), missing)
		if err != nil {
			return nil, nil, nil, client.TableStats{}, nil, err
		}
		if ok {
			break
		}
		// The sources before the pair's reach every node.
		missing, pair = missing[slices.Index(missing, next[0]):], next
	}
	// Each added node is dropped again if the set stays reachable
	// without it, last first; the pair it was added for is checked
	// first, which tells most of the nodes that cannot go in one batch
	// of sources.
	kept := slices.Clone(added)
	for i := len(kept) - 1; i >= 0; i-- {
		try := slices.Delete(slices.Clone(kept), i, i+1)
		p := reason[kept[i]]
		if ok, _, err := md.routing.ReachableFrom(active, with(try), append([]int{p[0], p[1]}, first...)); err == nil && ok {
			kept = try
		}
	}
	table, routes, stats, links, err := newTable(md.context(), md.routing, active, append(slices.Clone(transit), kept...))
	if err != nil {
		return nil, nil, nil, client.TableStats{}, nil, err
	}
	return kept, table, routes, stats, links, nil
}

// freeRoute returns the free nodes (of pool, not yet in added) of the
// legal route between ends through the job's nodes (set), the nodes
// added so far and the pool, with the fewest free nodes, and whether
// there is such a route.
func freeRoute(md *model, ends [2]int, set, added, pool []int) ([]int, bool, error) {
	have := map[int]bool{}
	for _, v := range added {
		have[v] = true
	}
	var extra []int
	for _, v := range pool {
		if !have[v] {
			extra = append(extra, v)
		}
	}
	path, err := md.routing.LegalPath(ends[0], ends[1], append(slices.Clone(set), added...), extra)
	if err != nil || path == nil {
		return nil, false, err
	}
	inSet := map[int]bool{}
	for _, v := range set {
		inSet[v] = true
	}
	var fresh []int
	for _, v := range path {
		if !inSet[v] && !have[v] {
			fresh = append(fresh, v)
		}
	}
	return fresh, true, nil
}

// jobLinks is what a job's table puts on the links, for the table it was
// computed from: the set of links its routes use (one bit per link) and,
// for each of them, how many routes cross it.
type jobLinks struct {
	tb     *routing.TableJSON
	set    []uint64
	links  []int32 // the links used, ascending
	routes []int32 // routes crossing each
	// ab: of those, routes crossing it from its end A to its end B
	// (topology channel 2·link); nil when not counted (loads read from
	// the store)
	ab []int32
}

// tableLinks returns the links of job j's table (cached per job and
// table).
func (s *Service) tableLinks(g *topology.Graph, j *client.JobRecord) jobLinks {
	return s.tableLinksStored(g, j, encodedRoutes(j))
}

// tableLinksStored is tableLinks counting from the table's stored routes
// (routing.EncodeStoredRoutes; nil: from its steps) when they are not cached.
func (s *Service) tableLinksStored(g *topology.Graph, j *client.JobRecord, routes []byte) jobLinks {
	s.linksMu.Lock()
	e, ok := s.links[j.ID]
	s.linksMu.Unlock()
	if ok && e.tb == j.Table {
		return e
	}
	var lc linkCounter
	e = lc.count(s.dirsOf(g), j.Table, routes)
	s.keepLinks(j.ID, e)
	return e
}

// dirsOf returns the service's linkDirs, built from g the first time.
func (s *Service) dirsOf(g *topology.Graph) *linkDirs {
	s.linksMu.Lock()
	defer s.linksMu.Unlock()
	if s.linkDirs == nil {
		s.linkDirs = newLinkDirs(g)
	}
	return s.linkDirs
}

// keepLinks caches the links of job id's table.
func (s *Service) keepLinks(id int, e jobLinks) {
	s.linksMu.Lock()
	defer s.linksMu.Unlock()
	if s.links == nil {
		s.links = map[int]jobLinks{}
	}
	s.links[id] = e
}

// pruneLinks forgets the link sets of jobs no longer running.
func (s *Service) pruneLinks(running []*client.JobRecord) {
	keep := map[int]bool{}
	for _, j := range running {
		keep[j.ID] = true
	}
	s.linksMu.Lock()
	for id := range s.links {
		if !keep[id] {
			delete(s.links, id)
		}
	}
	s.linksMu.Unlock()
}

// touchedBy returns whether a failure of the link or node named subject
// can affect a job: a job without a table, a job holding the failed
// node, or one whose routes use a failed link (a node's failure fails
// its links). Other jobs' tables still verify and are not re-checked.
func (s *Service) touchedBy(md *model, ch client.FailureChange, subject string) func(*client.JobRecord) bool {
	var links []int
	node := -1
	if ch.Link != "" {
		links, _ = md.g.ParseLinks(subject)
	} else if ns, err := md.g.ParseNodes(subject); err == nil && len(ns) == 1 {
		node = ns[0]
		for _, c := range md.g.Out(node) {
			links = append(links, int(c)>>1)
		}
	}
	nodeName := ""
	if node >= 0 {
		nodeName = md.g.NodeName(node)
	}
	return func(j *client.JobRecord) bool {
		if j.Table == nil || len(links) == 0 {
			return true
		}
		if nodeName != "" && (slices.Contains(j.Active, nodeName) || slices.Contains(j.TransitNodes, nodeName)) {
			return true
		}
		set := s.tableLinks(md.g, j).set
		for _, l := range links {
			if set[l>>6]&(1<<(l&63)) != 0 {
				return true
			}
		}
		return false
	}
}

// repairTable repairs job j's table after a failure its routes cross,
// or one elsewhere that changed the turns its routes take (the table no
// longer verifies: angara*'s order-violating turns depend on every
// failure of the fabric) (routing.Router.RepairStored): the routes that
// crossed the failure, and those whose first or last turn the failure
// changed, get new shortest routes, the least loaded channels first;
// every other route is kept, so a failure in a job of 10 000 nodes
// re-routes thousands of its 100 million routes instead of building them
// all. Its error is errNotRepaired for a table it does not repair so
// (another rule, a repair of the fabric, routes not kept in the stored
// form, loads not counted by direction), and RepairStored's where that
// fails (a *routing.UnreachableError for a pair left without a route
// inside the job's nodes): the job's table is then built anew, or for
// such a pair, transit nodes are looked for at once.
func (s *Service) repairTable(rc *recheckSpec, j *client.JobRecord) *repaired {
	return s.repairTableCtx(rc.md.context(), rc, j)
}

// repairTableCtx is repairTable under ctx.
func (s *Service) repairTableCtx(ctx context.Context, rc *recheckSpec, j *client.JobRecord) *repaired {
	after, ok1 := rc.md.routing.(*angaraRouting)
	before, ok2 := rc.before.(*angaraRouting)
	stored := encodedRoutes(j)
	if !ok1 || !ok2 || len(rc.gone) == 0 || stored == nil || j.Routing == client.RouteBroken {
		return &repaired{err: errNotRepaired}
	}
	g := rc.md.g
	jl := s.tableLinksStored(g, j, stored)
	if jl.ab == nil {
		return &repaired{err: errNotRepaired}
	}
	load := make([]int32, 2*g.NumLinks())
	for i, l := range jl.links {
		load[2*l], load[2*l+1] = jl.ab[i], jl.routes[i]-jl.ab[i]
	}
	rep, err := after.R.RepairStored(ctx, before.R, j.Table, stored, rc.gone, load)
	if err != nil {
		return &repaired{err: err}
	}
	return &repaired{table: rep.Header, routes: rep.Routes, stats: client.TableStats{Figures: *rep.Header.Figures, DeadlockFree: true}, links: linksOfChannelLoads(rep.Header, load), rerouted: rep.Rerouted}
}

// repaired is repairTable's result: the repaired table (its header, its
// routes in the stored form, its figures and links) and how many routes
// it moved, or why it was not repaired.
type repaired struct {
	table    *routing.TableJSON
	routes   []byte
	stats    client.TableStats
	links    *jobLinks
	rerouted int
	err      error
}

// errNotRepaired: the table is not one repairTable repairs.
var errNotRepaired = errors.New("not repaired in place")
