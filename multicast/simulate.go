package multicast

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// ManualClock is a Clock that moves only when told to (tests, simulations).
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock starts a clock at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ProtocolOptions configure SimulateProtocolWith.
type ProtocolOptions struct {
	// Loss is the probability that one transmission is lost: a request on
	// its way to the manager or, with retries, its answer on the way back.
	Loss float64
	// Retries is how often a client resends a request it got no answer
	// for (0 = never, the seed's bare protocol).
	Retries int
	// Backoff is the wait before the first resend; it doubles after
	// every further loss (default 100 ms).
	Backoff time.Duration
	// Seed drives the order of the requests and the losses.
	Seed uint64
}

// ProtocolReport counts what happened in SimulateProtocol.
type ProtocolReport struct {
	Loss    float64 `json:"loss"`
	Retries int     `json:"retries"`
	Groups  int     `json:"groups"`
	// Joins and Leaves count the clients' first requests; JoinRetries and
	// LeaveRetries the resends; LostJoins and LostLeaves every lost
	// request transmission; LostAnswers the answers lost on the way back
	// (only with retries: without them a client does not wait for one).
	Joins        int `json:"joins"`
	JoinRetries  int `json:"join_retries"`
	LostJoins    int `json:"lost_joins"`
	Ready        int `json:"ready"`
	JoinTimeouts int `json:"join_timeouts"`
	// NeverCreated counts groups whose joins were all lost.
	NeverCreated int `json:"never_created"`
	// GroupsLost counts groups that never became Ready (join timeout or
	// never created): Groups − Ready.
	GroupsLost    int `json:"groups_lost"`
	Leaves        int `json:"leaves"`
	LeaveRetries  int `json:"leave_retries"`
	LostLeaves    int `json:"lost_leaves"`
	LostAnswers   int `json:"lost_answers"`
	AllLeft       int `json:"destroyed_all_left"`
	LeaveTimeouts int `json:"leave_timeouts"`
	// Reroutes counts tree computations beyond one per group (leaves must
	// never cause any).
	Reroutes int `json:"reroutes"`
	// LoadLeft is the total link load after every group is gone (must be 0).
	LoadLeft int `json:"load_left"`
	// Seconds is the wall time of the simulation (routing included).
	Seconds float64 `json:"seconds"`
}

// Timing of the simulated protocol: requests of one phase are spread over
// protoSpread; the manager's timeouts are protoTimeout; a destroyed group
// lingers protoLinger, longer than a phase, so every group's fate can be
// read at the end of its phase.
const (
	protoSpread  = time.Second
	protoTimeout = 10 * time.Second
	protoLinger  = 2 * protoTimeout
)

// SimulateProtocol is SimulateProtocolWith without retries.
func SimulateProtocol(h *topology.HopTable, a Algo, groups []Group, loss float64, seed uint64) (*ProtocolReport, error) {
	return SimulateProtocolWith(h, a, groups, ProtocolOptions{Loss: loss, Seed: seed})
}

// SimulateProtocolWith drives a Manager on a virtual clock. Every member
// of every group sends its join at a seeded random moment of the first
// second (all groups interleaved); each transmission is lost with
// probability Loss, and a client without an answer resends after Backoff,
// 2·Backoff, … up to Retries times (a duplicate-join answer to a resend
// counts as success: the first copy got through). After the join timeout
// the members of Ready groups leave the same way; after the leave timeout
// every group must be gone and the load released.
func SimulateProtocolWith(h *topology.HopTable, a Algo, groups []Group, o ProtocolOptions) (*ProtocolReport, error) {
	if o.Loss < 0 || o.Loss > 1 {
		return nil, fmt.Errorf("loss %v out of range 0..1", o.Loss)
	}
	if o.Retries < 0 || o.Retries > 30 {
		return nil, fmt.Errorf("retries %d out of range 0..30", o.Retries)
	}
	if o.Backoff <= 0 {
		o.Backoff = 100 * time.Millisecond
	}
	span := retrySpan(o)
	if protoSpread+span >= protoTimeout {
		return nil, fmt.Errorf("%d retries from a %v backoff take %v: they would outlast the %v join timeout",
			o.Retries, o.Backoff, span, protoTimeout)
	}
	start := time.Now()
	s := newProtoSim(h, a, groups, o)
	if err := s.joinPhase(); err != nil {
		return nil, err
	}
	if err := s.leavePhase(); err != nil {
		return nil, err
	}
	s.teardown()
	s.rep.Seconds = time.Since(start).Seconds()
	return s.rep, nil
}

// retrySpan is the longest a client keeps resending one request.
func retrySpan(o ProtocolOptions) time.Duration {
	return o.Backoff * time.Duration((1<<o.Retries)-1)
}

// protoSim is the state of one protocol simulation.
type protoSim struct {
	h        *topology.HopTable
	groups   []Group
	o        ProtocolOptions
	clock    *ManualClock
	mgr      *Manager
	rng      *rand.Rand
	rep      *ProtocolReport
	computes int
	reqs     []protoReq
	queue    protoQueue
	ready    map[string]bool
}

// protoReq is one client request: member m of group g, attempt number.
type protoReq struct {
	at      time.Duration // virtual time since the start
	seq     int           // order of sending, breaks ties
	g, m    int32
	attempt int32
}

func newProtoSim(h *topology.HopTable, a Algo, groups []Group, o ProtocolOptions) *protoSim {
	s := &protoSim{h: h, groups: groups, o: o, clock: NewManualClock(time.Unix(0, 0)),
		rng: rand.New(rand.NewPCG(o.Seed, 0x6d63)), rep: &ProtocolReport{Loss: o.Loss, Retries: o.Retries, Groups: len(groups)}}
	s.mgr = NewManager(NewRouter(h, a, Options{}), ManagerOptions{
		JoinTimeout: protoTimeout, LeaveTimeout: protoTimeout, Linger: protoLinger, Clock: s.clock,
		OnState: func(_ string, st State) {
			if st == ComputingRoutes {
				s.computes++
			}
		},
	})
	for gi, g := range groups {
		for mi := range g.Members {
			s.reqs = append(s.reqs, protoReq{g: int32(gi), m: int32(mi)})
		}
	}
	return s
}

// now is the virtual time since the start.
func (s *protoSim) now() time.Duration { return s.clock.Now().Sub(time.Unix(0, 0)) }

// sendAll queues the requests of one phase (those keep says) in a seeded
// random order, spread over protoSpread from now.
func (s *protoSim) sendAll(keep func(protoReq) bool) int {
	s.rng.Shuffle(len(s.reqs), func(i, j int) { s.reqs[i], s.reqs[j] = s.reqs[j], s.reqs[i] })
	t0, n := s.now(), 0
	for _, r := range s.reqs {
		if keep(r) {
			n++
		}
	}
	k := 0
	for _, r := range s.reqs {
		if !keep(r) {
			continue
		}
		r.at = t0 + protoSpread*time.Duration(k)/time.Duration(n)
		r.seq, r.attempt = k, 0
		heap.Push(&s.queue, r)
		k++
	}
	return n
}

// deliver runs the queued requests in time order. send delivers one
// request and reports whether the answer means "done" (acknowledged).
func (s *protoSim) deliver(lost *int, retries *int, send func(protoReq) (bool, error)) error {
	seq := len(s.reqs)
	for len(s.queue) > 0 {
		r := heap.Pop(&s.queue).(protoReq)
		s.clock.Advance(r.at - s.now())
		done := false
		if s.rng.Float64() < s.o.Loss {
			*lost++
		} else {
			ok, err := send(r)
			if err != nil {
				return err
			}
			done = ok
			if done && s.o.Retries > 0 && s.rng.Float64() < s.o.Loss {
				s.rep.LostAnswers++
				done = false
			}
		}
		if done || int(r.attempt) >= s.o.Retries {
			continue
		}
		*retries++
		r.at += s.o.Backoff << r.attempt
		r.attempt++
		r.seq = seq
		seq++
		heap.Push(&s.queue, r)
	}
	return nil
}

// joinPhase sends every join and waits out the join timeout.
func (s *protoSim) joinPhase() error {
	s.rep.Joins = s.sendAll(func(protoReq) bool { return true })
	created := make([]bool, len(s.groups))
	err := s.deliver(&s.rep.LostJoins, &s.rep.JoinRetries, func(r protoReq) (bool, error) {
		g := s.groups[r.g]
		created[r.g] = true
		_, err := s.mgr.Join(g.Name, int(g.Members[r.m]), len(g.Members))
		if err != nil && r.attempt > 0 && errors.Is(err, ErrDuplicateJoin) {
			return true, nil // an earlier copy arrived; its answer was lost
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	for _, c := range created {
		if !c {
			s.rep.NeverCreated++
		}
	}
	s.clock.Advance(protoSpread + retrySpan(s.o) + protoTimeout - s.now())
	s.mgr.Expire()
	s.ready = map[string]bool{}
	for _, rec := range s.mgr.Groups() {
		switch rec.State {
		case Ready:
			s.rep.Ready++
			s.ready[rec.GID] = true
		case Destroying:
			s.rep.JoinTimeouts++
		}
	}
	s.rep.GroupsLost = s.rep.Groups - s.rep.Ready
	return nil
}

// leavePhase makes every member of a Ready group leave and waits out the
// leave timeout.
func (s *protoSim) leavePhase() error {
	t0 := s.now()
	s.rep.Leaves = s.sendAll(func(r protoReq) bool { return s.ready[s.groups[r.g].Name] })
	err := s.deliver(&s.rep.LostLeaves, &s.rep.LeaveRetries, func(r protoReq) (bool, error) {
		g := s.groups[r.g]
		_, err := s.mgr.Leave(g.Name, int(g.Members[r.m]))
		if err != nil && r.attempt > 0 && (errors.Is(err, ErrDuplicateLeave) || errors.Is(err, ErrNoGroup)) {
			return true, nil // an earlier copy arrived (the group may be gone already)
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	for _, rec := range s.mgr.Groups() {
		if s.ready[rec.GID] && rec.State == Destroying {
			s.rep.AllLeft++
		}
	}
	s.clock.Advance(t0 + protoSpread + retrySpan(s.o) + protoTimeout - s.now())
	s.mgr.Expire()
	for _, rec := range s.mgr.Groups() {
		if s.ready[rec.GID] && rec.State == Destroying && rec.Left < rec.MemberCount {
			s.rep.LeaveTimeouts++
		}
	}
	return nil
}

// teardown lets destroyed groups disappear and sums the load left.
func (s *protoSim) teardown() {
	s.clock.Advance(2 * protoLinger)
	s.mgr.Expire()
	s.rep.Reroutes = s.computes - s.rep.Ready
	for l := 0; l < s.h.Graph().NumLinks(); l++ {
		s.rep.LoadLeft += s.mgr.Load(l)
	}
}

// protoQueue is a min-heap of requests by time, then sending order.
type protoQueue []protoReq

func (q protoQueue) Len() int { return len(q) }
func (q protoQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q protoQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *protoQueue) Push(x any)   { *q = append(*q, x.(protoReq)) }
func (q *protoQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
