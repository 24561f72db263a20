package slurmagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/sched"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures an Agent.
type Config struct {
	Partition string  // the Slurm partition on the torus
	Prefix    string  // Slurm node names: Prefix and the node id, zero-padded (icn slurm topology's names)
	Window    int     // pending jobs considered per round, in submit order (the seed's window; default 8)
	Transit   float64 // transit allowance per job as a fraction of its nodes (0: none)
	Log       io.Writer
	// Registry, if set, receives the agent's metrics.
	Registry prometheus.Registerer
}

// Agent keeps Slurm's partition and the fabric manager in step. It holds
// no state of its own: each round reads both sides, so it survives its
// own restart and slurmctld's.
type Agent struct {
	cfg   Config
	slurm Slurm
	fm    Manager

	names   []string       // node id → Slurm name
	coords  []string       // node id → fabric manager name
	byName  map[string]int // Slurm name → node id
	byCoord map[string]int // fabric manager name → node id

	decisions *prometheus.CounterVec
	seconds   prometheus.Histogram
	released  prometheus.Counter
	failures  prometheus.Counter
}

// prefix of the fabric manager's names of jobs placed for Slurm.
const jobPrefix = "slurm-"

// New prepares an agent; it reads the fabric once to name the nodes.
func New(ctx context.Context, cfg Config, s Slurm, m Manager) (*Agent, error) {
	if cfg.Window <= 0 {
		cfg.Window = 8
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "nid"
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Transit < 0 || cfg.Transit > 1 {
		return nil, fmt.Errorf("transit fraction %g outside 0..1", cfg.Transit)
	}
	fv, err := m.Fabric(ctx)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, slurm: s, fm: m, byName: map[string]int{}, byCoord: map[string]int{}}
	nn := sched.NewNodeNamer(cfg.Prefix, len(fv.Nodes))
	for _, n := range fv.Nodes {
		a.names = append(a.names, nn.Name(n.ID))
		a.coords = append(a.coords, n.Name)
		a.byName[nn.Name(n.ID)] = n.ID
		a.byCoord[n.Name] = n.ID
	}
	a.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icn_slurm_agent_decisions_total",
		Help: "Placements asked of the fabric manager, by outcome (placed, wait, refused)."}, []string{"outcome"})
	a.seconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "icn_slurm_agent_placement_seconds",
		Help: "Time of each placement asked of the fabric manager.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)})
	a.released = prometheus.NewCounter(prometheus.CounterOpts{Name: "icn_slurm_agent_released_total",
		Help: "Jobs whose nodes were freed in the fabric manager after Slurm ended them."})
	a.failures = prometheus.NewCounter(prometheus.CounterOpts{Name: "icn_slurm_agent_node_failures_total",
		Help: "Node failures carried between Slurm and the fabric manager."})
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{a.decisions, a.seconds, a.released, a.failures} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

func (a *Agent) logf(format string, args ...any) {
	fmt.Fprintf(a.cfg.Log, "%s icn-slurm-agent: %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// Run calls Round every interval until ctx ends; errors are logged and
// the next round tries again.
func (a *Agent) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := a.Round(ctx); err != nil && ctx.Err() == nil {
			a.logf("round: %v", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Round brings both sides in step once: node failures, then jobs that
// ended, then held jobs (pinned if the fabric manager already placed
// them and their routing table is verified, else placed within the
// window). A job is pinned, and so released to run, only once its
// table is verified: one placed with a pending table stays held.
func (a *Agent) Round(ctx context.Context) error {
	if err := a.syncNodes(ctx); err != nil {
		return err
	}
	jobs, err := a.slurm.Jobs(ctx, a.cfg.Partition)
	if err != nil {
		return err
	}
	// Submit order (squeue lists held jobs, all of priority 0, in no
	// useful order).
	slices.SortFunc(jobs, func(x, y Job) int { return x.ID - y.ID })
	placed, err := a.fm.Jobs(ctx)
	if err != nil {
		return err
	}
	live := map[int]Job{}
	for _, j := range jobs {
		live[j.ID] = j
	}
	held := map[int]*client.JobRecord{} // Slurm id → its placement
	for i := range placed {
		r := &placed[i]
		id, ok := slurmID(r.Name)
		if !ok {
			continue
		}
		if _, running := live[id]; !running {
			// Ended, cancelled or failed in Slurm: free its nodes.
			if err := a.fm.Release(ctx, r.ID); err != nil {
				return err
			}
			a.released.Inc()
			a.logf("job %d ended: released its nodes (icn job %d)", id, r.ID)
			continue
		}
		held[id] = r
	}
	considered := 0
	for _, j := range jobs {
		if j.State != "PENDING" || !isHeld(j.Reason) {
			continue
		}
		if r, ok := held[j.ID]; ok {
			// Placed, not yet pinned: its table was pending, or the
			// agent or slurmctld restarted. Pin it to the same nodes once
			// its table is verified.
			if err := a.pinWhenVerified(ctx, j, r); err != nil {
				return err
			}
			continue
		}
		if considered == a.cfg.Window {
			continue
		}
		considered++
		if err := a.place(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

// isHeld reports whether a pending job waits for the agent (held by the
// job_submit script: priority 0).
func isHeld(reason string) bool {
	return reason == "JobHeldUser" || reason == "JobHeldAdmin" || reason == "held"
}

func slurmID(name string) (int, bool) {
	if !strings.HasPrefix(name, jobPrefix) {
		return 0, false
	}
	id, err := strconv.Atoi(strings.TrimPrefix(name, jobPrefix))
	return id, err == nil
}

// place asks the fabric manager for a job's nodes and pins the job to
// them; a job the fabric cannot take now waits, one it can never take
// says why in its comment.
func (a *Agent) place(ctx context.Context, j Job) error {
	transit := int(math.Floor(a.cfg.Transit * float64(j.Nodes)))
	start := time.Now()
	// The request id makes a placement whose answer was lost (a
	// takeover of the fabric manager) safe to ask again: the same job
	// comes back, not a second one. A job whose earlier placement was
	// released since (requeued by Slurm) is placed anew under a new id.
	req := client.JobRequest{Name: fmt.Sprintf("%s%d", jobPrefix, j.ID), Nodes: j.Nodes, Transit: transit,
		RequestID: fmt.Sprintf("slurm-%d", j.ID)}
	r, err := a.fm.Submit(ctx, req)
	if err == nil && r.Replayed {
		if now, jerr := a.fm.Job(ctx, r.ID); jerr == nil && now.State != client.JobRunning {
			req.RequestID = fmt.Sprintf("slurm-%d-%d", j.ID, time.Now().UnixNano())
			r, err = a.fm.Submit(ctx, req)
		}
	}
	a.seconds.Observe(time.Since(start).Seconds())
	// Not placed: the job keeps its hold, and its comment says why
	// (written once per reason).
	keepHeld := func(outcome, verb string) error {
		a.decisions.WithLabelValues(outcome).Inc()
		msg := "icn: " + verb + ": " + oneLine(err)
		if j.Comment == msg {
			return nil
		}
		a.logf("job %d (%d nodes): %s: %v", j.ID, j.Nodes, verb, err)
		return a.slurm.Annotate(ctx, j.ID, msg)
	}
	switch {
	case errors.Is(err, ErrNoRoom):
		return keepHeld("wait", "waiting")
	case err != nil && ctx.Err() == nil && !errors.Is(err, ErrUnreachable):
		return keepHeld("refused", "refused")
	case err != nil:
		return err
	}
	a.decisions.WithLabelValues("placed").Inc()
	how := "exhaustive"
	if s := r.Selection; s != nil && !s.Exhaustive {
		how = "settled"
		if !s.Settled {
			how = "cut by the budget"
		}
	}
	a.logf("job %d: %d nodes + %d transit in %.2f s (%s)", j.ID, len(r.Active), len(r.TransitNodes), time.Since(start).Seconds(), how)
	return a.pinWhenVerified(ctx, j, r)
}

// pinWhenVerified pins job j to the nodes of placement r once r's
// routing table is verified; while it is pending (built after the
// placement's answer) the job stays held, its comment saying so, and a
// later round pins it.
func (a *Agent) pinWhenVerified(ctx context.Context, j Job, r *client.JobRecord) error {
	if r.Routing == client.RoutePending {
		msg := fmt.Sprintf("icn: placed as icn job %d, waiting for its routing table", r.ID)
		if j.Comment == msg {
			return nil
		}
		a.logf("job %d: icn job %d's routing table is pending: held until it is verified", j.ID, r.ID)
		return a.slurm.Annotate(ctx, j.ID, msg)
	}
	if err := a.pin(ctx, j, r); err != nil {
		a.unpinnable(ctx, j, r, err)
	}
	return nil
}

// unpinnable handles a placement Slurm would not take: the nodes are
// freed in the fabric manager (nothing stays held for a job that cannot
// run on them) and the job's comment says why; it stays held.
func (a *Agent) unpinnable(ctx context.Context, j Job, r *client.JobRecord, err error) {
	a.logf("job %d: Slurm refused its nodes: %v; released them in icn", j.ID, err)
	if rerr := a.fm.Release(ctx, r.ID); rerr != nil {
		a.logf("job %d: releasing icn job %d: %v", j.ID, r.ID, rerr)
	}
	if aerr := a.slurm.Annotate(ctx, j.ID, "icn: refused by Slurm: "+oneLine(err)); aerr != nil {
		a.logf("job %d: %v", j.ID, aerr)
	}
}

// pin makes Slurm run job j on the nodes of placement r.
func (a *Agent) pin(ctx context.Context, j Job, r *client.JobRecord) error {
	var names []string
	for _, c := range append(append([]string(nil), r.Active...), r.TransitNodes...) {
		id, ok := a.byCoord[c]
		if !ok {
			return fmt.Errorf("job %d: node %q of the placement is not in the fabric", j.ID, c)
		}
		names = append(names, a.names[id])
	}
	hl := sched.Hostlist(names)
	comment := fmt.Sprintf("icn: job %d, %d active + %d transit", r.ID, len(r.Active), len(r.TransitNodes))
	if err := a.slurm.Pin(ctx, j.ID, hl, len(names), comment); err != nil {
		return err
	}
	a.logf("job %d pinned to %s", j.ID, hl)
	return nil
}

// syncNodes carries failures both ways: a node Slurm has down or
// drained (not by the agent) fails in the fabric manager; a node failed
// in the fabric manager is drained in Slurm with the reason.
func (a *Agent) syncNodes(ctx context.Context) error {
	nodes, err := a.slurm.Nodes(ctx)
	if err != nil {
		return err
	}
	fv, err := a.fm.Fabric(ctx)
	if err != nil {
		return err
	}
	failed := map[int]bool{}
	for _, n := range fv.Nodes {
		if n.Failed {
			failed[n.ID] = true
		}
	}
	for _, n := range nodes {
		id, ok := a.byName[n.Name]
		if !ok {
			continue
		}
		st := strings.TrimRight(n.State, "*~#!%$@^-")
		down := strings.HasPrefix(st, "down") || strings.HasPrefix(st, "drain") || strings.HasPrefix(st, "drng") || strings.HasPrefix(st, "fail")
		switch {
		case down && !failed[id] && !strings.HasPrefix(n.Reason, "icn:"):
			if err := a.fm.FailNode(ctx, a.coords[id]); err != nil {
				return err
			}
			a.failures.Inc()
			a.logf("node %s (%s) is %s in Slurm (%s): failed in icn", n.Name, a.coords[id], n.State, n.Reason)
		case !down && failed[id]:
			if err := a.slurm.Drain(ctx, n.Name, "icn: failed node "+a.coords[id]); err != nil {
				return err
			}
			a.failures.Inc()
			a.logf("node %s (%s) failed in icn: drained in Slurm", n.Name, a.coords[id])
		}
	}
	return nil
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
