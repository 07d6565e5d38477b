"""Achievable time of each distinct operator of a model, measured on this device in isolation.

MD-Roofline judges work against the device's achievable peaks. One APF for every GEMM is too
coarse on CPUs: a convolution runs anywhere from 15% to 100% of the ``torch.mm`` peak depending on
its shape, channel count and layout reorders; memory-bound kernels run from DRAM bandwidth to far
above it when their tensors fit the last-level cache. So the hardware side can also be measured per
operator: every distinct operator call of one iteration (the aten op, its argument shapes, strides,
dtypes and scalar arguments) is rebuilt with random tensors of the same layout on the device and
timed alone. Its FLOPs and bytes over that time are the operator's achievable rates — its own roof.

How an operator is timed on a CPU matters as much as which one. Called back to back on the same
tensors it runs from a hot cache, far faster than inside a training step, where its inputs were
written long before (weights, saved activations) or by a neighbour that streamed other data through
the cache; measured that way, whole iterations come out 20-45% short here. So each timed call
follows an eviction: a read sweep over a buffer twice the cache size this machine *behaves* like it
has (:func:`effective_cache_bytes`, found by a bandwidth sweep, not the size sysfs reports). The
sweep leaves a fixed cost of its own on the next call (translation buffers, waking threads), which
is measured on an operator that does nothing (a 0-d add) and subtracted; an operator never counts
as faster than its hot-cache time (Treibig, Hager, Wellein, "LIKWID", 2010, and the STREAM
benchmark's rules, time cold data the same way).

Nothing here looks at the model's measured iteration time: operators are timed one by one on
synthetic data; integer tensors (indices) are zeros so every index is valid.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_map

__all__ = [
    "Evictor",
    "OpSignature",
    "SignatureCollector",
    "TensorSpec",
    "effective_cache_bytes",
    "time_signature",
]


@dataclass(frozen=True)
class TensorSpec:
    """Shape, strides, dtype (and storage extent) of a tensor argument."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    offset: int

    @classmethod
    def of(cls, t: torch.Tensor) -> TensorSpec:
        return cls(tuple(t.shape), tuple(t.stride()), t.dtype, t.storage_offset())

    def key(self) -> str:
        return f"T{list(self.shape)}{list(self.stride)}{str(self.dtype).removeprefix('torch.')}"

    def build(self, device: torch.device) -> torch.Tensor:
        extent = (
            self.offset
            + 1
            + sum((s - 1) * st for s, st in zip(self.shape, self.stride, strict=True) if s > 0)
        )
        if self.dtype.is_floating_point:
            base = torch.randn(extent, device=device, dtype=self.dtype)
        else:  # indices, masks, counters: zeros are valid everywhere
            base = torch.zeros(extent, device=device, dtype=self.dtype)
        return base.as_strided(self.shape, self.stride, self.offset)


def _skeleton(x: Any) -> Any:
    return TensorSpec.of(x) if isinstance(x, torch.Tensor) else x


def _key(x: Any) -> str:
    if isinstance(x, TensorSpec):
        return x.key()
    if isinstance(x, list | tuple):
        return "(" + ",".join(_key(i) for i in x) + ")"
    if isinstance(x, dict):
        return "{" + ",".join(f"{k}={_key(v)}" for k, v in sorted(x.items())) + "}"
    if isinstance(x, torch.device):
        return "dev"
    return repr(x)


@dataclass(frozen=True)
class OpSignature:
    """One distinct operator call: enough to rebuild and run it anywhere."""

    key: str
    func: Any
    args: tuple
    kwargs: dict[str, Any]

    def build(self, device: torch.device) -> tuple[tuple, dict[str, Any]]:
        def make(x: Any) -> Any:
            if isinstance(x, TensorSpec):
                return x.build(device)
            if isinstance(x, torch.device):
                return device
            return x

        return tree_map(make, self.args), tree_map(make, self.kwargs)


class SignatureCollector:
    """An observer for :func:`trainplay.workload.tracer.record_iteration`: names every aten call by
    its signature and keeps one :class:`OpSignature` per distinct call (views move no data and get
    an empty name)."""

    def __init__(self) -> None:
        self.signatures: dict[str, OpSignature] = {}

    def __call__(self, func: Any, args: tuple, kwargs: dict[str, Any]) -> str:
        if func.is_view or torch.Tag.inplace_view in func.tags:
            return ""
        skeleton_args, skeleton_kwargs = tree_map(_skeleton, args), tree_map(_skeleton, kwargs)
        key = f"{func}{_key(skeleton_args)}{_key(skeleton_kwargs)}"
        if key not in self.signatures:
            self.signatures[key] = OpSignature(key, func, skeleton_args, skeleton_kwargs)
        return key


def effective_cache_bytes(threads: int | None = None) -> int:
    """The data footprint beyond which streaming runs at memory speed on this CPU: the smallest
    footprint (2, 4, ..., 1024 MiB, read + written) whose bandwidth is within 20% of the largest
    footprint's. Measured, because virtual machines report their host's cache."""
    if threads is not None:
        torch.set_num_threads(threads)
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


def time_signature(
    signature: OpSignature,
    device: torch.device,
    *,
    budget_s: float = 0.2,
    evictor: Evictor | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Seconds of one call: the median of hot-cache calls after a warm-up call (at most
    ``budget_s`` of timing, at least three calls), or with an ``evictor`` the cold-cache time,
    never below the hot one."""
    args, kwargs = signature.build(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    signature.func(*args, **kwargs)
    sync()
    times, started = [], clock()
    while len(times) < 3 or (clock() - started < budget_s and len(times) < 25):
        start = clock()
        signature.func(*args, **kwargs)
        sync()
        times.append(clock() - start)
    hot = statistics.median(times)
    if evictor is None:
        return hot
    return max(hot, evictor.time(lambda: signature.func(*args, **kwargs)))
