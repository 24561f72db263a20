package topology

import (
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
}

const (
	defaultDistanceBudget     = 4e9
	defaultConnectivityBudget = 2e9
	defaultBisectionBudget    = 2e7
)

// Measure computes all metrics of g.
func Measure(g *Graph, o MetricsOptions) Metrics {
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
	return m
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
// graphs; all-pairs BFS where end nodes hanging off the same switch share
// one BFS from that switch; beyond the work budget, a labelled sample of
// sources.
func Distances(g *Graph, o MetricsOptions) DistanceStats {
	terms := Terminals(g)
	st := DistanceStats{Terminals: len(terms)}
	if len(terms) < 2 {
		st.Exact, st.Method = true, "trivial"
		return st
	}
	direct := g.Direct()
	n := g.NumNodes()
	if !o.ForceGeneric && g.Shape().VertexTransitive && !g.HasFaults() && direct {
		dist := make([]int32, n)
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
	type source = distSource
	att := make([]int32, n) // attachment switch of a single-homed terminal, or -1
	for i := range att {
		att[i] = -1
	}
	weight := make([]int64, n) // terminals standing behind each node
	var sources []source
	bySwitch := map[int]int{}
	for _, t := range terms {
		if !direct {
			var live []int
			for _, c := range g.Out(t) {
				if g.Up(int(c)) {
					live = append(live, int(c))
				}
			}
			if len(live) == 1 && g.Kind(g.Dst(live[0])) == Switch {
				s := g.Dst(live[0])
				att[t] = int32(s)
				weight[s]++
				if i, ok := bySwitch[s]; ok {
					sources[i].count++
				} else {
					bySwitch[s] = len(sources)
					sources = append(sources, source{node: s, offset: 1, count: 1})
				}
				continue
			}
		}
		weight[t]++
		sources = append(sources, source{node: t, count: 1})
	}
	work := float64(len(sources)) * float64(2*g.NumLinks()+n)
	budget := o.DistanceBudget
	if budget == 0 {
		budget = defaultDistanceBudget
	}
	sample := len(sources)
	st.Exact = true
	st.Method = "all-pairs BFS"
	if len(sources) < len(terms) {
		st.Method = "all-pairs BFS (end nodes grouped by switch)"
	}
	order := make([]int, len(sources))
	for i := range order {
		order[i] = i
	}
	if work > budget {
		sample = max(16, int(budget/(float64(2*g.NumLinks()+n))))
		if sample < len(sources) {
			r := rand.New(rand.NewPCG(o.Seed, 0x1c4))
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			order = order[:sample]
			st.Exact = false
			st.Method = "sampled BFS from " + itoa(sample) + " of " + itoa(len(sources)) + " sources (diameter is a lower bound)"
		}
	}
	workers := par.Workers(o.Workers)
	type acc struct {
		sum, pairs, unreach int64
		diam                int
		dist                []int32
		queue               []int32
	}
	accs := make([]acc, workers)
	for i := range accs {
		accs[i].dist = make([]int32, n)
	}
	var mu sync.Mutex
	done := 0
	par.For(len(order), workers, func(w, i int) {
		a := &accs[w]
		s := sources[order[i]]
		a.queue = BFS(g, s.node, a.dist, a.queue)
		// Distances from one member terminal of s to every terminal.
		var sum, pairs, unreach int64
		diam := 0
		for v := 0; v < n; v++ {
			wt := weight[v]
			if wt == 0 {
				continue
			}
			d := a.dist[v]
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
				if s.offset == 1 {
					hop = 2
					self = 1 // exclude the pair (t, t)
				} else {
					self = 1
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
