"""What a message between two pipeline stages costs as ``torch.distributed.pipelining`` sends it:
``schedule.message`` seconds, measured on a CPU worker group.

Pairs of ranks (0-1, 2-3, ...; a rank left without a partner measures nothing) run a two-stage
``ScheduleGPipe`` over a stage too small to matter (a :data:`WIDTH` x :data:`WIDTH` ``Linear`` on
:data:`ROWS` rows a micro-batch: a :data:`MESSAGE_BYTES`-byte activation, and its gradient back)
at :data:`MICROBATCHES` micro-batches. Each step is timed as the pair meets it (from a barrier of
the two to the slower one's end); a micro-batch count keeps the median of :data:`STEPS` steps.
Every micro-batch's activation crosses forward and its gradient back, each direction one message
after another, and the planner prices exactly that (:mod:`trainplay.plan.simulate`: a link per
direction, first come first served): when a message outlasts a stage's work on one micro-batch, a
step lasts ``c + 2 · l · M`` for ``M`` micro-batches, with ``l`` one message's time. Half the slope
of the least-squares line through (``M``, step) is ``l``; less the point-to-point curve's net time
of those bytes, it is the fixed cost of a message between stages (:func:`fit_message`), which
prices every such message in place of the ping-pong latency (:func:`trainplay.roofline.cost.
transfer_s`). Where a stage's work on one micro-batch (about 0.1 to 0.3 ms here) outlasts a
message, the slope is that work's, and the figure bounds the message's cost from above. The whole
measurement runs :data:`ROUNDS` times; the median of the rounds' figures is kept, their
coefficient of variation is the spread.

Why: the ping-pong of :mod:`~trainplay.hardware.measure.collectives` times blocking sends and
receives in a tight loop: its fitted latency was 0.08-0.17 ms one way on this project's two-vCPU
machine. The schedule posts its sends and receives asynchronously and waits for them between its
operators; there a two-stage schedule of a 16 x 16 ``Linear`` took 1.9, 3.8, 8.1 and 15.0 ms a
step at 1, 2, 4 and 8 micro-batches (scratch run, 2026-12-06 07:20), about 0.9 ms a message, and
``trainplay train``'s two-stage plans of ``benchmarks.train_models:mlp`` were priced 16-28% fast
(``benchmarks/results/train_plan_choice_avx2-1206.md``) while each rank's forward, backward and
optimizer were priced within 6% of its own timers (a scratch run, 07:16). On a GPU not
measured: NCCL's sends run on the device's streams, and the ping-pong latency prices them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import nn

from trainplay.hardware.measure.collectives import job_step_s, slowest_s
from trainplay.hardware.measure.stats import cv_of, least_squares

__all__ = [
    "MESSAGE_BYTES",
    "MICROBATCHES",
    "ROUNDS",
    "fit_message",
    "measure_stage_message",
    "pair_groups",
]

WIDTH, ROWS = 16, 8
MESSAGE_BYTES = WIDTH * ROWS * 4
"""One micro-batch's activation (fp32), and its gradient."""
MICROBATCHES = (1, 2, 4, 8)
STEPS = 15
ROUNDS = 3


def _squared(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return ((out - target) ** 2).sum()


def pair_groups(world: int) -> list[object]:
    """A process group per pair of ranks (0-1, 2-3, ...). Collective: every rank calls it."""
    return [dist.new_group([r, r + 1]) for r in range(0, world - 1, 2)]


def fit_message(steps_s: dict[int, float], net_s: float) -> float:
    """The fixed cost of one message between stages from a tiny two-stage pipeline's step time
    per micro-batch count (``steps_s``): half the least-squares slope, less ``net_s`` (the
    point-to-point curve's net time of the message's bytes); never below zero."""
    ms = sorted(steps_s)
    slope = least_squares([float(m) for m in ms], [steps_s[m] for m in ms])[1]
    return max(slope / 2 - net_s, 0.0)


def _steps_s(device: torch.device, group: object, stage: int) -> dict[int, float]:
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    out = {}
    for m in MICROBATCHES:
        torch.manual_seed(0)
        x = torch.randn(ROWS * m, WIDTH, device=device)
        y = torch.randn(ROWS * m, WIDTH, device=device)
        module = nn.Linear(WIDTH, WIDTH).to(device)
        optimizer = torch.optim.SGD(module.parameters(), lr=1e-4)
        schedule = ScheduleGPipe(
            PipelineStage(module, stage, 2, device, group=group), n_microbatches=m,
            loss_fn=_squared,
        )  # fmt: skip

        def step(schedule=schedule, optimizer=optimizer, x=x, y=y) -> None:
            if stage == 0:
                schedule.step(x)
            else:
                schedule.step(target=y)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        for _ in range(3):  # the first steps agree on shapes and set up buffers
            job_step_s(step, group)
        out[m] = statistics.median(job_step_s(step, group) for _ in range(STEPS))
    return out


def measure_stage_message(
    device: torch.device, group: object, stage: int, net_s: Callable[[float], float]
) -> tuple[float, float]:
    """``schedule.message`` seconds (see the module docstring) and its spread, measured by the
    two ranks of ``group`` (this one is ``stage`` 0 or 1); ``net_s(bytes)``: the point-to-point
    curve's net time of a message (each rank's own curve: the pair takes the larger). Both
    ranks get the same figures."""
    net = slowest_s(net_s(MESSAGE_BYTES), device, group)
    figures = [fit_message(_steps_s(device, group, stage), net) for _ in range(ROUNDS)]
    return statistics.median(figures), cv_of(figures)
