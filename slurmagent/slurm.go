package slurmagent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
	Comment            string
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
	// of them) and releases its hold.
	Pin(ctx context.Context, id int, hostlist string, count int, comment string) error
	// Annotate sets a held job's comment (why it still waits).
	Annotate(ctx context.Context, id int, comment string) error
	// Nodes lists every node and its state.
	Nodes(ctx context.Context) ([]Node, error)
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
	out, err := c.run(ctx, "squeue", "-h", "-p", partition, "-t", "PD,CF,R,CG,S", "-o", "%i|%T|%D|%r|%N|%n|%k")
	if err != nil {
		return nil, err
	}
	return parseSqueue(out)
}

// parseSqueue reads squeue -o "%i|%T|%D|%r|%N|%n|%k".
func parseSqueue(out string) ([]Job, error) {
	var jobs []Job
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "|", 7)
		if len(f) != 7 {
			return nil, fmt.Errorf("squeue: unexpected line %q", line)
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			// Array and heterogeneous job ids (123_4, 123+1) are not
			// placed by the agent.
			continue
		}
		n, _ := strconv.Atoi(f[2])
		j := Job{ID: id, State: f[1], Nodes: n, Reason: f[3], NodeList: f[4], ReqNodes: f[5], Comment: f[6]}
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

// Pin implements Slurm.
func (c CLI) Pin(ctx context.Context, id int, hostlist string, count int, comment string) error {
	if _, err := c.run(ctx, "scontrol", "update", "JobId="+strconv.Itoa(id), "ReqNodeList="+hostlist,
		"NumNodes="+strconv.Itoa(count)+"-"+strconv.Itoa(count), "Comment="+comment); err != nil {
		return err
	}
	_, err := c.run(ctx, "scontrol", "release", strconv.Itoa(id))
	return err
}

// Annotate implements Slurm.
func (c CLI) Annotate(ctx context.Context, id int, comment string) error {
	_, err := c.run(ctx, "scontrol", "update", "JobId="+strconv.Itoa(id), "Comment="+comment)
	return err
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
