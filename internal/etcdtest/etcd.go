package etcdtest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Cluster is a set of etcd members on loopback.
type Cluster struct {
	t       testing.TB
	bin     string
	token   string
	Members []*Member
}

// Member is one etcd process.
type Member struct {
	Name      string
	Dir       string // data directory
	ClientURL string // http://127.0.0.1:PORT
	PeerURL   string
	cluster   *Cluster
	mu        sync.Mutex
	cmd       *exec.Cmd
	done      chan struct{}
	log       *lockedBuffer
	stopped   bool // SIGSTOP sent and not yet continued
}

// Binary returns the etcd binary to run, or skips the test (fails it with
// ICN_REQUIRE_ETCD set, as CI installs etcd) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ICN_ETCD"); p != "" {
		return p
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("ICN_REQUIRE_ETCD") != "" {
			t.Fatalf("etcd not installed (Debian: etcd-server) and ICN_REQUIRE_ETCD is set")
		}
		t.Skipf("etcd not installed (Debian: etcd-server; or set ICN_ETCD to an etcd binary)")
	}
	return p
}

// Start starts an n-member cluster and waits until it answers; the
// members are killed when the test ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: Binary(t), token: fmt.Sprintf("icn-%d-%d", os.Getpid(), time.Now().UnixNano())}
	dir := t.TempDir()
	ports := freePorts(t, 2*n)
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{Name: fmt.Sprintf("e%d", i), Dir: filepath.Join(dir, fmt.Sprintf("e%d", i)),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]), PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			cluster: c}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	t.Cleanup(c.Close)
	for _, m := range c.Members {
		m.start(strings.Join(initial, ","))
	}
	c.WaitHealthy(30 * time.Second)
	return c
}

// Endpoints lists the members' client addresses (host:port).
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, strings.TrimPrefix(m.ClientURL, "http://"))
	}
	return out
}

// URL is the etcd:// store address of the cluster with prefix.
func (c *Cluster) URL(prefix string) string {
	return "etcd://" + strings.Join(c.Endpoints(), ",") + "/" + strings.TrimPrefix(prefix, "/")
}

// Close kills every member.
func (c *Cluster) Close() {
	for _, m := range c.Members {
		m.Kill()
	}
}

// WaitHealthy waits until every running member reports itself healthy.
func (c *Cluster) WaitHealthy(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		for !m.Healthy() {
			if time.Now().After(deadline) {
				c.t.Fatalf("etcd member %s not healthy after %v; its log:\n%s", m.Name, timeout, m.Log())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (m *Member) start(initial string) {
	c := m.cluster
	state := "new"
	if _, err := os.Stat(filepath.Join(m.Dir, "member")); err == nil {
		state = "existing"
	}
	cmd := exec.Command(c.bin,
		"--name", m.Name, "--data-dir", m.Dir,
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", initial, "--initial-cluster-state", state, "--initial-cluster-token", c.token,
		"--logger", "zap", "--log-level", "warn")
	m.log = &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = m.log, m.log
	// The member dies with the test process, however that ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting etcd member %s: %v", m.Name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	m.mu.Lock()
	m.cmd, m.done, m.stopped = cmd, done, false
	m.mu.Unlock()
}

// Kill kills the member with SIGKILL and waits for it to exit.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart starts a killed member again on its data directory.
func (m *Member) Restart() {
	var initial []string
	for _, o := range m.cluster.Members {
		initial = append(initial, o.Name+"="+o.PeerURL)
	}
	m.start(strings.Join(initial, ","))
}

// Running reports whether the member's process runs.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Healthy asks the member's /health endpoint.
func (m *Member) Healthy() bool {
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get(m.ClientURL + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == 200 && bytes.Contains(b, []byte(`"true"`))
}

// Log returns what the member printed.
func (m *Member) Log() string {
	if m.log == nil {
		return ""
	}
	return m.log.String()
}

func freePorts(t testing.TB, n int) []int {
	var out []int
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		return len(p), nil // enough to diagnose
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Freeze stops the member with SIGSTOP; Thaw continues it.
func (m *Member) Freeze() { m.signal(syscall.SIGSTOP) }

// Thaw continues a frozen member.
func (m *Member) Thaw() { m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		m.cmd.Process.Signal(sig)
	}
}
