package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The OpenSM that has the log open is found under a procfs by its open
// files, and its flushing read from its command line and configuration
// file (a fake procfs here; TestWatchKeepsOpenSMCurrent uses the real one).
func TestFindOpenSMLogWriter(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "osm.log")
	other := filepath.Join(dir, "other.log")
	for _, f := range []string{log, other} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "opensm.conf")
	if err := os.WriteFile(conf, []byte("# comment\nforce_log_flush FALSE\nforce_log_flush TRUE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noflush := filepath.Join(dir, "noflush.conf")
	if err := os.WriteFile(noflush, []byte("force_log_flush FALSE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, comm string
		args       []string
		open       string
		defConf    string
		found      bool
		flushed    bool
		config     string
	}{
		{"default logging", "opensm", []string{"opensm", "-D", "0x43", "-f", log}, log, "", true, false, ""},
		{"-d2", "opensm", []string{"opensm", "-d2", "-f", log}, log, "", true, true, ""},
		{"-d 2 among others", "opensm", []string{"opensm", "-d", "0", "-d", "2"}, log, "", true, true, ""},
		{"--debug=2", "opensm", []string{"opensm", "--debug=2"}, log, "", true, true, ""},
		{"-V", "opensm", []string{"opensm", "-V"}, log, "", true, true, ""},
		{"-d1 only", "opensm", []string{"opensm", "-d1", "-D", "2"}, log, "", true, false, ""},
		{"config file", "opensm", []string{"opensm", "-F", conf}, log, "", true, true, conf},
		{"--config= without the flush", "opensm", []string{"opensm", "--config=" + noflush}, log, "", true, false, noflush},
		{"default config file", "opensm", []string{"opensm"}, log, conf, true, true, conf},
		{"another log", "opensm", []string{"opensm", "-f", other}, other, "", false, false, ""},
		{"not opensm", "tail", []string{"tail", "-f", log}, log, "", false, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			proc := filepath.Join(t.TempDir(), "proc")
			pd := filepath.Join(proc, "4242")
			if err := os.MkdirAll(filepath.Join(pd, "fd"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Join(proc, "self"), 0o755)
			os.WriteFile(filepath.Join(pd, "comm"), []byte(c.comm+"\n"), 0o644)
			os.WriteFile(filepath.Join(pd, "cmdline"), []byte(strings.Join(c.args, "\x00")+"\x00"), 0o644)
			os.Symlink(c.open, filepath.Join(pd, "fd", "3"))
			os.Symlink(dir, filepath.Join(pd, "cwd"))
			def := c.defConf
			if def == "" {
				def = filepath.Join(dir, "absent.conf")
			}
			w := findOpenSMLogWriter(proc, log, def)
			if (w != nil) != c.found {
				t.Fatalf("found %v, want %v", w, c.found)
			}
			if w != nil && (w.pid != 4242 || w.flushed != c.flushed || w.config != c.config) {
				t.Errorf("%+v, want flushed %v, config %q", *w, c.flushed, c.config)
			}
		})
	}
}

// A missing or unreadable --opensm-log is refused at the start, in one
// line naming the flag, with README's exit status: 2 for a file that does
// not exist, 3 for one this user may not read.
func TestWatchRefusesBadOpenSMLog(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runICN(t, dir, "fabric", "watch", "--topo", "none.ibnet", "--server", "http://127.0.0.1:1", "--opensm-log", filepath.Join(dir, "nonexistent", "osm.log"))
	if code != 2 || !strings.HasPrefix(stderr, "icn: --opensm-log: ") || !strings.Contains(stderr, "no such file") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("missing log: exit %d, %q", code, stderr)
	}
	_, stderr, code = runICN(t, dir, "fabric", "watch", "--topo", "none.ibnet", "--server", "http://127.0.0.1:1", "--opensm-log", dir)
	if code != 2 || !strings.Contains(stderr, "not a regular file") {
		t.Errorf("a directory as the log: exit %d, %q", code, stderr)
	}
	if os.Geteuid() != 0 {
		p := filepath.Join(dir, "secret.log")
		os.WriteFile(p, nil, 0o000)
		_, stderr, code = runICN(t, dir, "fabric", "watch", "--topo", "none.ibnet", "--server", "http://127.0.0.1:1", "--opensm-log", p)
		if code != 3 || !strings.Contains(stderr, "permission denied") {
			t.Errorf("unreadable log: exit %d, %q", code, stderr)
		}
	}
}

// The watch acts on every link-state-change trap in OpenSM's log: over the
// route logged with the notice, else over the route OpenSM logged before
// for that LID (also before the watch started), else by a sweep at once
// (OpenSM's default logging keeps the route in its buffer; OpenSM leaves
// it out for a repeated trap).
func TestFollowOpenSMLogActsOnEveryTrap(t *testing.T) {
	dir := t.TempDir()
	logPath, calls := filepath.Join(dir, "osm.log"), filepath.Join(dir, "calls")
	notice := func(lid int) string {
		return fmt.Sprintf("Nov 29 09:13:33 448280 [C60246C0] 0x01 -> log_trap_info: Received Generic Notice type:1 num:128 (Link state change) Producer:2 (Switch) from LID:%d TID:0x0000000000000000\n", lid)
	}
	route := func(path string) string {
		return "Nov 29 09:13:33 448325 [C60246C0] 0x02 -> SM class trap 128: Directed Path Dump of 1 hop path: Path = " + path + "\n"
	}
	if err := os.WriteFile(logPath, []byte(notice(7)+route("0,1,5")+"Nov 29 other line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := fabricWatchOptions{fabric: "f", opensmLog: logPath,
		discover: "echo sweep >> " + calls + "; false", probe: "echo probe {path} >> " + calls + "; false"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log lockedBuffer
	done := make(chan error, 1)
	go func() { done <- followOpenSMLog(ctx, o, nil, &log) }()
	time.Sleep(100 * time.Millisecond) // it has read the log so far
	appendLog := func(s string) {
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	var want []string
	expect := func(lines ...string) {
		t.Helper()
		want = append(want, lines...)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			data, _ := os.ReadFile(calls)
			got := strings.Split(strings.TrimSpace(string(data)), "\n")
			if strings.Join(got, "|") == strings.Join(want, "|") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("calls %q, want %q; watch log: %s", got, want, log.String())
			}
		}
	}
	// (Every probe here fails, and a failed probe is followed by a
	// sweep.)
	appendLog(notice(11) + route("0,2")) // the notice with its route: a probe
	expect("probe 0,2", "sweep")
	appendLog(notice(7)) // a repeated trap, no route: the route logged before the watch started
	expect("probe 0,1,5", "sweep")
	appendLog(notice(9)) // no route ever: a sweep at once
	expect("sweep")
	appendLog(notice(9)) // the route late (OpenSM's buffer): a sweep, then the probe when it comes
	expect("sweep")
	appendLog(route("0,3"))
	expect("probe 0,3", "sweep")
	appendLog(notice(9)) // and now the route of LID 9 is known
	expect("probe 0,3", "sweep")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "--discover") || !strings.Contains(log.String(), "--probe") {
		t.Errorf("the failing commands were not reported: %s", log.String())
	}
}
