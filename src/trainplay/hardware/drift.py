"""How fast this machine runs now against when its profile was measured.

A shared virtual machine's speed drifts: on the project's 2-vCPU VM a one-thread ``torch.mm`` of
1024x1024 matrices ran at 144 GFLOP/s at 11:31 and 83 at 12:08 the same day, and a resnet18 training
step (batch 32, 32x32 images) took 289 ms, then 355. A profile measured half an hour earlier then
prices every operator too fast, whatever the cost model does with it.

So ``trainplay hw measure`` times a **reference** in the launching process once its workers are done
(:func:`reference_rates`; one thread, well under a second): a matrix product that fits in the
caches (the core's compute) and an out-of-place add of 64 MiB (memory). Each use of ``local``
times it again and says where the machine runs more than :data:`TOLERANCE` faster or slower than
it did. With ``TRAINPLAY_DRIFT=price`` the measurement is then priced at the ratio
(:func:`drifted`): the compute classes, APF and the fixed cost per operator (the core's speed) by
the compute ratio, every other class, APM and the optimizer by the memory ratio. Collectives keep
their measured curves. This is calibration from a microbenchmark, nothing else: the reference is
no part of any workload.

It is not the default: on the held-out-6 set (30 cases, 2026-12-02) each case priced at the
reference timed just before it gave an iteration-time MAPE of 14.9%, the same cases priced as
measured 11.2%. Between cases minutes apart the reference's memory rate swung from 0.58 to 1.27
times the profile's, and its compute rate from 0.94 to 1.36 times, where the workloads did not:
one thread timed for under a second says less about a two-thread training step than the
profile's own sweeps do.
"""

from __future__ import annotations

import statistics
import time
from functools import cache

import torch

from trainplay.hardware.spec import Peaks

__all__ = ["TOLERANCE", "drift_of", "drifted", "reference_now", "reference_rates"]

TOLERANCE = 0.05
"""A machine within 5% of its reference is priced as measured."""

_SIDE = 384
"""Matrix side of the compute reference: 1.7 MiB of operands, inside a core's caches."""
_STREAM_BYTES = 64 * 2**20
"""Bytes each tensor of the memory reference holds: past the last-level cache."""


def _median_rate(work: float, fn, repeats: int, samples: int) -> float:
    fn()
    rates = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        rates.append(work * repeats / (time.perf_counter() - start))
    return statistics.median(rates)


def reference_rates(samples: int = 5) -> dict[str, float]:
    """``compute`` (FLOP/s of a cached matrix product) and ``memory`` (bytes/s of a 64 MiB add),
    on one thread, medians of ``samples`` samples."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a = torch.randn(_SIDE, _SIDE)
        b = torch.randn(_SIDE, _SIDE)
        out = torch.empty(_SIDE, _SIDE)
        compute = _median_rate(2 * _SIDE**3, lambda: torch.mm(a, b, out=out), 8, samples)
        x = torch.ones(_STREAM_BYTES // 4)
        y = torch.empty_like(x)
        memory = _median_rate(2 * _STREAM_BYTES, lambda: torch.add(x, 1, out=y), 2, samples)
    finally:
        torch.set_num_threads(threads)
    return {"compute": compute, "memory": memory}


@cache
def reference_now() -> dict[str, float]:
    """:func:`reference_rates`, once per process: every layout of one use is priced alike."""
    return reference_rates()


def drift_of(then: dict[str, float], now: dict[str, float]) -> dict[str, float]:
    """How many times faster (> 1) or slower (< 1) the machine runs now, per reference; 1 where a
    reference is missing or the change is within :data:`TOLERANCE`."""
    out = {}
    for key in ("compute", "memory"):
        ratio = now[key] / then[key] if then.get(key) and now.get(key) else 1.0
        out[key] = 1.0 if abs(ratio - 1) <= TOLERANCE else ratio
    return out


def drifted(peaks: Peaks, factors: dict[str, float]) -> Peaks:
    """``peaks`` priced at the machine's speed now: ``factors`` from :func:`drift_of`."""
    compute, memory = factors["compute"], factors["memory"]
    note = f"x{compute:.3g} compute, x{memory:.3g} memory (reference now)"
    return peaks.scaled(compute, memory, note=note)
