"""A rerun on the same devices is recognised: the node keeps its name (the host name), so the
devices keep their ids and the job keeps its plan, and says so.

One ``trainplay train`` node with no ``--node-name`` trains 10 steps; run again to 20 steps on
the same checkpoints it must restore step 10 with the same plan id and no re-plan, and end with
every sample once and the parameters of one process trained 20 steps.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.integration.elastic import dump, free_port
from tests.integration.processes import run_bounded
from tests.integration.test_train_elastic import check_parameters, check_trajectory, job_args
from trainplay.runtime.journal import read_journal
from trainplay.runtime.nodes import NAME_ENV


def train(tmp: Path, steps: int):
    env = {k: v for k, v in os.environ.items() if k != NAME_ENV}
    args = job_args(tmp, "1", free_port(), steps)
    return run_bounded([sys.executable, "-m", "trainplay", "train", *args], timeout_s=240, env=env)


def test_a_rerun_on_the_same_devices_keeps_its_plan(tmp_path):
    first = train(tmp_path, 10)
    assert first.returncode == 0, first.stderr
    again = train(tmp_path, 20)
    assert again.returncode == 0 and not again.left_behind, again.stderr
    journal = tmp_path / "journal.jsonl"
    events = read_journal(journal)
    starts = [e for e in events if e["event"] == "start"]
    assert len(starts) == 2 and starts[0]["plan_id"] == starts[1]["plan_id"], dump(journal)
    assert all(d.split("/")[0] == os.uname().nodename for d in starts[1]["devices"])
    assert not [e for e in events if e["event"] == "replan"], dump(journal)
    assert f"the same devices as before: kept plan {starts[0]['plan_id']}" in again.stderr
    assert "leave" not in again.stderr
    restore = [e for e in events if e["event"] == "restore"]
    assert [e["step"] for e in restore] == [10]
    check_trajectory(journal, 20)
    check_parameters(tmp_path, 20)
