package unicast

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/internal/cdg"
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// Report is the audit of a table set.
//
// Traffic sources are the live end ports. Reachability covers every
// (source, LID) pair of different nodes; path lengths and link loads cover
// the pairs of end ports (an all-to-all). Lengths are in links, end port to
// end port. Link loads are counted on switch-to-switch channels only: an
// access channel carries N−1 routes whatever the routing.
type Report struct {
	Engine    string `json:"engine"`
	Switches  int    `json:"switches"`
	Endpoints int    `json:"endpoints"`
	EndPorts  int    `json:"end_ports"`
	LIDs      int    `json:"lids"`

	MaxLinkRoutes  int64   `json:"max_link_routes"`
	MeanLinkRoutes float64 `json:"mean_link_routes"`
	PiPerfect      float64 `json:"pi_perfect"`
	BalanceFactor  float64 `json:"balance_factor"`
	Channels       int     `json:"switch_channels"`

	MaxHops         int     `json:"max_hops"`
	AvgHops         float64 `json:"avg_hops"`
	MinimalFraction float64 `json:"minimal_fraction"`

	Reachable        bool  `json:"reachable"`
	Pairs            int64 `json:"pairs"`
	UnreachablePairs int64 `json:"unreachable_pairs"`
	// UnreachableSwitch counts the unreachable pairs whose destination is
	// a switch LID (management traffic only).
	UnreachableSwitch int64 `json:"unreachable_switch_pairs"`
	BlackHoles        int64 `json:"black_holes"`
	Loops             int64 `json:"loops"`
	// Misdelivered counts the pairs a switch hands to an end port other
	// than the LID's holder (the port whose GUID the tables name).
	Misdelivered     int64  `json:"misdelivered_pairs"`
	FirstUnreachable string `json:"first_unreachable,omitempty"`

	DeadlockFree bool         `json:"deadlock_free"`
	Lanes        int          `json:"lanes"`
	LaneCDG      []LaneReport `json:"lane_cdg"`
	Cycle        []string     `json:"cycle,omitempty"`
	CycleLane    int          `json:"cycle_lane"`

	FatTree    bool        `json:"fat_tree"`
	Contention *Contention `json:"contention,omitempty"`

	Seconds float64 `json:"seconds"`
}

// LaneReport is the channel dependency graph of one lane.
type LaneReport struct {
	Lane    int      `json:"lane"`
	Paths   int64    `json:"paths"` // (source switch, LID) paths on the lane
	Edges   int      `json:"edges"`
	Acyclic bool     `json:"acyclic"`
	Cycle   []string `json:"cycle,omitempty"`
}

// Contention is the worst link sharing of permutation traffic.
type Contention struct {
	Order      string  `json:"order"` // "fat-tree" or "port"
	Shifts     int     `json:"shifts"`
	ShiftMax   int     `json:"shift_max"`
	ShiftWorst int     `json:"shift_worst"` // a shift reaching ShiftMax
	ShiftMean  float64 `json:"shift_mean"`
	Random     int     `json:"random"`
	RandomMax  int     `json:"random_max"`
	RandomMean float64 `json:"random_mean"`
	Seed       uint64  `json:"seed"`
}

// AuditOptions control Audit.
type AuditOptions struct {
	// Contention: compute shift/random permutation contention. Auto (the
	// zero value) computes it on fat trees only.
	Contention ContentionMode
	// Shifts tested: 0 = all shifts up to 4096 end ports, else 256 evenly
	// spaced; a positive value samples that many evenly spaced shifts.
	Shifts int
	// Perms is the number of random permutations (default 8; -1 = none).
	Perms   int
	Seed    uint64
	Workers int
	// Progress, if set, is called with units of work done.
	Progress func(n int)
}

// ContentionMode says when to compute permutation contention.
type ContentionMode int

const (
	ContentionAuto ContentionMode = iota
	ContentionOn
	ContentionOff
)

// Audit checks a table set: reachability (loops, black holes and
// deliveries to the wrong end port), path lengths against the shortest,
// per-link route counts, channel-dependency cycles per lane and, for fat
// trees, permutation contention.
func Audit(t *Tables, o AuditOptions) (*Report, error) {
	start := time.Now()
	if o.Progress == nil {
		o.Progress = func(int) {}
	}
	a, err := newAuditor(t, o)
	if err != nil {
		return nil, err
	}
	r := a.header()
	lids := liveLIDs(t.F)
	ac := a.walkAll(lids, o)
	load := a.merge(r, ac)
	a.linkStats(r, load)
	if err := auditCDG(a.fl, r, a.srcW, lids, a.nw); err != nil {
		return nil, err
	}
	a.contention(r, o)
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// auditor holds what every destination's walk needs.
type auditor struct {
	t    *Tables
	f    *Fabric
	g    *topology.Graph
	h    *topology.HopTable
	srcW []uint32
	fl   *fastLFT
	nw   int
}

// auditAcc is one worker's running totals.
type auditAcc struct {
	treeScratch
	w         []int64
	sum       []int64
	load      []int64
	pairs     int64
	unreach   int64
	unreachSw int64
	holes     int64
	loops     int64
	misdel    int64
	hopSum    int64
	hopMax    int
	minimal   int64
	perfect   int64
	termPairs int64
	firstLID  int
	firstMsg  string
}

func newAuditor(t *Tables, o AuditOptions) (*auditor, error) {
	h, err := topology.MinHops(t.F.G, o.Workers)
	if err != nil {
		return nil, err
	}
	return &auditor{t: t, f: t.F, g: t.F.G, h: h, srcW: sourceWeights(t.F), fl: newFastLFT(t, switchAdjacency(t.F)), nw: par.Workers(o.Workers)}, nil
}

// header fills the counts that do not depend on the routes.
func (a *auditor) header() *Report {
	f := a.f
	r := &Report{Engine: a.t.Engine, Switches: len(f.switches), Endpoints: a.g.Count(topology.Endpoint), EndPorts: len(f.terms), Lanes: a.t.numLanes, CycleLane: -1}
	for lid := 1; lid <= f.maxLID; lid++ {
		if sw, term := f.Owner(lid); sw >= 0 || term >= 0 {
			r.LIDs++
		}
	}
	return r
}

// liveLIDs returns the LIDs of live destinations in increasing order.
func liveLIDs(f *Fabric) []int {
	var lids []int
	for _, d := range f.dests() {
		if d.alive {
			lids = append(lids, d.lid)
		}
	}
	sort.Ints(lids)
	return lids
}

// walkAll runs walk for every LID on all workers.
func (a *auditor) walkAll(lids []int, o AuditOptions) []auditAcc {
	S := len(a.f.switches)
	ac := make([]auditAcc, a.nw)
	for i := range ac {
		x := &ac[i]
		x.treeScratch = newTreeScratch(S)
		x.w, x.sum = make([]int64, S), make([]int64, S)
		x.load = make([]int64, a.g.NumChannels())
		x.firstLID = math.MaxInt
	}
	var done atomic.Int64
	par.For(len(lids), a.nw, func(wk, k int) {
		if done.Add(1)%256 == 0 {
			o.Progress(256)
		}
		a.walk(&ac[wk], lids[k])
	})
	return ac
}

// walk follows every source switch's route to lid: reachability, then
// (for end-port LIDs) link loads and path lengths.
func (a *auditor) walk(x *auditAcc, lid int) {
	f, g := a.f, a.g
	S := len(f.switches)
	dsw, dterm := f.Owner(lid)
	order := a.fl.treeOrder(lid, &x.treeScratch)
	for s := 0; s < S; s++ {
		x.w[s] = int64(a.srcW[s])
	}
	if dterm >= 0 {
		// Ports of the destination node do not send to it.
		destNode := f.terms[dterm].Node
		for p := 1; p <= g.NumPorts(destNode); p++ {
			if _, ti := f.Owner(f.portLID(destNode, p)); ti >= 0 && f.termAlive(ti) {
				x.w[f.terms[ti].Switch]--
			}
		}
	}
	a.reach(x, lid, dterm < 0)
	if dterm < 0 {
		return
	}
	_ = dsw
	for _, u := range order {
		x.sum[u] = x.w[u]
	}
	for _, u := range order {
		if v := x.nxt[u]; v >= 0 {
			x.sum[v] += x.sum[u]
			c := g.PortChannel(f.Switch(int(u)), a.t.Port(int(u), lid))
			x.load[c] += x.sum[u]
		}
	}
	a.lengths(x, f.terms[dterm].Switch)
}

// reach counts the pairs to lid and classifies those that fail.
func (a *auditor) reach(x *auditAcc, lid int, toSwitch bool) {
	f, g := a.f, a.g
	for s := range f.switches {
		if x.w[s] == 0 {
			continue
		}
		x.pairs += x.w[s]
		if x.depth[s] >= 0 {
			continue
		}
		x.unreach += x.w[s]
		if toSwitch {
			x.unreachSw += x.w[s]
		}
		why, at := a.t.classify(s, lid)
		kind := "routing loop"
		switch why {
		case hole:
			x.holes += x.w[s]
			kind = "black hole"
		case misdelivered:
			x.misdel += x.w[s]
			kind = "delivered to " + a.t.deliveredTo(at, lid) + " instead of its holder"
		default:
			x.loops += x.w[s]
		}
		if lid < x.firstLID {
			x.firstLID = lid
			x.firstMsg = fmt.Sprintf("from switch %s to LID %d (%s): %s at switch %s",
				g.NodeName(f.Switch(s)), lid, f.LIDName(lid), kind, g.NodeName(f.Switch(at)))
		}
	}
}

// lengths adds the path lengths of the pairs to an end port on switch tsw.
func (a *auditor) lengths(x *auditAcc, tsw int) {
	f := a.f
	tv := f.Switch(tsw)
	for s := range f.switches {
		if x.w[s] == 0 {
			continue
		}
		mh := a.h.Hops(f.Switch(s), tv)
		if mh != topology.Unreachable {
			x.perfect += x.w[s] * int64(mh)
		}
		if x.depth[s] < 0 {
			continue
		}
		d := int(x.depth[s])
		x.termPairs += x.w[s]
		x.hopSum += x.w[s] * int64(d+2)
		x.hopMax = max(x.hopMax, d+2)
		if d == mh {
			x.minimal += x.w[s]
		}
	}
}

// merge sums the workers' totals into r and returns the channel loads.
func (a *auditor) merge(r *Report, ac []auditAcc) []int64 {
	var termPairs, hopSum, minimal, perfect int64
	firstLID := math.MaxInt
	load := ac[0].load
	for i := range ac {
		x := &ac[i]
		r.Pairs += x.pairs
		r.UnreachablePairs += x.unreach
		r.UnreachableSwitch += x.unreachSw
		r.BlackHoles += x.holes
		r.Loops += x.loops
		r.Misdelivered += x.misdel
		termPairs += x.termPairs
		hopSum += x.hopSum
		minimal += x.minimal
		perfect += x.perfect
		r.MaxHops = max(r.MaxHops, x.hopMax)
		if x.firstLID < firstLID {
			firstLID, r.FirstUnreachable = x.firstLID, x.firstMsg
		}
		if i > 0 {
			for c, v := range x.load {
				load[c] += v
			}
		}
	}
	r.Reachable = r.UnreachablePairs == 0
	if termPairs > 0 {
		r.AvgHops = float64(hopSum) / float64(termPairs)
		r.MinimalFraction = float64(minimal) / float64(termPairs)
	}
	r.PiPerfect = float64(perfect) // divided by the channels in linkStats
	return load
}

// linkStats fills the per-link figures from the channel loads.
func (a *auditor) linkStats(r *Report, load []int64) {
	f, g := a.f, a.g
	var loadSum int64
	for c := 0; c < g.NumChannels(); c++ {
		if f.swIndex[g.Src(c)] < 0 || f.swIndex[g.Dst(c)] < 0 || !g.Up(c) {
			continue
		}
		r.Channels++
		loadSum += load[c]
		r.MaxLinkRoutes = max(r.MaxLinkRoutes, load[c])
	}
	perfect := r.PiPerfect
	r.PiPerfect = 0
	if r.Channels > 0 {
		r.MeanLinkRoutes = float64(loadSum) / float64(r.Channels)
		r.PiPerfect = perfect / float64(r.Channels)
	}
	if r.PiPerfect > 0 {
		r.BalanceFactor = (float64(r.MaxLinkRoutes)/r.PiPerfect - 1) * 100
	}
}

// contention adds permutation contention when asked (or on fat trees).
func (a *auditor) contention(r *Report, o AuditOptions) {
	ft, ftErr := analyseFatTree(a.f)
	r.FatTree = ftErr == nil
	if o.Contention != ContentionOn && (o.Contention != ContentionAuto || !r.FatTree) {
		return
	}
	var order []int
	name := "port"
	if ftErr == nil {
		order, name = ft.order, "fat-tree"
	} else {
		for i := range a.f.terms {
			order = append(order, i)
		}
	}
	r.Contention = contention(a.fl, order, name, o)
}

// portLID returns the LID of end port (v, p), or 0.
func (f *Fabric) portLID(v, p int) int {
	// Terminals are sorted by node and port.
	i := sort.Search(len(f.terms), func(i int) bool {
		t := f.terms[i]
		return t.Node > v || (t.Node == v && t.Port >= p)
	})
	if i < len(f.terms) && f.terms[i].Node == v && f.terms[i].Port == p {
		return f.terms[i].LID
	}
	return 0
}

// classify follows the route from switch s to lid and says how it fails:
// hole or misdelivered (with the switch where the packet leaves the
// route) or a loop (with a switch on it).
func (t *Tables) classify(s, lid int) (int, int) {
	for steps := 0; steps <= 2*len(t.F.switches); steps++ {
		n := t.next(s, lid)
		if n < 0 {
			return n, s
		}
		s = n
	}
	return 0, s
}

// deliveredTo names the end port switch s hands lid to.
func (t *Tables) deliveredTo(s, lid int) string {
	f := t.F
	v := f.Switch(s)
	c := f.G.PortChannel(v, t.Port(s, lid))
	return fmt.Sprintf("%s[%d]", f.G.NodeName(f.G.Dst(c)), f.G.DstPort(c))
}

// auditCDG builds one channel dependency graph per lane from the routes of
// every source switch and checks each for a cycle (internal/cdg).
func auditCDG(fl *fastLFT, r *Report, srcW []uint32, lids []int, nw int) error {
	t := fl.t
	ti, err := newTurnIndex(t.F)
	if err != nil {
		return err
	}
	L := t.numLanes
	scr := make([]cdgScratch, nw)
	for i := range scr {
		scr[i] = newCDGScratch(L, ti.nslots, len(t.F.switches))
	}
	par.For(len(lids), nw, func(w, k int) {
		scr[w].recordTurns(fl, ti, srcW, lids[k])
	})
	r.DeadlockFree = true
	for l := 0; l < L; l++ {
		bits, paths := mergeLane(scr, l)
		lr := laneCDG(t.F.G, ti, bits, l)
		lr.Paths = paths
		if !lr.Acyclic && r.DeadlockFree {
			r.DeadlockFree = false
			r.Cycle, r.CycleLane = lr.Cycle, l
		}
		r.LaneCDG = append(r.LaneCDG, lr)
	}
	return nil
}

// cdgScratch is one worker's record of the turns taken on every lane (one
// bit per turn slot of the turnIndex), the paths per lane, and the
// switches already walked per lane for the current destination.
type cdgScratch struct {
	bits  [][]uint64
	paths []int64
	mark  []uint16
	_     [64]byte // per worker: keeps what workers write off each other's cache lines
}

func newCDGScratch(lanes, slots, switches int) cdgScratch {
	words := (slots + 63) / 64
	sc := cdgScratch{bits: make([][]uint64, lanes), paths: make([]int64, lanes), mark: make([]uint16, switches)}
	for l := range sc.bits {
		sc.bits[l] = make([]uint64, words)
	}
	return sc
}

// recordTurns follows the route to lid from every source switch (srcW[s]
// != 0) and sets the bit of every switch-to-switch turn on the route's
// lane; a walk stops where an earlier route of the same lane already went.
func (sc *cdgScratch) recordTurns(fl *fastLFT, ti *turnIndex, srcW []uint32, lid int) {
	t := fl.t
	f := t.F
	g := f.G
	S := len(f.switches)
	L := t.numLanes
	clear(sc.mark)
	for s := 0; s < S; s++ {
		if srcW[s] == 0 {
			continue
		}
		l := t.Lane(s, lid)
		if l >= L {
			l = L - 1
		}
		sc.paths[l]++
		bit := uint16(1) << uint(l)
		bits := sc.bits[l]
		x := s
		prev := int32(-1)
		for steps := 0; steps <= S; steps++ {
			p := t.Port(x, lid)
			nx := fl.next(x, lid)
			if nx < 0 {
				break // delivered or dropped: ejection turns never close a cycle
			}
			if prev >= 0 {
				k := ti.base[prev] + int32(p-1)
				bits[k>>6] |= 1 << uint(k&63)
			}
			if sc.mark[x]&bit != 0 {
				break // the rest of the route is recorded already
			}
			sc.mark[x] |= bit
			prev = int32(g.PortChannel(f.Switch(x), p))
			x = nx
		}
	}
}

// mergeLane ORs the turns of lane l of every worker into the first
// worker's and returns them with the lane's total number of paths.
func mergeLane(scr []cdgScratch, l int) ([]uint64, int64) {
	bits := scr[0].bits[l]
	paths := scr[0].paths[l]
	for i := 1; i < len(scr); i++ {
		for k, v := range scr[i].bits[l] {
			bits[k] |= v
		}
		paths += scr[i].paths[l]
	}
	return bits, paths
}

// laneCDG builds the channel dependency graph of the recorded turns of
// lane l and reports its edges and a cycle if it has one.
func laneCDG(g *topology.Graph, ti *turnIndex, bits []uint64, l int) LaneReport {
	cg := cdg.New(g.NumChannels())
	edges := 0
	for c := 0; c < g.NumChannels(); c++ {
		b := ti.base[c]
		if b < 0 {
			continue
		}
		v := g.Dst(c)
		for p := 1; p <= g.NumPorts(v); p++ {
			k := b + int32(p-1)
			if bits[k>>6]&(1<<uint(k&63)) == 0 {
				continue
			}
			c2 := g.PortChannel(v, p)
			cg.Add(int32(c), int32(c2), cdg.Turn)
			edges++
		}
	}
	lr := LaneReport{Lane: l, Edges: edges, Acyclic: true}
	if cyc := cg.Deadlock(false); cyc != nil {
		lr.Acyclic = false
		for _, c := range cyc {
			lr.Cycle = append(lr.Cycle, g.ChannelName(int(c)))
		}
	}
	return lr
}

// contention routes permutations of the live end ports (in the given
// order) and reports the most routes sharing one channel.
func contention(fl *fastLFT, order []int, name string, o AuditOptions) *Contention {
	f := fl.t.F
	var live []int
	for _, ti := range order {
		if f.termAlive(ti) {
			live = append(live, ti)
		}
	}
	N := len(live)
	c := &Contention{Order: name, Seed: o.Seed}
	if N < 2 {
		return c
	}
	shifts := shiftList(N, o.Shifts)
	perms := o.Perms
	if perms == 0 {
		perms = 8
	}
	if perms < 0 {
		perms = 0
	}
	jobs := len(shifts) + perms
	nw := par.Workers(o.Workers)
	scr := make([]permScratch, nw)
	for i := range scr {
		scr[i].cnt = make([]int32, f.G.NumChannels())
		scr[i].perm = make([]int, N)
	}
	worst := make([]int, jobs)
	par.For(jobs, nw, func(w, j int) {
		sc := &scr[w]
		if j < len(shifts) {
			for i := range sc.perm {
				sc.perm[i] = (i + shifts[j]) % N
			}
		} else {
			rng := rand.New(rand.NewPCG(o.Seed, uint64(j-len(shifts))))
			copy(sc.perm, rng.Perm(N))
		}
		worst[j] = worstSharing(fl, live, sc)
		o.Progress(1)
	})
	c.summarize(shifts, perms, worst)
	return c
}

// shiftList returns the shifts to test among n end ports: all up to 4096
// end ports when want is 0 (else 256 evenly spaced), want evenly spaced
// when positive, none when negative.
func shiftList(n, want int) []int {
	var shifts []int
	switch {
	case want < 0:
	case want == 0 && n-1 <= 4096:
		for k := 1; k < n; k++ {
			shifts = append(shifts, k)
		}
	default:
		m := want
		if m == 0 {
			m = 256
		}
		m = min(m, n-1)
		for i := 0; i < m; i++ {
			shifts = append(shifts, 1+i*(n-1)/m)
		}
	}
	return shifts
}

// permScratch is one worker's channel counters and permutation.
type permScratch struct {
	cnt     []int32
	touched []int32
	perm    []int
	_       [64]byte // per worker: keeps what workers write off each other's cache lines
}

// worstSharing routes live[i] → live[perm[i]] for every i and returns the
// most routes on one channel (unreachable pairs load nothing).
func worstSharing(fl *fastLFT, live []int, sc *permScratch) int {
	t := fl.t
	f := t.F
	g := f.G
	m := 0
	bump := func(ch int) {
		if sc.cnt[ch] == 0 {
			sc.touched = append(sc.touched, int32(ch))
		}
		sc.cnt[ch]++
		m = max(m, int(sc.cnt[ch]))
	}
	for i, pi := range sc.perm {
		src, dst := f.terms[live[i]], f.terms[live[pi]]
		if src.Node == dst.Node || !fl.arrives(src.Switch, dst.LID) {
			continue
		}
		bump(g.PortChannel(src.Node, src.Port))
		for x := src.Switch; ; {
			bump(g.PortChannel(f.Switch(x), t.Port(x, dst.LID)))
			n := fl.next(x, dst.LID)
			if n < 0 {
				break
			}
			x = n
		}
	}
	for _, ch := range sc.touched {
		sc.cnt[ch] = 0
	}
	sc.touched = sc.touched[:0]
	return m
}

// arrives reports whether the route from switch s to lid is delivered.
func (fl *fastLFT) arrives(s, lid int) bool {
	x := s
	for steps := 0; steps <= len(fl.t.F.switches); steps++ {
		n := fl.next(x, lid)
		if n < 0 {
			return n == atDest
		}
		x = n
	}
	return false
}

// summarize fills the shift and random figures from each job's worst.
func (c *Contention) summarize(shifts []int, perms int, worst []int) {
	c.Shifts, c.Random = len(shifts), perms
	var sum float64
	for j, k := range shifts {
		if worst[j] > c.ShiftMax {
			c.ShiftMax, c.ShiftWorst = worst[j], k
		}
		sum += float64(worst[j])
	}
	if len(shifts) > 0 {
		c.ShiftMean = sum / float64(len(shifts))
	}
	sum = 0
	for j := len(shifts); j < len(worst); j++ {
		c.RandomMax = max(c.RandomMax, worst[j])
		sum += float64(worst[j])
	}
	if perms > 0 {
		c.RandomMean = sum / float64(perms)
	}
}
