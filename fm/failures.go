package fm

import (
	"context"
	"fmt"

	"github.com/icn-hpc/icn/routing"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// FailureChange asks to fail or repair one link or node.
type FailureChange struct {
	Link   string `json:"link,omitempty"`
	Node   string `json:"node,omitempty"`
	Repair bool   `json:"repair,omitempty"`
}

// JobEffect is what a failure change did to one running job.
type JobEffect struct {
	ID int `json:"id"`
	// Result is "rerouted" (new verified table on the same nodes),
	// "broken" (no table possible on its nodes: migrate it) or "restored"
	// (a repair made its original kind of table possible again).
	Result      string     `json:"result"`
	Problem     string     `json:"problem,omitempty"`
	Unreachable *[2]string `json:"unreachable,omitempty"`
}

// FailureResult reports the effect of a failure change.
type FailureResult struct {
	Change      FailureChange `json:"change"`
	FailedLinks []string      `json:"failed_links"`
	FailedNodes []string      `json:"failed_nodes"`
	// AffectedJobs lists the jobs left without a working table (broken).
	AffectedJobs []int       `json:"affected_jobs"`
	Jobs         []JobEffect `json:"jobs"`
}

// ChangeFailure fails or repairs a link or node. Every running job whose
// table no longer verifies on the new fabric gets a new verified table on
// its own node set (rerouted) or, if none exists, is marked broken with
// the unreachable pair; a repair first re-routes broken jobs, then
// re-balances rerouted ones. The failure record and every job change are
// one transaction. The routing work runs on a snapshot, concurrently per
// job, without the service lock; reads and placements go on meanwhile.
func (s *Service) ChangeFailure(actor string, ch FailureChange) (*FailureResult, error) {
	if (ch.Link == "") == (ch.Node == "") {
		return nil, badRequest("give exactly one of link or node")
	}
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	s.mu.RLock()
	rec, base := s.fabric, s.base
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
	s.mu.RLock()
	placing := s.state != nil
	s.mu.RUnlock()
	if placing && md.routing == nil {
		// A torus that takes jobs must stay so (running jobs need it).
		return nil, fmt.Errorf("%w: after this change the fabric could not route jobs: %s", ErrConflict, md.noJobs)
	}
	label := actionName(ch) + " " + subject
	done := map[int]*JobRecord{} // job version re-checked
	results := map[int]recheckResult{}
	for round := 0; ; round++ {
		s.mu.Lock()
		var todo []*JobRecord
		for id, j := range s.jobs {
			if done[id] != j {
				todo = append(todo, j)
			}
		}
		if len(todo) == 0 {
			break
		}
		if round < 3 {
			// Jobs placed or migrated meanwhile are re-checked in
			// another round, again without the lock.
			s.mu.Unlock()
		}
		for _, r := range s.recheck(md, todo, ch.Repair, label) {
			done[r.old.ID] = r.old
			results[r.old.ID] = r
		}
		if round >= 3 {
			break
		}
	}
	res, err := s.commitFailure(actor, ch, subject, md, results)
	s.mu.Unlock()
	if err == nil {
		// Multicast trees follow the fabric (under changeMu, so in order).
		s.mc.fabricChanged(md.g)
	}
	return res, err
}

type recheckResult struct {
	old, new *JobRecord // new is nil if the job is unchanged
	effect   JobEffect
}

// recheck re-verifies jobs on the new model and re-routes those that need
// it, concurrently; broken jobs go first.
func (s *Service) recheck(md *model, jobs []*JobRecord, repair bool, label string) []recheckResult {
	sort.Slice(jobs, func(a, b int) bool {
		ba, bb := jobs[a].Routing == "broken", jobs[b].Routing == "broken"
		if ba != bb {
			return ba
		}
		return jobs[a].ID < jobs[b].ID
	})
	out := make([]recheckResult, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = s.recheckJob(md, jobs[i], repair, label)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// recheckJob re-verifies one job's table on the new model; if it fails
// (or, on a repair, if the job runs on a detour table or none), it builds
// a new table on the job's own nodes, or marks the job broken with the
// pair that has no legal route.
func (s *Service) recheckJob(md *model, j *JobRecord, repair bool, label string) recheckResult {
	r := recheckResult{old: j}
	if md.routing == nil {
		return r
	}
	works := j.Table != nil && md.routing.Check(j.Table) == nil
	detour := j.Routing == "rerouted" || j.Routing == "broken"
	if works && !(repair && detour) {
		return r
	}
	c := *j
	c.Problem, c.Unreachable = "", nil
	table, stats, err := s.routeJob(md, j)
	if err == nil {
		c.Table, c.Stats, c.Reachable, c.Routing = table, stats, true, "rerouted"
		if repair {
			c.Routing = "" // back on a table of the repaired fabric
		}
		r.new, r.effect = &c, JobEffect{ID: j.ID, Result: "rerouted"}
		return r
	}
	if works || j.Routing == "broken" && repair {
		return r // keeps its detour table, or stays broken
	}
	c.Problem = err.Error()
	if up, ok := err.(*unreachableError); ok {
		c.Unreachable = &up.pair
	}
	c.Reachable, c.Routing = false, "broken"
	c.Affected = append(slices.Clone(j.Affected), label)
	r.new, r.effect = &c, JobEffect{ID: j.ID, Result: "broken", Problem: c.Problem, Unreachable: c.Unreachable}
	return r
}

// unreachableError names a pair of active nodes with no legal route.
type unreachableError struct{ pair [2]string }

func (e *unreachableError) Error() string {
	return fmt.Sprintf("no legal route from %s to %s inside the job's nodes", e.pair[0], e.pair[1])
}

// routeJob builds a verified table for a job's node set on a model.
func (s *Service) routeJob(md *model, j *JobRecord) (*routing.TableJSON, TableStats, error) {
	active, err := nodesByName(md.g, j.Active)
	if err != nil {
		return nil, TableStats{}, err
	}
	transit, err := nodesByName(md.g, j.TransitN)
	if err != nil {
		return nil, TableStats{}, err
	}
	for _, v := range append(slices.Clone(active), transit...) {
		if md.g.NodeFailed(v) {
			return nil, TableStats{}, fmt.Errorf("node %s of the job has failed", md.g.NodeName(v))
		}
	}
	if ok, pair, err := md.routing.Unreachable(active, transit); err != nil {
		return nil, TableStats{}, err
	} else if !ok {
		return nil, TableStats{}, &unreachableError{[2]string{md.g.NodeName(pair[0]), md.g.NodeName(pair[1])}}
	}
	return md.routing.Routes(context.Background(), active, transit)
}

// commitFailure stores the fabric record and the job changes in one
// transaction and swaps the model (s.mu held for writing).
func (s *Service) commitFailure(actor string, ch FailureChange, subject string, md *model, results map[int]recheckResult) (*FailureResult, error) {
	res := &FailureResult{Change: ch, FailedLinks: md.rec.FailedLinks, FailedNodes: md.rec.FailedNodes,
		AffectedJobs: []int{}, Jobs: []JobEffect{}}
	changed := map[int]*JobRecord{}
	for id, r := range results {
		// Only jobs still running in the version that was re-checked.
		if r.new != nil && s.jobs[id] == r.old {
			changed[id] = r.new
		}
	}
	ids := sortedIDs(changed)
	for _, id := range ids {
		e := results[id].effect
		res.Jobs = append(res.Jobs, e)
		if e.Result == "broken" {
			res.AffectedJobs = append(res.AffectedJobs, id)
		}
	}
	err := s.store.Update(actor, func(tx *Tx) error {
		if err := tx.PutFabric(md.rec); err != nil {
			return err
		}
		for _, id := range ids {
			if err := tx.PutJob(changed[id]); err != nil {
				return err
			}
		}
		return tx.Log(actionName(ch), subject, map[string]any{"affected_jobs": res.AffectedJobs, "jobs": res.Jobs})
	})
	if err != nil {
		return nil, fmt.Errorf("storage: %v (nothing changed)", err)
	}
	s.fabric, s.g, s.routing, s.noJobs = md.rec, md.g, md.routing, md.noJobs
	if s.state != nil {
		st, err := s.state.WithGraph(md.g)
		if err != nil {
			return nil, fmt.Errorf("internal error: %v", err)
		}
		s.state = st
	}
	s.fabricVer++
	for _, id := range ids {
		s.jobs[id] = changed[id]
	}
	if res.FailedLinks == nil {
		res.FailedLinks = []string{}
	}
	if res.FailedNodes == nil {
		res.FailedNodes = []string{}
	}
	return res, nil
}

// applyChange updates the failure lists of rec and returns the canonical
// name of the link or node.
func applyChange(rec *FabricRecord, base interface {
	ParseLinks(string) ([]int, error)
	ParseNodes(string) ([]int, error)
	LinkName(int) string
	NodeName(int) string
}, ch FailureChange) (string, error) {
	if ch.Link != "" {
		ls, err := base.ParseLinks(ch.Link)
		if err != nil || len(ls) != 1 {
			if err == nil {
				err = fmt.Errorf("%q names %d links", ch.Link, len(ls))
			}
			return "", fmt.Errorf("%w: %v", ErrNotFound, err)
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
		return "", fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	subject := base.NodeName(vs[0])
	rec.FailedNodes = toggle(rec.FailedNodes, subject, !ch.Repair)
	return subject, nil
}

func actionName(ch FailureChange) string {
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
