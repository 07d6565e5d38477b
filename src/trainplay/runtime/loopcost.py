"""What ``trainplay train``'s own step loop costs beyond its stage's work: timed on a stand-in job,
so that the cost model prices it.

A rank's step is its stage's forward, backward and optimizer step, taking its batch and its
all-reduce (each timed: :mod:`~trainplay.runtime.timers`), and the runtime's own work around them:
the pipeline schedule's bookkeeping (splitting the batch, the loss on the last stage, handing the
gradient back), the loss's reduction, the timers' gather and the journal line. Measured on this
project's CPU (``benchmarks/train_plan_choice.py --tag 1207g``, 2026-12-07), that work took about
1.3 ms of a one-process ``mlp`` step of 10.4-13.2 ms: 0.63-1.26 ms in the schedule's ``wait``
and 0.47-0.58 ms outside every timed phase, where the profile priced 0.17 ms (the bare
``ScheduleGPipe``'s fixed costs, :func:`~trainplay.hardware.measure.overheads.measure_schedule`).

:func:`loop_s` reads it from a journal: per step and rank, the step's time less its timed
phases, the median over the steps after :data:`WARMUP`. ``trainplay hw measure`` runs the
stand-in (:func:`model`, a two-layer MLP of :data:`WIDTH` features, on ``--data synthetic`` of
that shape and :data:`CLASSES` classes, a step of :data:`BATCH` samples) through ``trainplay train`` with
one worker on the profile it just measured and records the result as the profile's
``runtime.step`` overhead, net of one micro-batch's schedule cost (which the cost model prices in
the stage's forward and backward): :func:`~trainplay.roofline.cost.loop_step_s`. The stand-in's
own loss (a cross-entropy of 8 samples over 4 classes, tens of microseconds) is in it too; a
user's loss is priced in its last block besides. A microbenchmark of the runtime, not of any model
trained with it: nothing of a user's job is timed.

**Cold.** The stand-in's step runs its loop's code and data from a hot cache; a stage whose step
streams more than the cache (:func:`~trainplay.roofline.cost.stale_weights`) evicts them between
the loop's parts, and each part then pays the misses. Measured here (2026-12-07, one worker, 8
samples a step, scratch runs interleaved): the 16-feature stand-in's loop took 0.44-0.57 ms in
seven runs of eight (0.76 in one), a 512-feature, 8-layer MLP's 1.12-1.42 ms, and the stand-in
with 64 MiB streamed at the start and end of its forward and at the start of its backward
1.00-1.03 ms; :func:`cold_model` (four times the last-level cache, 128 MiB here) 1.19 ms on the
profile cached at 16:13 and 1.09 in ``hw measure`` at 18:46.
So ``hw measure`` also times :func:`cold_model`, whose evictions sit inside the forward and backward
phases that :func:`loop_s` leaves out, and the cost model prices it for such a stage
(``runtime.step@stale``).
"""

from __future__ import annotations

import statistics
from typing import Any

import torch
from torch import nn

from trainplay.hardware.machine import last_level_cache_bytes

__all__ = ["BATCH", "CLASSES", "STEPS", "WARMUP", "WIDTH", "cold_model", "loop_s", "model"]

WIDTH, CLASSES = 16, 4
BATCH = 8
STEPS = 60
WARMUP = 10
"""Steps left out: the first steps set up the schedule's buffers and the allocator's blocks."""
PHASES = ("fwd_s", "bwd_s", "optimizer_s", "data_s", "allreduce_s")
"""The timed phases the cost model prices apart from the loop (``wait_s`` is the schedule's)."""


EVICT_MIN_BYTES = 64 * 2**20
"""The least a cold stand-in's eviction streams: four times the last-level cache sysfs reports
(a virtual machine may report its host's), and never less than this."""


def model() -> nn.Module:
    """The stand-in: WIDTH features -> CLASSES through one hidden layer."""
    return nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, CLASSES))


def cold_model() -> nn.Module:
    """The stand-in with the caches evicted where a large stage's own work evicts them: at the
    start and the end of its forward, and (the last eviction's backward) at the start of its
    backward."""
    return nn.Sequential(_Evict(), *model(), _Evict())


class _Streamed(torch.autograd.Function):
    """Passes its input on, streaming ``buffer`` (read and written once) forward and backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, buffer: torch.Tensor) -> torch.Tensor:
        buffer.add_(0.0)
        ctx.buffer = buffer
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        ctx.buffer.add_(0.0)
        return grad, None


class _Evict(nn.Module):
    """Evicts this process's data from the CPU's caches each time it runs, forward and back."""

    def __init__(self) -> None:
        super().__init__()
        nbytes = max(EVICT_MIN_BYTES, 4 * last_level_cache_bytes())
        self.register_buffer("buffer", torch.ones(nbytes // 4), persistent=False)

    def reset_parameters(self) -> None:  # trainplay builds stages on meta, then initialises them
        self.buffer.fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Streamed.apply(x, self.buffer)


def loop_s(events: list[dict[str, Any]]) -> tuple[float, float]:
    """(median, spread) of the loop's own seconds per step in a journal's ``events``: each step's
    ``step_s`` less its rank's timed phases, over every rank and the steps after
    :data:`WARMUP`; the spread is the interquartile range over the median."""
    start = next(e for e in events if e["event"] == "start")
    fields = start["timer_fields"]
    at = {f: fields.index(f) for f in PHASES}
    steps = [e for e in events if e["event"] == "step"][WARMUP:]
    if not steps:
        raise ValueError("the journal has no step after the warm-up")
    rest = [e["step_s"] - sum(row[i] for i in at.values()) for e in steps for row in e["timers_s"]]
    median = statistics.median(rest)
    if len(rest) < 4:
        return median, 0.0
    q = statistics.quantiles(rest, n=4)
    return median, (q[2] - q[0]) / median if median > 0 else 0.0
