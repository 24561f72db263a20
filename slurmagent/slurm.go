package slurmagent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Job is a Slurm job of the partition as squeue shows it.
type Job struct {
	ID     int
	State  string // PENDING, RUNNING, COMPLETING, …
	Nodes  int    // nodes asked for (pending) or held (running)
	Reason string // why it is pending (JobHeldUser, JobHeldAdmin, …)
	// NodeList is the allocated nodes (running) and ReqNodes the nodes
	// asked for by name (hostlist expressions).
	NodeList, ReqNodes string
	// TimeLimit is the job's time limit (0: none); Start is when it
	// started (running jobs; zero otherwise).
	TimeLimit time.Duration
	Start     time.Time
	Comment   string
}

// Node is a Slurm node and its state (sinfo's short form: idle, alloc,
// down, drain, down*, …) and reason.
type Node struct {
	Name, State, Reason string
}

// Slurm is what the agent needs of Slurm.
type Slurm interface {
	// Jobs lists the jobs of a partition that are not finished.
	Jobs(ctx context.Context, partition string) ([]Job, error)
	// Pin makes a held job run on exactly the nodes of hostlist (count
	// of them): it sets them with the placement's admin comment (the
	// job_submit script accepts nodes and a release only with it) and
	// releases the hold.
	Pin(ctx context.Context, id int, hostlist string, count int, comment, adminComment string) error
	// Hold keeps a pending job in icn's hold (Slurm's admin hold:
	// priority 0, reason JobHeldAdmin) with a comment saying why it
	// waits.
	Hold(ctx context.Context, id int, comment string) error
	// UserHold shows a job its user holds as the user's hold (reason
	// JobHeldUser), whoever held it.
	UserHold(ctx context.Context, id int) error
	// Nodes lists every node and its state.
	Nodes(ctx context.Context) ([]Node, error)
	// NodePartitions lists the partitions of every node.
	NodePartitions(ctx context.Context) (map[string][]string, error)
	// Drain drains a node with a reason.
	Drain(ctx context.Context, node, reason string) error
}

// CLI is Slurm through its commands (squeue, scontrol, sinfo); Conf, if
// set, is passed as SLURM_CONF.
type CLI struct {
	Conf string
	Bin  string // directory of the commands ("" = PATH)
}

func (c CLI) run(ctx context.Context, name string, args ...string) (string, error) {
	if c.Bin != "" {
		name = c.Bin + "/" + name
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = os.Environ()
	if c.Conf != "" {
		cmd.Env = append(cmd.Env, "SLURM_CONF="+c.Conf)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		// One line: Slurm's commands print several for one failure.
		msg := strings.Join(strings.Split(strings.TrimSpace(string(out)), "\n"), "; ")
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, msg)
	}
	return string(out), nil
}

// Jobs implements Slurm.
func (c CLI) Jobs(ctx context.Context, partition string) ([]Job, error) {
	out, err := c.run(ctx, "squeue", "-h", "-p", partition, "-t", "PD,CF,R,CG,S", "-o", "%i|%T|%D|%r|%N|%n|%l|%S|%k")
	if err != nil {
		return nil, err
	}
	return parseSqueue(out)
}

// parseSqueue reads squeue -o "%i|%T|%D|%r|%N|%n|%l|%S|%k" (the comment
// last: it may hold the separator).
func parseSqueue(out string) ([]Job, error) {
	var jobs []Job
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "|", 9)
		if len(f) != 9 {
			return nil, fmt.Errorf("squeue: unexpected line %q", line)
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			// Array and heterogeneous job ids (123_4, 123+1) are not
			// placed by the agent.
			continue
		}
		n, _ := strconv.Atoi(f[2])
		j := Job{ID: id, State: f[1], Nodes: n, Reason: f[3], NodeList: f[4], ReqNodes: f[5], Comment: f[8]}
		j.TimeLimit = parseTimeLimit(f[6])
		if st, err := time.ParseInLocation("2006-01-02T15:04:05", f[7], time.Local); err == nil && j.State == "RUNNING" {
			j.Start = st
		}
		if j.ReqNodes == "(null)" {
			j.ReqNodes = ""
		}
		if j.Comment == "(null)" {
			j.Comment = ""
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// parseTimeLimit reads a Slurm time limit ([days-]hours:minutes:seconds,
// minutes:seconds, or minutes); 0 for UNLIMITED or anything else.
func parseTimeLimit(s string) time.Duration {
	var days int
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return 0
	}
	var secs int
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0
		}
		secs = secs*60 + n
	}
	switch {
	case len(parts) == 1:
		secs *= 60 // minutes alone
	case len(parts) == 2 && days > 0:
		secs *= 60 // days-hours:minutes
	}
	return time.Duration(days)*24*time.Hour + time.Duration(secs)*time.Second
}

// Pin implements Slurm.
func (c CLI) Pin(ctx context.Context, id int, hostlist string, count int, comment, adminComment string) error {
	if _, err := c.run(ctx, "scontrol", "update", "JobId="+strconv.Itoa(id), "ReqNodeList="+hostlist,
		"NumNodes="+strconv.Itoa(count)+"-"+strconv.Itoa(count), "Comment="+comment, "AdminComment="+adminComment); err != nil {
		return err
	}
	_, err := c.run(ctx, "scontrol", "release", strconv.Itoa(id))
	return err
}

// Hold implements Slurm: priority 0 set by an administrator (the agent
// runs as SlurmUser or root) is Slurm's admin hold.
func (c CLI) Hold(ctx context.Context, id int, comment string) error {
	_, err := c.run(ctx, "scontrol", "update", "JobId="+strconv.Itoa(id), "Priority=0", "Comment="+comment)
	return err
}

// UserHold implements Slurm.
func (c CLI) UserHold(ctx context.Context, id int) error {
	_, err := c.run(ctx, "scontrol", "uhold", strconv.Itoa(id))
	return err
}

// NodePartitions implements Slurm.
func (c CLI) NodePartitions(ctx context.Context) (map[string][]string, error) {
	out, err := c.run(ctx, "sinfo", "-h", "-N", "-o", "%N|%R")
	if err != nil {
		return nil, err
	}
	parts := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		node, part, ok := strings.Cut(line, "|")
		if !ok || slices.Contains(parts[node], part) {
			continue
		}
		parts[node] = append(parts[node], part)
	}
	return parts, nil
}

// Nodes implements Slurm.
func (c CLI) Nodes(ctx context.Context) ([]Node, error) {
	out, err := c.run(ctx, "sinfo", "-h", "-N", "-o", "%N|%t|%E")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var nodes []Node
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(line, "|", 3)
		if len(f) != 3 || seen[f[0]] {
			continue // a node in two partitions is listed twice
		}
		seen[f[0]] = true
		nodes = append(nodes, Node{Name: f[0], State: f[1], Reason: f[2]})
	}
	return nodes, nil
}

// Drain implements Slurm.
func (c CLI) Drain(ctx context.Context, node, reason string) error {
	_, err := c.run(ctx, "scontrol", "update", "NodeName="+node, "State=DRAIN", "Reason="+reason)
	return err
}
