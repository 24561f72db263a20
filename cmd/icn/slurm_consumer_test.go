package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/sched"
	"github.com/icn-hpc/icn/topology"
)

// Slurm itself is the judge of what icn writes for it: slurmctld reads
// topology.conf (topology/tree) and scontrol expands hostlist expressions.
// The tests skip without Slurm unless ICN_REQUIRE_SLURM=1 (CI installs
// Debian's slurmctld and slurm-client). Debian 12 ships Slurm 22.05, which
// predates topology.yaml and topology/block; those are checked against
// topology.yaml(5) in the sched package.

// slurmTools returns the paths of slurmctld and scontrol, or skips.
func slurmTools(t *testing.T) (ctld, scontrol string) {
	t.Helper()
	ctld, err1 := exec.LookPath("slurmctld")
	if err1 != nil {
		ctld, err1 = exec.LookPath("/usr/sbin/slurmctld")
	}
	scontrol, err2 := exec.LookPath("scontrol")
	if err1 != nil || err2 != nil {
		if os.Getenv("ICN_REQUIRE_SLURM") == "1" {
			t.Fatalf("ICN_REQUIRE_SLURM=1 but Slurm is missing: %v %v", err1, err2)
		}
		t.Skip("slurmctld/scontrol not installed")
	}
	return ctld, scontrol
}

// slurmCluster is a slurm.conf for a controller on loopback whose nodes
// are the given names (each on its own 127.0.0.x address).
type slurmCluster struct {
	dir, conf string
	port      int
}

func newSlurmCluster(t *testing.T, nodes []string, topology bool) slurmCluster {
	t.Helper()
	if len(nodes) > 250 {
		t.Fatalf("%d nodes: one loopback address each allows at most 250", len(nodes))
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ClusterName=icntest\nSlurmctldHost=localhost\nSlurmctldPort=%d\nSlurmdPort=%d\n", port, port+1)
	fmt.Fprintf(&b, "AuthType=auth/none\nCredType=cred/none\nSlurmUser=%s\nMailProg=/bin/true\n", u.Username)
	fmt.Fprintf(&b, "StateSaveLocation=%s\nSlurmctldPidFile=%s\nSlurmctldLogFile=%s\n",
		filepath.Join(dir, "state"), filepath.Join(dir, "slurmctld.pid"), filepath.Join(dir, "slurmctld.log"))
	if topology {
		b.WriteString("TopologyPlugin=topology/tree\n")
	}
	addrs := make([]string, len(nodes))
	for i := range nodes {
		addrs[i] = fmt.Sprintf("127.0.0.%d", i+2)
	}
	fmt.Fprintf(&b, "NodeName=%s NodeAddr=%s CPUs=1 State=UNKNOWN\n", strings.Join(nodes, ","), strings.Join(addrs, ","))
	b.WriteString("PartitionName=all Nodes=ALL Default=YES State=UP\n")
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return slurmCluster{dir: dir, conf: conf, port: port}
}

// scontrol runs scontrol with the cluster's configuration.
func (c slurmCluster) scontrol(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// expand asks scontrol to expand a hostlist expression.
func (c slurmCluster) expand(t *testing.T, bin, expr string) []string {
	t.Helper()
	out, err := c.scontrol(context.Background(), bin, "show", "hostnames", expr)
	if err != nil {
		t.Fatalf("scontrol show hostnames %q: %v: %s", expr, err, out)
	}
	return strings.Fields(out)
}

// TestSlurmExpandsHostlists: for random node sets, scontrol expands the
// expression icn writes into exactly the set's names (zero-padded numbers,
// unpadded host names with a dash, mixed lists).
func TestSlurmExpandsHostlists(t *testing.T) {
	_, scontrol := slurmTools(t)
	c := newSlurmCluster(t, []string{"nid0000"}, false)
	r := rand.New(rand.NewPCG(1, 2))
	namers := []func(int) string{
		sched.NewNodeNamer("nid", 1000).Name,
		func(v int) string { return fmt.Sprintf("node-%d", v+1) },
		func(v int) string {
			if v%3 == 0 {
				return fmt.Sprintf("gpu%02d", v)
			}
			return fmt.Sprintf("cn%d", v)
		},
	}
	for trial := range 30 {
		name := namers[trial%len(namers)]
		var want []string
		for v := range 1 + r.IntN(300) {
			if r.IntN(3) > 0 {
				want = append(want, name(v))
			}
		}
		if len(want) == 0 {
			continue
		}
		expr := sched.Hostlist(want)
		got := c.expand(t, scontrol, expr)
		if !sameSet(got, want) {
			t.Fatalf("trial %d: Slurm expands %q to %d names, want %d (%v…)", trial, expr, len(got), len(want), got[:min(5, len(got))])
		}
	}
}

// TestSlurmAllocHostlist: the --hostlist of icn alloc names, for Slurm,
// exactly the nodes (active and transit) the JSON result lists.
func TestSlurmAllocHostlist(t *testing.T) {
	_, scontrol := slurmTools(t)
	c := newSlurmCluster(t, []string{"nid0000"}, false)
	for _, tc := range []struct{ topo, busy string }{
		{"torus:4x4x4", ""}, {"torus:8x8x4x4", "0-3.*.*.*"},
	} {
		o := allocOptions{nodes: 12, transit: 4, algo: "improved", rules: "angara*", prefix: "nid", hostlist: true, busy: tc.busy}
		o.topo.spec = tc.topo
		var text strings.Builder
		if err := runAlloc(context.Background(), o, &text); err != nil {
			t.Fatal(err)
		}
		var view struct {
			Chosen struct {
				Active, Transit []int
			}
			Hostlist string
		}
		allocJSON(t, o, &view)
		g, err := topology.Parse(tc.topo)
		if err != nil {
			t.Fatal(err)
		}
		nn := sched.NewNodeNamer("nid", g.NumNodes())
		var want []string
		for _, v := range append(view.Chosen.Active, view.Chosen.Transit...) {
			want = append(want, nn.Name(v))
		}
		expr := strings.TrimSpace(text.String())
		if got := c.expand(t, scontrol, expr); !sameSet(got, want) || expr != view.Hostlist {
			t.Fatalf("%s: Slurm expands %q to %v, want %v (JSON hostlist %q)", tc.topo, expr, got, want, view.Hostlist)
		}
	}
}

// TestSlurmReadsTopologyConf starts slurmctld on icn's topology.conf and
// checks, with `scontrol show topology`, that Slurm sees every leaf switch
// with exactly icn's nodes, every upper switch with icn's children, every
// node under one leaf, and logs no complaint about the file.
func TestSlurmReadsTopologyConf(t *testing.T) {
	ctld, scontrol := slurmTools(t)
	// A torus is written for topology/tree for Slurm before 23.11
	// (--slurm-version 22.05): its blocks as leaves, bricks above.
	for _, fabric := range []string{"fattree:k=4,n=3", "dragonfly:a=4,p=2,h=2", "file:../../unicast/testdata/ft2.ibnet", "file:../../topology/testdata/small.ibnet", "torus:4x4x4"} {
		t.Run(fabric, func(t *testing.T) {
			checkSlurmTopology(t, ctld, scontrol, fabric)
		})
	}
}

func checkSlurmTopology(t *testing.T, ctld, scontrol, fabric string) {
	o := slurmTopologyOptions{prefix: "nid", name: "default", format: "yaml", names: "auto", dir: t.TempDir(), version: "25.05"}
	if strings.HasPrefix(fabric, "torus:") {
		o.version = "22.05"
	}
	o.fabric.spec = fabric
	o.out.json = true
	var js strings.Builder
	if err := runSlurmTopology(context.Background(), o, &js); err != nil {
		t.Fatal(err)
	}
	var top sched.SlurmTopology
	decodeJSON(t, js.String(), &top)
	var nodes []string
	want := map[string][]string{} // switch -> nodes (leaves) or children
	for _, s := range top.Tree.Switches {
		expr := s.Nodes + s.Children
		names, err := sched.ExpandHostlist(expr)
		if err != nil {
			t.Fatal(err)
		}
		want[s.Switch] = names
		if s.Nodes != "" {
			nodes = append(nodes, names...)
		}
	}
	if strings.HasPrefix(fabric, "file:") && !strings.HasPrefix(nodes[0], "node-") {
		t.Fatalf("%s: nodes named %v, want the host names of the file's node descriptions", fabric, nodes)
	}
	c := newSlurmCluster(t, nodes, true)
	conf, err := os.ReadFile(filepath.Join(o.dir, "topology.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "topology.conf"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctld, "-D", "-i", "-f", c.conf)
	cmd.Dir = c.dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var out string
	for {
		out, err = c.scontrol(ctx, scontrol, "show", "topology")
		if err == nil && strings.Contains(out, "SwitchName=") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("slurmctld never answered: %v: %s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := fields(line)
		sw, level := f["SwitchName"], f["Level"]
		w, ok := want[sw]
		if !ok {
			t.Fatalf("Slurm shows switch %q that icn did not write: %s", sw, line)
		}
		got := f["Switches"]
		if level == "0" {
			got = f["Nodes"]
			for _, n := range c.expand(t, scontrol, got) {
				seen[n]++
			}
		}
		if g := c.expand(t, scontrol, got); !sameSet(g, w) {
			t.Errorf("switch %s: Slurm has %v, icn wrote %v", sw, g, w)
		}
		delete(want, sw)
	}
	if len(want) > 0 {
		t.Errorf("switches icn wrote that Slurm does not show: %v", want)
	}
	for _, n := range nodes {
		if seen[n] != 1 {
			t.Errorf("node %s is under %d leaf switches in Slurm", n, seen[n])
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	log, _ := os.ReadFile(filepath.Join(c.dir, "slurmctld.log"))
	for _, l := range strings.Split(string(log), "\n") {
		// A first start has no saved state, and slurmctld loads every MPI
		// plugin installed on the host (Debian's pmix one fails without
		// the PMIx development library, which slurmctld does not depend
		// on), and a loaded host makes slurmctld warn about the latency
		// of gettimeofday(): none is about icn's files. Anything else is
		// a complaint.
		if strings.Contains(l, "error:") && !strings.Contains(l, "state file") && !strings.Contains(l, "backup state") &&
			!strings.Contains(l, "mpi/") && !strings.Contains(l, "MPI:") && !strings.Contains(l, "High latency for") {
			t.Errorf("slurmctld: %s", l)
		}
	}
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v: %.200s", err, s)
	}
}

// fields splits "Key=Value Key=Value" as scontrol prints it.
func fields(line string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// sameSet reports whether a and b hold the same names, each as often.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
