package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/atomicfile"

	"github.com/icn-hpc/icn/slurmagent"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
)

// slurmAgentOptions are the flags of icn slurm agent.
type slurmAgentOptions struct {
	cl          clientFlags
	partition   string
	prefix      string
	window      int
	transit     float64
	interval    time.Duration
	slurmConf   string
	metricsAddr string
	once        bool
	allowShared bool
	algo        string
}

func newSlurmAgentCmd() *cobra.Command {
	var o slurmAgentOptions
	c := &cobra.Command{
		Use:   "agent",
		Short: "Place the jobs of a Slurm partition on the torus through the fabric manager",
		Long: `Every job of the partition is held at submission by icn's job_submit.lua
(icn slurm install writes it), which also refuses the ways around icn: the
partition listed with others (-p torus,plain), --nodelist, and moves,
node lists and releases by scontrol that icn did not make. Each round
(--interval) the agent:
  - refuses to place while a node of the partition is also in another
    partition (it refuses to start, too), unless --allow-shared-nodes;
  - fails in the fabric manager the nodes Slurm has down or drained, and
    drains in Slurm the nodes failed in the fabric manager;
  - frees in the fabric manager the nodes of jobs Slurm has ended;
  - asks the fabric manager to place the first held jobs (--window, in
    submit order), pins each placed job to its nodes (ReqNodeList) and
    releases its hold; a job that cannot be placed now waits, one that
    never can says why; both stay in icn's hold, which squeue shows as
    JobHeldAdmin with the reason in the comment (squeue -o "%i %r %k");
  - leaves alone a job its user holds (sbatch -H, scontrol hold): squeue
    shows JobHeldUser until the user releases it, and icn then places it;
  - holds again a job of the partition found pending without a
    placement (requeued after icn freed its nodes).
One job's failure never stops a round. The agent keeps no state that
matters: it reads Slurm (squeue, sinfo, scontrol) and the fabric manager
each round, so it survives its own restart and slurmctld's. Each
decision is logged on stderr, with its time in milliseconds;
--metrics-addr serves Prometheus metrics (decisions are counted once per
job and outcome, not per round).`,
		Example: `  icn slurm agent --server http://127.0.0.1:8080 --partition torus
  icn slurm agent --partition torus --transit 0.25 --metrics-addr 127.0.0.1:9101`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runSlurmAgent(c.Context(), o, c.ErrOrStderr())
		},
	}
	o.cl.register(c)
	f := c.Flags()
	f.StringVar(&o.partition, "partition", "torus", "the Slurm partition whose jobs icn places")
	f.StringVar(&o.prefix, "nodes-prefix", "nid", "Slurm node names: prefix and node id, zero-padded (as icn slurm topology names them)")
	f.IntVar(&o.window, "window", 8, "held jobs considered per round, in submit order")
	f.Float64Var(&o.transit, "transit", 0, "transit allowance per job as a fraction of its nodes, 0..1: T = ⌈frac·m⌉ for a job of m nodes, as --transit-frac of icn sched simulate and experiment (0: no transit nodes; transit nodes are allocated to the job)")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "time between rounds")
	f.StringVar(&o.slurmConf, "slurm-conf", os.Getenv("SLURM_CONF"), "slurm.conf for squeue, sinfo and scontrol (env SLURM_CONF)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (/metrics)")
	f.BoolVar(&o.once, "once", false, "run one round and exit")
	f.StringVar(&o.algo, "algo", "improved", "node-selection algorithm the fabric manager uses for the partition's jobs: improved, or baseline (seed 001's base algorithm: whole rectangles, for comparisons)")
	f.BoolVar(&o.allowShared, "allow-shared-nodes", false, "let the partition share nodes with other partitions (only when those are never used while icn places: Slurm would run their jobs on nodes icn gives to its own)")
	return c
}

func runSlurmAgent(ctx context.Context, o slurmAgentOptions, log io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.interval <= 0 {
		return fmt.Errorf("--interval must be positive")
	}
	cl, err := o.cl.client()
	if err != nil {
		return err
	}
	cl.Actor = "slurm-agent@" + hostname()
	m := &slurmagent.Client{C: cl}
	reg := prometheus.NewRegistry()
	a, err := slurmagent.New(ctx, slurmAgentConfig(o, log, reg), slurmagent.CLI{Conf: o.slurmConf}, m)
	if err != nil {
		return err
	}
	if o.once {
		return a.Round(ctx)
	}
	if o.metricsAddr != "" {
		ln, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %v", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		fmt.Fprintf(log, "icn-slurm-agent: metrics on http://%s/metrics\n", ln.Addr())
	}
	err = a.Run(ctx, o.interval)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// slurmAgentConfig is the agent's configuration from its flags.
func slurmAgentConfig(o slurmAgentOptions, log io.Writer, reg prometheus.Registerer) slurmagent.Config {
	return slurmagent.Config{Partition: o.partition, Prefix: o.prefix, Window: o.window,
		Transit: o.transit, Algo: alloc.Algo(o.algo), AllowSharedNodes: o.allowShared, Log: log, Registry: reg}
}

// slurmInstallOptions are the flags of icn slurm install.
type slurmInstallOptions struct {
	dir         string
	partition   string
	server      string
	icn         string
	topo        string
	prefix      string
	tokenFile   string
	transit     float64
	metricsAddr string
	force       bool
}

// recommendedTransit is the transit fraction the docs and tests use and
// the unit icn slurm install writes passes to the agent.
const recommendedTransit = 0.6

func newSlurmInstallCmd() *cobra.Command {
	var o slurmInstallOptions
	c := &cobra.Command{
		Use:   "install",
		Short: "Write job_submit.lua, slurm.conf lines, an environment file and a systemd unit for icn slurm agent",
		Long: `Writes into --dir, for the fabric of --topo (the one icn serve --topo runs):
  job_submit.lua           holds every job of the partition until the agent
                           has chosen its nodes, refuses the ways around icn
                           (copy it next to slurm.conf)
  slurm.conf.icn           the lines slurm.conf needs: JobSubmitPlugins=lua,
                           a NodeName line for the fabric's nodes (PREFIX and
                           node id, zero-padded, in fabric order: X fastest)
                           and the PartitionName line; add your nodes'
                           hardware (CPUs=, RealMemory=) to the NodeName line
  icn-slurm-agent.env      ICN_SERVER and ICN_TOKEN_FILE for the agent (0600)
  icn-slurm-agent.service  a systemd unit running icn slurm agent with
                           --transit 0.6
A file that exists with other contents is not overwritten: install prints
the difference and exits 1; --force overwrites. The partition's nodes must
be in no other partition (the agent refuses to start otherwise).`,
		Example: `  icn slurm install --topo torus:8x8x8 --dir /etc/slurm/icn --server http://fm:8080 --token-file /etc/icn/token`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runSlurmInstall(o, stdout(c))
		},
	}
	f := c.Flags()
	f.StringVar(&o.dir, "dir", "", "directory to write the files into (required)")
	f.StringVar(&o.topo, "topo", "", "the fabric, as icn serve --topo gives it: a torus or mesh spec (e.g. torus:8x8x8) or file:PATH (required)")
	f.StringVar(&o.partition, "partition", "torus", "the Slurm partition whose jobs icn places")
	f.StringVar(&o.prefix, "nodes-prefix", "nid", "Slurm node names: prefix and node id, zero-padded")
	f.StringVar(&o.server, "server", "http://127.0.0.1:8080", "fabric manager URL the agent talks to (ICN_SERVER in the environment file)")
	f.StringVar(&o.tokenFile, "token-file", "/etc/icn/token", "the fabric manager's token file, as icn serve --token-file (ICN_TOKEN_FILE in the environment file)")
	f.Float64Var(&o.transit, "transit", recommendedTransit, "transit allowance of the agent in the unit, as a fraction of a job's nodes")
	f.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:9101", "the agent's Prometheus metrics address in the unit")
	f.StringVar(&o.icn, "icn", "/usr/local/bin/icn", "path of the icn binary in the systemd unit")
	f.BoolVar(&o.force, "force", false, "overwrite files that exist with other contents")
	return c
}

func runSlurmInstall(o slurmInstallOptions, w io.Writer) error {
	if o.dir == "" {
		return fmt.Errorf("--dir is required")
	}
	if o.topo == "" {
		return fmt.Errorf("--topo is required: the fabric icn serve runs (node and partition lines are written for it)")
	}
	if strings.ContainsAny(o.partition, "\"\\\n ,") || o.partition == "" {
		return fmt.Errorf("--partition %q: want a plain Slurm partition name", o.partition)
	}
	if o.prefix == "" || o.prefix[len(o.prefix)-1] >= '0' && o.prefix[len(o.prefix)-1] <= '9' || strings.ContainsAny(o.prefix, " ,[]\n") {
		return fmt.Errorf("--nodes-prefix %q: want a non-empty prefix not ending in a digit", o.prefix)
	}
	if o.transit < 0 || o.transit > 1 || math.IsNaN(o.transit) {
		return fmt.Errorf("--transit %g outside 0..1", o.transit)
	}
	for _, v := range []struct{ flag, val string }{{"--server", o.server}, {"--token-file", o.tokenFile}, {"--icn", o.icn}, {"--metrics-addr", o.metricsAddr}} {
		if v.val == "" || strings.ContainsAny(v.val, " \n\"") {
			return fmt.Errorf("%s %q: want a non-empty value without spaces or quotes", v.flag, v.val)
		}
	}
	g, err := loadTopo(o.topo, "", "")
	if err != nil {
		return fmt.Errorf("--topo: %v", err)
	}
	if !g.HasCoords() || !g.Direct() {
		return fmt.Errorf("--topo %s: icn slurm agent places jobs on tori and meshes; this is a switched fabric", g.Name())
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	files := slurmagent.InstallFiles(slurmagent.InstallConfig{Dir: dir, Partition: o.partition, Prefix: o.prefix,
		Fabric: g.Name(), Nodes: g.NumNodes(), Server: o.server, TokenFile: o.tokenFile, ICN: o.icn,
		Transit: o.transit, MetricsAddr: o.metricsAddr})
	// Nothing is written while any existing file differs, unless --force.
	var differ []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		old, err := os.ReadFile(p)
		if err != nil || string(old) == f.Data || o.force {
			continue
		}
		differ = append(differ, p)
		fmt.Fprintf(w, "--- %s (existing)\n+++ %s (icn slurm install)\n%s", p, p, lineDiff(string(old), f.Data))
	}
	if len(differ) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d file(s) in %s exist with other contents (difference above); nothing written: pass --force to overwrite", len(differ), dir)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if old, err := os.ReadFile(p); err == nil && string(old) == f.Data {
			if err := os.Chmod(p, f.Mode); err != nil {
				return err
			}
			fmt.Fprintf(w, "unchanged %s\n", p)
			continue
		}
		if err := atomicfile.WriteMode(p, f.Mode, func(w io.Writer) error {
			_, err := w.Write([]byte(f.Data))
			return err
		}); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", p)
	}
	return nil
}

// lineDiff shows how text a becomes text b: each run of changed lines
// under "@@ line N" (its line in a), removed lines with "-", added ones
// with "+" (a longest common subsequence; the files are short).
func lineDiff(a, b string) string {
	x := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	y := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	inRun := false
	change := func(i int, line string) {
		if !inRun {
			fmt.Fprintf(&out, "@@ line %d\n", i+1)
			inRun = true
		}
		out.WriteString(line + "\n")
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			inRun = false
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			change(i, "-"+x[i])
			i++
		default:
			change(i, "+"+y[j])
			j++
		}
	}
	return out.String()
}
