package unicast

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

var allEngines = []string{"minhop", "updn", "ftree", "sssp", "dfsssp", "dor"}

// A 2-level fat tree: 2 spines, 2 leaves, 2 hosts per leaf. By hand: of
// the 12 ordered host pairs, 4 stay under a leaf (2 links) and 8 cross a
// spine (4 links): avg 40/12, max 4, all minimal. The 8 crossing pairs put
// 16 routes on the 8 switch channels; a balanced routing puts 2 on each.
func TestTwoLevelFatTree(t *testing.T) {
	f := fabric(t, "testdata/ft2.ibnet")
	for _, e := range allEngines {
		if e == "dor" {
			if _, err := Route(context.Background(), f, Options{Engine: e}); err == nil {
				t.Errorf("dor routed a fat tree")
			}
			continue
		}
		res := route(t, f, e, 0)
		r := audit(t, res.Tables)
		checkAgainstBrute(t, e, res.Tables, r)
		if !r.Reachable || r.MaxHops != 4 || !close(r.AvgHops, 40.0/12) || r.MinimalFraction != 1 {
			t.Errorf("%s: reachable %v max hops %d avg %v minimal %v", e, r.Reachable, r.MaxHops, r.AvgHops, r.MinimalFraction)
		}
		if !r.DeadlockFree || r.Lanes != 1 {
			t.Errorf("%s: deadlock-free %v on %d lanes, want true on 1", e, r.DeadlockFree, r.Lanes)
		}
		if r.MaxLinkRoutes != 2 || r.PiPerfect != 2 || r.BalanceFactor != 0 {
			t.Errorf("%s: max link routes %d, π_perfect %v, balance %v; want 2, 2, 0", e, r.MaxLinkRoutes, r.PiPerfect, r.BalanceFactor)
		}
		if !r.FatTree || r.Contention == nil || r.Contention.Shifts != 3 {
			t.Errorf("%s: fat tree %v contention %+v", e, r.FatTree, r.Contention)
		}
	}
	// ftree spreads the two hosts of a leaf over both spines: every shift
	// is contention-free.
	r := audit(t, route(t, f, "ftree", 0).Tables)
	if r.Contention.ShiftMax != 1 {
		t.Errorf("ftree shift contention %d, want 1", r.Contention.ShiftMax)
	}
	// updn picks the two spines as roots (they see all hosts 2 hops away).
	res := route(t, f, "updn", 0)
	var roots []string
	for _, v := range res.Roots {
		roots = append(roots, f.G.NodeName(v))
	}
	if strings.Join(roots, ",") != "S-0002c90000000010,S-0002c90000000011" {
		t.Errorf("updn roots %v, want the spines", roots)
	}
}

// A ring of six switches: shortest paths chase each other round the ring,
// so minhop's dependency graph has a cycle of the six channels of one
// direction. up*/down* breaks it on one lane, dfsssp and dor with two.
func TestRingDeadlocksUnderMinhop(t *testing.T) {
	f := fabric(t, "testdata/ring6.net")
	r := audit(t, route(t, f, "minhop", 0).Tables)
	if r.DeadlockFree || !r.Reachable || r.MinimalFraction != 1 {
		t.Fatalf("minhop on a ring: deadlock-free %v reachable %v minimal %v", r.DeadlockFree, r.Reachable, r.MinimalFraction)
	}
	if len(r.Cycle) != 6 {
		t.Fatalf("example cycle %v, want the 6 channels of one direction", r.Cycle)
	}
	// The cycle is a closed walk of switch channels: each channel ends
	// where the next begins.
	g := f.G
	var chans []int
	for _, name := range r.Cycle {
		c := channelByName(g, name)
		if c < 0 {
			t.Fatalf("cycle names unknown channel %q", name)
		}
		chans = append(chans, c)
	}
	for i, c := range chans {
		n := chans[(i+1)%len(chans)]
		if g.Dst(c) != g.Src(n) || g.Kind(g.Src(c)) != topology.Switch || g.Kind(g.Dst(c)) != topology.Switch {
			t.Fatalf("cycle %v is not a closed walk of switch channels", r.Cycle)
		}
	}
	checkAgainstBrute(t, "minhop", route(t, f, "minhop", 0).Tables, r)

	for _, e := range []string{"updn", "sssp", "dfsssp"} {
		res := route(t, f, e, 0)
		r := audit(t, res.Tables)
		checkAgainstBrute(t, e, res.Tables, r)
		if !r.Reachable {
			t.Errorf("%s: not reachable", e)
		}
		switch e {
		case "updn":
			if !r.DeadlockFree || r.Lanes != 1 {
				t.Errorf("updn: deadlock-free %v lanes %d", r.DeadlockFree, r.Lanes)
			}
		case "dfsssp":
			if !r.DeadlockFree || r.Lanes != 2 || res.LanesNeeded != 2 {
				t.Errorf("dfsssp on a ring: deadlock-free %v on %d lanes, want true on 2", r.DeadlockFree, r.Lanes)
			}
		}
	}
	// With a single lane dfsssp cannot break the ring.
	res := route(t, f, "dfsssp", 1)
	r = audit(t, res.Tables)
	if !res.LaneLimit || r.DeadlockFree {
		t.Errorf("dfsssp with 1 lane: limit %v deadlock-free %v", res.LaneLimit, r.DeadlockFree)
	}
	if _, err := Route(context.Background(), f, Options{Engine: "ftree"}); err == nil || !strings.Contains(err.Error(), "not a fat tree") {
		t.Errorf("ftree on a ring: %v", err)
	}
	// dor on the same ring built as a torus of switches.
	tf := fabric(t, "torus:6:endpoints=1")
	res = route(t, tf, "dor", 0)
	r = audit(t, res.Tables)
	checkAgainstBrute(t, "dor", res.Tables, r)
	if !r.DeadlockFree || r.Lanes != 2 || r.MinimalFraction != 1 {
		t.Errorf("dor on a 6-ring: deadlock-free %v lanes %d minimal %v", r.DeadlockFree, r.Lanes, r.MinimalFraction)
	}
}

func channelByName(g *topology.Graph, name string) int {
	for c := 0; c < g.NumChannels(); c++ {
		if g.ChannelName(c) == name {
			return c
		}
	}
	return -1
}

// Failed links: the fat tree keeps every pair reachable through the other
// spine; a ring with one cut link is a line (no cycle left even for
// minhop; the longest route crosses all six switches: 7 links); a ring cut
// twice falls apart and the audit counts the pairs across the cut.
func TestFailedLink(t *testing.T) {
	// Leaf-1 loses its cable to spine-1. Host pairs still meet at spine-2.
	// ftree keeps the tree's own up/down orientation for switch LIDs too,
	// so the two hosts of leaf-1 cannot reach spine-1's LID (that would be
	// up, down, up): 2 unreachable management pairs, by hand. updn picks
	// spine-2 as its only root and reaches everything.
	f := fabricFaults(t, "testdata/ft2.ibnet", "S-0002c90000000020[3]", "")
	for _, e := range []string{"minhop", "updn", "ftree", "sssp", "dfsssp"} {
		res := route(t, f, e, 0)
		r := audit(t, res.Tables)
		checkAgainstBrute(t, e, res.Tables, r)
		wantUnreach := int64(0)
		if e == "ftree" {
			wantUnreach = 2
		}
		if r.UnreachablePairs != wantUnreach || r.UnreachableSwitch != wantUnreach || !r.DeadlockFree || r.MaxHops != 4 || r.MinimalFraction != 1 {
			t.Errorf("%s with a failed link: unreachable %d (%d to switches) deadlock-free %v max hops %d minimal %v",
				e, r.UnreachablePairs, r.UnreachableSwitch, r.DeadlockFree, r.MaxHops, r.MinimalFraction)
		}
	}
	line := fabricFaults(t, "testdata/ring6.net", "sw5[7]", "")
	for _, e := range []string{"minhop", "updn", "sssp", "dfsssp"} {
		res := route(t, line, e, 0)
		r := audit(t, res.Tables)
		checkAgainstBrute(t, e, res.Tables, r)
		if !r.Reachable || !r.DeadlockFree || r.MaxHops != 7 || r.Lanes != 1 {
			t.Errorf("%s on the cut ring: reachable %v deadlock-free %v max hops %d lanes %d", e, r.Reachable, r.DeadlockFree, r.MaxHops, r.Lanes)
		}
	}
	// Cut sw0–sw1 and sw3–sw4: {sw1,sw2,sw3} and {sw4,sw5,sw0}. Each host
	// misses the 3 hosts and 3 switch LIDs across: 6·6 = 36 pairs.
	split := fabricFaults(t, "testdata/ring6.net", "sw0[7],sw3[7]", "")
	for _, e := range []string{"minhop", "updn", "sssp", "dfsssp"} {
		res := route(t, split, e, 0)
		r := audit(t, res.Tables)
		checkAgainstBrute(t, e, res.Tables, r)
		if r.Reachable || r.UnreachablePairs != 36 || r.BlackHoles != 36 || r.FirstUnreachable == "" {
			t.Errorf("%s on the split ring: unreachable %d black holes %d (%q)", e, r.UnreachablePairs, r.BlackHoles, r.FirstUnreachable)
		}
	}
	// A host whose cable is down is not part of the subnet.
	off := fabricFaults(t, "testdata/ft2.ibnet", "H-0002c90000000101[1]", "")
	r := audit(t, route(t, off, "minhop", 0).Tables)
	if !r.Reachable || r.EndPorts != 4 || r.Pairs != 3*2+3*4 {
		t.Errorf("host with a dead cable: reachable %v pairs %d", r.Reachable, r.Pairs)
	}
}

// randomFabric is a connected random switch graph with hosts.
func randomFabric(t testing.TB, seed uint64) *Fabric {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := topology.NewBuilder(fmt.Sprintf("random-%d", seed))
	n := 5 + rng.IntN(8)
	for i := 0; i < n; i++ {
		b.AddNode(topology.Switch, fmt.Sprintf("s%d", i), topology.NodeOpts{Level: topology.NoLevel, Group: topology.NoGroup})
	}
	for i := 1; i < n; i++ {
		b.Connect(i, rng.IntN(i), topology.Plain)
	}
	for k := rng.IntN(n); k > 0; k-- {
		a, c := rng.IntN(n), rng.IntN(n)
		if a != c {
			b.Connect(a, c, topology.Plain)
		}
	}
	for i := 0; i < n; i++ {
		for h := rng.IntN(3); h > 0; h-- {
			v := b.AddNode(topology.Endpoint, fmt.Sprintf("h%d-%d", i, h), topology.NodeOpts{Level: topology.NoLevel, Group: topology.NoGroup})
			b.Connect(v, i, topology.Plain)
		}
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if g.NumLinks() > 3 && seed%3 == 0 {
		g, _ = g.WithFaults([]int{int(seed) % g.NumLinks()}, nil)
	}
	f, err := NewFabric(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// On random irregular fabrics every engine's audit equals a brute-force
// walk of every route; minhop is minimal; updn and dfsssp are deadlock-free
// and reach every pair the fabric connects.
func TestEnginesOnRandomFabrics(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		f := randomFabric(t, seed)
		h, err := topology.MinHops(f.G, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Pairs the fabric itself cannot connect.
		var cut int64
		for _, s := range f.terms {
			if !aliveTerm(f, s) {
				continue
			}
			for lid := 1; lid <= f.MaxLIDInUse(); lid++ {
				osw, oterm := f.Owner(lid)
				var tv int
				switch {
				case oterm >= 0:
					if f.terms[oterm].Node == s.Node || !aliveTerm(f, f.terms[oterm]) {
						continue
					}
					tv = f.Switch(f.terms[oterm].Switch)
				case osw >= 0:
					tv = f.Switch(osw)
				default:
					continue
				}
				if h.Hops(f.Switch(s.Switch), tv) == topology.Unreachable {
					cut++
				}
			}
		}
		for _, e := range []string{"minhop", "updn", "sssp", "dfsssp"} {
			res := route(t, f, e, 0)
			r := audit(t, res.Tables)
			name := fmt.Sprintf("%s seed %d", e, seed)
			checkAgainstBrute(t, name, res.Tables, r)
			if e != "updn" && r.UnreachablePairs != cut {
				t.Errorf("%s: %d unreachable pairs, the fabric cuts %d", name, r.UnreachablePairs, cut)
			}
			if (e == "minhop" || e == "sssp" || e == "dfsssp") && r.MinimalFraction != 1 && r.Pairs > r.UnreachablePairs {
				t.Errorf("%s: minimal fraction %v", name, r.MinimalFraction)
			}
			if (e == "updn" || e == "dfsssp") && !r.DeadlockFree {
				t.Errorf("%s: not deadlock-free: %v", name, r.Cycle)
			}
			if e == "updn" && r.UnreachablePairs != cut {
				t.Errorf("%s: up*/down* leaves %d pairs unreachable, the fabric cuts %d", name, r.UnreachablePairs, cut)
			}
			if e == "dfsssp" && r.Lanes != res.LanesNeeded {
				t.Errorf("%s: audit sees %d lanes, layering needed %d", name, r.Lanes, res.LanesNeeded)
			}
		}
	}
}

// ftree on full fat trees: every shift permutation is contention-free
// (checked by brute force, independently of the audit's own count).
func TestFTreeShiftContentionFree(t *testing.T) {
	for _, spec := range []string{"fattree:k=2,n=2", "fattree:k=2,n=3", "fattree:k=3,n=2", "fattree:k=4,n=2",
		"fattree:k=3,n=3", "fattree:k=4,n=3", "fattree:m=4,n=3", "fattree:m=6,n=2", "fattree:m=8,n=2", "fattree:m=8,n=3"} {
		f := fabric(t, spec)
		res := route(t, f, "ftree", 0)
		ft, err := analyseFatTree(f)
		if err != nil {
			t.Fatal(err)
		}
		N := len(ft.order)
		worst := 0
		for k := 1; k < N; k++ {
			cnt := map[int]int{}
			for i := 0; i < N; i++ {
				src, dst := f.terms[ft.order[i]], f.terms[ft.order[(i+k)%N]]
				chans, ok := walkRoute(res.Tables, src, dst.LID)
				if !ok {
					t.Fatalf("%s: %s cannot reach LID %d", spec, f.G.NodeName(src.Node), dst.LID)
				}
				for _, c := range chans {
					cnt[c]++
					worst = max(worst, cnt[c])
				}
			}
		}
		if worst != 1 {
			t.Errorf("%s: ftree shift contention %d, want 1", spec, worst)
		}
		r := audit(t, res.Tables)
		if r.Contention.ShiftMax != worst || r.Contention.Shifts != N-1 || !r.DeadlockFree || r.MinimalFraction != 1 {
			t.Errorf("%s: audit contention %+v deadlock-free %v minimal %v", spec, r.Contention, r.DeadlockFree, r.MinimalFraction)
		}
	}
}

// The audit's random-permutation contention equals a brute-force count.
func TestContentionMatchesBruteForce(t *testing.T) {
	f := fabric(t, "fattree:k=3,n=2")
	tb := route(t, f, "minhop", 0).Tables
	r, err := Audit(tb, AuditOptions{Perms: 3, Seed: 11, Shifts: 4})
	if err != nil {
		t.Fatal(err)
	}
	ft, _ := analyseFatTree(f)
	N := len(ft.order)
	perm := func(j int) []int {
		if j < 4 {
			k := 1 + j*(N-1)/4
			p := make([]int, N)
			for i := range p {
				p[i] = (i + k) % N
			}
			return p
		}
		return rand.New(rand.NewPCG(11, uint64(j-4))).Perm(N)
	}
	var shiftMax, randMax int
	for j := 0; j < 7; j++ {
		p := perm(j)
		cnt := map[int]int{}
		worst := 0
		for i, pi := range p {
			src, dst := f.terms[ft.order[i]], f.terms[ft.order[pi]]
			if src.Node == dst.Node {
				continue
			}
			chans, _ := walkRoute(tb, src, dst.LID)
			for _, c := range chans {
				cnt[c]++
				worst = max(worst, cnt[c])
			}
		}
		if j < 4 {
			shiftMax = max(shiftMax, worst)
		} else {
			randMax = max(randMax, worst)
		}
	}
	if r.Contention.ShiftMax != shiftMax || r.Contention.RandomMax != randMax || r.Contention.Shifts != 4 || r.Contention.Random != 3 {
		t.Errorf("contention %+v, brute force shift %d random %d", r.Contention, shiftMax, randMax)
	}
}

// dor routes X first, then Y, the short way round, and is deadlock-free
// on a mesh with one lane; a torus needs the layering.
func TestDOR(t *testing.T) {
	for _, spec := range []string{"mesh:3x4:endpoints=1", "torus:5x4:endpoints=2", "torus:4x4:rings=2,1:endpoints=1"} {
		f := fabric(t, spec)
		res := route(t, f, "dor", 0)
		r := audit(t, res.Tables)
		checkAgainstBrute(t, "dor "+spec, res.Tables, r)
		if !r.Reachable || !r.DeadlockFree || r.MinimalFraction != 1 {
			t.Errorf("%s: reachable %v deadlock-free %v minimal %v", spec, r.Reachable, r.DeadlockFree, r.MinimalFraction)
		}
		g := f.G
		for _, src := range f.terms {
			for _, dst := range f.terms {
				if src.Node == dst.Node {
					continue
				}
				chans, _ := walkRoute(res.Tables, src, dst.LID)
				last := -1
				for _, c := range chans[1 : len(chans)-1] {
					d, _ := g.Dir(c)
					if d < last {
						t.Fatalf("%s: route %s→%s turns back to dimension %d", spec, g.NodeName(src.Node), g.NodeName(dst.Node), d)
					}
					last = d
				}
			}
		}
		wantLanes := 2
		if strings.HasPrefix(spec, "mesh") {
			wantLanes = 1
		}
		if r.Lanes < wantLanes || (wantLanes == 1 && r.Lanes != 1) {
			t.Errorf("%s: %d lanes", spec, r.Lanes)
		}
	}
	if res := route(t, fabric(t, "torus:5x4:endpoints=1"), "dor", 1); !res.LaneLimit {
		t.Errorf("dor on a torus with one lane should run out of lanes")
	}
	if _, err := Route(context.Background(), fabric(t, "fattree:k=2,n=2"), Options{Engine: "dor"}); err == nil {
		t.Errorf("dor on a fat tree should fail")
	}
}

// Results do not depend on the number of workers.
func TestDeterministicAcrossWorkers(t *testing.T) {
	for _, spec := range []string{"fattree:k=3,n=3", "dragonfly:a=4,p=2,h=2", "torus:4x3:endpoints=1"} {
		f := fabric(t, spec)
		for _, e := range allEngines {
			var dumps [2]bytes.Buffer
			var reps [2]Report
			var errs [2]error
			for i, w := range []int{1, 2} {
				res, err := Route(context.Background(), f, Options{Engine: e, Workers: w})
				errs[i] = err
				if err != nil {
					continue
				}
				res.Tables.WriteDump(&dumps[i])
				res.Tables.WriteLanes(&dumps[i])
				r, err := Audit(res.Tables, AuditOptions{Workers: w, Contention: ContentionOn, Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				r.Seconds = 0
				reps[i] = *r
			}
			if (errs[0] == nil) != (errs[1] == nil) {
				t.Fatalf("%s %s: errors differ: %v / %v", spec, e, errs[0], errs[1])
			}
			if errs[0] != nil {
				continue
			}
			if !bytes.Equal(dumps[0].Bytes(), dumps[1].Bytes()) {
				t.Errorf("%s %s: tables differ between 1 and 2 workers", spec, e)
			}
			j0, _ := json.Marshal(reps[0])
			j1, _ := json.Marshal(reps[1])
			if !bytes.Equal(j0, j1) {
				t.Errorf("%s %s: audits differ between 1 and 2 workers", spec, e)
			}
		}
	}
}

func TestRoutingErrors(t *testing.T) {
	f := fabric(t, "testdata/ft2.ibnet")
	host := f.G.NodeByName("H-0002c90000000101")
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Engine: "bogus"}, "unknown engine"},
		{Options{Engine: "updn", Roots: []int{host}}, "not a switch"},
		{Options{Engine: "minhop", Roots: []int{0}}, "updn engine only"},
		{Options{Engine: "dfsssp", Lanes: 16}, "--lanes"},
		{Options{Engine: "ftree", Lanes: -1}, "--lanes"},
	}
	for _, c := range cases {
		if _, err := Route(context.Background(), f, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := ParseRoots(f.G, "H-0002c90000000101"); err == nil {
		t.Errorf("a host accepted as root")
	}
	if r, err := ParseRoots(f.G, "# roots\n0x0002c90000000010\nS-0002c90000000011\n"); err != nil || len(r) != 2 {
		t.Errorf("root file: %v %v", r, err)
	}
	if _, err := ParseRoots(f.G, "0x12345"); err == nil {
		t.Errorf("unknown GUID accepted as root")
	}
	// Given roots change the ranking: a leaf as the only root.
	leaf := f.G.NodeByName("S-0002c90000000020")
	res, err := Route(context.Background(), f, Options{Engine: "updn", Roots: []int{leaf}})
	if err != nil {
		t.Fatal(err)
	}
	r := audit(t, res.Tables)
	checkAgainstBrute(t, "updn leaf root", res.Tables, r)
	if !r.Reachable || !r.DeadlockFree || len(res.Roots) != 1 || res.Roots[0] != leaf {
		t.Errorf("updn with a leaf root: reachable %v deadlock-free %v roots %v", r.Reachable, r.DeadlockFree, res.Roots)
	}
	if _, err := NewFabric(mustParse(t, "torus:4x4"), nil); err == nil || !strings.Contains(err.Error(), "no switches") {
		t.Errorf("direct network: %v", err)
	}
}

func mustParse(t testing.TB, spec string) *topology.Graph {
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The dateline rule (lane bit per ring whose wrap-around link the path
// crosses) makes every lane acyclic, checked by the audit and by brute
// force, with exactly 2^rings lanes (rings of 3 or fewer need no bit).
func TestDORDateline(t *testing.T) {
	for _, c := range []struct {
		spec  string
		lanes int
	}{{"torus:4x4x4:endpoints=1", 8}, {"torus:6x3:endpoints=1", 2}, {"torus:5x4:rings=2,1:endpoints=1", 4}, {"torus:3x3:endpoints=1", 1}} {
		f := fabric(t, c.spec)
		tb, dl, err := routeDOR(f, Options{Workers: 0, Progress: func(int) {}})
		if err != nil {
			t.Fatal(err)
		}
		if dl != nil {
			dl.assign(tb)
		}
		r := audit(t, tb)
		checkAgainstBrute(t, "dateline "+c.spec, tb, r)
		if !r.DeadlockFree || r.Lanes != c.lanes || !r.Reachable {
			t.Errorf("%s: dateline lanes %d (want %d) deadlock-free %v", c.spec, r.Lanes, c.lanes, r.DeadlockFree)
		}
	}
	// Through Route: a 4x4x4 torus is deadlock-free within the default 8
	// lanes, whichever of layering and dateline wins.
	res := route(t, fabric(t, "torus:4x4x4:endpoints=1"), "dor", 0)
	if r := audit(t, res.Tables); !r.DeadlockFree || res.LaneLimit || r.Lanes > 8 {
		t.Errorf("dor on 4x4x4: deadlock-free %v lanes %d", r.DeadlockFree, r.Lanes)
	}
}
