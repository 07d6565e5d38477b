"""The agent's rendezvous: a round whose rank 0 died before publishing its address is retried.

A fake rendezvous handler stands in for the c10d one: its ``next_rendezvous`` raises torch's
``DistStoreError`` (what waiting for a dead rank 0's ``MASTER_ADDR`` ends with) a given number of
times, then a marker error that stands for "the next round went on".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torch.distributed import DistStoreError
from torch.distributed.elastic.agent.server.api import WorkerSpec
from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs

from trainplay.runtime import launcher


class NextRound(Exception):
    """The round after the failed ones was joined."""


class Handler:
    def __init__(self, failures: int):
        self.failures, self.calls = failures, 0

    def next_rendezvous(self) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise DistStoreError(
                "wait timeout after 60000ms, keys: /torch.rendezvous.t.0/MASTER_ADDR"
            )
        raise NextRound

    def get_backend(self) -> str:
        return "c10d"

    def get_run_id(self) -> str:
        return "t"


def agent(handler: Handler, logs: Path) -> launcher._Agent:
    """An agent whose log folder is under ``logs`` (without one it makes a ``torchelastic_*``
    folder in the temporary folder and leaves it there)."""
    spec = WorkerSpec(role="t", local_world_size=1, entrypoint="true", args=(),
                      rdzv_handler=handler, max_restarts=0)  # fmt: skip
    return launcher._Agent(spec=spec, logs_specs=DefaultLogsSpecs(log_dir=str(logs)))


@pytest.mark.parametrize("failures", [1, launcher.ROUND_RETRIES])
def test_a_round_without_its_rank_0_is_followed_by_the_next(failures, capsys, tmp_path):
    handler = Handler(failures)
    a = agent(handler, tmp_path)
    with pytest.raises(NextRound):
        a._rendezvous(a._worker_group)
    assert handler.calls == failures + 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == failures and "joining the next round" in lines[0]


def test_the_retries_are_bounded(tmp_path):
    handler = Handler(launcher.ROUND_RETRIES + 1)
    a = agent(handler, tmp_path)
    with pytest.raises(launcher.TrainingFailed, match="rendezvous rounds in a row"):
        a._rendezvous(a._worker_group)
    assert handler.calls == launcher.ROUND_RETRIES + 1
