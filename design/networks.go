package design

import (
	"fmt"
	"strconv"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// Quasi builds the seed's "λ|λ+1" distributed switch on N subscribers with
// m ports when B(N, m, λ) itself does not exist or is unknown: a cyclic set
// of m residues whose differences cover every residue λ times, except
// ±1, …, ±e which are covered λ+1 times, e = (m(m-1) - λ(N-1))/2. For
// N=39, m=7, λ=1 this is DFS(39,7,1|2) of seed §5 (e = 2: subscriber i has a
// second switch in common with i±1 and i±2).
func Quasi(n, m, lambda int, budget int64) (*Design, error) {
	if n < 3 || n > 100_000 || m < 2 || m >= n || lambda < 1 {
		return nil, fmt.Errorf("quasi-design N=%d, m=%d, λ=%d: need 3 ≤ N ≤ 100000, 2 ≤ m < N, λ ≥ 1", n, m, lambda)
	}
	extra2 := m*(m-1) - lambda*(n-1)
	if extra2 < 0 || extra2%2 != 0 || extra2 >= n-1 {
		return nil, fmt.Errorf("quasi-design N=%d, m=%d, λ=%d|%d: m(m-1) - λ(N-1) = %d must be even and in 0..N-2 (twice the number of residues ±1..±e covered λ+1 times)", n, m, lambda, lambda+1, extra2)
	}
	e := extra2 / 2
	target, err := QuasiTarget(n, lambda, e)
	if err != nil {
		return nil, err
	}
	d, exhausted := SearchDiffSet(n, m, target, budget)
	if d == nil {
		if exhausted {
			return nil, fmt.Errorf("no cyclic %d|%d quasi-design with N=%d, m=%d exists (exhaustive search)", lambda, lambda+1, n, m)
		}
		return nil, fmt.Errorf("no cyclic %d|%d quasi-design with N=%d, m=%d found within %d search steps", lambda, lambda+1, n, m, budget)
	}
	des := FromDiffSet(n, lambda, d, fmt.Sprintf("cyclic quasi-design found by search: residues ±1..±%d covered %d times, the rest %d", e, lambda+1, lambda))
	if e > 0 {
		des.Target = target
	}
	return des, nil
}

// MaxGraphLinks bounds the networks built as topologies.
const MaxGraphLinks = 20_000_000

// DFSGraph builds the distributed full switch DFS(N, m, λ) of design d:
// subscribers "a1".."aN" (endpoints with m ports) and m×m switches
// "k1".."kN"; subscriber x is cabled to switch b iff x is in block b.
// Switch b uses port j for the j-th smallest element of its block; a
// subscriber uses its ports in increasing switch order.
func DFSGraph(d *Design, name string) (*topology.Graph, error) {
	if int64(d.N)*int64(d.M) > MaxGraphLinks || 2*d.N > topology.MaxSpecNodes {
		return nil, fmt.Errorf("DFS(%d,%d,%d) has %d links, more than %d", d.N, d.M, d.Lambda, int64(d.N)*int64(d.M), MaxGraphLinks)
	}
	b := topology.NewBuilder(name)
	o := topology.NodeOpts{Level: topology.NoLevel, Group: topology.NoGroup}
	for x := 0; x < d.N; x++ {
		b.AddNode(topology.Endpoint, "a"+strconv.Itoa(x+1), o)
	}
	for s := 0; s < d.N; s++ {
		b.AddNode(topology.Switch, "k"+strconv.Itoa(s+1), o)
	}
	port := make([]int, d.N)
	for s := 0; s < d.N; s++ {
		for j, x := range d.Block(s) {
			port[x]++
			b.ConnectPorts(x, port[x], d.N+s, j+1, topology.LinkOpts{Dim: -1, Class: topology.Access})
		}
	}
	return b.Build()
}

// QCD is the minimal quasi-complete digraph of the full 2D multiring
// (seed §4, table 4.1) on N = m² subscribers and N m×m switches. Switch i
// (1-based) receives from subscribers (i-j) mod N + 1 and sends to
// subscribers (i-1+(j-1)m) mod N + 1, j = 1..m, so that every ordered pair
// of subscribers (also a subscriber and itself) is joined by exactly one
// path subscriber → switch → subscriber. (The seed's formula for the second
// half reads (i+(j-1)m) mod N + 1, one more than its own table 4.1; both
// have the property, the table's convention is used.)
type QCD struct{ M, N int }

// NewQCD checks m.
func NewQCD(m int) (QCD, error) {
	if m < 2 || m > 1024 {
		return QCD{}, fmt.Errorf("quasi-complete digraph: m=%d out of range 2..1024", m)
	}
	return QCD{M: m, N: m * m}, nil
}

// From returns the subscribers (1-based) switch i (1-based) receives from.
func (q QCD) From(i int) []int {
	out := make([]int, q.M)
	for j := 1; j <= q.M; j++ {
		out[j-1] = ((i-j)%q.N+q.N)%q.N + 1
	}
	return out
}

// To returns the subscribers (1-based) switch i (1-based) sends to.
func (q QCD) To(i int) []int {
	out := make([]int, q.M)
	for j := 1; j <= q.M; j++ {
		out[j-1] = (i-1+(j-1)*q.M)%q.N + 1
	}
	return out
}

// Graph builds the digraph as a topology: subscribers "a1".."aN", switches
// "k1".."kN". Every cable is simplex: channel 2l (A→B) of every link is
// the real channel and its reverse is unused. Subscriber → switch links
// have A = subscriber and use subscriber ports 1..m and switch ports 1..m;
// switch → subscriber links have A = switch and use switch ports m+1..2m
// and subscriber ports m+1..2m. All links have Dim 0, so Dir gives sign +1
// exactly on the real channels.
func (q QCD) Graph(name string) (*topology.Graph, error) {
	if int64(q.N)*int64(2*q.M) > MaxGraphLinks {
		return nil, fmt.Errorf("quasi-complete digraph m=%d has %d links, more than %d", q.M, int64(q.N)*int64(2*q.M), MaxGraphLinks)
	}
	b := topology.NewBuilder(name)
	o := topology.NodeOpts{Level: topology.NoLevel, Group: topology.NoGroup}
	for x := 0; x < q.N; x++ {
		b.AddNode(topology.Endpoint, "a"+strconv.Itoa(x+1), o)
	}
	for s := 0; s < q.N; s++ {
		b.AddNode(topology.Switch, "k"+strconv.Itoa(s+1), o)
	}
	outPort := make([]int, q.N)
	inPort := make([]int, q.N)
	lo := topology.LinkOpts{Dim: 0, Class: topology.Access}
	for i := 1; i <= q.N; i++ {
		sw := q.N + i - 1
		for j, a := range q.From(i) {
			outPort[a-1]++
			b.ConnectPorts(a-1, outPort[a-1], sw, j+1, lo)
		}
		for j, a := range q.To(i) {
			inPort[a-1]++
			b.ConnectPorts(sw, q.M+j+1, a-1, q.M+inPort[a-1], lo)
		}
	}
	return b.Build()
}

// TwoHop summarises two-hop paths between subscribers through distinct
// switches.
type TwoHop struct {
	Subscribers int    `json:"subscribers"`
	Switches    int    `json:"switches"`
	Pairs       int64  `json:"pairs"`     // ordered pairs checked
	Min         int    `json:"min_paths"` // fewest paths over pairs
	Max         int    `json:"max_paths"`
	Bad         int64  `json:"bad_pairs"` // pairs whose count differs from the expected one
	FirstBad    string `json:"first_bad,omitempty"`
}

// CheckTwoHop counts, for every ordered pair of distinct endpoints (and,
// with self, also each endpoint to itself), the switches s with a channel
// a→s and a channel s→b, and compares with want(a, b) (endpoint indices in
// node order). directed uses only the A→B channel of each link (digraphs
// built by QCD.Graph). Runs on all cores.
func CheckTwoHop(g *topology.Graph, directed, self bool, want func(a, b int) int) TwoHop {
	c := newTwoHopCheck(g, directed, self, want)
	ne := len(c.eps)
	res := TwoHop{Subscribers: ne, Switches: g.Count(topology.Switch), Min: 1 << 30}
	workers := par.Workers(0)
	sc := make([]*twoHopScratch, workers)
	rows := make([]twoHopRow, ne)
	par.For(ne, workers, func(w, ai int) {
		if sc[w] == nil {
			sc[w] = newTwoHopScratch(ne, g.NumNodes())
		}
		c.countPaths(sc[w], ai)
		rows[ai] = c.compareRow(sc[w], ai)
	})
	for _, r := range rows {
		res.Min, res.Max = min(res.Min, r.min), max(res.Max, r.max)
		res.Bad += r.bad
		if res.FirstBad == "" {
			res.FirstBad = r.first
		}
		if self {
			res.Pairs += int64(ne)
		} else {
			res.Pairs += int64(ne - 1)
		}
	}
	if ne == 0 {
		res.Min = 0
	}
	return res
}

// twoHopCheck holds what every row of the two-hop check shares.
type twoHopCheck struct {
	g        *topology.Graph
	eps      []int
	idx      []int // subscriber index of each node, -1 for switches
	directed bool
	self     bool
	want     func(a, b int) int
}

func newTwoHopCheck(g *topology.Graph, directed, self bool, want func(a, b int) int) *twoHopCheck {
	eps := g.Endpoints()
	idx := make([]int, g.NumNodes())
	for i := range idx {
		idx[i] = -1
	}
	for i, v := range eps {
		idx[v] = i
	}
	return &twoHopCheck{g: g, eps: eps, idx: idx, directed: directed, self: self, want: want}
}

// twoHopScratch is one worker's counters: paths to each subscriber, and
// stamps that make repeated cables count once.
type twoHopScratch struct {
	cnt      []int32
	swStamp  []int32
	subStamp []int32
	_        [64]byte // per worker: keeps what workers write off each other's cache lines
}

func newTwoHopScratch(ne, n int) *twoHopScratch {
	s := &twoHopScratch{cnt: make([]int32, ne), swStamp: make([]int32, n), subStamp: make([]int32, n)}
	for i := range s.swStamp {
		s.swStamp[i] = -1
		s.subStamp[i] = -1
	}
	return s
}

// real reports whether channel c is a cable in the checked direction (in
// a directed network, only the even channel of each link).
func (c *twoHopCheck) real(ch int32) bool { return !c.directed || ch&1 == 0 }

// countPaths counts into s.cnt the two-hop paths subscriber ai → switch →
// subscriber, each distinct switch once.
func (c *twoHopCheck) countPaths(s *twoHopScratch, ai int) {
	g := c.g
	a := c.eps[ai]
	for _, ch := range g.Out(a) {
		if !c.real(ch) {
			continue
		}
		sw := g.Dst(int(ch))
		if g.Kind(sw) != topology.Switch || s.swStamp[sw] == int32(ai) {
			continue
		}
		s.swStamp[sw] = int32(ai)
		// repeated cables from one switch to one subscriber count once
		for _, c2 := range g.Out(sw) {
			if !c.real(c2) {
				continue
			}
			bv := g.Dst(int(c2))
			bi := c.idx[bv]
			if bi < 0 || s.subStamp[bv] == int32(sw) {
				continue
			}
			s.subStamp[bv] = int32(sw)
			s.cnt[bi]++
		}
		// reset subscriber stamps of this switch
		for _, c2 := range g.Out(sw) {
			s.subStamp[g.Dst(int(c2))] = -1
		}
	}
}

// twoHopRow is the outcome for one source subscriber.
type twoHopRow struct {
	min, max int
	bad      int64
	first    string
}

// compareRow compares the counts of row ai with want, clearing s.cnt.
func (c *twoHopCheck) compareRow(s *twoHopScratch, ai int) twoHopRow {
	r := twoHopRow{min: 1 << 30}
	for bi := range s.cnt {
		if bi == ai && !c.self {
			s.cnt[bi] = 0
			continue
		}
		k := int(s.cnt[bi])
		s.cnt[bi] = 0
		r.min, r.max = min(r.min, k), max(r.max, k)
		if wnt := c.want(ai, bi); k != wnt {
			r.bad++
			if r.first == "" {
				r.first = fmt.Sprintf("%s → %s: %d two-hop paths, want %d", c.g.NodeName(c.eps[ai]), c.g.NodeName(c.eps[bi]), k, wnt)
			}
		}
	}
	return r
}
