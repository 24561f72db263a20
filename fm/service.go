package fm

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// Routing is what the service needs from torus routing for one fabric
// state: the node-selection questions plus verified tables for jobs.
type Routing interface {
	alloc.Router
	// Routes builds the verified, deadlock-free table of a placed job.
	Routes(active, transit []int) (*routing.TableJSON, TableStats, error)
	// Check re-verifies a stored table on the current fabric: every route
	// arrives, obeys the rule, avoids failed links and nodes, stays inside
	// the set, and the dependencies stay deadlock-free.
	Check(tf *routing.TableJSON) error
	// Rules names the routing rule in use.
	Rules() string
}

// RoutingFactory builds the routing of a fabric state (failures included).
type RoutingFactory func(g *topology.Graph) (Routing, error)

// Config configures a Service.
type Config struct {
	DBPath string
	// Topo is the fabric spec used when the database is created (default
	// DefaultTopo); an existing database keeps its own fabric unless
	// ReplaceTopo is set.
	Topo        string
	ReplaceTopo bool
	NewRouting  RoutingFactory
	// MulticastTimeout bounds how long a group may wait for missing joins
	// or leaves before it is destroyed (default 30 s).
	MulticastTimeout time.Duration
	// Now is the clock (default time.Now); tests inject their own.
	Now func() time.Time
}

// DefaultTopo is the demo fabric of a new database: a 4x4x4x2 Angara torus.
const DefaultTopo = "torus:4x4x4x2"

// Service is the fabric manager: persistent state plus the in-memory model
// derived from it. All methods are safe for concurrent use.
type Service struct {
	cfg   Config
	store *Store

	mu      sync.RWMutex
	fabric  FabricRecord
	base    *topology.Graph // structure, no failures
	g       *topology.Graph // with current failures
	state   *alloc.State
	sel     *alloc.Selector
	routing Routing
	jobs    map[int]*JobRecord
	token   []byte
	mc      *mcast
	m       *metrics
	noJobs  string // why this fabric takes no jobs ("" if it does)
}

// ErrConflict marks requests that are valid but cannot be satisfied now.
var ErrConflict = errors.New("conflict")

// ErrNotFound marks unknown jobs, groups, nodes or links.
var ErrNotFound = errors.New("not found")

// ErrBadRequest marks invalid requests.
var ErrBadRequest = errors.New("bad request")

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// Open opens or creates the database and rebuilds the in-memory state.
// On first run it generates the API token and returns it (once); later
// runs return "".
func Open(cfg Config) (*Service, string, error) {
	if cfg.NewRouting == nil {
		return nil, "", fmt.Errorf("no routing factory configured")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MulticastTimeout == 0 {
		cfg.MulticastTimeout = 30 * time.Second
	}
	st, created, err := OpenStore(cfg.DBPath)
	if err != nil {
		return nil, "", err
	}
	s := &Service{cfg: cfg, store: st, jobs: map[int]*JobRecord{}}
	fail := func(err error) (*Service, string, error) {
		st.Close()
		return nil, "", err
	}
	var token string
	var rec FabricRecord
	var have bool
	err = st.View(func(tx *Tx) error {
		s.token = tx.TokenHash()
		var err error
		rec, have, err = tx.Fabric()
		return err
	})
	if err != nil {
		return fail(err)
	}
	if s.token == nil {
		if token, err = newToken(TokenFile(cfg.DBPath)); err != nil {
			return fail(err)
		}
		s.token = hashToken(token)
		if err := st.Update("system", func(tx *Tx) error { return tx.SetTokenHash(s.token) }); err != nil {
			return fail(err)
		}
	}
	if !have || cfg.ReplaceTopo {
		spec := cfg.Topo
		if spec == "" {
			spec = rec.Spec
		}
		if spec == "" {
			spec = DefaultTopo
		}
		if have && spec != rec.Spec {
			// Replacing the fabric of a database with running jobs would
			// orphan their node sets.
			running := 0
			st.View(func(tx *Tx) error {
				return tx.Jobs(func(j *JobRecord) error {
					if j.State == "running" {
						running++
					}
					return nil
				})
			})
			if running > 0 {
				return fail(fmt.Errorf("cannot replace the fabric: %d jobs are still running in %s", running, cfg.DBPath))
			}
		}
		if !have || spec != rec.Spec {
			rec = FabricRecord{Spec: spec, Updated: cfg.Now().UTC()}
		}
		if _, err := topology.Parse(spec); err != nil {
			return fail(err)
		}
		err = st.Update("system", func(tx *Tx) error {
			if err := tx.PutFabric(rec); err != nil {
				return err
			}
			action := "fabric.create"
			if have {
				action = "fabric.replace"
			}
			return tx.Log(action, spec, map[string]any{"created_db": created})
		})
		if err != nil {
			return fail(err)
		}
	}
	if err := s.loadFabric(rec); err != nil {
		return fail(fmt.Errorf("stored fabric: %v", err))
	}
	err = st.View(func(tx *Tx) error {
		return tx.Jobs(func(j *JobRecord) error {
			if j.State != "running" {
				return nil
			}
			nodes, err := s.nodesByName(append(slices.Clone(j.Active), j.TransitN...))
			if err != nil {
				return fmt.Errorf("job %d: %v", j.ID, err)
			}
			if s.state == nil {
				return fmt.Errorf("job %d is running on a fabric that takes no jobs", j.ID)
			}
			if err := s.state.Occupy(j.ID, nodes); err != nil {
				return fmt.Errorf("job %d: %v", j.ID, err)
			}
			s.jobs[j.ID] = j
			return nil
		})
	})
	if err != nil {
		return fail(fmt.Errorf("stored jobs: %v", err))
	}
	s.mc = newMcast(s)
	if err := s.mc.load(); err != nil {
		return fail(fmt.Errorf("stored multicast groups: %v", err))
	}
	s.m = newMetrics(s)
	return s, token, nil
}

// Close closes the database.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store.Close()
}

// loadFabric (re)builds the graph, state and routing from a record.
func (s *Service) loadFabric(rec FabricRecord) error {
	base, err := topology.Parse(rec.Spec)
	if err != nil {
		return err
	}
	g, err := base.ApplyFaults(strings.Join(rec.FailedLinks, ","), strings.Join(rec.FailedNodes, ","))
	if err != nil {
		return err
	}
	// Job placement and torus routing need a direct torus; on other
	// fabrics (fat trees, dragonflies, imported files) the service still
	// manages failures and multicast groups, and refuses jobs.
	var state *alloc.State
	var rt Routing
	var why string
	if s.state != nil {
		state, err = s.state.WithGraph(g)
	} else {
		state, err = alloc.NewState(g)
	}
	if err == nil {
		rt, err = s.cfg.NewRouting(g)
	}
	if err != nil {
		if s.state != nil {
			return err // a torus that was usable must stay so
		}
		state, rt, why = nil, nil, err.Error()
	}
	s.fabric, s.base, s.g, s.state, s.routing, s.noJobs = rec, base, g, state, rt, why
	if s.sel == nil && state != nil {
		s.sel = alloc.NewSelector(state)
	}
	return nil
}

// Rules names the torus routing rule, or "none" on fabrics without job
// placement.
func (s *Service) rules() string {
	if s.routing == nil {
		return "none"
	}
	return s.routing.Rules()
}

func (s *Service) nodesByName(names []string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		v := s.g.NodeByName(n)
		if v < 0 {
			return nil, fmt.Errorf("%w: unknown node %q", ErrNotFound, n)
		}
		out[i] = v
	}
	return out, nil
}

func (s *Service) names(nodes []int) []string {
	out := make([]string, len(nodes))
	for i, v := range nodes {
		out[i] = s.g.NodeName(v)
	}
	return out
}

// ---- fabric ----

// FabricView is the fabric as the API shows it.
type FabricView struct {
	Spec        string     `json:"spec"`
	Dims        []int      `json:"dims,omitempty"`
	Nodes       []NodeView `json:"nodes"`
	Links       []LinkView `json:"links"`
	FailedLinks []string   `json:"failed_links"`
	FailedNodes []string   `json:"failed_nodes"`
	Rules       string     `json:"rules"`
}

// NodeView is one node.
type NodeView struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Coord  []int  `json:"coord,omitempty"`
	Failed bool   `json:"failed,omitempty"`
	Job    int    `json:"job,omitempty"`
}

// LinkView is one duplex link.
type LinkView struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	A      int    `json:"a"`
	B      int    `json:"b"`
	Dim    int    `json:"dim"`
	Failed bool   `json:"failed,omitempty"`
}

// Fabric returns the current fabric.
func (s *Service) Fabric() FabricView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g := s.g
	v := FabricView{Spec: s.fabric.Spec, Dims: g.Dims(), FailedLinks: slices.Clone(s.fabric.FailedLinks),
		FailedNodes: slices.Clone(s.fabric.FailedNodes), Rules: s.rules()}
	v.Nodes = make([]NodeView, g.NumNodes())
	for i := range v.Nodes {
		v.Nodes[i] = NodeView{ID: i, Name: g.NodeName(i), Kind: g.Kind(i).String(), Coord: g.Coord(i),
			Failed: g.NodeFailed(i)}
		if s.state != nil {
			v.Nodes[i].Job = s.state.Owner(i)
		}
	}
	v.Links = make([]LinkView, g.NumLinks())
	for l := range v.Links {
		lk := g.Link(l)
		v.Links[l] = LinkView{ID: l, Name: g.LinkName(l), A: int(lk.A), B: int(lk.B), Dim: int(lk.Dim), Failed: g.LinkFailed(l)}
	}
	if v.FailedLinks == nil {
		v.FailedLinks = []string{}
	}
	if v.FailedNodes == nil {
		v.FailedNodes = []string{}
	}
	return v
}

// Metrics returns the topology metrics of the current fabric.
func (s *Service) Metrics() topology.Metrics {
	s.mu.RLock()
	g := s.g
	s.mu.RUnlock()
	return topology.Measure(g, topology.MetricsOptions{})
}

// FailureChange asks to fail or repair one link or node.
type FailureChange struct {
	Link   string `json:"link,omitempty"`
	Node   string `json:"node,omitempty"`
	Repair bool   `json:"repair,omitempty"`
}

// FailureResult reports the effect of a failure change.
type FailureResult struct {
	Change       FailureChange `json:"change"`
	FailedLinks  []string      `json:"failed_links"`
	FailedNodes  []string      `json:"failed_nodes"`
	AffectedJobs []int         `json:"affected_jobs"`
}

// ChangeFailure fails or repairs a link or node, re-verifies every running
// job on the new fabric and records which became unreachable.
func (s *Service) ChangeFailure(actor string, ch FailureChange) (*FailureResult, error) {
	if (ch.Link == "") == (ch.Node == "") {
		return nil, badRequest("give exactly one of link or node")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.fabric
	rec.FailedLinks = slices.Clone(rec.FailedLinks)
	rec.FailedNodes = slices.Clone(rec.FailedNodes)
	var subject string
	if ch.Link != "" {
		ls, err := s.base.ParseLinks(ch.Link)
		if err != nil || len(ls) != 1 {
			if err == nil {
				err = fmt.Errorf("%q names %d links", ch.Link, len(ls))
			}
			return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
		}
		subject = s.base.LinkName(ls[0])
		rec.FailedLinks = toggle(rec.FailedLinks, subject, !ch.Repair)
	} else {
		vs, err := s.base.ParseNodes(ch.Node)
		if err != nil || len(vs) != 1 {
			if err == nil {
				err = fmt.Errorf("%q names %d nodes", ch.Node, len(vs))
			}
			return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
		}
		subject = s.base.NodeName(vs[0])
		rec.FailedNodes = toggle(rec.FailedNodes, subject, !ch.Repair)
	}
	rec.Updated = s.cfg.Now().UTC()
	// Build the new model first; commit; only then keep it.
	oldFabric, oldBase, oldG, oldState, oldRouting, oldNoJobs := s.fabric, s.base, s.g, s.state, s.routing, s.noJobs
	restore := func() {
		s.fabric, s.base, s.g, s.state, s.routing, s.noJobs = oldFabric, oldBase, oldG, oldState, oldRouting, oldNoJobs
	}
	if err := s.loadFabric(rec); err != nil {
		restore()
		return nil, err
	}
	affected := map[int]*JobRecord{}
	for id, j := range s.jobs {
		ok := j.Table != nil && s.routing.Check(j.Table) == nil
		if ok != j.Reachable || !ok {
			c := *j
			c.Reachable = ok
			if !ok {
				c.Affected = append(slices.Clone(j.Affected), actionName(ch)+" "+subject)
			}
			affected[id] = &c
		}
	}
	action := actionName(ch)
	err := s.store.Update(actor, func(tx *Tx) error {
		if err := tx.PutFabric(rec); err != nil {
			return err
		}
		for _, j := range affected {
			if err := tx.PutJob(j); err != nil {
				return err
			}
		}
		ids := sortedIDs(affected)
		return tx.Log(action, subject, map[string]any{"affected_jobs": ids})
	})
	if err != nil {
		restore()
		return nil, fmt.Errorf("storage: %v (nothing changed)", err)
	}
	res := &FailureResult{Change: ch, FailedLinks: rec.FailedLinks, FailedNodes: rec.FailedNodes, AffectedJobs: []int{}}
	for _, id := range sortedIDs(affected) {
		j := affected[id]
		s.jobs[id] = j
		if !j.Reachable {
			res.AffectedJobs = append(res.AffectedJobs, id)
		}
	}
	if res.FailedLinks == nil {
		res.FailedLinks = []string{}
	}
	if res.FailedNodes == nil {
		res.FailedNodes = []string{}
	}
	s.mc.fabricChanged()
	return res, nil
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

func sortedIDs(m map[int]*JobRecord) []int {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// ---- jobs ----

// JobRequest asks for an allocation.
type JobRequest struct {
	Name    string `json:"name,omitempty"`
	Nodes   int    `json:"nodes"`
	Transit int    `json:"transit"`
	Algo    string `json:"algo,omitempty"`
}

// Submit places a job: it selects a node set, builds and verifies its
// routing table, and stores the job, all under the service lock, so no
// node is ever given to two jobs. If the job cannot be placed now the
// error wraps ErrConflict and says why.
func (s *Service) Submit(actor string, req JobRequest) (*JobRecord, error) {
	if req.Nodes < 1 {
		return nil, badRequest("nodes must be at least 1")
	}
	if req.Transit < 0 {
		return nil, badRequest("transit must not be negative")
	}
	if len(req.Name) > 200 {
		return nil, badRequest("name longer than 200 characters")
	}
	algo := alloc.Improved
	if req.Algo != "" {
		a, err := alloc.ParseAlgo(req.Algo)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		algo = a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return nil, badRequest("this fabric takes no jobs: %s", s.noJobs)
	}
	if req.Nodes > s.state.N() {
		return nil, badRequest("the fabric has only %d nodes", s.state.N())
	}
	res, err := s.sel.Select(s.state, s.routing, alloc.Request{Nodes: req.Nodes, Transit: req.Transit, Algo: algo})
	if err != nil {
		return nil, err
	}
	s.m.allocation.Observe(res.Seconds)
	if res.Chosen == nil {
		return nil, fmt.Errorf("%w: cannot place now: %s", ErrConflict, res.Reason)
	}
	c := res.Chosen
	table, stats, err := s.routing.Routes(c.Active, c.Transit)
	if err != nil {
		return nil, fmt.Errorf("routing table for the chosen nodes: %v", err)
	}
	j := &JobRecord{Name: req.Name, State: "running", Nodes: req.Nodes, Transit: req.Transit, Algo: string(algo),
		Active: s.names(c.Active), TransitN: s.names(c.Transit), Rules: s.routing.Rules(), Table: table,
		Stats: stats, Created: s.cfg.Now().UTC(), Reachable: true}
	err = s.store.Update(actor, func(tx *Tx) error {
		id, err := tx.NextJobID()
		if err != nil {
			return err
		}
		j.ID = id
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.Log("job.submit", fmt.Sprintf("job %d", id), map[string]any{"nodes": req.Nodes, "transit": req.Transit,
			"active": j.Active, "transit_nodes": j.TransitN, "candidates": res.Found})
	})
	if err != nil {
		return nil, fmt.Errorf("storage: %v (the job was not placed)", err)
	}
	if err := s.state.Occupy(j.ID, append(slices.Clone(c.Active), c.Transit...)); err != nil {
		// Cannot happen: the selector only picks available nodes.
		return nil, fmt.Errorf("internal error: %v", err)
	}
	s.jobs[j.ID] = j
	return j, nil
}

// Release ends a running job and frees its nodes.
func (s *Service) Release(actor string, id int) (*JobRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return nil, fmt.Errorf("%w: no running job %d", ErrNotFound, id)
	}
	c := *j
	now := s.cfg.Now().UTC()
	c.State, c.Released = "released", &now
	err := s.store.Update(actor, func(tx *Tx) error {
		if err := tx.PutJob(&c); err != nil {
			return err
		}
		return tx.Log("job.release", fmt.Sprintf("job %d", id), nil)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: %v (the job keeps its nodes)", err)
	}
	s.state.Release(id)
	delete(s.jobs, id)
	return &c, nil
}

// Job returns a job (running or released).
func (s *Service) Job(id int) (*JobRecord, error) {
	s.mu.RLock()
	if j, ok := s.jobs[id]; ok {
		c := *j
		s.mu.RUnlock()
		return &c, nil
	}
	s.mu.RUnlock()
	var out *JobRecord
	err := s.store.View(func(tx *Tx) error {
		return tx.Jobs(func(j *JobRecord) error {
			if j.ID == id {
				out = j
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("%w: no job %d", ErrNotFound, id)
	}
	return out, nil
}

// Jobs lists running jobs (all jobs, including released ones, if all).
func (s *Service) Jobs(all bool) ([]*JobRecord, error) {
	if !all {
		s.mu.RLock()
		defer s.mu.RUnlock()
		out := make([]*JobRecord, 0, len(s.jobs))
		for _, id := range sortedIDs(s.jobs) {
			c := *s.jobs[id]
			c.Table = nil
			out = append(out, &c)
		}
		return out, nil
	}
	var out []*JobRecord
	err := s.store.View(func(tx *Tx) error {
		return tx.Jobs(func(j *JobRecord) error {
			j.Table = nil
			out = append(out, j)
			return nil
		})
	})
	return out, err
}

// VerifyJob re-checks a job's stored table on the current fabric.
func (s *Service) VerifyJob(id int) (ok bool, problem string, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	j, found := s.jobs[id]
	if !found {
		return false, "", fmt.Errorf("%w: no running job %d", ErrNotFound, id)
	}
	if j.Table == nil {
		return false, "the job has no stored routing table", nil
	}
	if err := s.routing.Check(j.Table); err != nil {
		return false, err.Error(), nil
	}
	return true, "", nil
}

// LinkLoads returns, per link, the number of routes of running jobs that
// cross it (either direction).
func (s *Service) LinkLoads() []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	loads := make([]int, s.g.NumLinks())
	dims := s.g.Dims()
	for _, j := range s.jobs {
		if j.Table == nil {
			continue
		}
		for _, r := range j.Table.Routes {
			c := slices.Clone(r.Src)
			for _, d := range r.Dirs {
				v := s.g.NodeAt(c)
				dim := topology.DimIndex(d[1:])
				if v < 0 || dim < 0 || dim >= len(dims) {
					break
				}
				sign := 1
				if d[0] == '-' {
					sign = -1
				}
				for _, ch := range s.g.Out(v) {
					if dd, ss := s.g.Dir(int(ch)); dd == dim && ss == sign {
						loads[int(ch)>>1]++
						break
					}
				}
				c[dim] = (c[dim] + sign + dims[dim]) % dims[dim]
			}
		}
	}
	return loads
}

// Audit returns audit-log events after seq (at most limit).
func (s *Service) Audit(after uint64, limit int) ([]Event, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	var out []Event
	err := s.store.View(func(tx *Tx) error {
		var err error
		out, err = tx.Events(after, limit)
		return err
	})
	if out == nil {
		out = []Event{}
	}
	return out, err
}

// Authorized reports whether an Authorization header carries the token.
func (s *Service) Authorized(header string) bool { return checkToken(header, s.token) }
