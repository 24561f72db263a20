package fm

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/topology"
)

// McastRequest is a join or leave. MemberCount travels with every join,
// as in the seed's HPC protocol; leaves may omit it.
type McastRequest struct {
	Group       string `json:"group"`
	Member      string `json:"member"`
	MemberCount int    `json:"member_count,omitempty"`
}

// mcast runs the multicast join/leave protocol of the multicast package
// (FULB-MC routing) for the service and persists every group after every
// change. On start, and whenever the fabric changes, the protocol manager
// is rebuilt by replaying the stored groups in the order their trees were
// computed, so loads and trees come out as before (or, after a failure,
// re-routed around it).
type mcast struct {
	s *Service

	mu      sync.Mutex      // serialises protocol calls with their persistence
	g       *topology.Graph // the fabric the manager routes on
	mgr     *multicast.Manager
	groups  map[string]*GroupRecord
	seq     int // completion order of routed groups
	order   map[string]int
	hopSize int
	// at, while set, is the clock of the manager: replays run each group
	// at the time its deadline was set, so deadlines stay absolute.
	at *time.Time
}

// now is the manager's clock (callers hold mu).
func (m *mcast) now() time.Time {
	if m.at != nil {
		return *m.at
	}
	return m.s.cfg.Now()
}

// replayAt sets the replay clock so that a deadline d comes out again.
func (m *mcast) replayAt(d *time.Time) {
	if d == nil {
		m.at = nil
		return
	}
	t := d.Add(-m.s.cfg.MulticastTimeout)
	m.at = &t
}

const mcastAlgo = "fulb"

func newMcast(s *Service) *mcast {
	return &mcast{s: s, groups: map[string]*GroupRecord{}, order: map[string]int{}}
}

type clockFunc func() time.Time

func (c clockFunc) Now() time.Time { return c() }

// build makes a fresh manager on g (callers hold mu).
func (m *mcast) build(g *topology.Graph) error {
	mgr, err := m.newManager(g)
	if err == nil {
		m.mgr = mgr
	}
	return err
}

// newManager builds a protocol manager on g (no lock needed: it only
// sets up the router). Hop counts are computed per destination when a
// group first needs them (one BFS each), not for all pairs: a group on
// a 32 768-node torus touches a few hundred destinations of 32 768.
func (m *mcast) newManager(g *topology.Graph) (*multicast.Manager, error) {
	h := topology.MinHopsLazy(g)
	algo, err := multicast.ParseAlgo(mcastAlgo)
	if err != nil {
		return nil, err
	}
	r := multicast.NewRouter(h, algo, multicast.Options{})
	to := m.s.cfg.MulticastTimeout
	return multicast.NewManager(r, multicast.ManagerOptions{JoinTimeout: to, LeaveTimeout: to, Linger: time.Second,
		Clock: clockFunc(m.now)}), nil
}

// ensureManager builds the manager, if there is none yet, without holding
// mu (all-pairs hop counts take seconds on large fabrics; group queries
// go on meanwhile).
func (m *mcast) ensureManager() error {
	m.mu.Lock()
	g, have := m.g, m.mgr != nil
	m.mu.Unlock()
	if have {
		return nil
	}
	mgr, err := m.newManager(g)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.mgr == nil && m.g == g {
		m.mgr = mgr
	}
	m.mu.Unlock()
	return nil
}

// load reads the stored groups and replays them.
func (m *mcast) load() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.s.store.View(func(tx *Tx) error {
		return tx.Groups(func(g *GroupRecord) error {
			m.groups[g.ID] = g
			return nil
		})
	})
	if err != nil {
		return err
	}
	m.s.mu.RLock()
	g := m.s.g
	m.s.mu.RUnlock()
	return m.replay(g)
}

// replay rebuilds the manager on g from m.groups. Without groups the
// manager is built lazily by the first request: FULB-MC needs all-pairs
// hop counts, which take seconds and O(N²) memory on large fabrics, so
// the service neither starts nor re-routes groups any slower for them.
func (m *mcast) replay(g *topology.Graph) error { return m.replayWith(g, nil) }

// replayWith is replay with a manager already built on g (nil: build it).
func (m *mcast) replayWith(g *topology.Graph, mgr *multicast.Manager) error {
	m.g, m.mgr = g, nil
	if len(m.groups) == 0 {
		return nil
	}
	if mgr != nil {
		m.mgr = mgr
	} else if err := m.build(g); err != nil {
		return err
	}
	ids := make([]string, 0, len(m.groups))
	for id := range m.groups {
		ids = append(ids, id)
	}
	// Routed groups first, in the order their trees were computed; then
	// groups still collecting joins.
	sort.Slice(ids, func(i, j int) bool {
		a, b := m.groups[ids[i]], m.groups[ids[j]]
		if (a.Root == "") != (b.Root == "") {
			return a.Root != ""
		}
		if a.Root != "" && a.Seq != b.Seq {
			return a.Seq < b.Seq
		}
		return a.ID < b.ID
	})
	defer m.replayAt(nil)
	for _, id := range ids {
		g := m.groups[id]
		m.replayAt(g.JoinDeadline)
		for _, name := range g.Members {
			v := m.g.NodeByName(name)
			if v < 0 {
				return fmt.Errorf("group %s: unknown member %q", id, name)
			}
			if _, err := m.mgr.Join(id, v, g.MemberCount); err != nil && !errors.Is(err, multicast.ErrDuplicateJoin) {
				// The fabric changed under the group (a member failed):
				// keep the record and report it through the state.
				g.State = "Destroying"
				g.Reason = err.Error()
				break
			}
		}
		m.replayAt(g.LeaveDeadline)
		for _, name := range g.Left {
			if v := m.g.NodeByName(name); v >= 0 {
				m.mgr.Leave(id, v)
			}
		}
		m.refresh(g)
		if g.Root != "" && g.Seq > m.seq {
			m.seq = g.Seq
		}
	}
	return nil
}

// refresh copies the manager's view of a group into its record.
func (m *mcast) refresh(g *GroupRecord) {
	rec, err := m.mgr.Query(g.ID)
	if err != nil {
		if g.State != "Destroying" {
			g.State = "Destroying"
		}
		return
	}
	g.State = rec.State.String()
	g.Reason = rec.Reason
	if t, err := m.mgr.Tree(g.ID); err == nil {
		g.Root = m.g.NodeName(int(t.Root))
		g.Edges = g.Edges[:0]
		children := map[int][]int{}
		for _, c := range t.Edges {
			a, b := m.g.Src(int(c)), m.g.Dst(int(c))
			g.Edges = append(g.Edges, [2]string{m.g.NodeName(a), m.g.NodeName(b)})
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
		g.Root, g.Edges, g.Height = "", nil, 0
	}
}

// join handles a join request.
func (m *mcast) join(actor string, req McastRequest) (*GroupRecord, error) {
	if req.Group == "" || len(req.Group) > 128 {
		return nil, badRequest("group id must be 1..128 characters")
	}
	if req.MemberCount < 1 {
		return nil, badRequest("member_count must be at least 1 (every join carries the group's member count)")
	}
	return m.change(actor, "mcast.join", req, func(g *GroupRecord, v int) error {
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
func (m *mcast) leave(actor string, req McastRequest) (*GroupRecord, error) {
	if req.Group == "" {
		return nil, badRequest("group id missing")
	}
	return m.change(actor, "mcast.leave", req, func(g *GroupRecord, v int) error {
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
// ahead of the disk.
func (m *mcast) change(actor, action string, req McastRequest, apply func(*GroupRecord, int) error) (*GroupRecord, error) {
	if err := m.ensureManager(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.g.NodeByName(req.Member)
	if v < 0 {
		return nil, fmt.Errorf("%w: unknown member node %q", ErrNotFound, req.Member)
	}
	if m.mgr == nil {
		if err := m.build(m.g); err != nil {
			return nil, err
		}
	}
	before := m.snapshot()
	g := m.groups[req.Group]
	fresh := g == nil || g.State == "Destroying"
	if fresh {
		if action == "mcast.leave" {
			return nil, fmt.Errorf("%w: no multicast group %q", ErrNotFound, req.Group)
		}
		now := m.s.cfg.Now().UTC()
		d := now.Add(m.s.cfg.MulticastTimeout)
		g = &GroupRecord{ID: req.Group, Created: now, JoinDeadline: &d}
	} else {
		c := *g
		c.Members, c.Left, c.Edges = slices.Clone(g.Members), slices.Clone(g.Left), slices.Clone(g.Edges)
		g = &c
	}
	if err := apply(g, v); err != nil {
		return nil, protocolError(err)
	}
	g.Updated = m.s.cfg.Now().UTC()
	hadRoot := g.Root != ""
	m.refresh(g)
	if !hadRoot && g.Root != "" {
		m.seq++
		g.Seq = m.seq
	}
	changed := map[string]*GroupRecord{g.ID: g}
	m.collectExpired(changed)
	if err := m.persist(actor, action, req, changed); err != nil {
		m.groups = before
		if rerr := m.replay(m.g); rerr != nil {
			return nil, fmt.Errorf("storage: %v; rebuilding multicast state also failed: %v", err, rerr)
		}
		return nil, fmt.Errorf("storage: %v (the request was not applied)", err)
	}
	for id, c := range changed {
		if c.gone {
			delete(m.groups, id)
			continue
		}
		m.groups[id] = c
	}
	out := *g
	return &out, nil
}

// collectExpired adds groups whose state the manager changed on its own
// (timeouts) to changed.
func (m *mcast) collectExpired(changed map[string]*GroupRecord) {
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
			c.State, c.gone = "Destroying", true
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

func (m *mcast) persist(actor, action string, req McastRequest, changed map[string]*GroupRecord) error {
	return m.s.store.Update(actor, func(tx *Tx) error {
		for _, g := range changed {
			if g.gone {
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
}

func (m *mcast) snapshot() map[string]*GroupRecord {
	out := make(map[string]*GroupRecord, len(m.groups))
	for k, v := range m.groups {
		out[k] = v
	}
	return out
}

func protocolError(err error) error {
	switch {
	case errors.Is(err, multicast.ErrNoGroup), errors.Is(err, multicast.ErrNotMember):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, multicast.ErrDuplicateJoin), errors.Is(err, multicast.ErrDuplicateLeave),
		errors.Is(err, multicast.ErrCountMismatch), errors.Is(err, multicast.ErrWrongState):
		return fmt.Errorf("%w: %v", ErrConflict, err)
	case errors.Is(err, multicast.ErrBadRequest):
		// The protocol's own message already starts with "bad request".
		return fmt.Errorf("%w: %s", ErrBadRequest, strings.TrimPrefix(err.Error(), multicast.ErrBadRequest.Error()+": "))
	}
	return err
}

// tick enforces timeouts and persists what they changed.
func (m *mcast) tick() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mgr == nil {
		return
	}
	m.mgr.Expire()
	changed := map[string]*GroupRecord{}
	m.collectExpired(changed)
	if len(changed) == 0 {
		return
	}
	if err := m.persist("system", "", McastRequest{}, changed); err != nil {
		return // retried on the next tick
	}
	for id, c := range changed {
		if c.gone {
			delete(m.groups, id)
			continue
		}
		m.groups[id] = c
	}
}

// fabricChanged re-routes every group on the new fabric.
// The manager (all-pairs hop counts) is built before taking mu.
func (m *mcast) fabricChanged(g *topology.Graph) {
	m.mu.Lock()
	n := len(m.groups)
	m.mu.Unlock()
	var mgr *multicast.Manager
	if n > 0 {
		mgr, _ = m.newManager(g) // on error replay builds it again and keeps the groups' records
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replayWith(g, mgr)
}

func (m *mcast) list() []GroupRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]GroupRecord, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (m *mcast) get(id string) (*GroupRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[id]
	if !ok {
		return nil, fmt.Errorf("%w: no multicast group %q", ErrNotFound, id)
	}
	c := *g
	return &c, nil
}

func (m *mcast) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.groups)
}

func (m *mcast) byState() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for _, g := range m.groups {
		out[g.State]++
	}
	return out
}

// linkEFI counts, per link, the groups whose tree uses it (computed from
// the trees).
func (m *mcast) linkEFI() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.g
	efi := make([]int, g.NumLinks())
	for _, gr := range m.groups {
		if gr.State == "Destroying" {
			continue
		}
		seen := map[int]bool{}
		for _, e := range gr.Edges {
			a, b := g.NodeByName(e[0]), g.NodeByName(e[1])
			if a < 0 || b < 0 {
				continue
			}
			for _, c := range g.Out(a) {
				if g.Dst(int(c)) == b && !seen[int(c)>>1] {
					seen[int(c)>>1] = true
					efi[int(c)>>1]++
					break
				}
			}
		}
	}
	return efi
}

func (m *mcast) maxEFI() int {
	best := 0
	for _, x := range m.linkEFI() {
		best = max(best, x)
	}
	return best
}
