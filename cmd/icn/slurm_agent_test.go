package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// icn slurm install writes the three files, with the partition in the
// Lua script and the unit; bad flags get one line and a non-zero exit.
func TestSlurmInstall(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runICN(t, dir, "slurm", "install", "--dir", "etc", "--partition", "tor1", "--server", "http://fm:8080")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, f := range []string{"job_submit.lua", "slurm.conf.icn", "icn-slurm-agent.service"} {
		data, err := os.ReadFile(filepath.Join(dir, "etc", f))
		if err != nil || !strings.Contains(out, f) {
			t.Fatalf("%s: %v (output %q)", f, err, out)
		}
		if f != "slurm.conf.icn" && !strings.Contains(string(data), "tor1") {
			t.Fatalf("%s does not name the partition:\n%s", f, data)
		}
	}
	for _, args := range [][]string{
		{"slurm", "install"},
		{"slurm", "install", "--dir", "x", "--partition", "a b"},
		{"slurm", "agent", "--once", "--server", "http://127.0.0.1:1", "--token-file", "/dev/null"},
		{"slurm", "agent", "--once", "--interval", "0"},
	} {
		_, errOut, code := runICN(t, dir, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code == 0 || len(lines) != 1 || strings.Contains(errOut, "panic") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
