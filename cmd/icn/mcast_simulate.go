package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// mcastSimulateOptions are the flags of `icn mcast simulate`.
type mcastSimulateOptions struct {
	topo        topoFlags
	out         output
	groups      string
	algos       string
	mapping     string
	seed        uint64
	bytes       int
	flitBytes   int
	routerDelay int
	linkDelay   int
	messages    int
	senders     string
	background  float64
	bgCycles    int
	hostNS      float64
	linkGbps    float64
	closedLoop  bool
	sharedTree  string
	quiet       bool
}

// mcastSimRow is one engine's line of `icn mcast simulate`.
type mcastSimRow struct {
	Algo      string  `json:"algo"`
	Groups    int     `json:"groups"`
	MaxEFI    int     `json:"max_efi"`
	MeanEFI   float64 `json:"mean_efi"`
	MaxHeight int     `json:"max_height"`
	Flits     int     `json:"flits"`
	// CycleNS and HostOverhead (cycles, at each end) are set with
	// --link-gbps and --host-overhead.
	CycleNS      float64 `json:"cycle_ns,omitempty"`
	HostOverhead int     `json:"host_overhead_cycles,omitempty"`
	multicast.ReplayResult
}

func newMcastSimulateCmd() *cobra.Command {
	var o mcastSimulateOptions
	c := &cobra.Command{
		Use:   "simulate",
		Short: "Replay multicast messages over each engine's trees cycle by cycle and report delivery latency",
		Long: `Route the workload with each engine, then replay multicast messages over the
trees: the sender (the group's first member, or every member with --senders all)
injects a packet of --bytes; every switch replicates it onto its tree ports
after --router-delay cycles; every directed link carries one flit of
--flit-bytes per cycle, so packets of groups sharing a link wait for each other
(first come, first served; unbounded buffers). Latency is from injection to the
last flit at a member, in cycles. zero_load_mean is the same replay with no
waiting: the difference is what link sharing (EFI) costs, the zero-load value
what tree height costs. --background adds uniform random unicast traffic
(shortest paths, one per flow) around the multicast messages.

The hosts: --link-gbps sets a link's data rate, hence the cycle (one flit of
--flit-bytes per cycle), and adds the mean latency in µs to the table;
--host-overhead adds a software cost per message at the sender and at every
receiver (ns, rounded to cycles; needs --link-gbps), and spaces a sender's
messages at least that far apart; --closed-loop makes every sender wait until
its previous message reached its whole group (and both overheads passed)
before the next, like a benchmark loop. --shared-tree puts every group on one
tree built by the engine over the members of all groups (union) or over every
end node (all: the same tree, so the same height, for any number of groups),
so each group's packets reach the whole tree and every tree link carries all
groups (EFI = groups), as in the seed's EFI experiment.`,
		Example: `  icn mcast simulate --topo fattree:k=8,n=3 --groups random:count=64,size=16 --algo minhop,minhop-new,fulb
  icn mcast simulate --topo torus:8x8:endpoints=2 --groups grid2d:16x8 --bytes 8 --json
  icn mcast simulate --topo fattree:k=4,n=2 --groups file:h2.txt --algo minhop --bytes 8 \
      --link-gbps 56 --host-overhead 500 --router-delay 44
  icn mcast simulate --topo fattree:k=8,n=3 --groups file:efi16.txt --algo minhop --shared-tree all`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMcastSimulate(c.Context(), o, stdout(c))
		},
	}
	o.topo.register(c, "topo", "")
	o.out.register(c)
	c.Flags().StringVar(&o.groups, "groups", "", "workload (see icn mcast --help)")
	c.Flags().StringVar(&o.algos, "algo", "minhop,minhop-new,sssp-new,fulb", "engines, comma-separated")
	c.Flags().StringVar(&o.mapping, "map", "linear", "process-to-node mapping: "+multicast.MappingUsage)
	c.Flags().Uint64Var(&o.seed, "seed", 1, "seed for random workloads and the random mapping")
	c.Flags().IntVar(&o.bytes, "bytes", 2048, "message size in bytes (one packet)")
	c.Flags().IntVar(&o.flitBytes, "flit-bytes", 16, "bytes a link carries per cycle")
	c.Flags().IntVar(&o.routerDelay, "router-delay", 2, "cycles a switch needs to route and replicate a packet's head")
	c.Flags().IntVar(&o.linkDelay, "link-delay", 1, "cycles a flit spends on a link")
	c.Flags().IntVar(&o.messages, "messages", 1, "messages per sender, back to back")
	c.Flags().StringVar(&o.senders, "senders", "first", "who sends: first (the group's first member, a broadcast) or all")
	c.Flags().Float64Var(&o.background, "background", 0, "background unicast load per end node, fraction of a link (0 = none; uses --seed)")
	c.Flags().IntVar(&o.bgCycles, "background-cycles", 4000, "cycles of background traffic; the multicast messages start halfway")
	c.Flags().Float64Var(&o.hostNS, "host-overhead", 0, "host software time per message at the sender and at each receiver, ns (needs --link-gbps)")
	c.Flags().Float64Var(&o.linkGbps, "link-gbps", 0, "link data rate in Gb/s: sets the cycle to flit-bytes·8/rate ns (0 = cycles only)")
	c.Flags().BoolVar(&o.closedLoop, "closed-loop", false, "a sender's next message waits until its previous one reached the whole group")
	c.Flags().StringVar(&o.sharedTree, "shared-tree", "", "every group uses one tree over: union (all groups' members) or all (every end node)")
	return c
}

// replayOptions checks the message flags and turns them into replay options.
func (o mcastSimulateOptions) replayOptions() (multicast.ReplayOptions, error) {
	ro := multicast.ReplayOptions{RouterDelay: o.routerDelay, LinkDelay: o.linkDelay, Messages: o.messages,
		Background: o.background, BackgroundCycles: o.bgCycles, Seed: o.seed}
	switch {
	case o.bytes < 1 || o.bytes > 1<<20:
		return ro, fmt.Errorf("--bytes %d out of range 1..1048576", o.bytes)
	case o.flitBytes < 1:
		return ro, fmt.Errorf("--flit-bytes %d must be at least 1", o.flitBytes)
	case o.routerDelay < 0 || o.routerDelay > 1000:
		return ro, fmt.Errorf("--router-delay %d out of range 0..1000", o.routerDelay)
	case o.linkDelay < 1 || o.linkDelay > 1000:
		return ro, fmt.Errorf("--link-delay %d out of range 1..1000", o.linkDelay)
	case o.messages < 1 || o.messages > 1000:
		return ro, fmt.Errorf("--messages %d out of range 1..1000", o.messages)
	case o.background < 0 || o.background >= 1:
		return ro, fmt.Errorf("--background %v out of range 0 ≤ load < 1", o.background)
	case o.bgCycles < 2 || o.bgCycles > 1<<24:
		return ro, fmt.Errorf("--background-cycles %d out of range 2..16777216", o.bgCycles)
	}
	switch o.senders {
	case "first":
	case "all":
		ro.AllSend = true
	default:
		return ro, fmt.Errorf("--senders %q: want first or all", o.senders)
	}
	ro.Flits = (o.bytes + o.flitBytes - 1) / o.flitBytes
	return ro, nil
}

// cycleNS is the cycle length in ns set by --link-gbps (0 without it).
func (o mcastSimulateOptions) cycleNS() float64 {
	if o.linkGbps == 0 {
		return 0
	}
	return float64(o.flitBytes) * 8 / o.linkGbps
}

// hostOptions checks the host flags and turns them into host options.
func (o mcastSimulateOptions) hostOptions() (multicast.HostOptions, error) {
	ho := multicast.HostOptions{ClosedLoop: o.closedLoop}
	switch {
	case !(o.linkGbps >= 0 && o.linkGbps <= 100000):
		return ho, fmt.Errorf("--link-gbps %v out of range 0..100000", o.linkGbps)
	case !(o.hostNS >= 0 && o.hostNS <= 1e9):
		return ho, fmt.Errorf("--host-overhead %v out of range 0..1e9 ns", o.hostNS)
	case o.hostNS > 0 && o.linkGbps == 0:
		return ho, fmt.Errorf("--host-overhead needs --link-gbps to turn ns into cycles")
	case (o.hostNS > 0 || o.closedLoop) && o.background > 0:
		return ho, fmt.Errorf("--host-overhead and --closed-loop do not combine with --background")
	}
	if o.hostNS > 0 {
		ho.Overhead = int(math.Round(o.hostNS / o.cycleNS()))
	}
	return ho, nil
}

// routeMcast routes the groups with one engine: a tree per group, or one
// shared tree with --shared-tree.
func routeMcast(o mcastSimulateOptions, h *topology.HopTable, a multicast.Algo, gs []multicast.Group) (*multicast.Result, error) {
	if o.sharedTree == "" {
		return multicast.Run(h, a, gs, multicast.Options{}, nil)
	}
	scope, err := multicast.ParseSharedScope(o.sharedTree)
	if err != nil {
		return nil, fmt.Errorf("--shared-tree: %v", err)
	}
	return multicast.SharedTree(h, a, gs, scope)
}

// runMcastSimulate routes the workload with every engine and replays it.
func runMcastSimulate(_ context.Context, o mcastSimulateOptions, w io.Writer) error {
	ro, err := o.replayOptions()
	if err != nil {
		return err
	}
	ho, err := o.hostOptions()
	if err != nil {
		return err
	}
	if o.sharedTree != "" {
		if _, err := multicast.ParseSharedScope(o.sharedTree); err != nil {
			return fmt.Errorf("--shared-tree: %v", err)
		}
	}
	if o.groups == "" {
		return fmt.Errorf("no workload given (use --groups, e.g. grid2d:8x8)")
	}
	as, err := multicast.ParseAlgos(o.algos)
	if err != nil {
		return err
	}
	wspec, err := readArgFile(o.groups)
	if err != nil {
		return fmt.Errorf("--groups: %v", err)
	}
	g, gs, h, err := loadMcastWorkload(strings.TrimSpace(wspec), o.mapping, &o.topo, o.seed)
	if err != nil {
		return err
	}
	bar := cli.NewProgress(len(as), "route and replay", o.quiet)
	defer bar.Done()
	var rows []mcastSimRow
	for _, a := range as {
		res, err := routeMcast(o, h, a, gs)
		if err != nil {
			return err
		}
		rr, err := multicast.ReplayHost(g, h, gs, res.Trees, ro, ho)
		if err != nil {
			return err
		}
		rows = append(rows, mcastSimRow{Algo: res.Algo, Groups: res.Groups, MaxEFI: res.Max, MeanEFI: res.Mean,
			MaxHeight: res.MaxHeight, Flits: ro.Flits, CycleNS: o.cycleNS(), HostOverhead: ho.Overhead, ReplayResult: *rr})
		bar.Add(1)
	}
	bar.Done()
	return o.out.print(w, rows, func(w io.Writer) error { return writeMcastSimTable(w, rows) })
}

// writeMcastSimTable prints the rows; with --link-gbps a last column
// gives the mean latency in µs.
func writeMcastSimTable(w io.Writer, rows []mcastSimRow) error {
	cols := []string{"algo", "groups", "max EFI", "max height", "flits", "deliveries", "latency mean", "p99", "max",
		"zero-load mean", "completion mean", "cycles", "background mean"}
	us := len(rows) > 0 && rows[0].CycleNS > 0
	if us {
		cols = append(cols, "mean µs")
	}
	t := cli.NewTable(cols...)
	for _, r := range rows {
		var bg any = "-"
		if r.BackgroundPackets > 0 {
			bg = fmt.Sprintf("%.1f", r.BackgroundMean)
		}
		cells := []any{r.Algo, r.Groups, r.MaxEFI, r.MaxHeight, r.Flits, r.Deliveries, fmt.Sprintf("%.1f", r.Mean), r.P99, r.Max,
			fmt.Sprintf("%.1f", r.ZeroLoadMean), fmt.Sprintf("%.1f", r.CompletionMean), r.Cycles, bg}
		if us {
			cells = append(cells, fmt.Sprintf("%.3f", r.Mean*r.CycleNS/1000))
		}
		t.Row(cells...)
	}
	return t.Write(w)
}
