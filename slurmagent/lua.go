package slurmagent

import (
	_ "embed"
	"fmt"
)

// Markers the job_submit script and the agent share. A job of icn's
// partition waits in one of two holds, both Slurm holds (priority 0):
//
//   - icn's own: the comment starts with CommentWaiting or another "icn:"
//     status; the agent keeps it as Slurm's admin hold (squeue: reason
//     JobHeldAdmin, which only an administrator — or the agent, once it
//     has placed the job — can release);
//   - the user's (sbatch -H, scontrol hold/uhold): the comment is
//     CommentUserHold, squeue shows JobHeldUser, and the agent leaves the
//     job alone until its user releases it; the release then hands the
//     job to icn (the script turns it into icn's hold) instead of
//     letting it run.
//
// AdminCommentPlaced starts the admin comment of a job the agent has
// pinned to icn's nodes; users cannot set admin comments, so the script
// lets a hold be released only on a job that carries it.
const (
	CommentWaiting     = "icn: waiting for node selection"
	CommentUserHold    = "icn: held by its user; icn places it once released (scontrol release)"
	AdminCommentPlaced = "icn: placed as icn job"
)

// JobSubmitLua is icn's job_submit/lua script for a partition. It makes
// icn the only way onto the partition's nodes:
//
//   - at submission a job of the partition is held (priority 0) for the
//     agent, with the user's own hold (sbatch -H) told apart in its
//     comment; a job naming the partition among others (-p torus,plain),
//     naming nodes (--nodelist) or larger than the partition is refused
//     (slurmctld would refuse every later update of it, so its comment
//     could never say why it waits);
//   - at modification (scontrol update, hold, release): a job moved into
//     the partition is held for the agent like a new one, a move to a
//     list of partitions with icn's among them is refused, nodes can be
//     named only with icn's placement mark (the agent's pin), and a
//     release of an unplaced job lifts only the user's hold: the job
//     stays held, now for icn, which places it.
//
// Partition and nodes may be changed only through these paths: Slurm
// calls slurm_job_modify for every scontrol update, hold and release of
// a job. Requeued jobs do not pass through the script; the agent holds a
// pending job of the partition that has no placement in icn.
func JobSubmitLua(partition string) string {
	return fmt.Sprintf(jobSubmitTemplate, partition, CommentWaiting, CommentUserHold, AdminCommentPlaced)
}

// jobSubmitTemplate is the job_submit.lua script, with fmt verbs for the
// partition and the agent's comment prefixes.
//
//go:embed job_submit.lua.tmpl
var jobSubmitTemplate string
