package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// fabricWatchOptions are the flags of icn fabric watch.
type fabricWatchOptions struct {
	cl        clientFlags
	fabric    string
	discover  string
	onChange  string
	interval  time.Duration
	once      bool
	opensmLog string
	probe     string
}

func newFabricWatchCmd() *cobra.Command {
	var o fabricWatchOptions
	c := &cobra.Command{
		Use:   "watch",
		Short: "Sweep the fabric with ibnetdiscover and report link failures and repairs to the fabric manager",
		Long: `Each round (--interval) runs the discovery command (--discover, default
ibnetdiscover -o 16), compares what it sees with the fabric the service holds
(--topo: the same file the service was started on, matched by node GUID
and port), reports every link no longer seen as failed and every failed
link seen again as repaired (POST /api/fabric/failures), and, after a
round that changed something, runs --on-change (for example a command that
makes OpenSM sweep again and load the file engine's new dump).

With --opensm-log it also follows OpenSM's log: every link-state-change
trap OpenSM logs makes it probe the switch that sent it (--probe, over the
trap's directed route) and report the changes on that switch's links at
once, between the sweeps. OpenSM writes a trap's notice to its log at
once, but the route to the switch only when it flushes its log (opensm -d2,
or force_log_flush TRUE in /etc/opensm/opensm.conf): without the route the
watch sweeps the whole fabric at once instead (--discover), and says so at
its start when the OpenSM writing the log does not flush it.`,
		Example: `  icn fabric watch --topo fabric.ibnet --server http://127.0.0.1:8080
  icn fabric watch --topo fabric.ibnet --on-change 'kill -HUP $(pidof opensm)'
  icn fabric watch --topo fabric.ibnet --opensm-log /var/log/opensm.log --on-change 'kill -HUP $(pidof opensm)'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runFabricWatch(c.Context(), o, c.ErrOrStderr())
		},
	}
	o.cl.register(c)
	f := c.Flags()
	f.StringVar(&o.fabric, "topo", "", "the fabric file the service was started on (ibnetdiscover text with GUIDs; file:PATH or PATH); --fabric is the same flag")
	fabricIsTopo(c)
	f.StringVar(&o.discover, "discover", "ibnetdiscover -o 16", "shell command printing the fabric as ibnetdiscover text (-o 16: 16 SMPs outstanding, a sweep in half the time)")
	f.StringVar(&o.onChange, "on-change", "", "shell command run after a round that reported a change")
	f.DurationVar(&o.interval, "interval", 10*time.Second, "time between sweeps")
	f.BoolVar(&o.once, "once", false, "sweep once and exit")
	f.StringVar(&o.opensmLog, "opensm-log", "", "follow OpenSM's log (its -f file): on each link-state-change trap it logs, probe the switch that sent it (--probe) at once, or sweep at once when OpenSM's route to it is not in the log (OpenSM without -d2)")
	f.StringVar(&o.probe, "probe", "iblinkinfo -D {path} -n 0", "shell command printing one switch's ports as iblinkinfo does; {path} is the trap's directed route")
	return c
}

func runFabricWatch(ctx context.Context, o fabricWatchOptions, log io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.fabric == "" {
		return fmt.Errorf("--topo is required (the fabric file the service was started on)")
	}
	if o.interval <= 0 {
		return fmt.Errorf("--interval must be positive")
	}
	if o.opensmLog != "" {
		if err := checkOpenSMLog(o.opensmLog, func(s string) { fmt.Fprintf(log, "icn fabric watch: %s\n", s) }); err != nil {
			return err
		}
	}
	base, err := topology.Parse("file:" + strings.TrimPrefix(o.fabric, "file:"))
	if err != nil {
		return err
	}
	if o.opensmLog != "" && !o.once {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- followOpenSMLog(ctx, o, base, log) }()
		defer func() {
			cancel()
			if err := <-errc; err != nil && ctx.Err() == nil {
				fmt.Fprintf(log, "icn fabric watch: %v\n", err)
			}
		}()
	}
	for {
		changes, err := watchRound(ctx, o, base, "", log)
		if err != nil {
			if o.once {
				return err
			}
			fmt.Fprintf(log, "icn fabric watch: %v\n", err)
		}
		if changes > 0 && o.onChange != "" {
			if out, err := exec.CommandContext(ctx, "sh", "-c", o.onChange).CombinedOutput(); err != nil {
				fmt.Fprintf(log, "icn fabric watch: --on-change: %v: %s\n", err, strings.TrimSpace(string(out)))
			}
		}
		if o.once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.interval):
		}
	}
}

// watchRound sweeps once and reports the differences; it returns how
// many changes it reported. trigger names what started an unscheduled
// sweep (a trap), "" for a scheduled one.
func watchRound(ctx context.Context, o fabricWatchOptions, base *topology.Graph, trigger string, log io.Writer) (int, error) {
	t0 := time.Now()
	out, err := exec.CommandContext(ctx, "sh", "-c", o.discover).Output()
	discovery := time.Since(t0).Seconds()
	if err != nil {
		return 0, fmt.Errorf("--discover %q: %v", o.discover, err)
	}
	seen, err := topology.ParseIBNet(strings.NewReader(string(out)), "discovery")
	if err != nil {
		return 0, fmt.Errorf("discovery output: %v", err)
	}
	guids := map[uint64]bool{}
	for _, v := range base.Switches() {
		guids[base.GUID(v)] = true
	}
	if !slices.ContainsFunc(seen.Switches(), func(v int) bool { return guids[seen.GUID(v)] }) {
		return 0, fmt.Errorf("the discovered fabric shares no switch GUID with %s", o.fabric)
	}
	missing := map[string]bool{}
	for _, l := range base.LinksMissingFrom(seen) {
		missing[base.LinkName(l)] = true
	}
	if len(missing) > base.NumLinks()/2 {
		// More than half the fabric gone is a discovery that failed
		// (or another fabric), not failures to report.
		return 0, fmt.Errorf("the discovery misses %d of %d links of %s: not reported (wrong fabric or a partial sweep?)", len(missing), base.NumLinks(), o.fabric)
	}
	return reportChanges(ctx, o, missing, nil, trigger+fmt.Sprintf("sweep %.2f s", discovery), log)
}

// reportChanges reports to the service, among the links in scope (nil:
// all), every link in missing it does not hold failed as failed and every
// failed link not in missing as repaired; how says how the state was
// learnt. It returns how many changes it reported.
func reportChanges(ctx context.Context, o fabricWatchOptions, missing, scope map[string]bool, how string, log io.Writer) (int, error) {
	var fv client.FabricView
	if err := o.cl.do(ctx, "GET", "/api/fabric", nil, &fv); err != nil {
		return 0, err
	}
	failed := map[string]bool{}
	for _, l := range fv.FailedLinks {
		if scope == nil || scope[l] {
			failed[l] = true
		}
	}
	changes := 0
	report := func(link string, repair bool) error {
		var res client.FailureResult
		if err := o.cl.do(ctx, "POST", "/api/fabric/failures", client.FailureChange{Link: link, Repair: repair}, &res); err != nil {
			return err
		}
		changes++
		what := "failed"
		if repair {
			what = "repaired"
		}
		msg := fmt.Sprintf("icn fabric watch: link %s %s (%s)", link, what, how)
		if u := res.Unicast; u != nil {
			if u.Written {
				msg += fmt.Sprintf("; tables rewritten in %.2f s (%s: %d of %d destinations routed again, %d entries changed)", u.Seconds, u.Mode, u.Rerouted, u.Destinations, u.Changed)
				if u.Rebalancing {
					msg += "; a full computation follows in the background"
				}
			} else {
				msg += "; " + u.Error
			}
			if len(u.Disconnected) > 0 {
				msg += fmt.Sprintf("; hosts cut off: %s", strings.Join(u.Disconnected, ","))
			}
		}
		fmt.Fprintln(log, msg)
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(missing)) {
		if !failed[name] {
			if err := report(name, false); err != nil {
				return changes, err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		if !missing[name] {
			if err := report(name, true); err != nil {
				return changes, err
			}
		}
	}
	return changes, nil
}

// OpenSM logs each trap in two lines: the notice, with the LID of the
// switch that sent it, at error level (written to the file at once, also
// with OpenSM's default logging), and for a link-state change (trap 128)
// the directed route to that switch at info level (left in OpenSM's buffer
// until its next error unless it runs with -d2 or force_log_flush TRUE).
// OpenSM leaves the route out for a trap it has seen from the same switch
// moments before.
var (
	reTrap128   = regexp.MustCompile(`SM class trap 128: Directed Path Dump of \d+ hop path: Path = ([0-9,]+)`)
	reNotice128 = regexp.MustCompile(`Received Generic Notice type:\d+ num:128 .*from LID:(\d+)`)
)

// logHistory is how much of the end of OpenSM's log the watch reads at
// its start for the routes OpenSM logged for its switches.
const logHistory = 64 << 20

// trapRouteWait is how long a trap's notice waits for its directed route
// in the log before the watch looks for the switch another way.
const trapRouteWait = 30 * time.Millisecond

// followOpenSMLog follows OpenSM's log from its end and, for every
// link-state-change trap, probes the switch that sent it (over the route
// OpenSM logs, or one it logged before for that LID) or, when OpenSM's
// route is not in the log, sweeps the fabric at once; it reports what
// changed.
func followOpenSMLog(ctx context.Context, o fabricWatchOptions, base *topology.Graph, log io.Writer) error {
	lr, err := openOSMLog(o.opensmLog)
	if err != nil {
		return err
	}
	defer func() { lr.fh.Close() }()
	var pending []string // notices still waiting for their route
	var pendingSince time.Time
	for ctx.Err() == nil {
		if err := lr.reopenIfTruncated(); err != nil {
			return err
		}
		var paths, sweepFor []string
		n := lr.lines(func(line []byte) {
			lr.scan(line, func(path, lid string) {
				if !slices.Contains(paths, path) {
					paths = append(paths, path)
				}
				if k := slices.Index(pending, lid); k >= 0 {
					pending = slices.Delete(pending, k, k+1)
				}
			}, func(lid string) {
				if len(pending) == 0 {
					pendingSince = time.Now()
				}
				pending = append(pending, lid)
			})
		})
		if len(pending) > 0 && time.Since(pendingSince) >= trapRouteWait {
			// No route logged for these notices (yet): a route logged
			// before for the LID, else a sweep.
			for _, lid := range pending {
				if path, ok := lr.routes[lid]; ok {
					if !slices.Contains(paths, path) {
						paths = append(paths, path)
					}
				} else if !slices.Contains(sweepFor, lid) {
					sweepFor = append(sweepFor, lid)
				}
			}
			pending = nil
		}
		if len(paths) == 0 && len(sweepFor) == 0 {
			if n == 0 {
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
			}
			continue
		}
		actOnTraps(ctx, o, base, paths, sweepFor, log)
	}
	return nil
}

// actOnTraps probes the switches at the routes of traps, sweeps for the
// LIDs whose route OpenSM did not log, and runs --on-change when
// something changed.
func actOnTraps(ctx context.Context, o fabricWatchOptions, base *topology.Graph, paths, sweepFor []string, log io.Writer) {
	changes := 0
	var failed []string // routes whose probe failed
	for _, path := range paths {
		k, err := probeSwitch(ctx, o, base, path, log)
		if err != nil {
			fmt.Fprintf(log, "icn fabric watch: %v\n", err)
			failed = append(failed, path)
		}
		changes += k
	}
	// A probe that failed (the trap's route may cross the link that
	// went down) tells nothing: the fabric is swept, as for a route not
	// logged.
	var why []string
	if len(sweepFor) > 0 {
		why = append(why, fmt.Sprintf("trap from LID %s, route not logged", strings.Join(sweepFor, ",")))
	}
	if len(failed) > 0 {
		why = append(why, fmt.Sprintf("trap's probe over %s failed", strings.Join(failed, " ")))
	}
	if len(why) > 0 {
		k, err := watchRound(ctx, o, base, strings.Join(why, ", ")+"; ", log)
		if err != nil {
			fmt.Fprintf(log, "icn fabric watch: %v\n", err)
		}
		changes += k
	}
	if changes > 0 && o.onChange != "" {
		if out, err := exec.CommandContext(ctx, "sh", "-c", o.onChange).CombinedOutput(); err != nil {
			fmt.Fprintf(log, "icn fabric watch: --on-change: %v: %s\n", err, strings.TrimSpace(string(out)))
		}
	}
}

// osmLog reads OpenSM's log line by line as it grows, and keeps the
// directed route OpenSM last logged for each switch LID.
type osmLog struct {
	path    string
	fh      *os.File
	off     int64
	partial []byte
	buf     []byte
	routes  map[string]string // switch LID → directed route
	lastLID string
}

// openOSMLog opens the log and reads what is there (its last
// logHistory bytes) for the routes logged so far; following starts at
// its end.
func openOSMLog(path string) (*osmLog, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--opensm-log: %v", err)
	}
	lr := &osmLog{path: path, fh: fh, buf: make([]byte, 1<<16), routes: map[string]string{}}
	dropFirst := false // the first line read is a line's end
	if fi, err := fh.Stat(); err == nil && fi.Size() > logHistory {
		if lr.off, err = fh.Seek(fi.Size()-logHistory, io.SeekStart); err != nil {
			fh.Close()
			return nil, fmt.Errorf("--opensm-log: %v", err)
		}
		dropFirst = true
	}
	for lr.lines(func(line []byte) {
		if !dropFirst {
			lr.scan(line, func(string, string) {}, func(string) {})
		}
		dropFirst = false
	}) > 0 {
	}
	lr.lastLID = ""
	return lr, nil
}

// reopenIfTruncated starts again at the beginning of a log that was
// rotated or truncated.
func (lr *osmLog) reopenIfTruncated() error {
	fi, err := os.Stat(lr.path)
	if err != nil || fi.Size() >= lr.off {
		return nil
	}
	lr.fh.Close()
	if lr.fh, err = os.Open(lr.path); err != nil {
		return fmt.Errorf("--opensm-log: %v", err)
	}
	lr.off, lr.partial = 0, nil
	return nil
}

// lines reads what the log has now and calls f with each complete line;
// it returns the bytes read.
func (lr *osmLog) lines(f func(line []byte)) int {
	n, _ := lr.fh.Read(lr.buf)
	if n == 0 {
		return 0
	}
	lr.off += int64(n)
	lr.partial = append(lr.partial, lr.buf[:n]...)
	for {
		i := bytes.IndexByte(lr.partial, '\n')
		if i < 0 {
			return n
		}
		f(lr.partial[:i])
		lr.partial = lr.partial[i+1:]
	}
}

// scan reads one line: a trap's notice (its LID) or the directed route
// logged after it, which is kept for the LID.
func (lr *osmLog) scan(line []byte, onRoute func(path, lid string), onNotice func(lid string)) {
	if m := reNotice128.FindSubmatch(line); m != nil {
		lr.lastLID = string(m[1])
		onNotice(lr.lastLID)
	} else if m := reTrap128.FindSubmatch(line); m != nil {
		if lr.lastLID != "" {
			lr.routes[lr.lastLID] = string(m[1])
		}
		onRoute(string(m[1]), lr.lastLID)
		lr.lastLID = ""
	}
}

// probeSwitch runs the probe on the switch at directed route path and
// reports the changes on its links.
func probeSwitch(ctx context.Context, o fabricWatchOptions, base *topology.Graph, path string, log io.Writer) (int, error) {
	t0 := time.Now()
	cmd := strings.ReplaceAll(o.probe, "{path}", path)
	out, err := exec.CommandContext(ctx, "sh", "-c", cmd).Output()
	if err != nil {
		return 0, fmt.Errorf("--probe %q: %v", cmd, err)
	}
	guid, ports, err := parseLinkInfo(string(out))
	if err != nil {
		return 0, fmt.Errorf("--probe %q: %v", cmd, err)
	}
	v := -1
	for _, w := range base.Switches() {
		if base.GUID(w) == guid {
			v = w
		}
	}
	if v < 0 {
		return 0, fmt.Errorf("--probe %q: switch GUID 0x%016x is not in %s", cmd, guid, o.fabric)
	}
	missing, scope := map[string]bool{}, map[string]bool{}
	for p, up := range ports {
		c := base.PortChannel(v, p)
		if c < 0 {
			continue
		}
		name := base.LinkName(c >> 1)
		scope[name] = true
		if !up {
			missing[name] = true
		}
	}
	return reportChanges(ctx, o, missing, scope, fmt.Sprintf("trap from %s, probed in %.2f s", base.NodeName(v), time.Since(t0).Seconds()), log)
}

var (
	reLinkInfoSwitch = regexp.MustCompile(`^Switch:\s+0x([0-9a-fA-F]{1,16})\b`)
	reLinkInfoPort   = regexp.MustCompile(`^\s*\d+\s+(\d+)\[[^\]]*\]\s+==\((.*?)\)==>`)
)

// parseLinkInfo reads iblinkinfo's report of one switch: its GUID and, per
// port, whether the link is up (physically LinkUp) or not.
func parseLinkInfo(text string) (uint64, map[int]bool, error) {
	var guid uint64
	have := false
	ports := map[int]bool{}
	for _, line := range strings.Split(text, "\n") {
		if m := reLinkInfoSwitch.FindStringSubmatch(line); m != nil {
			if have {
				return 0, nil, fmt.Errorf("the probe reports more than one switch (give it -n 0)")
			}
			guid, _ = strconv.ParseUint(m[1], 16, 64)
			have = true
			continue
		}
		if m := reLinkInfoPort.FindStringSubmatch(line); m != nil && have {
			p, _ := strconv.Atoi(m[1])
			ports[p] = strings.Contains(m[2], "LinkUp")
		}
	}
	if !have || len(ports) == 0 {
		return 0, nil, fmt.Errorf("no switch and ports in its output (iblinkinfo format expected)")
	}
	return guid, ports, nil
}
