"""A damaged newest checkpoint is reported in one line and skipped for the newest intact one.

One job of one ``trainplay train`` node trains 20 steps (checkpoints at 15 and 20 kept); then the
newest checkpoint is damaged in one of three ways (a shard cut short, garbage in ``.metadata`` of
the same size, the manifest gone) and the job is run on to 30 steps. It must resume from step 15,
say so in one line, exit 0, and end with every sample once and the parameters of one process
trained 30 steps. The node has no ``--node-name``: named after its host on both runs, it finds the
same devices on the rerun and keeps its plan, and says so.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

from tests.integration.elastic import dump, free_port
from tests.integration.processes import run_bounded
from tests.integration.test_train_elastic import EVERY, check_parameters, check_trajectory, job_args
from trainplay.runtime.journal import read_journal
from trainplay.runtime.nodes import NAME_ENV

FIRST, THEN = 20, 30


def train(tmp: Path, steps: int):
    env = {k: v for k, v in os.environ.items() if k != NAME_ENV}  # the default name: the host's
    args = job_args(tmp, "1", free_port(), steps)
    return run_bounded([sys.executable, "-m", "trainplay", "train", *args], timeout_s=240, env=env)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("first")
    done = train(tmp, FIRST)
    assert done.returncode == 0 and not done.left_behind, done.stderr
    assert sorted(p.name for p in (tmp / "ckpt").glob("step-*")) == [
        f"step-{FIRST - EVERY:08d}",
        f"step-{FIRST:08d}",
    ]
    return tmp


def truncate_shard(path: Path) -> None:
    shard = next(path.glob("*.distcp"))
    with shard.open("r+b") as file:
        file.truncate(shard.stat().st_size // 2)


def garbage_metadata(path: Path) -> None:
    size = (path / ".metadata").stat().st_size
    (path / ".metadata").write_bytes(b"\xff" * size)


def no_manifest(path: Path) -> None:
    (path / "manifest.json").unlink()


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (truncate_shard, "is damaged: __0_0.distcp is"),
        (garbage_metadata, "is damaged: .metadata differs from its checksum"),
        (no_manifest, "is damaged: it has no manifest.json"),
    ],
)
def test_resumes_from_the_previous_intact_checkpoint(first_run, tmp_path, damage, why):
    shutil.copytree(first_run / "ckpt", tmp_path / "ckpt")
    shutil.copy(first_run / "journal.jsonl", tmp_path / "journal.jsonl")
    newest = tmp_path / "ckpt" / f"step-{FIRST:08d}"
    damage(newest)
    done = train(tmp_path, THEN)
    assert done.returncode == 0 and not done.left_behind, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if "damaged" in line]
    assert len(said) == 1 and why in said[0] and str(newest) in said[0], done.stderr
    assert f"step-{FIRST - EVERY:08d}" in said[0]
    journal = tmp_path / "journal.jsonl"
    events = check_trajectory(journal, THEN)
    restore = [e for e in read_journal(journal) if e["event"] == "restore"]
    assert len(restore) == 1 and restore[0]["step"] == FIRST - EVERY, dump(journal)
    assert [s["checkpoint"] for s in restore[0]["skipped"]] == [str(newest)]
    assert events[-1]["event"] == "done"
    check_parameters(tmp_path, THEN)
    # the node is named after its host on both runs: the same devices, so the same plan
    starts = [e for e in events if e["event"] == "start"]
    assert len(starts) == 2 and starts[0]["plan_id"] == starts[1]["plan_id"], dump(journal)
    assert all(d.split("/")[0] == socket.gethostname() for d in starts[1]["devices"])
    assert not [e for e in events if e["event"] == "replan"], dump(journal)
    assert f"the same devices as before: kept plan {starts[0]['plan_id']}" in done.stderr
