package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// icn slurm install writes the four files for the fabric: the Lua
// script and the unit name the partition, slurm.conf.icn has the node
// and partition lines of the fabric's nodes, the environment file is
// 0600 with the server and token path, the unit passes the recommended
// transit fraction; a second install with other contents refuses,
// showing the difference and writing nothing, and --force overwrites;
// bad flags get one line and a non-zero exit.
func TestSlurmInstall(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runICN(t, dir, "slurm", "install", "--topo", "torus:4x4x2", "--dir", "etc", "--partition", "tor1", "--server", "http://fm:8080", "--token-file", "/srv/icn/token")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	read := func(f string) string {
		data, err := os.ReadFile(filepath.Join(dir, "etc", f))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, f := range []string{"job_submit.lua", "slurm.conf.icn", "icn-slurm-agent.service", "icn-slurm-agent.env"} {
		if !strings.Contains(out, "wrote "+filepath.Join(dir, "etc", f)) {
			t.Fatalf("%s not reported written: %q", f, out)
		}
		if f != "icn-slurm-agent.env" && !strings.Contains(read(f), "tor1") {
			t.Fatalf("%s does not name the partition:\n%s", f, read(f))
		}
	}
	conf := read("slurm.conf.icn")
	for _, line := range []string{"JobSubmitPlugins=lua", "NodeName=nid[00-31] State=UNKNOWN", "PartitionName=tor1 Nodes=nid[00-31] "} {
		if !strings.Contains(conf, "\n"+line) {
			t.Fatalf("slurm.conf.icn lacks %q:\n%s", line, conf)
		}
	}
	env := read("icn-slurm-agent.env")
	if !strings.Contains(env, "\nICN_SERVER=http://fm:8080\n") || !strings.Contains(env, "\nICN_TOKEN_FILE=/srv/icn/token\n") {
		t.Fatalf("environment file:\n%s", env)
	}
	if st, err := os.Stat(filepath.Join(dir, "etc", "icn-slurm-agent.env")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("environment file mode: %v %v", st.Mode(), err)
	}
	unit := read("icn-slurm-agent.service")
	if !strings.Contains(unit, "EnvironmentFile="+filepath.Join(dir, "etc", "icn-slurm-agent.env")+"\n") || !strings.Contains(unit, " --transit 0.6 ") {
		t.Fatalf("unit:\n%s", unit)
	}
	// The same install again: nothing changes.
	out, errOut, code = runICN(t, dir, "slurm", "install", "--topo", "torus:4x4x2", "--dir", "etc", "--partition", "tor1", "--server", "http://fm:8080", "--token-file", "/srv/icn/token")
	if code != 0 || strings.Count(out, "unchanged ") != 4 {
		t.Fatalf("second install: exit %d %q %q", code, out, errOut)
	}
	// A site's own job_submit.lua is not overwritten without --force.
	site := "-- the site's own script\n"
	os.WriteFile(filepath.Join(dir, "etc", "job_submit.lua"), []byte(site), 0o644)
	out, errOut, code = runICN(t, dir, "slurm", "install", "--topo", "torus:4x4x2", "--dir", "etc", "--partition", "tor2")
	if code != 1 || !strings.Contains(out, "-- the site's own script") || !strings.Contains(out, `+local icn_partition = "tor2"`) ||
		!strings.Contains(errOut, "--force") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("install over a site's files: exit %d\nstdout %s\nstderr %q", code, out, errOut)
	}
	if read("job_submit.lua") != site || !strings.Contains(read("slurm.conf.icn"), "tor1") {
		t.Fatal("a refused install changed files")
	}
	if _, _, code = runICN(t, dir, "slurm", "install", "--topo", "torus:4x4x2", "--dir", "etc", "--partition", "tor2", "--force"); code != 0 || !strings.Contains(read("job_submit.lua"), `"tor2"`) {
		t.Fatalf("--force: exit %d", code)
	}
	for _, args := range [][]string{
		{"slurm", "install"},
		{"slurm", "install", "--dir", "x"},
		{"slurm", "install", "--dir", "x", "--topo", "torus:4x4", "--partition", "a b"},
		{"slurm", "install", "--dir", "x", "--topo", "torus:4x4", "--partition", "a,b"},
		{"slurm", "install", "--dir", "x", "--topo", "fattree:k=4,n=2"},
		{"slurm", "install", "--dir", "x", "--topo", "torus:4x"},
		{"slurm", "install", "--dir", "x", "--topo", "torus:4x4", "--transit", "2"},
		{"slurm", "agent", "--once", "--server", "http://127.0.0.1:1", "--token-file", "/dev/null"},
		{"slurm", "agent", "--once", "--server", "http://127.0.0.1:1", "--token-file", "/nonexistent/token"},
		{"slurm", "agent", "--once", "--interval", "0"},
	} {
		_, errOut, code := runICN(t, dir, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code == 0 || len(lines) != 1 || strings.Contains(errOut, "panic") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
