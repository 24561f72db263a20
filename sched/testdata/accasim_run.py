"""Replay an SWF trace with accasim and print every job's wait.

Usage (accasim's source directory on PYTHONPATH):

    python3 accasim_run.py TRACE.swf NODES fifo|easy [ICN_SCHEDULE.jsonl] > waits.txt

The machine is NODES nodes of one core each and every SWF processor is one
core, so it is the same machine as icn's --topo flat:NODES with
--procs-per-node 1. The policy is accasim's FirstInFirstOut or
EASYBackfilling, both with its FirstFit allocator.

Output: one line per job, "JOB_ID WAIT" (seconds, start - submit), in
job-id order, then a line "# mean_wait W jobs N". Only the waits are
printed: accasim keeps the trace's submit times while icn shifts them so
the first job arrives at 0, and waits compare the two without a shift.

With ICN_SCHEDULE.jsonl (the --schedule-out file of icn sched simulate
for the same trace, machine and policy) a last line "# differ K of N"
counts the jobs whose wait differs between the two (a job that ran in
one and not the other counts too).
"""

import collections
import collections.abc
import json
import os
import sys
import tempfile

# accasim imports collections.Mapping, which Python 3.10 removed.
if not hasattr(collections, "Mapping"):
    collections.Mapping = collections.abc.Mapping

from accasim.base.additional_data import AdditionalData  # noqa: E402
from accasim.base.allocator_class import FirstFit  # noqa: E402
from accasim.base.scheduler_class import EASYBackfilling, FirstInFirstOut  # noqa: E402
from accasim.base.simulator_class import Simulator  # noqa: E402

# accasim tests "if not current_time" when it loads a job, so a submit
# time of 0 would restart its clock: every time is moved by this offset.
OFFSET = 1_000_000


class Waits(AdditionalData):
    """Collects the wait of every job as it completes."""

    def __init__(self, event_manager=None):
        AdditionalData.__init__(self, event_manager)
        self.waits = {}

    def exec_before_dispatching(self, job_dict, queued_jobs):
        pass

    def exec_after_dispatching(self, job_dict, to_dispatch_jobs, rejected_jobs):
        pass

    def exec_before_submission(self, *args, **kwargs):
        pass

    def exec_after_submission(self, *args, **kwargs):
        pass

    def exec_before_completion(self, *args, **kwargs):
        pass

    def exec_after_completion(self, removed_jobs):
        for job in removed_jobs:
            self.waits[int(job.id)] = job.start_time - job.queued_time

    def stop(self):
        pass


def main(argv):
    if len(argv) not in (4, 5) or argv[3] not in ("fifo", "easy"):
        sys.stderr.write("usage: accasim_run.py TRACE.swf NODES fifo|easy [ICN_SCHEDULE.jsonl]\n")
        return 2
    trace, nodes, policy = argv[1], int(argv[2]), argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "flat.config")
        with open(config, "w") as f:
            json.dump({
                "system_name": "flat",
                "start_time": OFFSET,
                "equivalence": {"processor": {"core": 1}},
                "groups": {"g0": {"core": 1}},
                "resources": {"g0": nodes},
            }, f)
        if policy == "fifo":
            dispatcher = FirstInFirstOut(FirstFit())
        else:
            dispatcher = EASYBackfilling(FirstFit())
        sim = Simulator(trace, config, dispatcher, additional_data=[Waits],
                        RESULTS_FOLDER_PATH=tmp, scheduling_output=False,
                        statistics_output=False, show_statistics=False,
                        LOG_LEVEL="ERROR")
        waits = sim.mapper.additional_data[0]
        sim.start_simulation()
    for job_id in sorted(waits.waits):
        print(job_id, waits.waits[job_id])
    n = len(waits.waits)
    mean = sum(waits.waits.values()) / n if n else 0.0
    print("# mean_wait %.6f jobs %d" % (mean, n))
    if len(argv) == 5:
        icn = icn_waits(argv[4])
        ids = set(icn) | set(waits.waits)
        differ = sum(1 for i in ids if icn.get(i) != waits.waits.get(i))
        print("# differ %d of %d" % (differ, len(ids)))
    return 0


def icn_waits(path):
    """Reads the waits of the jobs that ran from icn's --schedule-out."""
    out = {}
    with open(path) as f:
        for line in f:
            job = json.loads(line)
            if job.get("start", -1) >= 0 and not job.get("skipped"):
                out[int(job["id"])] = job["start"] - job["submit"]
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv))
