package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

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
	f.Float64Var(&o.transit, "transit", 0, "transit allowance per job as a fraction of its nodes, rounded up as icn alloc --transit-frac rounds it (transit nodes are allocated to the job)")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "time between rounds")
	f.StringVar(&o.slurmConf, "slurm-conf", os.Getenv("SLURM_CONF"), "slurm.conf for squeue, sinfo and scontrol (env SLURM_CONF)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (/metrics)")
	f.BoolVar(&o.once, "once", false, "run one round and exit")
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
	a, err := slurmagent.New(ctx, slurmagent.Config{Partition: o.partition, Prefix: o.prefix, Window: o.window,
		Transit: o.transit, AllowSharedNodes: o.allowShared, Log: log, Registry: reg}, slurmagent.CLI{Conf: o.slurmConf}, m)
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

// slurmInstallOptions are the flags of icn slurm install.
type slurmInstallOptions struct {
	dir       string
	partition string
	server    string
	icn       string
}

func newSlurmInstallCmd() *cobra.Command {
	var o slurmInstallOptions
	c := &cobra.Command{
		Use:   "install",
		Short: "Write job_submit.lua, a slurm.conf fragment and a systemd unit for icn slurm agent",
		Long: `Writes into --dir:
  job_submit.lua        holds every job of the partition until the agent
                        has chosen its nodes (copy next to slurm.conf)
  slurm.conf.icn        the lines slurm.conf needs (JobSubmitPlugins=lua)
  icn-slurm-agent.service  a systemd unit running icn slurm agent`,
		Example: `  icn slurm install --dir /etc/slurm --partition torus --server http://fm:8080`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runSlurmInstall(o, stdout(c))
		},
	}
	f := c.Flags()
	f.StringVar(&o.dir, "dir", "", "directory to write the files into (required)")
	f.StringVar(&o.partition, "partition", "torus", "the Slurm partition whose jobs icn places")
	f.StringVar(&o.server, "server", "http://127.0.0.1:8080", "fabric manager URL the agent talks to")
	f.StringVar(&o.icn, "icn", "/usr/local/bin/icn", "path of the icn binary in the systemd unit")
	return c
}

func runSlurmInstall(o slurmInstallOptions, w io.Writer) error {
	if o.dir == "" {
		return fmt.Errorf("--dir is required")
	}
	if strings.ContainsAny(o.partition, "\"\\\n ") || o.partition == "" {
		return fmt.Errorf("--partition %q: want a plain Slurm partition name", o.partition)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"job_submit.lua": slurmagent.JobSubmitLua(o.partition),
		"slurm.conf.icn": fmt.Sprintf(`# icn places the jobs of partition %s (icn slurm agent).
# job_submit.lua must sit next to slurm.conf.
JobSubmitPlugins=lua
# Nodes drained by icn carry a reason starting with "icn:"; resume them
# with scontrol update NodeName=... State=RESUME after icn fabric repair-node.
`, o.partition),
		"icn-slurm-agent.service": fmt.Sprintf(`[Unit]
Description=icn slurm agent: places partition %[1]s through the fabric manager
After=network-online.target slurmctld.service

[Service]
Environment=ICN_SERVER=%[2]s
# The API token: EnvironmentFile with ICN_TOKEN=..., or --token-file.
EnvironmentFile=-/etc/icn/agent.env
ExecStart=%[3]s slurm agent --partition %[1]s --metrics-addr 127.0.0.1:9101
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
`, o.partition, o.server, o.icn),
	}
	for _, name := range []string{"job_submit.lua", "slurm.conf.icn", "icn-slurm-agent.service"} {
		p := filepath.Join(o.dir, name)
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", p)
	}
	return nil
}
