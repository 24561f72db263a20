package routing

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestRepairStored fails, one after another, links that the routes of
// each kind of stored table use, and repairs the table each time on the
// fabric with the failures (the second repair reads the first's version 3
// routes). Each repaired table passes the whole independent verification
// with the figures RepairStored gives (π_perfect from the minimal lengths
// recomputed, π_max and the diameter from the routes); exactly the routes
// that crossed the failed link (found by walking every route) have new
// steps; the loads it leaves are those of the repaired routes. An angara
// table is refused, and a repair whose context has ended stops.
func TestRepairStored(t *testing.T) {
	tables := storedV2Tables(t)
	// Sets that stay reachable around a failure: rings whole in X and Y.
	tables["torus"] = buildFor(t, "5x4x3", "", AngaraStar, "", "", BFS)
	tables["rings"] = buildFor(t, "6x5x4", "", AngaraStar, "0-5.0-4.1-2", "3.3.3", BFS)
	tables["rings dirbit"] = buildFor(t, "6x5x3", "", Dirbit, "0-5.0-4.0-1", "", BFS)
	// Small tori, where a failure's gained turns shorten the longest
	// routes (the diameter falls).
	tables["4x4"] = buildFor(t, "4x4", "", AngaraStar, "", "", BFS)
	tables["4x3x2"] = buildFor(t, "4x3x2", "", AngaraStar, "", "", BFS)
	for name, tb := range tables {
		t.Run(name, func(t *testing.T) {
			b, err := EncodeStoredTable(context.Background(), tb)
			if err != nil {
				t.Fatal(err)
			}
			hdr := tb.JSONHeader()
			load := slices.Clone(tb.Loads())
			g, r := tb.Graph(), tb.Router()
			rnd := rand.New(rand.NewPCG(7, uint64(len(name))))
			repaired, unreachable := 0, 0
			for round := 0; round < 8 && repaired < 4; round++ {
				link, g2, r2 := failUsedLink(t, rnd, g, r, load)
				turns := !sameTurns(r, r2, tb)
				before := decodeAll(t, b, hdr)
				next := slices.Clone(load)
				// A repair whose context has ended does nothing.
				stop, cancel := context.WithCancel(context.Background())
				cancel()
				if _, err := r2.RepairStored(stop, r, hdr, b, []int{2 * link, 2*link + 1}, slices.Clone(load)); name != "angara ring" && !errors.Is(err, context.Canceled) {
					t.Fatalf("a repair with its context ended: %v", err)
				}
				rep, err := r2.RepairStored(context.Background(), r, hdr, b, []int{2 * link, 2*link + 1}, next)
				if name == "angara ring" {
					if !errors.Is(err, ErrNotRepairable) {
						t.Fatalf("an angara table repaired: %v", err)
					}
					return
				}
				var un *UnreachableError
				if errors.As(err, &un) {
					if ok, _, _ := r2.ReachableFirst(tb.Active, tb.Transit); ok {
						t.Fatalf("repair finds no route %d → %d, but the set is reachable", un.Src, un.Dst)
					}
					t.Logf("failure of %s leaves %v", g.LinkName(link), err)
					unreachable++
					continue
				}
				if err != nil {
					t.Fatalf("failure of %s: %v", g.LinkName(link), err)
				}
				h := *rep.Header
				if h.Routes != nil || !h.DeadlockFree || len(h.FailedLinks) != len(g2.FailedLinks()) {
					t.Fatalf("repaired header: routes %d, deadlock-free %v, failed links %v", len(h.Routes), h.DeadlockFree, h.FailedLinks)
				}
				vr, err := r2.Verify(context.Background(), StoredTable{Header: &h, Routes: rep.Routes}, VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := vr.Err(); err != nil {
					t.Fatalf("failure of %s: the repaired table fails verification: %v", g.LinkName(link), err)
				}
				after := decodeAll(t, rep.Routes, hdr)
				crossed := 0
				for i := range before {
					cross := slices.ContainsFunc(routeChannels(g, hdr, before[i]), func(c int32) bool { return int(c)>>1 == link })
					if cross {
						crossed++
					}
					if !cross && !turns && !slices.Equal(before[i].Dirs, after[i].Dirs) {
						t.Fatalf("route %d crosses no failed link, and it changed", i)
					}
				}
				if crossed > rep.Rerouted || !turns && crossed < rep.Rerouted || crossed == 0 {
					t.Fatalf("%d routes re-routed, %d crossed the failed link", rep.Rerouted, crossed)
				}
				want := make([]int32, len(load))
				for _, rt := range after {
					for _, c := range routeChannels(g, hdr, rt) {
						want[c]++
					}
				}
				if !slices.Equal(next, want) {
					t.Fatal("the loads left differ from those of the repaired routes")
				}
				full, err := r2.Build(context.Background(), tb.Active, tb.Transit, BuildOptions{})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("failure of %s (turns changed: %v): %d routes re-routed, %d crossed it, version %d; π_max %d, a new table's %d",
					g.LinkName(link), turns, rep.Rerouted, crossed, StoredRoutesVersion(rep.Routes), h.Figures.PiMax, full.Figures.PiMax)
				g, r, b, load, hdr = g2, r2, rep.Routes, next, &h
				repaired++
			}
			if repaired == 0 && (unreachable == 0 || strings.HasPrefix(name, "rings") || name == "torus" || name == "4x4") {
				t.Fatal("no failure was repaired")
			}
		})
	}
}

// sameTurns reports whether r and r2 admit the same order-violating turns
// between channels of tb's set.
// failUsedLink fails a random link that some route of a table crosses
// (load: the table's per-channel loads) and returns it with the fabric
// and router after the failure.
func failUsedLink(t *testing.T, rnd *rand.Rand, g *topology.Graph, r *Router, load []int32) (int, *topology.Graph, *Router) {
	t.Helper()
	var used []int
	for c, x := range load {
		if x > 0 {
			used = append(used, c>>1)
		}
	}
	link := used[rnd.IntN(len(used))]
	g2, r2 := withFaults(t, g, r, []int{link}, nil)
	return link, g2, r2
}

// withFaults returns g with the links and nodes failed and r's rule's
// router on it.
func withFaults(t *testing.T, g *topology.Graph, r *Router, links, nodes []int) (*topology.Graph, *Router) {
	t.Helper()
	g2, err := g.AddFaults(links, nodes)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := NewRouter(g2, r.Rule())
	if err != nil {
		t.Fatal(err)
	}
	return g2, r2
}

// failUnusedLink fails a random working link that no route of a table
// crosses and returns it with the router after the failure; ok is false
// when every working link is used.
func failUnusedLink(t *testing.T, rnd *rand.Rand, g *topology.Graph, r *Router, load []int32) (int, *Router, bool) {
	t.Helper()
	var unused []int
	for l := range g.NumLinks() {
		if load[2*l] == 0 && load[2*l+1] == 0 && g.Up(2*l) {
			unused = append(unused, l)
		}
	}
	if len(unused) == 0 {
		return 0, nil, false
	}
	link := unused[rnd.IntN(len(unused))]
	_, r2 := withFaults(t, g, r, []int{link}, nil)
	return link, r2, true
}

// failNodeOutside fails a random node outside set and returns it with the
// router after the failure; ok is false when the set holds every node.
func failNodeOutside(t *testing.T, rnd *rand.Rand, g *topology.Graph, r *Router, set []int) (int, *Router, bool) {
	t.Helper()
	var out []int
	for v := range g.NumNodes() {
		if !slices.Contains(set, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return 0, nil, false
	}
	v := out[rnd.IntN(len(out))]
	_, r2 := withFaults(t, g, r, nil, []int{v})
	return v, r2, true
}

func sameTurns(r, r2 *Router, tb *Table) bool {
	t := r.t
	for _, v := range append(slices.Clone(tb.Active), tb.Transit...) {
		for d := range t.nd {
			c := t.ch[v*t.nd+d]
			if c < 0 {
				continue
			}
			for e := range t.nd {
				if r.ExtraAllowed(int(c), Dir(e)) != r2.ExtraAllowed(int(c), Dir(e)) {
					return false
				}
			}
		}
	}
	return true
}

// decodeAll reads stored routes whole.
func decodeAll(t *testing.T, b []byte, hdr *TableJSON) []RouteJSON {
	t.Helper()
	h := *hdr
	if err := DecodeStoredRoutes(b, &h); err != nil {
		t.Fatal(err)
	}
	return h.Routes
}

// routeChannels walks a route on g.
func routeChannels(g *topology.Graph, hdr *TableJSON, rt RouteJSON) []int32 {
	t := faultFreeTorus(g)
	dirs, err := AppendNamedDirs(nil, rt.Dirs)
	if err != nil {
		panic(err)
	}
	v := g.NodeAt(rt.Src)
	var out []int32
	for _, d := range dirs {
		out = append(out, t.chAt(v, d))
		v = int(t.nbAt(v, d))
	}
	return out
}

// faultFreeTorus returns g's torus without its failures, made once per
// graph (routeChannels walks every route of a table).
func faultFreeTorus(g *topology.Graph) *torus {
	if t, ok := faultFreeTori.Load(g); ok {
		return t.(*torus)
	}
	t, err := newTorus(g.WithoutFaults())
	if err != nil {
		panic(err)
	}
	faultFreeTori.Store(g, t)
	return t
}

var faultFreeTori sync.Map // *topology.Graph → *torus

// TestRepairStoredRandomSets: random sets (active and transit nodes) on
// small tori, one link their table uses failed: every table repaired
// passes the whole independent verification with the figures the repair
// gives, among them tables whose diameter fell (a gained turn shortened
// every longest route); sets left without a route are confirmed so.
func TestRepairStoredRandomSets(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	repaired, fell, elsewhere, nodes := 0, 0, 0, 0
	for trial := range 2000 {
		g := mustTorus(t, []string{"5x5", "6x4", "4x4x2", "6x6"}[trial%4])
		n := g.NumNodes()
		perm := rnd.Perm(n)
		m := 2 + rnd.IntN(n-2)
		k := rnd.IntN(n - m + 1)
		active, transit := slices.Sorted(slices.Values(perm[:m])), slices.Sorted(slices.Values(perm[m:m+k]))
		r, err := NewRouter(g, Rule{Kind: AngaraStar})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := r.Build(context.Background(), active, transit, BuildOptions{})
		if err != nil {
			continue // not reachable before the failure
		}
		b, err := EncodeStoredTable(context.Background(), tb)
		if err != nil {
			t.Fatal(err)
		}
		load := slices.Clone(tb.Loads())
		var link int
		var r2 *Router
		unused := trial%3 == 2
		gone := func() []int { return []int{2 * link, 2*link + 1} }
		what := func() string { return g.LinkName(link) + " failed" }
		nodeFailed := false
		if unused && trial%2 == 0 {
			// A node outside the set: its channels go, and the turns
			// angara* admits change.
			var v int
			if v, r2, unused = failNodeOutside(t, rnd, g, r, append(slices.Clone(active), transit...)); unused {
				gone = func() (cs []int) {
					for _, c := range g.Out(v) {
						cs = append(cs, int(c), int(c)^1)
					}
					return cs
				}
				what = func() string { return g.NodeName(v) + " failed" }
				nodeFailed = true
			}
		} else if unused {
			// A link no route crosses: the failure changes only the
			// turns angara* admits (the fabric manager repairs a
			// table so when it no longer verifies).
			link, r2, unused = failUnusedLink(t, rnd, g, r, load)
		}
		if !unused {
			link, _, r2 = failUsedLink(t, rnd, g, r, load)
		}
		rep, err := r2.RepairStored(context.Background(), r, tb.JSONHeader(), b, gone(), load)
		var un *UnreachableError
		if errors.As(err, &un) {
			if ok, _, _ := r2.ReachableFirst(active, transit); ok {
				t.Fatalf("trial %d: no route %d → %d found, but the set is reachable", trial, un.Src, un.Dst)
			}
			continue
		}
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		vr, err := r2.Verify(context.Background(), StoredTable{Header: rep.Header, Routes: rep.Routes}, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := vr.Err(); err != nil {
			t.Fatalf("trial %d (%d active, %d transit on %v, %s): %v", trial, m, k, g.Dims(), what(), err)
		}
		repaired++
		if rep.Header.Figures.Diameter < tb.Figures.Diameter {
			fell++
		}
		if nodeFailed {
			nodes++
		}
		if unused && rep.Rerouted > 0 {
			elsewhere++
		}
	}
	if repaired < 500 || fell == 0 || elsewhere < 10 || nodes < 50 {
		t.Fatalf("%d tables repaired (%d after a node failure), %d with a smaller diameter, %d re-routed after a failure their routes do not cross", repaired, nodes, fell, elsewhere)
	}
	t.Logf("%d tables repaired (%d after a node failure), %d with a smaller diameter, %d re-routed after a failure their routes do not cross", repaired, nodes, fell, elsewhere)
}
