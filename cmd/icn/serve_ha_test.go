package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fmc "github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// haInstance is one `icn serve` process of a replicated fabric manager
// (the test binary run as icn), on a fixed address so that a restart
// comes back where clients look for it.
type haInstance struct {
	t    testing.TB
	name string
	args []string
	url  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newHAInstance prepares an instance serving the store at storeURL on a
// free loopback port; extra flags follow the common ones.
func newHAInstance(t testing.TB, name, storeURL, tokenFile string, extra ...string) *haInstance {
	return newServeInstance(t, name, append([]string{"--store", storeURL, "--token-file", tokenFile, "--name", name}, extra...)...)
}

// newServeInstance prepares `icn serve FLAGS --addr` on a free loopback
// port.
func newServeInstance(t testing.TB, name string, flags ...string) *haInstance {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"serve", "--addr", addr}, flags...)
	in := &haInstance{t: t, name: name, args: args, url: "http://" + addr}
	t.Cleanup(in.kill)
	return in
}

// start runs the instance and waits until it answers /healthz.
func (in *haInstance) start() { in.startWithin(60 * time.Second) }

// startWithin runs the instance and waits at most d until it answers
// /healthz.
func (in *haInstance) startWithin(d time.Duration) {
	in.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ICN_CLI_ARGS="+strings.Join(in.args, "\x1f"), "ICN_PROGRESS=0")
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		in.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	in.mu.Lock()
	in.cmd, in.done, in.log = cmd, done, log
	in.mu.Unlock()
	deadline := time.Now().Add(d)
	for {
		if _, err := in.health(); err == nil {
			return
		}
		select {
		case <-done:
			in.t.Fatalf("%s exited at start: %s", in.name, log.String())
		default:
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("%s does not answer: %s", in.name, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill kills the instance with SIGKILL (no-op if it is not running).
func (in *haInstance) kill() {
	in.mu.Lock()
	cmd, done := in.cmd, in.done
	in.cmd = nil
	in.mu.Unlock()
	if cmd != nil {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

func (in *haInstance) signal(sig syscall.Signal) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil {
		in.cmd.Process.Signal(sig)
	}
}

var healthHTTP = &http.Client{Timeout: 2 * time.Second}

// health asks the instance's /healthz.
func (in *haInstance) health() (fmc.Health, error) {
	var h fmc.Health
	resp, err := healthHTTP.Get(in.url + "/healthz")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return h, err
	}
	if resp.StatusCode != 200 {
		return h, fmt.Errorf("healthz: HTTP %d", resp.StatusCode)
	}
	return h, nil
}

// leaderOf waits until exactly one instance reports itself leader and
// every other answering instance names it; it returns its index.
func leaderOf(t testing.TB, ins []*haInstance, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		lead, agree := -1, true
		var leaders []string
		for i, in := range ins {
			h, err := in.health()
			if err != nil {
				continue
			}
			if h.Role == "leader" {
				if lead >= 0 {
					agree = false
				}
				lead = i
			}
			leaders = append(leaders, h.Leader)
		}
		if lead >= 0 && agree {
			all := true
			for _, l := range leaders {
				all = all && l == ins[lead].url
			}
			if all {
				return lead
			}
		}
		if time.Now().After(deadline) {
			var states []string
			for _, in := range ins {
				h, err := in.health()
				states = append(states, fmt.Sprintf("%s: %+v %v", in.name, h, err))
			}
			t.Fatalf("no single leader after %v: %s", timeout, strings.Join(states, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startHA starts an etcd cluster of 3 and n instances on it (the first
// creates the store and the token file); it returns them and a client of
// all of them.
func startHA(t testing.TB, n int, extra ...string) (*etcdtest.Cluster, []*haInstance, *fmc.Client, string) {
	t.Helper()
	ec := etcdtest.Start(t, 3)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "icn.token")
	var ins []*haInstance
	var urls []string
	for i := 0; i < n; i++ {
		in := newHAInstance(t, fmt.Sprintf("fm%d", i), ec.URL("icn/test"), tokenFile, extra...)
		in.start()
		ins = append(ins, in)
		urls = append(urls, in.url)
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	cl := fmc.New(strings.Join(urls, ","), strings.TrimSpace(string(tok)))
	cl.Actor = "test"
	return ec, ins, cl, tokenFile
}

// haLedger is what the clients of a crash test were told: the last
// acknowledged state of each job, each link they own and each join.
type haLedger struct {
	mu    sync.Mutex
	jobs  map[int]fmc.JobState
	links map[string]bool // true: failed; absent: last outcome unknown
	joins map[[2]string]bool
	reqs  map[string]int // request id → job id
}

// TestServeHACrash runs three instances on a three-member etcd cluster
// while ten clients submit, release, fail and repair links and join
// multicast groups for a minute; meanwhile the leader is killed five
// times (kill -9, then started again) and one etcd member twice. Every
// change a client was told of must be there afterwards, no node may be
// held twice, every running table must verify, the audit log must be one
// sequence without gaps or repeats, and every entry of it must come from
// the one leader of its term.
func TestServeHACrash(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of processes")
	}
	ec, ins, cl, _ := startHA(t, 3, "--lease", "2s", "--topo", "torus:4x4x4", "--mcast-timeout", "10m")
	cl.Retry = 20 * time.Second
	ctx := context.Background()
	var fv fmc.FabricView
	if err := cl.Get(ctx, "/api/fabric", &fv); err != nil {
		t.Fatal(err)
	}
	led := &haLedger{jobs: map[int]fmc.JobState{}, links: map[string]bool{}, joins: map[[2]string]bool{}, reqs: map[string]int{}}
	const workers = 10
	run := 60 * time.Second
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes, unknown sync.Map
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			haWorker(t, w, cl, &fv, led, stop, &writes, &unknown)
		}(w)
	}
	// The killer: five leaders, two etcd members.
	var takeovers []time.Duration
	for k := 0; k < 5; k++ {
		time.Sleep(run / 6)
		lead := leaderOf(t, ins, 30*time.Second)
		killed := time.Now()
		ins[lead].kill()
		if k == 1 || k == 3 {
			m := ec.Members[k%3]
			m.Kill()
			time.AfterFunc(3*time.Second, func() { m.Restart() })
		}
		next := leaderOf(t, ins, 30*time.Second)
		takeovers = append(takeovers, time.Since(killed))
		if next == lead {
			t.Fatalf("the killed instance %s still leads", ins[lead].name)
		}
		ins[lead].start()
	}
	time.Sleep(run / 6)
	close(stop)
	wg.Wait()
	ec.WaitHealthy(30 * time.Second)
	t.Logf("takeovers after kill -9 (lease 2s): %v", takeovers)
	leaderOf(t, ins, 30*time.Second)
	checkHALedger(t, cl, led)
	checkHAAudit(t, cl)
	n := 0
	writes.Range(func(_, _ any) bool { n++; return true })
	u := 0
	unknown.Range(func(_, _ any) bool { u++; return true })
	t.Logf("%d changes acknowledged, %d with unknown outcome", n, u)
}

// haWorker is one client of the crash test.
func haWorker(t *testing.T, w int, cl *fmc.Client, fv *fmc.FabricView, led *haLedger, stop chan struct{}, writes, unknown *sync.Map) {
	r := rand.New(rand.NewPCG(uint64(w), 42))
	ctx := context.Background()
	var mine []int // running jobs this worker placed
	var links []string
	for i, l := range fv.Links {
		if i%7 == 0 && (i/7)%10 == w {
			links = append(links, l.Name)
		}
	}
	group, joined := 0, 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("w%d-%d", w, i)
		switch op := r.IntN(20); {
		case op < 8 || len(mine) == 0 && op < 12:
			rid := "req-" + key
			var j fmc.JobRecord
			err := cl.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 1 + r.IntN(4), Transit: 1, RequestID: rid}, &j, true)
			if err == nil {
				led.mu.Lock()
				led.jobs[j.ID] = fmc.JobRunning
				led.reqs[rid] = j.ID
				led.mu.Unlock()
				mine = append(mine, j.ID)
				writes.Store(key, true)
			}
		case op < 12:
			k := r.IntN(len(mine))
			id := mine[k]
			err := cl.Do(ctx, "DELETE", fmt.Sprintf("/api/jobs/%d", id), nil, nil, false)
			switch {
			case err == nil:
				led.mu.Lock()
				led.jobs[id] = fmc.JobReleased
				led.mu.Unlock()
				mine = slices.Delete(mine, k, k+1)
				writes.Store(key, true)
			case fmc.StatusOf(err) == 404:
				mine = slices.Delete(mine, k, k+1) // released by an attempt whose answer was lost
			case fmc.StatusOf(err) == 0:
				unknown.Store(key, true)
				mine = slices.Delete(mine, k, k+1)
				led.mu.Lock()
				delete(led.jobs, id) // either state is right now
				led.mu.Unlock()
			}
		case op < 15 && len(links) > 0:
			l := links[r.IntN(len(links))]
			led.mu.Lock()
			failed, known := led.links[l]
			led.mu.Unlock()
			if !known {
				failed = false
			}
			err := cl.Do(ctx, "POST", "/api/fabric/failures", fmc.FailureChange{Link: l, Repair: failed}, nil, false)
			led.mu.Lock()
			switch {
			case err == nil:
				led.links[l] = !failed
				writes.Store(key, true)
			case fmc.StatusOf(err) == 0 || fmc.StatusOf(err) >= 500:
				delete(led.links, l)
				unknown.Store(key, true)
			}
			led.mu.Unlock()
		default:
			g := fmt.Sprintf("g%d-%d", w, group)
			member := fv.Nodes[(w*4+joined*17+group*5)%len(fv.Nodes)].Name
			var gr fmc.GroupRecord
			err := cl.Do(ctx, "POST", "/api/mcast/join", fmc.McastRequest{Group: g, Member: member, MemberCount: 4, RequestID: "join-" + key}, &gr, true)
			if err == nil {
				led.mu.Lock()
				led.joins[[2]string{g, member}] = true
				led.mu.Unlock()
				writes.Store(key, true)
			}
			if err == nil || fmc.StatusOf(err) == 409 {
				if joined++; joined == 4 {
					group, joined = group+1, 0
				}
			}
		}
	}
}

// checkHALedger compares the service's state with what clients were
// told, and checks that no node is held twice and every running table
// verifies.
func checkHALedger(t *testing.T, cl *fmc.Client, led *haLedger) {
	t.Helper()
	ctx := context.Background()
	var jobs []fmc.JobRecord
	if err := cl.Get(ctx, "/api/jobs?all=1", &jobs); err != nil {
		t.Fatal(err)
	}
	state := map[int]fmc.JobState{}
	holder := map[string]int{}
	for _, j := range jobs {
		state[j.ID] = j.State
		if j.State != fmc.JobRunning {
			continue
		}
		for _, n := range append(slices.Clone(j.Active), j.TransitNodes...) {
			if o, ok := holder[n]; ok {
				t.Errorf("node %s held by jobs %d and %d", n, o, j.ID)
			}
			holder[n] = j.ID
		}
		var v fmc.VerifyResult
		if err := cl.Do(ctx, "POST", fmt.Sprintf("/api/jobs/%d/verify", j.ID), nil, &v, true); err != nil {
			t.Errorf("verify job %d: %v", j.ID, err)
		} else if !v.OK && j.Routing != fmc.RouteBroken {
			t.Errorf("job %d (%s) does not verify: %s", j.ID, j.RoutingName(), v.Problem)
		}
	}
	for id, want := range led.jobs {
		if got, ok := state[id]; !ok || got != want {
			t.Errorf("job %d: acknowledged %s, stored %q (present %v)", id, want, got, ok)
		}
	}
	var fv fmc.FabricView
	if err := cl.Get(ctx, "/api/fabric", &fv); err != nil {
		t.Fatal(err)
	}
	for _, n := range fv.Nodes {
		if h := holder[n.Name]; h != n.Job {
			t.Errorf("node %s: the fabric says job %d, the jobs say %d", n.Name, n.Job, h)
		}
	}
	failed := map[string]bool{}
	for _, l := range fv.FailedLinks {
		failed[l] = true
	}
	for l, want := range led.links {
		if failed[l] != want {
			t.Errorf("link %s: acknowledged failed=%v, stored %v", l, want, failed[l])
		}
	}
	var groups []fmc.GroupRecord
	if err := cl.Get(ctx, "/api/mcast", &groups); err != nil {
		t.Fatal(err)
	}
	members := map[[2]string]bool{}
	for _, g := range groups {
		for _, m := range g.Members {
			members[[2]string{g.ID, m}] = true
		}
	}
	for j := range led.joins {
		if !members[j] {
			t.Errorf("join of %s to %s acknowledged, not stored", j[1], j[0])
		}
	}
	// A request id answered before gets the same job again.
	n := 0
	for rid, id := range led.reqs {
		if n++; n > 5 {
			break
		}
		var j fmc.JobRecord
		if err := cl.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 1, Transit: 1, RequestID: rid}, &j, true); err != nil || j.ID != id {
			t.Errorf("request %s repeated: job %d (%v), first answer job %d", rid, j.ID, err, id)
		}
	}
}

// checkHAAudit reads the whole audit log: one sequence from 1 without
// gaps or repeats, terms that never go back, one instance per term.
func checkHAAudit(t *testing.T, cl *fmc.Client) {
	t.Helper()
	var all []fmc.Event
	for after := uint64(0); ; {
		var page []fmc.Event
		if err := cl.Get(context.Background(), fmt.Sprintf("/api/audit?after=%d&limit=1000", after), &page); err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	byTerm := map[int64]string{}
	var last int64
	for i, e := range all {
		if e.Seq != uint64(i+1) {
			t.Fatalf("audit entry %d has seq %d", i+1, e.Seq)
		}
		if e.Term < last {
			t.Errorf("audit entry %d of term %d after term %d", e.Seq, e.Term, last)
		}
		if e.Term == 0 && e.Action != "fabric.create" {
			t.Errorf("audit entry %d (%s) written outside a leadership", e.Seq, e.Action)
		}
		last = e.Term
		if o, ok := byTerm[e.Term]; ok && o != e.Instance {
			t.Errorf("term %d written by %s and %s", e.Term, o, e.Instance)
		}
		byTerm[e.Term] = e.Instance
	}
	terms := make([]int64, 0, len(byTerm))
	for term := range byTerm {
		terms = append(terms, term)
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i] < terms[j] })
	t.Logf("audit: %d entries, terms %v", len(all), terms)
}

// TestServeHAFreeze freezes the leader (SIGSTOP) for three times its
// lease: a standby takes over and works; when the old leader is thawed it
// reports itself standby, and nothing it held in memory is written: a
// failure report it was handling when it froze is either in the store
// before the new leader's first entry (and was acknowledged), or refused
// by the thawed instance with a redirect and stored by the new leader,
// or not stored at all (and not acknowledged).
func TestServeHAFreeze(t *testing.T) {
	if testing.Short() {
		t.Skip("processes")
	}
	const lease = 2 * time.Second
	_, ins, cl, _ := startHA(t, 2, "--lease", "2s", "--topo", "torus:4x4x4")
	ctx := context.Background()
	if lead := leaderOf(t, ins, 30*time.Second); lead != 0 {
		t.Fatalf("the first instance does not lead (%d)", lead)
	}
	var j fmc.JobRecord
	if err := cl.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 4, Transit: 1, RequestID: "before"}, &j, true); err != nil {
		t.Fatal(err)
	}
	old, _ := ins[0].health()
	// A failure report in flight as the leader freezes.
	direct := fmc.New(ins[0].url, cl.Token)
	direct.Retry = -1
	direct.HTTP = &http.Client{Timeout: 20 * time.Second}
	inflight := make(chan error, 1)
	go func() {
		inflight <- direct.Do(ctx, "POST", "/api/fabric/failures", fmc.FailureChange{Link: "1.1.1+X"}, nil, false)
	}()
	time.Sleep(5 * time.Millisecond)
	ins[0].signal(syscall.SIGSTOP)
	frozen := time.Now()
	lead := leaderOf(t, ins[1:], 10*lease)
	t.Logf("standby took over %v after the freeze", time.Since(frozen))
	if lead != 0 {
		t.Fatal("no takeover")
	}
	// The new leader works.
	var j2 fmc.JobRecord
	cl2 := fmc.New(ins[1].url, cl.Token)
	if err := cl2.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 4, Transit: 1, RequestID: "after"}, &j2, true); err != nil {
		t.Fatal(err)
	}
	if err := cl2.Do(ctx, "POST", "/api/fabric/failures", fmc.FailureChange{Link: "2.2.2+Y"}, nil, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3*lease - time.Since(frozen))
	ins[0].signal(syscall.SIGCONT)
	inErr := <-inflight
	// A report the thawed instance refused (307: not applied) is sent
	// again to the new leader by the client.
	redirected := direct.Leader() == ins[1].url
	// The thawed instance steps down and follows the new leader.
	deadline := time.Now().Add(10 * time.Second)
	var h fmc.Health
	for {
		var err error
		h, err = ins[0].health()
		if err == nil && h.Role == "standby" && h.Leader == ins[1].url && !h.Stale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thawed instance: %+v %v", h, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	newH, _ := ins[1].health()
	if newH.Term <= old.Term {
		t.Fatalf("term %d after %d", newH.Term, old.Term)
	}
	// The audit log: every entry of the old term comes before the new
	// leader's first; the frozen report is there only if it was
	// acknowledged... or stored before the freeze and its answer lost.
	var events []fmc.Event
	if err := cl2.Get(ctx, "/api/audit?limit=1000", &events); err != nil {
		t.Fatal(err)
	}
	newSeen := false
	frozenTerm := int64(-1) // the term that stored the report in flight
	for _, e := range events {
		switch e.Term {
		case newH.Term:
			newSeen = true
		case old.Term:
			if newSeen {
				t.Errorf("entry %d (%s %s) of the deposed leader's term after the new leader's", e.Seq, e.Action, e.Subject)
			}
		case 0:
			if e.Action != "fabric.create" {
				t.Errorf("entry %d (%s) written outside a leadership", e.Seq, e.Action)
			}
		default:
			t.Errorf("entry %d of term %d (terms %d and %d)", e.Seq, e.Term, old.Term, newH.Term)
		}
		if e.Action == "link.fail" && strings.HasPrefix(e.Subject, "1.1.1") {
			if frozenTerm >= 0 {
				t.Errorf("the report in flight stored twice (terms %d and %d)", frozenTerm, e.Term)
			}
			frozenTerm = e.Term
		}
	}
	switch {
	case inErr == nil && !redirected && frozenTerm != old.Term:
		t.Errorf("the frozen leader acknowledged a failure report it did not store (stored in term %d)", frozenTerm)
	case inErr == nil && redirected && frozenTerm != newH.Term:
		t.Errorf("the report redirected to the new leader was acknowledged, not stored by it (stored in term %d)", frozenTerm)
	}
	t.Logf("the report in flight at the freeze: %v (redirected: %v, stored in term %d; old term %d, new %d)", inErr, redirected, frozenTerm, old.Term, newH.Term)
	// Writes sent to the old leader now reach the new one.
	again := fmc.New(ins[0].url, cl.Token)
	again.Retry = -1
	var j3 fmc.JobRecord
	if err := again.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 2, RequestID: "redirected"}, &j3, true); err != nil {
		t.Fatalf("write through the thawed standby: %v", err)
	}
	if again.Leader() != ins[1].url {
		t.Errorf("the write was not redirected to %s (%s)", ins[1].url, again.Leader())
	}
}

// TestServeHABadInput: what goes wrong when instances are started on an
// etcd store gets one line and the exit status of README's rule, and
// writes nothing: etcd unreachable (3), flags that contradict each other
// or the store (2: --db with --store, no token file, another fabric,
// another rule, another token, a token file others can read, a prefix
// holding other keys), a damaged record (the check says 1, a start
// refuses with 2, and the store's revision does not move).
func TestServeHABadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("processes")
	}
	ec := etcdtest.Start(t, 1)
	dir := t.TempDir()
	tok := filepath.Join(dir, "icn.token")
	url := ec.URL("icn/bad")
	first := newHAInstance(t, "first", url, tok, "--topo", "torus:4x4x4", "--lease", "2s")
	first.start()
	// A job, so that there is a record to damage.
	b, _ := os.ReadFile(tok)
	cl := fmc.New(first.url, strings.TrimSpace(string(b)))
	var j fmc.JobRecord
	if err := cl.Do(context.Background(), "POST", "/api/jobs", fmc.JobRequest{Nodes: 3, RequestID: "r1"}, &j, true); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.token")
	os.WriteFile(other, []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
	loose := filepath.Join(dir, "loose.token")
	os.WriteFile(loose, b, 0o644)
	os.Chmod(loose, 0o644)
	cli, err := clientv3.New(clientv3.Config{Endpoints: ec.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), "someone/else/key", "x"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--store", "etcd://127.0.0.1:1/icn", "--token-file", tok, "--addr", "127.0.0.1:0"}, 3, "etcd at 127.0.0.1:1"},
		{[]string{"serve", "--store", url, "--db", filepath.Join(dir, "x.db"), "--token-file", tok, "--addr", "127.0.0.1:0"}, 2, "--db and --store are exclusive"},
		{[]string{"serve", "--store", url, "--addr", "127.0.0.1:0"}, 2, "needs --token-file"},
		{[]string{"serve", "--store", "etcd://127.0.0.1:2379", "--token-file", tok}, 2, "no key prefix"},
		{[]string{"serve", "--store", url, "--token-file", tok, "--addr", "127.0.0.1:0", "--topo", "torus:4x4"}, 2, "holds fabric torus:4x4x4"},
		{[]string{"serve", "--store", url, "--token-file", tok, "--addr", "127.0.0.1:0", "--rules", "dirbit"}, 2, "route jobs under angara*"},
		{[]string{"serve", "--store", url, "--token-file", other, "--addr", "127.0.0.1:0"}, 2, "needs the token file the first one created"},
		{[]string{"serve", "--store", url, "--token-file", loose, "--addr", "127.0.0.1:0"}, 2, "can be read by others"},
		{[]string{"serve", "--store", url, "--token-file", tok, "--addr", "127.0.0.1:0", "--lease", "1500ms"}, 2, "whole seconds"},
		{[]string{"serve", "--store", ec.URL("someone"), "--token-file", tok, "--addr", "127.0.0.1:0"}, 2, "holds 1 keys but no icn store"},
		{[]string{"serve", "--store", url, "--token-file", tok, "--check"}, 0, "ok"},
	} {
		_, e, code := runICN(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(e, tc.want) || (code != 0 && strings.Count(e, "\n") != 1) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args[1:], code, e, tc.code, tc.want)
		}
	}
	// A record altered behind the store's back.
	first.kill()
	key := "icn/bad/jobs/" + fmt.Sprintf("%016x", j.ID)
	resp, err := cli.Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("%s: %v", key, err)
	}
	v := []byte(string(resp.Kvs[0].Value))
	v[len(v)/2] ^= 1
	if _, err := cli.Put(context.Background(), key, string(v)); err != nil {
		t.Fatal(err)
	}
	// (a candidacy the killed instance left runs out with its lease)
	time.Sleep(3 * time.Second)
	before, _ := cli.Get(context.Background(), "icn/bad/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"serve", "--store", url, "--token-file", tok, "--check"}, 1},
		{[]string{"serve", "--store", url, "--token-file", tok, "--addr", "127.0.0.1:0"}, 2},
	} {
		_, e, code := runICN(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(e, fmt.Sprintf("job %d: checksum mismatch", j.ID)) || strings.Count(e, "\n") != 1 {
			t.Errorf("%v on a damaged store: exit %d, stderr %q", tc.args[1:], code, e)
		}
	}
	after, _ := cli.Get(context.Background(), "icn/bad/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if after.Header.Revision != before.Header.Revision {
		t.Errorf("the store's revision moved from %d to %d: something was written", before.Header.Revision, after.Header.Revision)
	}
}

// TestServeHAStoreLost cuts a leader off its store (every etcd member
// killed): it steps down, reads go on with the stale flag, changes get
// 503 with the reason; when etcd comes back it leads again by itself.
func TestServeHAStoreLost(t *testing.T) {
	if testing.Short() {
		t.Skip("processes")
	}
	ec, ins, cl, _ := startHA(t, 1, "--lease", "2s", "--topo", "torus:4x4x4")
	ctx := context.Background()
	leaderOf(t, ins, 30*time.Second)
	var j fmc.JobRecord
	if err := cl.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 3, RequestID: "before"}, &j, true); err != nil {
		t.Fatal(err)
	}
	for _, m := range ec.Members {
		m.Kill()
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		h, err := ins[0].health()
		if err == nil && h.Role == "standby" && h.Stale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cut-off leader: %+v %v", h, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	req, _ := http.NewRequest("GET", ins[0].url+"/api/jobs", nil)
	req.Header.Set("Authorization", "Bearer "+cl.Token)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-ICN-Stale") != "true" {
		t.Fatalf("read while the store is lost: %v %v", err, resp.Header)
	}
	nr := fmc.New(ins[0].url, cl.Token)
	nr.Retry = -1
	err = nr.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 2}, nil, false)
	if fmc.StatusOf(err) != 503 || !strings.Contains(err.Error(), "store did not answer") {
		t.Fatalf("write while the store is lost: %v", err)
	}
	for _, m := range ec.Members {
		m.Restart()
	}
	ec.WaitHealthy(30 * time.Second)
	leaderOf(t, ins, 30*time.Second)
	var j2 fmc.JobRecord
	if err := cl.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 2, RequestID: "after"}, &j2, true); err != nil {
		t.Fatalf("write after the store came back: %v", err)
	}
	if j2.ID != j.ID+1 {
		t.Errorf("job %d after job %d", j2.ID, j.ID)
	}
}
