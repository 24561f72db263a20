package unicast

import (
	"fmt"
	"strings"
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
			compareByName(t, spec+" "+engine, t1, t2)
		}
	}
}

// Routes do not depend on the order the fabric file lists the nodes in
// (ibnetdiscover lists them in discovery order).
func TestRoutesIndependentOfFileOrder(t *testing.T) {
	for _, spec := range []string{"fattree:m=4,n=3", "dragonfly:a=4,p=2,h=2"} {
		text := exportIBNet(t, mustParse(t, spec))
		blocks := strings.Split(text, "\n\n")
		for i, j := 1, len(blocks)-1; i < j; i, j = i+1, j-1 {
			blocks[i], blocks[j] = blocks[j], blocks[i]
		}
		g1, ann1 := importIBNet(t, text, spec)
		g2, ann2 := importIBNet(t, strings.Join(blocks, "\n\n")+"\n", spec)
		if g1.NodeName(0) == g2.NodeName(0) {
			t.Fatalf("%s: reversing the file changed nothing", spec)
		}
		f1, err1 := NewFabric(g1, ann1)
		f2, err2 := NewFabric(g2, ann2)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for _, engine := range []string{"minhop", "updn", "sssp", "dfsssp"} {
			compareByName(t, spec+" reversed "+engine, route(t, f1, engine, 0).Tables, route(t, f2, engine, 0).Tables)
		}
	}
}

// compareByName checks that two table sets of one fabric (possibly
// numbered and listed differently) send every end port's LID out of the
// same port of every switch, matching switches and end ports by name.
func compareByName(t *testing.T, name string, t1, t2 *Tables) {
	t.Helper()
	f1, f2 := t1.F, t2.F
	g1, g2 := f1.G, f2.G
	lid2 := map[string]int{}
	for _, tm := range f2.Terminals() {
		lid2[fmt.Sprintf("%s[%d]", g2.NodeName(tm.Node), tm.Port)] = tm.LID
	}
	for s := 0; s < f1.NumSwitches(); s++ {
		s2 := f2.SwitchIndex(g2.NodeByName(g1.NodeName(f1.Switch(s))))
		for _, tm := range f1.Terminals() {
			who := fmt.Sprintf("%s[%d]", g1.NodeName(tm.Node), tm.Port)
			if p1, p2 := t1.Port(s, tm.LID), t2.Port(s2, lid2[who]); p1 != p2 {
				t.Fatalf("%s: switch %s sends %s to port %d in one, %d in the other", name, g1.NodeName(f1.Switch(s)), who, p1, p2)
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
