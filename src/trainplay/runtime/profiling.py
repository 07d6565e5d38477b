"""``--profile-steps A:B``: PyTorch profiler (Kineto) traces of steps ``A`` to ``B - 1``.

Every training rank profiles the same steps with ``torch.profiler.profile`` (CPU activity, and
CUDA on a GPU) and writes one Chrome-trace file, ``rank<R>.pt.trace.json``, into the trace folder.
The trace holds what both ``trainplay diagnose TRACE_DIR`` (:mod:`trainplay.roofline.kineto`) and
Holistic Trace Analysis read:

- ``ProfilerStep#N`` spans numbered by the job's step (the profiler's step counter starts at
  ``A``), the same numbers on every rank;
- ``distributedInfo`` (rank, world size, backend), which Kineto writes itself;
- trainplay's block annotations: each of the stage's blocks' forward is a
  ``trainplay.block:<name>`` span (:func:`trainplay.roofline.annotate.annotate_blocks`), only
  while profiling;
- ``trainplay`` metadata: the rank's stage, replica, device and predicted times (what the journal's
  ``start.ranks`` holds for it), so the trace analyzer can judge ranks that do different work
  against their own prediction.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

from trainplay.roofline.annotate import annotate_blocks

__all__ = ["StepProfiler", "trace_name"]


def trace_name(rank: int) -> str:
    return f"rank{rank}.pt.trace.json"


class StepProfiler:
    """Profiles steps ``[first, end)`` of one rank; does nothing when ``steps`` is ``None``.

    Call :meth:`before` and :meth:`after` around every step and :meth:`close` at the end (it
    writes the trace of a run stopped while profiling).
    """

    def __init__(
        self,
        steps: tuple[int, int] | None,
        out_dir: Path | None,
        *,
        rank: int,
        module: nn.Module,
        block_names: tuple[str, ...],
        device: torch.device,
        metadata: dict[str, Any],
    ):
        self.steps = steps
        self.out_dir = out_dir
        self.rank = rank
        self.module = module
        self.blocks = tuple(n for n in block_names if _has(module, n))
        self.device = device
        self.metadata = metadata
        self._prof: profile | None = None
        self.written: Path | None = None
        """The trace, once written."""
        self._stack = ExitStack()

    def before(self, step: int) -> None:
        if self.steps is None:
            return
        first, end = self.steps
        warmup = 1 if first > 0 else 0  # one step warms the profiler up, untraced
        if step == first - warmup and self._prof is None:
            activities = [ProfilerActivity.CPU]
            if self.device.type == "cuda":
                activities.append(ProfilerActivity.CUDA)
            prof = profile(
                activities=activities,
                schedule=schedule(
                    skip_first=step, wait=0, warmup=warmup, active=end - first, repeat=1
                ),
                on_trace_ready=self._write,
            )
            prof.step_num = step  # ProfilerStep#N numbered by the job's step on every rank
            self._stack.enter_context(annotate_blocks(self.module, self.blocks))
            prof.start()
            self._prof = prof
        if step == first and self._prof is not None:  # recording now: metadata is kept
            self._prof.add_metadata_json("trainplay", json.dumps(self.metadata))

    def after(self, step: int) -> None:
        if self._prof is None:
            return
        self._prof.step()  # the last traced step's end writes the trace (_write)
        if self.steps is not None and step + 1 >= self.steps[1]:
            self.close()

    def close(self) -> Path | None:
        """Stop profiling (a run stopped while profiling writes what it traced); the trace's
        path, or ``None`` when none was written."""
        prof, self._prof = self._prof, None
        if prof is not None:
            prof.stop()
            self._stack.close()
        return self.written

    def _write(self, prof: profile) -> None:
        assert self.out_dir is not None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / trace_name(self.rank)
        prof.export_chrome_trace(str(path))
        self.written = path


def _has(module: nn.Module, name: str) -> bool:
    try:
        module.get_submodule(name)
    except AttributeError:
        return False
    return True
