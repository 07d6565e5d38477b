"""Timing an operator the way a training step runs it: its inputs no longer in the CPU's caches.

Called back to back on the same tensors an operator runs from a hot cache, far faster than inside
a training step, where its inputs were written long before (weights, saved activations) or by a
neighbour that streamed other data through the cache, and its output lands in memory the caches
do not hold. So a sweep times each call after an eviction: a read sweep over a buffer twice the
cache size this machine *behaves* like it has (:func:`effective_cache_bytes`, found by a bandwidth
sweep, not the size sysfs reports, which a virtual machine copies from its host). The sweep
leaves a fixed cost of its own on the next call (translation buffers, waking threads), measured on
an operator that does nothing (a 0-d add) and subtracted; a call never counts as faster than its
hot-cache time. (Treibig, Hager and Wellein, "LIKWID", 2010, and the STREAM benchmark's rules
time cold data the same way.)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

__all__ = ["Evictor", "effective_cache_bytes"]


def effective_cache_bytes() -> int:
    """The data footprint beyond which streaming runs at memory speed on this CPU: the smallest
    footprint (2, 4, ..., 1024 MiB, read + written) whose bandwidth is within 20% of the largest
    footprint's."""
    sizes = [2**k * 2**20 for k in range(1, 11)]
    bandwidth = {}
    for footprint in sizes:
        src = torch.ones(footprint // 8)
        dst = torch.empty_like(src)
        torch.add(src, 1, out=dst)
        calls = max(3, int(2**28 // footprint))
        start = time.perf_counter()
        for _ in range(calls):
            torch.add(src, 1, out=dst)
        bandwidth[footprint] = footprint * calls / (time.perf_counter() - start)
    memory = bandwidth[sizes[-1]]
    return next(size for size in sizes if bandwidth[size] <= 1.2 * memory)


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
