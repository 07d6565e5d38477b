"""Timing an operator the way a training step runs it: its inputs no longer in the CPU's caches.

Called back to back on the same tensors an operator runs from a hot cache, far faster than inside
a training step, where its inputs were written long before (weights, saved activations) or by a
neighbour that streamed other data through the cache, and its output lands in memory the caches
do not hold. So a sweep times each call after an eviction: a read sweep over a buffer twice the
footprint at which this machine *behaves* as streaming from memory (:func:`cache_knees`, found by
a bandwidth sweep, not the cache size sysfs reports, which a virtual machine copies from its
host). The sweep leaves a fixed cost of its own on the next call (translation buffers, waking
threads), measured on an operator that does nothing (a 0-d add) and subtracted; a call never
counts as faster than its hot-cache time. (Treibig, Hager and Wellein, "LIKWID", 2010, and the
STREAM benchmark's rules time cold data the same way.)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = ["CacheKnees", "Evictor", "cache_knees", "knees_of"]


@dataclass(frozen=True)
class CacheKnees:
    """Where this CPU's streaming bandwidth leaves its cache speed, and where it reaches memory
    speed (footprints read + written, bytes)."""

    hot_bytes: int
    """The largest footprint still streamed within 20% of the fastest footprint's bandwidth: a
    call whose data fits here runs at its hot-cache rate."""
    memory_bytes: int
    """The smallest footprint streamed within 20% of the largest footprint's bandwidth: an
    eviction sweep twice this size leaves nothing of the next call's data in the caches."""


def cache_knees(repeats: int = 3) -> CacheKnees:
    """Both knees of a bandwidth sweep over footprints of 2, 4, ..., 1024 MiB (median of
    ``repeats`` passes: one pass has put the memory knee anywhere from 32 to 128 MiB here).

    Between the two knees a stream runs at neither rate (in one pass on this machine 8 MiB streamed
    at 124 GB/s, 16 MiB at 90 and 64 MiB at 25). Pricing every call below the memory knee at its
    hot-cache rate priced mobilenet_v2's ReLU6 calls (batch 4) at up to 181 GB/s, where the 35 of
    them moved 195 MB in 10.4 ms of a training step (19 GB/s, under the profiler); the hot-cache
    rate is kept to footprints that stream at it."""
    sizes = [2**k * 2**20 for k in range(1, 11)]
    passes: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(repeats):
        for footprint in sizes:
            src = torch.ones(footprint // 8)
            dst = torch.empty_like(src)
            torch.add(src, 1, out=dst)
            calls = max(3, int(2**28 // footprint))
            start = time.perf_counter()
            for _ in range(calls):
                torch.add(src, 1, out=dst)
            passes[footprint].append(footprint * calls / (time.perf_counter() - start))
    return knees_of({size: statistics.median(values) for size, values in passes.items()})


def knees_of(bandwidth: dict[int, float]) -> CacheKnees:
    """:class:`CacheKnees` of a bandwidth sweep (footprint bytes -> bytes/s)."""
    sizes = sorted(bandwidth)
    plateau, memory = max(bandwidth.values()), bandwidth[sizes[-1]]
    fastest = max(sizes, key=bandwidth.__getitem__)
    hot = fastest
    for size in sizes:
        if size > fastest:
            if bandwidth[size] < 0.8 * plateau:
                break
            hot = size
    slow = next(size for size in sizes if bandwidth[size] <= 1.2 * memory)
    return CacheKnees(hot_bytes=min(hot, slow), memory_bytes=slow)


class Evictor:
    """Evicts this process's data from the CPU caches, and knows what that costs the next call."""

    def __init__(self, cache_bytes: int):
        self.buffer = torch.ones(2 * cache_bytes // 4)
        noop = torch.zeros((), dtype=torch.long)
        self.noop_s = 0.0
        self.noop_s = statistics.median(self._cold(lambda: noop.add_(1)) for _ in range(31))

    def evict(self) -> None:
        self.buffer.sum()

    def _cold(self, call: Callable[[], object]) -> float:
        self.evict()
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    def time(self, call: Callable[[], object], reps: int = 5) -> float:
        """Median seconds of ``call`` on cold caches, the eviction's own after-cost removed."""
        return statistics.median(self._cold(call) for _ in range(reps)) - self.noop_s
