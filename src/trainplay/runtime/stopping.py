"""Planned stops lose nothing: on a signal a worker finishes the step in flight, checkpoints, exits.

torchrun's agent stops its workers with a signal and waits before it kills them
(``PContext.close``: SIGTERM when it restarts the group for a join, a leave or a scale-down;
the signal it got itself, SIGINT for Ctrl-C, when it shuts down). A worker that dies on it loses
every step since the last checkpoint; a worker with a :class:`StopRequest` notes the signal and
goes on to the end of the step in flight. Then the ranks that train agree on stopping with one
all-reduce of the highest signal number any of them got (4 bytes per step, over the group that
trains: the agents of different nodes signal their workers moments apart, and every rank must
stop after the same step to write one checkpoint together). They write the checkpoint of the
steps completed and exit with :data:`EXIT_STOPPED`; a rank that stopped on a peer's signal waits
up to :data:`OWN_SIGNAL_WAIT_S` for its own (its agent is on the way) so that no agent mistakes
the group for finished.
"""

from __future__ import annotations

import signal
import time
from types import FrameType

import torch
import torch.distributed as dist

__all__ = ["EXIT_STOPPED", "OWN_SIGNAL_WAIT_S", "StopRequest"]

EXIT_STOPPED = 3
"""A worker's exit status after a planned stop (not 0: the job is not finished)."""
OWN_SIGNAL_WAIT_S = 30.0
"""How long a rank stopped by a peer's signal waits for its own agent's."""
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequest:
    """The signal this process got, if any, and the group's agreement on stopping."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def install(self) -> None:
        for sig in SIGNALS:
            signal.signal(sig, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.signum = signum

    def agreed(self, group: dist.ProcessGroup | None) -> int:
        """The highest signal number any rank of ``group`` got (0: none); collective (a group of
        one rank asks no one: the cost model prices the agreement at 0 there)."""
        if dist.get_world_size(group) == 1:
            return self.signum or 0
        flag = torch.tensor([self.signum or 0], dtype=torch.int32)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
        return int(flag.item())

    def wait_own(self, timeout_s: float = OWN_SIGNAL_WAIT_S) -> bool:
        """Wait for this process's own signal; whether it came."""
        deadline = time.monotonic() + timeout_s
        while self.signum is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.signum is not None
