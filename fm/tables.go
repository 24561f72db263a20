package fm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/routing"
)

// Pending tables. A job whose verified table did not fit in what the
// placement budget left after the node selection is committed with its
// nodes and Routing RoutePending (place), and so is a job whose new
// table did not fit in a failure's budget (ChangeFailure); the table
// builder, a goroutine of the leader, builds and verifies those tables
// after the answer, one job at a time in id order, on the fabric of its
// time, and commits each with a check of the fabric version and of the
// job (released, migrated: dropped; a failure meanwhile: the table is
// verified again on the new fabric, or built again). As after a failure,
// a failed transit node leaves the set, and where a pair of active nodes
// has no legal route inside the job's nodes, free nodes are added as
// transit within the job's allowance left plus Config.RepairExtra
// (extendTransit; checked free again at the commit); a job still without
// a legal route is broken with the pair, and keeps its nodes. Pending
// jobs are stored as such, so a restart or a takeover builds them again;
// failure changes leave them to the builder.

// tableWork is the table builder's state.
type tableWork struct {
	kick chan struct{} // a pending job was committed (buffered, 1)
}

// tableHooks let tests see and steer the table builder (Config).
type tableHooks struct {
	// hold, if set, is called before each pending table is built, with
	// the builder's context (tests block here); built after each outcome
	// is committed.
	hold  func(ctx context.Context, id int)
	built func(j *client.JobRecord)
}

// tableRetry is how long the builder waits after a table it could not
// commit (a storage failure) before it tries again.
const tableRetry = time.Second

// kickTables wakes the table builder.
func (s *Service) kickTables() {
	select {
	case s.tables.kick <- struct{}{}:
	default:
	}
}

// buildTables builds the pending tables until ctx ends (the instance
// stops leading, or the service closes): those stored when it starts,
// then those committed while it runs.
func (s *Service) buildTables(ctx context.Context) {
	for {
		failed := false
		for ctx.Err() == nil {
			id, ok := s.nextPending()
			if !ok {
				break
			}
			if err := s.buildPending(ctx, id); err != nil && ctx.Err() == nil {
				failed = true // after a pause, below
				break
			}
		}
		var retry <-chan time.Time
		if failed {
			retry = time.After(tableRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.tables.kick:
		case <-retry:
		}
	}
}

// nextPending returns the running job with a pending table and the
// smallest id.
func (s *Service) nextPending() (int, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	best := 0
	for id, j := range s.jobs {
		if j.Routing == client.RoutePending && (best == 0 || id < best) {
			best = id
		}
	}
	return best, best != 0
}

// buildPending builds, verifies and commits the pending table of job id
// on a snapshot, without any lock; it returns nil when the job needs
// nothing more (committed, or no longer pending), and an error when the
// commit failed or ctx ended.
func (s *Service) buildPending(ctx context.Context, id int) error {
	if hold := s.cfg.tables.hold; hold != nil {
		hold(ctx, id)
	}
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sn := s.snapshot(true)
		j, ok := sn.jobs[id]
		if !ok || j.Routing != client.RoutePending {
			return nil
		}
		if sn.routing == nil { // cannot happen: running jobs keep a fabric that takes jobs
			return fmt.Errorf("job %d: the fabric takes no jobs: %s", id, sn.noJobs)
		}
		md := &model{g: sn.g, routing: sn.routing, ctx: ctx}
		start := time.Now()
		pt := s.pendingTable(md, j, sn.state)
		table, routes, stats, built, err := pt.table, pt.routes, pt.stats, pt.links, pt.err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c := *j
		c.Problem, c.Unreachable = "", nil
		var links jobLinks
		if err == nil {
			c.TransitNodes = pt.transit
			if !pt.searched {
				s.measuredTable(len(j.Active), time.Since(start)) // (a table's build alone)
			}
			if built != nil {
				links = *built
			} else {
				var lc linkCounter
				links = lc.count(s.dirsOf(sn.g), table, routes)
			}
			c.Table, c.Stats, c.Reachable, c.Routing, c.RoutingNext = table, stats, true, j.RoutingNext, ""
		} else {
			// A failure since the placement: no table on the job's nodes.
			c.Reachable, c.Routing, c.RoutingNext, c.Problem = false, client.RouteBroken, "", err.Error()
			if len(pt.dropped) > 0 {
				c.Problem = transitFailedProblem(names(sn.g, pt.dropped), err.Error()) // (as a failure change words it)
			}
			var up *unreachableError
			if errors.As(err, &up) {
				c.Unreachable = &up.pair
			}
		}
		took := time.Since(start)
		ch := tableChange{added: pt.added, dropped: pt.dropped}
		if err != nil {
			ch = tableChange{} // broken: it keeps its nodes
		}
		err = s.commitTable(ctx, sn.ver, j, &c, routes, links, ch, took)
		if errors.Is(err, errStale) && c.Table != nil {
			// The fabric changed meanwhile: if the table still holds on
			// the new one (nodes up, table verifies), commit it.
			if ver, ok := s.tableStillValid(j, &c, routes); ok {
				err = s.commitTable(ctx, ver, j, &c, routes, links, ch, took)
			}
		}
		if errors.Is(err, errStale) && attempt < 3 {
			continue // the job or the fabric changed: see again
		}
		if errors.Is(err, errStale) {
			return nil // changing faster than tables are built: next round
		}
		return err
	}
}

// pendingOutcome is what pendingTable found for a pending job: its
// verified table (header, routes encoded, figures, links when the build
// counted them) on its transit nodes (names; dropped failed ones left
// out, added free ones in), or why there is none.
type pendingOutcome struct {
	table   *routing.TableJSON
	routes  []byte
	stats   client.TableStats
	links   *jobLinks
	transit []string
	added   []int // free nodes added as transit
	dropped []int // failed transit nodes left out
	// searched: the set was checked again after its table failed, and
	// transit nodes were looked for (the time is more than a table's
	// build)
	searched bool
	err      error
}

// pendingTable builds the verified table of a pending job. The
// selection (or the failure change) checked its set, so the table is
// built at once; only when that fails is the set checked again (a
// failure came in between), for the pair to name, and free nodes of free
// (nil: none) added as transit where they give every pair a legal route.
// A failed transit node leaves the set; a failed active node breaks the
// job.
func (s *Service) pendingTable(md *model, j *client.JobRecord, free *alloc.State) pendingOutcome {
	active, aerr := nodesByName(md.g, j.Active)
	transit, terr := nodesByName(md.g, j.TransitNodes)
	if err := errors.Join(aerr, terr); err != nil {
		return pendingOutcome{err: err}
	}
	for _, v := range active {
		if md.g.NodeFailed(v) {
			return pendingOutcome{err: fmt.Errorf("node %s of the job has failed", md.g.NodeName(v))}
		}
	}
	o := pendingOutcome{transit: j.TransitNodes}
	k := j
	if slices.ContainsFunc(transit, md.g.NodeFailed) {
		// No process of the job runs on a transit node: it leaves.
		kept := transit[:0:0]
		for _, v := range transit {
			if md.g.NodeFailed(v) {
				o.dropped = append(o.dropped, v)
			} else {
				kept = append(kept, v)
			}
		}
		c := *j
		c.TransitNodes = names(md.g, kept)
		k, transit, o.transit = &c, kept, c.TransitNodes
	}
	o.table, o.routes, o.stats, o.links, o.err = newTable(md.context(), md.routing, active, transit)
	if o.err == nil || md.context().Err() != nil {
		return o
	}
	o.searched = true
	o.table, o.routes, o.stats, o.links, o.err = s.routeJob(md, k)
	var unreachable *unreachableError
	if !errors.As(o.err, &unreachable) || free == nil || s.cfg.RepairExtra < 0 {
		return o
	}
	known := [2]int{md.g.NodeByName(unreachable.pair[0]), md.g.NodeByName(unreachable.pair[1])}
	added, table, routes, stats, links, err := s.extendTransit(md, k, free, known)
	if err != nil {
		if md.context().Err() != nil {
			o.err = err
		}
		return o // broken with the pair
	}
	o.table, o.routes, o.stats, o.links, o.err = table, routes, stats, links, nil
	o.added, o.transit = added, append(slices.Clone(k.TransitNodes), names(md.g, added)...)
	return o
}

// tableChange is what a pending table's commit changes in the nodes'
// state: free nodes the job gains as transit, failed transit nodes it
// lets go.
type tableChange struct{ added, dropped []int }

// commitTable stores the outcome of a pending table (c: the job with its
// table, or broken) if the fabric is still version ver and the job the
// one it was built for (old); errStale otherwise. Under commitMu, as
// commitJob.
func (s *Service) commitTable(ctx context.Context, ver uint64, old, c *client.JobRecord, routes []byte, links jobLinks, ch tableChange, took time.Duration) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.fabricVer != ver || s.jobs[old.ID] != old {
		return errStale
	}
	// The nodes' state after the commit, computed before it: added
	// nodes must still be free (placements went on meanwhile).
	var next *alloc.State
	if len(ch.added)+len(ch.dropped) > 0 && s.state != nil {
		next = s.state.Clone()
		if next.Occupy(c.ID, ch.added) != nil {
			return errStale
		}
		next.ReleaseNodes(c.ID, ch.dropped)
	} else if len(ch.added) > 0 {
		return errStale // (cannot happen: the builder found them in a state)
	}
	_, err := s.commit(ctx, "system", func(tx *store.Tx) error {
		if err := tx.PutJob(c, routes); err != nil {
			return err
		}
		if c.Table != nil && routes != nil {
			if err := tx.PutJobLoads(c.ID, loadsOf(links)); err != nil {
				return err
			}
		}
		detail := map[string]any{"routing": c.RoutingName(), "seconds": took.Seconds()}
		if c.Problem != "" {
			detail["problem"] = c.Problem
		}
		if len(ch.added) > 0 {
			detail["transit_added"] = names(s.g, ch.added)
		}
		if len(ch.dropped) > 0 {
			detail["transit_dropped"] = names(s.g, ch.dropped)
		}
		return tx.Log("job.table", fmt.Sprintf("job %d", c.ID), detail)
	})
	if err != nil {
		return fmt.Errorf("storage: %w (the table stays pending)", err)
	}
	keepEncoded(c, routes)
	s.mu.Lock()
	if next != nil {
		s.state = next
	}
	s.jobs[c.ID] = c
	s.jobsChanged()
	if c.Table != nil {
		s.keepLinks(c.ID, links) // (lock order: mu, then linksMu)
	}
	s.mu.Unlock()
	if built := s.cfg.tables.built; built != nil {
		built(c)
	}
	return nil
}

// tableStillValid re-checks a pending job's new table (c's, its routes
// encoded) on the current fabric (no lock held during the check), as
// stillValid a plan's, and returns the fabric version it holds on.
func (s *Service) tableStillValid(old, c *client.JobRecord, routes []byte) (uint64, bool) {
	sn := s.snapshot(false)
	if sn.routing == nil || sn.jobs[old.ID] != old {
		return 0, false
	}
	nodes, err := nodesByName(sn.g, append(slices.Clone(c.Active), c.TransitNodes...))
	if err != nil {
		return 0, false
	}
	for _, v := range nodes {
		if sn.g.NodeFailed(v) {
			return 0, false
		}
	}
	return sn.ver, verifyEncoded(sn.routing, c.Table, routes) == nil
}
