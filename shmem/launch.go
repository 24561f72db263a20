package shmem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LaunchConfig describes a job for Launch (icn shmem run).
type LaunchConfig struct {
	N     int      // number of PEs
	Hosts []string // hosts to place PEs on, round robin; empty: this host
	Prog  string   // program to run
	Args  []string // its arguments
	Options
	Env            []string      // extra environment for every PE
	Stdout, Stderr io.Writer     // where the PEs' output goes (nil: discarded)
	Label          bool          // prefix every output line with "[pe] "
	Rsh            string        // remote shell for non-local hosts (default "ssh")
	Grace          time.Duration // after the first failure, how long the others get to notice and exit before they are killed (0: Timeout + 2s)
	Advertise      string        // host the PEs use to reach the rendezvous when hosts are remote (default: this host's name)
}

// ProcResult is how one PE's process ended.
type ProcResult struct {
	PE       int
	Host     string
	Pid      int
	ExitCode int    // -1 if killed by a signal or never started
	Signal   string // the signal that ended it, if any
	Killed   bool   // killed by the launcher after another PE failed
	Ended    time.Time
	Err      error // could not be started
}

// Failed reports whether the process ended abnormally.
func (p ProcResult) Failed() bool { return p.Err != nil || p.ExitCode != 0 }

func (p ProcResult) String() string {
	who := fmt.Sprintf("PE %d (pid %d", p.PE, p.Pid)
	if p.Host != "" && p.Host != "localhost" {
		who += " on " + p.Host
	}
	who += ")"
	switch {
	case p.Err != nil:
		return fmt.Sprintf("PE %d could not be started: %v", p.PE, p.Err)
	case p.Killed:
		return who + " was killed by the launcher"
	case p.Signal != "":
		return who + " was killed by signal " + p.Signal
	default:
		return fmt.Sprintf("%s exited with status %d", who, p.ExitCode)
	}
}

// JobError names the processes of a job that failed, the first to fail
// first, and the failures the surviving PEs reported.
type JobError struct {
	Procs   []ProcResult
	Reports []Report
}

func (e *JobError) Error() string {
	parts := make([]string, len(e.Procs))
	for i, p := range e.Procs {
		parts[i] = p.String()
	}
	s := "shmem job failed: "
	if c := e.Culprit(); len(e.Reports) > 0 {
		var by []string
		reason := ""
		for _, r := range e.Reports {
			if r.PE == c {
				by = append(by, strconv.Itoa(r.By))
				if reason == "" {
					reason = r.Reason
				}
			}
		}
		s += fmt.Sprintf("PE %d failed (%s; seen by PE %s); ", c, reason, strings.Join(by, ", "))
		return s + "processes: " + strings.Join(parts, ", ")
	}
	s += parts[0]
	if len(parts) > 1 {
		s += "; then " + strings.Join(parts[1:], ", ")
	}
	return s
}

// Culprit is the PE the job failed because of: the one the surviving PEs
// reported most often, else the first process to fail; -1 if none.
func (e *JobError) Culprit() int {
	count := map[int]int{}
	best := -1
	for _, r := range e.Reports {
		count[r.PE]++
		if best < 0 || count[r.PE] > count[best] {
			best = r.PE
		}
	}
	if best >= 0 {
		return best
	}
	if len(e.Procs) == 0 {
		return -1
	}
	return e.Procs[0].PE
}

// Launch starts cfg.N processes of cfg.Prog wired into one job and waits
// for all of them. It returns every process's result and, if any failed, a
// *JobError naming them. When one fails, the others are told (and get an
// error from their next shmem call); those still running after the grace
// period are killed. Cancelling ctx terminates the job.
func Launch(ctx context.Context, cfg LaunchConfig) ([]ProcResult, error) {
	if cfg.N < 1 || cfg.N > maxPEs {
		return nil, fmt.Errorf("shmem: number of PEs %d out of range [1,%d]", cfg.N, maxPEs)
	}
	if err := cfg.Options.validate(); err != nil {
		return nil, err
	}
	opt := cfg.Options.withDefaults()
	if cfg.Prog == "" {
		return nil, errors.New("shmem: no program to run")
	}
	hosts := cfg.Hosts
	allLocal := true
	for _, h := range hosts {
		if strings.TrimSpace(h) == "" {
			return nil, errors.New("shmem: empty host name in the host list")
		}
		if !isLocalHost(h) {
			allLocal = false
		}
	}
	switch opt.Transport {
	case "":
		opt.Transport = TransportShm
		if len(hosts) > 0 {
			opt.Transport = TransportTCP
		}
	case TransportShm:
		if len(hosts) > 0 && !allLocal {
			return nil, errors.New("shmem: the shm transport needs every PE on this host (use --transport tcp)")
		}
	}
	prog := cfg.Prog
	if allLocal {
		p, err := exec.LookPath(cfg.Prog)
		if err != nil {
			return nil, fmt.Errorf("shmem: program %q not found: %w", cfg.Prog, err)
		}
		prog = p
	}
	if cfg.Rsh == "" {
		cfg.Rsh = "ssh"
	}
	grace := cfg.Grace
	if grace == 0 {
		grace = opt.Timeout + 2*time.Second
	}
	job := newJobToken()
	base := Config{NPEs: cfg.N, Options: opt, Job: job}
	var rdv *Rendezvous
	switch opt.Transport {
	case TransportShm:
		dir, err := os.MkdirTemp(shmBaseDir(), "icn-shmem-job-")
		if err != nil {
			return nil, fmt.Errorf("shmem: %w", err)
		}
		defer os.RemoveAll(dir)
		base.Dir = dir
	case TransportTCP:
		addr := "127.0.0.1:0"
		if !allLocal {
			addr = ":0"
		}
		r, err := StartRendezvous(addr, cfg.N, job)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		rdv = r
		base.Rendezvous = r.Addr()
		if !allLocal {
			adv := cfg.Advertise
			if adv == "" {
				adv, _ = os.Hostname()
			}
			_, port, _ := net.SplitHostPort(r.Addr())
			base.Rendezvous = net.JoinHostPort(adv, port)
		}
	}

	stdout, stderr := cfg.Stdout, cfg.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	var outMu sync.Mutex
	// the children's output is copied by one goroutine per pipe: serialise
	// writers that are not files
	if _, ok := stdout.(*os.File); !ok {
		stdout = &syncWriter{w: stdout, mu: &outMu}
	}
	if _, ok := stderr.(*os.File); !ok {
		stderr = &syncWriter{w: stderr, mu: &outMu}
	}
	var lineMu sync.Mutex
	results := make([]ProcResult, cfg.N)
	cmds := make([]*exec.Cmd, cfg.N)
	var flushers []func()
	type exit struct {
		pe  int
		err error
	}
	exits := make(chan exit, cfg.N)
	started := 0
	notify := func(pe int, reason string) {
		if rdv != nil {
			rdv.Fail(pe, reason)
		}
		if base.Dir != "" {
			f, err := os.OpenFile(filepath.Join(base.Dir, FailMarker), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err == nil {
				fmt.Fprintf(f, "%d %s\n", pe, strings.Join(strings.Fields(reason), " "))
				f.Close()
			}
		}
	}
	for pe := 0; pe < cfg.N; pe++ {
		c := base
		c.Rank = pe
		host := ""
		if len(hosts) > 0 {
			host = hosts[pe%len(hosts)]
			c.Host = host
		}
		results[pe] = ProcResult{PE: pe, Host: host, ExitCode: -1}
		env := append(append([]string{}, cfg.Env...), c.Env()...)
		var cmd *exec.Cmd
		if host == "" || isLocalHost(host) {
			cmd = exec.Command(prog, cfg.Args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		} else {
			remote := []string{host, "env"}
			for _, kv := range env {
				remote = append(remote, shellQuote(kv))
			}
			remote = append(remote, shellQuote(prog))
			for _, a := range cfg.Args {
				remote = append(remote, shellQuote(a))
			}
			cmd = exec.Command(cfg.Rsh, remote...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}
		if cfg.Label {
			prefix := []byte(fmt.Sprintf("[%d] ", pe))
			lo := &lineWriter{w: stdout, mu: &lineMu, prefix: prefix}
			lw := &lineWriter{w: stderr, mu: &lineMu, prefix: prefix}
			flushers = append(flushers, lo.flush, lw.flush)
			cmd.Stdout, cmd.Stderr = lo, lw
		} else {
			cmd.Stdout, cmd.Stderr = stdout, stderr
		}
		if err := cmd.Start(); err != nil {
			results[pe].Err = err
			results[pe].Ended = time.Now()
			notify(pe, "could not be started")
			break
		}
		results[pe].Pid = cmd.Process.Pid
		cmds[pe] = cmd
		started++
		go func(pe int, cmd *exec.Cmd) { exits <- exit{pe, cmd.Wait()} }(pe, cmd)
	}
	var killAt <-chan time.Time
	killAll := func(sig syscall.Signal, mark bool) {
		for pe, cmd := range cmds {
			if cmd != nil && results[pe].Ended.IsZero() {
				if mark {
					results[pe].Killed = true
				}
				syscall.Kill(-cmd.Process.Pid, sig)
				cmd.Process.Signal(sig)
			}
		}
	}
	failed := started < cfg.N
	if failed {
		killAt = time.After(grace)
	}
	done := ctx.Done()
	for remaining := started; remaining > 0; {
		select {
		case e := <-exits:
			remaining--
			r := &results[e.pe]
			r.Ended = time.Now()
			r.ExitCode = 0
			var ee *exec.ExitError
			if errors.As(e.err, &ee) {
				r.ExitCode = ee.ExitCode()
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					r.Signal = ws.Signal().String()
				}
			} else if e.err != nil {
				r.ExitCode = -1
				r.Err = e.err
			}
			if r.Failed() && !r.Killed {
				notify(e.pe, strings.TrimPrefix(r.String(), fmt.Sprintf("PE %d ", e.pe)))
				if !failed {
					failed = true
					killAt = time.After(grace)
				}
			}
		case <-killAt:
			killAll(syscall.SIGKILL, true)
			killAt = nil
		case <-done:
			killAll(syscall.SIGTERM, true)
			done = nil
			killAt = time.After(time.Second)
		}
	}
	for _, f := range flushers {
		f()
	}
	var bad []ProcResult
	for _, r := range results {
		if r.Failed() {
			bad = append(bad, r)
		}
	}
	if len(bad) == 0 {
		return results, nil
	}
	sort.SliceStable(bad, func(i, j int) bool {
		if bad[i].Killed != bad[j].Killed {
			return !bad[i].Killed
		}
		return bad[i].Ended.Before(bad[j].Ended)
	})
	je := &JobError{Procs: bad}
	if rdv != nil {
		je.Reports = rdv.Reports()
	}
	if base.Dir != "" {
		if b, err := os.ReadFile(filepath.Join(base.Dir, ReportFile)); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if rep, ok := parseReport(strings.Fields(line), cfg.N); ok {
					je.Reports = append(je.Reports, rep)
				}
			}
		}
	}
	return results, je
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// lineWriter copies whole lines to w prefixed "[pe] ".
type lineWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix []byte
	buf    []byte
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
	return len(b), nil
}

func (l *lineWriter) emit(line []byte) {
	l.mu.Lock()
	l.w.Write(append(bytes.Clone(l.prefix), line...))
	l.mu.Unlock()
}

// flush writes a last unterminated line.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}

func isLocalHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	if ip == nil {
		addrs, err := net.LookupHost(h)
		if err != nil || len(addrs) == 0 {
			return false
		}
		ip = net.ParseIP(addrs[0])
		if ip == nil {
			return false
		}
	}
	if ip.IsLoopback() {
		return true
	}
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range ifs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
