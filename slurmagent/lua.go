package slurmagent

import "fmt"

// JobSubmitLua is icn's job_submit/lua script for a partition: it holds
// every job of the partition (priority 0) until the agent pins it, and
// refuses --nodelist there.
func JobSubmitLua(partition string) string {
	return fmt.Sprintf(`-- icn: every job of partition %[1]q is held at submission (priority 0)
-- until icn slurm agent has chosen its nodes on the torus; the agent
-- pins the job to them (ReqNodeList) and releases it.
local icn_partition = %[1]q

function slurm_job_submit(job_desc, part_list, submit_uid)
  local part = job_desc.partition
  if part == nil then
    for _, p in pairs(part_list) do
      if p.flag_default == 1 then part = p.name end
    end
  end
  if part ~= icn_partition then
    return slurm.SUCCESS
  end
  if job_desc.req_nodes ~= nil and job_desc.req_nodes ~= "" then
    slurm.log_user("icn: jobs of partition %%s get their nodes from icn; --nodelist is not allowed", icn_partition)
    return slurm.ERROR
  end
  job_desc.priority = 0
  job_desc.comment = "icn: waiting for node selection"
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

slurm.log_info("icn job_submit.lua loaded for partition %%s", icn_partition)
return slurm.SUCCESS
`, partition)
}
