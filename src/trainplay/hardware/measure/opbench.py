"""Achievable time of each distinct operator of a model, measured on this device in isolation.

MD-Roofline judges work against the device's achievable peaks. One APF for every GEMM is too
coarse on CPUs: a convolution runs anywhere from 15% to 100% of the ``torch.mm`` peak depending on
its shape, channel count and layout reorders; memory-bound kernels run from DRAM bandwidth to far
above it when their tensors fit the last-level cache. So the hardware side can also be measured per
operator: every distinct operator call of one iteration (the aten op, its argument shapes, strides,
dtypes and scalar arguments) is rebuilt with random tensors of the same layout on the device and
timed alone. Its FLOPs and bytes over that time are the operator's achievable rates — its own roof.

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

__all__ = ["OpSignature", "SignatureCollector", "TensorSpec", "time_signature"]


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


def time_signature(
    signature: OpSignature,
    device: torch.device,
    *,
    budget_s: float = 0.2,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Median seconds of one call, after a warm-up call; at most ``budget_s`` of timing (and at
    least three timed calls)."""
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
    return statistics.median(times)
