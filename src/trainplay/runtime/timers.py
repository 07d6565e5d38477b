"""Cheap, always-on timers of one rank's step: where its time went, phase by phase.

Around the real ``torch.distributed.pipelining`` schedule (nothing of it is re-implemented or
patched), one rank's step is split into:

- ``fwd_s``: its stage's forward, every micro-batch: from the stage module's forward pre-hook to
  its forward hook (``nn.Module`` hooks on the module ``PipelineStage`` runs, so a recomputing
  stage's forward is its checkpointed call and the recomputation counts as backward);
- ``bwd_s``: its stage's backward, every micro-batch: from the moment the gradient of the stage's
  output arrives (a hook on the output tensor, registered in the forward hook) to the end of that
  backward call (a callback queued on the autograd engine, as FSDP and DDP's reducer do);
- ``wait_s``: the rest of the schedule's step: waiting on the pipeline's sends and receives
  (``batch_isend_irecv`` and their waits), the loss function on the last stage, the schedule's
  own bookkeeping. It is what the schedule does *not* spend computing, so a stage that waits
  for a slow neighbour shows it here;
- ``allreduce_s``: the gradient all-reduces over the stage's replicas and the tied parameters'
  groups (:func:`~trainplay.runtime.pipeline.sum_gradients`), waiting for peers included;
- ``optimizer_s``: the optimizer step and ``zero_grad`` (with fp16, the overflow check too);
- ``step_s``: the whole step on this rank, from taking the batch to the loss;
- ``data_s``: taking its batch (reading or making the samples, in the step loop), inside
  ``step_s``. Last, so journals written before it still read by their ``timer_fields``.

On a CPU every mark is ``time.perf_counter()``; on a GPU it is a CUDA event recorded on the
current stream, so the times are the device's, and they are read once per step, after the step
(one synchronisation the step's loss already needs). A mark costs ~1 µs on the CPU; the
benchmark ``benchmarks/train_overhead.py`` measures the cost on a whole step.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

__all__ = ["FIELDS", "StepTimers"]

FIELDS = ("fwd_s", "bwd_s", "wait_s", "allreduce_s", "optimizer_s", "step_s", "data_s")
"""The timers of one step, in the order the journal stores them."""


class _Clock:
    """Marks on the host clock (CPU) or on the device's stream (CUDA events)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def mark(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def seconds(self, a: Any, b: Any) -> float:
        if not self.cuda:
            return b - a
        b.synchronize()
        return a.elapsed_time(b) * 1e-3


class StepTimers:
    """Times the phases of each step of the rank that runs ``module`` (see the module docstring).

    Use::

        timers = StepTimers(module, device)     # hooks the stage module once
        timers.begin()
        with timers.phase("data_s"): batch = data.batch(...)
        with timers.phase("schedule"): schedule.step(...)
        with timers.phase("allreduce_s"): sum_gradients(...)
        with timers.phase("optimizer_s"): optimizer.step()
        times = timers.end()                    # {"fwd_s": ..., ..., "step_s": ...}
    """

    def __init__(self, module: nn.Module, device: torch.device):
        self._clock = _Clock(device)
        self._spans: list[tuple[str, Any, Any]] = []
        self._open: dict[str, Any] = {}
        self._step_begin: Any = None
        module.register_forward_pre_hook(self._forward_begins)
        module.register_forward_hook(self._forward_ends)

    def _forward_begins(self, _module: nn.Module, _inputs: Any) -> None:
        self._open["fwd_s"] = self._clock.mark()

    def _forward_ends(self, _module: nn.Module, _inputs: Any, output: Any) -> None:
        begun = self._open.pop("fwd_s", None)
        if begun is not None:
            self._spans.append(("fwd_s", begun, self._clock.mark()))
        tensor = _first_with_grad(output)
        if tensor is not None:
            tensor.register_hook(self._backward_begins)

    def _backward_begins(self, grad: torch.Tensor) -> torch.Tensor:
        begun = self._clock.mark()

        def ends() -> None:
            self._spans.append(("bwd_s", begun, self._clock.mark()))

        torch.autograd.Variable._execution_engine.queue_callback(ends)
        return grad

    def begin(self) -> None:
        """A step begins: forget what the last one left (a step that raised, say)."""
        self._spans.clear()
        self._open.clear()
        self._step_begin = self._clock.mark()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as ``name``: ``schedule``, ``allreduce_s``, ``optimizer_s`` or
        ``data_s``."""
        begun = self._clock.mark()
        try:
            yield
        finally:
            self._spans.append((name, begun, self._clock.mark()))

    def end(self) -> dict[str, float]:
        """The step's times in seconds, by :data:`FIELDS`."""
        ended = self._clock.mark()
        out = dict.fromkeys(FIELDS, 0.0)
        schedule = 0.0
        for name, a, b in self._spans:
            seconds = self._clock.seconds(a, b)
            if name == "schedule":
                schedule += seconds
            else:
                out[name] += seconds
        out["wait_s"] = max(0.0, schedule - out["fwd_s"] - out["bwd_s"])
        out["step_s"] = self._clock.seconds(self._step_begin, ended)
        self._spans.clear()
        return out


def _first_with_grad(output: Any) -> torch.Tensor | None:
    """The first tensor of a stage's output that autograd will send a gradient to."""
    if isinstance(output, torch.Tensor):
        return output if output.requires_grad else None
    if isinstance(output, (tuple, list)):
        for item in output:
            if (found := _first_with_grad(item)) is not None:
                return found
    if isinstance(output, dict):
        return _first_with_grad(list(output.values()))
    return None
