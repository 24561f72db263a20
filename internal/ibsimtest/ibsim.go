package ibsimtest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sim is one ibsim process and the tools that talk to it.
type Sim struct {
	t       testing.TB
	preload string
	sock    string
	host    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex
	out     bytes.Buffer
}

// New prepares a simulator; it skips the test (fails it with
// ICN_REQUIRE_OPENSM set, as CI installs the peers) when ibsim, opensm,
// ibnetdiscover or libumad2sim are missing.
func New(t testing.TB) *Sim {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("ICN_REQUIRE_OPENSM") != "" {
		skip = t.Fatalf
	}
	for _, tool := range []string{"ibsim", "opensm", "ibnetdiscover"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip("%s not installed (Debian: opensm ibsim-utils infiniband-diags)", tool)
		}
	}
	libs, _ := filepath.Glob("/usr/lib*/*/umad2sim/libumad2sim.so")
	more, _ := filepath.Glob("/usr/lib*/umad2sim/libumad2sim.so")
	libs = append(libs, more...)
	if len(libs) == 0 {
		skip("libumad2sim.so not installed (Debian: ibsim-utils)")
	}
	return &Sim{t: t, preload: libs[0], sock: fmt.Sprintf("icn-test-%d-%d", os.Getpid(), time.Now().UnixNano()%100000)}
}

func (s *Sim) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

// Start runs ibsim on a net file; host is the node the tools run on.
func (s *Sim) Start(net, host string) {
	s.host = host
	// ibsim holds at most 2 048 nodes, 256 switches and 13 312 ports
	// unless told.
	s.cmd = exec.Command("ibsim", "-s", "-N", "40000", "-S", "8000", "-P", "400000", net)
	s.cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+s.sock)
	s.cmd.Stdout, s.cmd.Stderr = s, s
	in, err := s.cmd.StdinPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	s.stdin = in
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i < 2400; i++ {
		s.mu.Lock()
		out := s.out.String()
		s.mu.Unlock()
		if strings.Contains(out, "sim>") {
			return
		}
		if strings.Contains(out, "ibpanic") {
			break // ibsim gave up
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Stop()
	s.t.Fatalf("ibsim did not start:\n%s", s.out.String())
}

// Console sends one command to ibsim's console (Unlink "node"[port], …)
// and waits until ibsim prompts again.
func (s *Sim) Console(cmd string) {
	s.mu.Lock()
	n := strings.Count(s.out.String(), "sim>")
	s.mu.Unlock()
	if _, err := io.WriteString(s.stdin, cmd+"\n"); err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		s.mu.Lock()
		done := strings.Count(s.out.String(), "sim>") > n
		s.mu.Unlock()
		if done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Fatalf("ibsim: no prompt after %q", cmd)
}

// Stop ends ibsim.
func (s *Sim) Stop() {
	s.stdin.Close()
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// Env is the environment the tools need to reach the simulator, with
// OpenSM's temporary files in dir.
func (s *Sim) Env(dir string) []string {
	return append(os.Environ(), "IBSIM_SOCKNAME="+s.sock, "SIM_HOST="+s.host, "LD_PRELOAD="+s.preload, "OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)
}

// OpenSM runs one OpenSM sweep (-o) with the arguments, dumping into dir.
func (s *Sim) OpenSM(dir string, args ...string) {
	s.t.Helper()
	os.MkdirAll(dir, 0o755)
	args = append([]string{"-o", "-D", "0x43", "-f", filepath.Join(dir, "osm.log"), "--dump_files_dir", dir}, args...)
	c := exec.Command("opensm", args...)
	c.Env = s.Env(dir)
	c.Dir = dir // libumad2sim leaves sys-PID/ in the working directory
	if out, err := c.CombinedOutput(); err != nil {
		s.t.Fatalf("opensm %v: %v\n%s", args, err, out)
	}
}

// IBNetDiscover runs ibnetdiscover on the simulated fabric.
func (s *Sim) IBNetDiscover() string {
	s.t.Helper()
	c := exec.Command("ibnetdiscover")
	c.Dir = s.t.TempDir() // libumad2sim leaves sys-PID/ in the working directory
	c.Env = s.Env(c.Dir)
	out, err := c.Output()
	if err != nil {
		s.t.Fatalf("ibnetdiscover: %v", err)
	}
	return string(out)
}
