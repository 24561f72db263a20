package slurmagent

import "fmt"

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
	return fmt.Sprintf(`-- icn: jobs of partition %[1]q get their nodes from icn (icn slurm agent).
-- A job of the partition is held (priority 0) until the agent has chosen
-- its nodes on the torus; the agent pins it to them (ReqNodeList, with an
-- admin comment only an administrator can set) and releases it.
local icn_partition = %[1]q
local waiting = %[2]q
local user_held = %[3]q
local placed_mark = %[4]q

local function split(list)
  local t = {}
  for p in string.gmatch(list or "", "[^,]+") do
    t[#t + 1] = p
  end
  return t
end

local function names_icn(list)
  for _, p in ipairs(split(list)) do
    if p == icn_partition then return true end
  end
  return false
end

local function starts(s, prefix)
  return s ~= nil and string.sub(s, 1, #prefix) == prefix
end

local function is_set(v)
  return v ~= nil and v ~= slurm.NO_VAL
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local part = job_desc.partition
  if part == nil then
    for _, p in pairs(part_list) do
      if p.flag_default == 1 then part = p.name end
    end
  end
  if not names_icn(part) then
    return slurm.SUCCESS
  end
  if #split(part) > 1 then
    slurm.log_user("icn: partition %%s gets its nodes from icn and cannot be listed with others (-p %%s): submit to %%s alone", icn_partition, part, icn_partition)
    return slurm.ERROR
  end
  if job_desc.req_nodes ~= nil and job_desc.req_nodes ~= "" then
    slurm.log_user("icn: jobs of partition %%s get their nodes from icn; --nodelist is not allowed", icn_partition)
    return slurm.ERROR
  end
  for _, p in pairs(part_list) do
    if p.name == icn_partition and is_set(job_desc.min_nodes) and job_desc.min_nodes > p.total_nodes then
      slurm.log_user("icn: partition %%s has %%d nodes; a job of %%d cannot run there", icn_partition, p.total_nodes, job_desc.min_nodes)
      return slurm.ERROR
    end
  end
  if job_desc.priority == 0 then
    job_desc.comment = user_held
  else
    job_desc.comment = waiting
  end
  job_desc.priority = 0
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  local moved_in = false
  if job_desc.partition ~= nil and names_icn(job_desc.partition) then
    if #split(job_desc.partition) > 1 then
      slurm.log_info("icn: job %%s: partition list %%s with %%s refused", tostring(job_rec.job_id), job_desc.partition, icn_partition)
      return slurm.ERROR
    end
    moved_in = job_rec.partition ~= icn_partition
  end
  if moved_in then
    -- A job moved into the partition waits for icn like a new one; a
    -- hold it had stays its user's.
    if job_rec.priority == 0 or job_desc.priority == 0 then
      job_desc.comment = user_held
    else
      job_desc.comment = waiting
    end
    job_desc.priority = 0
    return slurm.SUCCESS
  end
  if job_rec.partition ~= icn_partition then
    return slurm.SUCCESS
  end
  local placing = modify_uid == 0 and starts(job_desc.admin_comment, placed_mark)
  local placed = modify_uid == 0 and starts(job_rec.admin_comment, placed_mark)
  if job_desc.req_nodes ~= nil and not placing then
    slurm.log_info("icn: job %%s: nodes of partition %%s come from icn; ReqNodeList refused", tostring(job_rec.job_id), icn_partition)
    return slurm.ERROR
  end
  if not is_set(job_desc.priority) or placing or placed then
    return slurm.SUCCESS
  end
  if job_desc.priority == 0 then
    -- A hold by anyone but the agent (whose holds carry an icn: comment)
    -- is the user's: icn leaves the job alone until it is released.
    if not (modify_uid == 0 and starts(job_desc.comment, "icn:")) then
      job_desc.comment = user_held
    end
    return slurm.SUCCESS
  end
  if job_rec.priority == 0 then
    -- A release (or priority change) of a job icn has not placed: it
    -- lifts the user's hold only; the job stays held, for icn.
    job_desc.priority = slurm.NO_VAL
    if job_rec.comment == user_held or not starts(job_rec.comment, "icn:") then
      job_desc.comment = waiting
    end
  end
  return slurm.SUCCESS
end

slurm.log_info("icn job_submit.lua loaded for partition %%s", icn_partition)
return slurm.SUCCESS
`, partition, CommentWaiting, CommentUserHold, AdminCommentPlaced)
}
