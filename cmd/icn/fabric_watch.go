package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// fabricWatchOptions are the flags of icn fabric watch.
type fabricWatchOptions struct {
	cl       client
	fabric   string
	discover string
	onChange string
	interval time.Duration
	once     bool
}

func newFabricWatchCmd() *cobra.Command {
	var o fabricWatchOptions
	c := &cobra.Command{
		Use:   "watch",
		Short: "Sweep the fabric with ibnetdiscover and report link failures and repairs to the fabric manager",
		Long: `Each round (--interval) runs the discovery command (--discover, default
ibnetdiscover), compares what it sees with the fabric the service holds
(--fabric: the same file the service was started on, matched by node GUID
and port), reports every link no longer seen as failed and every failed
link seen again as repaired (POST /api/fabric/failures), and, after a
round that changed something, runs --on-change (for example a command that
makes OpenSM sweep again and load the file engine's new dump).`,
		Example: `  icn fabric watch --fabric fabric.ibnet --server http://127.0.0.1:8080
  icn fabric watch --fabric fabric.ibnet --on-change 'kill -HUP $(pidof opensm)'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runFabricWatch(c.Context(), o, c.ErrOrStderr())
		},
	}
	o.cl.register(c)
	f := c.Flags()
	f.StringVar(&o.fabric, "fabric", "", "the fabric file the service was started on (ibnetdiscover text with GUIDs)")
	f.StringVar(&o.discover, "discover", "ibnetdiscover", "shell command printing the fabric as ibnetdiscover text")
	f.StringVar(&o.onChange, "on-change", "", "shell command run after a round that reported a change")
	f.DurationVar(&o.interval, "interval", 10*time.Second, "time between sweeps")
	f.BoolVar(&o.once, "once", false, "sweep once and exit")
	return c
}

func runFabricWatch(ctx context.Context, o fabricWatchOptions, log io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.fabric == "" {
		return fmt.Errorf("--fabric is required (the file the service was started on)")
	}
	if o.interval <= 0 {
		return fmt.Errorf("--interval must be positive")
	}
	base, err := topology.Parse("file:" + strings.TrimPrefix(o.fabric, "file:"))
	if err != nil {
		return err
	}
	for {
		changes, err := watchRound(ctx, o, base, log)
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
// many changes it reported.
func watchRound(ctx context.Context, o fabricWatchOptions, base *topology.Graph, log io.Writer) (int, error) {
	out, err := exec.CommandContext(ctx, "sh", "-c", o.discover).Output()
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
	var fv fm.FabricView
	if err := o.cl.do(ctx, "GET", "/api/fabric", nil, &fv); err != nil {
		return 0, err
	}
	failed := map[string]bool{}
	for _, l := range fv.FailedLinks {
		failed[l] = true
	}
	changes := 0
	report := func(link string, repair bool) error {
		var res fm.FailureResult
		if err := o.cl.do(ctx, "POST", "/api/fabric/failures", fm.FailureChange{Link: link, Repair: repair}, &res); err != nil {
			return err
		}
		changes++
		what := "failed"
		if repair {
			what = "repaired"
		}
		msg := fmt.Sprintf("icn fabric watch: link %s %s", link, what)
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
