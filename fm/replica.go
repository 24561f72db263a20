package fm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// A service on an etcd store is one instance of several: one leads, the
// others stand by. Every instance keeps the whole state in memory and
// answers reads from it; only the leader changes the store, each change
// one etcd transaction conditioned on its leadership (store.Etcd), so a
// deposed or frozen leader can never land a write.
//
//   - A standby follows the store (store.Etcd.Follow): every committed
//     change is applied to its memory in revision order (applyChange), so
//     its state is warm, tables included, and its reads say which revision
//     they reflect.
//   - Every instance campaigns for leadership with a lease of
//     Config.Lease; the candidate first in line leads. When the leader
//     dies, freezes or is cut off from etcd, its lease runs out and the
//     next candidate takes over: it catches up with the store to the
//     revision of its election, then takes up the leader's duties
//     (takeOver): the multicast protocol and its deadlines, the unicast
//     tables and their hook, the sweep of chunk sets left by commits that
//     never happened, the expiry of request ids, the store's compaction.
//   - A leader whose lease runs out, or whose write the store refuses,
//     or that cannot reach the store, steps down (giveUp): new changes are
//     refused, those in flight cancelled, and it reads the whole state
//     again from the store before it follows the new leader: whatever it
//     held in memory that was not stored is gone.
type replica struct {
	s    *Service
	e    *store.Etcd
	self leaderInfo

	applied  atomic.Int64 // store revision the memory reflects
	latest   atomic.Int64 // the store's revision, as last seen
	contact  atomic.Int64 // unix nanoseconds of the last answer of the store
	problem  atomic.Value // string: why the store was not reached lately
	leader   atomic.Value // leaderInfo: the leader as last seen
	stepDown chan struct{}
	// applyMu serialises the changes of the memory a standby makes
	// (applyChange, reload).
	applyMu sync.Mutex
}

// leaderInfo is what an instance's candidacy shows the others.
type leaderInfo struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Term int64  `json:"-"`
}

// openEtcd opens an instance of an etcd store: it creates the store if
// the prefix holds none yet, checks that this instance agrees with it
// (token, fabric, rule), loads the state and starts following and
// campaigning.
func openEtcd(cfg Config) (*Service, string, error) {
	if cfg.ReplaceTopo {
		return nil, "", fmt.Errorf("%w: an etcd store keeps its fabric: to serve another, give another prefix (or copy the store, icn serve store copy)", client.ErrBadRequest)
	}
	if cfg.RotateToken {
		return nil, "", fmt.Errorf("%w: the token of an etcd store is the one in its instances' token file; rotating it is not supported yet (stop every instance, copy the store to a new prefix with a new token file)", client.ErrBadRequest)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, empty, err := store.OpenEtcdStore(ctx, *cfg.Etcd)
	if err != nil {
		return nil, "", err
	}
	if cfg.Name == "" {
		cfg.Name, _ = os.Hostname()
	}
	st.Instance = cfg.Name
	s := newService(cfg, st)
	fail := func(err error) (*Service, string, error) {
		s.shutdown()
		st.Close()
		return nil, "", err
	}
	token := ""
	if empty {
		if token, err = s.createEtcd(ctx); err != nil {
			return fail(err)
		}
	}
	rec, have, err := s.loadStored(false)
	if err != nil {
		return fail(err)
	}
	// Only a leader writes: the link loads counted at this start are not
	// stored (storeCounted), and a later start counts them again.
	s.counted = nil
	if !have {
		return fail(fmt.Errorf("%s: %w: the store has no fabric record; nothing was written", st.Name(), store.ErrDamaged))
	}
	if err := s.agree(ctx, rec); err != nil {
		return fail(err)
	}
	r := &replica{s: s, e: st.Etcd(), self: leaderInfo{Name: cfg.Name, URL: cfg.URL}, stepDown: make(chan struct{}, 1)}
	r.applied.Store(s.loaded)
	r.latest.Store(s.loaded)
	r.contact.Store(time.Now().UnixNano())
	s.rep = r
	if err := s.startServing(); err != nil {
		return fail(err)
	}
	if !s.spawn(r.run) || !s.spawn(r.watchStore) {
		return fail(client.ErrClosing)
	}
	return s, token, nil
}

// createEtcd creates the store of an empty prefix: the token (the token
// file's, or a new one written to it), the rule and the fabric, in one
// transaction that only the first of several instances started at once
// commits. It returns the token when this instance created the token
// file (to show it once).
func (s *Service) createEtcd(ctx context.Context) (string, error) {
	cfg := s.cfg
	spec := cfg.Topo
	if spec == "" {
		spec = DefaultTopo
	}
	if _, err := topology.Parse(spec); err != nil {
		return "", err
	}
	tok, fresh, err := tokenForNewStore(cfg.TokenFile)
	if err != nil {
		return "", err
	}
	rec := store.FabricRecord{Spec: spec, Updated: cfg.Now().UTC()}
	created, err := s.store.Init(ctx, func(tx *store.Tx) error {
		if err := tx.SetTokenHash(hashToken(tok)); err != nil {
			return err
		}
		if err := tx.SetRules(cfg.Rules); err != nil {
			return err
		}
		if err := tx.PutFabric(rec); err != nil {
			return err
		}
		return tx.Log("fabric.create", spec, map[string]any{"store": s.store.Name()})
	})
	if err != nil || !created {
		if fresh {
			// Another instance created the store, with its own token:
			// this file would only mislead.
			os.Remove(cfg.TokenFile)
		}
		return "", err
	}
	if fresh {
		return tok, nil
	}
	return "", nil
}

// agree checks that this instance was started as the store's others
// were: the same token, fabric and rule.
func (s *Service) agree(ctx context.Context, rec store.FabricRecord) error {
	url := s.store.Name()
	if _, err := readToken(s.cfg.TokenFile, s.tokenHash()); err != nil {
		return fmt.Errorf("%w: %v (every instance of %s needs the token file the first one created: copy it)", client.ErrBadRequest, err, url)
	}
	if s.cfg.Topo != "" && s.cfg.Topo != rec.Spec {
		return fmt.Errorf("%w: %s holds fabric %s, this instance was started with --topo %s: start every instance with the same --topo, or none", client.ErrBadRequest, url, rec.Spec, s.cfg.Topo)
	}
	var rules string
	if _, err := s.store.View(ctx, func(tx *store.Tx) error {
		var err error
		rules, err = tx.Rules()
		return err
	}); err != nil {
		return err
	}
	if rules != "" && s.cfg.Rules != "" && rules != s.cfg.Rules {
		return fmt.Errorf("%w: the instances of %s route jobs under %s, this instance was started with --rules %s: start every instance with the same --rules", client.ErrBadRequest, url, rules, s.cfg.Rules)
	}
	return nil
}

// run follows the store while another instance leads, campaigns, and
// leads when elected, until ctx ends (Close).
func (r *replica) run(ctx context.Context) {
	value, _ := json.Marshal(r.self)
	for ctx.Err() == nil {
		fctx, fcancel := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			r.follow(fctx)
		}()
		l, err := r.e.Campaign(ctx, value, r.s.cfg.Lease)
		if err == nil {
			err = r.catchUp(ctx, l)
		}
		fcancel()
		<-followed
		if err != nil {
			if l != nil {
				r.e.Unlead()
				resign(l)
			}
			r.note(err)
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		r.takeOver(l)
		r.lead(ctx, l)
		r.giveUp(ctx, l)
	}
}

// catchUp makes l the fence of the store's writes and waits until the
// memory reflects the store at the revision of the election (the
// follower still running applies it).
func (r *replica) catchUp(ctx context.Context, l *store.Leadership) error {
	rev, err := r.e.Lead(ctx, l)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.applied.Load() < rev {
		if !l.Valid() {
			return fmt.Errorf("%w: the lease ran out while this instance caught up with the store", store.ErrNotLeader)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("this instance did not catch up with the store (revision %d of %d)", r.applied.Load(), rev)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// lead returns when the leadership ends: the lease is lost or ran out
// as far as this instance can tell, a write was refused (stepDown), or
// the service closes.
func (r *replica) lead(ctx context.Context, l *store.Leadership) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.Done():
			return
		case <-r.stepDown:
			return
		case <-t.C:
			if !l.Valid() {
				return
			}
		}
	}
}

// takeOver starts the leader's duties on the state the instance
// followed: writes are admitted, the multicast manager is built from the
// stored groups (their deadlines stay as stored), the unicast tables are
// written, the sweeps and compaction start, and the pending tables of
// jobs are built (tables.go).
func (r *replica) takeOver(l *store.Leadership) {
	s := r.s
	info := r.self
	info.Term = l.Term()
	r.leader.Store(info)
	s.lead(l)
	s.spawnLeader(func(ctx context.Context) { s.mc.takeOver(ctx) })
	if s.cfg.Unicast != nil {
		s.spawnLeader(func(ctx context.Context) {
			s.mu.RLock()
			g := s.g
			s.mu.RUnlock()
			s.refreshUnicast(g)
		})
	}
	s.spawnLeader(r.housekeep)
	s.spawnLeader(s.buildTables) // the tables left pending
}

// giveUp ends a leadership: new changes are refused, those in flight
// cancelled and waited for; the candidacy is withdrawn (so that another
// instance takes over at once if the lease still runs) and the whole
// state is read again from the store.
func (r *replica) giveUp(ctx context.Context, l *store.Leadership) {
	r.s.unlead()
	r.s.stopRebalance()
	r.e.Unlead()
	resign(l)
	select {
	case <-r.stepDown:
	default:
	}
	for ctx.Err() == nil {
		err := r.reload(ctx)
		if err == nil {
			return
		}
		r.note(err)
		sleep(ctx, time.Second)
	}
}

func resign(l *store.Leadership) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.Resign(ctx)
}

// lost is told that a write found the leadership lost or the store
// unreachable: the leader steps down.
func (r *replica) lost(err error) {
	r.note(err)
	select {
	case r.stepDown <- struct{}{}:
	default:
	}
}

// committed records a commit of the leader at rev: its state reflects
// the store up to there.
func (r *replica) committed(rev int64) {
	r.contact.Store(time.Now().UnixNano())
	for {
		old := r.applied.Load()
		if rev <= old || r.applied.CompareAndSwap(old, rev) {
			break
		}
	}
	for {
		old := r.latest.Load()
		if rev <= old || r.latest.CompareAndSwap(old, rev) {
			break
		}
	}
}

// note records why the store could not be used.
func (r *replica) note(err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		r.problem.Store(err.Error())
	}
}

// follow applies every change of the store after the revision the
// memory reflects, until ctx ends; it reads the whole state again when
// the history it needs was compacted away.
func (r *replica) follow(ctx context.Context) {
	for ctx.Err() == nil {
		err := r.e.Follow(ctx, r.applied.Load(), r.apply)
		if ctx.Err() != nil {
			return
		}
		r.note(err)
		if !errors.Is(err, store.ErrUnavailable) {
			// Compacted history, or a change this instance could not
			// apply: read everything again.
			if rerr := r.reload(ctx); rerr != nil {
				r.note(rerr)
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// apply applies the changes of one revision to the memory.
func (r *replica) apply(rev int64, evs []store.Event) error {
	r.contact.Store(time.Now().UnixNano())
	if rev > r.latest.Load() {
		r.latest.Store(rev)
	}
	if len(evs) == 0 {
		if rev > r.applied.Load() {
			r.applied.Store(rev)
		}
		return nil
	}
	ch, err := store.DecodeEvents(evs)
	if err != nil {
		return fmt.Errorf("revision %d: %v", rev, err)
	}
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if err := r.s.applyChange(ch); err != nil {
		return fmt.Errorf("revision %d: %v", rev, err)
	}
	r.applied.Store(rev)
	return nil
}

// reload reads the whole state from the store and makes it the memory.
func (r *replica) reload(ctx context.Context) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	t := newService(r.s.cfg, r.s.store)
	_, have, err := t.loadStored(false)
	if err != nil {
		return err
	}
	if !have {
		return fmt.Errorf("%s: the store has no fabric record", r.s.store.Name())
	}
	r.s.install(t)
	r.applied.Store(t.loaded)
	if t.loaded > r.latest.Load() {
		r.latest.Store(t.loaded)
	}
	return nil
}

// watchStore keeps the store's revision, its leader and whether it
// answers up to date, every half second, until ctx ends.
func (r *replica) watchStore(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		rev, err := r.e.Revision(qctx)
		if err == nil {
			r.contact.Store(time.Now().UnixNano())
			if rev > r.latest.Load() {
				r.latest.Store(rev)
			}
			var v []byte
			var term int64
			var ok bool
			if v, term, ok, err = r.e.Leader(qctx); err == nil {
				var info leaderInfo
				if ok && json.Unmarshal(v, &info) == nil {
					info.Term = term
				}
				r.leader.Store(info)
			}
		}
		cancel()
		r.note(err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// stale reports whether the store has not answered for longer than the
// lease, and why.
func (r *replica) stale() (bool, string) {
	since := time.Since(time.Unix(0, r.contact.Load()))
	if since <= r.s.cfg.Lease {
		return false, ""
	}
	why, _ := r.problem.Load().(string)
	return true, fmt.Sprintf("the store did not answer for %.1f s: %s", since.Seconds(), why)
}

// currentLeader is the leader as last seen (empty when none is known:
// also when the store has not answered for a lease, or names this
// instance, which does not lead).
func (r *replica) currentLeader() leaderInfo {
	if t := r.s.leading(); t != nil {
		return leaderInfo{Name: r.self.Name, URL: r.self.URL, Term: t.l.Term()}
	}
	info, _ := r.leader.Load().(leaderInfo)
	if stale, _ := r.stale(); stale || info.URL == r.self.URL {
		return leaderInfo{}
	}
	return info
}

// housekeep is the leader's periodic work on the store: chunk sets no
// record refers to (left by commits that never happened) are deleted at
// once and every minute, request ids older than a day are forgotten, and
// the store's history older than five minutes is compacted.
func (r *replica) housekeep(ctx context.Context) {
	type mark struct {
		at  time.Time
		rev int64
	}
	var marks []mark
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if _, err := r.e.Sweep(qctx); err != nil && ctx.Err() == nil {
			r.note(err)
		}
		r.s.expireRequests(qctx)
		if rev, err := r.e.Revision(qctx); err == nil {
			marks = append(marks, mark{time.Now(), rev})
			for len(marks) > 1 && time.Since(marks[1].at) > 5*time.Minute {
				marks = marks[1:]
			}
			if time.Since(marks[0].at) > 5*time.Minute {
				r.e.Compact(qctx, marks[0].rev)
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// notLeader is the error of a change sent to an instance that does not
// lead: it names the leader when one is known.
func (s *Service) notLeader(what string) error {
	if s.rep == nil {
		return fmt.Errorf("%w: %s", client.ErrNotLeader, what)
	}
	if stale, why := s.rep.stale(); stale {
		return fmt.Errorf("%w: no leader: %s; %s", client.ErrNotLeader, why, what)
	}
	if l := s.rep.currentLeader(); l.URL != "" {
		return fmt.Errorf("%w: this instance (%s) is a standby; the leader is %s at %s; %s", client.ErrNotLeader, s.cfg.Name, l.Name, l.URL, what)
	}
	return fmt.Errorf("%w: no leader elected yet (a takeover is in progress); %s", client.ErrNotLeader, what)
}

// Health says whether the instance serves, and how: its role, the
// leader, the revision its state reflects, and whether its store
// answered lately.
func (s *Service) Health() client.Health {
	h := client.Health{Status: "ok", Store: s.store.Kind(), Instance: s.cfg.Name, URL: s.cfg.URL}
	if s.rep == nil {
		h.Role = "leader"
		if s.leading() == nil {
			h.Status, h.Error = "closing", client.ErrClosing.Error()
		}
		return h
	}
	r := s.rep
	h.Role = "standby"
	if s.leading() != nil {
		h.Role = "leader"
	}
	l := r.currentLeader()
	h.Leader, h.Term = l.URL, l.Term
	h.Revision = r.applied.Load()
	if lag := r.latest.Load() - h.Revision; lag > 0 {
		h.Lag = lag
	}
	h.Stale, h.Error = r.stale()
	return h
}

// ---- applying the store's changes (standbys) ----

// applyChange applies one committed change of the store to the memory
// of an instance that follows it: a new fabric record (failures) gives a
// new model; job records replace the jobs (their tables decoded from the
// stored routes, or kept when the record only changed its header); the
// node state is rebuilt from the running jobs; group records replace
// the groups (the multicast manager is rebuilt when the instance takes
// over). Everything is computed before the state is swapped in.
func (s *Service) applyChange(ch *store.Change) error {
	s.mu.RLock()
	rec, base, g, router, noJobs, state := s.fabric, s.base, s.g, s.routing, s.noJobs, s.state
	jobs := make(map[int]*client.JobRecord, len(s.jobs))
	for id, j := range s.jobs {
		jobs[id] = j
	}
	s.mu.RUnlock()
	fabricChanged := false
	if ch.Fabric != nil {
		if ch.Fabric.Spec != rec.Spec {
			return fmt.Errorf("the stored fabric changed from %s to %s", rec.Spec, ch.Fabric.Spec)
		}
		if !slices.Equal(ch.Fabric.FailedLinks, rec.FailedLinks) || !slices.Equal(ch.Fabric.FailedNodes, rec.FailedNodes) {
			md, err := s.buildModel(*ch.Fabric, base)
			if err != nil {
				return fmt.Errorf("stored fabric: %v", err)
			}
			g, router, noJobs = md.g, md.routing, md.noJobs
			fabricChanged = true
		}
		rec = *ch.Fabric
	}
	for id, j := range ch.Jobs {
		if j.State != client.JobRunning {
			delete(jobs, id)
			continue
		}
		if j.Table != nil {
			routes, have := ch.Routes[id]
			old := jobs[id]
			switch {
			case have && routes != nil:
				if err := routing.CheckStoredRoutes(routes, j.Table); err != nil {
					return fmt.Errorf("job %d: %v", id, err)
				}
				keepEncoded(j, routes)
			case old != nil && old.Table != nil:
				// Only the record changed (broken, say): the table is the
				// one the job had.
				j.Table.Routes, j.StoredRoutes = old.Table.Routes, old.StoredRoutes
			default:
				stored, err := s.storedJob(id)
				if err != nil {
					return err
				}
				j = stored
			}
		}
		jobs[id] = j
	}
	if state != nil {
		next, err := alloc.NewState(base)
		if err != nil {
			return err
		}
		for _, id := range sortedIDs(jobs) {
			j := jobs[id]
			nodes, err := nodesByName(base, append(slices.Clone(j.Active), j.TransitNodes...))
			if err == nil {
				err = next.Occupy(id, nodes)
			}
			if err != nil {
				return fmt.Errorf("job %d: %v", id, err)
			}
		}
		if state, err = next.WithGraph(g); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.fabric, s.g, s.routing, s.noJobs, s.state = rec, g, router, noJobs, state
	if fabricChanged {
		s.fabricVer++
	}
	if len(ch.Jobs) > 0 {
		s.jobs = jobs
		s.jobsChanged()
	}
	s.mu.Unlock()
	if ch.Token != nil {
		s.setToken(ch.Token)
	}
	if len(ch.Groups) > 0 || fabricChanged {
		var fg *topology.Graph
		if fabricChanged {
			fg = g
		}
		s.mc.applyRecords(ch.Groups, fg)
	}
	if fabricChanged {
		s.refreshMetrics()
	}
	return nil
}

// storedJob reads one job with its table from the store.
func (s *Service) storedJob(id int) (*client.JobRecord, error) {
	var j *client.JobRecord
	_, err := s.store.View(context.Background(), func(tx *store.Tx) error {
		var err error
		j, err = tx.Job(id)
		return err
	})
	if err == nil && j == nil {
		err = fmt.Errorf("job %d is not stored", id)
	}
	return j, err
}

// install makes the state of t, a service loaded from the same store,
// the state of s (a reload).
func (s *Service) install(t *Service) {
	s.mu.Lock()
	s.fabric, s.base, s.g, s.routing, s.noJobs, s.state = t.fabric, t.base, t.g, t.routing, t.noJobs, t.state
	s.jobs = t.jobs
	if t.sel != nil && s.sel == nil {
		s.sel = t.sel
	}
	s.fabricVer++
	s.jobsChanged()
	s.mu.Unlock()
	s.linksMu.Lock()
	s.links, s.linkDirs = t.links, t.linkDirs
	s.linksMu.Unlock()
	s.setToken(t.tokenHash())
	s.mc.installFrom(t.mc)
	s.refreshMetrics()
}
