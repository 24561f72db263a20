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

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"

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
	Routes(ctx context.Context, active, transit []int) (*routing.TableJSON, client.TableStats, error)
	// VerifyTable re-verifies a stored table on the current fabric: every route
	// arrives, obeys the rule, avoids failed links and nodes, stays inside
	// the set, and the dependencies stay deadlock-free.
	VerifyTable(tf *routing.TableJSON) error
	// Rules names the routing rule in use.
	Rules() string
	// ReachableFirst reports whether every ordered pair of active nodes has
	// a legal route inside the set, and if not, one pair that has none.
	ReachableFirst(active, transit []int) (ok bool, pair [2]int, err error)
	// MissingFrom returns the sources (active node ids; all when nil)
	// that lack a legal route inside the set to some active node, and the
	// pair of the smallest of them with its smallest such destination
	// (routing.Router.MissingFrom).
	MissingFrom(active, transit, sources []int) (missing []int, pair [2]int, err error)
	// ReachableFrom is MissingFrom that stops at the first batch of
	// sources, in the order given, with a missing pair, and returns that
	// pair (routing.Router.ReachableFrom).
	ReachableFrom(active, transit, sources []int) (ok bool, pair [2]int, err error)
	// LegalPath returns the nodes of a legal route from src to dst
	// through the nodes of set and extra (src first, dst last) with the
	// fewest nodes of extra, then the fewest hops; nil if there is none.
	LegalPath(src, dst int, set, extra []int) ([]int, error)
	// ExtraTurns returns the order-violating turns the rule admits after
	// channel c (bit d set: a packet that arrived through c may go on in
	// direction d). Under angara* they depend on every failure of the
	// fabric, so a table that obeys the rule on one fabric state may break
	// it on another; other rules admit none (0).
	ExtraTurns(c int) uint16
}

// RoutingFactory builds the routing of a fabric state (failures included).
type RoutingFactory func(g *topology.Graph) (Routing, error)

// Config configures a Service.
type Config struct {
	// DBPath is the bbolt file of a service that runs alone; Etcd, the
	// etcd store of one instance of several (exactly one of them).
	DBPath string
	Etcd   *store.EtcdConfig
	// TokenFile holds the API token (default DBPath + ".token"; an etcd
	// store needs one, shared by its instances). It is created with mode
	// 0600 on the first start and refused when others can read it.
	TokenFile string
	// Lease is how long an instance of an etcd store leads without
	// renewing its lease (whole seconds; default DefaultLease): a standby
	// takes over within it after the leader dies or freezes.
	Lease time.Duration
	// Name names the instance (audit log, /healthz); URL is where clients
	// reach it, which standbys send writers to (307).
	Name, URL string
	// Rules names the torus routing rule (NewRouting's); the instances of
	// an etcd store must agree on it.
	Rules string
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
	// PlacementBudget bounds each placement (job submit or migration)
	// from its turn: node selection gets all of it (as icn alloc
	// --budget), and a job's table that does not fit in what is left is
	// built after the answer (see Service.SubmitContext). 0 means
	// alloc.DefaultBudget; a negative value means no budget (every
	// selection exhaustive, every table built before the answer).
	PlacementBudget time.Duration
	// RepairExtra is how many transit nodes beyond its own allowance
	// (JobRecord.Transit) a job may gain when a failure leaves its nodes
	// without a legal route (see ChangeFailure); 0 means
	// DefaultRepairExtra, a negative value none.
	RepairExtra int
	// FailureBudget bounds the re-routing of a failure change (after its
	// new fabric model is built): a job whose new table is not found
	// within it is committed with a pending table (client.RoutePending),
	// which the table builder builds and verifies after the answer, so a
	// failure that hits a job of thousands of nodes answers in about a
	// second rather than after the minutes its table takes. 0 means
	// DefaultFailureBudget; a negative value means none (every job is
	// re-routed before the answer). A repair re-balances its jobs before
	// the answer either way.
	FailureBudget time.Duration
	// tables: the table builder's hooks (tests).
	tables tableHooks
}

// DefaultLease is the default Config.Lease.
const DefaultLease = 3 * time.Second

// DefaultRepairExtra is the default Config.RepairExtra.
const DefaultRepairExtra = 2

// DefaultFailureBudget is the default Config.FailureBudget.
const DefaultFailureBudget = 250 * time.Millisecond

// defaultFailureBudget is what a zero Config.FailureBudget means (the
// package's tests, whose assertions on a failure's outcome must not
// depend on the speed of the host, make it unlimited).
var defaultFailureBudget = DefaultFailureBudget

// DefaultTopo is the demo fabric of a new database: a 4x4x4x2 Angara torus.
const DefaultTopo = "torus:4x4x4x2"

// Service is the fabric manager: persistent state plus the in-memory model
// derived from it. All methods are safe for concurrent use.
//
// The rules it keeps (and changes to it must keep):
//
//   - No lock that a read needs is held across I/O (a store write, a file,
//     the unicast hook): reads use values swapped in after each commit,
//     and writers are serialised among themselves by locks reads never
//     take.
//   - A commit computes everything that can fail before the store
//     commits (on copies); after the commit it only swaps in values,
//     which cannot fail, so memory never disagrees with the store.
//   - Every change takes a context: it stops, committing nothing, when
//     the context ends or the service closes.
//   - Every goroutine the service starts stops on Close. Close refuses
//     new changes (ErrClosing), cancels those in flight and the
//     service's goroutines, waits for all of them, then closes the store.
type Service struct {
	cfg   Config
	store *store.Store
	// loaded is the store revision the state was loaded from (etcd).
	loaded int64
	// counted holds, between loading the state and the start's first
	// write, the link loads counted from stored routes (storeCounted);
	// countedAtStart is how many jobs had theirs counted (tests).
	counted        map[int]store.Loads
	countedAtStart int
	// life tracks the changes in flight and the service's goroutines,
	// for Close (lifecycle.go).
	life      lifecycle
	term      atomic.Pointer[term] // the leadership in force (nil: a standby)
	rep       *replica             // an etcd store's instance (nil: bbolt)
	expired   atomic.Int64         // when answers to old request ids were last forgotten (unix ns)
	closeOnce sync.Once
	closeErr  error

	// mu guards the model below. It is held only to copy or swap parts
	// of it, never across the store's I/O, a placement, a routing-table
	// computation or a re-routing: those run on a snapshot and commit
	// with a check of fabricVer.
	mu        sync.RWMutex
	fabric    store.FabricRecord
	base      *topology.Graph // structure, no failures
	g         *topology.Graph // with current failures
	state     *alloc.State    // replaced by each commit, never changed in place after Open
	routing   Routing
	jobs      map[int]*client.JobRecord // records are never modified in place
	noJobs    string                    // why this fabric takes no jobs ("" if it does)
	fabricVer uint64                    // bumped by every committed failure change
	jobsVer   uint64                    // bumped by every change of jobs
	// reads caches answers computed from the fabric and the jobs, per
	// version of them (readCache); fm computes the fabric's metrics in
	// the background per fabric version.
	reads readCache
	fm    fabricMetrics
	// pieces are GET /api/fabric's pieces that no version changes
	// (fabricJSON).
	piecesOnce sync.Once
	pieces     *fabricPieces
	// gridOnce finds whether the fabric is a plain grid, whose node and
	// link lists GET /api/fabric?compact=1 leaves out (isPlainGrid).
	gridOnce  sync.Once
	plainGrid bool

	// places serialises placements and migrations: it hands the slot to
	// the waiting request with the earliest virtual deadline; a request
	// waiting for it gives up when its context ends.
	places placeQueue
	sel    *alloc.Selector // used while holding the placement slot only
	// tables builds the tables of jobs placed with a pending table
	// (tables.go).
	tables tableWork
	// routeSeconds (float64 bits) is the measured time of a job's table
	// per route on this host (0: not measured yet), for the placement
	// budget; selectSeconds likewise the time of a node selection per
	// node requested, for the placement queue.
	routeSeconds  atomic.Uint64
	selectSeconds atomic.Uint64
	changeMu      sync.Mutex // serialises failure changes
	// commitMu serialises every change of jobs, nodes and the fabric
	// (taken before mu): a commit checks its preconditions and writes
	// the store under commitMu alone, then takes mu only to apply the
	// change in memory, so reads never wait for the disk.
	commitMu sync.Mutex

	token atomic.Pointer[[]byte] // the API token's hash (setToken)
	mc    *mcast
	// observe, if set, learns the time of every node selection and
	// whether the budget cut it (ObserveAllocations).
	observe atomic.Pointer[func(seconds float64, cut bool)]
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
	uni   *client.UnicastStatus
	// rr keeps the unicast tables (rrMu serialises its use: changes and
	// the background rebalance); bgCancel stops the rebalance, which
	// closes bgDone when it ends. hook runs UnicastConfig.Hook in the
	// background, outside these locks.
	rrMu     sync.Mutex
	rr       *unicast.Rerouter
	bgMu     sync.Mutex
	bgCancel context.CancelFunc
	bgDone   chan struct{}
	// writeFile replaces the dump (nil: atomicfile.Write; tests make it
	// fail as a full disk does).
	writeFile func(path string, write func(io.Writer) error) error
	uniAnn    *unicast.Annotations
	hook      hookRunner
}

// Compacted returns the database file's size before and after Open
// compacted it (equal when it did not: fewer than half its pages were
// free).
func (s *Service) Compacted() (before, after int64) { return s.compacted[0], s.compacted[1] }

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", client.ErrBadRequest, fmt.Sprintf(format, a...))
}

// Open opens or creates the store and rebuilds the in-memory state: a
// bbolt file (Config.DBPath), or an etcd cluster shared with other
// instances (Config.Etcd), of which one leads and the others stand by
// (replica.go). On first run it generates the API token and returns it
// (once); later runs return "". An existing store is checked first
// exactly as Check does, reading only: a store it refuses is left as it
// was; only a store that passes is migrated (older bbolt schemas) and
// written.
func Open(cfg Config) (*Service, string, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, "", err
	}
	if cfg.Etcd != nil {
		return openEtcd(cfg)
	}
	st, created, err := store.OpenBolt(cfg.DBPath)
	if err != nil {
		return nil, "", err
	}
	s := newService(cfg, st)
	fail := func(err error) (*Service, string, error) {
		s.shutdown()
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
	if err := st.Migrate(); err != nil {
		return fail(err)
	}
	if s.compacted[0], s.compacted[1], err = st.CompactIfSparse(); err != nil {
		return fail(err)
	}
	if err := s.storeCounted(); err != nil {
		return fail(err)
	}
	if !have || cfg.ReplaceTopo {
		if rec, err = s.initFabric(rec, have, created); err != nil {
			return fail(err)
		}
		s.jobs = map[int]*client.JobRecord{}
		if err := s.loadState(nil, rec); err != nil {
			return fail(err)
		}
	}
	s.lead(nil) // the only instance: it leads for good
	s.spawnLeader(s.buildTables)
	if err := s.startServing(); err != nil {
		return fail(err)
	}
	return s, token, nil
}

// newService is a service on an open store, its state not loaded yet.
func newService(cfg Config, st *store.Store) *Service {
	if st.Now == nil {
		st.Now = cfg.Now // the audit log's and the request answers' clock
	}
	s := &Service{cfg: cfg, store: st, jobs: map[int]*client.JobRecord{}}
	s.places.now, s.places.expected = cfg.Now, s.placementEstimate
	s.tables.kick = make(chan struct{}, 1)
	s.reads.kick = make(chan struct{}, 1)
	s.fm.measure = measureFabric
	return s
}

// startServing starts what a service runs once its state is loaded: the
// unicast tables (Config.Unicast; on a replicated store only the leader
// writes them), the metrics, and GET /api/fabric's pieces.
func (s *Service) startServing() error {
	if s.cfg.Unicast != nil {
		s.mu.RLock()
		g, spec := s.g, s.fabric.Spec
		s.mu.RUnlock()
		var err error
		if s.uniAnn, err = unicast.AnnotationsOf(spec); err != nil {
			return fmt.Errorf("unicast tables: %v", err)
		}
		s.startHook()
		if s.leading() != nil {
			if u := s.refreshUnicast(g); u.Error != "" && !u.Written {
				// The start refuses what it cannot route (an unknown
				// engine, a fabric without switches, an unwritable dump).
				return fmt.Errorf("unicast tables: %s", u.Error)
			}
		}
	}
	s.refreshMetrics()
	// GET /api/fabric's pieces, built meanwhile (a first read waits for
	// them).
	g := s.g
	go s.piecesOnce.Do(func() { s.pieces = newFabricPieces(g) })
	s.spawn(s.warmReads)
	return nil
}

// jobsChanged counts a new version of the running jobs (callers hold mu
// for writing) and has the reads of the new version computed in the
// background.
func (s *Service) jobsChanged() {
	s.jobsVer++
	select {
	case s.reads.kick <- struct{}{}:
	default:
	}
}

// warmReads computes the answers of GET /api/jobs and GET
// /api/fabric/load for each new version of the jobs as it comes (the
// latest when several came meanwhile), off the requests' path: a read
// that comes after finds them, one that comes during waits only for the
// rest (a 60 %-full Sequoia's take about 40 ms).
func (s *Service) warmReads(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.reads.kick:
		}
		s.mu.RLock()
		ver := s.jobsVer
		s.mu.RUnlock()
		s.reads.warmMu.Lock()
		hooks := slices.Clone(s.reads.onKept)
		s.reads.warmMu.Unlock()
		jobs := s.JobsJSON()
		for _, fn := range hooks {
			fn("jobs", jobs)
		}
		loads := s.LoadsJSON()
		for _, fn := range hooks {
			fn("load", loads)
		}
		s.reads.warmed.Store(ver)
	}
}

// OnKept has fn called from the background with the answers of GET
// /api/jobs ("jobs") and GET /api/fabric/load ("load") of each new
// version of the jobs, once they are computed (the HTTP API makes their
// entity tags and gzip forms then).
func (s *Service) OnKept(fn func(endpoint string, data []byte)) {
	s.reads.warmMu.Lock()
	defer s.reads.warmMu.Unlock()
	s.reads.onKept = append(s.reads.onKept, fn)
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
	if cfg.FailureBudget == 0 {
		cfg.FailureBudget = defaultFailureBudget
	}
	if cfg.TokenFile == "" && cfg.DBPath != "" {
		cfg.TokenFile = TokenFile(cfg.DBPath)
	}
	if cfg.Etcd != nil {
		if cfg.DBPath != "" {
			return cfg, fmt.Errorf("give a bbolt file or an etcd store, not both")
		}
		if cfg.TokenFile == "" {
			return cfg, fmt.Errorf("an etcd store needs a token file shared by its instances (icn serve --token-file FILE)")
		}
		if cfg.Lease == 0 {
			cfg.Lease = DefaultLease
		}
		if cfg.Lease < time.Second || cfg.Lease%time.Second != 0 {
			return cfg, fmt.Errorf("lease %v: give whole seconds, at least 1s (etcd leases count seconds)", cfg.Lease)
		}
	}
	return cfg, nil
}

// Check runs on the store every check Open runs before it serves (a
// bbolt file's pages, every record, then the stored fabric, jobs and
// multicast groups as the service rebuilds them, cross-record checks
// included), reading only: nil means Open will serve the store.
func Check(cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	var st *store.Store
	if cfg.Etcd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var empty bool
		st, empty, err = store.OpenEtcdStore(ctx, *cfg.Etcd)
		if err == nil && empty {
			st.Close()
			return fmt.Errorf("%s holds no icn store yet (icn serve creates one)", cfg.Etcd.URL())
		}
		if err == nil {
			if err = st.Check(ctx); err != nil {
				st.Close()
			}
		}
	} else {
		st, err = store.OpenBoltReadOnly(cfg.DBPath)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	s := newService(cfg, st)
	_, _, err = s.loadStored(false)
	return err
}

// loadStored reads the token hash and the fabric record and, unless the
// fabric is missing or about to be replaced, rebuilds the fabric, the
// running jobs and the multicast groups from the store, in one read
// transaction (one revision of an etcd store, which it returns in
// s.loaded). It only reads; an error names the record at fault and says
// that the store was not modified.
func (s *Service) loadStored(replace bool) (rec store.FabricRecord, have bool, err error) {
	s.loaded, err = s.store.View(context.Background(), func(tx *store.Tx) error {
		var err error
		h, err := tx.TokenHash()
		if err != nil {
			return err
		}
		s.setToken(h)
		rec, have, err = tx.Fabric()
		if err == nil && have && !replace {
			err = s.loadState(tx, rec)
		}
		return err
	})
	if errors.Is(err, store.ErrUnavailable) {
		return rec, have, err
	}
	if err != nil {
		return rec, have, fmt.Errorf("%s: %w: %v; %s", s.store.Name(), store.ErrDamaged, err, unmodified(s.store))
	}
	return rec, have, nil
}

// unmodified says that a store was left as it was.
func unmodified(st *store.Store) string {
	if st.Kind() == "bolt" {
		return "the file was not modified"
	}
	return "nothing was written"
}

// loadState rebuilds fabric, jobs and multicast groups from the store
// (tx; nil: a read transaction of its own).
func (s *Service) loadState(tx *store.Tx, rec store.FabricRecord) error {
	if tx == nil {
		var err error
		s.loaded, err = s.store.View(context.Background(), func(tx *store.Tx) error { return s.loadState(tx, rec) })
		return err
	}
	if err := s.loadFabric(rec); err != nil {
		return fmt.Errorf("stored fabric: %v", err)
	}
	if err := s.loadJobs(tx); err != nil {
		return err
	}
	s.mc = newMcast(s)
	if err := s.mc.load(tx); err != nil {
		return fmt.Errorf("stored multicast groups: %v", err)
	}
	return nil
}

// openToken creates (first run) or rotates the API token, or checks that
// the token file still holds the stored one. It returns the token while it
// has not been shown by a start that served (see TokenShown), else "".
func (s *Service) openToken(created bool) (string, error) {
	path := s.cfg.TokenFile
	var token string
	var err error
	switch {
	case s.tokenHash() == nil && !s.cfg.RotateToken:
		if token, err = newToken(path); err != nil {
			return "", err
		}
	case s.cfg.RotateToken:
		if token, err = writeToken(path); err != nil {
			return "", err
		}
	default:
		if token, err = readToken(path, s.tokenHash()); err != nil {
			return "", err
		}
	}
	shown := false
	_, err = s.store.Update(context.Background(), "system", func(tx *store.Tx) error {
		if h := hashToken(token); !slices.Equal(h, s.tokenHash()) {
			s.setToken(h)
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
		var err error
		shown, err = tx.TokenShown()
		return err
	})
	if err != nil || shown {
		return "", err
	}
	return token, nil
}

// TokenShown records that the token was shown by a start that serves, so
// later starts do not print it again (a bbolt store; the token of an
// etcd store is shown by the start that creates its file).
func (s *Service) TokenShown() error {
	if s.store.Kind() != "bolt" {
		return nil
	}
	_, err := s.store.Update(context.Background(), "system", func(tx *store.Tx) error { return tx.SetTokenShown(true) })
	return err
}

// Close stops the service and closes the store: new changes are refused
// with ErrClosing from the moment it begins, the changes in flight are
// cancelled (those that reached their commit finish it, the others
// commit nothing) and the service's goroutines (the unicast rebalance
// and hook, the replica's follower and campaign) are stopped; Close
// waits for all of them before it closes the store, so nothing writes
// after it and no goroutine of the service is left when it returns. A
// leader of a replicated store gives its leadership up, so that a
// standby takes over at once. Later calls return the first one's result.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.shutdown()
		s.stopMetrics()
		s.commitMu.Lock()
		defer s.commitMu.Unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closeErr = s.store.Close()
	})
	return s.closeErr
}

// initFabric stores the fabric record of a new database, or replaces the
// fabric of an existing one (refused while jobs run).
func (s *Service) initFabric(rec store.FabricRecord, have, created bool) (store.FabricRecord, error) {
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
		s.store.View(context.Background(), func(tx *store.Tx) error {
			return tx.Jobs(false, func(j *client.JobRecord) error {
				if j.State == client.JobRunning {
					running++
				}
				return nil
			})
		})
		if running > 0 {
			return rec, fmt.Errorf("cannot replace the fabric: %d jobs are still running in %s", running, s.store.Name())
		}
	}
	if !have || spec != rec.Spec {
		rec = store.FabricRecord{Spec: spec, Updated: s.cfg.Now().UTC()}
	}
	if _, err := topology.Parse(spec); err != nil {
		return rec, err
	}
	_, err := s.store.Update(context.Background(), "system", func(tx *store.Tx) error {
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
func (s *Service) loadJobs(tx *store.Tx) error {
	var stored []storedJob
	readErr := tx.JobsStored(func(j *client.JobRecord, routes []byte, loads *store.Loads) error {
		stored = append(stored, storedJob{j: j, routes: routes, loads: loads})
		return nil
	})
	s.decodeStored(stored)
	var err error
	for i := range stored {
		if err = s.loadJob(&stored[i]); err != nil {
			break
		}
		if sj := &stored[i]; sj.counted {
			if s.counted == nil {
				s.counted = map[int]store.Loads{}
			}
			s.counted[sj.j.ID] = loadsOf(*sj.links)
			s.countedAtStart++
		}
	}
	if err == nil {
		err = readErr
	}
	if err != nil {
		return fmt.Errorf("stored jobs: %v", err)
	}
	if s.state != nil {
		s.state, err = s.state.WithGraph(s.g)
	}
	return err
}

// storeCounted stores the link loads the start counted from stored
// routes (jobs whose loads were not stored: a store of an earlier schema,
// or tables committed without them), so that the next start reads them.
func (s *Service) storeCounted() error {
	if len(s.counted) == 0 {
		return nil
	}
	_, err := s.store.Update(context.Background(), "system", func(tx *store.Tx) error {
		for _, id := range slices.Sorted(maps.Keys(s.counted)) {
			if err := tx.PutJobLoads(id, s.counted[id]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storing the link loads counted at the start: %v", err)
	}
	s.counted = nil
	return nil
}

// storedJob is a job read back from the store by loadJobs.
type storedJob struct {
	j      *client.JobRecord
	routes []byte       // stored routes, valid during the read transaction
	loads  *store.Loads // their stored link loads, or nil
	err    error        // decoding the routes
	links  *jobLinks
	// counted: the links were counted from the routes (no loads were
	// stored): storeCounted stores them for the next start.
	counted bool
}

// decodeStored checks the stored jobs' routes, keeps them encoded with
// their jobs (keepEncoded: copied, the store's bytes are valid only
// during its read) and counts the running jobs' link loads from them, on
// all cores (nothing is served yet). A running job whose link loads are
// stored, tied to these routes by their checksum, takes them as stored:
// its routes are neither checked nor walked again (they were checked,
// or made by routing's encoder, when the loads were stored; the
// checksum, checked on reading, says they are the same bytes).
func (s *Service) decodeStored(stored []storedJob) {
	var ld *linkDirs
	for _, sj := range stored {
		if sj.j.State == client.JobRunning && sj.j.Table != nil {
			ld = newLinkDirs(s.g)
			break
		}
	}
	workers := par.Workers(0)
	scratch := make([]linkCounter, workers)
	par.For(len(stored), workers, func(w, i int) {
		sj := &stored[i]
		running := sj.j.State == client.JobRunning && sj.j.Table != nil
		var known *jobLinks
		if running && ld != nil && sj.loads != nil && sj.loads.AB != nil {
			// (Loads stored without their directions, by an icn of
			// schema 5, are counted again and stored with them.)
			known = linksOfLoads(ld, sj.j.Table, *sj.loads)
		}
		if sj.routes != nil && sj.j.Table != nil {
			if known == nil {
				if err := routing.CheckStoredRoutes(sj.routes, sj.j.Table); err != nil {
					sj.err = fmt.Errorf("job %d: %v", sj.j.ID, err)
					return
				}
			}
			if running {
				keepEncoded(sj.j, slices.Clone(sj.routes))
			}
		}
		switch {
		case known != nil:
			sj.links = known
		case ld != nil && running:
			jl := scratch[w].count(ld, sj.j.Table, sj.routes)
			sj.links, sj.counted = &jl, sj.routes != nil
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
	if j.State != client.JobRunning {
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
	s.jobsChanged()
	return nil
}

// model is the fabric-derived part of the service state.
type model struct {
	rec     store.FabricRecord
	base, g *topology.Graph
	routing Routing
	noJobs  string
	// ctx is the context of the failure change the model was built for
	// (nil: none): the re-routing done for it stops when ctx ends.
	ctx context.Context
}

// context returns the context of the change the model was built for.
func (md *model) context() context.Context {
	if md.ctx == nil {
		return context.Background()
	}
	return md.ctx
}

// buildModel builds graph and routing of a fabric record (no locks; the
// result is not yet the service's).
func (s *Service) buildModel(rec store.FabricRecord, base *topology.Graph) (*model, error) {
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
func (s *Service) loadFabric(rec store.FabricRecord) error {
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

// Fabric returns the current fabric.
func (s *Service) Fabric() client.FabricView {
	s.mu.RLock()
	g, state := s.g, s.state
	if state != nil {
		state = state.Clone()
	}
	v := client.FabricView{Spec: s.fabric.Spec, Dims: g.Dims(), FailedLinks: slices.Clone(s.fabric.FailedLinks),
		FailedNodes: slices.Clone(s.fabric.FailedNodes), Rules: s.rules(), Jobs: s.noJobs == "", NoJobs: s.noJobs}
	s.mu.RUnlock()
	v.Nodes = make([]client.NodeView, g.NumNodes())
	for i := range v.Nodes {
		v.Nodes[i] = client.NodeView{ID: i, Name: g.NodeName(i), Kind: g.Kind(i).String(), Coord: g.Coord(i),
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
	v.Links = make([]client.LinkView, g.NumLinks())
	for l := range v.Links {
		lk := g.Link(l)
		v.Links[l] = client.LinkView{ID: l, Name: g.LinkName(l), A: int(lk.A), B: int(lk.B), Dim: int(lk.Dim), Failed: g.LinkFailed(l)}
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

// metricsWait is how long a read of the metrics waits for a computation
// of the current fabric before it answers with the figures it has.
const metricsWait = 50 * time.Millisecond

// fabricMetrics keeps the latest computed metrics and the background
// computation of the current fabric's.
type fabricMetrics struct {
	mu     sync.Mutex
	latest client.MetricsView // Metrics and For only
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
		m.latest = client.MetricsView{Metrics: &v, For: &client.MetricsFabric{Version: ver, FailedLinks: links, FailedNodes: nodes,
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
func (s *Service) Metrics() client.MetricsView {
	return s.metricsWithin(metricsWait)
}

// metricsWithin is Metrics waiting at most wait.
func (s *Service) metricsWithin(wait time.Duration) client.MetricsView {
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
func (s *Service) WaitMetrics(ctx context.Context) (client.MetricsView, error) {
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
func (s *Service) metricsNow() (client.MetricsView, <-chan struct{}) {
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
	mu                        sync.Mutex
	loads, fabric, grid, jobs *readEntry
	loadAnswer                *loadAnswer   // the encoded answer of GET /api/fabric/load
	kick                      chan struct{} // a new version of the jobs (warmReads)
	warmMu                    sync.Mutex
	onKept                    []func(endpoint string, data []byte) // OnKept
	warmed                    atomic.Uint64                        // the version of the jobs warmReads computed last (at least)
	piecesMu                  sync.Mutex
	jobPieces                 map[int]*jobPiece // the running jobs' parts of GET /api/jobs (JobsJSON)
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
func (s *Service) Audit(after uint64, limit int) ([]client.Event, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	var out []client.Event
	_, err := s.store.View(context.Background(), func(tx *store.Tx) error {
		var err error
		out, err = tx.Events(after, limit)
		return err
	})
	if out == nil {
		out = []client.Event{}
	}
	return out, err
}

// Authorized reports whether an Authorization header carries the token.
func (s *Service) Authorized(header string) bool { return checkToken(header, s.tokenHash()) }

// setToken makes h the API token's hash.
func (s *Service) setToken(h []byte) { s.token.Store(&h) }

// tokenHash is the API token's hash (nil: none yet).
func (s *Service) tokenHash() []byte {
	if h := s.token.Load(); h != nil {
		return *h
	}
	return nil
}

// tableMatchesJob reports an error when the job's stored table routes
// between other nodes than the job holds (active and transit).
func tableMatchesJob(g *topology.Graph, j *client.JobRecord) error {
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
