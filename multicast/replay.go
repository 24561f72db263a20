package multicast

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/icn-hpc/icn/topology"
)

// ReplayOptions configure Replay, a cycle-level replay of multicast
// messages over the trees.
type ReplayOptions struct {
	// Flits is the packet length in flits (one flit crosses a link per
	// cycle); a message is one packet.
	Flits int
	// RouterDelay is the cycles a switch needs before a packet's head
	// can leave on an output port (routing and replication).
	RouterDelay int
	// LinkDelay is the cycles a flit takes on a link.
	LinkDelay int
	// Messages is how many messages each sender sends, back to back.
	Messages int
	// AllSend makes every member of every group send (all-gather);
	// otherwise only the group's first member sends (broadcast).
	AllSend bool
	// Background is the offered unicast load per end node, a fraction of
	// its link's bandwidth (0 = none): packets of Flits to uniformly random
	// end nodes, over BackgroundCycles; the multicast messages start
	// halfway, after a warm-up. Seed drives the background.
	Background       float64
	BackgroundCycles int
	Seed             uint64
}

// ReplayResult is what Replay measured: latencies are in cycles from a
// message's injection to the arrival of its last flit at a member.
type ReplayResult struct {
	Messages   int     `json:"messages"`
	Deliveries int     `json:"deliveries"`
	Mean       float64 `json:"latency_mean"`
	P99        int64   `json:"latency_p99"`
	Max        int64   `json:"latency_max"`
	// CompletionMean is the mean over messages of the latency of their
	// last delivery (when the whole group has the message).
	CompletionMean float64 `json:"completion_mean"`
	// ZeroLoadMean is the mean latency if no two packets ever met: the
	// same replay with every link free.
	ZeroLoadMean float64 `json:"zero_load_mean"`
	Cycles       int64   `json:"cycles"`
	// BackgroundPackets and BackgroundMean describe the background
	// unicast traffic (if any): packets sent, their mean latency.
	BackgroundPackets int     `json:"background_packets,omitempty"`
	BackgroundMean    float64 `json:"background_latency_mean,omitempty"`
}

// Replay sends messages over the trees and measures their delivery
// latency. A message leaves its sender over the tree (taken as undirected,
// as an InfiniBand switch forwards a multicast packet to every tree port
// but the one it came in on) and is replicated at every switch. Each
// directed link carries one flit per cycle: a packet holds a link for Flits
// cycles and waits, first come first served, while another packet holds
// it (virtual cut-through with unbounded buffers: no credit back-pressure).
func Replay(g *topology.Graph, h *topology.HopTable, groups []Group, trees []Tree, o ReplayOptions) (*ReplayResult, error) {
	if err := o.check(g, groups, trees); err != nil {
		return nil, err
	}
	rp := newReplayer(g, h, groups, trees, o)
	res := rp.run(false)
	free := rp.run(true)
	res.ZeroLoadMean = free.Mean
	return res, nil
}

// check refuses options and inputs a replay cannot run with.
func (o ReplayOptions) check(g *topology.Graph, groups []Group, trees []Tree) error {
	if o.Background < 0 || o.Background >= 1 || (o.Background > 0 && o.BackgroundCycles < 2) {
		return fmt.Errorf("replay: background load %v over %d cycles: need 0 ≤ load < 1 and at least 2 cycles", o.Background, o.BackgroundCycles)
	}
	if expect := float64(len(g.Endpoints())) * o.Background * float64(o.BackgroundCycles) / float64(max(o.Flits, 1)); expect > maxBackgroundPackets {
		return fmt.Errorf("replay: background of about %.0f packets, more than %d: lower the load or the cycles", expect, maxBackgroundPackets)
	}
	if o.Flits < 1 || o.RouterDelay < 0 || o.LinkDelay < 1 || o.Messages < 1 {
		return fmt.Errorf("replay: flits %d, router delay %d, link delay %d, messages %d: need flits ≥ 1, delays ≥ 0 and ≥ 1, messages ≥ 1",
			o.Flits, o.RouterDelay, o.LinkDelay, o.Messages)
	}
	if len(groups) != len(trees) {
		return fmt.Errorf("replay: %d groups, %d trees", len(groups), len(trees))
	}
	return nil
}

// maxBackgroundPackets bounds the background traffic of one replay.
const maxBackgroundPackets = 1 << 23

// replayer holds the trees as undirected adjacency (CSR over the tree
// edges) and the per-channel busy times.
type replayer struct {
	g       *topology.Graph
	h       *topology.HopTable
	groups  []Group
	o       ReplayOptions
	start   []int32   // per tree: first entry in nodes/adj
	nodes   []int32   // per tree, sorted: the tree's nodes
	adjOff  []int32   // per tree node: offset in adj (len = len(nodes)+trees)
	adj     []int32   // channels out of a tree node along the tree
	members [][]int32 // per group, sorted
}

func newReplayer(g *topology.Graph, h *topology.HopTable, groups []Group, trees []Tree, o ReplayOptions) *replayer {
	rp := &replayer{g: g, h: h, groups: groups, o: o, members: make([][]int32, len(groups))}
	for k, t := range trees {
		rp.addTree(t)
		rp.members[k] = slices.Sorted(slices.Values(groups[k].Members))
	}
	rp.start = append(rp.start, int32(len(rp.nodes)))
	return rp
}

// addTree appends one tree's nodes and undirected adjacency.
func (rp *replayer) addTree(t Tree) {
	g := rp.g
	base := len(rp.nodes)
	rp.start = append(rp.start, int32(base))
	local := []int32{t.Root}
	for _, c := range t.Edges {
		local = append(local, int32(g.Dst(int(c))))
	}
	slices.Sort(local)
	local = slices.Compact(local)
	rp.nodes = append(rp.nodes, local...)
	deg := make([]int32, len(local)+1)
	idx := func(v int32) int { i, _ := slices.BinarySearch(local, v); return i }
	for _, c := range t.Edges {
		deg[idx(int32(g.Src(int(c))))+1]++
		deg[idx(int32(g.Dst(int(c))))+1]++
	}
	for i := 1; i < len(deg); i++ {
		deg[i] += deg[i-1]
	}
	off := len(rp.adj)
	for _, d := range deg[:len(local)] {
		rp.adjOff = append(rp.adjOff, int32(off)+d)
	}
	rp.adj = append(rp.adj, make([]int32, 2*len(t.Edges))...)
	fill := slices.Clone(deg[:len(local)])
	for _, c := range t.Edges {
		s, d := idx(int32(g.Src(int(c)))), idx(int32(g.Dst(int(c))))
		rp.adj[off+int(fill[s])] = c
		fill[s]++
		rp.adj[off+int(fill[d])] = c ^ 1
		fill[d]++
	}
	rp.adjOff = append(rp.adjOff, int32(off+2*len(t.Edges)))
}

// treeOut returns the channels out of node v along tree k.
func (rp *replayer) treeOut(k int, v int32) []int32 {
	lo, hi := rp.start[k], rp.start[k+1]
	local := rp.nodes[lo:hi]
	i, ok := slices.BinarySearch(local, v)
	if !ok {
		return nil
	}
	// adjOff has one extra entry per tree: tree k's entries start at
	// lo + k.
	j := int(lo) + k + i
	return rp.adj[rp.adjOff[j]:rp.adjOff[j+1]]
}

// replayEvent: the head of message msg reaches node v at time t, having
// come over channel in (-1 at the sender).
type replayEvent struct {
	t   int64
	seq int64
	msg int32
	v   int32
	in  int32
}

type replayQueue []replayEvent

func (q replayQueue) Len() int { return len(q) }
func (q replayQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q replayQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *replayQueue) Push(x any)   { *q = append(*q, x.(replayEvent)) }
func (q *replayQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// replayMsg is one message: its group, sender and injection time.
type replayMsg struct {
	group  int32
	sender int32
	t0     int64
	last   int64
}

// messages lists every message in injection order.
func (rp *replayer) messages() []replayMsg {
	var out []replayMsg
	for k, gr := range rp.groups {
		senders := gr.Members[:1]
		if rp.o.AllSend {
			senders = gr.Members
		}
		for _, s := range senders {
			for i := range rp.o.Messages {
				out = append(out, replayMsg{group: int32(k), sender: s, t0: int64(i * rp.o.Flits)})
			}
		}
	}
	return out
}

// run replays every message; with free set, links never wait (zero load)
// and there is no background traffic.
func (rp *replayer) run(free bool) *ReplayResult {
	st := &replayState{rp: rp, free: free, msgs: rp.messages(), busy: make([]int64, rp.g.NumChannels())}
	if !free && rp.o.Background > 0 {
		st.bg = rp.backgroundPackets()
		for i := range st.msgs {
			st.msgs[i].t0 += int64(rp.o.BackgroundCycles / 2) // after the warm-up half
		}
		for i, p := range st.bg {
			st.push(p.t0, int32(len(st.msgs)+i), p.src, -1)
		}
	}
	for i, m := range st.msgs {
		st.push(m.t0, int32(i), m.sender, -1)
	}
	for st.q.Len() > 0 {
		e := heap.Pop(&st.q).(replayEvent)
		if int(e.msg) >= len(st.msgs) {
			st.unicast(e)
		} else {
			st.multicast(e)
		}
	}
	res := summariseReplay(st.msgs, st.lat)
	if len(st.bg) > 0 {
		res.BackgroundPackets = len(st.bg)
		res.BackgroundMean = float64(st.bgSum) / float64(max(st.bgDone, 1))
	}
	return res
}

// replayState is one replay in progress.
type replayState struct {
	rp     *replayer
	free   bool
	msgs   []replayMsg
	bg     []bgPacket
	busy   []int64 // per channel: cycle from which it is free
	q      replayQueue
	seq    int64
	lat    []int64
	bgSum  int64
	bgDone int
}

func (st *replayState) push(t int64, msg, v, in int32) {
	heap.Push(&st.q, replayEvent{t: t, seq: st.seq, msg: msg, v: v, in: in})
	st.seq++
}

// send reserves channel c for a packet whose head is ready at cycle ready
// and queues its arrival at the far end.
func (st *replayState) send(e replayEvent, c int32, ready int64) {
	s := ready
	if !st.free {
		s = max(s, st.busy[c])
		st.busy[c] = s + int64(st.rp.o.Flits)
	}
	st.push(s+int64(st.rp.o.LinkDelay), e.msg, int32(st.rp.g.Dst(int(c))), c)
}

// multicast handles a multicast packet's head at e.v: delivery to a member,
// replication onto the tree ports at a switch.
func (st *replayState) multicast(e replayEvent) {
	rp := st.rp
	m := &st.msgs[e.msg]
	if e.in >= 0 && rp.isMember(int(m.group), e.v) {
		l := e.t + int64(rp.o.Flits) - m.t0
		st.lat = append(st.lat, l)
		m.last = max(m.last, l)
	}
	ready := e.t
	if e.in >= 0 {
		if rp.h.RouterIndex(int(e.v)) < 0 {
			return // an end node that is not the sender does not forward
		}
		ready += int64(rp.o.RouterDelay)
	}
	for _, c := range rp.treeOut(int(m.group), e.v) {
		if e.in < 0 || c != e.in^1 {
			st.send(e, c, ready)
		}
	}
}

// unicast moves a background packet one hop along a shortest path to its
// destination.
func (st *replayState) unicast(e replayEvent) {
	rp := st.rp
	p := &st.bg[int(e.msg)-len(st.msgs)]
	if e.v == p.dst {
		st.bgSum += e.t + int64(rp.o.Flits) - p.t0
		st.bgDone++
		return
	}
	ready := e.t
	if e.in >= 0 {
		ready += int64(rp.o.RouterDelay)
	}
	if c := rp.unicastHop(e.v, p.dst, p.src); c >= 0 {
		st.send(e, c, ready)
	}
}

// unicastHop returns a channel out of v on a shortest path to d: among
// the minimal ones, the one a hash of the flow picks (ECMP-like, so the
// background does not pile onto the lowest ports).
func (rp *replayer) unicastHop(v, d, src int32) int32 {
	g, h := rp.g, rp.h
	var buf [64]int32
	cands := buf[:0]
	router := h.RouterIndex(int(v)) >= 0
	hd := 0
	if router {
		hd = h.Hops(int(v), int(d))
	}
	for _, c := range g.Out(int(v)) {
		if !g.Up(int(c)) {
			continue
		}
		x := g.Dst(int(c))
		switch {
		case x == int(d):
			return c
		case h.RouterIndex(x) < 0:
		case !router && h.Hops(x, int(d)) < topology.Unreachable, router && h.Hops(x, int(d)) == hd-1:
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return -1
	}
	k := (uint64(src)*0x9e3779b97f4a7c15 ^ uint64(d)*0xbf58476d1ce4e5b9 ^ uint64(v)*0x94d049bb133111eb) >> 33
	return cands[k%uint64(len(cands))]
}

// bgPacket is one background unicast packet.
type bgPacket struct {
	src, dst int32
	t0       int64
}

// backgroundPackets draws the background traffic: every working end node
// offers Background of its link's bandwidth over BackgroundCycles, in
// packets of Flits with exponential gaps, to uniformly random end nodes.
func (rp *replayer) backgroundPackets() []bgPacket {
	var ends []int32
	for _, v := range rp.g.Endpoints() {
		if !rp.g.NodeFailed(v) {
			ends = append(ends, int32(v))
		}
	}
	if len(ends) < 2 {
		return nil
	}
	rng := rand.New(rand.NewPCG(rp.o.Seed, 0x6267))
	mean := float64(rp.o.Flits) / rp.o.Background
	var out []bgPacket
	for _, src := range ends {
		for t := rng.ExpFloat64() * mean; t < float64(rp.o.BackgroundCycles); t += rng.ExpFloat64() * mean {
			dst := ends[rng.IntN(len(ends))]
			if dst != src {
				out = append(out, bgPacket{src: src, dst: dst, t0: int64(t)})
			}
		}
	}
	return out
}

// isMember reports whether v is a member of group k.
func (rp *replayer) isMember(k int, v int32) bool {
	_, ok := slices.BinarySearch(rp.members[k], v)
	return ok
}

func summariseReplay(msgs []replayMsg, lat []int64) *ReplayResult {
	res := &ReplayResult{Messages: len(msgs), Deliveries: len(lat)}
	if len(lat) == 0 {
		return res
	}
	var sum int64
	for _, l := range lat {
		sum += l
		res.Max = max(res.Max, l)
	}
	res.Mean = float64(sum) / float64(len(lat))
	slices.Sort(lat)
	res.P99 = lat[min(len(lat)-1, (len(lat)*99+99)/100-1)]
	var done int64
	for _, m := range msgs {
		done += m.last
		res.Cycles = max(res.Cycles, m.t0+m.last)
	}
	res.CompletionMean = float64(done) / float64(len(msgs))
	return res
}
