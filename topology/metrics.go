package topology

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/icn-hpc/icn/internal/par"
)

// Metrics are the classic figures of merit of a network (seed 002 table 1).
// Distances are counted in links between terminals: all nodes of a direct
// network, the end nodes of a network with switches (switches forward,
// end nodes do not). Failed links and nodes are excluded.
type Metrics struct {
	Nodes     int `json:"nodes"`
	Endpoints int `json:"endpoints"`
	Switches  int `json:"switches"`
	Links     int `json:"links"` // links in service
	// FailedLinks counts links out of service (failed, or at a failed node).
	FailedLinks int `json:"failed_links"`
	FailedNodes int `json:"failed_nodes"`
	DegreeMin   int `json:"degree_min"`
	DegreeMax   int `json:"degree_max"`
	// Terminals is the number of nodes distances are measured between.
	Terminals int  `json:"terminals"`
	Connected bool `json:"connected"`
	// UnreachablePairs counts ordered terminal pairs with no path.
	UnreachablePairs int64 `json:"unreachable_pairs"`
	// Diameter is the largest terminal-to-terminal distance (-1 if
	// disconnected); with DistanceExact false it is the largest seen in a
	// sample (a lower bound).
	Diameter      int     `json:"diameter"`
	AvgDistance   float64 `json:"avg_distance"`
	DistanceExact bool    `json:"distance_exact"`
	// DistanceMethod says how distances were found.
	DistanceMethod string `json:"distance_method"`
	// BisectionWidth is the fewest links whose removal splits the
	// terminals into halves (⌊T/2⌋, ⌈T/2⌉); an upper bound unless
	// BisectionExact.
	BisectionWidth  int    `json:"bisection_width"`
	BisectionExact  bool   `json:"bisection_exact"`
	BisectionMethod string `json:"bisection_method"`
	// Connectivity is the edge connectivity: the fewest links whose
	// removal disconnects the network (an upper bound unless
	// ConnectivityExact).
	Connectivity       int    `json:"connectivity"`
	ConnectivityExact  bool   `json:"connectivity_exact"`
	ConnectivityMethod string `json:"connectivity_method"`
	// Cost is the number of links in service (seed 002: "cost").
	Cost int `json:"cost"`
}

// MetricsOptions tune Measure. The zero value is sensible.
type MetricsOptions struct {
	Workers int // goroutines (0 = all cores)
	// ForceGeneric disables closed forms and symmetry shortcuts (used to
	// check that the generic algorithms agree with them).
	ForceGeneric bool
	// Work budgets (in edge visits) beyond which exact algorithms give way
	// to labelled samples/bounds. 0 = defaults.
	DistanceBudget     float64
	ConnectivityBudget float64
	BisectionBudget    float64
	Seed               uint64
	// Progress, if set, is called with (done, total) source counts.
	Progress func(done, total int)
	// ctx, set by MeasureContext, stops the work when it ends.
	ctx context.Context
}

// cancelled reports whether the work was asked to stop (MeasureContext).
func (o MetricsOptions) cancelled() bool { return o.ctx != nil && o.ctx.Err() != nil }

const (
	defaultDistanceBudget     = 4e9
	defaultConnectivityBudget = 2e9
	defaultBisectionBudget    = 2e7
)

// Measure computes all metrics of g.
func Measure(g *Graph, o MetricsOptions) Metrics {
	m, _ := MeasureContext(context.Background(), g, o)
	return m
}

// MeasureContext is Measure that stops early, with ctx's error, when ctx
// ends (the figures are then incomplete and must not be used).
func MeasureContext(ctx context.Context, g *Graph, o MetricsOptions) (Metrics, error) {
	o.ctx = ctx
	m := Metrics{
		Nodes:     g.NumNodes(),
		Endpoints: g.Count(Endpoint),
		Switches:  g.Count(Switch),
	}
	for v := 0; v < g.NumNodes(); v++ {
		if g.NodeFailed(v) {
			m.FailedNodes++
		}
	}
	for l := 0; l < g.NumLinks(); l++ {
		if g.LinkFailed(l) {
			m.FailedLinks++
		} else {
			m.Links++
		}
	}
	m.Cost = m.Links
	m.DegreeMin, m.DegreeMax = math.MaxInt, 0
	for v := 0; v < g.NumNodes(); v++ {
		if g.NodeFailed(v) {
			continue
		}
		d := liveDegree(g, v)
		m.DegreeMin = min(m.DegreeMin, d)
		m.DegreeMax = max(m.DegreeMax, d)
	}
	if m.DegreeMin == math.MaxInt {
		m.DegreeMin = 0
	}
	dist := Distances(g, o)
	m.Terminals = dist.Terminals
	m.Connected = dist.Unreachable == 0 && dist.Terminals > 0
	m.UnreachablePairs = dist.Unreachable
	m.Diameter, m.AvgDistance, m.DistanceExact, m.DistanceMethod = dist.Diameter, dist.Average, dist.Exact, dist.Method
	if !m.Connected {
		m.Diameter = -1
	}
	m.Connectivity, m.ConnectivityExact, m.ConnectivityMethod = EdgeConnectivity(g, o)
	m.BisectionWidth, m.BisectionExact, m.BisectionMethod = Bisection(g, o)
	return m, ctx.Err()
}

func liveDegree(g *Graph, v int) int {
	d := 0
	for _, c := range g.Out(v) {
		if g.Up(int(c)) {
			d++
		}
	}
	return d
}

// forwards reports whether traffic may pass through v.
func forwards(g *Graph, v int, direct bool) bool {
	return direct || g.Kind(v) == Switch
}

// Terminals returns the nodes distances are measured between: every live
// node of a direct network, the live end nodes otherwise.
func Terminals(g *Graph) []int {
	direct := g.Direct()
	var t []int
	for v := 0; v < g.NumNodes(); v++ {
		if !g.NodeFailed(v) && (direct || g.Kind(v) == Endpoint) {
			t = append(t, v)
		}
	}
	return t
}

// BFS computes hop distances from src over live channels into dist
// (len NumNodes, -1 = unreachable), using queue as scratch. Only
// forwarding nodes (switches, or every node of a direct network) are
// expanded beyond; src itself is always expanded.
func BFS(g *Graph, src int, dist []int32, queue []int32) []int32 {
	for i := range dist {
		dist[i] = -1
	}
	direct := g.Direct()
	dist[src] = 0
	queue = append(queue[:0], int32(src))
	for head := 0; head < len(queue); head++ {
		v := int(queue[head])
		if v != src && !forwards(g, v, direct) {
			continue
		}
		for _, c := range g.Out(v) {
			if !g.Up(int(c)) {
				continue
			}
			w := g.Dst(int(c))
			if dist[w] < 0 {
				dist[w] = dist[v] + 1
				queue = append(queue, int32(w))
			}
		}
	}
	return queue
}

// DistanceStats summarise terminal-to-terminal distances.
type DistanceStats struct {
	Terminals   int
	Diameter    int
	Average     float64 // over ordered pairs of distinct, connected terminals
	Unreachable int64   // ordered pairs with no path
	Exact       bool
	Method      string
}

// Distances computes the diameter and average distance between terminals.
// Exact methods, cheapest first: one BFS for vertex-transitive fault-free
// graphs; for a torus with failures, that BFS translated to every source
// and repaired around the failures (translate.go); all-pairs BFS where end
// nodes hanging off the same switch share one BFS from that switch; beyond
// the work budget, a labelled sample of sources.
func Distances(g *Graph, o MetricsOptions) DistanceStats {
	terms := Terminals(g)
	if len(terms) < 2 {
		return DistanceStats{Terminals: len(terms), Exact: true, Method: "trivial"}
	}
	if !o.ForceGeneric && g.Shape().VertexTransitive && !g.HasFaults() && g.Direct() {
		return oneSourceDistances(g, terms)
	}
	if !o.ForceGeneric && plainGrid(g) && !g.HasFaults() {
		return gridDistances(g)
	}
	if !o.ForceGeneric && g.HasFaults() {
		if st, ok := translationDistances(g, terms, o); ok {
			return st
		}
	}
	sources, weight := groupSources(g, terms)
	st := DistanceStats{Terminals: len(terms)}
	order := pickSources(g, sources, o, &st)
	accs := bfsFromSources(g, sources, order, weight, o)
	var sum, pairs int64
	for _, a := range accs {
		sum += a.sum
		pairs += a.pairs
		st.Unreachable += a.unreach
		st.Diameter = max(st.Diameter, a.diam)
	}
	if pairs > 0 {
		st.Average = float64(sum) / float64(pairs)
	}
	if !st.Exact && st.Unreachable > 0 {
		// Scale the sampled count to all sources.
		st.Unreachable = st.Unreachable * int64(len(terms)) / int64(max(1, countTerms(sources, order)))
	}
	return st
}

// oneSourceDistances measures a fault-free vertex-transitive direct network
// with a single BFS: every terminal sees the same distance profile.
func oneSourceDistances(g *Graph, terms []int) DistanceStats {
	st := DistanceStats{Terminals: len(terms)}
	dist := make([]int32, g.NumNodes())
	BFS(g, terms[0], dist, nil)
	var sum int64
	for _, v := range terms[1:] {
		if dist[v] < 0 {
			st.Unreachable += int64(len(terms))
			continue
		}
		sum += int64(dist[v])
		st.Diameter = max(st.Diameter, int(dist[v]))
	}
	st.Average = float64(sum) / float64(len(terms)-1)
	st.Exact, st.Method = true, "one BFS (vertex-transitive)"
	return st
}

// plainGrid reports whether g is a plain torus, mesh or torus with mesh
// dimensions (one ring or line of step 1 per dimension, no end nodes).
func plainGrid(g *Graph) bool {
	switch g.Shape().Family {
	case "torus", "mesh", "mixed":
		return true
	}
	return false
}

// gridDistances measures a fault-free plain grid in closed form: it is
// the Cartesian product of its dimensions (rings and lines), so the
// distance between two nodes is the sum of the distances of their
// coordinates, the diameter the sum of the dimensions' diameters, and the
// sum over ordered pairs Σ_i (N/k_i)²·S_i, S_i the sum over ordered pairs
// of dimension i (k³/4 on a ring of even k, k(k²−1)/4 of odd k, (k³−k)/3
// on a line).
func gridDistances(g *Graph) DistanceStats {
	dims, wrap := g.Dims(), g.Wrap()
	n := float64(g.NumNodes())
	st := DistanceStats{Terminals: g.NumNodes(), Exact: true, Method: "closed form (product of rings and lines)"}
	var avg float64
	for i, d := range dims {
		k := float64(d)
		var s float64
		switch {
		case !wrap[i]:
			st.Diameter += d - 1
			s = (k*k*k - k) / 3
		case d%2 == 0:
			st.Diameter += d / 2
			s = k * k * k / 4
		default:
			st.Diameter += d / 2
			s = k * (k*k - 1) / 4
		}
		// (N/k)²·S over N(N−1) ordered pairs of distinct nodes
		avg += n / (k * k) * s / (n - 1)
	}
	st.Average = avg
	return st
}

// groupSources turns terminals into BFS sources: in an indirect network the
// end nodes hanging off one live switch port share one source at that
// switch. weight[v] counts the terminals standing behind node v.
func groupSources(g *Graph, terms []int) (sources []distSource, weight []int64) {
	direct := g.Direct()
	weight = make([]int64, g.NumNodes())
	bySwitch := map[int]int{}
	for _, t := range terms {
		if !direct {
			if s, ok := singleSwitch(g, t); ok {
				weight[s]++
				if i, ok := bySwitch[s]; ok {
					sources[i].count++
				} else {
					bySwitch[s] = len(sources)
					sources = append(sources, distSource{node: s, offset: 1, count: 1})
				}
				continue
			}
		}
		weight[t]++
		sources = append(sources, distSource{node: t, count: 1})
	}
	return sources, weight
}

// singleSwitch reports the switch of terminal t when t has exactly one live
// link and it leads to a switch.
func singleSwitch(g *Graph, t int) (int, bool) {
	live, c0 := 0, -1
	for _, c := range g.Out(t) {
		if g.Up(int(c)) {
			live++
			c0 = int(c)
		}
	}
	if live == 1 && g.Kind(g.Dst(c0)) == Switch {
		return g.Dst(c0), true
	}
	return 0, false
}

// pickSources chooses which sources to run BFS from: all of them while the
// work fits o.DistanceBudget, else a seeded random sample. It records the
// method and exactness in st.
func pickSources(g *Graph, sources []distSource, o MetricsOptions, st *DistanceStats) []int {
	n := g.NumNodes()
	work := float64(len(sources)) * float64(2*g.NumLinks()+n)
	budget := o.DistanceBudget
	if budget == 0 {
		budget = defaultDistanceBudget
	}
	st.Exact = true
	st.Method = "all-pairs BFS"
	if len(sources) < st.Terminals {
		st.Method = "all-pairs BFS (end nodes grouped by switch)"
	}
	order := make([]int, len(sources))
	for i := range order {
		order[i] = i
	}
	if work > budget {
		sample := max(16, int(budget/(float64(2*g.NumLinks()+n))))
		if sample < len(sources) {
			r := rand.New(rand.NewPCG(o.Seed, 0x1c4))
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			order = order[:sample]
			st.Exact = false
			st.Method = "sampled BFS from " + itoa(sample) + " of " + itoa(len(sources)) + " sources (diameter is a lower bound)"
		}
	}
	return order
}

// distAcc accumulates one worker's distance sums.
type distAcc struct {
	sum, pairs, unreach int64
	diam                int
	dist                []int32
	queue               []int32
}

// bfsFromSources runs one BFS per chosen source on o.Workers goroutines
// and returns each worker's totals.
func bfsFromSources(g *Graph, sources []distSource, order []int, weight []int64, o MetricsOptions) []distAcc {
	workers := par.Workers(o.Workers)
	accs := make([]distAcc, workers)
	for i := range accs {
		accs[i].dist = make([]int32, g.NumNodes())
	}
	var mu sync.Mutex
	done := 0
	par.For(len(order), workers, func(w, i int) {
		if o.cancelled() {
			return
		}
		a := &accs[w]
		s := sources[order[i]]
		a.queue = BFS(g, s.node, a.dist, a.queue)
		sum, pairs, unreach, diam := sourceDistances(g, s, a.dist, weight)
		c := int64(s.count)
		a.sum += sum * c
		a.pairs += pairs * c
		a.unreach += unreach * c
		a.diam = max(a.diam, diam)
		if o.Progress != nil {
			mu.Lock()
			done++
			o.Progress(done, len(order))
			mu.Unlock()
		}
	})
	return accs
}

// sourceDistances sums the distances from one member terminal of s to
// every terminal, given the BFS distances dist from s.node.
func sourceDistances(g *Graph, s distSource, dist []int32, weight []int64) (sum, pairs, unreach int64, diam int) {
	for v := range dist {
		wt := weight[v]
		if wt == 0 {
			continue
		}
		d := dist[v]
		if d < 0 {
			unreach += wt
			continue
		}
		// Terminals behind v are reached at d (+1 if they hang off
		// switch v, i.e. v is a switch that is not itself a terminal).
		hop := int64(d) + int64(s.offset)
		if g.Kind(v) == Switch {
			hop++
		}
		self := int64(0)
		if v == s.node {
			// Same switch (or the source terminal itself).
			self = 1 // exclude the pair (t, t)
			if s.offset == 1 {
				hop = 2
			}
		}
		cnt := wt - self
		if cnt <= 0 {
			continue
		}
		sum += hop * cnt
		pairs += cnt
		diam = max(diam, int(hop))
	}
	return sum, pairs, unreach, diam
}

// distSource is one BFS start standing for one or more terminals.
type distSource struct {
	node   int   // BFS start
	offset int32 // hops from a member terminal to node
	count  int   // terminals it stands for
}

func countTerms(sources []distSource, order []int) int {
	n := 0
	for _, i := range order {
		n += sources[i].count
	}
	return n
}

func itoa(i int) string { return strconv.Itoa(i) }
