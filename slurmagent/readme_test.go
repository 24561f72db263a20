package slurmagent

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/sched"
)

// readmeWalkthrough returns the lines of the README's Slurm walkthrough:
// the shell block after the slurm-walkthrough marker.
func readmeWalkthrough(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "<!-- slurm-walkthrough")
	if !ok {
		t.Fatal("README.md has no slurm-walkthrough block")
	}
	_, block, _ := strings.Cut(after, "```sh\n")
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md: the slurm-walkthrough block does not end")
	}
	return strings.Split(strings.TrimSpace(block), "\n")
}

// TestSlurmREADMEWalkthrough runs the README's Slurm section line by line
// on a real slurmctld and one slurmd per node: the site's root (/etc,
// /var) is a temporary directory, the fabric manager's port a free one,
// icn the binary built from this tree. Two lines stand for what systemd
// does: "systemctl restart slurmctld" starts slurmctld and the slurmd
// (after the site's edit the README asks for: the nodes' address and
// hardware on the NodeName line), and "systemctl enable --now
// icn-slurm-agent" runs the unit's ExecStart with its EnvironmentFile.
// The job the walkthrough submits must run on exactly the nodes the
// fabric manager stored for it.
func TestSlurmREADMEWalkthrough(t *testing.T) {
	needSlurm(t)
	lines := readmeWalkthrough(t)
	root := t.TempDir()
	bin := filepath.Join(root, "icn")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/icn-hpc/icn/cmd/icn").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v %s", err, out)
	}
	state := filepath.Join(root, "slurm-state")
	for _, d := range []string{state, root + "/etc/slurm", root + "/etc/systemd/system"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := root + "/etc/slurm/slurm.conf"
	if err := os.WriteFile(conf, []byte(clusterSettings(t, state)), 0o644); err != nil {
		t.Fatal(err)
	}
	fmAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	rewrite := func(line string) string {
		line = strings.ReplaceAll(line, "127.0.0.1:8080", fmAddr)
		line = strings.ReplaceAll(line, " /etc/", " "+root+"/etc/")
		line = strings.ReplaceAll(line, " /var/", " "+root+"/var/")
		if rest, ok := strings.CutPrefix(line, "icn "); ok {
			line = bin + " " + rest
		}
		return line
	}
	env := append(os.Environ(), "SLURM_CONF="+conf)
	var logs []*syncBuffer
	background := func(script string, env []string) *syncBuffer {
		cmd := exec.Command("sh", "-c", "exec "+script)
		cmd.Dir, cmd.Env = root, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
		logs = append(logs, out)
		return out
	}
	logTails := func() string {
		var b strings.Builder
		for _, l := range logs {
			b.WriteString(tail(l.String(), 1500) + "\n---\n")
		}
		return b.String()
	}
	ctx := context.Background()
	var c *cluster
	var nodeNames []string
	jobID := 0
	for _, line := range lines {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case line == "systemctl restart slurmctld":
			// The site's edit: its nodes' address and hardware on the
			// NodeName line (here one slurmd per node on 127.0.0.1, a
			// port each).
			data, err := os.ReadFile(conf)
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^NodeName=(\S+) `).FindSubmatchIndex(data)
			if m == nil {
				t.Fatalf("slurm.conf has no NodeName line after the walkthrough's steps:\n%s", data)
			}
			nodeNames, err = sched.ExpandHostlist(string(data[m[2]:m[3]]))
			if err != nil {
				t.Fatal(err)
			}
			ports := make([]string, len(nodeNames))
			for i := range ports {
				ports[i] = fmt.Sprint(freePort(t))
			}
			edit := fmt.Sprintf(" NodeAddr=127.0.0.1 Port=%s CPUs=1", strings.Join(ports, ","))
			data = slices.Concat(data[:m[3]], []byte(edit), data[m[3]:])
			if err := os.WriteFile(conf, data, 0o644); err != nil {
				t.Fatal(err)
			}
			c = runCluster(t, state, conf, nodeNames)
		case line == "systemctl enable --now icn-slurm-agent":
			unit, err := os.ReadFile(root + "/etc/systemd/system/icn-slurm-agent.service")
			if err != nil {
				t.Fatal(err)
			}
			agentEnv := slices.Clone(env)
			var start string
			sc := bufio.NewScanner(strings.NewReader(string(unit)))
			for sc.Scan() {
				if p, ok := strings.CutPrefix(sc.Text(), "EnvironmentFile="); ok {
					st, err := os.Stat(p)
					if err != nil || st.Mode().Perm() != 0o600 {
						t.Fatalf("the unit's environment file %s: %v %v", p, err, st)
					}
					data, _ := os.ReadFile(p)
					for _, l := range strings.Split(string(data), "\n") {
						if l != "" && !strings.HasPrefix(l, "#") {
							agentEnv = append(agentEnv, l)
						}
					}
				}
				if p, ok := strings.CutPrefix(sc.Text(), "ExecStart="); ok {
					start = p
				}
			}
			if !strings.Contains(start, " --transit 0.6 ") {
				t.Fatalf("the unit's ExecStart: %q", start)
			}
			start = strings.Replace(start, "/usr/local/bin/icn", bin, 1)
			start = strings.Replace(start, "127.0.0.1:9101", fmt.Sprintf("127.0.0.1:%d", freePort(t)), 1)
			background(start, agentEnv)
		case strings.HasSuffix(line, "&"):
			background(rewrite(strings.TrimSuffix(line, "&")), env)
			waitHTTP(t, "http://"+fmAddr+"/healthz", logTails)
		case strings.HasPrefix(line, "squeue"):
			// Repeated, as a site would, until the job runs (a round).
			var out string
			for end := time.Now().Add(30 * time.Second); !strings.Contains(out, " RUNNING "); time.Sleep(300 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("job %d not running after 30 s: %q\n%s", jobID, out, logTails())
				}
				o, err := c.cmd(ctx, "sh", "-c", rewrite(line))
				if err != nil {
					t.Fatalf("%s: %v %s", line, err, o)
				}
				out = o
			}
			checkRunsOnICNNodes(t, out, jobID, fmAddr, root+"/etc/icn/token", nodeNames)
			t.Logf("%s\n%s", line, out)
		default:
			cmd := exec.Command("sh", "-c", rewrite(line))
			cmd.Dir, cmd.Env = root, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s\n%s", line, err, out, logTails())
			}
			if strings.HasPrefix(line, "sbatch") {
				fmt.Sscanf(strings.TrimPrefix(strings.TrimSpace(string(out)), "Submitted batch job "), "%d", &jobID)
			}
			if strings.HasPrefix(line, "icn job list") && !strings.Contains(string(out), fmt.Sprintf("slurm-%d", jobID)) {
				t.Fatalf("icn job list does not show slurm-%d:\n%s", jobID, out)
			}
		}
	}
	if c == nil || jobID == 0 {
		t.Fatalf("the walkthrough started no cluster (%v) or submitted no job (%d)", c != nil, jobID)
	}
}

// waitHTTP waits until url answers.
func waitHTTP(t *testing.T, url string, logs func() string) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s does not answer after 30 s\n%s", url, logs())
		}
	}
}

// checkRunsOnICNNodes checks that job id, running in squeue's output
// ("%i %T %r %N %k"), runs on exactly the nodes the fabric manager stored
// for it.
func checkRunsOnICNNodes(t *testing.T, squeue string, id int, fmAddr, tokenFile string, names []string) {
	t.Helper()
	var hl string
	for _, l := range strings.Split(squeue, "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 && f[0] == fmt.Sprint(id) && f[1] == "RUNNING" {
			hl = f[3]
		}
	}
	got, err := sched.ExpandHostlist(hl)
	if err != nil || len(got) == 0 {
		t.Fatalf("job %d's nodes in %q: %v", id, squeue, err)
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	m := &Client{C: client.New("http://"+fmAddr, strings.TrimSpace(string(tok)))}
	ctx := context.Background()
	jobs, err := m.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fv, err := m.Fabric(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byCoord := map[string]int{}
	for _, n := range fv.Nodes {
		byCoord[n.Name] = n.ID
	}
	for _, r := range jobs {
		if r.Name != fmt.Sprintf("slurm-%d", id) {
			continue
		}
		var want []string
		for _, coord := range append(append([]string(nil), r.Active...), r.TransitNodes...) {
			want = append(want, names[byCoord[coord]])
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("job %d runs on %v, icn stored %v", id, got, want)
		}
		return
	}
	t.Fatalf("job %d runs on %v with no placement in icn", id, got)
}
