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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/fm/api"
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
	net := exportIBNet(t, dir, spec)
	sim.Start(net, "h0")
	defer sim.Stop()

	lft := filepath.Join(dir, "icn.dump")
	svc, tok, err := fm.Open(fm.Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "file:" + net, NewRouting: fm.AngaraRouting("angara*"),
		Unicast: &fm.UnicastConfig{Engine: "ftree", LFTOut: lft, Compact: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	srv := httptest.NewServer(api.New(svc, api.Options{}))
	defer srv.Close()
	first, _ := os.ReadFile(lft)

	// OpenSM runs as a site runs it, on the file engine; --on-change
	// sends it SIGHUP, on which OpenSM 3.3 sweeps again and loads the
	// dump anew.
	// It starts with OpenSM's default logging (buffered: no -d2).
	osmDir := filepath.Join(dir, "osm")
	os.MkdirAll(osmDir, 0o755)
	startOSM := func(extra ...string) *exec.Cmd {
		args := append([]string{"-D", "0x43", "-f", filepath.Join(osmDir, "osm.log"), "--dump_files_dir", osmDir, "-R", "file", "-U", lft}, extra...)
		c := exec.Command("opensm", args...)
		c.Env = sim.Env(osmDir)
		c.Dir = osmDir // libumad2sim leaves sys-PID/ in the working directory
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	osm := startOSM()
	defer func() { osm.Process.Kill(); osm.Wait() }()
	ann, _ := unicast.AnnotationsOf("file:" + net)
	// Every host pair delivered (a switch's own LID may be cut off from
	// a leaf whose only link to it failed: management traffic only).
	hostsOK := func(r *unicast.Report) bool {
		return r.UnreachablePairs == r.UnreachableSwitch && r.Misdelivered == 0 && r.Loops == 0
	}
	// waitInstalled polls OpenSM's own dump of what it installed until
	// it delivers every host pair on fabric g (and, if want is set, equals
	// want, or differs from old), and returns the seconds from t0 to when
	// OpenSM wrote that dump (its modification time: the poll and the
	// audit are not counted).
	waitInstalledIn := func(osmDir, what string, g *topology.Graph, t0 time.Time, want, old []byte) float64 {
		t.Helper()
		var last string
		wait := 120 * time.Second
		if os.Getenv("ICN_WATCH_FABRIC") != "" {
			wait = 5 * time.Minute
		}
		var seen time.Time
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			path := filepath.Join(osmDir, "opensm-lfts.dump")
			fi, err := os.Stat(path)
			if err != nil || fi.ModTime().Equal(seen) {
				continue
			}
			data, err := os.ReadFile(path)
			if err != nil {
				last = err.Error()
				continue
			}
			if fi2, err := os.Stat(path); err != nil || !fi2.ModTime().Equal(fi.ModTime()) {
				continue // being rewritten
			}
			seen = fi.ModTime()
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
				return seen.Sub(t0).Seconds()
			}
			if err == nil {
				last = rep.FirstUnreachable
			}
		}
		t.Fatalf("%s: OpenSM never installed tables that deliver every host pair: %s", what, last)
		return 0
	}
	waitInstalled := func(what string, g *topology.Graph, t0 time.Time, want, old []byte) float64 {
		t.Helper()
		return waitInstalledIn(osmDir, what, g, t0, want, old)
	}
	waitInstalled("start", svc.Graph(), time.Now(), nil, nil)
	startDump, _ := os.ReadFile(filepath.Join(osmDir, "opensm-lfts.dump"))
	// Diagnostics run on the simulated fabric with ibsim's environment.
	var pre strings.Builder
	pre.WriteString("cd " + dir + " && ")
	for _, kv := range sim.Env(dir) {
		for _, k := range []string{"IBSIM_SOCKNAME=", "SIM_HOST=", "LD_PRELOAD="} {
			if strings.HasPrefix(kv, k) {
				pre.WriteString(kv + " ")
			}
		}
	}
	var log bytes.Buffer
	o := fabricWatchOptions{fabric: net, discover: pre.String() + "ibnetdiscover -o 16", interval: time.Second, once: true,
		onChange: fmt.Sprintf("kill -HUP %d", osm.Process.Pid)}
	o.cl = clientFlags{server: srv.URL, tokenFile: filepath.Join(dir, "tok")}
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
	failedG := svc.Graph()
	icnSecs := waitInstalled("after the unlink", failedG, t0, nil, startDump)
	t1 := time.Now()
	sim.OpenSM(filepath.Join(dir, "own"), "-R", "ftree")
	ownSecs := time.Since(t1).Seconds()
	// And back.
	unlinkLog := log.String()
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

	t.Logf("%s: unlink → the running OpenSM installed icn's tables: %.2f s from a sweep (%s); a one-shot OpenSM ftree sweep of the same event: %.2f s",
		spec, icnSecs, strings.TrimSpace(firstLine(unlinkLog)), ownSecs)

	// The same events learnt from OpenSM's traps, with OpenSM's default
	// logging: the watch follows OpenSM's log (sweeps an hour apart) and
	// learns of three different unlinks from the traps alone.
	// (ICN_WATCH_TRAP=0 leaves it out: on fattree:m=24,n=3 the OpenSM
	// under ibsim stopped sweeping after the probe ran during its sweep.)
	if os.Getenv("ICN_WATCH_TRAP") != "0" {
		watchTrap(t, spec, o, dir, osmDir, pre.String(), sim, svc, startDump, osm.Process.Pid, waitInstalled)
	}
	if os.Getenv("ICN_WATCH_FABRIC") == "" {
		return
	}
	measureOwnFTree(t, spec, sim, dir, osm, svc.Graph(), failedG, waitInstalledIn)
}

// lastReport is the last report of a failure in the watch's log, up to
// its cause's parenthesis.
func lastReport(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.Contains(l, " failed (") {
			if j := strings.Index(l, ")"); j >= 0 {
				return l[strings.Index(l, "link ") : j+1]
			}
		}
	}
	return ""
}

// trapLinks are the links watchTrap unlinks one after the other: spine to
// leaf, on both spines and different leaves.
var trapLinks = []string{`"L2-0"[1]`, `"L2-1"[2]`, `"L2-0"[3]`}

// watchTrap runs the watch following OpenSM's log (its sweeps an hour
// apart: every change it reports comes from a trap) through an unlink and
// a relink of each of trapLinks, and logs per link the seconds from the
// unlink to the watch's report and to OpenSM having installed icn's
// tables, beside a one-shot OpenSM ftree sweep of the same failure.
func watchTrap(t *testing.T, spec string, o fabricWatchOptions, dir, osmDir, pre string, sim *ibsimtest.Sim, svc *fm.Service, startDump []byte, osmPid int,
	waitInstalled func(string, *topology.Graph, time.Time, []byte, []byte) float64) {
	fo := o
	fo.once, fo.interval = false, time.Hour
	fo.opensmLog = filepath.Join(osmDir, "osm.log")
	fo.probe = pre + "iblinkinfo -D {path} -n 0"
	var flog lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runFabricWatch(ctx, fo, &flog) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch following OpenSM's log: %v", err)
		}
	}()
	time.Sleep(500 * time.Millisecond) // its first sweep
	// OpenSM runs with its default logging: the watch says that it will
	// sweep on each trap, and how to let it probe instead.
	if note := fmt.Sprintf("OpenSM (pid %d) buffers its log", osmPid); !strings.Contains(flog.String(), note) || !strings.Contains(flog.String(), "-d2, or set force_log_flush TRUE in ") {
		t.Errorf("no note on OpenSM's buffered log: %q", flog.String())
	}
	waitFailed := func(n int, what string) float64 {
		t0 := time.Now()
		for deadline := t0.Add(30 * time.Second); len(svc.Fabric().FailedLinks) != n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				data, _ := os.ReadFile(fo.opensmLog)
				var traps []string
				for _, l := range strings.Split(string(data), "\n") {
					if strings.Contains(l, "trap 128") || strings.Contains(l, "Generic Notice") {
						traps = append(traps, l)
					}
				}
				t.Fatalf("%s: no report from the trap: %q; OpenSM's log (%d bytes) has %d trap lines: %s", what, flog.String(), len(data), len(traps), strings.Join(traps, " | "))
			}
		}
		return time.Since(t0).Seconds()
	}
	for i, link := range trapLinks {
		t0 := time.Now()
		sim.Console("Unlink " + link)
		waitFailed(1, "unlink "+link)
		learnt := time.Since(t0).Seconds()
		failedG := svc.Graph()
		installed := waitInstalled("after unlink "+link+", from the trap", failedG, t0, nil, startDump)
		// (from the trap: probed, or swept at once when the probe over
		// its route failed)
		if !strings.Contains(lastReport(flog.String()), "failed (trap") {
			t.Fatalf("the watch following OpenSM's log reported: %s", flog.String())
		}
		// learnt from the trap, not from a sweep an hour away, and at once
		if learnt > 5 {
			t.Errorf("unlink %s: reported after %.2f s", link, learnt)
		}
		t1 := time.Now()
		sim.OpenSM(filepath.Join(dir, fmt.Sprintf("own-trap-%d", i)), "-R", "ftree")
		own := time.Since(t1).Seconds()
		t.Logf("%s: unlink %s → reported from OpenSM's trap in %.2f s (%s), the running OpenSM installed icn's tables in %.2f s; a one-shot OpenSM ftree sweep of the same failure: %.2f s",
			spec, link, learnt, lastReport(flog.String()), installed, own)
		sim.Console("ReLink " + link)
		waitFailed(0, "relink "+link)
		waitInstalled("after relink "+link+", from the trap", svc.Graph(), time.Now(), startDump, nil)
	}
}

// measureOwnFTree times a running OpenSM with its own ftree engine on the
// same event (measurements only), told at once by SIGHUP (as a trap
// would) and left to find it itself; osm (the file-engine OpenSM) is
// stopped first.
func measureOwnFTree(t *testing.T, spec string, sim *ibsimtest.Sim, dir string, osm *exec.Cmd, healthy, failedG *topology.Graph,
	waitInstalledIn func(string, string, *topology.Graph, time.Time, []byte, []byte) float64) {
	osm.Process.Kill()
	osm.Wait()
	ownDir := filepath.Join(dir, "own-running")
	os.MkdirAll(ownDir, 0o755)
	own := exec.Command("opensm", "-D", "0x43", "-f", filepath.Join(ownDir, "osm.log"), "--dump_files_dir", ownDir, "-R", "ftree")
	own.Env = sim.Env(ownDir)
	own.Dir = ownDir
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { own.Process.Kill(); own.Wait() }()
	waitInstalledIn(ownDir, "own ftree start", healthy, time.Now(), nil, nil)
	before, _ := os.ReadFile(filepath.Join(ownDir, "opensm-lfts.dump"))
	t0 := time.Now()
	sim.Console(`Unlink "L2-0"[1]`)
	own.Process.Signal(syscall.SIGHUP)
	told := waitInstalledIn(ownDir, "own ftree, told", failedG, t0, nil, before)
	sim.Console(`ReLink "L2-0"[1]`)
	own.Process.Signal(syscall.SIGHUP)
	waitInstalledIn(ownDir, "own ftree, relinked", healthy, time.Now(), before, nil)
	t0 = time.Now()
	sim.Console(`Unlink "L2-0"[1]`)
	alone := waitInstalledIn(ownDir, "own ftree, alone", failedG, t0, nil, before)
	t.Logf("%s: a running OpenSM with its own ftree re-routes the same unlink in %.2f s when told by SIGHUP, %.2f s finding it on its own sweep", spec, told, alone)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
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

// exportIBNet writes the fabric of spec as icn exports it for ibsim
// (writeIBNetExport) to a file in dir and returns its path.
func exportIBNet(t *testing.T, dir, spec string) string {
	t.Helper()
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeIBNetExport(&b, g, spec); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, strings.NewReplacer(":", "_", ",", "_", "=", "_").Replace(spec)+".ibnet")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A discovery that is not the service's fabric (or fails) is refused
// with one message and reports nothing.
func TestWatchRefusesForeignDiscovery(t *testing.T) {
	dir := t.TempDir()
	own, other := exportIBNet(t, dir, "fattree:m=4,n=2"), exportIBNet(t, dir, "dragonfly:a=4,p=2,h=2")
	base, err := topology.Parse("file:" + own)
	if err != nil {
		t.Fatal(err)
	}
	for _, discover := range []string{"cat " + other, "false", "echo garbage"} {
		o := fabricWatchOptions{fabric: own, discover: discover, interval: time.Second, once: true}
		o.cl = clientFlags{server: "http://127.0.0.1:1"} // never reached
		n, err := watchRound(context.Background(), o, base, "", &bytes.Buffer{})
		if err == nil || n != 0 || strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Fatalf("discovery %q: %d changes, %v", discover, n, err)
		}
	}
}

// A trap whose probe fails (its route may cross the link that went
// down) makes the watch sweep the fabric: here the sweep finds a foreign
// fabric and says so, reporting nothing.
func TestWatchSweepsWhenProbeFails(t *testing.T) {
	dir := t.TempDir()
	files := []string{exportIBNet(t, dir, "fattree:m=4,n=2"), exportIBNet(t, dir, "dragonfly:a=4,p=2,h=2")}
	base, err := topology.Parse("file:" + files[0])
	if err != nil {
		t.Fatal(err)
	}
	o := fabricWatchOptions{fabric: files[0], discover: "cat " + files[1], probe: "false {path}", interval: time.Second}
	o.cl = clientFlags{server: "http://127.0.0.1:1"} // never reached
	var log bytes.Buffer
	actOnTraps(context.Background(), o, base, []string{"0,1"}, nil, &log)
	if got := log.String(); !strings.Contains(got, `--probe "false 0,1"`) || !strings.Contains(got, "shares no switch GUID") {
		t.Fatalf("a failed probe did not make the watch sweep: %q", got)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// parseLinkInfo reads iblinkinfo's report of one switch (the probe of a
// trap-driven watch); what it cannot read gets an error, never a panic.
func TestParseLinkInfo(t *testing.T) {
	data, err := os.ReadFile("testdata/iblinkinfo.txt")
	if err != nil {
		t.Fatal(err)
	}
	guid, ports, err := parseLinkInfo(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if guid != 0x0002c91000000289 || len(ports) != 4 || !ports[1] || ports[19] || !ports[20] || ports[21] {
		t.Fatalf("guid %#x ports %v", guid, ports)
	}
	for _, bad := range []string{"", "Switch: 0x12 L1-0:\n", "garbage\n  1   2[  ] ==( Down)==>", string(data) + string(data)} {
		if _, _, err := parseLinkInfo(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseLinkInfo(f *testing.F) {
	if data, err := os.ReadFile("testdata/iblinkinfo.txt"); err == nil {
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, ports, err := parseLinkInfo(s); err == nil && len(ports) == 0 {
			t.Fatal("no error and no ports")
		}
	})
}
