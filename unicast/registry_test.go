package unicast

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// capsFabric is a fabric each engine's Fabrics capability promises to
// route: a torus of switches (its shortest paths close dependency cycles)
// for the engines of any fabric and of meshes and tori, a fat tree for
// ftree.
var capsFabric = map[string]string{
	"any":             "torus:6x6:endpoints=1",
	"meshes and tori": "torus:6x6:endpoints=1",
	"fat trees":       "fattree:k=4,n=3",
}

// TestEngineCaps checks every registered engine against what its Caps
// say: on a fabric of its kind, the destination order is reported exactly
// when it balances, paths leave lane 0 only when it uses lanes (and on a
// torus it needs them when it has them), the audit finds the tables
// deadlock-free when it promises so (and a cycle on the torus when it
// does not), roots are taken only when it takes them, and a Rerouter's
// update after a link failure is of the kind Caps.Update names.
func TestEngineCaps(t *testing.T) {
	if len(Engines) == 0 {
		t.Fatal("no engines registered")
	}
	for _, e := range Engines {
		t.Run(e.Name, func(t *testing.T) {
			spec, ok := capsFabric[e.Caps.Fabrics]
			if !ok {
				t.Fatalf("fabrics %q: not one of any, fat trees, meshes and tori", e.Caps.Fabrics)
			}
			if e.route == nil || (e.update == nil) != (e.Caps.Update == "full") {
				t.Fatalf("route set %v, update set %v, Caps.Update %q", e.route != nil, e.update != nil, e.Caps.Update)
			}
			if got, err := LookupEngine(e.Name); err != nil || got.Name != e.Name {
				t.Fatalf("LookupEngine(%q) = %v, %v", e.Name, got, err)
			}
			f := fabric(t, spec)
			res := route(t, f, e.Name, 0)
			if res.Tables.Engine != e.Name {
				t.Errorf("tables name engine %q", res.Tables.Engine)
			}
			if (res.Order != "") != e.Caps.Balances {
				t.Errorf("order %q, balances %v", res.Order, e.Caps.Balances)
			}
			r := audit(t, res.Tables)
			if !e.Caps.Lanes && (res.LanesNeeded != 1 || r.Lanes != 1) {
				t.Errorf("no lanes in Caps, but %d needed, %d in the tables", res.LanesNeeded, r.Lanes)
			}
			onTorus := strings.HasPrefix(spec, "torus:")
			if e.Caps.Lanes && onTorus && res.LanesNeeded < 2 {
				t.Errorf("lanes in Caps, but %d needed on %s", res.LanesNeeded, spec)
			}
			if e.Caps.DeadlockFree != r.DeadlockFree && (e.Caps.DeadlockFree || onTorus) {
				t.Errorf("deadlock-free %v in Caps, %v in the audit (cycle %v)", e.Caps.DeadlockFree, r.DeadlockFree, r.Cycle)
			}
			if !r.Reachable {
				t.Errorf("unreachable pairs: %d", r.UnreachablePairs)
			}
			root := f.Switch(0)
			withRoots, err := Route(context.Background(), f, Options{Engine: e.Name, Roots: []int{root}})
			switch {
			case e.Caps.Roots && (err != nil || !slices.Equal(withRoots.Roots, []int{root})):
				t.Errorf("roots in Caps, but roots [%d] give %v", root, err)
			case !e.Caps.Roots && (err == nil || !strings.Contains(err.Error(), "roots apply to")):
				t.Errorf("no roots in Caps, but roots give %v", err)
			}
			checkUpdateMode(t, e, spec)
		})
	}
}

// checkUpdateMode fails the first switch-to-switch link of spec under a
// Rerouter with e and checks the update's mode is e.Caps.Update.
func checkUpdateMode(t *testing.T, e Engine, spec string) {
	t.Helper()
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := NewRerouter(context.Background(), g, nil, Options{Engine: e.Name})
	if err != nil {
		t.Fatal(err)
	}
	link := -1
	for l := range g.NumLinks() {
		if lk := g.Link(l); g.Kind(int(lk.A)) == topology.Switch && g.Kind(int(lk.B)) == topology.Switch {
			link = l
			break
		}
	}
	h, err := g.WithFaults([]int{link}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := rr.Update(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != e.Caps.Update || st.Exact != (e.Caps.Update != "repair") {
		t.Errorf("update after a link failure: mode %q exact %v, Caps.Update %q", st.Mode, st.Exact, e.Caps.Update)
	}
}

// TestUnknownEngine: an unknown name is refused on one line that names
// every registered engine, by Route and by NewRerouter alike.
func TestUnknownEngine(t *testing.T) {
	f := fabric(t, "fattree:k=4,n=3")
	_, err1 := Route(context.Background(), f, Options{Engine: "nosuch"})
	_, err2 := NewRerouter(context.Background(), f.G, nil, Options{Engine: "nosuch"})
	for _, err := range []error{err1, err2} {
		if err == nil {
			t.Fatal("unknown engine accepted")
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, `"nosuch"`) {
			t.Errorf("error %q: want one line naming the engine", msg)
		}
		for _, name := range EngineNames() {
			if !strings.Contains(msg, name) {
				t.Errorf("error %q does not name %s", msg, name)
			}
		}
	}
}

// TestEngineDocs: docs/unicast.md describes the registered engines, in
// the registry's order, and its table of updates after a change puts each
// under the kind of update its Caps name.
func TestEngineDocs(t *testing.T) {
	data, err := os.ReadFile("../docs/unicast.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	row := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\|")
	var listed []string
	for _, m := range row.FindAllStringSubmatch(doc[strings.Index(doc, "## Engines"):], -1) {
		listed = append(listed, m[1])
	}
	if want := EngineNames(); !slices.Equal(listed, want) {
		t.Errorf("docs/unicast.md's engine table lists %v, the registry %v", listed, want)
	}
	at := strings.Index(doc, "### After a change")
	if at < 0 {
		t.Fatal("docs/unicast.md has no section After a change")
	}
	modes := map[string]string{}
	for _, line := range strings.Split(doc[at:], "\n")[4:] {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			break
		}
		mode := strings.TrimSpace(strings.SplitN(strings.TrimSpace(cells[2]), ":", 2)[0])
		for _, name := range strings.Split(cells[1], ",") {
			modes[strings.TrimSpace(name)] = mode
		}
	}
	for _, e := range Engines {
		want := e.Caps.Update
		if want == "full" {
			want = "full computation"
		}
		if modes[e.Name] != want {
			t.Errorf("docs/unicast.md: %s's update is %q, Caps.Update %q", e.Name, modes[e.Name], e.Caps.Update)
		}
	}
}
