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

// startCluster starts slurmctld and a slurmd per node of names and of
// spare, with icn's job_submit.lua for partition "torus" (the nodes of
// names). Partition "plain" has the spare nodes, or without them all
// nodes (shared with torus: Slurm's own placement on the same machine,
// the replay's baseline).
func startCluster(t *testing.T, names, spare []string) *cluster {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(clusterSettings(t, dir))
	b.WriteString("JobSubmitPlugins=lua\n")
	// A port per node, each free when chosen (a fixed range may hold a
	// port some other process uses).
	all := append(slices.Clone(names), spare...)
	for _, n := range all {
		fmt.Fprintf(&b, "NodeName=%s NodeAddr=127.0.0.1 Port=%d CPUs=1 State=UNKNOWN\n", n, freePort(t))
	}
	fmt.Fprintf(&b, "PartitionName=torus Nodes=%s Default=YES State=UP MaxTime=INFINITE\n", strings.Join(names, ","))
	plain := "ALL"
	if len(spare) > 0 {
		plain = strings.Join(spare, ",")
	}
	fmt.Fprintf(&b, "PartitionName=plain Nodes=%s Default=NO State=UP MaxTime=INFINITE\n", plain)
	for name, data := range map[string]string{"slurm.conf": b.String(), "job_submit.lua": JobSubmitLua("torus")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return runCluster(t, dir, filepath.Join(dir, "slurm.conf"), all)
}

// clusterSettings is slurm.conf for a cluster on this host with its
// state, logs and spool under dir: everything but the nodes, the
// partitions and the job_submit plugin.
func clusterSettings(t *testing.T, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ClusterName=icnagent\nSlurmctldHost=localhost\nSlurmctldPort=%d\n", freePort(t))
	fmt.Fprintf(&b, "AuthType=auth/none\nCredType=cred/none\nSlurmUser=root\nSlurmdUser=root\nMailProg=/bin/true\n")
	fmt.Fprintf(&b, "StateSaveLocation=%s/state\nSlurmctldPidFile=%s/slurmctld.pid\nSlurmctldLogFile=%s/slurmctld.log\n", dir, dir, dir)
	// The per-node files live under node/, which each slurmd's mount
	// namespace covers with its own directory.
	fmt.Fprintf(&b, "SlurmdPidFile=%s/node/slurmd.pid\nSlurmdLogFile=%s/node/slurmd.log\nSlurmdSpoolDir=%s/node/spool\n", dir, dir, dir)
	b.WriteString("ProctrackType=proctrack/pgid\nTaskPlugin=task/none\nSchedulerType=sched/builtin\nSelectType=select/linear\n")
	b.WriteString("ReturnToService=2\nMpiDefault=none\nSlurmctldTimeout=30\nSlurmdTimeout=30\nInactiveLimit=0\nMinJobAge=2\n")
	return b.String()
}

// runCluster starts slurmctld on conf (whose settings are
// clusterSettings(dir)) and one slurmd for each of names.
func runCluster(t *testing.T, dir, conf string, names []string) *cluster {
	t.Helper()
	c := &cluster{dir: dir, conf: conf}
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
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
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
		out, _ := c.cmd(context.Background(), "sinfo", "-h", "-N", "-t", "idle", "-o", "%N")
		idle := strings.Fields(out)
		slices.Sort(idle)
		if len(slices.Compact(idle)) == len(names) {
			return c
		}
		if time.Now().After(retry) {
			retry = deadline
			for _, n := range names {
				if !slices.Contains(idle, n) {
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

// TestSlurmPlacesThroughICN runs jobs end to end through a real
// slurmctld (restarted while they wait) and 32 slurmd on torus:4x4x2
// (partition torus, owned by icn) and one spare node (partition plain),
// placed by an agent that is itself replaced midway. Every way around
// icn is tried: a list of partitions with torus, --nodelist, a job moved
// into torus and released, a release and a ReqNodeList of a waiting job
// by the administrator, a requeue, and a node of torus added to plain
// (the agent refuses to place while it is shared). Every job runs on
// exactly the nodes the fabric manager stored for it, each of those sets
// has a verified routing table, a job its user holds stays held until
// released and is then placed, a job larger than the fabric neither runs
// nor stops the others, every job's nodes are released in the fabric
// manager when it ends, and a node drained in Slurm is failed in icn
// and never used.
func TestSlurmPlacesThroughICN(t *testing.T) {
	needSlurm(t)
	svc, srvURL, tok, names := startTorus(t)
	c := startCluster(t, names, []string{"aux0"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logBuf syncBuffer
	cfg := Config{Partition: "torus", Prefix: "nid", Window: 4, Transit: 0.6, Log: &logBuf}
	a, err := New(ctx, cfg, CLI{Conf: c.conf}, &Client{C: client.New(srvURL, tok)})
	if err != nil {
		t.Fatal(err)
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := c.cmd(ctx, args[0], args[1:]...)
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(c.dir, "slurmctld.log"))
			t.Fatalf("%v: %v %s\nslurmctld.log: %s", args, err, out, tail(string(log), 1500))
		}
		return strings.TrimSpace(out)
	}
	refused := func(why string, args ...string) {
		t.Helper()
		if out, err := c.cmd(ctx, args[0], args[1:]...); err == nil {
			t.Fatalf("%s: %v succeeded: %s", why, args, out)
		}
	}
	submit := func(args ...string) int {
		t.Helper()
		var id int
		out := must(append([]string{"sbatch", "--parsable"}, args...)...)
		if _, err := fmt.Sscanf(out, "%d", &id); err != nil {
			t.Fatalf("sbatch %v: %q", args, out)
		}
		return id
	}
	state := func(id int) (st, reason string) {
		out, _ := c.cmd(ctx, "squeue", "-h", "-j", fmt.Sprint(id), "-o", "%T|%r")
		st, reason, _ = strings.Cut(strings.TrimSpace(out), "|")
		return st, reason
	}
	// A node drained by the site before the jobs come.
	must("scontrol", "update", "NodeName="+names[5], "State=DRAIN", "Reason=site_maintenance")

	// Ways around icn at submission, refused with the reason.
	for _, args := range [][]string{
		{"-p", "torus", "-N", "2", "-w", names[0] + "," + names[1]},
		{"-p", "torus,plain", "-N", "1"},
		{"-p", "plain,torus", "-N", "2", "-w", names[0] + "," + names[1]},
		{"-p", "torus", "-N", "33"},
	} {
		out, err := c.cmd(ctx, "sbatch", append(args, "--wrap", "true")...)
		if err == nil || !strings.Contains(out, "icn") {
			t.Fatalf("sbatch %v: %v %s", args, err, out)
		}
	}
	sizes := []int{2, 3, 4, 1, 6, 2, 5, 3, 8, 2, 4, 1, 3, 6, 2, 4, 5, 2, 3, 4}
	var ids []int
	for i, n := range sizes {
		sleep := 1 + i%3
		if i == 1 {
			sleep = 8 // requeued while it runs
		}
		ids = append(ids, submit("-p", "torus", "-N", fmt.Sprint(n), "-J", fmt.Sprintf("t%d", i), "--wrap", fmt.Sprintf("sleep %d", sleep)))
	}
	// Held by its user at submission: kept held until released.
	userHeld := submit("-p", "torus", "-H", "-N", "2", "--wrap", "sleep 1")
	// Submitted to plain, held, moved into torus and released: it
	// waits for icn like the others.
	moved := submit("-p", "plain", "-H", "-N", "1", "--wrap", "sleep 1")
	must("scontrol", "update", "JobId="+fmt.Sprint(moved), "Partition=torus")
	must("scontrol", "release", fmt.Sprint(moved))
	// The administrator releases a waiting job, or names its nodes:
	// the release lifts nothing but a user's hold, the nodes are refused.
	must("scontrol", "release", fmt.Sprint(ids[0]))
	refused("ReqNodeList of a waiting job", "scontrol", "update", "JobId="+fmt.Sprint(ids[2]), "ReqNodeList="+names[0])
	// Larger than the fabric with its drained node: refused by icn,
	// never run, and no obstacle to the others.
	big := submit("-p", "torus", "-N", "32", "--wrap", "true")
	ids = append(ids, moved)
	time.Sleep(time.Second)
	for _, id := range []int{ids[0], moved, big} {
		if st, reason := state(id); st != "PENDING" || !strings.HasPrefix(reason, "JobHeld") {
			t.Fatalf("job %d before the agent: %s %s", id, st, reason)
		}
	}
	if st, reason := state(userHeld); st != "PENDING" || reason != "JobHeldUser" {
		t.Fatalf("user-held job %d: %s %s", userHeld, st, reason)
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
	a, err = New(ctx, cfg, CLI{Conf: c.conf}, &Client{C: client.New(srvURL, tok)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, 300*time.Millisecond) }()
	// Watch until every job has run and ended: each running job's nodes
	// against the fabric manager's record of it.
	seen := map[int]string{}
	requeued, shared, released := false, false, false
	requeuePending, reran := false, false
	deadline := time.Now().Add(120 * time.Second)
	for len(seen) < len(ids) || stillThere(t, c, ids) {
		if time.Now().After(deadline) {
			left, _ := c.cmd(ctx, "squeue", "-h", "-o", "%i %T %r %N %k")
			t.Fatalf("not all jobs ran and ended in 120 s: %d of %d seen running; squeue:\n%s\nagent log:\n%s", len(seen), len(ids), left, tail(logBuf.String(), 3000))
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
			if j.ID == big && (j.State != "PENDING" || !strings.HasPrefix(j.Reason, "JobHeld")) {
				t.Fatalf("job %d, larger than the fabric: %+v", big, j)
			}
			if j.ID == userHeld && !released && (j.State != "PENDING" || j.Reason != "JobHeldUser") {
				t.Fatalf("job %d held by its user: %+v", userHeld, j)
			}
			if j.ID == ids[1] && requeued {
				requeuePending = requeuePending || j.State == "PENDING"
				reran = reran || requeuePending && j.State == "RUNNING"
			}
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
			if j.ID == ids[1] && !requeued {
				// Requeued while it runs: it keeps icn's placement and
				// runs again on the same nodes (its begin time, which
				// Slurm delays by two minutes, brought forward).
				requeued = true
				must("scontrol", "requeue", fmt.Sprint(j.ID))
				go func() {
					for range 40 {
						time.Sleep(250 * time.Millisecond)
						if st, reason := state(ids[1]); st == "PENDING" && reason == "BeginTime" {
							c.cmd(ctx, "scontrol", "update", "JobId="+fmt.Sprint(ids[1]), "StartTime=now")
							return
						}
					}
				}()
			}
		}
		if len(seen) >= len(ids)/2 && !shared {
			// Two nodes of torus join plain: the agent stops placing, a
			// new agent refuses to start, both saying why; then back.
			shared = true
			mark := len(logBuf.String())
			must("scontrol", "update", "PartitionName=plain", "Nodes=aux0,"+names[20]+","+names[21])
			if _, err := New(ctx, cfg, CLI{Conf: c.conf}, &Client{C: client.New(srvURL, tok)}); err == nil || !strings.Contains(err.Error(), "nid[20-21]") {
				t.Fatalf("agent start on shared nodes: %v", err)
			}
			for end := time.Now().Add(5 * time.Second); !strings.Contains(logBuf.String()[mark:], "shares nodes nid[20-21] with partition plain"); {
				if time.Now().After(end) {
					t.Fatalf("the agent's rounds did not refuse shared nodes:\n%s", logBuf.String()[mark:])
				}
				time.Sleep(100 * time.Millisecond)
			}
			must("scontrol", "update", "PartitionName=plain", "Nodes=aux0")
		}
		if len(seen) == len(ids) && !released {
			// Every other job ran while the user's hold was kept; the
			// user releases it and icn places it.
			released = true
			must("scontrol", "release", fmt.Sprint(userHeld))
			ids = append(ids, userHeld)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !reran || !released {
		t.Fatalf("requeued job ran again %v, user hold released %v", reran, released)
	}
	// A large job behind running ones: it heads the window with a
	// reservation (in its comment), starts no later than that, and the
	// jobs behind it, whose time limits run past it, do not start first.
	var fillers []int
	for i := range 4 {
		fillers = append(fillers, submit("-p", "torus", "-N", "6", "-t", "1", "-J", fmt.Sprintf("f%d", i), "--wrap", "sleep 5"))
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		running := 0
		for _, id := range fillers {
			if st, _ := state(id); st == "RUNNING" {
				running++
			}
		}
		if running == len(fillers) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("fillers not running after 30 s\n%s", tail(logBuf.String(), 2000))
		}
	}
	head := submit("-p", "torus", "-N", "24", "-t", "1", "-J", "head", "--wrap", "sleep 1")
	var behind []int
	for i := range 3 {
		behind = append(behind, submit("-p", "torus", "-N", "2", "-t", "1", "-J", fmt.Sprintf("b%d", i), "--wrap", "sleep 1"))
	}
	var reserved, headStart time.Time
	starts := map[int]time.Time{}
	for end := time.Now().Add(60 * time.Second); len(starts) < 1+len(behind); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(end) {
			left, _ := c.cmd(ctx, "squeue", "-h", "-o", "%i %T %r %N %k")
			t.Fatalf("head %d and the jobs behind it did not all start in 60 s; squeue:\n%s\nagent log:\n%s", head, left, tail(logBuf.String(), 3000))
		}
		out, _ := c.cmd(ctx, "squeue", "-h", "-o", "%i|%T|%S|%k")
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.SplitN(l, "|", 4)
			if len(f) != 4 {
				continue
			}
			var id int
			fmt.Sscanf(f[0], "%d", &id)
			if id == head && f[1] == "PENDING" {
				if _, hhmmss, ok := strings.Cut(f[3], "reserved to start by "); ok {
					at, err := time.Parse("15:04:05", strings.Fields(hhmmss)[0])
					if err == nil {
						now := time.Now().UTC()
						at = time.Date(now.Year(), now.Month(), now.Day(), at.Hour(), at.Minute(), at.Second(), 0, time.UTC)
						if reserved.IsZero() || at.Before(reserved) {
							reserved = at
						}
					}
				}
			}
			if (id == head || slices.Contains(behind, id)) && f[1] == "RUNNING" && starts[id].IsZero() {
				st, err := time.ParseInLocation("2006-01-02T15:04:05", f[2], time.Local)
				if err != nil {
					t.Fatalf("start time of job %d: %q", id, f[2])
				}
				starts[id] = st
			}
		}
	}
	headStart = starts[head]
	if reserved.IsZero() {
		t.Fatalf("head job %d never showed a reservation; agent log:\n%s", head, tail(logBuf.String(), 2000))
	}
	if headStart.After(reserved) {
		t.Fatalf("head job %d started at %v, after its reservation %v", head, headStart, reserved)
	}
	for _, id := range behind {
		if starts[id].Before(headStart) {
			t.Fatalf("job %d (time limit past the reservation) started at %v, before the head job at %v", id, starts[id], headStart)
		}
	}
	t.Logf("head job %d: reserved to start by %s, started %s", head, reserved.Format("15:04:05"), headStart.UTC().Format("15:04:05"))
	ids = append(ids, fillers...)
	ids = append(ids, head)
	ids = append(ids, behind...)
	for end := time.Now().Add(30 * time.Second); stillThere(t, c, ids); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the head and the jobs behind it did not end in 30 s")
		}
	}
	// The oversized job says why it waits.
	if out := must("squeue", "-h", "-j", fmt.Sprint(big), "-o", "%k|%r"); !strings.HasPrefix(out, "icn: refused") && !strings.HasPrefix(out, "icn: waiting:") || !strings.HasSuffix(out, "|JobHeldAdmin") {
		t.Fatalf("job %d: comment %q", big, out)
	}
	must("scancel", fmt.Sprint(big))
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
	if strings.Contains(logBuf.String(), "without a placement in icn") {
		t.Fatalf("a job ran or waited unheld without icn:\n%s", logBuf.String())
	}
	cancel()
	<-done
	t.Logf("%d jobs placed by icn and run by Slurm; agent log:\n%s", len(seen), tail(logBuf.String(), 1500))
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

// stillThere reports whether any job of ids is still in Slurm's queue.
func stillThere(t *testing.T, c *cluster, ids []int) bool {
	jobs, err := CLI{Conf: c.conf}.Jobs(context.Background(), "torus")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if slices.Contains(ids, j.ID) {
			return true
		}
	}
	return false
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
