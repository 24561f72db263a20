package slurmagent

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/sched"
)

// cluster is a Slurm cluster on this host: slurmctld, and one real
// slurmd per node, each in its own UTS and mount namespaces (its own
// host name, /etc/hosts, pid file and spool), all on 127.0.0.1 with a
// port per node. It needs root (unshare, mount).
type cluster struct {
	dir, conf string
	procs     []*exec.Cmd
}

// daemon returns the path of a Slurm daemon, preferring the plain build
// where the emulator's is installed beside it (Debian's alternatives).
func daemon(name string) string {
	for _, p := range []string{"/usr/sbin/" + name + "-wlm", "/usr/sbin/" + name} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath(name)
	return p
}

// needSlurm skips (or with ICN_REQUIRE_SLURM=1 fails) without the
// daemons, the commands, root or unshare.
func needSlurm(t *testing.T) {
	t.Helper()
	var missing []string
	for _, d := range []string{"slurmctld", "slurmd"} {
		if daemon(d) == "" {
			missing = append(missing, d)
		}
	}
	for _, c := range []string{"squeue", "scontrol", "sinfo", "sbatch", "unshare", "mount"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		if os.Getenv("ICN_REQUIRE_SLURM") == "1" {
			t.Fatalf("ICN_REQUIRE_SLURM=1 but %v missing (apt-get install slurmctld slurmd slurm-client)", missing)
		}
		t.Skipf("%v not installed", missing)
	}
	if os.Geteuid() != 0 {
		t.Skip("one slurmd per node needs root (unshare --uts --mount)")
	}
	if out, err := exec.Command("unshare", "--uts", "--mount", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare --uts --mount is not allowed here: %v %s", err, out)
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startCluster starts slurmctld and a slurmd per node of names, with
// icn's job_submit.lua for partition "torus".
func startCluster(t *testing.T, names []string) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	ctldPort := freePort(t)
	var b strings.Builder
	fmt.Fprintf(&b, "ClusterName=icnagent\nSlurmctldHost=localhost\nSlurmctldPort=%d\n", ctldPort)
	fmt.Fprintf(&b, "AuthType=auth/none\nCredType=cred/none\nSlurmUser=root\nSlurmdUser=root\nMailProg=/bin/true\n")
	fmt.Fprintf(&b, "StateSaveLocation=%s/state\nSlurmctldPidFile=%s/slurmctld.pid\nSlurmctldLogFile=%s/slurmctld.log\n", dir, dir, dir)
	// The per-node files live under node/, which each slurmd's mount
	// namespace covers with its own directory.
	fmt.Fprintf(&b, "SlurmdPidFile=%s/node/slurmd.pid\nSlurmdLogFile=%s/node/slurmd.log\nSlurmdSpoolDir=%s/node/spool\n", dir, dir, dir)
	b.WriteString("ProctrackType=proctrack/pgid\nTaskPlugin=task/none\nSchedulerType=sched/builtin\nSelectType=select/linear\n")
	b.WriteString("ReturnToService=2\nJobSubmitPlugins=lua\nMpiDefault=none\nSlurmctldTimeout=30\nSlurmdTimeout=30\nInactiveLimit=0\nMinJobAge=2\n")
	// A port per node, each free when chosen (a fixed range may hold a
	// port some other process uses).
	for _, n := range names {
		fmt.Fprintf(&b, "NodeName=%s NodeAddr=127.0.0.1 Port=%d CPUs=1 State=UNKNOWN\n", n, freePort(t))
	}
	fmt.Fprintf(&b, "PartitionName=torus Nodes=ALL Default=YES State=UP MaxTime=INFINITE\n")
	// The same nodes without icn: Slurm's own placement (the replay's
	// baseline; the hold is only for partition torus).
	fmt.Fprintf(&b, "PartitionName=plain Nodes=ALL Default=NO State=UP MaxTime=INFINITE\n")
	conf := b.String()
	hosts := "127.0.0.1 localhost\n"
	for _, n := range names {
		hosts += "127.0.0.1 " + n + "\n"
		if err := os.MkdirAll(filepath.Join(dir, "nodes", n, "spool"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"state", "node"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	for name, data := range map[string]string{"slurm.conf": conf, "hosts": hosts, "job_submit.lua": JobSubmitLua("torus")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.stop)
	c.spawn(t, daemon("slurmctld"), "-D", "-i")
	slurmd := func(n string) {
		script := fmt.Sprintf("mount --bind %[1]s/hosts /etc/hosts && mount --bind %[1]s/nodes/%[2]s %[1]s/node && hostname %[2]s && exec %[3]s -D",
			dir, n, daemon("slurmd"))
		c.spawn(t, "unshare", "--uts", "--mount", "sh", "-c", script)
	}
	for _, n := range names {
		slurmd(n)
	}
	// Wait until every node answers; a slurmd that has not registered
	// after 15 s (a loaded host) is started once more.
	deadline, retry := time.Now().Add(60*time.Second), time.Now().Add(15*time.Second)
	for {
		out, _ := c.cmd(context.Background(), "sinfo", "-h", "-t", "idle", "-o", "%D")
		if strings.TrimSpace(out) == fmt.Sprint(len(names)) {
			return c
		}
		if time.Now().After(retry) {
			retry = deadline
			idle, _ := c.cmd(context.Background(), "sinfo", "-h", "-N", "-t", "idle", "-o", "%N")
			for _, n := range names {
				if !slices.Contains(strings.Fields(idle), n) {
					slurmd(n)
				}
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "slurmctld.log"))
			t.Fatalf("Slurm nodes not idle after 60 s (sinfo %q); slurmctld.log tail: %s", out, tail(string(log), 1500))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (c *cluster) spawn(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c.procs = append(c.procs, cmd)
}

// restartController stops slurmctld (SIGTERM, as systemctl restart does:
// it saves its state) and starts it again on that state.
func (c *cluster) restartController(t *testing.T) {
	t.Helper()
	ctld := c.procs[0]
	syscall.Kill(ctld.Process.Pid, syscall.SIGTERM)
	ctld.Wait()
	c.procs = c.procs[1:]
	c.spawn(t, daemon("slurmctld"), "-D")
	c.procs = append(c.procs[len(c.procs)-1:], c.procs[:len(c.procs)-1]...)
}

func (c *cluster) stop() {
	for _, p := range c.procs {
		syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		p.Wait()
	}
}

func (c *cluster) cmd(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
	// sbatch writes each job's slurm-N.out where it was called: in the
	// cluster's temporary directory, not the package's.
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSlurmPlacesThroughICN runs 20 jobs end to end through a real
// slurmctld (restarted while they wait) and 32 slurmd on torus:4x4x2,
// placed by an agent that is itself replaced midway: every job runs on exactly the
// nodes the fabric manager stored for it, each of those sets has a
// verified routing table, every job's nodes are released in the fabric
// manager when it ends, and a node drained in Slurm is failed in icn
// and never used.
func TestSlurmPlacesThroughICN(t *testing.T) {
	needSlurm(t)
	svc, srvURL, tok, names := startTorus(t)
	c := startCluster(t, names)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logBuf syncBuffer
	a, err := New(ctx, Config{Partition: "torus", Prefix: "nid", Window: 4, Transit: 0.6, Log: &logBuf}, CLI{Conf: c.conf}, &Client{C: client.New(srvURL, tok)})
	if err != nil {
		t.Fatal(err)
	}
	// A node drained by the site before the jobs come.
	if out, err := c.cmd(ctx, "scontrol", "update", "NodeName="+names[5], "State=DRAIN", "Reason=site_maintenance"); err != nil {
		conf, _ := os.ReadFile(c.conf)
		si, _ := c.cmd(ctx, "sinfo", "-N")
		log, _ := os.ReadFile(filepath.Join(c.dir, "slurmctld.log"))
		t.Fatalf("drain: %v %s\nconf:\n%s\nsinfo:\n%s\nlog:%s", err, out, conf, si, tail(string(log), 2000))
	}
	// --nodelist is icn's to choose in this partition: refused at once.
	if out, err := c.cmd(ctx, "sbatch", "-p", "torus", "-N", "2", "-w", names[0]+","+names[1], "--wrap", "true"); err == nil || !strings.Contains(out, "icn") {
		t.Fatalf("sbatch --nodelist: %v %s", err, out)
	}
	sizes := []int{2, 3, 4, 1, 6, 2, 5, 3, 8, 2, 4, 1, 3, 6, 2, 4, 5, 2, 3, 4}
	var ids []int
	for i, n := range sizes {
		out, err := c.cmd(ctx, "sbatch", "--parsable", "-p", "torus", "-N", fmt.Sprint(n), "-J", fmt.Sprintf("t%d", i), "--wrap", fmt.Sprintf("sleep %d", 1+i%3))
		if err != nil {
			t.Fatalf("sbatch: %v %s", err, out)
		}
		var id int
		fmt.Sscanf(strings.TrimSpace(out), "%d", &id)
		ids = append(ids, id)
	}
	// slurmctld stops and comes back on its saved state while the jobs
	// wait (a restart while jobs end can lose their completion in Slurm
	// itself, under load); then the agent starts, and after 2 s it is
	// replaced by a new one, which takes over from Slurm's and icn's state.
	c.restartController(t)
	agentCtx, stopAgent := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { first <- a.Run(agentCtx, 300*time.Millisecond) }()
	time.Sleep(2 * time.Second)
	stopAgent()
	<-first
	a, err = New(ctx, Config{Partition: "torus", Prefix: "nid", Window: 4, Transit: 0.6, Log: &logBuf}, CLI{Conf: c.conf}, &Client{C: client.New(srvURL, tok)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, 300*time.Millisecond) }()
	// Watch until every job has run and ended: each running job's nodes
	// against the fabric manager's record of it.
	seen := map[int]string{}
	deadline := time.Now().Add(90 * time.Second)
	for len(seen) < len(ids) || stillThere(t, c, ids) {
		if time.Now().After(deadline) {
			left, _ := c.cmd(ctx, "squeue", "-h", "-o", "%i %T %r %N")
			t.Fatalf("not all jobs ran and ended in 90 s: %d of %d seen running; squeue:\n%s\nagent log:\n%s", len(seen), len(ids), left, tail(logBuf.String(), 3000))
		}
		jobs, err := CLI{Conf: c.conf}.Jobs(ctx, "torus")
		if err != nil {
			t.Fatal(err)
		}
		placed, _ := svc.Jobs(false)
		byName := map[string]*client.JobRecord{}
		for _, r := range placed {
			byName[r.Name] = r
		}
		for _, j := range jobs {
			if j.State != "RUNNING" {
				continue
			}
			r := byName[fmt.Sprintf("slurm-%d", j.ID)]
			if r == nil {
				// It may have ended in the fabric manager's view only if
				// Slurm finished it meanwhile.
				continue
			}
			got, err := sched.ExpandHostlist(j.NodeList)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, coord := range append(append([]string(nil), r.Active...), r.TransitNodes...) {
				want = append(want, names[nodeID(svc, coord)])
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("job %d runs on %v, icn chose %v", j.ID, got, want)
			}
			if slices.Contains(got, names[5]) {
				t.Fatalf("job %d runs on the drained node %s", j.ID, names[5])
			}
			if ok, problem, err := svc.VerifyJob(r.ID); err != nil || !ok {
				t.Fatalf("job %d's table: %v %s", j.ID, err, problem)
			}
			seen[j.ID] = j.NodeList
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Every job ended: the fabric manager holds none of them after the
	// next rounds.
	for end := time.Now().Add(10 * time.Second); ; {
		placed, _ := svc.Jobs(false)
		if len(placed) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d jobs still held in icn after Slurm ended them", len(placed))
		}
		time.Sleep(200 * time.Millisecond)
	}
	fv := svc.Fabric()
	if !slices.Contains(fv.FailedNodes, names2coord(svc, names[5], names)) {
		t.Fatalf("drained %s is not failed in icn: %v", names[5], fv.FailedNodes)
	}
	cancel()
	<-done
	t.Logf("%d jobs placed by icn and run by Slurm; agent log:\n%s", len(seen), tail(logBuf.String(), 1200))
}

// startTorus starts a fabric manager on torus:4x4x2 behind an HTTP server
// (both stopped with the test) and returns it, its URL, token and the
// Slurm names of its 32 nodes.
func startTorus(t *testing.T) (*fm.Service, string, string, []string) {
	t.Helper()
	svc, tok, err := fm.Open(fm.Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:4x4x2", NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, api.Options{}))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	nn := sched.NewNodeNamer("nid", 32)
	var names []string
	for v := 0; v < 32; v++ {
		names = append(names, nn.Name(v))
	}
	return svc, srv.URL, tok, names
}

func stillThere(t *testing.T, c *cluster, ids []int) bool {
	jobs, err := CLI{Conf: c.conf}.Jobs(context.Background(), "torus")
	if err != nil {
		t.Fatal(err)
	}
	return len(jobs) > 0
}

func nodeID(svc *fm.Service, coord string) int {
	for _, n := range svc.Fabric().Nodes {
		if n.Name == coord {
			return n.ID
		}
	}
	return -1
}

func names2coord(svc *fm.Service, slurmName string, names []string) string {
	i := slices.Index(names, slurmName)
	return svc.Fabric().Nodes[i].Name
}

// syncBuffer is a bytes.Buffer safe for the agent's goroutine.
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
