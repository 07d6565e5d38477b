"""Ctrl-C on ``trainplay train``: the step in flight ends, a checkpoint is written, one line says
where, exit 130, nothing left running; the rerun continues from that step.

SIGINT goes to the launcher's process group, as a terminal sends it (torchrun starts the workers
in sessions of their own: only the agent gets it, and it passes it on to its workers).
"""

from __future__ import annotations

import os
import re
import signal
import time

from tests.integration.elastic import dump, free_port, nodes, wait_for
from tests.integration.test_train_elastic import (
    STEPS,
    check_parameters,
    check_trajectory,
    job_args,
)
from trainplay.runtime import checkpoint
from trainplay.runtime.journal import read_journal, trajectory


def test_ctrl_c_checkpoints_the_last_step_and_the_rerun_goes_on(tmp_path):
    journal, ckpt = tmp_path / "journal.jsonl", tmp_path / "ckpt"
    args = job_args(tmp_path, "1", free_port())
    with nodes(tmp_path, args) as job:
        job.start()
        seen = wait_for(journal, lambda e: e["event"] == "step" and e["step"] >= 12, 120)
        assert seen is not None, dump(journal) + job.log(0)
        job.snapshot()
        sent = time.monotonic()
        os.killpg(job.procs[0].pid, signal.SIGINT)
        code = job.wait(0, 30)
        took_s = time.monotonic() - sent
        assert code == 130, job.log(0)
        assert took_s < 10, took_s
        assert not job.left_behind(0)
        log = job.log(0)
        assert "Traceback" not in log, log
        said = re.findall(r"interrupted after step (\d+); checkpoint (step-\d+)", log)
        assert len(said) == 1 and log.count("interrupted") == 1, log
        stopped = int(said[0][0])
        assert said[0][1] == f"step-{stopped:08d}"
        assert trajectory(read_journal(journal))[-1]["step"] == stopped - 1
        found = checkpoint.latest(ckpt)
        assert found is not None and found[1].step == stopped, dump(journal)

        job.start(name="node0")  # the same node, run again
        assert job.wait(1, 240) == 0, job.log(1)
        assert not job.left_behind(1)
    events = check_trajectory(journal, STEPS)
    starts = [e for e in events if e["event"] == "start"]
    assert starts[-1]["step"] == stopped and starts[0]["plan_id"] == starts[-1]["plan_id"]
    steps = [e["step"] for e in events if e["event"] == "step"]
    assert len(steps) == len(set(steps)) == STEPS  # nothing redone
    check_parameters(tmp_path, STEPS)
