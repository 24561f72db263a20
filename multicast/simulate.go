package multicast

import (
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

// ProtocolReport counts what happened in SimulateProtocol.
type ProtocolReport struct {
	Groups       int `json:"groups"`
	Joins        int `json:"joins"`
	LostJoins    int `json:"lost_joins"`
	Ready        int `json:"ready"`
	JoinTimeouts int `json:"join_timeouts"`
	// NeverCreated counts groups whose joins were all lost.
	NeverCreated  int `json:"never_created"`
	Leaves        int `json:"leaves"`
	LostLeaves    int `json:"lost_leaves"`
	AllLeft       int `json:"destroyed_all_left"`
	LeaveTimeouts int `json:"leave_timeouts"`
	// Reroutes counts tree computations beyond one per group (leaves must
	// never cause any).
	Reroutes int `json:"reroutes"`
	// LoadLeft is the total link load after every group is gone (must be 0).
	LoadLeft int `json:"load_left"`
}

// SimulateProtocol drives a Manager on a virtual clock: every member of
// every group sends its join (all groups interleaved in a seeded random
// order), each request lost with probability loss; after the join timeout
// the members of Ready groups all leave, again with losses; after the
// leave timeout every group must be gone and the load released.
func SimulateProtocol(h *topology.HopTable, a Algo, groups []Group, loss float64, seed uint64) (*ProtocolReport, error) {
	clock := NewManualClock(time.Unix(0, 0))
	computes := 0
	mgr := NewManager(NewRouter(h, a, Options{}), ManagerOptions{
		JoinTimeout: 10 * time.Second, LeaveTimeout: 10 * time.Second, Linger: time.Second, Clock: clock,
		OnState: func(_ string, s State) {
			if s == ComputingRoutes {
				computes++
			}
		},
	})
	rng := rand.New(rand.NewPCG(seed, 0x6d63))
	type req struct{ g, m int }
	var reqs []req
	for gi, g := range groups {
		for mi := range g.Members {
			reqs = append(reqs, req{gi, mi})
		}
	}
	rep := &ProtocolReport{Groups: len(groups)}
	rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	delivered := make([]int, len(groups))
	for _, r := range reqs {
		rep.Joins++
		if rng.Float64() < loss {
			rep.LostJoins++
			continue
		}
		g := groups[r.g]
		delivered[r.g]++
		if _, err := mgr.Join(g.Name, int(g.Members[r.m]), len(g.Members)); err != nil {
			return nil, err
		}
	}
	for _, n := range delivered {
		if n == 0 {
			rep.NeverCreated++
		}
	}
	clock.Advance(10 * time.Second)
	mgr.Expire()
	ready := map[string]bool{}
	for _, rec := range mgr.Groups() {
		switch rec.State {
		case Ready:
			rep.Ready++
			ready[rec.GID] = true
		case Destroying:
			rep.JoinTimeouts++
		}
	}
	rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	for _, r := range reqs {
		g := groups[r.g]
		if !ready[g.Name] {
			continue
		}
		rep.Leaves++
		if rng.Float64() < loss {
			rep.LostLeaves++
			continue
		}
		if _, err := mgr.Leave(g.Name, int(g.Members[r.m])); err != nil {
			return nil, err
		}
	}
	for _, rec := range mgr.Groups() {
		if ready[rec.GID] && rec.State == Destroying {
			rep.AllLeft++
		}
	}
	clock.Advance(10 * time.Second)
	mgr.Expire()
	for _, rec := range mgr.Groups() {
		if ready[rec.GID] && rec.State == Destroying && rec.Left < rec.MemberCount {
			rep.LeaveTimeouts++
		}
	}
	clock.Advance(2 * time.Second)
	mgr.Expire()
	rep.Reroutes = computes - rep.Ready
	for l := 0; l < h.Graph().NumLinks(); l++ {
		rep.LoadLeft += mgr.Load(l)
	}
	return rep, nil
}
