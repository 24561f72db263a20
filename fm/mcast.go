package fm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"

	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/topology"
)

// mcast runs the multicast join/leave protocol of the multicast package
// (FULB-MC routing) for the service and persists every group after every
// change. On start, and whenever the fabric changes, the protocol manager
// is rebuilt from the stored groups: a routed group whose tree still holds
// on the fabric (working links, min-hop depths) keeps it, so a failure
// moves only the trees that used the failed link or node, and a restart
// moves none; the others are routed again, in the order their trees were
// first computed, balanced against the trees kept.
//
// Writers (requests, ticks, fabric changes) are serialised by mu, which
// they hold across the store write of their change; reads never take it:
// they answer from view, an immutable snapshot of the groups published
// after every committed change.
type mcast struct {
	s *Service

	view atomic.Pointer[groupsView]

	mu     sync.Mutex      // serialises writers: protocol calls with their persistence
	g      *topology.Graph // the fabric the manager routes on
	mgr    *multicast.Manager
	clk    *replayClock // mgr's clock
	groups map[string]*client.GroupRecord
	seq    int    // completion order of routed groups
	ver    uint64 // counts changes of groups, so a rebuild done without mu can tell it is stale
	// stale: the groups were changed by the store's leader (a standby
	// applies its records) or the fabric changed under them, and the
	// manager must be rebuilt from them before the next protocol call
	// (takeOver, ensureManager).
	stale bool
}

// replayClock is the clock of one protocol manager: the service's clock,
// or while a replay sets at, the time a group's deadline was set, so
// that deadlines replayed stay absolute.
type replayClock struct {
	at      *time.Time
	now     func() time.Time
	timeout time.Duration
}

func (c *replayClock) Now() time.Time {
	if c.at != nil {
		return *c.at
	}
	return c.now()
}

// replayAt sets the clock so that a deadline d comes out again (nil: the
// service's clock).
func (c *replayClock) replayAt(d *time.Time) {
	if d == nil {
		c.at = nil
		return
	}
	t := d.Add(-c.timeout)
	c.at = &t
}

const mcastAlgo = "fulb"

func newMcast(s *Service) *mcast {
	return &mcast{s: s, groups: map[string]*client.GroupRecord{}}
}

// newManager builds a protocol manager on g with its own clock (no lock
// needed: it only sets up the router). Hop counts are computed per
// destination when a group first needs them (one BFS each), not for all
// pairs: a group on a 32 768-node torus touches a few hundred
// destinations of 32 768.
func (m *mcast) newManager(g *topology.Graph) (*multicast.Manager, *replayClock, error) {
	h := topology.MinHopsLazy(g)
	algo, err := multicast.ParseAlgo(mcastAlgo)
	if err != nil {
		return nil, nil, err
	}
	r := multicast.NewRouter(h, algo, multicast.Options{})
	to := m.s.cfg.MulticastTimeout
	clk := &replayClock{now: m.s.cfg.Now, timeout: to}
	return multicast.NewManager(r, multicast.ManagerOptions{JoinTimeout: to, LeaveTimeout: to, Linger: time.Second,
		Clock: clk}), clk, nil
}

// ensureManager builds the manager, if there is none yet (no groups since
// the last fabric change), without holding mu.
func (m *mcast) ensureManager() error {
	m.mu.Lock()
	g, have := m.g, m.mgr != nil
	if m.stale {
		defer m.mu.Unlock()
		return m.rebuildStale()
	}
	m.mu.Unlock()
	if have {
		return nil
	}
	mgr, clk, err := m.newManager(g)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.mgr == nil && m.g == g {
		m.mgr, m.clk = mgr, clk
	}
	m.mu.Unlock()
	return nil
}

// rebuildStale rebuilds a stale manager from the groups (callers hold
// mu).
func (m *mcast) rebuildStale() error {
	if !m.stale {
		return nil
	}
	if err := m.replay(m.g); err != nil {
		return err
	}
	m.stale = false
	return nil
}

// takeOver readies the protocol for the leader: the manager rebuilt from
// the stored groups the instance followed (routed trees kept, deadlines
// as stored).
func (m *mcast) takeOver(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rebuildStale()
}

// applyRecords applies group records written by the store's leader (a
// nil record: deleted) and, if g is not nil, the fabric they now lie on;
// the manager is rebuilt when this instance next needs it.
func (m *mcast) applyRecords(changed map[string]*client.GroupRecord, g *topology.Graph) {
	m.mu.Lock()
	defer m.mu.Unlock()
	groups := m.snapshot()
	for id, gr := range changed {
		if gr == nil {
			delete(groups, id)
			continue
		}
		groups[id] = gr
		if gr.Seq > m.seq {
			m.seq = gr.Seq
		}
	}
	m.groups = groups
	if g != nil {
		m.g = g
	}
	m.mgr, m.clk, m.stale = nil, nil, true
	m.ver++
	m.publish()
}

// installFrom makes the groups and manager of t (loaded from the store
// by another service value: a reload) those of m.
func (m *mcast) installFrom(t *mcast) {
	t.mu.Lock()
	g, mgr, clk, groups, seq := t.g, t.mgr, t.clk, t.groups, t.seq
	t.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.g, m.mgr, m.clk, m.groups, m.seq, m.stale = g, mgr, clk, groups, seq, false
	if clk != nil {
		clk.now = m.s.cfg.Now
	}
	m.ver++
	m.publish()
}

// load reads the stored groups (in tx) and rebuilds the protocol state
// from them.
func (m *mcast) load(tx *store.Tx) error {
	groups := map[string]*client.GroupRecord{}
	err := tx.Groups(func(g *client.GroupRecord) error {
		groups[g.ID] = g
		return nil
	})
	if err != nil {
		return err
	}
	m.s.mu.RLock()
	g := m.s.g
	m.s.mu.RUnlock()
	rb, err := m.rebuild(g, groups, false)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.install(rb)
	return nil
}

// rebuilt is the protocol state rebuilt on one fabric from group records.
type rebuilt struct {
	g      *topology.Graph
	mgr    *multicast.Manager // nil when there are no groups (built on demand)
	clk    *replayClock
	groups map[string]*client.GroupRecord
	seq    int
	moved  []*client.GroupRecord // groups whose tree or state differs from their record
	check  multicast.AdoptCheck
}

// install makes rb the current state and publishes it (callers hold
// mu).
func (m *mcast) install(rb *rebuilt) {
	m.g, m.mgr, m.clk, m.groups, m.seq = rb.g, rb.mgr, rb.clk, rb.groups, max(m.seq, rb.seq)
	m.ver++
	m.publish()
}

// groupsView is what reads of the groups answer from: a snapshot of the
// groups, published after every committed change and never changed
// afterwards, so readers use it without any lock.
type groupsView struct {
	list    []client.GroupRecord // by id
	index   map[string]int       // id → position in list
	byState map[string]int
	efi     []int // per link: the groups whose tree uses it
	maxEFI  int
}

// publish replaces the readers' view with the current groups (callers
// hold mu, once the change is stored; after a fabric change, once its
// rebuild is installed: see fabricChanged). Group records are never
// changed in place, so the view shares their slices.
func (m *mcast) publish() {
	v := &groupsView{list: make([]client.GroupRecord, 0, len(m.groups)), index: make(map[string]int, len(m.groups)),
		byState: map[string]int{}}
	for _, g := range m.groups {
		v.list = append(v.list, *g)
		v.byState[g.State]++
	}
	sort.Slice(v.list, func(i, j int) bool { return v.list[i].ID < v.list[j].ID })
	for i, g := range v.list {
		v.index[g.ID] = i
	}
	if m.g != nil {
		v.efi = linkEFI(m.g, m.groups)
	}
	for _, x := range v.efi {
		v.maxEFI = max(v.maxEFI, x)
	}
	m.view.Store(v)
}

// current returns the readers' view (empty before the groups are
// loaded).
func (m *mcast) current() *groupsView {
	if v := m.view.Load(); v != nil {
		return v
	}
	return &groupsView{}
}

// replay rebuilds the protocol state on g from m.groups and installs it
// (callers hold mu).
func (m *mcast) replay(g *topology.Graph) error {
	rb, err := m.rebuild(g, m.groups, false)
	if err != nil {
		return err
	}
	m.install(rb)
	return nil
}

// rebuild replays group records on fabric g into a new manager, touching
// nothing of m but its configuration: the records are copied. Routed
// groups whose stored tree holds on g are adopted first, in the order
// their trees were computed; the others are replayed join by join (so
// their trees are computed again, against the loads of the trees kept),
// routed groups first, then groups still collecting joins.
//
// lost says the fabric only lost links or nodes since the trees were
// verified: kept trees are then checked for their shape only
// (multicast.CheckShape), without hop counts.
func (m *mcast) rebuild(g *topology.Graph, records map[string]*client.GroupRecord, lost bool) (*rebuilt, error) {
	rb := &rebuilt{g: g, groups: make(map[string]*client.GroupRecord, len(records)), check: multicast.CheckAll}
	if lost {
		rb.check = multicast.CheckShape
	}
	if len(records) == 0 {
		return rb, nil
	}
	mgr, clk, err := m.newManager(g)
	if err != nil {
		return nil, err
	}
	rb.mgr, rb.clk = mgr, clk
	ids := make([]string, 0, len(records))
	for id, r := range records {
		c := *r
		c.Members, c.Left, c.Edges = slices.Clone(r.Members), slices.Clone(r.Left), slices.Clone(r.Edges)
		rb.groups[id] = &c
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := rb.groups[ids[i]], rb.groups[ids[j]]
		if (a.Root == "") != (b.Root == "") {
			return a.Root != ""
		}
		if a.Root != "" && a.Seq != b.Seq {
			return a.Seq < b.Seq
		}
		return a.ID < b.ID
	})
	defer clk.replayAt(nil)
	var rest []string
	for _, id := range ids {
		if gr := rb.groups[id]; !rb.adopt(gr) {
			rest = append(rest, id)
		}
	}
	for _, id := range rest {
		gr := rb.groups[id]
		clk.replayAt(gr.JoinDeadline)
		for _, name := range gr.Members {
			v := g.NodeByName(name)
			if v < 0 {
				return nil, fmt.Errorf("group %s: unknown member %q", id, name)
			}
			if _, err := mgr.Join(id, v, gr.MemberCount); err != nil && !errors.Is(err, multicast.ErrDuplicateJoin) {
				// The fabric changed under the group (a member failed):
				// keep the record and report it through the state.
				gr.State = "Destroying"
				gr.Reason = err.Error()
				break
			}
		}
		rb.leaves(gr)
	}
	for _, id := range ids {
		gr := rb.groups[id]
		old := records[id]
		refreshRecord(rb.g, rb.mgr, gr)
		if gr.Root != "" && gr.Seq > rb.seq {
			rb.seq = gr.Seq
		}
		if gr.State != old.State || gr.Root != old.Root || !slices.Equal(gr.Channels, old.Channels) {
			rb.moved = append(rb.moved, gr)
		}
	}
	return rb, nil
}

// adopt installs a routed group with its stored tree if the tree holds on
// the fabric, and replays its leaves; false if the group has to be
// routed again.
func (rb *rebuilt) adopt(gr *client.GroupRecord) bool {
	if gr.Root == "" || len(gr.Edges) == 0 || gr.State == "Destroying" {
		return false
	}
	g := rb.g
	t := multicast.Tree{Root: int32(g.NodeByName(gr.Root))}
	if t.Root < 0 {
		return false
	}
	for i, e := range gr.Edges {
		c := -1
		if a, b := g.NodeByName(e[0]), g.NodeByName(e[1]); a >= 0 && b >= 0 {
			if len(gr.Channels) == len(gr.Edges) && int(gr.Channels[i]) < g.NumChannels() && gr.Channels[i] >= 0 &&
				g.Src(int(gr.Channels[i])) == a && g.Dst(int(gr.Channels[i])) == b {
				c = int(gr.Channels[i])
			} else {
				for _, ch := range g.Out(a) {
					if g.Dst(int(ch)) == b {
						c = int(ch)
						break
					}
				}
			}
		}
		if c < 0 {
			return false
		}
		t.Edges = append(t.Edges, int32(c))
	}
	members := make([]int, len(gr.Members))
	for i, name := range gr.Members {
		if members[i] = g.NodeByName(name); members[i] < 0 {
			return false
		}
	}
	if _, err := rb.mgr.Adopt(gr.ID, gr.MemberCount, members, t, rb.check); err != nil {
		return false
	}
	rb.leaves(gr)
	return true
}

// leaves replays the leaves of a group at the time they were received.
func (rb *rebuilt) leaves(gr *client.GroupRecord) {
	rb.clk.replayAt(gr.LeaveDeadline)
	for _, name := range gr.Left {
		if v := rb.g.NodeByName(name); v >= 0 {
			rb.mgr.Leave(gr.ID, v)
		}
	}
}

// refreshRecord copies manager mgr's view of a group on fabric fg into
// its record.
func refreshRecord(fg *topology.Graph, mgr *multicast.Manager, g *client.GroupRecord) {
	rec, err := mgr.Query(g.ID)
	if err != nil {
		if g.State != "Destroying" {
			g.State = "Destroying"
		}
		return
	}
	g.State = rec.State.String()
	g.Reason = rec.Reason
	if t, err := mgr.Tree(g.ID); err == nil {
		g.Root = fg.NodeName(int(t.Root))
		g.Edges = g.Edges[:0]
		g.Channels = slices.Clone(t.Edges)
		children := map[int][]int{}
		for _, c := range t.Edges {
			a, b := fg.Src(int(c)), fg.Dst(int(c))
			g.Edges = append(g.Edges, [2]string{fg.NodeName(a), fg.NodeName(b)})
			children[a] = append(children[a], b)
		}
		// Height: the deepest node below the root (edges are parent →
		// child, in whatever order the engine built them).
		g.Height = 0
		level := []int{int(t.Root)}
		for depth := 0; len(level) > 0; depth++ {
			g.Height = depth
			var next []int
			for _, v := range level {
				next = append(next, children[v]...)
			}
			level = next
		}
	} else {
		g.Root, g.Edges, g.Channels, g.Height = "", nil, nil, 0
	}
}

// join handles a join request.
func (m *mcast) join(ctx context.Context, actor string, req client.McastRequest) (*client.GroupRecord, error) {
	if req.Group == "" || len(req.Group) > 128 {
		return nil, badRequest("group id must be 1..128 characters")
	}
	if req.MemberCount < 1 {
		return nil, badRequest("member_count must be at least 1 (every join carries the group's member count)")
	}
	if err := checkRequestID(req.RequestID); err != nil {
		return nil, err
	}
	return m.change(ctx, actor, "mcast.join", req, func(g *client.GroupRecord, v int) error {
		rec, err := m.mgr.Join(req.Group, v, req.MemberCount)
		if err != nil {
			return err
		}
		if !slices.Contains(g.Members, req.Member) {
			g.Members = append(g.Members, req.Member)
		}
		g.MemberCount = rec.MemberCount
		return nil
	})
}

// leave handles a leave request.
func (m *mcast) leave(ctx context.Context, actor string, req client.McastRequest) (*client.GroupRecord, error) {
	if req.Group == "" {
		return nil, badRequest("group id missing")
	}
	return m.change(ctx, actor, "mcast.leave", req, func(g *client.GroupRecord, v int) error {
		if _, err := m.mgr.Leave(req.Group, v); err != nil {
			return err
		}
		if !slices.Contains(g.Left, req.Member) {
			g.Left = append(g.Left, req.Member)
		}
		if g.LeaveDeadline == nil {
			d := m.s.cfg.Now().UTC().Add(m.s.cfg.MulticastTimeout)
			g.LeaveDeadline = &d
		}
		return nil
	})
}

// change applies one protocol request and persists every group it (or an
// expiry found on the way) changed, in one transaction. If the store fails,
// the manager is rebuilt from the stored records so memory never runs
// ahead of the disk. Readers see the change once it is stored (publish).
// A request whose ctx ends (or whose service closes) before it is
// applied does nothing.
func (m *mcast) change(ctx context.Context, actor, action string, req client.McastRequest, apply func(*client.GroupRecord, int) error) (*client.GroupRecord, error) {
	ctx, end, err := m.s.beginWrite(ctx, "the request was not applied")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := m.ensureManager(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ctx.Err() != nil {
		return nil, stopped(ctx, "the request was not applied")
	}
	if err := m.rebuildStale(); err != nil {
		return nil, err
	}
	v := m.g.NodeByName(req.Member)
	if v < 0 {
		return nil, fmt.Errorf("%w: unknown member node %q", client.ErrNotFound, req.Member)
	}
	if m.mgr == nil {
		mgr, clk, err := m.newManager(m.g)
		if err != nil {
			return nil, err
		}
		m.mgr, m.clk = mgr, clk
	}
	before := m.snapshot()
	g := m.groups[req.Group]
	fresh := g == nil || g.State == "Destroying"
	if fresh {
		if action == "mcast.leave" {
			return nil, fmt.Errorf("%w: no multicast group %q", client.ErrNotFound, req.Group)
		}
		now := m.s.cfg.Now().UTC()
		d := now.Add(m.s.cfg.MulticastTimeout)
		g = &client.GroupRecord{ID: req.Group, Created: now, JoinDeadline: &d}
	} else {
		c := *g
		c.Members, c.Left, c.Edges, c.Channels = slices.Clone(g.Members), slices.Clone(g.Left), slices.Clone(g.Edges), slices.Clone(g.Channels)
		g = &c
	}
	if err := apply(g, v); err != nil {
		// A repeated request (its member joined already) gets its first
		// answer; its id is looked up only then, so a join costs no read
		// of the store.
		if first, ok, rerr := m.replayed(req, action); rerr != nil || ok {
			return first, rerr
		}
		return nil, protocolError(err)
	}
	g.Updated = m.s.cfg.Now().UTC()
	hadRoot := g.Root != ""
	refreshRecord(m.g, m.mgr, g)
	if !hadRoot && g.Root != "" {
		m.seq++
		g.Seq = m.seq
	}
	changed, gone := map[string]*client.GroupRecord{g.ID: g}, map[string]bool{}
	m.collectExpired(changed, gone)
	var answer *store.Outcome
	if req.RequestID != "" {
		o, err := outcomeOf(action, g)
		if err != nil {
			return nil, err
		}
		answer = o
	}
	if err := m.persist(ctx, actor, action, req, changed, gone, answer); err != nil {
		m.groups = before
		if errors.Is(err, store.ErrExists) {
			// The id was answered already (its group since ended): the
			// protocol state goes back to the stored one, and the first
			// answer is given again.
			if rerr := m.replay(m.g); rerr != nil {
				return nil, rerr
			}
			if first, ok, rerr := m.replayed(req, action); rerr != nil || ok {
				return first, rerr
			}
		}
		if rerr := m.replay(m.g); rerr != nil {
			return nil, fmt.Errorf("storage: %w; rebuilding multicast state also failed: %v", err, rerr)
		}
		return nil, fmt.Errorf("storage: %w (the request was not applied)", err)
	}
	m.applyChanged(changed, gone)
	out := *g
	return &out, nil
}

// applyChanged puts the stored changes of groups into m.groups and
// publishes them (callers hold mu).
func (m *mcast) applyChanged(changed map[string]*client.GroupRecord, gone map[string]bool) {
	groups := m.snapshot()
	for id, c := range changed {
		if gone[id] {
			delete(groups, id)
			continue
		}
		groups[id] = c
	}
	m.groups = groups
	m.ver++
	m.publish()
}

// replayed returns the first answer to a repeated request id (ok false
// when the id is new or none was given).
func (m *mcast) replayed(req client.McastRequest, action string) (*client.GroupRecord, bool, error) {
	if req.RequestID == "" {
		return nil, false, nil
	}
	var first client.GroupRecord
	ok, err := m.s.answered(req.RequestID, action, &first)
	if err != nil || !ok {
		return nil, false, err
	}
	first.Replayed = true
	return &first, true, nil
}

// collectExpired adds groups whose state the manager changed on its own
// (timeouts) to changed; those it forgot are also in gone.
func (m *mcast) collectExpired(changed map[string]*client.GroupRecord, gone map[string]bool) {
	if m.mgr == nil {
		return
	}
	live := map[string]multicast.GroupRecord{}
	for _, r := range m.mgr.Groups() {
		live[r.GID] = r
	}
	for id, g := range m.groups {
		if _, done := changed[id]; done {
			continue
		}
		r, ok := live[id]
		if !ok {
			c := *g
			c.State = "Destroying"
			gone[id] = true
			if c.Reason == "" {
				c.Reason = "timed out"
			}
			changed[id] = &c
			continue
		}
		if st := r.State.String(); st != g.State {
			c := *g
			c.State, c.Reason = st, r.Reason
			c.Updated = m.s.cfg.Now().UTC()
			changed[id] = &c
		}
	}
}

func (m *mcast) persist(ctx context.Context, actor, action string, req client.McastRequest, changed map[string]*client.GroupRecord, gone map[string]bool, answer *store.Outcome) error {
	_, err := m.s.commit(ctx, actor, func(tx *store.Tx) error {
		if answer != nil {
			if err := tx.PutRequest(req.RequestID, *answer); err != nil {
				return err
			}
		}
		for _, g := range changed {
			if gone[g.ID] {
				// Forgotten by the protocol: keep the history in the
				// audit log only.
				if err := tx.DeleteGroup(g.ID); err != nil {
					return err
				}
				if err := tx.Log("mcast.destroy", g.ID, map[string]any{"reason": g.Reason}); err != nil {
					return err
				}
				continue
			}
			if err := tx.PutGroup(g); err != nil {
				return err
			}
		}
		if action == "" {
			return nil
		}
		return tx.Log(action, req.Group, map[string]any{"member": req.Member, "member_count": req.MemberCount})
	})
	return err
}

func (m *mcast) snapshot() map[string]*client.GroupRecord {
	out := make(map[string]*client.GroupRecord, len(m.groups))
	for k, v := range m.groups {
		out[k] = v
	}
	return out
}

func protocolError(err error) error {
	switch {
	case errors.Is(err, multicast.ErrNoGroup), errors.Is(err, multicast.ErrNotMember):
		return fmt.Errorf("%w: %v", client.ErrNotFound, err)
	case errors.Is(err, multicast.ErrDuplicateJoin), errors.Is(err, multicast.ErrDuplicateLeave),
		errors.Is(err, multicast.ErrCountMismatch), errors.Is(err, multicast.ErrWrongState):
		return fmt.Errorf("%w: %v", client.ErrConflict, err)
	case errors.Is(err, multicast.ErrBadRequest):
		// The protocol's own message already starts with "bad request".
		return fmt.Errorf("%w: %s", client.ErrBadRequest, strings.TrimPrefix(err.Error(), multicast.ErrBadRequest.Error()+": "))
	}
	return err
}

// tick enforces timeouts and persists what they changed (callers
// register it as a change: Service.Tick). If the store refuses the
// change, the manager is rebuilt from the stored groups, so that memory
// never runs ahead of the store.
func (m *mcast) tick(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rebuildStale() != nil || m.mgr == nil {
		return
	}
	m.mgr.Expire()
	changed, gone := map[string]*client.GroupRecord{}, map[string]bool{}
	m.collectExpired(changed, gone)
	if len(changed) == 0 {
		return
	}
	if err := m.persist(ctx, "system", "", client.McastRequest{}, changed, gone, nil); err != nil {
		m.stale = true // rebuilt from the stored groups, expired again next time
		return
	}
	m.applyChanged(changed, gone)
}

// fabricChanged rebuilds the protocol state on the new fabric: trees that
// still hold are kept, the others re-routed (see rebuild), and the groups
// whose tree moved are stored. The rebuild runs without mu, so group
// queries and requests go on meanwhile; if a request changed the groups
// in the meantime it is done again (after three tries, under mu).
//
// lost says the change only failed a link or node (see rebuild).
//
// It returns what happened to each group whose tree or state moved, by
// id.
func (m *mcast) fabricChanged(g *topology.Graph, lost bool) []client.GroupEffect {
	for round := 0; ; round++ {
		m.mu.Lock()
		ver, groups := m.ver, m.snapshot()
		if round < 3 {
			m.mu.Unlock()
		}
		rb, err := m.rebuild(g, groups, lost)
		if round < 3 {
			m.mu.Lock()
			if m.ver != ver {
				m.mu.Unlock()
				continue
			}
		}
		if err != nil {
			// Keep the records; the manager is built again on demand.
			rb = &rebuilt{g: g, groups: groups}
		}
		if len(rb.moved) > 0 {
			changed := make(map[string]*client.GroupRecord, len(rb.moved))
			for _, gr := range rb.moved {
				changed[gr.ID] = gr
			}
			// A failed write leaves the old trees stored: a restart
			// rebuilds the same state from them on this fabric.
			m.persist(context.Background(), "system", "", client.McastRequest{}, changed, nil, nil)
		}
		m.install(rb)
		m.mu.Unlock()
		effects := make([]client.GroupEffect, 0, len(rb.moved))
		for _, gr := range rb.moved {
			e := client.GroupEffect{ID: gr.ID, NewRoot: gr.Root, State: gr.State, Links: len(gr.Edges), Reason: gr.Reason}
			if old := groups[gr.ID]; old != nil {
				e.OldRoot, e.OldState = old.Root, old.State
			}
			effects = append(effects, e)
		}
		sort.Slice(effects, func(i, j int) bool { return effects[i].ID < effects[j].ID })
		return effects
	}
}

// list returns the groups by id (from the published view: no lock).
func (m *mcast) list() []client.GroupRecord {
	out := slices.Clone(m.current().list)
	if out == nil {
		out = []client.GroupRecord{}
	}
	return out
}

// get returns one group (from the published view: no lock).
func (m *mcast) get(id string) (*client.GroupRecord, error) {
	v := m.current()
	i, ok := v.index[id]
	if !ok {
		return nil, fmt.Errorf("%w: no multicast group %q", client.ErrNotFound, id)
	}
	c := v.list[i]
	return &c, nil
}

func (m *mcast) count() int { return len(m.current().list) }

func (m *mcast) byState() map[string]int { return maps.Clone(m.current().byState) }

// linkEFI returns, per link, the groups whose tree uses it (from the
// published view: no lock; callers must not change it).
func (m *mcast) linkEFI() []int { return m.current().efi }

func (m *mcast) maxEFI() int { return m.current().maxEFI }

// linkEFI counts, per link of g, the groups whose tree uses it (computed
// from the trees).
func linkEFI(g *topology.Graph, groups map[string]*client.GroupRecord) []int {
	efi := make([]int, g.NumLinks())
	for _, gr := range groups {
		if gr.State == "Destroying" {
			continue
		}
		seen := map[int]bool{}
		count := func(c int) {
			if c >= 0 && c < g.NumChannels() && !seen[c>>1] {
				seen[c>>1] = true
				efi[c>>1]++
			}
		}
		if len(gr.Channels) == len(gr.Edges) {
			for _, c := range gr.Channels {
				count(int(c))
			}
			continue
		}
		for _, e := range gr.Edges {
			a, b := g.NodeByName(e[0]), g.NodeByName(e[1])
			if a < 0 || b < 0 {
				continue
			}
			for _, c := range g.Out(a) {
				if g.Dst(int(c)) == b {
					count(int(c))
					break
				}
			}
		}
	}
	return efi
}

// Tick runs periodic work (multicast timeouts); Serve calls it every
// second. It is a change: after Close it does nothing.
func (s *Service) Tick() {
	ctx, end, err := s.beginWrite(context.Background(), "")
	if err != nil {
		return
	}
	defer end()
	s.mc.tick(ctx)
	s.expireRequestsEvery(ctx, 10*time.Minute)
}
