"""What DistributedDataParallel adds to a training step beyond its all-reduce: ``ddp.step`` and
``ddp.tensor`` seconds, measured on a CPU worker group.

A synthetic network of ``n`` blocks (a 3x3 convolution of :data:`CHANNELS` channels without
bias, batch normalisation, ReLU; three parameter tensors and BatchNorm's buffers a block) trains
on a batch of two :data:`SIDE` x :data:`SIDE` maps, plainly and wrapped in
``DistributedDataParallel`` with its defaults (buffers broadcast at every forward, buckets,
gradients copied into them and back), the two steps back to back, 15 pairs. Each step is timed as
the job meets it: every rank starts after a barrier and the step lasts until its slowest rank
ends. Its gradients (under 1 MiB) fill DDP's first bucket: one all-reduce, priced by the
all-reduce curve just measured (``allreduce_s``) and taken off. What is left per step, the median
of the pairs' differences, is DDP's own work: the Python around each forward (the buffers'
broadcast, a collective of its own), the autograd hook and the reducer's bookkeeping per
parameter tensor, the copies of this small bucket, and the wait for the bucket's all-reduce
(a thread of gloo's and a rank's compute share its CPU). At :data:`BLOCKS` depths it is fitted
as ``step + tensor x parameter tensors`` (the line through the two medians). The two depths are
measured again, :data:`ROUNDS` times at least and at most, until the price of a replica of
:data:`REFERENCE_TENSORS` parameter tensors varies by less than ``CV_TARGET`` over the last three
rounds; each depth's median over the rounds is fitted, and that coefficient of variation is the
figures' spread.

Why: on this project's two-vCPU machine two one-thread DDP processes trained torchvision CNNs
about 15% slower than MD-Roofline priced them (held-out-24), while the same models' plain
one-thread steps, two at once, were priced 2-10% fast; the synthetic network showed 2 to 7 ms a
step beyond its all-reduce, growing with its parameter tensors (scratch runs of 2026-12-05, README
"Accuracy and speed"). On a GPU DDP's host work runs behind the kernels: not measured there,
priced 0.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from trainplay.hardware.measure.collectives import job_step_s
from trainplay.hardware.measure.stats import CV_TARGET, cv_of

__all__ = [
    "BLOCKS",
    "CHANNELS",
    "QUICK_ROUNDS",
    "REFERENCE_TENSORS",
    "ROUNDS",
    "SIDE",
    "fit_ddp",
    "measure_ddp",
]

BLOCKS = (20, 80)
"""Depths of the synthetic network: 60 and 240 parameter tensors."""
CHANNELS = 16
SIDE = 16
PAIRS = 15
ROUNDS = (3, 5)
"""Rounds of both depths: at least, at most."""
QUICK_ROUNDS = (3, 3)
"""With ``hw measure --quick`` (a first ``--cluster local:N`` measures so): three rounds, enough
for a spread, without waiting for one that on a shared two-vCPU machine never came under 5% (8-25%
after five rounds, three runs; README): 5.5-5.8 s against 10.2-10.6 s in three scratch runs of
two one-thread workers here (2026-12-05 13:27)."""
REFERENCE_TENSORS = 150
"""The replica whose price must settle: about a torchvision CNN's parameter tensors."""


def _network(blocks: int) -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(blocks):
        layers += [
            nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1, bias=False),
            nn.BatchNorm2d(CHANNELS),
            nn.ReLU(),
        ]
    return nn.Sequential(*layers)


def _pairs_s(blocks: int) -> tuple[int, int, list[float]]:
    """(parameter tensors, gradient bytes, DDP's step minus the plain one per pair) at
    ``blocks``."""
    torch.manual_seed(0)
    model = _network(blocks)
    x = torch.randn(2, CHANNELS, SIDE, SIDE)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    tensors = sum(1 for _ in model.parameters())
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    wrapped = DistributedDataParallel(model)

    def plain() -> None:
        optimizer.zero_grad(set_to_none=True)
        model(x).sum().backward()
        optimizer.step()

    def ddp() -> None:
        optimizer.zero_grad(set_to_none=True)
        wrapped(x).sum().backward()
        optimizer.step()

    for _ in range(3):  # DDP rebuilds its buckets after the first step
        plain()
        ddp()
    return tensors, grad_bytes, [job_step_s(ddp) - job_step_s(plain) for _ in range(PAIRS)]


def _extra_s(blocks: int, allreduce_s: Callable[[float], float]) -> tuple[int, float]:
    """(parameter tensors, DDP's seconds per step beyond its all-reduce) at ``blocks``."""
    tensors, grad_bytes, pairs = _pairs_s(blocks)
    gc.collect()  # the reducer goes before its process group does
    return tensors, statistics.median(pairs) - allreduce_s(grad_bytes)


def fit_ddp(points: list[tuple[int, float]]) -> dict[str, float]:
    """``ddp.step`` and ``ddp.tensor`` from (parameter tensors, seconds) at two depths: the line
    through them, neither below zero."""
    (n0, t0), (n1, t1) = points
    tensor = max((t1 - t0) / (n1 - n0), 0.0)
    return {"ddp.step": max(t0 - tensor * n0, 0.0), "ddp.tensor": tensor}


def measure_ddp(
    allreduce_s: Callable[[float], float], rounds_range: tuple[int, int] = ROUNDS
) -> tuple[dict[str, float], float]:
    """``ddp.step`` and ``ddp.tensor`` (see the module docstring) on this CPU group, and their
    spread; every rank runs it and gets the same figures (each step's time is its slowest
    rank's), so every rank stops after the same round. ``allreduce_s(bytes)``: an all-reduce's
    price; ``rounds_range``: the least and most rounds (:data:`ROUNDS`, :data:`QUICK_ROUNDS`)."""
    least, most = rounds_range
    rounds: list[list[tuple[int, float]]] = []
    prices: list[float] = []
    while True:
        points = [_extra_s(n, allreduce_s) for n in BLOCKS]
        rounds.append(points)
        fit = fit_ddp(points)
        prices.append(fit["ddp.step"] + REFERENCE_TENSORS * fit["ddp.tensor"])
        cv = cv_of(prices[-3:])
        if len(rounds) >= most or (len(rounds) >= least and cv < CV_TARGET):
            break
    medians = [
        (rounds[0][i][0], statistics.median(r[i][1] for r in rounds)) for i in range(len(BLOCKS))
    ]
    return fit_ddp(medians), cv
