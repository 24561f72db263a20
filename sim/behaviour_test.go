package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRegistryTables: the registries are complete and consistent: every
// routing constant is registered once with its behaviour, the exported
// name lists and choices follow the tables, and the properties that
// replace the old name tests say what they should.
func TestRegistryTables(t *testing.T) {
	consts := []string{RouteDOR, RouteDirbit, RouteAdaptive, RouteTable, RouteMinhop, RouteUpDown, RouteValiant, RouteUGAL}
	if !slices.Equal(Routings, consts) {
		t.Errorf("Routings %v, want the constants in order %v", Routings, consts)
	}
	for i, a := range routings {
		if a.build == nil || a.route == nil || a.doc == "" {
			t.Errorf("routing %s lacks a build, a route or a description", a.name)
		}
		if got, err := routingByName(a.name); err != nil || got != a {
			t.Errorf("routingByName(%s) = %v, %v", a.name, got, err)
		}
		if c := RoutingChoices()[i]; c.Name != a.name || c.Doc != a.doc {
			t.Errorf("RoutingChoices()[%d] = %+v", i, c)
		}
		if a.duato && (!a.adaptive || !a.coords) {
			t.Errorf("routing %s: Duato's protocol is adaptive routing on coordinates", a.name)
		}
		if a.table != (a.name == RouteTable) || a.dirOrder != (a.name == RouteDirbit) {
			t.Errorf("routing %s: table %v, direction order %v", a.name, a.table, a.dirOrder)
		}
	}
	if _, err := routingByName("xy"); err == nil || !strings.Contains(err.Error(), strings.Join(Routings, ", ")) {
		t.Errorf("unknown routing: %v, want the list of routings", err)
	}
	seen := map[string]bool{}
	for i, tr := range traffics {
		if seen[tr.name] || tr.pattern == nil || tr.doc == "" {
			t.Errorf("traffic %s: listed twice, or no pattern or description", tr.name)
		}
		seen[tr.name] = true
		if TrafficPatterns[i] != tr.name || trafficByName(tr.name) != tr || TrafficChoices()[i] != (Choice{tr.name, tr.doc}) {
			t.Errorf("traffic %s: lists and lookups disagree", tr.name)
		}
		if UsesTrace(tr.name) != (tr.name == "trace") {
			t.Errorf("UsesTrace(%s) = %v", tr.name, UsesTrace(tr.name))
		}
		if tr.bookSim != "" && trafficOfBookSim(tr.bookSim) != tr.name {
			t.Errorf("BookSim's %s maps to %q, want %s", tr.bookSim, trafficOfBookSim(tr.bookSim), tr.name)
		}
	}
	if trafficByName("nope") != nil || UsesTrace("nope") || trafficOfBookSim("hotspot") != "" || trafficOfBookSim("") != "" {
		t.Error("unregistered names resolve")
	}
}

// TestRegistryDocs: the routing and traffic tables of docs/sim.md list
// exactly the registered names, in the registry's order.
func TestRegistryDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "sim.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range []struct {
		header string
		want   []string
	}{{"| routing | networks |", Routings}, {"| `--traffic` |", TrafficPatterns}} {
		_, rest, ok := strings.Cut(doc, c.header)
		if !ok {
			t.Fatalf("docs/sim.md has no table %q", c.header)
		}
		var names []string
		for _, l := range strings.Split(rest, "\n")[2:] {
			if !strings.HasPrefix(l, "| `") {
				break
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "| `"), "`")
			names = append(names, name)
		}
		if !slices.Equal(names, c.want) {
			t.Errorf("docs/sim.md table %q lists %v, the registry %v", c.header, names, c.want)
		}
	}
}

// TestRoutingWalks: from every terminal to every other, following the
// first option the routing gives at every router reaches the
// destination; an oblivious routing gives exactly one option at every
// step and an adaptive one more somewhere; where the routing's hop
// counts are known, the walk is that long.
func TestRoutingWalks(t *testing.T) {
	data, err := os.ReadFile("testdata/tables/dor-3x3.json")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := ParseTable(data)
	if err != nil {
		t.Fatal(err)
	}
	nets := map[string]string{RouteDOR: "torus:3x3", RouteDirbit: "torus:4x3", RouteAdaptive: "torus:4x4", RouteTable: "torus:3x3",
		RouteMinhop: "fattree:k=4,n=3", RouteUpDown: "torus:4x4", RouteValiant: "dragonfly:a=4,p=2,h=2,g=5", RouteUGAL: "dragonfly:a=4,p=2,h=2,g=5"}
	for _, a := range routings {
		cfg := DefaultConfig()
		cfg.Routing, cfg.VCs = a.name, 3
		if a.table {
			cfg.Table = tab
		}
		n := mustNet(t, nets[a.name], cfg)
		c, err := NewCore(n, cfg)
		if err != nil {
			t.Fatal(err)
		}
		multi := walkAll(t, c, a)
		if multi != a.adaptive {
			t.Errorf("%s on %s: several options somewhere: %v, adaptive: %v", a.name, nets[a.name], multi, a.adaptive)
		}
	}
}

// walkAll walks every pair of terminals as TestRoutingWalks says and
// reports whether any step offered more than one option.
func walkAll(t *testing.T, c *Core, a *routingAlgo) bool {
	t.Helper()
	n := c.n
	w := &c.workers[0]
	hops := n.hopFunc()
	multi := false
	for s := range n.terms {
		for d := range n.terms {
			if s == d {
				continue
			}
			f := c.headFlit(&c.terms[s], s, srcPkt{dst: n.terms[d]})
			r, steps := int(n.terms[s]), 0
			for r != int(f.dst) {
				cs := c.route(w, r, &f)
				if len(cs) == 0 || steps > 64 {
					t.Fatalf("%s: %d→%d stuck at %s after %d hops", a.name, s, d, n.g.NodeName(r), steps)
				}
				if len(cs) > 1 {
					multi = true
					if !a.adaptive {
						t.Fatalf("%s: %d options at %s", a.name, len(cs), n.g.NodeName(r))
					}
				}
				cd := cs[0]
				f.step++
				f.lastDir, f.flags, f.vc = cd.dir, f.flags|cd.set, uint8(cd.lo)
				if n.gpGlobal[cd.gp] {
					f.cls++
				}
				r = int(n.gpPeerN[cd.gp])
				steps++
			}
			if a.knownHops && steps != hops(s, d) {
				t.Errorf("%s: %d→%d in %d hops, its hop count is %d", a.name, s, d, steps, hops(s, d))
			}
		}
	}
	return multi
}
