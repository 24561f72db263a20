package slurmagent

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/icn-hpc/icn/sched"
)

// InstallConfig says what `icn slurm install` writes for a site: the
// partition icn places, the fabric (its name and node count, numbered as
// icn serve numbers them) and how the agent reaches the fabric manager.
type InstallConfig struct {
	Dir         string // where the files go (absolute)
	Partition   string
	Prefix      string // node names: Prefix and the node id, zero-padded
	Fabric      string // the fabric's spec, as icn serve --topo names it
	Nodes       int
	Server      string // the fabric manager's URL
	TokenFile   string
	ICN         string // the icn binary the unit runs
	Transit     float64
	MetricsAddr string
}

// InstallFile is one file of a site's installation.
type InstallFile struct {
	Name string // in InstallConfig.Dir
	Mode os.FileMode
	Data string
}

// InstallFiles returns the files of an installation: the job_submit
// script, the slurm.conf lines (the plugin, the fabric's nodes and the
// partition that owns them), the agent's environment file (0600: it
// names the token file) and its systemd unit.
func InstallFiles(c InstallConfig) []InstallFile {
	nn := sched.NewNodeNamer(c.Prefix, c.Nodes)
	names := make([]string, c.Nodes)
	for i := range names {
		names[i] = nn.Name(i)
	}
	hl := sched.Hostlist(names)
	envPath := filepath.Join(c.Dir, "icn-slurm-agent.env")
	return []InstallFile{
		{"job_submit.lua", 0o644, JobSubmitLua(c.Partition)},
		{"slurm.conf.icn", 0o644, fmt.Sprintf(`# icn places the jobs of partition %[1]s (icn slurm agent) on %[2]s.
# job_submit.lua must sit next to slurm.conf.
JobSubmitPlugins=lua
# The fabric's %[3]d nodes: %[4]s and the node id, zero-padded, in the
# fabric's order (X fastest), as icn serve --topo %[2]s numbers them. Add
# your nodes' hardware (CPUs=, RealMemory=; NodeAddr= where host names
# differ from these names).
NodeName=%[5]s State=UNKNOWN
# The partition must own its nodes: a node also in another partition
# would run that partition's jobs on nodes icn gives to its own (the
# agent refuses to start).
PartitionName=%[1]s Nodes=%[5]s Default=NO State=UP MaxTime=INFINITE
# Nodes drained by icn carry a reason starting with "icn:"; resume them
# with scontrol update NodeName=... State=RESUME after icn fabric repair-node.
`, c.Partition, c.Fabric, c.Nodes, c.Prefix, hl)},
		{"icn-slurm-agent.env", 0o600, fmt.Sprintf(`# icn slurm agent's environment (read by icn-slurm-agent.service)
ICN_SERVER=%s
ICN_TOKEN_FILE=%s
`, c.Server, c.TokenFile)},
		{"icn-slurm-agent.service", 0o644, fmt.Sprintf(`[Unit]
Description=icn slurm agent: places partition %[1]s through the fabric manager
After=network-online.target slurmctld.service

[Service]
EnvironmentFile=%[2]s
ExecStart=%[3]s slurm agent --partition %[1]s --nodes-prefix %[4]s --transit %[5]g --metrics-addr %[6]s
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
`, c.Partition, envPath, c.ICN, c.Prefix, c.Transit, c.MetricsAddr)},
	}
}
