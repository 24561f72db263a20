package fm

import (
	"github.com/icn-hpc/icn/alloc"
	"time"

	"github.com/icn-hpc/icn/routing"
)

// FabricRecord is the persistent description of the fabric: how to build
// it and which links and nodes are currently failed (by name).
type FabricRecord struct {
	Spec        string    `json:"spec"`
	FailedLinks []string  `json:"failed_links"`
	FailedNodes []string  `json:"failed_nodes"`
	Updated     time.Time `json:"updated"`
}

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
	Affected     []string           `json:"affected_by,omitempty"` // failures that broke reachability
	Created      time.Time          `json:"created"`
	Released     *time.Time         `json:"released,omitempty"`
	Reachable    bool               `json:"reachable"`
	Routing      RouteState         `json:"routing,omitempty"`
	Problem      string             `json:"problem,omitempty"`
	Unreachable  *[2]string         `json:"unreachable,omitempty"`
	// Selection says how the node set was chosen (absent in records
	// written before it was kept).
	Selection *Selection `json:"selection,omitempty"`
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

func selectionOf(res *alloc.Result) *Selection {
	return &Selection{Exhaustive: res.Exhaustive, Settled: res.Settled, Examined: res.Examined, Complete: res.Complete, Cut: res.Cut, Seconds: res.Seconds}
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
	routing.Stats
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
	gone          bool       // forgotten by the protocol manager: delete
}
