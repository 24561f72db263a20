package unicast

import (
	"testing"
)

// Routes do not depend on how the LIDs are numbered: the same fabric with
// icn's numbering and with a shuffled one gets the same output port for
// every (switch, destination port) under every balancing engine.
func TestRoutesIndependentOfLIDNumbering(t *testing.T) {
	for _, spec := range []string{"fattree:m=4,n=3", "dragonfly:a=4,p=2,h=2"} {
		gen := mustParse(t, spec)
		f1, err := NewFabric(gen, nil)
		if err != nil {
			t.Fatal(err)
		}
		g2, ann2 := importIBNet(t, exportIBNet(t, withShuffledLIDs(t, gen, 5)), spec)
		f2, err := NewFabric(g2, ann2)
		if err != nil {
			t.Fatal(err)
		}
		renumbered := 0
		for i, tm := range f1.Terminals() {
			if f2.Terminals()[i].LID != tm.LID {
				renumbered++
			}
		}
		if renumbered == 0 {
			t.Fatalf("%s: the shuffled numbering equals icn's; the test shows nothing", spec)
		}
		for _, engine := range []string{"minhop", "updn", "sssp", "dfsssp"} {
			t1, t2 := route(t, f1, engine, 0).Tables, route(t, f2, engine, 0).Tables
			for s := 0; s < f1.NumSwitches(); s++ {
				for i, tm := range f1.Terminals() {
					if p1, p2 := t1.Port(s, tm.LID), t2.Port(s, f2.Terminals()[i].LID); p1 != p2 {
						t.Fatalf("%s %s: switch %s sends %s[%d] to port %d with icn's LIDs, %d with shuffled ones",
							spec, engine, gen.NodeName(f1.Switch(s)), gen.NodeName(tm.Node), tm.Port, p1, p2)
					}
				}
			}
		}
	}
}

// The engines keep the better of the two destination orders: the busiest
// link of the result is the smaller of the two orders' busiest links, as
// the audit counts them.
func TestBestDestinationOrderKept(t *testing.T) {
	for _, spec := range []string{"fattree:m=4,n=3", "dragonfly:a=4,p=2,h=2", "torus:4x4:endpoints=2"} {
		f := fabric(t, spec)
		res := route(t, f, "sssp", 0)
		best := int64(-1)
		for _, ord := range destOrders {
			tb, err := routeSSSP(f, Options{Engine: "sssp", Progress: func(int) {}}, ord.list(f))
			if err != nil {
				t.Fatal(err)
			}
			r := audit(t, tb)
			if best < 0 || r.MaxLinkRoutes < best {
				best = r.MaxLinkRoutes
			}
			if ord.name == res.Order && r.MaxLinkRoutes != audit(t, res.Tables).MaxLinkRoutes {
				t.Errorf("%s: order %s gives %d routes on the busiest link, the engine's result %d", spec, ord.name, r.MaxLinkRoutes, audit(t, res.Tables).MaxLinkRoutes)
			}
		}
		if got := audit(t, res.Tables).MaxLinkRoutes; got != best {
			t.Errorf("%s: engine kept %d routes on the busiest link, the better order gives %d", spec, got, best)
		}
	}
}
