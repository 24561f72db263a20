package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/multicast"
	"github.com/spf13/cobra"
)

// mcastProtocolOptions are the flags of `icn mcast protocol`.
type mcastProtocolOptions struct {
	topo    topoFlags
	out     output
	groups  string
	algo    string
	loss    string
	retries string
	backoff time.Duration
	seed    uint64
	mapping string
	quiet   bool
}

func newMcastProtocolCmd() *cobra.Command {
	var o mcastProtocolOptions
	c := &cobra.Command{
		Use:   "protocol",
		Short: "Simulate the HPC join/leave protocol for a workload with lost requests (virtual clock)",
		Long: `Drive the join/leave protocol manager on a virtual clock: every member joins
(requests spread over one second, all groups interleaved), each transmission is
lost with probability --loss; with --retries a client resends a request it got
no answer for after --backoff, doubling the wait each time. After the join
timeout (10 s) the members of Ready groups leave the same way.

--loss and --retries take comma-separated lists: with more than one value the
output is one row (JSON: one object in an array) per combination, e.g. groups
lost against the loss rate with and without retries.`,
		Example: `  icn mcast protocol --topo fattree:k=4,n=3 --groups grid2d:8x8
  icn mcast protocol --topo fattree:k=4,n=3 --groups grid2d:8x8 --loss 0.01 --seed 7
  icn mcast protocol --topo taihulight --groups grid3d:32x40x32 --loss 0.001,0.01,0.1 --retries 0,6`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMcastProtocol(c.Context(), o, stdout(c))
		},
	}
	o.topo.register(c, "topo", "")
	o.out.register(c)
	c.Flags().StringVar(&o.groups, "groups", "grid2d:4x4", "workload (see icn mcast --help)")
	c.Flags().StringVar(&o.algo, "algo", "fulb", "engine")
	c.Flags().StringVar(&o.loss, "loss", "0", "probability that a transmission is lost (comma-separated list for a sweep)")
	c.Flags().StringVar(&o.retries, "retries", "0", "resends of an unanswered request (comma-separated list for a sweep)")
	c.Flags().DurationVar(&o.backoff, "backoff", 100*time.Millisecond, "wait before the first resend; doubles after every loss")
	c.Flags().Uint64Var(&o.seed, "seed", 1, "seed for request order, losses and the random mapping")
	c.Flags().StringVar(&o.mapping, "map", "linear", "process-to-node mapping: "+multicast.MappingUsage)
	return c
}

// runMcastProtocol simulates the protocol for every loss rate and retry
// count asked for.
func runMcastProtocol(_ context.Context, o mcastProtocolOptions, w io.Writer) error {
	losses, err := parseFloatList("--loss", o.loss)
	if err != nil {
		return err
	}
	retries, err := parseIntList("--retries", o.retries)
	if err != nil {
		return err
	}
	for _, l := range losses {
		if l < 0 || l > 1 {
			return fmt.Errorf("--loss %v out of range 0..1", l)
		}
	}
	a, err := multicast.ParseAlgo(o.algo)
	if err != nil {
		return err
	}
	_, gs, h, err := loadMcastWorkload(o.groups, o.mapping, &o.topo, o.seed)
	if err != nil {
		return err
	}
	bar := cli.NewProgress(len(losses)*len(retries), "protocol runs", o.quiet)
	var reps []*multicast.ProtocolReport
	for _, r := range retries {
		for _, l := range losses {
			rep, err := multicast.SimulateProtocolWith(h, a, gs, multicast.ProtocolOptions{Loss: l, Retries: r, Backoff: o.backoff, Seed: o.seed})
			if err != nil {
				bar.Done()
				return err
			}
			reps = append(reps, rep)
			bar.Add(1)
		}
	}
	bar.Done()
	if len(reps) == 1 {
		rep := reps[0]
		return o.out.print(w, rep, func(wr io.Writer) error { return writeProtocolReport(wr, rep) })
	}
	return o.out.print(w, reps, func(wr io.Writer) error { return writeProtocolSweep(wr, reps) })
}

func writeProtocolReport(w io.Writer, rep *multicast.ProtocolReport) error {
	return cli.KV(w, "groups", rep.Groups, "loss rate", rep.Loss, "retries per request", rep.Retries,
		"join requests sent", rep.Joins, "join resends", rep.JoinRetries, "join transmissions lost", rep.LostJoins,
		"groups Ready after joins", rep.Ready, "groups destroyed by join timeout", rep.JoinTimeouts,
		"groups never created (all joins lost)", rep.NeverCreated, "groups lost (never Ready)", rep.GroupsLost,
		"leave requests sent", rep.Leaves, "leave resends", rep.LeaveRetries, "leave transmissions lost", rep.LostLeaves,
		"answers lost", rep.LostAnswers, "groups destroyed after all left", rep.AllLeft,
		"groups destroyed by leave timeout", rep.LeaveTimeouts, "re-routings caused by leaves", rep.Reroutes,
		"link load left after teardown", rep.LoadLeft, "wall time", fmt.Sprintf("%.3f s", rep.Seconds))
}

func writeProtocolSweep(w io.Writer, reps []*multicast.ProtocolReport) error {
	t := cli.NewTable("loss", "retries", "groups", "lost", "lost %", "join timeouts", "never created",
		"resends", "leave timeouts", "load left", "seconds")
	for _, r := range reps {
		t.Row(r.Loss, r.Retries, r.Groups, r.GroupsLost, fmt.Sprintf("%.2f", 100*float64(r.GroupsLost)/float64(max(r.Groups, 1))),
			r.JoinTimeouts, r.NeverCreated, r.JoinRetries+r.LeaveRetries, r.LeaveTimeouts, r.LoadLeft, fmt.Sprintf("%.3f", r.Seconds))
	}
	return t.Write(w)
}

// parseFloatList parses a comma-separated list of numbers for flag name.
func parseFloatList(name, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", name, strings.TrimSpace(f))
		}
		out = append(out, v)
	}
	return out, nil
}

// parseIntList parses a comma-separated list of whole numbers for flag name.
func parseIntList(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a whole number", name, strings.TrimSpace(f))
		}
		out = append(out, v)
	}
	return out, nil
}
