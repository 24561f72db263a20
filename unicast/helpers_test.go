package unicast

import (
	"context"
	"os"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// fabric builds a fabric from a spec or a testdata file ("testdata/…"),
// with the file's annotations.
func fabric(t testing.TB, spec string) *Fabric {
	t.Helper()
	return fabricFaults(t, spec, "", "")
}

func fabricFaults(t testing.TB, spec, links, nodes string) *Fabric {
	t.Helper()
	var g *topology.Graph
	var ann *Annotations
	var err error
	if len(spec) > 9 && spec[:9] == "testdata/" {
		data, rerr := os.ReadFile(spec)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if g, err = topology.ParseData(data, spec); err != nil {
			t.Fatal(err)
		}
		if ann, err = ParseAnnotations(data, spec); err != nil {
			t.Fatal(err)
		}
	} else if g, err = topology.Parse(spec); err != nil {
		t.Fatal(err)
	}
	if g, err = g.ApplyFaults(links, nodes); err != nil {
		t.Fatal(err)
	}
	f, err := NewFabric(g, ann)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func route(t testing.TB, f *Fabric, engine string, lanes int) *Result {
	t.Helper()
	res, err := Route(context.Background(), f, Options{Engine: engine, Lanes: lanes})
	if err != nil {
		t.Fatalf("%s on %s: %v", engine, f.G.Name(), err)
	}
	return res
}

func audit(t testing.TB, tb *Tables) *Report {
	t.Helper()
	r, err := Audit(tb, AuditOptions{Contention: ContentionOn, Perms: 4, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// brute is an independent re-computation of what Audit reports, by
// walking every (end port, LID) route hop by hop through the LFTs.
type brute struct {
	pairs, unreachable int64
	termPairs          int64
	hopSum             int64
	maxHops            int
	minimal            int64
	load               map[int]int64 // switch-to-switch channel -> routes
	turns              []map[[2]int]bool
	cycle              []bool // per lane
}

// walkRoute follows the tables from end port src to lid and returns the
// channels used (access channel first, ejection channel last for end ports)
// and whether the route arrives.
func walkRoute(tb *Tables, src Terminal, lid int) ([]int, bool) {
	f := tb.F
	g := f.G
	c := g.PortChannel(src.Node, src.Port)
	if c < 0 || !g.Up(c) {
		return nil, false
	}
	chans := []int{c}
	v := g.Dst(c)
	osw, oterm := f.Owner(lid)
	for steps := 0; steps < 4*f.NumSwitches()+4; steps++ {
		if g.Kind(v) != topology.Switch || g.NodeFailed(v) {
			if oterm >= 0 && v == f.terms[oterm].Node && g.DstPort(chans[len(chans)-1]) == f.terms[oterm].Port {
				return chans, true
			}
			return chans, false
		}
		s := f.SwitchIndex(v)
		p := tb.Port(s, lid)
		if p < 0 {
			return chans, false
		}
		if p == 0 {
			return chans, s == osw
		}
		c := g.PortChannel(v, p)
		if c < 0 || !g.Up(c) {
			return chans, false
		}
		chans = append(chans, c)
		v = g.Dst(c)
	}
	return chans, false
}

func bruteForce(t testing.TB, tb *Tables) *brute {
	t.Helper()
	f := tb.F
	g := f.G
	b := &brute{load: map[int]int64{}}
	for l := 0; l < tb.Lanes(); l++ {
		b.turns = append(b.turns, map[[2]int]bool{})
	}
	isSw := func(v int) bool { return g.Kind(v) == topology.Switch }
	dist := make([]int32, g.NumNodes())
	for _, src := range f.terms {
		if !aliveTerm(f, src) {
			continue
		}
		topology.BFS(g, src.Node, dist, nil)
		for lid := 1; lid <= f.MaxLIDInUse(); lid++ {
			osw, oterm := f.Owner(lid)
			if osw < 0 && oterm < 0 {
				continue
			}
			if oterm >= 0 && (f.terms[oterm].Node == src.Node || !aliveTerm(f, f.terms[oterm])) {
				continue
			}
			if osw >= 0 && g.NodeFailed(f.Switch(osw)) {
				continue
			}
			b.pairs++
			chans, ok := walkRoute(tb, src, lid)
			// Dependencies between switch-to-switch channels, per lane.
			lane := tb.Lane(src.Switch, lid)
			for i := 1; i+1 < len(chans); i++ {
				if isSw(g.Src(chans[i])) && isSw(g.Dst(chans[i])) && isSw(g.Dst(chans[i+1])) {
					b.turns[lane][[2]int{chans[i], chans[i+1]}] = true
				}
			}
			if !ok {
				b.unreachable++
				continue
			}
			if oterm < 0 {
				continue
			}
			b.termPairs++
			b.hopSum += int64(len(chans))
			b.maxHops = max(b.maxHops, len(chans))
			if int32(len(chans)) == dist[f.terms[oterm].Node] {
				b.minimal++
			}
			for _, c := range chans {
				if isSw(g.Src(c)) && isSw(g.Dst(c)) {
					b.load[c]++
				}
			}
		}
	}
	for l := range b.turns {
		b.cycle = append(b.cycle, hasCycle(b.turns[l]))
	}
	return b
}

func aliveTerm(f *Fabric, tm Terminal) bool {
	g := f.G
	if tm.Switch < 0 || g.NodeFailed(tm.Node) || g.NodeFailed(f.Switch(tm.Switch)) {
		return false
	}
	c := g.PortChannel(tm.Node, tm.Port)
	return c >= 0 && g.Up(c)
}

// hasCycle is a plain recursive three-colour DFS over a dependency set.
func hasCycle(edges map[[2]int]bool) bool {
	adj := map[int][]int{}
	for e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
	}
	color := map[int]int{}
	var visit func(v int) bool
	visit = func(v int) bool {
		color[v] = 1
		for _, w := range adj[v] {
			if color[w] == 1 || (color[w] == 0 && visit(w)) {
				return true
			}
		}
		color[v] = 2
		return false
	}
	for v := range adj {
		if color[v] == 0 && visit(v) {
			return true
		}
	}
	return false
}

// checkAgainstBrute compares an audit with the brute-force walk.
func checkAgainstBrute(t *testing.T, name string, tb *Tables, r *Report) {
	t.Helper()
	b := bruteForce(t, tb)
	if r.Pairs != b.pairs || r.UnreachablePairs != b.unreachable {
		t.Errorf("%s: pairs %d/%d unreachable %d/%d (audit/brute)", name, r.Pairs, b.pairs, r.UnreachablePairs, b.unreachable)
	}
	if r.MaxHops != b.maxHops {
		t.Errorf("%s: max hops %d, brute force %d", name, r.MaxHops, b.maxHops)
	}
	if b.termPairs > 0 {
		if want := float64(b.hopSum) / float64(b.termPairs); !close(r.AvgHops, want) {
			t.Errorf("%s: avg hops %v, brute force %v", name, r.AvgHops, want)
		}
		if want := float64(b.minimal) / float64(b.termPairs); !close(r.MinimalFraction, want) {
			t.Errorf("%s: minimal fraction %v, brute force %v", name, r.MinimalFraction, want)
		}
	}
	var maxLoad, sum int64
	for _, v := range b.load {
		maxLoad = max(maxLoad, v)
		sum += v
	}
	if r.MaxLinkRoutes != maxLoad {
		t.Errorf("%s: max link routes %d, brute force %d", name, r.MaxLinkRoutes, maxLoad)
	}
	if r.Channels > 0 && !close(r.MeanLinkRoutes, float64(sum)/float64(r.Channels)) {
		t.Errorf("%s: mean link routes %v, brute force %v", name, r.MeanLinkRoutes, float64(sum)/float64(r.Channels))
	}
	anyCycle := false
	for l, c := range b.cycle {
		anyCycle = anyCycle || c
		if l < len(r.LaneCDG) && r.LaneCDG[l].Acyclic == c {
			t.Errorf("%s: lane %d acyclic=%v, brute force says cycle=%v", name, l, r.LaneCDG[l].Acyclic, c)
		}
	}
	if r.DeadlockFree == anyCycle {
		t.Errorf("%s: deadlock_free=%v but brute force cycle=%v", name, r.DeadlockFree, anyCycle)
	}
}

func close(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}
