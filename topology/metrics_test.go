package topology

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// closedForm returns the SPEC §1 closed forms, generalised to unequal
// dimensions: diameter, average distance over distinct pairs, edge
// connectivity, cost, and the bisection width (-1 where no closed form).
type closed struct {
	diam      int
	avg       float64
	conn      int
	cost      int
	bisection int
}

func torusClosed(dims []int) closed {
	n := 1
	for _, d := range dims {
		n *= d
	}
	c := closed{conn: 2 * len(dims), cost: len(dims) * n, bisection: -1}
	mean := 0.0
	dmax := 0
	for _, d := range dims {
		c.diam += d / 2
		s := 0
		for x := 0; x < d; x++ {
			s += min(x, d-x)
		}
		mean += float64(s) / float64(d)
		dmax = max(dmax, d)
	}
	c.avg = mean * float64(n) / float64(n-1)
	if dmax%2 == 0 {
		c.bisection = 2 * n / dmax
	}
	if len(dims) == 1 {
		c.bisection = 2
	}
	return c
}

func meshClosed(dims []int) closed {
	n := 1
	for _, d := range dims {
		n *= d
	}
	c := closed{bisection: -1, conn: 0}
	mean := 0.0
	dmax := 0
	for _, d := range dims {
		c.diam += d - 1
		mean += float64(d*d-1) / float64(3*d)
		c.cost += (d - 1) * n / d
		if d > 1 {
			c.conn++
		}
		dmax = max(dmax, d)
	}
	c.avg = mean * float64(n) / float64(n-1)
	if dmax%2 == 0 {
		c.bisection = n / dmax
	}
	return c
}

func TestClosedForms(t *testing.T) {
	type tc struct {
		spec string
		want closed
	}
	var cases []tc
	for _, dims := range [][]int{{4, 4}, {5, 4, 3}, {3, 3}, {6, 2}, {2, 2}, {4, 2, 2}, {3, 5}, {8}, {7}, {2, 3, 2, 2}, {4, 4, 4}} {
		s := "torus:" + dimStr(dims)
		cases = append(cases, tc{s, torusClosed(dims)})
		cases = append(cases, tc{"mesh:" + dimStr(dims), meshClosed(dims)})
	}
	for p := 2; p <= 9; p++ {
		cases = append(cases, tc{fmt.Sprintf("ring:%d", p), closed{diam: p / 2, conn: 2, cost: p, bisection: 2, avg: torusClosed([]int{p}).avg}})
		cases = append(cases, tc{fmt.Sprintf("line:%d", p), closed{diam: p - 1, conn: 1, cost: p - 1, bisection: 1, avg: meshClosed([]int{p}).avg}})
		cases = append(cases, tc{fmt.Sprintf("complete:%d", p), closed{diam: 1, conn: p - 1, cost: p * (p - 1) / 2, bisection: (p / 2) * ((p + 1) / 2), avg: 1}})
	}
	for d := 1; d <= 5; d++ {
		p := 1 << d
		cases = append(cases, tc{fmt.Sprintf("hypercube:%d", d), closed{diam: d, conn: d, cost: d * p / 2, bisection: p / 2, avg: float64(d) / 2 * float64(p) / float64(p-1)}})
	}
	for k := 2; k <= 5; k++ {
		p := 1<<k - 1
		cases = append(cases, tc{fmt.Sprintf("tree:%d", p), closed{diam: 2 * (bits.Len(uint(p+1)/2) - 1), conn: 1, cost: p - 1, bisection: 1, avg: -1}})
	}
	for p := 3; p <= 9; p++ {
		// Star: the seed's table lists bisection 1; splitting the nodes
		// into halves actually cuts ⌊p/2⌋ links (see docs/topology.md).
		cases = append(cases, tc{fmt.Sprintf("star:%d", p), closed{diam: 2, conn: 1, cost: p - 1, bisection: p / 2, avg: 2 - 2.0/float64(p)}})
	}
	for _, c := range cases {
		g, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, generic := range []bool{false, true} {
			m := Measure(g, MetricsOptions{ForceGeneric: generic})
			name := fmt.Sprintf("%s generic=%v", c.spec, generic)
			if m.Diameter != c.want.diam {
				t.Errorf("%s: diameter %d want %d", name, m.Diameter, c.want.diam)
			}
			if c.want.avg >= 0 && math.Abs(m.AvgDistance-c.want.avg) > 1e-9 {
				t.Errorf("%s: avg distance %v want %v", name, m.AvgDistance, c.want.avg)
			}
			if m.Connectivity != c.want.conn || !m.ConnectivityExact {
				t.Errorf("%s: connectivity %d (exact %v) want %d", name, m.Connectivity, m.ConnectivityExact, c.want.conn)
			}
			if m.Cost != c.want.cost {
				t.Errorf("%s: cost %d want %d", name, m.Cost, c.want.cost)
			}
			if c.want.bisection >= 0 && g.NumNodes() <= 40 || c.want.bisection >= 0 && !generic {
				if m.BisectionWidth != c.want.bisection || !m.BisectionExact {
					t.Errorf("%s: bisection %d (exact %v, %s) want %d", name, m.BisectionWidth, m.BisectionExact, m.BisectionMethod, c.want.bisection)
				}
			}
			if !m.DistanceExact {
				t.Errorf("%s: distances not exact", name)
			}
		}
	}
}

func dimStr(d []int) string {
	s := ""
	for i, x := range d {
		if i > 0 {
			s += "x"
		}
		s += fmt.Sprint(x)
	}
	return s
}

// randomGraph builds a random multigraph with n nodes and m links.
func randomGraph(r *rand.Rand, n, m int, switches bool) *Graph {
	b := NewBuilder("random")
	for v := 0; v < n; v++ {
		k := Endpoint
		if switches && r.IntN(3) == 0 {
			k = Switch
		}
		b.AddNode(k, fmt.Sprint(v), NodeOpts{Level: NoLevel, Group: NoGroup})
	}
	for i := 0; i < m; i++ {
		a, c := r.IntN(n), r.IntN(n)
		if a == c {
			continue
		}
		b.Connect(a, c, Plain)
	}
	g, err := b.Build()
	if err != nil {
		panic(err)
	}
	return g
}

// bruteCuts computes edge connectivity and bisection by enumerating every
// 2-colouring of the nodes.
func bruteCuts(g *Graph) (conn, bis int) {
	n := g.NumNodes()
	terms := Terminals(g)
	isTerm := make([]bool, n)
	for _, v := range terms {
		isTerm[v] = true
	}
	conn, bis = math.MaxInt, math.MaxInt
	live := liveNodes(g)
	for mask := 1; mask < 1<<n; mask++ {
		cut := 0
		for l, lk := range g.Links() {
			if !g.LinkFailed(l) && (mask>>lk.A)&1 != (mask>>lk.B)&1 {
				cut++
			}
		}
		inS, liveIn := 0, 0
		for _, v := range terms {
			if mask>>v&1 == 1 {
				inS++
			}
		}
		for _, v := range live {
			if mask>>v&1 == 1 {
				liveIn++
			}
		}
		if liveIn > 0 && liveIn < len(live) {
			conn = min(conn, cut)
		}
		if inS == len(terms)/2 || inS == (len(terms)+1)/2 {
			bis = min(bis, cut)
		}
	}
	return conn, bis
}

func TestCutsAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 150; trial++ {
		n := 3 + r.IntN(8)
		g := randomGraph(r, n, n+r.IntN(2*n), trial%2 == 1)
		if trial%3 == 0 && g.NumLinks() > 0 {
			g, _ = g.WithFaults([]int{r.IntN(g.NumLinks())}, nil)
		}
		if len(Terminals(g)) < 2 {
			continue
		}
		wantConn, wantBis := bruteCuts(g)
		conn, exact, _ := EdgeConnectivity(g, MetricsOptions{})
		if !exact || conn != wantConn {
			t.Fatalf("trial %d: connectivity %d (exact %v) want %d", trial, conn, exact, wantConn)
		}
		bis, exact, method := Bisection(g, MetricsOptions{})
		if !exact || bis != wantBis {
			t.Fatalf("trial %d: bisection %d (exact %v, %s) want %d", trial, bis, exact, method, wantBis)
		}
	}
}

// bruteDistances computes terminal distances by Floyd–Warshall with the
// rule that only switches (or all nodes of a direct network) forward.
func bruteDistances(g *Graph) (diam int, avg float64, unreach int64) {
	n := g.NumNodes()
	const inf = 1 << 30
	d := make([][]int, n)
	for i := range d {
		d[i] = make([]int, n)
		for j := range d[i] {
			if i != j {
				d[i][j] = inf
			}
		}
	}
	for c := 0; c < g.NumChannels(); c++ {
		if g.Up(c) {
			d[g.Src(c)][g.Dst(c)] = 1
		}
	}
	direct := g.Direct()
	for k := 0; k < n; k++ {
		if !direct && g.Kind(k) != Switch {
			continue
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if d[i][k]+d[k][j] < d[i][j] {
					d[i][j] = d[i][k] + d[k][j]
				}
			}
		}
	}
	terms := Terminals(g)
	var sum, pairs int64
	for _, a := range terms {
		for _, b := range terms {
			if a == b {
				continue
			}
			if d[a][b] >= inf {
				unreach++
				continue
			}
			sum += int64(d[a][b])
			pairs++
			diam = max(diam, d[a][b])
		}
	}
	if pairs > 0 {
		avg = float64(sum) / float64(pairs)
	}
	return
}

func TestDistancesAgainstFloyd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	specs := []string{"fattree:k=2,n=3", "dragonfly:a=3,p=2,h=1", "torus:3x2:endpoints=2", "xgft:m=2.3,w=2.2", "twolevel:groups=3,size=3"}
	var graphs []*Graph
	for _, s := range specs {
		g, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		graphs = append(graphs, g)
		h, _ := g.WithFaults([]int{0, g.NumLinks() / 2}, nil)
		graphs = append(graphs, h)
	}
	for i := 0; i < 60; i++ {
		graphs = append(graphs, randomGraph(r, 4+r.IntN(12), 4+r.IntN(25), i%2 == 0))
	}
	for _, g := range graphs {
		diam, avg, unreach := bruteDistances(g)
		st := Distances(g, MetricsOptions{ForceGeneric: true})
		if st.Unreachable != unreach || math.Abs(st.Average-avg) > 1e-9 || (unreach == 0 && st.Diameter != diam) {
			t.Fatalf("%s: got diam=%d avg=%v unreach=%d, want %d %v %d", g.Name(), st.Diameter, st.Average, st.Unreachable, diam, avg, unreach)
		}
	}
}
