package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/internal/ibsimtest"
	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
)

// TestWatchKeepsOpenSMCurrent is the service's unicast loop end to end on
// ibsim: OpenSM loads the service's dump (-R file -U); a spine link is
// unlinked in ibsim; icn fabric watch sees it in ibnetdiscover's output
// and reports it; the service rewrites the dump; OpenSM's next sweep
// installs tables that deliver every pair over working links (audited
// from OpenSM's own opensm-lfts.dump); after ReLink the first dump comes
// back byte for byte. It logs the time from the unlink to OpenSM having
// installed icn's tables next to OpenSM's own ftree sweep of the same
// event.
func TestWatchKeepsOpenSMCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OpenSM")
	}
	sim := ibsimtest.New(t)
	dir := t.TempDir()
	gen, err := topology.Parse("fattree:m=4,n=2")
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := writeIBNetExport(&export, gen, "fattree:m=4,n=2"); err != nil {
		t.Fatal(err)
	}
	net := filepath.Join(dir, "fabric.ibnet")
	os.WriteFile(net, export.Bytes(), 0o644)
	sim.Start(net, "h0")
	defer sim.Stop()

	lft := filepath.Join(dir, "icn.dump")
	svc, tok, err := fm.Open(fm.Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "file:" + net, NewRouting: fm.AngaraRouting("angara*"),
		Unicast: &fm.UnicastConfig{Engine: "ftree", LFTOut: lft}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	srv := httptest.NewServer(svc.Handler(fm.HandlerOptions{}))
	defer srv.Close()
	first, _ := os.ReadFile(lft)

	installed := func(name string, g *topology.Graph) *unicast.Report {
		t.Helper()
		d := filepath.Join(dir, name)
		sim.OpenSM(d, "-R", "file", "-U", lft)
		data, err := os.ReadFile(filepath.Join(d, "opensm-lfts.dump"))
		if err != nil {
			t.Fatalf("%s: OpenSM wrote no dump: %v", name, err)
		}
		ann, _ := unicast.AnnotationsOf("file:" + net)
		tb, err := unicast.ReadDump(bytes.NewReader(data), "opensm-lfts.dump", g, ann)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := unicast.Audit(tb, unicast.AuditOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	// Every host pair delivered (a switch's own LID may be cut off from
	// a leaf whose only link to it failed: management traffic only).
	hostsOK := func(r *unicast.Report) bool {
		return r.UnreachablePairs == r.UnreachableSwitch && r.Misdelivered == 0 && r.Loops == 0
	}
	if r := installed("start", svc.Graph()); !r.Reachable || r.Misdelivered != 0 {
		t.Fatalf("tables at start: reachable %v (%s)", r.Reachable, r.FirstUnreachable)
	}
	shell := func(env []string) string {
		var b strings.Builder
		for _, kv := range env {
			for _, k := range []string{"IBSIM_SOCKNAME=", "SIM_HOST=", "LD_PRELOAD="} {
				if strings.HasPrefix(kv, k) {
					b.WriteString(kv + " ")
				}
			}
		}
		return b.String() + "ibnetdiscover"
	}
	var log bytes.Buffer
	o := fabricWatchOptions{fabric: net, discover: shell(sim.Env(dir)), interval: time.Second, once: true}
	o.cl = client{server: srv.URL, tokenFile: filepath.Join(dir, "tok")}
	os.WriteFile(o.cl.tokenFile, []byte(tok), 0o600)

	// A spine link goes.
	t0 := time.Now()
	sim.Console(`Unlink "L2-0"[1]`)
	if err := runFabricWatch(context.Background(), o, &log); err != nil {
		t.Fatal(err)
	}
	if len(svc.Fabric().FailedLinks) != 1 || !strings.Contains(log.String(), "failed") {
		t.Fatalf("watch reported: %s (failed links %v)", log.String(), svc.Fabric().FailedLinks)
	}
	r := installed("after", svc.Graph())
	icnSecs := time.Since(t0).Seconds()
	if !hostsOK(r) {
		t.Fatalf("OpenSM installed tables that do not deliver every host pair after the failure: %d unreachable (%d to switches): %s", r.UnreachablePairs, r.UnreachableSwitch, r.FirstUnreachable)
	}
	t1 := time.Now()
	sim.OpenSM(filepath.Join(dir, "own"), "-R", "ftree")
	ownSecs := time.Since(t1).Seconds()
	// And back.
	sim.Console(`ReLink "L2-0"[1]`)
	log.Reset()
	if err := runFabricWatch(context.Background(), o, &log); err != nil {
		t.Fatal(err)
	}
	if len(svc.Fabric().FailedLinks) != 0 || !strings.Contains(log.String(), "repaired") {
		t.Fatalf("watch after ReLink: %s", log.String())
	}
	if again, _ := os.ReadFile(lft); !bytes.Equal(again, first) {
		t.Fatal("the dump after ReLink differs from the first")
	}
	if r := installed("back", svc.Graph()); !r.Reachable {
		t.Fatal("tables after ReLink do not deliver every pair")
	}
	t.Logf("unlink → OpenSM installed icn's tables: %.2f s (discovery, report, re-route, dump, one OpenSM sweep); OpenSM's own ftree sweep of the same fabric: %.2f s", icnSecs, ownSecs)
}
