package multicast

import (
	"container/heap"
	"fmt"
	"slices"

	"github.com/icn-hpc/icn/topology"
)

// This file holds what the seed's MPI latency experiments (§1.2, tables
// 1–2) add to the bare network replay: host software overhead per message,
// a benchmark loop that waits for each multicast to finish, and groups
// forced onto one shared tree.

// SharedScope says which nodes the one shared tree of SharedTree spans.
type SharedScope int

const (
	// SharedUnion spans the members of all groups.
	SharedUnion SharedScope = iota + 1
	// SharedAll spans every working end node of the fabric (every working
	// node on a direct network), so its height does not depend on the
	// groups: the EFI then varies with the number of groups alone.
	SharedAll
)

// ParseSharedScope reads "union" or "all".
func ParseSharedScope(s string) (SharedScope, error) {
	switch s {
	case "union":
		return SharedUnion, nil
	case "all":
		return SharedAll, nil
	}
	return 0, fmt.Errorf("shared tree %q: want union or all", s)
}

// SharedTree builds one tree with engine a over the nodes scope names and
// gives it to every group, as when all groups use one multicast tree (the
// seed's figure 2): a packet of any group then reaches every node of the
// tree, and every tree link has EFI = number of groups. The result's
// heights are the shared tree's height for every group.
func SharedTree(h *topology.HopTable, a Algo, groups []Group, scope SharedScope) (*Result, error) {
	if len(groups) == 0 {
		return nil, fmt.Errorf("shared tree: no groups")
	}
	span, err := sharedSpan(h.Graph(), groups, scope)
	if err != nil {
		return nil, err
	}
	one, err := Run(h, a, []Group{{Name: "shared", Members: span}}, Options{}, nil)
	if err != nil {
		return nil, fmt.Errorf("shared tree: %v", err)
	}
	t := one.Trees[0]
	res := &Result{Algo: one.Algo, Groups: len(groups), Trees: make([]Tree, len(groups)), Heights: make([]int, len(groups)),
		MaxHeight: one.MaxHeight, MeanHeight: float64(one.MaxHeight), Seconds: one.Seconds,
		TreeSeconds: one.TreeSeconds, RootSeconds: one.RootSeconds, StateBytes: one.StateBytes}
	v := NewVerifier(h)
	for i := range groups {
		if err := v.VerifyShape(groups[i].Members, t); err != nil {
			return nil, fmt.Errorf("shared tree: group %s: %v", groups[i].Name, err)
		}
		res.Members += len(groups[i].Members)
		res.Trees[i] = t
		res.Heights[i] = one.MaxHeight
	}
	res.EFI = LinkEFI(h.Graph(), res.Trees)
	res.EFIStats = SummariseEFI(h, res.EFI)
	res.Verified = true
	return res, nil
}

// sharedSpan lists the nodes the shared tree must reach, sorted.
func sharedSpan(g *topology.Graph, groups []Group, scope SharedScope) ([]int32, error) {
	var span []int32
	switch scope {
	case SharedUnion:
		for _, gr := range groups {
			span = append(span, gr.Members...)
		}
	case SharedAll:
		nodes := g.Endpoints()
		if len(nodes) == 0 {
			nodes = g.Switches()
		}
		for _, v := range nodes {
			if !g.NodeFailed(v) {
				span = append(span, int32(v))
			}
		}
		for _, gr := range groups {
			span = append(span, gr.Members...) // members that are switches
		}
	default:
		return nil, fmt.Errorf("shared tree: unknown scope %d", scope)
	}
	slices.Sort(span)
	return slices.Compact(span), nil
}

// HostOptions add the hosts to a replay. The zero value adds nothing.
type HostOptions struct {
	// Overhead is the host software time per message at each end, in
	// cycles: the sender spends it before injecting, every receiver after
	// the last flit arrives, so every latency grows by 2·Overhead. A
	// sender also cannot start messages faster than one per Overhead.
	Overhead int
	// ClosedLoop makes each sender wait, before its next message, until
	// the previous one has reached every member of its group and the
	// receivers and the sender have spent their overhead (a benchmark
	// loop timing one multicast at a time); otherwise a sender's messages
	// leave back to back, one per max(Flits, Overhead) cycles.
	ClosedLoop bool
}

// ReplayHost is Replay with the hosts of o added. With zero HostOptions it
// is Replay. Latencies include both overheads; ZeroLoadMean is the same
// loop with every link free.
func ReplayHost(g *topology.Graph, h *topology.HopTable, groups []Group, trees []Tree, o ReplayOptions, ho HostOptions) (*ReplayResult, error) {
	if ho == (HostOptions{}) {
		return Replay(g, h, groups, trees, o)
	}
	if ho.Overhead < 0 {
		return nil, fmt.Errorf("replay: host overhead %d cycles, want ≥ 0", ho.Overhead)
	}
	if o.Background != 0 {
		return nil, fmt.Errorf("replay: host overhead and a closed loop do not combine with background traffic")
	}
	if err := o.check(g, groups, trees); err != nil {
		return nil, err
	}
	rp := newReplayer(g, h, groups, trees, o)
	res := rp.runHost(false, ho)
	res.ZeroLoadMean = rp.runHost(true, ho).Mean
	return res, nil
}

// runHost is replayer.run (without background traffic) with the sender
// timing and overheads of ho.
func (rp *replayer) runHost(free bool, ho HostOptions) *ReplayResult {
	st := &replayState{rp: rp, free: free, msgs: rp.messages(), busy: make([]int64, rp.g.NumChannels())}
	per, over := rp.o.Messages, int64(ho.Overhead)
	gap := max(int64(rp.o.Flits), over)
	// messages() lists each sender's messages consecutively.
	left := make([]int, len(st.msgs))
	for i := range st.msgs {
		m := &st.msgs[i]
		left[i] = len(rp.groups[m.group].Members) - 1
		m.t0 = over + int64(i%per)*gap
		if !ho.ClosedLoop || i%per == 0 {
			st.push(m.t0, int32(i), m.sender, -1)
		}
	}
	for st.q.Len() > 0 {
		e := heap.Pop(&st.q).(replayEvent)
		n := len(st.lat)
		st.multicast(e)
		if !ho.ClosedLoop || len(st.lat) == n {
			continue
		}
		if left[e.msg]--; left[e.msg] == 0 && int(e.msg+1)%per != 0 {
			// Last member has it: receive overhead, then the sender's.
			next := &st.msgs[e.msg+1]
			next.t0 = e.t + int64(rp.o.Flits) + 2*over
			st.push(next.t0, e.msg+1, next.sender, -1)
		}
	}
	// Latencies count from the start of the send overhead to the end of
	// the receive overhead.
	for i := range st.lat {
		st.lat[i] += 2 * over
	}
	for i := range st.msgs {
		if st.msgs[i].last > 0 {
			st.msgs[i].last += 2 * over
		}
		st.msgs[i].t0 -= over
	}
	return summariseReplay(st.msgs, st.lat)
}
