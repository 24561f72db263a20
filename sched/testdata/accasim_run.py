"""Replay an SWF trace with accasim and print every job's wait.

Usage (accasim's source directory on PYTHONPATH):

    python3 accasim_run.py TRACE.swf NODES fifo|easy > waits.txt

The machine is NODES nodes of one core each and every SWF processor is one
core, so it is the same machine as icn's --topo flat:NODES with
--procs-per-node 1. The policy is accasim's FirstInFirstOut or
EASYBackfilling, both with its FirstFit allocator.

Output: one line per job, "JOB_ID WAIT" (seconds, start - submit), in
job-id order, then a line "# mean_wait W jobs N". Only the waits are
printed: accasim keeps the trace's submit times while icn shifts them so
the first job arrives at 0, and waits compare the two without a shift.
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
    if len(argv) != 4 or argv[3] not in ("fifo", "easy"):
        sys.stderr.write("usage: accasim_run.py TRACE.swf NODES fifo|easy\n")
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
