package fm

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
)

// dumpOf is the dump a full recomputation gives on g.
func dumpOf(t *testing.T, g *topology.Graph, engine string) []byte {
	t.Helper()
	f, err := unicast.NewFabric(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := unicast.Route(f, unicast.Options{Engine: engine, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.Tables.WriteDump(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestUnicastTablesFollowFailures: a service on a switched fabric keeps
// OpenSM's dump of its tables current: written at start, rewritten after
// a failure and after the repair, each time equal to a full
// recomputation on the fabric of the moment; a failure that cuts a host
// off names it; a start that cannot route is refused.
func TestUnicastTablesFollowFailures(t *testing.T) {
	for _, engine := range []string{"ftree", "minhop", "updn"} {
		dir := t.TempDir()
		out := filepath.Join(dir, "lfts.dump")
		s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "fattree:k=4,n=3", NewRouting: AngaraRouting("angara*"),
			Unicast: &UnicastConfig{Engine: engine, LFTOut: out}})
		if err != nil {
			t.Fatal(err)
		}
		first, _ := os.ReadFile(out)
		if !bytes.Equal(first, dumpOf(t, s.g, engine)) || !s.Unicast().Written {
			t.Fatalf("%s: the dump at start is not the tables of the fabric", engine)
		}
		// A link between two switches.
		link := ""
		for l := 0; l < s.g.NumLinks() && link == ""; l++ {
			lk := s.g.Link(l)
			if s.g.Kind(int(lk.A)) == topology.Switch && s.g.Kind(int(lk.B)) == topology.Switch {
				link = s.g.LinkName(l)
			}
		}
		res, err := s.ChangeFailure("t", FailureChange{Link: link})
		if err != nil || res.Unicast == nil || !res.Unicast.Written || !res.Unicast.Reachable {
			t.Fatalf("%s: failure: %v %+v", engine, err, res)
		}
		after, _ := os.ReadFile(out)
		if bytes.Equal(after, first) || !bytes.Equal(after, dumpOf(t, s.g, engine)) {
			t.Fatalf("%s: the dump after the failure is not a full recomputation on the failed fabric", engine)
		}
		if _, err := s.ChangeFailure("t", FailureChange{Link: link, Repair: true}); err != nil {
			t.Fatal(err)
		}
		if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
			t.Fatalf("%s: the dump after the repair differs from the first", engine)
		}
		// Every link of one host fails: the host is named.
		host := -1
		for v := 0; v < s.g.NumNodes() && host < 0; v++ {
			if s.g.Kind(v) != topology.Switch {
				host = v
			}
		}
		var last *FailureResult
		for _, c := range s.g.Out(host) {
			if last, err = s.ChangeFailure("t", FailureChange{Link: s.g.LinkName(int(c) >> 1)}); err != nil {
				t.Fatal(err)
			}
		}
		if last.Unicast == nil || !slices.Contains(last.Unicast.Disconnected, s.g.NodeName(host)) || last.Unicast.Reachable {
			t.Fatalf("%s: host %s cut off, status %+v", engine, s.g.NodeName(host), last.Unicast)
		}
		s.Close()
	}
	// A start that cannot route is refused, naming the problem.
	dir := t.TempDir()
	_, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "fattree:k=4,n=3", NewRouting: AngaraRouting("angara*"),
		Unicast: &UnicastConfig{Engine: "nosuch", LFTOut: filepath.Join(dir, "x.dump")}})
	if err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("unknown engine: %v", err)
	}
}
