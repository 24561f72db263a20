package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// openSMDefaultConfig is the configuration file OpenSM reads when it is
// not given -F (if it exists).
const openSMDefaultConfig = "/etc/opensm/opensm.conf"

// openSMLogWriter is the running OpenSM that has the log open, as found
// under a procfs.
type openSMLogWriter struct {
	pid     int
	flushed bool   // it flushes its log after every message
	config  string // the configuration file it reads ("" if none)
}

// findOpenSMLogWriter looks under proc (a procfs: /proc) for a process named
// opensm that has the file log open and says whether it flushes its log
// after every message: -d2 (--debug 2) or -V on its command line, or
// force_log_flush TRUE in its configuration file (-F/--config, else
// defaultConfig if it exists). Without the flush OpenSM writes its log to
// the file only when its buffer fills or it logs an error, so a trap's
// informational line can wait there for seconds (issue 45: 2 of 3 unlinks
// on 648 hosts missed until the next sweep). It returns nil when no
// opensm process has the log open or proc cannot be read (another user's
// processes).
func findOpenSMLogWriter(proc, log, defaultConfig string) *openSMLogWriter {
	want, err := os.Stat(log)
	if err != nil {
		return nil
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(proc, e.Name())
		if comm, err := os.ReadFile(filepath.Join(dir, "comm")); err != nil || strings.TrimSpace(string(comm)) != "opensm" {
			continue
		}
		if !hasFileOpen(dir, want) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		w := &openSMLogWriter{pid: pid}
		config := ""
		w.flushed, config = openSMFlags(args)
		if config == "" {
			if _, err := os.Stat(defaultConfig); err == nil {
				config = defaultConfig
			}
		} else if !filepath.IsAbs(config) {
			if cwd, err := os.Readlink(filepath.Join(dir, "cwd")); err == nil {
				config = filepath.Join(cwd, config)
			}
		}
		w.config = config
		if !w.flushed && config != "" {
			w.flushed = configForcesFlush(config)
		}
		return w
	}
	return nil
}

// hasFileOpen reports whether the process at dir (under a procfs) has the
// file want open.
func hasFileOpen(dir string, want os.FileInfo) bool {
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if st, err := os.Stat(filepath.Join(dir, "fd", fd.Name())); err == nil && os.SameFile(st, want) {
			return true
		}
	}
	return false
}

// openSMFlags reads OpenSM's command line: whether it forces log flushing
// (-d2, --debug 2, -V) and the configuration file it names (-F, --config).
func openSMFlags(args []string) (flushed bool, config string) {
	value := func(i int, short, long string) (string, bool) {
		a := args[i]
		switch {
		case a == short || a == long:
			if i+1 < len(args) {
				return args[i+1], true
			}
		case strings.HasPrefix(a, long+"="):
			return a[len(long)+1:], true
		case strings.HasPrefix(a, short) && !strings.HasPrefix(a, "--"):
			return a[len(short):], true
		}
		return "", false
	}
	for i := 1; i < len(args); i++ {
		if args[i] == "-V" || args[i] == "--V" {
			flushed = true
		}
		if v, ok := value(i, "-d", "--debug"); ok && strings.TrimSpace(v) == "2" {
			flushed = true
		}
		if v, ok := value(i, "-F", "--config"); ok {
			config = v
		}
	}
	return flushed, config
}

// configForcesFlush reports whether OpenSM's configuration file sets
// force_log_flush TRUE.
func configForcesFlush(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	flushed := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "force_log_flush" {
			flushed = strings.EqualFold(fields[1], "TRUE")
		}
	}
	return flushed
}

// checkOpenSMLog is the start of a watch with --opensm-log: the log must
// be a readable file (else the watch does not start). When the OpenSM that
// writes it (if one can be found) does not flush it after every message,
// note says so once: a trap's notice still reaches the file at once (it is
// logged at error level), but the directed route to its switch waits in
// OpenSM's buffer, so the watch sweeps the fabric instead of probing one
// switch.
func checkOpenSMLog(path string, note func(string)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--opensm-log: %w", err)
	}
	st, err := f.Stat()
	f.Close()
	if err != nil {
		return fmt.Errorf("--opensm-log: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("--opensm-log %s: not a regular file (OpenSM's -f log)", path)
	}
	if w := findOpenSMLogWriter("/proc", path, openSMDefaultConfig); w != nil && !w.flushed {
		conf := w.config
		if conf == "" {
			conf = openSMDefaultConfig
		}
		note(fmt.Sprintf("OpenSM (pid %d) buffers its log, so a trap's route to its switch comes late: the watch sweeps the fabric on each trap instead of probing the one switch (start OpenSM with -d2, or set force_log_flush TRUE in %s, for the probe)", w.pid, conf))
	}
	return nil
}
