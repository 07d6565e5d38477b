"""When a worker's checkpoints are written: in the step (synchronous) or beside the next steps.

``--checkpoint-async`` uses ``torch.distributed.checkpoint.async_save`` (as torchtitan's
``async_mode = "async"``): training waits only while the state is copied to memory, and the
write, its collectives, the manifest and the rename go on while the next steps train. The
rules that keep a checkpoint trustworthy stay as they are (DESIGN.md, "checkpoints"): a
checkpoint exists only once its manifest is sealed and its folder renamed, so a node lost during
the write leaves a ``.partial`` folder that a restore skips. What asynchrony changes:

- **One write in flight.** A new checkpoint waits for the one before it: staging copies all of
  the state, and a second copy in flight would double that memory.
- **Its own process group.** The write's collectives (DCP's plan and its end) run on a gloo group
  made for them, so they never interleave with the training group's all-reduces and sends.
- **Known when done.** A write that ended is finished (sealed) at the next step boundary where
  it is seen done, and journaled then; :meth:`Saver.wait` finishes it at once, which every
  planned stop and the job's end do before they say where the job stopped.

Synchronous saving (the default) is the same interface with nothing in flight.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from trainplay.runtime import checkpoint

__all__ = ["Saved", "Saver"]


@dataclass(frozen=True)
class Saved:
    """A checkpoint now complete: its folder, the seconds training waited for it (``stall_s``)
    and from its start to its end (``seconds``)."""

    step: int
    path: Path
    stall_s: float
    seconds: float


@dataclass
class _InFlight:
    info: checkpoint.CheckpointInfo
    written: Future
    began: float
    stall_s: float


class Saver:
    """Writes one worker's checkpoints into ``directory`` over ``group`` (its training ranks)."""

    def __init__(
        self,
        directory: Path,
        group: dist.ProcessGroup | None,
        *,
        asynchronous: bool,
        write_group: dist.ProcessGroup | None = None,
    ):
        """``write_group``: the ranks of ``group`` again, a gloo group made for the asynchronous
        writes' collectives."""
        self.directory, self.group, self.asynchronous = directory, group, asynchronous
        self._write_group = write_group
        self._in_flight: _InFlight | None = None

    def save(
        self, state: Mapping[str, torch.Tensor], info: checkpoint.CheckpointInfo
    ) -> list[Saved]:
        """Checkpoint ``info.step``; the checkpoints completed by this call (a synchronous save's
        own, or an asynchronous one's predecessor, waited for first)."""
        if not self.asynchronous:
            began = time.perf_counter()
            path = checkpoint.save(self.directory, state, info, process_group=self.group)
            seconds = time.perf_counter() - began
            return [Saved(info.step, path, seconds, seconds)]
        done = self.wait()
        began = time.perf_counter()
        written = checkpoint.save_async(
            self.directory, state, info, process_group=self._write_group or self.group
        )
        self._in_flight = _InFlight(info, written, began, time.perf_counter() - began)
        return done

    def poll(self) -> list[Saved]:
        """The checkpoint in flight, if its write has ended: finished now."""
        if self._in_flight is not None and self._in_flight.written.done():
            return self.wait()
        return []

    def wait(self) -> list[Saved]:
        """Wait for the checkpoint in flight and finish it."""
        if self._in_flight is None:
            return []
        flight, self._in_flight = self._in_flight, None
        path = checkpoint.end_async(
            self.directory, flight.written, flight.info,
            process_group=self._write_group or self.group,
        )  # fmt: skip
        return [Saved(flight.info.step, path, flight.stall_s, time.perf_counter() - flight.began)]

    @property
    def writing(self) -> int | None:
        """The step of the checkpoint in flight, if any."""
        return None if self._in_flight is None else self._in_flight.info.step
