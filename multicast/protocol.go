package multicast

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// State is the state of a multicast group under the HPC join/leave
// protocol (seed 004 §3.2, figure 4).
type State uint8

const (
	// ReceivingJoinReq: the group exists (created by its first join) and
	// waits for the joins of the other members.
	ReceivingJoinReq State = iota
	// ComputingRoutes: every member joined; the tree is being computed.
	ComputingRoutes
	// Ready: the tree is installed; the group can carry traffic.
	Ready
	// ReceivingLeaveReq: some members left; the tree stays as it is.
	ReceivingLeaveReq
	// Destroying: every member left, a timeout expired or routing failed;
	// the tree is released and the group disappears after a linger time.
	Destroying
)

var stateNames = [...]string{"ReceivingJoinReq", "ComputingRoutes", "Ready", "ReceivingLeaveReq", "Destroying"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// MarshalText writes the state's name (for JSON).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Protocol errors. Callers compare with errors.Is; the messages carry the
// group and member.
var (
	ErrNoGroup        = errors.New("no such group")
	ErrDuplicateJoin  = errors.New("member already joined")
	ErrNotMember      = errors.New("not a member of the group")
	ErrDuplicateLeave = errors.New("member already left")
	ErrCountMismatch  = errors.New("member count differs from the group's")
	ErrWrongState     = errors.New("request not allowed in the group's state")
	ErrBadRequest     = errors.New("bad request")
)

// Clock gives the time; tests inject a fake one.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// JoinTimeout: a group that has not received all its joins this long
	// after its first join is destroyed (default 10 s).
	JoinTimeout time.Duration
	// LeaveTimeout: a group that has not received all its leaves this long
	// after its first leave is destroyed (default 10 s).
	LeaveTimeout time.Duration
	// Linger: how long a destroyed group stays visible in the Destroying
	// state before it is forgotten (default JoinTimeout).
	Linger time.Duration
	// Clock (default the wall clock).
	Clock Clock
	// OnState, if set, is called after every state change, outside the
	// manager's main lock, in the order of the changes. It must not call
	// back into the Manager.
	OnState func(gid string, s State)
}

// GroupRecord is a group's state as answered to a query (the seed's
// MCGStateRecord).
type GroupRecord struct {
	GID         string `json:"gid"`
	State       State  `json:"state"`
	MemberCount int    `json:"member_count"`
	Joined      int    `json:"joined"`
	Left        int    `json:"left"`
	Root        string `json:"root,omitempty"`
	TreeEdges   int    `json:"tree_edges"`
	Reason      string `json:"reason,omitempty"`
}

// Manager runs the HPC join/leave protocol: a group is created by its first
// join, which carries the member count; its tree is computed once, when the
// last join arrives; leaving members never cause re-routing; the group is
// destroyed when all members left or when joins or leaves are missing after
// a timeout. Timeouts are checked on every call and by Expire, against the
// injected clock. Safe for concurrent use.
type Manager struct {
	g   *topology.Graph
	opt ManagerOptions

	mu     sync.Mutex
	groups map[string]*mgroup
	gen    uint64
	// due holds one entry per timed state a group entered (joins, leaves,
	// linger), earliest deadline first; entries a group has left behind
	// are skipped when they surface. Expiry costs O(log n) per timeout
	// instead of a scan of every group per request.
	due    deadlines
	events []event // pending OnState calls, flushed outside mu
	evMu   sync.Mutex

	routeMu sync.Mutex // serialises the router and the verifier
	r       *Router
	v       *Verifier
}

type event struct {
	gid string
	s   State
}

type mgroup struct {
	gid     string
	gen     uint64
	state   State
	count   int
	joined  map[int32]bool
	order   []int32
	left    map[int32]bool
	since   time.Time // first join, first leave or destruction, by state
	tree    Tree
	hasTree bool
	reason  string
}

// NewManager starts a protocol manager that routes groups with router r.
func NewManager(r *Router, o ManagerOptions) *Manager {
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = 10 * time.Second
	}
	if o.LeaveTimeout <= 0 {
		o.LeaveTimeout = 10 * time.Second
	}
	if o.Linger <= 0 {
		o.Linger = o.JoinTimeout
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	return &Manager{g: r.g, opt: o, groups: map[string]*mgroup{}, r: r, v: NewVerifier(r.h)}
}

func (m *Manager) record(gr *mgroup) GroupRecord {
	rec := GroupRecord{GID: gr.gid, State: gr.state, MemberCount: gr.count, Joined: len(gr.joined), Left: len(gr.left), Reason: gr.reason}
	if gr.hasTree {
		rec.Root = m.g.NodeName(int(gr.tree.Root))
		rec.TreeEdges = len(gr.tree.Edges)
	}
	return rec
}

func (m *Manager) setState(gr *mgroup, s State) {
	gr.state = s
	if m.opt.OnState != nil {
		m.events = append(m.events, event{gr.gid, s})
	}
}

// unlock releases mu and delivers pending state-change callbacks.
func (m *Manager) unlock() {
	ev := m.events
	m.events = nil
	if len(ev) > 0 {
		m.evMu.Lock()
	}
	m.mu.Unlock()
	if len(ev) > 0 {
		for _, e := range ev {
			m.opt.OnState(e.gid, e.s)
		}
		m.evMu.Unlock()
	}
}

func (m *Manager) checkMember(member int) error {
	if member < 0 || member >= m.g.NumNodes() {
		return fmt.Errorf("%w: member id %d is not a node of the fabric", ErrBadRequest, member)
	}
	if m.g.NodeFailed(member) {
		return fmt.Errorf("%w: member %s is a failed node", ErrBadRequest, m.g.NodeName(member))
	}
	return nil
}

// Join handles a join request of member (a node id) for group gid carrying
// the group's member count. The first join creates the group; the join that
// completes it computes the tree before returning (other callers see
// ComputingRoutes meanwhile). It returns the group's record after the join.
func (m *Manager) Join(gid string, member, count int) (GroupRecord, error) {
	if err := m.checkJoin(gid, member, count); err != nil {
		return GroupRecord{}, err
	}
	v := int32(member)
	m.mu.Lock()
	m.expireLocked()
	gr := m.joinGroupLocked(gid, count)
	if err := m.admitLocked(gr, v, count); err != nil {
		rec := m.record(gr)
		m.unlock()
		return rec, err
	}
	gr.joined[v] = true
	gr.order = append(gr.order, v)
	if len(gr.joined) < gr.count {
		rec := m.record(gr)
		m.unlock()
		return rec, nil
	}
	// Last join: compute the tree outside mu so queries keep answering.
	m.setState(gr, ComputingRoutes)
	members := slices.Clone(gr.order)
	gen := gr.gen
	m.unlock()
	t, err := m.computeTree(members)
	return m.installTree(gr, gen, t, err)
}

// AdoptCheck says how much of a tree Adopt verifies.
type AdoptCheck int

const (
	// CheckAll: everything Verify checks, min-hop depths included.
	CheckAll AdoptCheck = iota
	// CheckShape: Verifier.VerifyShape only, for a tree that passed
	// Verify on a fabric that has since only lost links or nodes (then
	// it passes Verify too, and no hop counts are needed).
	CheckShape
)

// Adopt installs a group that is already routed, as after a restart or a
// fabric change that left its tree intact: Ready, every member joined,
// with tree t, which is verified on this manager's fabric first (check)
// and then counted in the router's loads, so later groups are balanced
// against it. A tree that does not verify is refused with the reason and
// changes nothing; the caller routes the group afresh (Join) instead.
func (m *Manager) Adopt(gid string, count int, members []int, t Tree, check AdoptCheck) (GroupRecord, error) {
	if gid == "" {
		return GroupRecord{}, fmt.Errorf("%w: empty group id", ErrBadRequest)
	}
	if count != len(members) {
		return GroupRecord{}, fmt.Errorf("%w: group %s: %d members, count %d", ErrCountMismatch, gid, len(members), count)
	}
	vs := make([]int32, len(members))
	joined := make(map[int32]bool, len(members))
	for i, v := range members {
		if err := m.checkMember(v); err != nil {
			return GroupRecord{}, fmt.Errorf("group %s: %w", gid, err)
		}
		if joined[int32(v)] {
			return GroupRecord{}, fmt.Errorf("group %s: %w: %s", gid, ErrDuplicateJoin, m.g.NodeName(v))
		}
		vs[i], joined[int32(v)] = int32(v), true
	}
	m.mu.Lock()
	m.expireLocked()
	if gr := m.groups[gid]; gr != nil && gr.state != Destroying {
		rec := m.record(gr)
		m.unlock()
		return rec, fmt.Errorf("group %s: %w: adopted while %s", gid, ErrWrongState, rec.State)
	}
	m.routeMu.Lock()
	var err error
	if check == CheckShape {
		err = m.v.VerifyShape(vs, t)
	} else {
		_, err = m.v.Verify(vs, t)
	}
	if err != nil {
		m.routeMu.Unlock()
		m.unlock()
		return GroupRecord{}, fmt.Errorf("group %s: tree does not hold on this fabric: %v", gid, err)
	}
	m.r.Add(t)
	m.routeMu.Unlock()
	m.gen++
	gr := &mgroup{gid: gid, gen: m.gen, count: count, joined: joined, order: vs, left: map[int32]bool{},
		since: m.opt.Clock.Now(), tree: t, hasTree: true}
	m.groups[gid] = gr
	m.setState(gr, Ready)
	rec := m.record(gr)
	m.unlock()
	return rec, nil
}

// checkJoin validates a join request before any state is touched.
func (m *Manager) checkJoin(gid string, member, count int) error {
	if gid == "" {
		return fmt.Errorf("%w: empty group id", ErrBadRequest)
	}
	if err := m.checkMember(member); err != nil {
		return err
	}
	if count < 1 || count > m.g.NumNodes() {
		return fmt.Errorf("%w: member count %d out of range 1..%d", ErrBadRequest, count, m.g.NumNodes())
	}
	return nil
}

// joinGroupLocked returns the group a join of gid goes to, creating it
// (in ReceivingJoinReq) when there is none or only a Destroying one.
// m.mu is held.
func (m *Manager) joinGroupLocked(gid string, count int) *mgroup {
	gr := m.groups[gid]
	if gr != nil && gr.state == Destroying {
		// The old incarnation is already torn down (its tree released);
		// a join starts a new one.
		gr = nil
	}
	if gr == nil {
		m.gen++
		gr = &mgroup{gid: gid, gen: m.gen, count: count, joined: map[int32]bool{}, left: map[int32]bool{},
			since: m.opt.Clock.Now(), state: ReceivingJoinReq}
		m.groups[gid] = gr
		m.schedule(gr)
		if m.opt.OnState != nil {
			m.events = append(m.events, event{gid, ReceivingJoinReq})
		}
	}
	return gr
}

// admitLocked refuses a duplicate join, a join outside ReceivingJoinReq
// and a join with a different member count. m.mu is held.
func (m *Manager) admitLocked(gr *mgroup, v int32, count int) error {
	switch {
	case gr.joined[v]:
		return fmt.Errorf("group %s: %w: %s", gr.gid, ErrDuplicateJoin, m.g.NodeName(int(v)))
	case gr.state != ReceivingJoinReq:
		return fmt.Errorf("group %s: %w: join of %s while %s", gr.gid, ErrWrongState, m.g.NodeName(int(v)), m.record(gr).State)
	case count != gr.count:
		return fmt.Errorf("group %s: %w: join of %s says %d members, the group has %d", gr.gid, ErrCountMismatch, m.g.NodeName(int(v)), count, gr.count)
	}
	return nil
}

// computeTree routes and verifies the tree of the members under routeMu;
// a tree that fails verification is released.
func (m *Manager) computeTree(members []int32) (Tree, error) {
	m.routeMu.Lock()
	defer m.routeMu.Unlock()
	t, err := m.r.Route(members)
	if err == nil {
		if _, verr := m.v.Verify(members, t); verr != nil {
			m.r.Release(t)
			err = fmt.Errorf("bad tree: %v", verr)
		}
	}
	return t, err
}

// installTree records the outcome of computeTree for generation gen of
// the group: Ready with the tree, or Destroying with the reason.
func (m *Manager) installTree(gr *mgroup, gen uint64, t Tree, err error) (GroupRecord, error) {
	m.mu.Lock()
	defer m.unlock()
	gid := gr.gid
	if cur := m.groups[gid]; cur != gr || gr.gen != gen {
		// Cannot happen (nothing removes a group while it computes), but
		// never leak the tree's load.
		if err == nil {
			m.routeMu.Lock()
			m.r.Release(t)
			m.routeMu.Unlock()
		}
		return GroupRecord{}, fmt.Errorf("group %s: %w: group vanished while computing routes", gid, ErrNoGroup)
	}
	if err != nil {
		gr.reason = "routing failed: " + err.Error()
		gr.since = m.opt.Clock.Now()
		m.setState(gr, Destroying)
		m.schedule(gr)
		return m.record(gr), fmt.Errorf("group %s: %v", gid, err)
	}
	gr.tree, gr.hasTree = t, true
	m.setState(gr, Ready)
	return m.record(gr), nil
}

// Leave handles a leave request. The tree is not recomputed; the group is
// destroyed when its last member leaves.
func (m *Manager) Leave(gid string, member int) (GroupRecord, error) {
	if err := m.checkMember(member); err != nil {
		return GroupRecord{}, err
	}
	v := int32(member)
	m.mu.Lock()
	defer m.unlock()
	gr, err := m.liveGroupLocked(gid)
	if err != nil {
		return GroupRecord{}, err
	}
	if !gr.joined[v] {
		return m.record(gr), fmt.Errorf("group %s: %w: %s", gid, ErrNotMember, m.g.NodeName(member))
	}
	if gr.left[v] {
		return m.record(gr), fmt.Errorf("group %s: %w: %s", gid, ErrDuplicateLeave, m.g.NodeName(member))
	}
	if gr.state != Ready && gr.state != ReceivingLeaveReq {
		return m.record(gr), fmt.Errorf("group %s: %w: leave of %s while %s", gid, ErrWrongState, m.g.NodeName(member), gr.state)
	}
	gr.left[v] = true
	if gr.state == Ready {
		gr.since = m.opt.Clock.Now()
		m.setState(gr, ReceivingLeaveReq)
		m.schedule(gr)
	}
	if len(gr.left) == gr.count {
		m.destroyLocked(gr, "all members left")
	}
	return m.record(gr), nil
}

// liveGroupLocked drops expired groups and returns the group gid, or
// ErrNoGroup. m.mu is held.
func (m *Manager) liveGroupLocked(gid string) (*mgroup, error) {
	m.expireLocked()
	if gr := m.groups[gid]; gr != nil {
		return gr, nil
	}
	return nil, fmt.Errorf("group %s: %w", gid, ErrNoGroup)
}

// Query answers a state query (the seed's SubnAdmGet(MCGStateRecord)).
func (m *Manager) Query(gid string) (GroupRecord, error) {
	m.mu.Lock()
	defer m.unlock()
	gr, err := m.liveGroupLocked(gid)
	if err != nil {
		return GroupRecord{}, err
	}
	return m.record(gr), nil
}

// Tree returns a Ready (or ReceivingLeaveReq) group's tree.
func (m *Manager) Tree(gid string) (Tree, error) {
	m.mu.Lock()
	defer m.unlock()
	gr, err := m.liveGroupLocked(gid)
	if err != nil {
		return Tree{}, err
	}
	if !gr.hasTree {
		return Tree{}, fmt.Errorf("group %s: %w: no tree while %s", gid, ErrWrongState, gr.state)
	}
	return Tree{Root: gr.tree.Root, Edges: slices.Clone(gr.tree.Edges)}, nil
}

// Groups returns the records of all known groups, sorted by id.
func (m *Manager) Groups() []GroupRecord {
	m.mu.Lock()
	defer m.unlock()
	m.expireLocked()
	out := make([]GroupRecord, 0, len(m.groups))
	for _, gr := range m.groups {
		out = append(out, m.record(gr))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GID < out[j].GID })
	return out
}

// Expire applies the timeouts now (every call does it too; a service calls
// Expire periodically so timeouts fire without traffic).
func (m *Manager) Expire() {
	m.mu.Lock()
	defer m.unlock()
	m.expireLocked()
}

// expireLocked applies every timeout that is due: it pops deadlines up
// to now and acts on those that still describe the group's current state.
func (m *Manager) expireLocked() {
	now := m.opt.Clock.Now()
	for len(m.due) > 0 && !m.due[0].at.After(now) {
		d := heap.Pop(&m.due).(deadline)
		gr := d.gr
		if m.groups[gr.gid] != gr || gr.state != d.state {
			continue // forgotten, replaced by a new incarnation, or moved on
		}
		if at, ok := m.deadlineOf(gr); !ok || !at.Equal(d.at) {
			continue
		}
		switch gr.state {
		case ReceivingJoinReq:
			m.destroyLocked(gr, fmt.Sprintf("join timeout: %d of %d members joined", len(gr.joined), gr.count))
		case ReceivingLeaveReq:
			m.destroyLocked(gr, fmt.Sprintf("leave timeout: %d of %d members left", len(gr.left), gr.count))
		case Destroying:
			delete(m.groups, gr.gid)
		}
	}
}

// deadlineOf is when the group's current state times out, if it does.
func (m *Manager) deadlineOf(gr *mgroup) (time.Time, bool) {
	switch gr.state {
	case ReceivingJoinReq:
		return gr.since.Add(m.opt.JoinTimeout), true
	case ReceivingLeaveReq:
		return gr.since.Add(m.opt.LeaveTimeout), true
	case Destroying:
		return gr.since.Add(m.opt.Linger), true
	}
	return time.Time{}, false
}

// schedule records the deadline of the group's current state.
func (m *Manager) schedule(gr *mgroup) {
	if at, ok := m.deadlineOf(gr); ok {
		heap.Push(&m.due, deadline{at: at, gr: gr, state: gr.state})
	}
}

// deadline is one timed state of one group incarnation.
type deadline struct {
	at    time.Time
	gr    *mgroup
	state State
}

// deadlines is a min-heap of deadlines (container/heap).
type deadlines []deadline

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].at.Before(d[j].at) }
func (d deadlines) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deadlines) Push(x any)        { *d = append(*d, x.(deadline)) }
func (d *deadlines) Pop() any {
	old := *d
	x := old[len(old)-1]
	old[len(old)-1] = deadline{}
	*d = old[:len(old)-1]
	return x
}

// destroyLocked moves a group to Destroying and releases its tree's load.
func (m *Manager) destroyLocked(gr *mgroup, reason string) {
	gr.reason = reason
	gr.since = m.opt.Clock.Now()
	if gr.hasTree {
		m.routeMu.Lock()
		m.r.Release(gr.tree)
		m.routeMu.Unlock()
		gr.hasTree = false
		gr.tree = Tree{}
	}
	m.setState(gr, Destroying)
	m.schedule(gr)
}

// Load returns the number of groups currently routed over link l (for
// checks and monitoring).
func (m *Manager) Load(l int) int {
	m.routeMu.Lock()
	defer m.routeMu.Unlock()
	return m.r.LinkLoad(l)
}
