"""APF and APM of the device this process runs on: dense GEMM and large-tensor streaming.

- **APF** (achievable peak FLOP/s): ``torch.mm`` of square matrices at the training dtype over a
  size sweep; each size is sampled until stable; APF is the best size's median (2·n³ FLOPs a call).
- **APM** (achievable peak memory bandwidth): a copy ``dst ← src`` (2 bytes moved per byte) and a
  triad ``a ← b + s·c`` (3 per byte), STREAM's kernels (McCalpin 1995), on tensors at least twice
  the last-level cache; APM is the better of the two medians.

Each sample times enough calls to last about :data:`SAMPLE_S` so timer resolution never matters.
On CUDA the device is synchronised around the timed calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from trainplay.hardware.machine import last_level_cache_bytes, physical_memory_bytes
from trainplay.hardware.measure.stats import Sampled, sample_until_stable

__all__ = ["ApfResult", "ApmResult", "measure_apf", "measure_apm", "stream_bytes", "timed"]

SAMPLE_S = 0.1
"""Target duration of one sample."""
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], object], device: torch.device, calls: int) -> float:
    """Seconds per call of ``fn`` over ``calls`` back-to-back calls."""
    _sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / calls


def _calibrated(fn: Callable[[], object], device: torch.device) -> int:
    """Calls per sample so that one sample lasts about :data:`SAMPLE_S` (after a warm-up call)."""
    fn()
    once = timed(fn, device, 1)
    return max(1, min(10_000, round(SAMPLE_S / max(once, 1e-7))))


@dataclass(frozen=True)
class ApfResult:
    flops: float
    """Best size's median FLOP/s."""
    best_size: int
    by_size: dict[int, float]
    """Median FLOP/s per matrix size."""
    cv: float
    """Coefficient of variation of the best size's samples."""


def measure_apf(
    device: torch.device,
    dtype: str,
    sizes: list[int],
    budget_s: float,
    progress: Callable[[float], None] = lambda _: None,
) -> ApfResult:
    """Dense GEMM FLOP/s over ``sizes`` (square matrices), ``budget_s`` shared between sizes."""
    torch_dtype = DTYPES[dtype]
    results: dict[int, Sampled] = {}
    for i, n in enumerate(sizes):
        a = torch.randn(n, n, device=device, dtype=torch_dtype)
        b = torch.randn(n, n, device=device, dtype=torch_dtype)
        out = torch.empty(n, n, device=device, dtype=torch_dtype)

        def gemm(a=a, b=b, out=out) -> object:
            return torch.mm(a, b, out=out)

        calls = _calibrated(gemm, device)
        flops = 2.0 * n**3
        results[n] = sample_until_stable(
            lambda gemm=gemm, calls=calls, flops=flops: flops / timed(gemm, device, calls),
            budget_s / len(sizes),
        )
        progress((i + 1) / len(sizes))
        del a, b, out
    best = max(results, key=lambda n: results[n].median)
    return ApfResult(
        flops=results[best].median,
        best_size=best,
        by_size={n: s.median for n, s in results.items()},
        cv=results[best].cv,
    )


@dataclass(frozen=True)
class ApmResult:
    copy_bps: float
    triad_bps: float
    tensor_bytes: int
    cv: float
    """Coefficient of variation of the better kernel's samples."""

    @property
    def bps(self) -> float:
        return max(self.copy_bps, self.triad_bps)


def stream_bytes(device: torch.device, workers_here: int, quick: bool) -> int:
    """Bytes per stream tensor: at least 2x the last-level cache so the kernels stream from
    memory (64 MiB floor), at most a 1/16 share of physical memory per worker (three tensors)."""
    if device.type == "cuda":
        return 256 * 2**20 if quick else 1024 * 2**20
    floor = 64 * 2**20 if quick else 256 * 2**20
    wanted = max(floor, 2 * last_level_cache_bytes())
    physical = physical_memory_bytes()
    return int(min(wanted, physical // (16 * max(workers_here, 1))))


def measure_apm(
    device: torch.device,
    tensor_bytes: int,
    budget_s: float,
    progress: Callable[[float], None] = lambda _: None,
) -> ApmResult:
    """Copy and triad bandwidth (bytes read + written per second) on fp32 tensors."""
    n = tensor_bytes // 4
    a = torch.ones(n, device=device)
    b = torch.ones(n, device=device)
    c = torch.ones(n, device=device)
    nbytes = a.numel() * a.element_size()

    def copy() -> object:
        return a.copy_(b)

    def triad() -> object:
        return torch.add(b, c, alpha=3.0, out=a)

    copy_calls = _calibrated(copy, device)
    copies = sample_until_stable(lambda: 2 * nbytes / timed(copy, device, copy_calls), budget_s / 2)
    progress(0.5)
    triad_calls = _calibrated(triad, device)
    triads = sample_until_stable(
        lambda: 3 * nbytes / timed(triad, device, triad_calls), budget_s / 2
    )
    progress(1.0)
    better = copies if copies.median >= triads.median else triads
    return ApmResult(
        copy_bps=copies.median, triad_bps=triads.median, tensor_bytes=nbytes, cv=better.cv
    )
