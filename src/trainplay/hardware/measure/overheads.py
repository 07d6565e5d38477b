"""Fixed costs: what an operator call costs beyond its kernel, and what an optimizer step costs.

- ``call``: a bare aten call on a one-element tensor, outside autograd (the dispatcher alone; the
  sweeps' times include it, and :func:`~trainplay.hardware.measure.sweeps.curves_of` takes it off).
- ``fwd``: one operator of a chain of :data:`CHAIN` multiplications on a small tensor that requires
  grad, per operator: the dispatcher plus autograd recording the node.
- ``bwd``: the same chain's backward, per operator: the autograd engine running a node and
  dispatching its backward operator.
- ``view``: a chain of views (``view`` and ``t``), forward and backward, per operator.
- The optimizer (SGD with momentum, Adam, as ``torch.optim`` runs them on this device), with the
  ``zero_grad(set_to_none=True)`` a training loop pairs it with (freeing the gradients, which the
  next backward allocates again): steps over tensors of each size from 256 B to 64 MiB (16 of
  them, 4 of the largest); the smallest size gives the fixed cost per tensor, the others the rate
  (parameter bytes updated per second, net of that cost).

- ``schedule.step`` and ``schedule.microbatch``: what ``torch.distributed.pipelining``'s
  ``ScheduleGPipe`` adds to a training step beyond the operators it runs (splitting the batch into
  micro-batches, the stage's bookkeeping per micro-batch and action, the loss per micro-batch,
  merging): a one-stage schedule (a one-rank group per worker) over a small ``Linear`` against the
  same operators run eagerly with gradient accumulation, at 1 to 16 micro-batches; the
  difference fitted as ``step + microbatch x M`` (least squares). The training runtime runs every
  plan, one stage included, through that schedule. Measured on a CPU only: on a GPU it is host
  time behind the device's kernels.

A GPU's numbers are host time per call (the device runs asynchronously), so ``fwd``/``bwd`` there
are the host's dispatch and launch cost, and small kernels hide behind it (see
:mod:`trainplay.roofline.cost`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from trainplay.hardware.measure.quiet import Quiet, quiet_sample
from trainplay.hardware.measure.stats import least_squares
from trainplay.hardware.profile import Curve

__all__ = [
    "CHAIN",
    "OPT_TENSORS",
    "SCHEDULE_MICROBATCHES",
    "measure_optimizer",
    "measure_overheads",
    "measure_schedule",
]

CHAIN = 200
OPT_TENSORS = 16
SCHEDULE_MICROBATCHES = (1, 2, 4, 8, 16)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_s(
    fn: Callable[[], object], device: torch.device, quiet: Quiet, samples: int = 7
) -> float:
    fn()
    _sync(device)

    def once() -> float:
        start = time.perf_counter()
        fn()
        _sync(device)
        return time.perf_counter() - start

    return statistics.median(quiet_sample(once, quiet, min_s=0.0)[0] for _ in range(samples))


def measure_overheads(device: torch.device) -> dict[str, float]:
    """Seconds per call: ``call``, ``fwd``, ``bwd``, ``view`` (see the module docstring)."""
    quiet = Quiet()
    one = torch.ones(1, device=device)
    x = torch.ones(8, device=device, requires_grad=True)

    def bare() -> None:
        for _ in range(CHAIN):
            torch.mul(one, 1.0001)

    def forward() -> torch.Tensor:
        y = x
        for _ in range(CHAIN):
            y = y * 1.0001
        return y

    def views() -> torch.Tensor:
        y = x.view(2, 4)
        for _ in range(CHAIN // 2):
            y = y.t().t().view(2, 4)
        return y

    call = _median_s(bare, device, quiet) / CHAIN
    fwd = _median_s(forward, device, quiet)
    both = _median_s(lambda: forward().sum().backward(), device, quiet)
    view_fwd = _median_s(views, device, quiet)
    view_both = _median_s(lambda: views().sum().backward(), device, quiet)
    n_views = 1 + 3 * (CHAIN // 2)
    return {
        "call": call,
        "fwd": fwd / CHAIN,
        "bwd": max(both - fwd, 0.0) / CHAIN,
        "view": view_both / (2 * n_views),
        "view_fwd": view_fwd / n_views,
    }


def _optimizer(name: str, params: list[torch.Tensor]) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    return torch.optim.Adam(params, lr=1e-3)


def measure_optimizer(
    device: torch.device, name: str, dtype: torch.dtype = torch.float32
) -> tuple[Curve, float]:
    """(rate curve by parameter bytes of one tensor, fixed seconds per tensor) of ``name``."""
    quiet = Quiet()
    element = torch.empty((), dtype=dtype).element_size()
    sizes = [256 * 4**k for k in range(8)]  # 256 B .. 4 MiB per tensor
    per_tensor: dict[int, float] = {}
    for nbytes in sizes:
        params = [
            torch.nn.Parameter(torch.randn(nbytes // element, device=device, dtype=dtype))
            for _ in range(OPT_TENSORS)
        ]
        for p in params:
            p.grad = torch.randn_like(p)
        opt = _optimizer(name, params)
        opt.step()  # state created
        per_tensor[nbytes] = _median_s(opt.step, device, quiet) / OPT_TENSORS
        del params, opt
    fixed = per_tensor[sizes[0]]
    rates = [s / max(per_tensor[s] - fixed, 0.1 * per_tensor[s]) for s in sizes[1:]]
    return Curve(sizes=tuple(float(s) for s in sizes[1:]), rates=tuple(rates)), fixed


def _squared(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return ((out - target) ** 2).sum()


def measure_schedule(device: torch.device, group: object) -> dict[str, float]:
    """``schedule.step`` and ``schedule.microbatch`` seconds (see the module docstring), with
    ``group`` a process group of this rank alone. Each micro-batch count's extra time is the
    median of paired differences, the schedule's step and the eager one timed back to back, so a
    machine whose speed drifts between them does not hide a fraction of a millisecond."""
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    quiet = Quiet()
    width, per_micro = 16, 8
    extra = []
    for m in SCHEDULE_MICROBATCHES:
        x = torch.randn(per_micro * m, width, device=device)
        y = torch.randn(per_micro * m, width, device=device)
        module = torch.nn.Linear(width, width).to(device)
        optimizer = torch.optim.SGD(module.parameters(), lr=1e-3)
        stage = PipelineStage(module, 0, 1, device, group=group)
        schedule = ScheduleGPipe(stage, n_microbatches=m, loss_fn=_squared)

        def piped(schedule=schedule, optimizer=optimizer, x=x, y=y) -> None:
            schedule.step(x, target=y)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        def eager(module=module, optimizer=optimizer, x=x, y=y, m=m) -> None:
            for xs, ys in zip(x.chunk(m), y.chunk(m), strict=True):
                _squared(module(xs), ys).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        for _ in range(3):  # the schedule's first steps set up its buffers and shapes
            piped()
            eager()
        pairs = [
            _median_s(piped, device, quiet, 3) - _median_s(eager, device, quiet, 3)
            for _ in range(11)
        ]
        extra.append(statistics.median(pairs))
    ms = [float(m) for m in SCHEDULE_MICROBATCHES]
    slope = max(least_squares(ms, extra)[1], 0.0)
    step = statistics.fmean(extra) - slope * statistics.fmean(ms)
    return {"schedule.step": max(step, 0.0), "schedule.microbatch": slope}
