package slurmagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/sched"
	"github.com/icn-hpc/icn/topology"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures an Agent.
type Config struct {
	Partition string  // the Slurm partition on the torus
	Prefix    string  // Slurm node names: Prefix and the node id, zero-padded (icn slurm topology's names)
	Window    int     // pending jobs considered per round, in submit order (the seed's window; default 8)
	Transit   float64 // transit allowance per job as a fraction of its nodes, rounded up (sched.TransitLimit; 0: none)
	// Algo is the node-selection algorithm the fabric manager is asked
	// to use (alloc.Improved when empty; alloc.Baseline is seed 001's
	// base algorithm, whole rectangles).
	Algo alloc.Algo
	// AllowSharedNodes lets the partition share nodes with other
	// partitions. Without it the agent refuses to start (and to place)
	// while any node of the partition is in another one: a job of the
	// other partition would run on nodes icn gives to its own jobs.
	AllowSharedNodes bool
	Log              io.Writer
	// Registry, if set, receives the agent's metrics.
	Registry prometheus.Registerer
}

// TransitLimit is the transit allowance of a job of m nodes:
// sched.TransitLimit(c.Transit, m), as every command rounds it.
func (c Config) TransitLimit(m int) int { return sched.TransitLimit(c.Transit, m) }

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
	unplaced  prometheus.Counter

	// Memory of earlier rounds, for the metrics and the log only (the
	// placement itself reads both sides each round): the last outcome
	// counted for each job, the node count a job was refused with (not
	// asked again while it is the same), and the jobs reported running
	// without a placement.
	outcome map[int]string
	refused map[int]int
	warned  map[int]bool

	// The fabric as the window's reservation sees it (nil: no model of
	// it, and the head's wait blocks the window), the fabric manager's
	// last view of it, and the last reservation logged.
	model    *topology.Graph
	router   alloc.Router
	fabric   *client.FabricView
	reserved map[int]string
}

// sameNodes reports whether graph g numbers and names the nodes as the
// fabric manager's view does.
func sameNodes(g *topology.Graph, fv *client.FabricView) bool {
	if g.NumNodes() != len(fv.Nodes) {
		return false
	}
	for _, n := range fv.Nodes {
		if n.ID < 0 || n.ID >= g.NumNodes() || g.NodeName(n.ID) != n.Name {
			return false
		}
	}
	return true
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
	if !(cfg.Transit >= 0 && cfg.Transit <= 1) {
		return nil, fmt.Errorf("transit fraction %g outside 0..1", cfg.Transit)
	}
	if cfg.Algo == "" {
		cfg.Algo = alloc.Improved
	}
	if _, err := alloc.ParseAlgo(string(cfg.Algo)); err != nil {
		return nil, err
	}
	fv, err := m.Fabric(ctx)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, slurm: s, fm: m, byName: map[string]int{}, byCoord: map[string]int{},
		outcome: map[int]string{}, refused: map[int]int{}, warned: map[int]bool{}, reserved: map[int]string{}, fabric: fv}
	nn := sched.NewNodeNamer(cfg.Prefix, len(fv.Nodes))
	for _, n := range fv.Nodes {
		a.names = append(a.names, nn.Name(n.ID))
		a.coords = append(a.coords, n.Name)
		a.byName[nn.Name(n.ID)] = n.ID
		a.byCoord[n.Name] = n.ID
	}
	if err := a.checkOwnership(ctx); err != nil {
		return nil, err
	}
	if g, err := topology.Parse(fv.Spec); err == nil && sameNodes(g, fv) {
		if rt, err := alloc.NewAngaraRouter(g, fv.Rules); err == nil {
			a.model, a.router = g, rt
		}
	}
	if a.model == nil {
		a.logf("no model of fabric %s (rules %s): while the window's head waits, the jobs behind it wait too", fv.Spec, fv.Rules)
	}
	a.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icn_slurm_agent_decisions_total",
		Help: "Decisions on jobs, by outcome (placed, wait, refused): each job counts once per outcome it reaches, not once per round."}, []string{"outcome"})
	a.seconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "icn_slurm_agent_placement_seconds",
		Help: "Time of each placement asked of the fabric manager.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)})
	a.released = prometheus.NewCounter(prometheus.CounterOpts{Name: "icn_slurm_agent_released_total",
		Help: "Jobs whose nodes were freed in the fabric manager after Slurm ended them."})
	a.failures = prometheus.NewCounter(prometheus.CounterOpts{Name: "icn_slurm_agent_node_failures_total",
		Help: "Node failures carried between Slurm and the fabric manager."})
	a.unplaced = prometheus.NewCounter(prometheus.CounterOpts{Name: "icn_slurm_agent_unplaced_total",
		Help: "Jobs of the partition found pending (held again) or running without a placement in icn."})
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{a.decisions, a.seconds, a.released, a.failures, a.unplaced} {
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
	if err := a.checkOwnership(ctx); err != nil {
		return err
	}
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
	held, err := a.releaseEnded(ctx, placed, live)
	if err != nil {
		return err
	}
	considered := 0
	seen := map[int]bool{}
	now := time.Now()
	var resv *reservation // the window head's, once it waits
	for _, j := range jobs {
		seen[j.ID] = true
		r := held[j.ID]
		var err error
		switch {
		case j.State != "PENDING":
			if r == nil && j.State == "RUNNING" && !a.warned[j.ID] {
				a.warned[j.ID] = true
				a.unplaced.Inc()
				a.logf("job %d runs on %s without a placement in icn", j.ID, j.NodeList)
			}
		case isHeld(j.Reason) && userHeld(j):
			err = a.keepUserHold(ctx, j, r)
		case isHeld(j.Reason) && r != nil:
			// Placed, not yet pinned: its table was pending, or the
			// agent or slurmctld restarted. Pin it to the same nodes once
			// its table is verified.
			err = a.pinWhenVerified(ctx, j, r)
		case isHeld(j.Reason) && a.refused[j.ID] == j.Nodes && j.Nodes > 0:
			// Refused for good with this size: not asked again, and it
			// takes no place in the window.
		case isHeld(j.Reason) && considered == a.cfg.Window:
			err = a.hold(ctx, j, j.Comment)
		case isHeld(j.Reason):
			considered++
			if considered > 1 && resv != nil {
				// The head waits: a later job starts now only if it ends
				// by the head's reservation (sched.RuleWindow).
				if ok, why := resv.admits(j, now); !ok {
					err = a.hold(ctx, j, why)
					break
				}
			}
			var note func() string
			if considered == 1 {
				note = func() string {
					resv = a.reserve(j, held, live, now)
					return resv.String()
				}
			}
			err = a.place(ctx, j, note)
		case r == nil:
			// Pending, not held, and no placement: requeued after icn
			// released its nodes, or released around icn. Held again.
			a.unplaced.Inc()
			a.logf("job %d was pending (%s) without a placement in icn: held for icn", j.ID, j.Reason)
			err = a.hold(ctx, j, CommentWaiting)
		}
		if errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
			return err
		}
		if err != nil {
			// One job's failure (Slurm refusing an update of it, say)
			// does not hold up the others.
			a.logf("job %d: %v", j.ID, err)
		}
	}
	a.forget(seen)
	return nil
}

// releaseEnded frees the placements of jobs that are no longer in Slurm
// (ended, cancelled or failed) and returns the others by Slurm job id.
func (a *Agent) releaseEnded(ctx context.Context, placed []client.JobRecord, live map[int]Job) (map[int]*client.JobRecord, error) {
	held := map[int]*client.JobRecord{} // Slurm id → its placement
	for i := range placed {
		r := &placed[i]
		id, ok := slurmID(r.Name)
		if !ok {
			continue
		}
		if _, running := live[id]; !running {
			if err := a.fm.Release(ctx, r.ID); err != nil {
				return nil, err
			}
			a.released.Inc()
			a.logf("job %d ended: released its nodes (icn job %d)", id, r.ID)
			continue
		}
		held[id] = r
	}
	return held, nil
}

// forget drops what the agent kept of jobs no longer in the partition.
func (a *Agent) forget(seen map[int]bool) {
	for id := range a.outcome {
		if !seen[id] {
			delete(a.outcome, id)
			delete(a.refused, id)
			delete(a.warned, id)
			delete(a.reserved, id)
		}
	}
}

// decided counts a job's decision once per outcome it reaches.
func (a *Agent) decided(j Job, outcome string) {
	if a.outcome[j.ID] == outcome && outcome != "placed" {
		return
	}
	a.outcome[j.ID] = outcome
	a.decisions.WithLabelValues(outcome).Inc()
}

// hold keeps job j in icn's hold with a comment, asking Slurm only when
// the comment or the kind of hold differs.
func (a *Agent) hold(ctx context.Context, j Job, comment string) error {
	if !strings.HasPrefix(comment, "icn:") {
		comment = CommentWaiting
	}
	if j.Comment == comment && j.Reason == "JobHeldAdmin" {
		return nil
	}
	return a.slurm.Hold(ctx, j.ID, comment)
}

// keepUserHold leaves a job its user holds alone: shown as the user's
// hold, and with no nodes kept for it in icn.
func (a *Agent) keepUserHold(ctx context.Context, j Job, r *client.JobRecord) error {
	if r != nil {
		if err := a.fm.Release(ctx, r.ID); err != nil {
			return err
		}
		a.released.Inc()
		a.logf("job %d is held by its user: released its nodes (icn job %d)", j.ID, r.ID)
	}
	if j.Reason != "JobHeldUser" {
		return a.slurm.UserHold(ctx, j.ID)
	}
	return nil
}

// userHeld reports whether a held job is held by its user (the
// job_submit script's comment), not for icn.
func userHeld(j Job) bool {
	return j.Comment == CommentUserHold
}

// checkOwnership refuses a partition that shares nodes with another,
// unless the configuration allows it.
func (a *Agent) checkOwnership(ctx context.Context) error {
	if a.cfg.AllowSharedNodes {
		return nil
	}
	parts, err := a.slurm.NodePartitions(ctx)
	if err != nil {
		return err
	}
	var shared []string
	others := map[string]bool{}
	for _, n := range a.names {
		if !slices.Contains(parts[n], a.cfg.Partition) {
			continue
		}
		for _, p := range parts[n] {
			if p != a.cfg.Partition {
				others[p] = true
				if !slices.Contains(shared, n) {
					shared = append(shared, n)
				}
			}
		}
	}
	if len(shared) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(others))
	return fmt.Errorf("partition %s shares nodes %s with partition %s: icn must own its partition's nodes, or Slurm runs the other partitions' jobs on nodes icn gives to its own (take the nodes out of the other partitions, or pass --allow-shared-nodes if those partitions are never used while icn places)",
		a.cfg.Partition, sched.Hostlist(shared), strings.Join(names, ", "))
}

// isHeld reports whether a pending job is held (priority 0): for icn
// (the job_submit script's hold, then the agent's admin hold) or by its
// user.
func isHeld(reason string) bool {
	return reason == "JobHeldUser" || reason == "JobHeldAdmin"
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
//
// note, if set (the window's head), is asked when the job waits: it
// makes the head's reservation and says it in the comment.
func (a *Agent) place(ctx context.Context, j Job, note func() string) error {
	transit := a.cfg.TransitLimit(j.Nodes)
	start := time.Now()
	// The request id makes a placement whose answer was lost (a
	// takeover of the fabric manager) safe to ask again: the same job
	// comes back, not a second one. A job whose earlier placement was
	// released since (requeued by Slurm) is placed anew under a new id.
	req := client.JobRequest{Name: fmt.Sprintf("%s%d", jobPrefix, j.ID), Nodes: j.Nodes, Transit: transit,
		Algo: string(a.cfg.Algo), RequestID: fmt.Sprintf("slurm-%d", j.ID)}
	r, err := a.fm.Submit(ctx, req)
	if err == nil && r.Replayed {
		if now, jerr := a.fm.Job(ctx, r.ID); jerr == nil && now.State != client.JobRunning {
			req.RequestID = fmt.Sprintf("slurm-%d-%d", j.ID, time.Now().UnixNano())
			r, err = a.fm.Submit(ctx, req)
		}
	}
	took := time.Since(start)
	a.seconds.Observe(took.Seconds())
	// Not placed: the job keeps icn's hold, and its comment says why.
	keepHeld := func(outcome, verb string) error {
		if a.outcome[j.ID] != outcome {
			a.logf("job %d (%d nodes): %s after %s: %v", j.ID, j.Nodes, verb, ms(took), err)
		}
		a.decided(j, outcome)
		if outcome == "refused" {
			a.refused[j.ID] = j.Nodes
		}
		msg := "icn: " + verb + ": " + oneLine(err)
		if note != nil && outcome == "wait" {
			msg = "icn: " + verb + " (" + note() + "): " + oneLine(err)
		}
		return a.hold(ctx, j, msg)
	}
	switch {
	case errors.Is(err, ErrNoRoom):
		return keepHeld("wait", "waiting")
	case err != nil && ctx.Err() == nil && !errors.Is(err, ErrUnreachable):
		return keepHeld("refused", "refused")
	case err != nil:
		return err
	}
	a.decided(j, "placed")
	how := "exhaustive"
	if s := r.Selection; s != nil && !s.Exhaustive {
		how = "settled"
		if !s.Settled {
			how = "cut by the budget"
		}
	}
	a.logf("job %d: %d nodes + %d transit in %s (%s)", j.ID, len(r.Active), len(r.TransitNodes), ms(took), how)
	return a.pinWhenVerified(ctx, j, r)
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

// pinWhenVerified pins job j to the nodes of placement r once r's
// routing table is verified; while it is pending (built after the
// placement's answer) the job stays held, its comment saying so, and a
// later round pins it.
func (a *Agent) pinWhenVerified(ctx context.Context, j Job, r *client.JobRecord) error {
	if r.Routing == client.RoutePending {
		msg := fmt.Sprintf("icn: placed as icn job %d, waiting for its routing table", r.ID)
		if j.Comment != msg {
			a.logf("job %d: icn job %d's routing table is pending: held until it is verified", j.ID, r.ID)
		}
		return a.hold(ctx, j, msg)
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
	if aerr := a.hold(ctx, j, "icn: refused by Slurm: "+oneLine(err)); aerr != nil {
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
	admin := fmt.Sprintf("%s %d", AdminCommentPlaced, r.ID)
	if err := a.slurm.Pin(ctx, j.ID, hl, len(names), comment, admin); err != nil {
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
	a.fabric = fv
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

// reservation is the window head's: the time it is reserved to start
// by (zero: none can be made) and why none can.
type reservation struct {
	head int
	at   time.Time
	now  bool // at is now: the head has a placement on the model already
	none string
}

func (r *reservation) String() string {
	switch {
	case r.at.IsZero():
		return "head of the queue, no reservation: " + r.none
	case r.now:
		return "head of the queue, reserved to start now"
	}
	return "head of the queue, reserved to start by " + r.when()
}

func (r *reservation) when() string {
	if r.now {
		return "now"
	}
	return r.at.UTC().Format("15:04:05") + " UTC"
}

// admits reports whether job j may start now, behind the head: only if
// it ends, by its time limit, by the head's reservation. Otherwise it
// says why the job waits.
func (r *reservation) admits(j Job, now time.Time) (bool, string) {
	switch {
	case r.at.IsZero():
		return false, fmt.Sprintf("icn: waiting behind job %d, which has no reservation (%s)", r.head, r.none)
	case j.TimeLimit <= 0:
		return false, fmt.Sprintf("icn: waiting behind job %d (reserved to start by %s): a job without a time limit starts after it", r.head, r.when())
	case r.now || now.Add(j.TimeLimit).After(r.at):
		return false, fmt.Sprintf("icn: waiting behind job %d (reserved to start by %s): this job's time limit runs past it", r.head, r.when())
	}
	return true, ""
}

// reserve makes the reservation of head, the window's first job, which
// the fabric manager cannot place now: the earliest time it has a
// placement when the partition's running jobs end by their time limits
// (sched.Reserve on the agent's model of the fabric, with icn's
// placements and failed nodes).
func (a *Agent) reserve(head Job, held map[int]*client.JobRecord, live map[int]Job, now time.Time) *reservation {
	r := &reservation{head: head.ID}
	if a.model == nil {
		r.none = "no model of the fabric"
		return r
	}
	const failedJob = 1 << 29
	st, err := alloc.NewState(a.model)
	if err != nil {
		r.none = err.Error()
		return r
	}
	var failed []int
	for _, n := range a.fabric.Nodes {
		if n.Failed && n.ID < st.N() {
			failed = append(failed, n.ID)
		}
	}
	if err := st.Occupy(failedJob, failed); err != nil {
		r.none = err.Error()
		return r
	}
	var running []sched.RunningJob
	for id, rec := range held {
		var nodes []int
		for _, c := range append(append([]string(nil), rec.Active...), rec.TransitNodes...) {
			if v, ok := a.byCoord[c]; ok && st.Available(v) {
				nodes = append(nodes, v)
			}
		}
		if err := st.Occupy(rec.ID, nodes); err != nil {
			r.none = err.Error()
			return r
		}
		j := live[id]
		end := math.Inf(1)
		if j.TimeLimit > 0 {
			start := now
			if !j.Start.IsZero() {
				start = j.Start
			}
			end = float64(start.Add(j.TimeLimit).UnixMilli()) / 1000
		}
		running = append(running, sched.RunningJob{ID: rec.ID, Nodes: nodes, End: end})
	}
	slices.SortFunc(running, func(x, y sched.RunningJob) int { return x.ID - y.ID })
	m := sched.NewTorusMachine(st, a.router, alloc.Improved, a.cfg.TransitLimit, 1)
	at, err := sched.Reserve(m, sched.Job{ID: head.ID, Nodes: head.Nodes}, running, float64(now.UnixMilli())/1000)
	switch {
	case err != nil:
		r.none = err.Error()
	case math.IsInf(at, 1):
		r.none = "it fits only after jobs without a time limit end"
	default:
		r.at = time.Unix(int64(math.Ceil(at)), 0) // whole seconds, as the comment says it
		if !r.at.After(now) {
			r.at, r.now = now, true
		}
	}
	if a.reserved[head.ID] != r.String() {
		a.reserved[head.ID] = r.String()
		a.logf("job %d heads the window: %s", head.ID, r)
	}
	return r
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
