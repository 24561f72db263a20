package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newFabricCmd is `icn fabric`: routing engines, audits and the
// fabric-manager client commands of serve.go.
func newFabricCmd() *cobra.Command {
	c := &cobra.Command{Use: "fabric", Short: "Unicast routing of switched fabrics (OpenSM-compatible LFTs) and routing audits"}
	c.AddCommand(newFabricRouteCmd(), newFabricAuditCmd(), newFabricEnginesCmd(), newFabricWatchCmd())
	c.AddCommand(fabricClientCmds()...)
	return c
}

// fabricAuditOptions are the flags of `icn fabric audit`.
type fabricAuditOptions struct {
	ff                 fabricFlags
	af                 auditFlags
	out                output
	lftPath, lanesPath string
	stderr             io.Writer
}

func newFabricAuditCmd() *cobra.Command {
	var o fabricAuditOptions
	c := &cobra.Command{
		Use:   "audit",
		Short: "Audit forwarding tables (opensm-lfts.dump, e.g. from OpenSM) for a fabric: reachability, path lengths, link loads, deadlock",
		Example: `  icn fabric audit --topo net.ibnet --lft opensm-lfts.dump
  icn fabric route --topo fattree:k=4,n=3 --engine ftree --lft-out lfts.dump && icn fabric audit --topo fattree:k=4,n=3 --lft lfts.dump --json --check`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.stderr = c.ErrOrStderr()
			return runFabricAudit(c.Context(), o, stdout(c))
		},
	}
	o.ff.register(c)
	o.af.register(c)
	o.out.register(c)
	c.Flags().StringVar(&o.lftPath, "lft", "", "opensm-lfts.dump file to audit")
	c.Flags().StringVar(&o.lanesPath, "lanes-file", "", "lane file written by --lanes-out (default: every path on lane 0)")
	return c
}

// runFabricAudit reads the tables (and lanes) for the fabric, audits them
// and prints the report; with --check a failed audit is exit status 1.
func runFabricAudit(_ context.Context, o fabricAuditOptions, w io.Writer) error {
	if o.stderr == nil {
		o.stderr = io.Discard
	}
	if o.lftPath == "" {
		return fmt.Errorf("no tables given (use --lft FILE)")
	}
	t, err := readFabricTables(o.ff, o.lftPath, o.lanesPath, o.stderr)
	if err != nil {
		return err
	}
	rep, err := o.af.audit(t)
	if err != nil {
		return err
	}
	v := routeJSON{Fabric: o.ff.spec, Report: rep, Seconds: rep.Seconds, AuditSeconds: rep.Seconds, LanesNeeded: t.Lanes(), GUIDWarning: t.F.GUIDNote}
	if err := o.out.print(w, v, func(w io.Writer) error { return writeFabricReport(w, o.ff.spec, &v, false) }); err != nil {
		return err
	}
	return o.af.verdict(rep)
}

// readFabricTables loads the fabric and reads an opensm-lfts.dump for it,
// plus the lane of every path when lanesPath is given.
func readFabricTables(ff fabricFlags, lftPath, lanesPath string, stderr io.Writer) (*unicast.Tables, error) {
	g, ann, err := ff.graph(stderr)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(lftPath)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	t, err := unicast.ReadDump(fh, lftPath, g, ann)
	if err != nil {
		return nil, err
	}
	if lanesPath != "" {
		lf, err := os.Open(lanesPath)
		if err != nil {
			return nil, err
		}
		defer lf.Close()
		if err := t.ReadLanes(lf, lanesPath); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// fabricEnginesOptions are the flags of `icn fabric engines`.
type fabricEnginesOptions struct {
	out output
}

func newFabricEnginesCmd() *cobra.Command {
	var o fabricEnginesOptions
	c := &cobra.Command{
		Use:   "engines",
		Short: "List the routing engines: the fabrics each routes, what it takes and guarantees about deadlock, how it follows a change",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runFabricEngines(c.Context(), o, stdout(c))
		},
	}
	o.out.register(c)
	return c
}

// fabricEngineRow is one routing engine in `icn fabric engines`.
type fabricEngineRow struct {
	Name     string       `json:"name"`
	Summary  string       `json:"summary"`
	Deadlock string       `json:"deadlock"`
	Caps     unicast.Caps `json:"caps"`
}

// runFabricEngines lists the unicast routing engines of the registry.
func runFabricEngines(_ context.Context, o fabricEnginesOptions, w io.Writer) error {
	var rows []fabricEngineRow
	for _, e := range unicast.Engines {
		rows = append(rows, fabricEngineRow{e.Name, e.Summary, e.Deadlock, e.Caps})
	}
	return o.out.print(w, rows, func(w io.Writer) error {
		t := cli.NewTable("ENGINE", "FABRICS", "TAKES", "AFTER A CHANGE", "DEADLOCK", "HOW IT ROUTES")
		for _, r := range rows {
			var takes []string
			if r.Caps.Roots {
				takes = append(takes, "--roots")
			}
			if r.Caps.Lanes {
				takes = append(takes, "--lanes")
			}
			t.Row(r.Name, r.Caps.Fabrics, strings.Join(takes, " "), r.Caps.Update, r.Deadlock, r.Summary)
		}
		return t.Write(w)
	})
}

// enginesWith names the unicast engines whose capabilities satisfy keep
// (for help texts).
func enginesWith(keep func(unicast.Caps) bool) string {
	return strings.Join(unicast.EngineNamesWith(keep), ", ")
}

// fabricRouteOptions are the flags of `icn fabric route`.
type fabricRouteOptions struct {
	ff                              fabricFlags
	af                              auditFlags
	out                             output
	engine, roots, lftOut, lanesOut string
	lftCompact                      bool
	force                           bool
	lanes                           int
	stderr                          io.Writer
}

func newFabricRouteCmd() *cobra.Command {
	var o fabricRouteOptions
	c := &cobra.Command{
		Use:   "route",
		Short: "Compute linear forwarding tables with a routing engine, audit them, optionally write opensm-lfts.dump",
		Example: `  icn fabric route --topo fattree:k=4,n=3 --engine ftree
  icn fabric route --topo dragonfly:a=4,p=2,h=2 --engine dfsssp --lanes 4 --json
  icn fabric route --topo net.ibnet --engine updn --roots S-0002c90000001d18 --lft-out opensm-lfts.dump`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.stderr = c.ErrOrStderr()
			return runFabricRoute(c.Context(), o, stdout(c))
		},
	}
	o.ff.register(c)
	o.af.register(c)
	o.out.register(c)
	c.Flags().StringVar(&o.engine, "engine", unicast.DefaultEngine, "routing engine: "+strings.Join(unicast.EngineNames(), ", "))
	c.Flags().StringVar(&o.roots, "roots", "", "up*/down* root switches ("+enginesWith(func(c unicast.Caps) bool { return c.Roots })+"): names or GUIDs (0x…), comma-separated, or @FILE (OpenSM root GUID file)")
	c.Flags().IntVar(&o.lanes, "lanes", unicast.DefaultLanes, fmt.Sprintf("virtual lanes the engines that layer paths (%s) may use, 1..%d", enginesWith(func(c unicast.Caps) bool { return c.Lanes }), unicast.MaxLanes))
	c.Flags().StringVar(&o.lftOut, "lft-out", "", "write the tables as opensm-lfts.dump to FILE (OpenSM: -R file -U FILE)")
	c.Flags().BoolVar(&o.lftCompact, "lft-compact", false, "write --lft-out without the comment naming each LID's holder (a sixth of the size; OpenSM reads only LID and port)")
	c.Flags().BoolVar(&o.force, "force", false, "write an --lft-out dump larger than 1 GB")
	c.Flags().StringVar(&o.lanesOut, "lanes-out", "", "write the lane of every path to FILE ("+enginesWith(func(c unicast.Caps) bool { return c.Lanes })+")")
	return c
}

// lftForceBytes is the largest --lft-out dump written without --force.
const lftForceBytes = 1 << 30

// checkDumpSize refuses a dump of up to size bytes (the bound the fabric
// gives before routing: unicast.Fabric.DumpSizeBound) over lftForceBytes
// unless forced.
func checkDumpSize(path string, size int64, force bool) error {
	if size > lftForceBytes && !force {
		return &exitError{2, fmt.Errorf("--lft-out %s would be up to %.1f GB (OpenSM's format lists every LID for every switch); give --force to write it", path, float64(size)/1e9)}
	}
	return nil
}

// runFabricRoute routes, audits, writes the files asked for and prints the
// report.
func runFabricRoute(ctx context.Context, o fabricRouteOptions, w io.Writer) error {
	if o.stderr == nil {
		o.stderr = io.Discard
	}
	f, err := o.ff.load(o.stderr)
	if err != nil {
		return err
	}
	ro := unicast.Options{Engine: o.engine, Lanes: o.lanes, Workers: o.af.workers}
	if o.roots != "" {
		list, err := readArgFile(o.roots)
		if err != nil {
			return fmt.Errorf("--roots: %v", err)
		}
		if ro.Roots, err = unicast.ParseRoots(f.G, list); err != nil {
			return fmt.Errorf("--roots: %v", err)
		}
	}
	if o.lftOut != "" {
		// refused before the routing when the fabric alone says so
		if err := checkDumpSize(o.lftOut, f.DumpSizeBound(o.engine, o.lftCompact), o.force); err != nil {
			return err
		}
	}
	bar := cli.NewProgress(-1, "routing "+o.engine, false)
	ro.Progress = bar.Add
	start := time.Now()
	res, err := unicast.Route(ctx, f, ro)
	bar.Done()
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	rep, err := o.af.audit(res.Tables)
	if err != nil {
		return err
	}
	if o.lftOut != "" {
		size, write := res.Tables.DumpSize(), res.Tables.WriteDump
		if o.lftCompact {
			size, write = res.Tables.CompactDumpSize(), res.Tables.WriteCompactDump
		}
		fmt.Fprintf(o.stderr, "icn: writing %s (%.1f MB)\n", o.lftOut, float64(size)/1e6)
		if err := writeStreamAtomic(o.lftOut, write); err != nil {
			return err
		}
	}
	if o.lanesOut != "" {
		if err := writeStreamAtomic(o.lanesOut, res.Tables.WriteLanes); err != nil {
			return err
		}
	}
	var rootNames []string
	for _, v := range res.Roots {
		rootNames = append(rootNames, f.G.NodeName(v))
	}
	v := routeJSON{Fabric: o.ff.spec, Report: rep, Seconds: secs, AuditSeconds: rep.Seconds,
		LayerSeconds: res.LayerSeconds, LayerBreaks: res.LayerBreaks, LayerMoved: res.LayerMoved, LanesNeeded: res.LanesNeeded, LaneLimit: res.LaneLimit,
		Roots: rootNames, LFTOut: o.lftOut, LanesOut: o.lanesOut, Order: res.Order, GUIDWarning: f.GUIDNote}
	if err := o.out.print(w, v, func(w io.Writer) error { return writeFabricReport(w, o.ff.spec, &v, true) }); err != nil {
		return err
	}
	return o.af.verdict(rep)
}

// writeStreamAtomic writes a file through write as it is produced (memory
// stays bounded) into a temporary file next to path, renamed into place
// once complete, so a failure never leaves a truncated file behind.
func writeStreamAtomic(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, write)
}

// writeIBNetExport writes g as ibnetdiscover text with the LIDs icn's
// unicast engines give it (those of the file when spec is an ibnetdiscover
// or ibsim file): ibsim configures them and OpenSM keeps them, so tables
// icn computes for the export load with `opensm -R file` as they are.
// Graphs without switches are written with the LIDs they carry.
func writeIBNetExport(w io.Writer, g *topology.Graph, spec string) error {
	var ann *unicast.Annotations
	path := strings.TrimPrefix(spec, "file:")
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		if data, err := os.ReadFile(path); err == nil && topology.DetectFormat(data) == topology.FormatIBNet {
			if ann, err = unicast.ParseAnnotations(data, path); err != nil {
				return err
			}
		}
	}
	f, err := unicast.NewFabric(g, ann)
	if err != nil || g.Count(topology.Switch) == 0 {
		return g.WriteIBNet(w)
	}
	return g.WriteIBNetLIDs(w, f.PortLID)
}

// fabricIsTopo makes --fabric another spelling of --topo on c (every
// command names its network --topo; --fabric is kept for scripts).
func fabricIsTopo(c *cobra.Command) {
	c.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "fabric" {
			name = "topo"
		}
		return pflag.NormalizedName(name)
	})
}

// fabricFlags select the fabric: a spec or a file, plus failures.
type fabricFlags struct {
	spec      string
	failLinks string
	failNodes string
}

func (ff *fabricFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&ff.spec, "topo", "", "fabric: a spec (fattree:k=4,n=3, dragonfly:a=4,p=2,h=2, torus:4x4:endpoints=1, …) or a file (ibnetdiscover, ibsim net, JSON, YAML); --fabric is the same flag")
	fabricIsTopo(c)
	c.Flags().StringVar(&ff.failLinks, "fail-links", "", "failed links: NODE[PORT], A~B, NODE+X, comma-separated, or @FILE")
	c.Flags().StringVar(&ff.failNodes, "fail-nodes", "", "failed nodes, comma-separated, or @FILE")
}

// graph loads the network (an existing file is read as file:PATH) and, for
// ibnetdiscover / ibsim text, its per-port LID and GUID annotations. A file
// without GUIDs is reported on stderr: tables for it only fit a simulated
// fabric.
func (ff *fabricFlags) graph(stderr io.Writer) (*topology.Graph, *unicast.Annotations, error) {
	if ff.spec == "" {
		return nil, nil, fmt.Errorf("no fabric given (use --topo SPEC or FILE)")
	}
	spec := ff.spec
	if st, err := os.Stat(spec); err == nil && !st.IsDir() && !strings.HasPrefix(spec, "file:") {
		spec = "file:" + spec
	}
	g, err := loadTopo(spec, ff.failLinks, ff.failNodes)
	if err != nil {
		return nil, nil, err
	}
	var ann *unicast.Annotations
	if path, ok := strings.CutPrefix(spec, "file:"); ok {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		if topology.DetectFormat(data) == topology.FormatIBNet {
			if ann, err = unicast.ParseAnnotations(data, path); err != nil {
				return nil, nil, err
			}
			if !ann.HasGUIDs() {
				fmt.Fprintf(stderr, "icn: warning: %s gives no GUIDs; switch and port GUIDs follow ibsim's assignment, so tables for it only fit a simulated fabric\n", path)
			}
		}
	}
	return g, ann, nil
}

func (ff *fabricFlags) load(stderr io.Writer) (*unicast.Fabric, error) {
	g, ann, err := ff.graph(stderr)
	if err != nil {
		return nil, err
	}
	return unicast.NewFabric(g, ann)
}

// auditFlags are the audit settings route and audit share.
type auditFlags struct {
	contention string
	shifts     int
	perms      int
	seed       uint64
	workers    int
	check      bool
}

func (af *auditFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&af.contention, "contention", "auto", "permutation contention: auto (fat trees only), on or off")
	c.Flags().IntVar(&af.shifts, "shifts", 0, "shift permutations to test: 0 = all when there are at most 4097 end ports, else 256 evenly spaced; N = N evenly spaced")
	c.Flags().IntVar(&af.perms, "perms", 8, "random permutations to test")
	c.Flags().Uint64Var(&af.seed, "seed", 1, "seed of the random permutations")
	c.Flags().IntVar(&af.workers, "workers", 0, "goroutines (0 = all cores; results do not depend on it)")
	c.Flags().BoolVar(&af.check, "check", false, "exit with status 1 unless every pair is reachable and the routing is deadlock-free")
}

func (af *auditFlags) audit(t *unicast.Tables) (*unicast.Report, error) {
	o := unicast.AuditOptions{Shifts: af.shifts, Perms: af.perms, Seed: af.seed, Workers: af.workers}
	switch af.contention {
	case "auto":
	case "on":
		o.Contention = unicast.ContentionOn
	case "off":
		o.Contention = unicast.ContentionOff
	default:
		return nil, fmt.Errorf("--contention %q: want auto, on or off", af.contention)
	}
	if af.perms < 0 || af.shifts < 0 {
		return nil, fmt.Errorf("--shifts and --perms must be ≥ 0")
	}
	if af.perms == 0 {
		o.Perms = -1
	}
	bar := cli.NewProgress(-1, "auditing", false)
	o.Progress = bar.Add
	rep, err := unicast.Audit(t, o)
	bar.Done()
	return rep, err
}

func (af *auditFlags) verdict(r *unicast.Report) error {
	if !af.check {
		return nil
	}
	switch {
	case !r.Reachable:
		return &exitError{1, fmt.Errorf("%d unreachable pairs (%s)", r.UnreachablePairs, r.FirstUnreachable)}
	case !r.DeadlockFree:
		return &exitError{1, fmt.Errorf("channel dependency cycle on lane %d: %s", r.CycleLane, strings.Join(r.Cycle, " → "))}
	}
	return nil
}

// routeJSON is the output of route and audit.
type routeJSON struct {
	Fabric string `json:"fabric"`
	*unicast.Report
	Seconds      float64  `json:"seconds"`
	AuditSeconds float64  `json:"audit_seconds"`
	LayerSeconds float64  `json:"layer_seconds"`
	LayerBreaks  int      `json:"layer_cycles_broken"`
	LayerMoved   int64    `json:"layer_paths_moved"`
	LanesNeeded  int      `json:"lanes_needed"`
	LaneLimit    bool     `json:"lane_limit"`
	Roots        []string `json:"roots,omitempty"`
	LFTOut       string   `json:"lft_out,omitempty"`
	LanesOut     string   `json:"lanes_out,omitempty"`
	// Order is the destination order the engine kept (see docs/unicast.md).
	Order       string `json:"destination_order,omitempty"`
	GUIDWarning string `json:"guid_warning,omitempty"`
}

func writeFabricReport(w io.Writer, spec string, v *routeJSON, routed bool) error {
	r := v.Report
	t := cli.NewTable("METRIC", "VALUE")
	t.Row("fabric", spec)
	t.Row("engine", r.Engine)
	t.Row("switches / end nodes / LIDs", fmt.Sprintf("%d / %d / %d", r.Switches, r.Endpoints, r.LIDs))
	if len(v.Roots) > 0 {
		t.Row("up*/down* roots", strings.Join(v.Roots, ","))
	}
	if v.Order != "" {
		t.Row("destination order", v.Order)
	}
	if v.GUIDWarning != "" {
		t.Row("GUIDs", "WARNING: "+v.GUIDWarning)
	}
	reach := "yes"
	switch {
	case !r.Reachable && r.UnreachableSwitch == r.UnreachablePairs:
		reach = fmt.Sprintf("end ports yes; %d of %d pairs to switch LIDs (management) unreachable; first: %s", r.UnreachablePairs, r.Pairs, r.FirstUnreachable)
	case !r.Reachable:
		reach = fmt.Sprintf("NO: %d of %d pairs (%d black holes, %d loops, %d delivered to the wrong end port); first: %s", r.UnreachablePairs, r.Pairs, r.BlackHoles, r.Loops, r.Misdelivered, r.FirstUnreachable)
	}
	t.Row("all pairs reachable", reach)
	t.Row("hops (links) max / avg", fmt.Sprintf("%d / %s", r.MaxHops, cli.Float(r.AvgHops)))
	t.Row("minimal routes", fmt.Sprintf("%s%%", cli.Float(100*r.MinimalFraction)))
	t.Row("routes per switch link max / mean", fmt.Sprintf("%d / %s (π_perfect %s, balance factor %s%%)", r.MaxLinkRoutes, cli.Float(r.MeanLinkRoutes), cli.Float(r.PiPerfect), cli.Float(r.BalanceFactor)))
	dl := "yes"
	if !r.DeadlockFree {
		dl = fmt.Sprintf("NO: cycle on lane %d: %s", r.CycleLane, strings.Join(r.Cycle, " → "))
	}
	t.Row("deadlock-free", dl)
	t.Row("lanes", r.Lanes)
	for _, l := range r.LaneCDG {
		t.Row(fmt.Sprintf("  lane %d", l.Lane), fmt.Sprintf("%d paths, %d dependencies, acyclic: %s", l.Paths, l.Edges, cli.Cell(l.Acyclic)))
	}
	if v.LaneLimit {
		t.Row("lane budget", "EXHAUSTED: raise --lanes")
	}
	if c := r.Contention; c != nil {
		t.Row("shift contention (max routes on a link)", fmt.Sprintf("%d over %d shifts (worst shift %d, mean %s), %s order", c.ShiftMax, c.Shifts, c.ShiftWorst, cli.Float(c.ShiftMean), c.Order))
		t.Row("random-permutation contention", fmt.Sprintf("max %d, mean %s over %d permutations (seed %d)", c.RandomMax, cli.Float(c.RandomMean), c.Random, c.Seed))
	}
	if routed {
		t.Row("route seconds", cli.Float(v.Seconds))
		if v.LayerSeconds > 0 {
			t.Row("  of which lane layering", fmt.Sprintf("%s (%d cycles broken, %d paths moved)", cli.Float(v.LayerSeconds), v.LayerBreaks, v.LayerMoved))
		}
	}
	t.Row("audit seconds", cli.Float(v.AuditSeconds))
	if v.LFTOut != "" {
		t.Row("tables written to", v.LFTOut)
	}
	if v.LanesOut != "" {
		t.Row("lanes written to", v.LanesOut)
	}
	return t.Write(w)
}
