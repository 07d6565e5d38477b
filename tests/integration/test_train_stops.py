"""Errors no retry can mend stop the job at the first attempt: one line, exit 2, no restart.

A plan for other devices (two stages, one process here) and a checkpoint directory that turns
read-only mid-run (``chattr +i``: root writes through permission bits) are found by the workers;
the agent must not spend ``--max-restarts`` on them. (Nothing intact to restore is refused before
the agent starts: tests/unit/test_train_cli.py.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.elastic import dump, free_port, wait_for
from tests.integration.processes import run_bounded
from tests.integration.reference import fixed_plan
from tests.integration.test_train_elastic import BATCH, job_args
from trainplay.plan.api import block_costs

RESTART_LINE = "restarting the workers"


def train_command(tmp: Path, steps: int, *extra: str) -> list[str]:
    args = job_args(tmp, "1", free_port(), steps)
    return [sys.executable, "-m", "trainplay", "train", *args, *extra]


def test_a_plan_for_other_devices_stops_at_once(tmp_path):
    names = block_costs("tests.data.tiny_models:deep_mlp", input_shape=(12,)).names
    plan = fixed_plan(names, [(0, 1), (2, len(names) - 1)], [BATCH], 2, "gpipe")
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_dict()))
    began = time.monotonic()
    done = run_bounded(
        train_command(tmp_path, 10, "--plan", str(tmp_path / "plan.json")), timeout_s=120
    )
    assert done.returncode == 2 and not done.left_behind, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "error: the plan needs 2 workers, 1 are running" in lines[0]
    assert time.monotonic() - began < 60


def _immutable(path: Path, on: bool) -> bool:
    result = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    return result.returncode == 0


def test_a_checkpoint_directory_that_turns_read_only_stops_at_once(tmp_path):
    ckpt, journal = tmp_path / "ckpt", tmp_path / "journal.jsonl"
    command = train_command(tmp_path, 60, "--checkpoint-every", "30")
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    locked = False
    try:
        first = wait_for(journal, lambda e: e["event"] == "checkpoint", 120)
        assert first is not None and first["step"] == 30, dump(journal)
        locked = _immutable(ckpt, True)
        if not locked:
            pytest.skip("chattr +i is not available here")
        _, stderr = proc.communicate(timeout=120)
    finally:
        if locked:
            _immutable(ckpt, False)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr and RESTART_LINE not in stderr, stderr
    said = [line for line in stderr.splitlines() if "error:" in line]
    assert len(said) == 1 and f"cannot write a checkpoint in --checkpoint-dir {ckpt}" in said[0]
    assert sorted(p.name for p in ckpt.glob("step-*")) == ["step-00000030"]
