package client

import (
	"encoding/json"
	"time"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// JobRequest asks for an allocation.
type JobRequest struct {
	Name    string `json:"name,omitempty"`
	Nodes   int    `json:"nodes"`
	Transit int    `json:"transit"`
	Algo    string `json:"algo,omitempty"`
	// RequestID, if given, makes the request safe to repeat: a request
	// with an id already answered gets the job it placed (as it is now,
	// with Replayed set) instead of a second placement, across restarts
	// and takeovers. At most MaxRequestID bytes.
	RequestID string `json:"request_id,omitempty"`
}

// MaxRequestID is the longest request id accepted.
const MaxRequestID = 128

// JobState is where a job is in its life.
type JobState string

const (
	JobRunning  JobState = "running"
	JobReleased JobState = "released"
)

// RouteState is how a running job is routed.
type RouteState string

const (
	// RouteOriginal: on the table it was placed with, or a fresh one
	// after a repair left no failure among its nodes.
	RouteOriginal RouteState = ""
	// RouteRerouted: a failure gave it a new table on the same nodes (a
	// detour); it stays so while a failure is left among its nodes.
	RouteRerouted RouteState = "rerouted"
	// RouteBroken: no table exists on its nodes (Problem and Unreachable
	// say why; migrate it).
	RouteBroken RouteState = "broken"
	// RouteMigrated: placed anew on other nodes.
	RouteMigrated RouteState = "migrated"
	// RoutePending: placed with its nodes, its verified table not built
	// yet: the table did not fit in what the placement budget left after
	// the node selection, or a failure's re-routing did not fit in the
	// failure budget, and the service builds and verifies it after the
	// answer (one job at a time, again after a restart). The job then
	// becomes RoutingNext (RouteOriginal after a placement, RouteMigrated
	// after a migration, RouteRerouted after a failure), with free nodes
	// added as transit where a failure meanwhile left a pair of its
	// active nodes without a legal route inside its nodes, or RouteBroken
	// if none serve. A failed transit node leaves the set. A job must not
	// start while its table is pending (the Slurm agent keeps it held).
	RoutePending RouteState = "pending"
)

// JobRecord is a job placed by the service.
type JobRecord struct {
	ID           int                `json:"id"`
	Name         string             `json:"name,omitempty"`
	State        JobState           `json:"state"`
	Nodes        int                `json:"nodes"`
	TransitLimit int                `json:"transit_limit"`
	Algo         string             `json:"algo"`
	Active       []string           `json:"active"`
	TransitNodes []string           `json:"transit"`
	Rules        string             `json:"rules"`
	Table        *routing.TableJSON `json:"table,omitempty"` // verified routing table, as icn route --json writes it
	Stats        TableStats         `json:"stats"`
	Affected     []string           `json:"affected_by,omitempty"` // failures that broke reachability, or whose re-routing of the job was deferred (RoutePending)
	Created      time.Time          `json:"created"`
	Released     *time.Time         `json:"released,omitempty"`
	Reachable    bool               `json:"reachable"`
	Routing      RouteState         `json:"routing,omitempty"`
	// RoutingNext is the routing state a job whose table is pending
	// takes once the table is verified ("": RouteOriginal).
	RoutingNext RouteState `json:"routing_next,omitempty"`
	Problem     string     `json:"problem,omitempty"`
	Unreachable *[2]string `json:"unreachable,omitempty"`
	// Selection says how the node set was chosen (absent in records
	// written before it was kept).
	Selection *Selection `json:"selection,omitempty"`
	// StoredRoutes, in memory only, are Table's routes encoded as the
	// store keeps them (routing.EncodeStoredRoutes) when Table holds no routes
	// of its own: the service keeps running jobs' tables so (a 2 048-node
	// job's 4.2 million routes take 30 MB encoded, 300 MB decoded). A
	// table with routes is the table whatever StoredRoutes holds.
	StoredRoutes []byte `json:"-"`
	// Replayed is set on the answer to a repeated request id: the job
	// was placed by the first request with that id (RequestID).
	Replayed bool `json:"replayed,omitempty"`
}

// Selection is how a job's node set was chosen: whether the selection
// examined and ranked everything or was cut by the placement budget,
// and what it was complete for (alloc.Result).
type Selection struct {
	Exhaustive bool `json:"exhaustive"`
	// Settled: the selection stopped once no placement left could beat
	// the set on criteria 1 and 2 (alloc.Result.Settled).
	Settled  bool    `json:"settled,omitempty"`
	Examined int     `json:"placements_examined"`
	Complete int     `json:"complete_criteria"`
	Cut      string  `json:"cut,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// RoutingName names the routing state of a job ("ok" for RouteOriginal).
func (j *JobRecord) RoutingName() string {
	if j.Routing == RouteOriginal {
		return "ok"
	}
	return string(j.Routing)
}

// TableStats are the figures of a job's routing table and whether its
// channel dependencies are free of cycles.
type TableStats struct {
	routing.Figures
	DeadlockFree bool `json:"deadlock_free"`
}

// GroupRecord is a multicast group and its tree.
type GroupRecord struct {
	ID          string      `json:"id"`
	State       string      `json:"state"`
	MemberCount int         `json:"member_count"`
	Members     []string    `json:"members"`
	Left        []string    `json:"left,omitempty"`
	Root        string      `json:"root,omitempty"`
	Edges       [][2]string `json:"edges,omitempty"`
	// Channels are the fabric's channel ids of Edges, in the same order:
	// they tell apart parallel links between the same two nodes when a
	// restart or a fabric change keeps the tree.
	Channels []int32   `json:"channels,omitempty"`
	Height   int       `json:"height"`
	Reason   string    `json:"reason,omitempty"`
	Seq      int       `json:"routed_seq,omitempty"` // order in which trees were computed
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	// JoinDeadline and LeaveDeadline are absolute: the group is destroyed
	// if its joins (leaves) are not all in by then. Restarts and fabric
	// changes replay the group against them, so they never move.
	JoinDeadline  *time.Time `json:"join_deadline,omitempty"`
	LeaveDeadline *time.Time `json:"leave_deadline,omitempty"`
	// Replayed is set on the answer to a repeated join request id.
	Replayed bool `json:"replayed,omitempty"`
}

// FabricView is the fabric as the API shows it.
type FabricView struct {
	Spec        string     `json:"spec"`
	Dims        []int      `json:"dims,omitempty"`
	Nodes       []NodeView `json:"nodes"`
	Links       []LinkView `json:"links"`
	FailedLinks []string   `json:"failed_links"`
	FailedNodes []string   `json:"failed_nodes"`
	Rules       string     `json:"rules"`
	// Jobs: the fabric takes jobs (a torus with routing rules); NoJobs
	// says why not.
	Jobs   bool   `json:"jobs"`
	NoJobs string `json:"no_jobs,omitempty"`
}

// FabricGrid is GET /api/fabric?compact=1 on a plain grid: a torus or
// mesh (one ring of step 1 per dimension, no end nodes) whose nodes and
// links follow from Dims and Wrap. Node v has the coordinates of v in
// mixed radix (X fastest) and is named by them ("3.0.12"); the links are
// numbered node by node and, within a node, dimension by dimension: from
// node v along dimension i to the next node in that dimension (none from
// a mesh dimension's last node), named "<v's name>+X" and so on. The
// answer leaves the node and link lists out and gives the job holding
// each node and the failed nodes' and links' ids; on any other fabric
// GET /api/fabric?compact=1 answers as GET /api/fabric.
type FabricGrid struct {
	Spec string `json:"spec"`
	Dims []int  `json:"dims"`
	// Wrap says per dimension whether it wraps around (false: a mesh
	// dimension).
	Wrap []bool `json:"wrap"`
	// Grid is always true (a FabricView has no such field).
	Grid bool `json:"grid"`
	// NodeJobs gives per node id the job holding it (0: none).
	NodeJobs      []int `json:"node_jobs"`
	FailedNodeIDs []int `json:"failed_node_ids"`
	// FailedLinkIDs are the links down: those failed and those of
	// failed nodes.
	FailedLinkIDs []int    `json:"failed_link_ids"`
	FailedLinks   []string `json:"failed_links"`
	FailedNodes   []string `json:"failed_nodes"`
	Rules         string   `json:"rules"`
	Jobs          bool     `json:"jobs"`
	NoJobs        string   `json:"no_jobs,omitempty"`
}

// NodeView is one node.
type NodeView struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Coord  []int  `json:"coord,omitempty"`
	Failed bool   `json:"failed,omitempty"`
	Job    int    `json:"job,omitempty"`
	// Level is a switched fabric's switch level (fat trees: 1 = leaf),
	// Group its group (dragonflies); both from the generator or the file.
	Level *int `json:"level,omitempty"`
	Group *int `json:"group,omitempty"`
}

// LinkView is one duplex link.
type LinkView struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	A      int    `json:"a"`
	B      int    `json:"b"`
	Dim    int    `json:"dim"`
	Failed bool   `json:"failed,omitempty"`
}

// MetricsView is the answer of GET /api/fabric/metrics: the topology
// metrics last computed, the fabric they were computed for, and whether
// they are the current fabric's. The metrics are computed in the
// background for every fabric version (a failure change makes a new one),
// so a read never waits for them more than metricsWait.
type MetricsView struct {
	// Metrics are the figures of fabric For (nil: none computed yet).
	*topology.Metrics
	// For names the fabric the figures were computed for (nil with them).
	For *MetricsFabric `json:"for"`
	// FabricVersion is the version of the fabric now: 0 at the start,
	// one more with every failure or repair since.
	FabricVersion uint64 `json:"fabric_version"`
	// Current reports that the figures are the current fabric's.
	Current bool `json:"current"`
	// Pending reports that the figures of the current fabric are being
	// computed; they replace these when done.
	Pending bool `json:"pending"`
}

// MetricsFabric names the fabric a MetricsView's figures are of.
type MetricsFabric struct {
	// Version is the fabric version they were computed for.
	Version     uint64   `json:"version"`
	FailedLinks []string `json:"failed_links"`
	FailedNodes []string `json:"failed_nodes"`
	// Seconds is how long the computation took.
	Seconds float64 `json:"seconds"`
}

// FailureChange asks to fail or repair one link or node.
type FailureChange struct {
	Link   string `json:"link,omitempty"`
	Node   string `json:"node,omitempty"`
	Repair bool   `json:"repair,omitempty"`
}

// JobEffect is what a failure change did to one running job.
type JobEffect struct {
	ID int `json:"id"`
	// Result is RouteRerouted (a new verified table on the same nodes;
	// after a repair, the job's original kind of table again once no
	// failure is left among its nodes: JobRecord.Routing says which),
	// RouteBroken (no table possible on its nodes: migrate it) or
	// RoutePending (its new table did not fit in the failure budget: the
	// job is committed without a table and the service builds and
	// verifies one after the answer, adding free nodes as transit where
	// its own have no legal route left, or breaks it; see
	// Config.FailureBudget).
	Result RouteState `json:"result"`
	// State is the job's routing state after the change, as
	// JobRecord.RoutingName names it: "ok" (a repair gave it back a
	// table of its original kind),
	// "rerouted", "broken", "pending" or "migrated" (a migrated job whose
	// table a repair re-balanced keeps that state).
	State       string     `json:"state"`
	Problem     string     `json:"problem,omitempty"`
	Unreachable *[2]string `json:"unreachable,omitempty"`
	// TransitAdded names the free nodes a rerouted job gained as transit
	// nodes because its own nodes had no legal route left (the seed's
	// remedy, M_t).
	TransitAdded []string `json:"transit_added,omitempty"`
	// TransitDropped names the failed node a rerouted job held as a
	// transit node: it left the job's set (no process of the job runs
	// there). A job left without a route by such a failure is broken and
	// keeps the node.
	TransitDropped []string `json:"transit_dropped,omitempty"`
}

// GroupEffect is what a failure change did to one multicast group: its
// tree was computed again (a new root, or the same root with other
// links) or the group could not keep its members (State "Destroying",
// Reason).
type GroupEffect struct {
	ID       string `json:"id"`
	OldRoot  string `json:"old_root,omitempty"`
	NewRoot  string `json:"new_root,omitempty"`
	OldState string `json:"old_state"`
	State    string `json:"state"`
	// Links is the number of links of the new tree (0 without one).
	Links  int    `json:"links"`
	Reason string `json:"reason,omitempty"`
}

// FailureResult reports the effect of a failure change.
type FailureResult struct {
	Change      FailureChange `json:"change"`
	FailedLinks []string      `json:"failed_links"`
	FailedNodes []string      `json:"failed_nodes"`
	// AffectedJobs lists every running job the change touched (a new
	// table, broken, or its table pending), by id; Jobs says what
	// happened to each.
	AffectedJobs []int `json:"affected_jobs"`
	// BrokenJobs lists those left without a working table (migrate
	// them).
	BrokenJobs []int       `json:"broken_jobs"`
	Jobs       []JobEffect `json:"jobs"`
	// Groups lists the multicast groups whose tree or state the change
	// moved.
	Groups []GroupEffect `json:"groups"`
	// Unicast is the unicast tables' status on the new fabric
	// (Config.Unicast).
	Unicast *UnicastStatus `json:"unicast,omitempty"`
}

// McastRequest is a join or leave. MemberCount travels with every join,
// as in the seed's HPC protocol; leaves may omit it.
type McastRequest struct {
	Group       string `json:"group"`
	Member      string `json:"member"`
	MemberCount int    `json:"member_count,omitempty"`
	// RequestID makes a join safe to repeat (see JobRequest.RequestID).
	RequestID string `json:"request_id,omitempty"`
}

// Event is one audit-log entry.
type Event struct {
	Seq     uint64          `json:"seq"`
	Time    time.Time       `json:"time"`
	Actor   string          `json:"actor"`
	Action  string          `json:"action"`
	Subject string          `json:"subject"`
	Detail  json.RawMessage `json:"detail,omitempty"`
	// Term is the leadership term of the instance that wrote the entry
	// (0 on a store of one instance); Instance names it.
	Term     int64  `json:"term,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// UnicastStatus reports the tables of the current fabric.
type UnicastStatus struct {
	Engine string `json:"engine"`
	LFTOut string `json:"lft_out"`
	// Seconds from the change to the dump replaced (route and write).
	Seconds float64   `json:"seconds"`
	Updated time.Time `json:"updated"`
	// Mode says how the tables were computed: "full", "incremental"
	// (only what the change affects; equal to a full computation) or
	// "repair" (only destinations that lost their routes; see Exact).
	Mode string `json:"mode,omitempty"`
	// Exact: the dump equals a full computation on the current fabric.
	// After a repair it is false while Rebalancing (a full computation
	// runs in the background and replaces the dump when it is done), or
	// until the next full computation with UnicastConfig.KeepRepairs.
	Exact       bool `json:"exact"`
	Rebalancing bool `json:"rebalancing,omitempty"`
	// Rerouted of Destinations LIDs were routed again; Changed LFT
	// entries differ from the previous dump.
	Rerouted     int     `json:"rerouted_destinations"`
	Destinations int     `json:"destinations"`
	Changed      int64   `json:"changed_entries"`
	RouteSeconds float64 `json:"route_seconds"`
	WriteSeconds float64 `json:"write_seconds"`
	DumpBytes    int64   `json:"dump_bytes"`
	// Written: the dump holds the tables of the current fabric.
	Written bool `json:"written"`
	// Error says why the tables of the current fabric are not written
	// (the previous dump is left in place).
	Error string `json:"error,omitempty"`
	// HookError is the failure of the hook's last run ("" if it
	// succeeded). The hook runs in the background after each dump is
	// written: HookPending says a dump was written that it has not
	// finished running for yet, HookRan when its last run ended (nil:
	// none yet).
	HookError   string     `json:"hook_error,omitempty"`
	HookPending bool       `json:"hook_pending,omitempty"`
	HookRan     *time.Time `json:"hook_ran,omitempty"`
	// Disconnected names the hosts no switch reaches any more.
	Disconnected []string `json:"disconnected_hosts,omitempty"`
	Reachable    bool     `json:"reachable"`
}

// Health is the answer of GET /healthz.
type Health struct {
	// Status is "ok" while the instance serves (reads at least).
	Status string `json:"status"`
	// Role is "leader" (it takes writes) or "standby" (reads; writes
	// are redirected to Leader).
	Role string `json:"role"`
	// Store is "bolt" or "etcd"; Instance names this instance and URL
	// is where its clients reach it.
	Store    string `json:"store"`
	Instance string `json:"instance,omitempty"`
	URL      string `json:"url,omitempty"`
	// Leader is the leader's address ("" when none is known); Term its
	// leadership term.
	Leader string `json:"leader,omitempty"`
	Term   int64  `json:"term,omitempty"`
	// Revision is the store revision the instance's state reflects;
	// Lag how many revisions it is behind the store (standbys).
	Revision int64 `json:"revision,omitempty"`
	Lag      int64 `json:"lag,omitempty"`
	// Stale: the store could not be reached lately; what the instance
	// answers may be behind. Error says why.
	Stale bool   `json:"stale,omitempty"`
	Error string `json:"error,omitempty"`
}

// VerifyResult is the answer of POST /api/jobs/{id}/verify.
type VerifyResult struct {
	ID      int    `json:"id"`
	OK      bool   `json:"ok"`
	Problem string `json:"problem"`
}

// ServiceStats are the counts the service's Prometheus metrics report.
type ServiceStats struct {
	Groups        int
	GroupsByState map[string]int
	MaxEFI        int
	FailedLinks   int
	FailedNodes   int
	JobsRunning   int
	JobsBroken    int
	JobsPending   int // running jobs whose table is pending
	NodesBusy     int
}
