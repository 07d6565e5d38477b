"""Where this machine's CPUs sit now: whether two compute threads share a last-level cache.

A virtual machine's vCPUs are host threads that the hypervisor may move. On the project's 2-vCPU
VM (an AMD EPYC with AVX-512; the guest sees 1 MiB of L2 per vCPU and one 32 MiB L3) the two vCPUs
switch, every few seconds to minutes, between two placements that behave as two machines
(2026-12-05, 120 samples over two minutes, each three mnasnet1_0 training steps at batch 8 on
88x88 images with two threads, then the probes below; a scratch script, nothing of it priced):

- **shared** (40 samples): the step took a median 73.6 ms (71.5-78.5); a 128x128 matrix product
  26.8 µs on two threads against 44.7 on one; a two-thread out-of-place add of 64 MiB tensors
  5.2 ms (about 39 GB/s);
- **split** (80 samples): the step took 98.5 ms (85-111, x1.34); the product 34.2 µs on two
  threads, 44.3 on one; the add 3.15 ms (about 64 GB/s).

Both are consistent with the vCPUs on one of the EPYC's core complexes (one L3, one link to
memory) or on two (an L3 each, a link each, and every cache line the threads share crossing
between complexes): the split placement streams more and synchronises more slowly, so a network
of many small operators (each a fork and join of the threads) slows and a memory-bound one can
speed up. That reading is an inference; the guest's sysfs shows one L3 either way, and only
timing tells the two apart.

:func:`sharing_ratio` is that probe: the two-thread time of a cached 128x128 product over its
one-thread time (about 12 ms in all). :func:`placement_of` reads it: ``shared`` below
:data:`SHARED_BELOW`, ``split`` above (on that VM: 0.59-0.64 shared, 0.71-0.88 split). A process
with fewer than two CPUs has no placement (``None``). ``trainplay hw measure`` records the
placement it measured in, ``local`` picks the measurement of the placement the machine is in now,
and ``validate`` labels every timed step with it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from trainplay.hardware.machine import usable_cpus

__all__ = [
    "MIXED",
    "PLACEMENTS",
    "SHARED_BELOW",
    "most_common",
    "one_of",
    "placement_now",
    "placement_of",
    "sharing_ratio",
]

PLACEMENTS = ("shared", "split")
MIXED = "mixed"
"""The label of something timed while the placement changed."""
SHARED_BELOW = 0.68
"""Two-thread over one-thread time of the probe below which two threads share a cache: between
the two clusters measured on the project's VM (0.59-0.64 and 0.71-0.88, docstring above)."""
_SIDE = 128
_CALLS, _RUNS = 50, 3


def _fastest_call_s(a: Any, b: Any, out: Any) -> float:
    import torch

    for _ in range(_CALLS // 2):  # the team awake, the operands cached
        torch.mm(a, b, out=out)
    best = float("inf")
    for _ in range(_RUNS):
        start = time.perf_counter()
        for _ in range(_CALLS):
            torch.mm(a, b, out=out)
        best = min(best, (time.perf_counter() - start) / _CALLS)
    return best


def sharing_ratio() -> float | None:
    """Two-thread over one-thread time of a 128x128 product (fastest of three runs of 50 calls
    each), or ``None`` with fewer than two usable CPUs. The caller's thread keeps its team size
    afterwards, and other threads start with one (:func:`~.intraop.compute_threads`)."""
    if usable_cpus() < 2:
        return None
    import torch  # here: ``local`` reads this module's names without importing torch

    from trainplay.hardware.intraop import compute_threads

    threads = torch.get_num_threads()
    a, b = torch.randn(_SIDE, _SIDE), torch.randn(_SIDE, _SIDE)
    out = torch.empty(_SIDE, _SIDE)
    try:
        torch.set_num_threads(2)
        two = _fastest_call_s(a, b, out)
        torch.set_num_threads(1)
        one = _fastest_call_s(a, b, out)
    finally:
        compute_threads(threads)
    return two / one


def placement_of(ratio: float | None) -> str | None:
    """``shared`` or ``split`` for a :func:`sharing_ratio`; ``None`` for none."""
    if ratio is None:
        return None
    return "shared" if ratio < SHARED_BELOW else "split"


def placement_now() -> str | None:
    """The placement this machine's CPUs are in now (:func:`sharing_ratio`, read)."""
    return placement_of(sharing_ratio())


def one_of(labels: Iterable[str | None]) -> str | None:
    """The placement of something probed several times (before and after a call, over passes):
    the one label they all carry, else :data:`MIXED`."""
    found = set(labels)
    return found.pop() if len(found) == 1 else MIXED


def most_common(labels: Iterable[str | None]) -> str | None:
    """The label most of ``labels`` carry, leaving out ``None`` (the first in sorted order on a
    tie); ``None`` without any."""
    told = [label for label in labels if label is not None]
    return max(sorted(set(told)), key=told.count) if told else None
