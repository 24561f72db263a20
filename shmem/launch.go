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
	Signal   string // the signal that ended it, if any ("SIGKILL")
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
		return who + " was killed by " + p.Signal
	default:
		return fmt.Sprintf("%s exited with status %d", who, p.ExitCode)
	}
}

// signalName names a signal the way users know it ("SIGKILL").
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
		syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL", syscall.SIGINT: "SIGINT",
		syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM", syscall.SIGTRAP: "SIGTRAP",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d (%s)", int(s), s)
}

// AbortRecord is a PE's own declaration that the job cannot go on: World.Abort
// (status 1) or World.GlobalExit (the status it was given).
type AbortRecord struct {
	PE     int
	Status int
	Reason string
}

// JobError names the processes of a job that failed, the first to fail
// first, the PEs that aborted the job, and the failures the surviving PEs
// reported.
type JobError struct {
	Procs   []ProcResult
	Reports []Report
	Aborts  []AbortRecord
}

// ExitStatus is the status a launcher should exit with: the status of the
// first GlobalExit or Abort (1 for Abort), else 1.
func (e *JobError) ExitStatus() int {
	if len(e.Aborts) > 0 && e.Aborts[0].Status != 0 {
		return e.Aborts[0].Status
	}
	return 1
}

func (e *JobError) Error() string {
	parts := make([]string, len(e.Procs))
	for i, p := range e.Procs {
		parts[i] = p.String()
	}
	procs := ""
	if len(parts) > 0 {
		procs = "; processes: " + strings.Join(parts, ", ")
	}
	if len(e.Aborts) > 0 {
		a := e.Aborts[0]
		return fmt.Sprintf("shmem job failed: PE %d %s (exit status %d)%s", a.PE, a.Reason, a.Status, procs)
	}
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
		return fmt.Sprintf("shmem job failed: PE %d failed (%s; seen by PE %s)%s", c, reason, strings.Join(by, ", "), procs)
	}
	s := "shmem job failed: " + parts[0]
	if len(parts) > 1 {
		s += "; then " + strings.Join(parts[1:], ", ")
	}
	return s
}

// Culprit is the PE the job failed because of: the first to abort, else
// the one the surviving PEs reported most often, else the first process to
// fail; -1 if none.
func (e *JobError) Culprit() int {
	if len(e.Aborts) > 0 {
		return e.Aborts[0].PE
	}
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
// for all of them. It returns every process's result and, if any failed or
// aborted the job, a *JobError naming them (its ExitStatus is the status a
// launcher exits with). When one fails, the others are told (and get an
// error from their next shmem call); those still running after the grace
// period are killed, at once after a GlobalExit. Cancelling ctx terminates
// the job.
func Launch(ctx context.Context, cfg LaunchConfig) ([]ProcResult, error) {
	l, err := newLauncher(cfg)
	if err != nil {
		return nil, err
	}
	release, err := l.openJob()
	if err != nil {
		return nil, err
	}
	defer release()
	l.wireOutput()
	l.startAll()
	l.waitAll(ctx)
	for _, f := range l.flushers {
		f()
	}
	return l.results, l.verdict()
}

// launcher is the state of one Launch: the validated configuration, the
// job's meeting point (a shm directory or a TCP rendezvous) and the
// processes.
type launcher struct {
	cfg      LaunchConfig
	opt      Options
	allLocal bool
	groups   []string // hostGroups of cfg.Hosts
	prog     string
	grace    time.Duration
	base     Config
	rdv      *Rendezvous

	stdout, stderr io.Writer
	lineMu         sync.Mutex
	flushers       []func()

	results []ProcResult
	cmds    []*exec.Cmd
	exits   chan procExit
	started int
	failed  bool
	killAt  <-chan time.Time
}

type procExit struct {
	pe  int
	err error
}

// newLauncher validates cfg and resolves the transport, the program and
// the grace period.
func newLauncher(cfg LaunchConfig) (*launcher, error) {
	if cfg.N < 1 || cfg.N > maxPEs {
		return nil, fmt.Errorf("shmem: number of PEs %d out of range [1,%d]", cfg.N, maxPEs)
	}
	if err := cfg.Options.validate(); err != nil {
		return nil, err
	}
	if cfg.Prog == "" {
		return nil, errors.New("shmem: no program to run")
	}
	l := &launcher{cfg: cfg, opt: cfg.Options.withDefaults(), allLocal: true, prog: cfg.Prog}
	for _, h := range cfg.Hosts {
		if strings.TrimSpace(h) == "" {
			return nil, errors.New("shmem: empty host name in the host list")
		}
	}
	l.groups = hostGroups(cfg.Hosts)
	for _, g := range l.groups {
		if g != "" {
			l.allLocal = false
		}
	}
	if err := l.chooseTransport(); err != nil {
		return nil, err
	}
	if l.allLocal {
		p, err := exec.LookPath(cfg.Prog)
		if err != nil {
			return nil, fmt.Errorf("shmem: program %q not found: %w", cfg.Prog, err)
		}
		l.prog = p
	}
	if l.cfg.Rsh == "" {
		l.cfg.Rsh = "ssh"
	}
	l.grace = cfg.Grace
	if l.grace == 0 {
		l.grace = l.opt.Timeout + 2*time.Second
	}
	return l, nil
}

// chooseTransport defaults to shm on one host and tcp with a host list,
// and refuses shm across hosts.
func (l *launcher) chooseTransport() error {
	switch l.opt.Transport {
	case "":
		l.opt.Transport = TransportShm
		if len(l.cfg.Hosts) > 0 {
			l.opt.Transport = TransportTCP
		}
	case TransportShm:
		if len(l.cfg.Hosts) > 0 && !l.allLocal {
			return errors.New("shmem: the shm transport needs every PE on this host (use --transport tcp)")
		}
	}
	return nil
}

// openJob makes the job's meeting point: the directory of the shm regions
// or the TCP rendezvous. release removes it.
func (l *launcher) openJob() (release func(), err error) {
	job := newJobToken()
	l.base = Config{NPEs: l.cfg.N, Options: l.opt, Job: job}
	if l.opt.Transport == TransportShm {
		dir, err := os.MkdirTemp(shmBaseDir(), "icn-shmem-job-")
		if err != nil {
			return nil, fmt.Errorf("shmem: %w", err)
		}
		l.base.Dir = dir
		return func() { os.RemoveAll(dir) }, nil
	}
	addr := "127.0.0.1:0"
	if !l.allLocal {
		addr = ":0"
	}
	r, err := StartRendezvous(addr, l.cfg.N, job)
	if err != nil {
		return nil, err
	}
	l.rdv = r
	l.base.Rendezvous = r.Addr()
	if !l.allLocal {
		adv := l.cfg.Advertise
		if adv == "" {
			adv, _ = os.Hostname()
		}
		_, port, _ := net.SplitHostPort(r.Addr())
		l.base.Rendezvous = net.JoinHostPort(adv, port)
	}
	return r.Close, nil
}

// wireOutput serialises the writers the children's output is copied to
// (one goroutine per pipe) unless they are files.
func (l *launcher) wireOutput() {
	l.stdout, l.stderr = l.cfg.Stdout, l.cfg.Stderr
	if l.stdout == nil {
		l.stdout = io.Discard
	}
	if l.stderr == nil {
		l.stderr = io.Discard
	}
	outMu := &sync.Mutex{}
	if _, ok := l.stdout.(*os.File); !ok {
		l.stdout = &syncWriter{w: l.stdout, mu: outMu}
	}
	if _, ok := l.stderr.(*os.File); !ok {
		l.stderr = &syncWriter{w: l.stderr, mu: outMu}
	}
}

// startAll starts one process per PE; it stops at the first that cannot
// be started (the job has failed then).
func (l *launcher) startAll() {
	n := l.cfg.N
	l.results = make([]ProcResult, n)
	l.cmds = make([]*exec.Cmd, n)
	l.exits = make(chan procExit, n)
	for pe := 0; pe < n; pe++ {
		cmd := l.command(pe)
		if err := cmd.Start(); err != nil {
			l.results[pe].Err = err
			l.results[pe].Ended = time.Now()
			l.notify(pe, "could not be started")
			break
		}
		l.results[pe].Pid = cmd.Process.Pid
		l.cmds[pe] = cmd
		l.started++
		go func(pe int, cmd *exec.Cmd) { l.exits <- procExit{pe, cmd.Wait()} }(pe, cmd)
	}
	if l.started < n {
		l.startGrace()
	}
}

// command builds PE pe's process: the program itself on a local host, the
// remote shell running env … program on another.
func (l *launcher) command(pe int) *exec.Cmd {
	c := l.base
	c.Rank = pe
	c.LocalRank = l.placeOnHost(pe)
	c.Bind = l.bindFor()
	host := ""
	if len(l.cfg.Hosts) > 0 {
		host = l.cfg.Hosts[pe%len(l.cfg.Hosts)]
		c.Host = host
	}
	l.results[pe] = ProcResult{PE: pe, Host: host, ExitCode: -1}
	env := append(append([]string{}, l.cfg.Env...), c.Env()...)
	var cmd *exec.Cmd
	if host == "" || isLocalHost(host) {
		cmd = exec.Command(l.prog, l.cfg.Args...)
		cmd.Env = append(os.Environ(), env...)
	} else {
		remote := []string{host, "env"}
		for _, kv := range env {
			remote = append(remote, shellQuote(kv))
		}
		remote = append(remote, shellQuote(l.prog))
		for _, a := range l.cfg.Args {
			remote = append(remote, shellQuote(a))
		}
		cmd = exec.Command(l.cfg.Rsh, remote...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if l.cfg.Label {
		prefix := []byte(fmt.Sprintf("[%d] ", pe))
		lo := &lineWriter{w: l.stdout, mu: &l.lineMu, prefix: prefix}
		lw := &lineWriter{w: l.stderr, mu: &l.lineMu, prefix: prefix}
		l.flushers = append(l.flushers, lo.flush, lw.flush)
		cmd.Stdout, cmd.Stderr = lo, lw
	} else {
		cmd.Stdout, cmd.Stderr = l.stdout, l.stderr
	}
	return cmd
}

// hostGroups names the host behind every entry of a host list: "" for
// this host (local and loopback addresses), else the entry itself.
func hostGroups(hosts []string) []string {
	g := make([]string, len(hosts))
	for i, h := range hosts {
		if !isLocalHost(h) {
			g[i] = h
		}
	}
	return g
}

// placeOnHost is PE pe's index among the PEs on its host: the binding's
// CPU index.
func (l *launcher) placeOnHost(pe int) int {
	h := len(l.groups)
	if h == 0 {
		return pe
	}
	index := 0
	for q := 0; q < pe; q++ {
		if l.groups[q%h] == l.groups[pe%h] {
			index++
		}
	}
	return index
}

// bindFor resolves the binding: auto is core on shm and none on TCP,
// whose PEs need CPU time for their server and flusher goroutines and the
// kernel's network stack besides the waiting one (2 PEs bound to cores:
// barriers of 2 ms instead of 40–50 µs).
func (l *launcher) bindFor() string {
	if l.opt.Bind != BindAuto {
		return l.opt.Bind
	}
	if l.opt.Transport == TransportShm {
		return BindCore
	}
	return BindNone
}

// notify tells the running PEs that PE pe failed: on the rendezvous
// connections (tcp) and in the job directory's failure marker (shm).
func (l *launcher) notify(pe int, reason string) {
	if l.rdv != nil {
		l.rdv.Fail(pe, reason)
	}
	if l.base.Dir != "" {
		appendLine(filepath.Join(l.base.Dir, FailMarker), fmt.Sprintf("%d %s", pe, oneLine(reason)))
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintln(f, line)
	f.Close()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (l *launcher) startGrace() {
	if !l.failed {
		l.failed = true
		l.killAt = time.After(l.grace)
	}
}

// waitAll collects every started process's exit. After the first failure
// the others get the grace period; after a GlobalExit none; cancelling ctx
// terminates them (and kills them a second later).
func (l *launcher) waitAll(ctx context.Context) {
	done := ctx.Done()
	for remaining := l.started; remaining > 0; {
		select {
		case e := <-l.exits:
			remaining--
			l.recordExit(e)
		case <-l.killAt:
			l.killAll(syscall.SIGKILL)
			l.killAt = nil
		case <-done:
			l.killAll(syscall.SIGTERM)
			done = nil
			l.killAt = time.After(time.Second)
		}
	}
}

// recordExit fills in how a process ended and reacts to a failure: the
// others are told, and killed at once if the PE ended the job by
// GlobalExit.
func (l *launcher) recordExit(e procExit) {
	r := &l.results[e.pe]
	r.Ended = time.Now()
	r.ExitCode = 0
	var ee *exec.ExitError
	if errors.As(e.err, &ee) {
		r.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = signalName(ws.Signal())
		}
	} else if e.err != nil {
		r.ExitCode = -1
		r.Err = e.err
	}
	if !r.Failed() || r.Killed {
		return
	}
	pe, reason := l.cause(e.pe, strings.TrimPrefix(r.String(), fmt.Sprintf("PE %d ", e.pe)))
	l.notify(pe, reason)
	l.startGrace()
	if l.exitedGlobally(e.pe) {
		l.killAll(syscall.SIGKILL)
	}
}

// cause is the failure the others are told of when PE pe ended failing
// for reason: the PE that pe reported failed before it ended (and so on
// along the reports, with what the launcher knows of that PE's end, else
// what was reported), or pe itself. A PE that gives up because a peer
// failed thus never shows up as the culprit of the others' errors, whatever
// order the launcher learns of the two ends in. The last words of pe are
// awaited as by exitedGlobally.
func (l *launcher) cause(pe int, reason string) (int, string) {
	l.aborts(pe, 200*time.Millisecond)
	reps := l.reports()
	seen := map[int]bool{pe: true}
	for {
		next := -1
		for _, rp := range reps {
			if rp.By == pe && !seen[rp.PE] {
				next, reason = rp.PE, rp.Reason
				break
			}
		}
		if next < 0 {
			return pe, reason
		}
		pe = next
		seen[pe] = true
		if r := l.results[pe]; r.Failed() {
			reason = strings.TrimPrefix(r.String(), fmt.Sprintf("PE %d ", pe))
		}
	}
}

// exitedGlobally reports whether PE pe recorded a GlobalExit before its
// process ended.
func (l *launcher) exitedGlobally(pe int) bool {
	for _, a := range l.aborts(pe, 200*time.Millisecond) {
		if a.PE == pe && strings.HasPrefix(a.Reason, globalExitReason) {
			return true
		}
	}
	return false
}

func (l *launcher) killAll(sig syscall.Signal) {
	for pe, cmd := range l.cmds {
		if cmd != nil && l.results[pe].Ended.IsZero() {
			l.results[pe].Killed = true
			syscall.Kill(-cmd.Process.Pid, sig)
			cmd.Process.Signal(sig)
		}
	}
}

// aborts reads the aborts the PEs recorded, waiting up to wait for the
// rendezvous to read the last words of PE pe (every PE if pe < 0).
func (l *launcher) aborts(pe int, wait time.Duration) []AbortRecord {
	if l.rdv != nil {
		return l.rdv.Aborts(pe, wait)
	}
	var out []AbortRecord
	b, _ := os.ReadFile(filepath.Join(l.base.Dir, AbortFile))
	for _, line := range strings.Split(string(b), "\n") {
		if a, ok := parseAbort(strings.Fields(line), l.cfg.N); ok {
			out = append(out, a)
		}
	}
	return out
}

// reports reads the peer failures the PEs recorded.
func (l *launcher) reports() []Report {
	if l.rdv != nil {
		return l.rdv.Reports()
	}
	var out []Report
	b, _ := os.ReadFile(filepath.Join(l.base.Dir, ReportFile))
	for _, line := range strings.Split(string(b), "\n") {
		if rep, ok := parseReport(strings.Fields(line), l.cfg.N); ok {
			out = append(out, rep)
		}
	}
	return out
}

// verdict is Launch's error: nil when every process ended well and none
// aborted (or the job ended by GlobalExit(0)), else a *JobError naming the
// failed processes, the first to fail first.
func (l *launcher) verdict() error {
	aborts := l.aborts(-1, time.Second)
	var bad []ProcResult
	for _, r := range l.results {
		if r.Failed() {
			bad = append(bad, r)
		}
	}
	if len(aborts) > 0 && aborts[0].Status == 0 && strings.HasPrefix(aborts[0].Reason, globalExitReason) {
		return nil
	}
	if len(bad) == 0 && len(aborts) == 0 {
		return nil
	}
	sort.SliceStable(bad, func(i, j int) bool {
		if bad[i].Killed != bad[j].Killed {
			return !bad[i].Killed
		}
		return bad[i].Ended.Before(bad[j].Ended)
	})
	return &JobError{Procs: bad, Reports: l.reports(), Aborts: aborts}
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
