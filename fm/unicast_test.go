package fm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
)

// dumpOf is the dump a full recomputation gives on g (compact for sssp,
// which the test below runs with UnicastConfig.Compact).
func dumpOf(t *testing.T, g *topology.Graph, engine string) []byte {
	t.Helper()
	f, err := unicast.NewFabric(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := unicast.Route(context.Background(), f, unicast.Options{Engine: engine, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	write := res.Tables.WriteDump
	if engine == "sssp" {
		write = res.Tables.WriteCompactDump
	}
	if err := write(&b); err != nil {
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
	for _, engine := range []string{"ftree", "minhop", "updn", "sssp"} {
		dir := t.TempDir()
		out := filepath.Join(dir, "lfts.dump")
		s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "fattree:k=4,n=3", NewRouting: AngaraRouting("angara*"),
			Unicast: &UnicastConfig{Engine: engine, LFTOut: out, Compact: engine == "sssp"}})
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
		res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link})
		if err != nil || res.Unicast == nil || !res.Unicast.Written || !res.Unicast.Reachable {
			t.Fatalf("%s: failure: %v %+v", engine, err, res)
		}
		wantMode := map[string]string{"ftree": "incremental", "sssp": "repair"}[engine]
		if wantMode == "" {
			wantMode = "full"
		}
		if u := res.Unicast; u.Mode != wantMode || u.Exact != (wantMode != "repair") || u.Rebalancing != (wantMode == "repair") ||
			u.Rerouted == 0 || u.Rerouted > u.Destinations || u.Changed == 0 || u.DumpBytes == 0 {
			t.Fatalf("%s: status after the failure: %+v", engine, u)
		}
		if engine == "sssp" {
			// The repaired dump is valid at once; the rebalance
			// replaces it with a full computation's.
			checkDumpDelivers(t, s.g, out)
			waitExact(t, s)
		}
		after, _ := os.ReadFile(out)
		if bytes.Equal(after, first) || !bytes.Equal(after, dumpOf(t, s.g, engine)) {
			t.Fatalf("%s: the dump after the failure is not a full recomputation on the failed fabric", engine)
		}
		if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link, Repair: true}); err != nil {
			t.Fatal(err)
		}
		waitExact(t, s)
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
		var last *client.FailureResult
		for _, c := range s.g.Out(host) {
			if last, err = s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: s.g.LinkName(int(c) >> 1)}); err != nil {
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

// waitExact waits until the dump is a full computation's (a rebalance
// after a repair has finished).
func waitExact(t *testing.T, s *Service) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		u := s.Unicast()
		if u.Exact && !u.Rebalancing {
			return
		}
		if u.Error != "" || time.Now().After(deadline) {
			t.Fatalf("no exact tables: %+v", u)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkDumpDelivers reads the dump at path back for g and audits it:
// every pair of live end ports is delivered.
func checkDumpDelivers(t *testing.T, g *topology.Graph, path string) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	tb, err := unicast.ReadDump(fh, path, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := unicast.Audit(tb, unicast.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Reachable || rep.Loops != 0 {
		t.Fatalf("the dump does not deliver every pair: %s", rep.FirstUnreachable)
	}
}

// failAfter passes n bytes on, then fails as a full disk does.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		f.w.Write(p[:f.n])
		f.n = 0
		return 0, syscall.ENOSPC
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// KeepRepairs: the repaired tables stay; no rebalance follows.
func TestUnicastKeepRepairs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "lfts.dump")
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "fattree:k=4,n=3", NewRouting: AngaraRouting("angara*"),
		Unicast: &UnicastConfig{Engine: "sssp", LFTOut: out, KeepRepairs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	link := ""
	for l := 0; l < s.g.NumLinks() && link == ""; l++ {
		if lk := s.g.Link(l); s.g.Kind(int(lk.A)) == topology.Switch && s.g.Kind(int(lk.B)) == topology.Switch {
			link = s.g.LinkName(l)
		}
	}
	res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link})
	if err != nil {
		t.Fatal(err)
	}
	repaired, _ := os.ReadFile(out)
	time.Sleep(200 * time.Millisecond)
	if u := s.Unicast(); u.Mode != "repair" || u.Exact || u.Rebalancing || res.Unicast.Rebalancing {
		t.Fatalf("status: %+v", u)
	}
	if now, _ := os.ReadFile(out); !bytes.Equal(now, repaired) {
		t.Fatal("the repaired dump was replaced")
	}
	checkDumpDelivers(t, s.g, out)
}

// waitHook waits until the hook has run for every dump written so far.
func waitHook(s *Service) {
	h := &s.hook
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.pending || h.running {
		h.cond.Wait()
	}
}

// TestUnicastDumpNotWritten: when the dump cannot be written (the disk
// fills midway) the change still lands, the status says why, the previous
// dump is left whole and no temporary file stays; the next change writes
// again. The hook runs after every replacement and its failure (OpenSM
// not running) is reported.
func TestUnicastDumpNotWritten(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "lfts.dump")
	var mu sync.Mutex // the hook runs in the service's goroutine
	var hooks []string
	hookErr := error(nil)
	calls := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hooks)
	}
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "fattree:k=4,n=3", NewRouting: AngaraRouting("angara*"),
		Unicast: &UnicastConfig{Engine: "ftree", LFTOut: out, Hook: func(_ context.Context, path string) error {
			mu.Lock()
			defer mu.Unlock()
			hooks = append(hooks, path)
			return hookErr
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, _ := os.ReadFile(out)
	waitHook(s)
	if hooks := calls(); len(hooks) != 1 || hooks[0] != out {
		t.Fatalf("hook calls at start: %v", hooks)
	}
	if u := s.Unicast(); u.HookPending || u.HookRan == nil || u.HookError != "" {
		t.Fatalf("hook status after the start: %+v", u)
	}
	s.writeFile = func(path string, write func(io.Writer) error) error {
		return atomicfile.Write(path, func(w io.Writer) error { return write(&failAfter{w: w, n: 1000}) })
	}
	var links []string
	for l := 0; l < s.g.NumLinks() && len(links) < 2; l++ {
		if lk := s.g.Link(l); s.g.Kind(int(lk.A)) == topology.Switch && s.g.Kind(int(lk.B)) == topology.Switch {
			links = append(links, s.g.LinkName(l))
		}
	}
	res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: links[0]})
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Unicast; u.Written || !strings.Contains(u.Error, "no space left") || !strings.Contains(u.Error, "left in place") {
		t.Fatalf("status after a failed write: %+v", u)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
		t.Fatal("a failed write changed the dump")
	}
	if entries, _ := os.ReadDir(dir); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), ".icn-") }) {
		t.Fatal("a temporary file stayed")
	}
	if u := res.Unicast; u.HookPending {
		t.Fatalf("a hook run is pending without a new dump: %+v", u)
	}
	waitHook(s)
	if hooks := calls(); len(hooks) != 1 {
		t.Fatalf("the hook ran without a new dump: %v", hooks)
	}
	// The disk has room again; OpenSM is not running.
	s.writeFile = nil
	mu.Lock()
	hookErr = fmt.Errorf("kill: no process found")
	mu.Unlock()
	res, err = s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: links[1]})
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Unicast; !u.Written {
		t.Fatalf("status after the next change: %+v", u)
	}
	waitHook(s)
	if u, hooks := s.Unicast(), calls(); !strings.Contains(u.HookError, "no process") || u.HookPending || len(hooks) != 2 {
		t.Fatalf("status after the next change's hook: %+v (hooks %v)", u, hooks)
	}
	if now, _ := os.ReadFile(out); !bytes.Equal(now, dumpOf(t, s.g, "ftree")) {
		t.Fatal("the next change did not write the tables of the fabric")
	}
}
