package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
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
// ibsim: a running OpenSM loads the service's dump (-R file -U); a spine
// link is unlinked in ibsim; icn fabric watch sees it in ibnetdiscover's
// output and reports it; the service rewrites the dump; the watch's
// --on-change sends OpenSM SIGHUP, and OpenSM installs tables that deliver
// every host pair over working links (audited from OpenSM's own
// opensm-lfts.dump); after ReLink the first dump comes back byte for byte
// and OpenSM installs it again. It logs the time from the unlink to OpenSM having
// installed icn's tables next to OpenSM's own ftree sweep of the same
// event.
func TestWatchKeepsOpenSMCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OpenSM")
	}
	sim := ibsimtest.New(t)
	dir := t.TempDir()
	// ICN_WATCH_FABRIC measures a larger fat tree (fattree:m=36,n=2 is
	// the 648-host one of docs/unicast.md); CI runs the small one.
	spec := "fattree:m=4,n=2"
	if s := os.Getenv("ICN_WATCH_FABRIC"); s != "" {
		spec = s
	}
	gen, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := writeIBNetExport(&export, gen, spec); err != nil {
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

	// OpenSM runs as a site runs it, on the file engine; --on-change
	// sends it SIGHUP, on which OpenSM 3.3 sweeps again and loads the
	// dump anew.
	osmDir := filepath.Join(dir, "osm")
	os.MkdirAll(osmDir, 0o755)
	osm := exec.Command("opensm", "-D", "0x43", "-f", filepath.Join(osmDir, "osm.log"), "--dump_files_dir", osmDir, "-R", "file", "-U", lft)
	osm.Env = sim.Env(osmDir)
	osm.Dir = osmDir // libumad2sim leaves sys-PID/ in the working directory
	if err := osm.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { osm.Process.Kill(); osm.Wait() }()
	ann, _ := unicast.AnnotationsOf("file:" + net)
	// Every host pair delivered (a switch's own LID may be cut off from
	// a leaf whose only link to it failed: management traffic only).
	hostsOK := func(r *unicast.Report) bool {
		return r.UnreachablePairs == r.UnreachableSwitch && r.Misdelivered == 0 && r.Loops == 0
	}
	// waitInstalled polls OpenSM's own dump of what it installed until
	// it delivers every host pair on fabric g (and, if want is set, equals
	// want, or differs from old), and returns the seconds since t0.
	waitInstalled := func(what string, g *topology.Graph, t0 time.Time, want, old []byte) float64 {
		t.Helper()
		var last string
		for deadline := time.Now().Add(120 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			data, err := os.ReadFile(filepath.Join(osmDir, "opensm-lfts.dump"))
			if err != nil {
				last = err.Error()
				continue
			}
			if want != nil && !bytes.Equal(data, want) || old != nil && bytes.Equal(data, old) {
				last = "not the expected tables yet"
				continue
			}
			tb, err := unicast.ReadDump(bytes.NewReader(data), "opensm-lfts.dump", g, ann)
			if err != nil {
				last = err.Error()
				continue
			}
			rep, err := unicast.Audit(tb, unicast.AuditOptions{})
			if err == nil && hostsOK(rep) {
				return time.Since(t0).Seconds()
			}
			if err == nil {
				last = rep.FirstUnreachable
			}
		}
		t.Fatalf("%s: OpenSM never installed tables that deliver every host pair: %s", what, last)
		return 0
	}
	waitInstalled("start", svc.Graph(), time.Now(), nil, nil)
	startDump, _ := os.ReadFile(filepath.Join(osmDir, "opensm-lfts.dump"))
	shell := func(env []string) string {
		var b strings.Builder
		for _, kv := range env {
			for _, k := range []string{"IBSIM_SOCKNAME=", "SIM_HOST=", "LD_PRELOAD="} {
				if strings.HasPrefix(kv, k) {
					b.WriteString(kv + " ")
				}
			}
		}
		return "cd " + dir + " && " + b.String() + "ibnetdiscover"
	}
	var log bytes.Buffer
	o := fabricWatchOptions{fabric: net, discover: shell(sim.Env(dir)), interval: time.Second, once: true,
		onChange: fmt.Sprintf("kill -HUP %d", osm.Process.Pid)}
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
	icnSecs := waitInstalled("after the unlink", svc.Graph(), t0, nil, startDump)
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
	waitInstalled("after the ReLink", svc.Graph(), time.Now(), startDump, nil)
	t.Logf("%s: unlink → the running OpenSM installed icn's tables: %.2f s (discovery, report, re-route, dump, SIGHUP, sweep); a one-shot OpenSM ftree sweep of the same event: %.2f s", spec, icnSecs, ownSecs)
}

// A dump over 1 GB needs --force; the refusal gives its size.
func TestCheckDumpSize(t *testing.T) {
	if err := checkDumpSize("x", lftForceBytes, false); err != nil {
		t.Fatal(err)
	}
	err := checkDumpSize("x", 2273778725, false)
	if err == nil || !strings.Contains(err.Error(), "2.3 GB") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("refusal: %v", err)
	}
	if err := checkDumpSize("x", 2273778725, true); err != nil {
		t.Fatal(err)
	}
}

// A discovery that is not the service's fabric (or fails) is refused
// with one message and reports nothing.
func TestWatchRefusesForeignDiscovery(t *testing.T) {
	dir := t.TempDir()
	write := func(spec string) string {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := writeIBNetExport(&b, g, spec); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, strings.NewReplacer(":", "_", ",", "_", "=", "_").Replace(spec)+".ibnet")
		os.WriteFile(p, b.Bytes(), 0o644)
		return p
	}
	own, other := write("fattree:m=4,n=2"), write("dragonfly:a=4,p=2,h=2")
	base, err := topology.Parse("file:" + own)
	if err != nil {
		t.Fatal(err)
	}
	for _, discover := range []string{"cat " + other, "false", "echo garbage"} {
		o := fabricWatchOptions{fabric: own, discover: discover, interval: time.Second, once: true}
		o.cl = client{server: "http://127.0.0.1:1"} // never reached
		n, err := watchRound(context.Background(), o, base, &bytes.Buffer{})
		if err == nil || n != 0 || strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Fatalf("discovery %q: %d changes, %v", discover, n, err)
		}
	}
}
