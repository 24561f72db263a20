package fm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
)

// Routing is what the service needs from torus routing for one fabric
// state: the node-selection questions plus verified tables for jobs.
type Routing interface {
	alloc.Router
	// Routes builds the verified, deadlock-free table of a placed job; it
	// stops with ctx's error when ctx ends.
	Routes(ctx context.Context, active, transit []int) (*routing.TableJSON, TableStats, error)
	// VerifyTable re-verifies a stored table on the current fabric: every route
	// arrives, obeys the rule, avoids failed links and nodes, stays inside
	// the set, and the dependencies stay deadlock-free.
	VerifyTable(tf *routing.TableJSON) error
	// Rules names the routing rule in use.
	Rules() string
	// ReachableFirst reports whether every ordered pair of active nodes has
	// a legal route inside the set, and if not, one pair that has none.
	ReachableFirst(active, transit []int) (ok bool, pair [2]int, err error)
	// LegalPath returns the nodes of a legal route from src to dst
	// through the nodes of set and extra (src first, dst last) with the
	// fewest nodes of extra, then the fewest hops; nil if there is none.
	LegalPath(src, dst int, set, extra []int) ([]int, error)
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
	// RotateToken replaces the API token (file and stored hash).
	RotateToken bool
	// Unicast, if set, keeps the fabric's unicast forwarding tables (a
	// switched fabric) current in OpenSM's dump format.
	Unicast *UnicastConfig
	// PlacementBudget bounds each placement (job submit or migration):
	// node selection and the job's table together answer within it (see
	// Service.SubmitContext). 0 means alloc.DefaultBudget; a negative
	// value means no budget (every selection exhaustive).
	PlacementBudget time.Duration
	// RepairExtra is how many transit nodes beyond its own allowance
	// (JobRecord.Transit) a job may gain when a failure leaves its nodes
	// without a legal route (see ChangeFailure); 0 means
	// DefaultRepairExtra, a negative value none.
	RepairExtra int
}

// DefaultRepairExtra is the default Config.RepairExtra.
const DefaultRepairExtra = 2

// DefaultTopo is the demo fabric of a new database: a 4x4x4x2 Angara torus.
const DefaultTopo = "torus:4x4x4x2"

// Service is the fabric manager: persistent state plus the in-memory model
// derived from it. All methods are safe for concurrent use.
type Service struct {
	cfg   Config
	store *Store

	// mu guards the model below. It is held only to copy or swap parts
	// of it and around the store commit of a change, never across a
	// placement, a routing-table computation or a re-routing: those run
	// on a snapshot and commit with a check of fabricVer.
	mu        sync.RWMutex
	fabric    FabricRecord
	base      *topology.Graph // structure, no failures
	g         *topology.Graph // with current failures
	state     *alloc.State    // mutated in place only under mu (write)
	routing   Routing
	jobs      map[int]*JobRecord // records are never modified in place
	noJobs    string             // why this fabric takes no jobs ("" if it does)
	fabricVer uint64             // bumped by every committed failure change
	jobsVer   uint64             // bumped by every change of jobs
	// reads caches answers computed from the fabric and the jobs, per
	// version of them (readCache); fm computes the fabric's metrics in
	// the background per fabric version.
	reads readCache
	fm    fabricMetrics
	// pieces are GET /api/fabric's pieces that no version changes
	// (fabricJSON).
	piecesOnce sync.Once
	pieces     *fabricPieces

	// placeSem (capacity 1) serialises placements and migrations; a
	// request waiting for it gives up when its context ends.
	placeSem chan struct{}
	sel      *alloc.Selector // used while holding placeSem only
	// routeSeconds (float64 bits) is the measured time of a job's table
	// per route on this host (0: not measured yet), for the placement
	// budget.
	routeSeconds atomic.Uint64
	changeMu     sync.Mutex // serialises failure changes
	// commitMu serialises every change of jobs, nodes and the fabric
	// (taken before mu): a commit checks its preconditions and writes
	// the store under commitMu alone, then takes mu only to apply the
	// change in memory, so reads never wait for the disk.
	commitMu sync.Mutex

	token []byte
	mc    *mcast
	m     *metrics
	// compacted: the database's size before and after Open compacted it
	// (equal when it did not).
	compacted [2]int64
	// links caches, per job, the links its table's routes use, so that
	// a failure re-checks only the jobs it touches (jobLinks).
	linksMu  sync.Mutex
	links    map[int]jobLinks
	linkDirs *linkDirs // built from the first fabric graph: failures do not renumber links

	// uni is the status of the unicast tables (Config.Unicast); uniAnn
	// the LIDs and GUIDs of the fabric's file.
	uniMu sync.Mutex
	uni   *UnicastStatus
	// rr keeps the unicast tables (rrMu serialises its use: changes and
	// the background rebalance); bgCancel stops the rebalance, which
	// closes bgDone when it ends.
	rrMu     sync.Mutex
	rr       *unicast.Rerouter
	bgMu     sync.Mutex
	bgCancel context.CancelFunc
	bgDone   chan struct{}
	// writeFile replaces the dump (nil: atomicfile.Write; tests make it
	// fail as a full disk does).
	writeFile func(path string, write func(io.Writer) error) error
	uniAnn    *unicast.Annotations
}

// Compacted returns the database file's size before and after Open
// compacted it (equal when it did not: fewer than half its pages were
// free).
func (s *Service) Compacted() (before, after int64) { return s.compacted[0], s.compacted[1] }

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
// runs return "". An existing database is checked first exactly as Check
// does, reading only: a database it refuses is left byte for byte as it
// was; only a database that passes is migrated (schema 1) and written.
func Open(cfg Config) (*Service, string, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, "", err
	}
	st, created, err := OpenStore(cfg.DBPath)
	if err != nil {
		return nil, "", err
	}
	s := &Service{cfg: cfg, store: st, jobs: map[int]*JobRecord{}, placeSem: make(chan struct{}, 1)}
	fail := func(err error) (*Service, string, error) {
		st.Close()
		return nil, "", err
	}
	rec, have, err := s.loadStored(cfg.ReplaceTopo)
	if err != nil {
		return fail(err)
	}
	// Everything below may write (openToken writes only once the token
	// file is accepted).
	token, err := s.openToken(created)
	if err != nil {
		return fail(err)
	}
	if err := st.migrate(); err != nil {
		return fail(err)
	}
	if s.compacted[0], s.compacted[1], err = st.compactIfSparse(); err != nil {
		return fail(err)
	}
	if !have || cfg.ReplaceTopo {
		if rec, err = s.initFabric(rec, have, created); err != nil {
			return fail(err)
		}
		s.jobs = map[int]*JobRecord{}
		if err := s.loadState(rec); err != nil {
			return fail(err)
		}
	}
	if cfg.Unicast != nil {
		s.mu.RLock()
		g, spec := s.g, s.fabric.Spec
		s.mu.RUnlock()
		if s.uniAnn, err = unicast.AnnotationsOf(spec); err != nil {
			return fail(fmt.Errorf("unicast tables: %v", err))
		}
		if u := s.refreshUnicast(g); u.Error != "" && !u.Written {
			// The start refuses what it cannot route (an unknown engine,
			// a fabric without switches, an unwritable dump).
			return fail(fmt.Errorf("unicast tables: %s", u.Error))
		}
	}
	s.m = newMetrics(s)
	s.fm.measure = measureFabric
	s.refreshMetrics()
	// GET /api/fabric's pieces, built meanwhile (a first read waits for
	// them).
	g := s.g
	go s.piecesOnce.Do(func() { s.pieces = newFabricPieces(g) })
	return s, token, nil
}

// withDefaults fills in the configuration's defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.NewRouting == nil {
		return cfg, fmt.Errorf("no routing factory configured")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MulticastTimeout == 0 {
		cfg.MulticastTimeout = 30 * time.Second
	}
	if cfg.PlacementBudget == 0 {
		cfg.PlacementBudget = alloc.DefaultBudget
	}
	if cfg.RepairExtra == 0 {
		cfg.RepairExtra = DefaultRepairExtra
	}
	return cfg, nil
}

// Check runs on the database at cfg.DBPath every check Open runs before
// it serves (the file's pages and records, then the stored fabric, jobs
// and multicast groups as the service rebuilds them, cross-record checks
// included), reading only: nil means Open will serve the file.
func Check(cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	st, err := OpenStoreReadOnly(cfg.DBPath)
	if err != nil {
		return err
	}
	defer st.Close()
	s := &Service{cfg: cfg, store: st, jobs: map[int]*JobRecord{}}
	_, _, err = s.loadStored(false)
	return err
}

// loadStored reads the token hash and the fabric record and, unless the
// fabric is missing or about to be replaced, rebuilds the fabric, the
// running jobs and the multicast groups from the store. It only reads;
// an error names the record at fault and says that the file was not
// modified.
func (s *Service) loadStored(replace bool) (rec FabricRecord, have bool, err error) {
	err = s.store.View(func(tx *Tx) error {
		s.token = tx.TokenHash()
		var err error
		rec, have, err = tx.Fabric()
		return err
	})
	if err == nil && have && !replace {
		err = s.loadState(rec)
	}
	if err != nil {
		return rec, have, fmt.Errorf("%s: %w: %v; the file was not modified", s.cfg.DBPath, ErrDamaged, err)
	}
	return rec, have, nil
}

// loadState rebuilds fabric, jobs and multicast groups from the store.
func (s *Service) loadState(rec FabricRecord) error {
	if err := s.loadFabric(rec); err != nil {
		return fmt.Errorf("stored fabric: %v", err)
	}
	if err := s.loadJobs(); err != nil {
		return err
	}
	s.mc = newMcast(s)
	if err := s.mc.load(); err != nil {
		return fmt.Errorf("stored multicast groups: %v", err)
	}
	return nil
}

// openToken creates (first run) or rotates the API token, or checks that
// the token file still holds the stored one. It returns the token while it
// has not been shown by a start that served (see TokenShown), else "".
func (s *Service) openToken(created bool) (string, error) {
	path := TokenFile(s.cfg.DBPath)
	var token string
	var err error
	switch {
	case s.token == nil && !s.cfg.RotateToken:
		if token, err = newToken(path); err != nil {
			return "", err
		}
	case s.cfg.RotateToken:
		if token, err = writeToken(path); err != nil {
			return "", err
		}
	default:
		if token, err = readToken(path, s.token); err != nil {
			return "", err
		}
	}
	shown := false
	err = s.store.Update("system", func(tx *Tx) error {
		if h := hashToken(token); !slices.Equal(h, s.token) {
			s.token = h
			if err := tx.SetTokenHash(h); err != nil {
				return err
			}
			if err := tx.SetTokenShown(false); err != nil {
				return err
			}
			if !created {
				return tx.Log("token.rotate", "token", nil)
			}
			return nil
		}
		shown = tx.TokenShown()
		return nil
	})
	if err != nil || shown {
		return "", err
	}
	return token, nil
}

// TokenShown records that the token was shown by a start that serves, so
// later starts do not print it again.
func (s *Service) TokenShown() error {
	return s.store.Update("system", func(tx *Tx) error { return tx.SetTokenShown(true) })
}

// Close closes the database.
func (s *Service) Close() error {
	s.stopRebalance()
	s.stopMetrics()
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store.Close()
}

// initFabric stores the fabric record of a new database, or replaces the
// fabric of an existing one (refused while jobs run).
func (s *Service) initFabric(rec FabricRecord, have, created bool) (FabricRecord, error) {
	spec := s.cfg.Topo
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
		s.store.View(func(tx *Tx) error {
			return tx.Jobs(func(j *JobRecord) error {
				if j.State == JobRunning {
					running++
				}
				return nil
			})
		})
		if running > 0 {
			return rec, fmt.Errorf("cannot replace the fabric: %d jobs are still running in %s", running, s.cfg.DBPath)
		}
	}
	if !have || spec != rec.Spec {
		rec = FabricRecord{Spec: spec, Updated: s.cfg.Now().UTC()}
	}
	if _, err := topology.Parse(spec); err != nil {
		return rec, err
	}
	err := s.store.Update("system", func(tx *Tx) error {
		if err := tx.PutFabric(rec); err != nil {
			return err
		}
		action := "fabric.create"
		if have {
			action = "fabric.replace"
		}
		return tx.Log(action, spec, map[string]any{"created_db": created})
	})
	return rec, err
}

// loadJobs gives the running jobs their nodes again: occupied on the
// structure without failures (a broken job may hold a failed node), then
// the failures are applied.
//
// The stored jobs are read in id order; their tables' routes are decoded,
// and the running jobs' link loads counted from the stored routes, on all
// cores (decodeStored), so that the first read of the link loads after a
// start finds them; then the jobs are checked and given their nodes in id
// order. Errors are those of reading, decoding and checking the jobs one
// after the other: the first in id order.
func (s *Service) loadJobs() error {
	err := s.store.View(func(tx *Tx) error {
		var stored []storedJob
		readErr := tx.jobsStored(func(key []byte, j *JobRecord, routes []byte) error {
			stored = append(stored, storedJob{key: key, j: j, routes: routes})
			return nil
		})
		s.decodeStored(stored)
		for i := range stored {
			if err := s.loadJob(&stored[i]); err != nil {
				return err
			}
		}
		return readErr
	})
	if err != nil {
		return fmt.Errorf("stored jobs: %v", err)
	}
	if s.state != nil {
		s.state, err = s.state.WithGraph(s.g)
	}
	return err
}

// storedJob is a job read back from the store by loadJobs.
type storedJob struct {
	key    []byte
	j      *JobRecord
	routes []byte // stored routes, valid during the read transaction
	err    error  // decoding the routes
	links  *jobLinks
}

// decodeStored decodes the stored jobs' routes into their tables and
// counts the running jobs' link loads from the stored routes, on all
// cores (nothing is served yet).
func (s *Service) decodeStored(stored []storedJob) {
	var ld *linkDirs
	for _, sj := range stored {
		if sj.j.State == JobRunning && sj.j.Table != nil {
			ld = newLinkDirs(s.g)
			break
		}
	}
	workers := par.Workers(0)
	scratch := make([]linkCounter, workers)
	par.For(len(stored), workers, func(w, i int) {
		sj := &stored[i]
		if sj.routes != nil {
			if err := decodeRoutes(sj.routes, sj.j.Table); err != nil {
				sj.err = fmt.Errorf("job %s: %v", keyName(sj.key), err)
				return
			}
		}
		if ld != nil && sj.j.State == JobRunning && sj.j.Table != nil {
			jl := scratch[w].count(ld, sj.j.Table, sj.routes)
			sj.links = &jl
		}
	})
	if ld == nil {
		return
	}
	s.linksMu.Lock()
	defer s.linksMu.Unlock()
	s.linkDirs = ld
	if s.links == nil {
		s.links = map[int]jobLinks{}
	}
	for _, sj := range stored {
		if sj.links != nil && sj.err == nil {
			s.links[sj.j.ID] = *sj.links
		}
	}
}

// loadJob checks a running job read back by loadJobs and gives it its
// nodes.
func (s *Service) loadJob(sj *storedJob) error {
	j := sj.j
	if sj.err != nil {
		return sj.err
	}
	if j.State != JobRunning {
		return nil
	}
	nodes, err := nodesByName(s.g, append(slices.Clone(j.Active), j.TransitNodes...))
	if err != nil {
		return fmt.Errorf("job %d: %v", j.ID, err)
	}
	if s.state == nil {
		return fmt.Errorf("job %d is running on a fabric that takes no jobs", j.ID)
	}
	if err := tableMatchesJob(s.g, j); err != nil {
		return fmt.Errorf("job %d: %v", j.ID, err)
	}
	if err := s.state.Occupy(j.ID, nodes); err != nil {
		return fmt.Errorf("job %d: %v", j.ID, err)
	}
	s.jobs[j.ID] = j
	s.jobsVer++
	return nil
}

// model is the fabric-derived part of the service state.
type model struct {
	rec     FabricRecord
	base, g *topology.Graph
	routing Routing
	noJobs  string
}

// buildModel builds graph and routing of a fabric record (no locks; the
// result is not yet the service's).
func (s *Service) buildModel(rec FabricRecord, base *topology.Graph) (*model, error) {
	var err error
	if base == nil {
		if base, err = topology.Parse(rec.Spec); err != nil {
			return nil, err
		}
	}
	g, err := base.ApplyFaults(strings.Join(rec.FailedLinks, ","), strings.Join(rec.FailedNodes, ","))
	if err != nil {
		return nil, err
	}
	md := &model{rec: rec, base: base, g: g}
	// Job placement and torus routing need a direct torus; on other
	// fabrics (fat trees, dragonflies, imported files) the service still
	// manages failures and multicast groups, and refuses jobs.
	if _, err = alloc.NewState(g); err == nil {
		md.routing, err = s.cfg.NewRouting(g)
	}
	if err != nil {
		md.routing, md.noJobs = nil, err.Error()
	}
	return md, nil
}

// loadFabric installs the first model (Open).
func (s *Service) loadFabric(rec FabricRecord) error {
	md, err := s.buildModel(rec, nil)
	if err != nil {
		return err
	}
	s.fabric, s.base, s.g, s.routing, s.noJobs = md.rec, md.base, md.g, md.routing, md.noJobs
	if md.routing != nil {
		// Occupied on the structure without failures: a broken job may
		// hold a failed node; the failures are applied after the jobs
		// (Open).
		if s.state, err = alloc.NewState(md.base); err != nil {
			return err
		}
		s.sel = alloc.NewSelector(s.state)
		s.sel.Workers = computeWorkers()
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
	// Jobs: the fabric takes jobs (a torus with routing rules); NoJobs
	// says why not.
	Jobs   bool   `json:"jobs"`
	NoJobs string `json:"no_jobs,omitempty"`
}

// NodeView is one node.
type NodeView struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Coord  []int  `json:"coord,omitempty"`
	Failed bool   `json:"failed,omitempty"`
	Job    int    `json:"job,omitempty"`
	// Level is a switched fabric's switch level (fat trees: 1 = leaf),
	// Group its group (dragonflies); both from the generator or the file.
	Level *int `json:"level,omitempty"`
	Group *int `json:"group,omitempty"`
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
	g, state := s.g, s.state
	if state != nil {
		state = state.Clone()
	}
	v := FabricView{Spec: s.fabric.Spec, Dims: g.Dims(), FailedLinks: slices.Clone(s.fabric.FailedLinks),
		FailedNodes: slices.Clone(s.fabric.FailedNodes), Rules: s.rules(), Jobs: s.noJobs == "", NoJobs: s.noJobs}
	s.mu.RUnlock()
	v.Nodes = make([]NodeView, g.NumNodes())
	for i := range v.Nodes {
		v.Nodes[i] = NodeView{ID: i, Name: g.NodeName(i), Kind: g.Kind(i).String(), Coord: g.Coord(i),
			Failed: g.NodeFailed(i)}
		if l := g.Level(i); l >= 0 {
			v.Nodes[i].Level = &l
		}
		if gr := g.Group(i); gr >= 0 {
			v.Nodes[i].Group = &gr
		}
		if state != nil {
			v.Nodes[i].Job = state.Owner(i)
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

// Spec returns the fabric spec.
func (s *Service) Spec() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.fabric.Spec
}

// MetricsView is the answer of GET /api/fabric/metrics: the topology
// metrics last computed, the fabric they were computed for, and whether
// they are the current fabric's. The metrics are computed in the
// background for every fabric version (a failure change makes a new one),
// so a read never waits for them more than metricsWait.
type MetricsView struct {
	// Metrics are the figures of fabric For (nil: none computed yet).
	*topology.Metrics
	// For names the fabric the figures were computed for (nil with them).
	For *MetricsFabric `json:"for"`
	// FabricVersion is the version of the fabric now: 0 at the start,
	// one more with every failure or repair since.
	FabricVersion uint64 `json:"fabric_version"`
	// Current reports that the figures are the current fabric's.
	Current bool `json:"current"`
	// Pending reports that the figures of the current fabric are being
	// computed; they replace these when done.
	Pending bool `json:"pending"`
}

// MetricsFabric names the fabric a MetricsView's figures are of.
type MetricsFabric struct {
	// Version is the fabric version they were computed for.
	Version     uint64   `json:"version"`
	FailedLinks []string `json:"failed_links"`
	FailedNodes []string `json:"failed_nodes"`
	// Seconds is how long the computation took.
	Seconds float64 `json:"seconds"`
}

// metricsWait is how long a read of the metrics waits for a computation
// of the current fabric before it answers with the figures it has.
const metricsWait = 50 * time.Millisecond

// fabricMetrics keeps the latest computed metrics and the background
// computation of the current fabric's.
type fabricMetrics struct {
	mu     sync.Mutex
	latest MetricsView // Metrics and For only
	// The computation running (cancel nil: none), for fabric version
	// runVer; done is closed when it ends. running counts computations
	// not ended yet, stopped ones included.
	runVer  uint64
	cancel  context.CancelFunc
	done    chan struct{}
	running sync.WaitGroup
	closed  bool
	// measure computes the metrics of a fabric (Open sets it; tests
	// replace it).
	measure func(ctx context.Context, g *topology.Graph) (topology.Metrics, error)
}

// measureFabric is the default fabricMetrics.measure: every metric on
// all cores but one, which stays free for requests.
func measureFabric(ctx context.Context, g *topology.Graph) (topology.Metrics, error) {
	return topology.MeasureContext(ctx, g, topology.MetricsOptions{Workers: computeWorkers()})
}

// refreshMetrics starts the computation of the current fabric's metrics
// unless they are computed or being computed; one of an older fabric is
// stopped.
func (s *Service) refreshMetrics() {
	s.mu.RLock()
	ver, g := s.fabricVer, s.g
	links, nodes := slices.Clone(s.fabric.FailedLinks), slices.Clone(s.fabric.FailedNodes)
	s.mu.RUnlock()
	m := &s.fm
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || (m.latest.For != nil && m.latest.For.Version >= ver) || (m.cancel != nil && m.runVer >= ver) {
		return
	}
	if m.cancel != nil {
		m.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	m.runVer, m.cancel, m.done = ver, cancel, done
	measure := m.measure
	m.running.Add(1)
	go func() {
		defer m.running.Done()
		defer close(done)
		defer cancel()
		start := time.Now()
		v, err := measure(ctx, g)
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.done == done {
			m.cancel, m.done = nil, nil
		}
		if err != nil || (m.latest.For != nil && m.latest.For.Version >= ver) {
			return
		}
		if links == nil {
			links = []string{}
		}
		if nodes == nil {
			nodes = []string{}
		}
		m.latest = MetricsView{Metrics: &v, For: &MetricsFabric{Version: ver, FailedLinks: links, FailedNodes: nodes,
			Seconds: time.Since(start).Seconds()}}
	}()
}

// stopMetrics stops the background computation and waits for it, and
// for any stopped one still ending (Close).
func (s *Service) stopMetrics() {
	m := &s.fm
	m.mu.Lock()
	m.closed = true
	if m.cancel != nil {
		m.cancel()
	}
	m.mu.Unlock()
	m.running.Wait()
}

// Metrics returns the topology metrics last computed and says for which
// fabric: if those of the current fabric are being computed, it waits for
// them at most metricsWait, then answers with the latest (Pending).
func (s *Service) Metrics() MetricsView {
	return s.metricsWithin(metricsWait)
}

// metricsWithin is Metrics waiting at most wait.
func (s *Service) metricsWithin(wait time.Duration) MetricsView {
	s.refreshMetrics()
	v, done := s.metricsNow()
	if done != nil && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
		v, _ = s.metricsNow()
	}
	return v
}

// WaitMetrics returns the current fabric's metrics once computed, or the
// latest with ctx's error when ctx ends first.
func (s *Service) WaitMetrics(ctx context.Context) (MetricsView, error) {
	for {
		s.refreshMetrics()
		v, done := s.metricsNow()
		if v.Current || done == nil {
			// done nil and not current: the service is closed.
			return v, nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}

// metricsNow returns the latest metrics and, while those of the current
// fabric are being computed, a channel closed when that ends.
func (s *Service) metricsNow() (MetricsView, <-chan struct{}) {
	s.mu.RLock()
	ver := s.fabricVer
	s.mu.RUnlock()
	m := &s.fm
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.latest
	v.FabricVersion = ver
	v.Current = v.For != nil && v.For.Version == ver
	if !v.Current && m.cancel != nil && m.runVer == ver {
		v.Pending = true
		return v, m.done
	}
	return v, nil
}

// readEntry returns the read cache's entry in slot for the current
// fabric and, if withJobs, the current jobs.
func (s *Service) readEntry(slot **readEntry, withJobs bool) *readEntry {
	s.mu.RLock()
	key := readCacheKey{g: s.g}
	if withJobs {
		key.jobs = s.jobsVer
	}
	s.mu.RUnlock()
	return s.reads.entry(slot, key)
}

// readCacheKey names the version of the state an answer was computed
// from: the fabric (a failure change makes a new graph) and, for answers
// that depend on them, the jobs.
type readCacheKey struct {
	g    *topology.Graph
	jobs uint64
}

// readCache keeps the latest answer of each kind of read: callers of the
// same version share one computation (the first computes, the others
// wait for it), and a new version replaces the entry.
type readCache struct {
	mu                  sync.Mutex
	loads, fabric, jobs *readEntry
	loadAnswer          *loadAnswer // the encoded answer of GET /api/fabric/load
}

type readEntry struct {
	key   readCacheKey
	once  sync.Once
	value any
}

// entry returns the entry of *slot for key, replacing an older one.
func (c *readCache) entry(slot **readEntry, key readCacheKey) *readEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *slot == nil || (*slot).key != key {
		*slot = &readEntry{key: key}
	}
	return *slot
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

// tableMatchesJob reports an error when the job's stored table routes
// between other nodes than the job holds (active and transit).
func tableMatchesJob(g *topology.Graph, j *JobRecord) error {
	if j.Table == nil {
		return nil
	}
	for _, l := range []struct {
		what  string
		names []string
		table [][]int
	}{{"active", j.Active, j.Table.Active}, {"transit", j.TransitNodes, j.Table.Transit}} {
		nodes, err := nodesByName(g, l.names)
		if err != nil {
			return err
		}
		want := map[string]bool{}
		for _, v := range nodes {
			want[fmt.Sprint(g.Coord(v))] = true
		}
		have := map[string]bool{}
		for _, c := range l.table {
			have[fmt.Sprint(c)] = true
		}
		if !maps.Equal(want, have) {
			return fmt.Errorf("its routing table's %d %s nodes differ from the job's %d", len(have), l.what, len(want))
		}
	}
	return nil
}
