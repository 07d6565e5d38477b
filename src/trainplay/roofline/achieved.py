"""Per-block forward and backward time on this machine from operator-level achievable peaks.

Every distinct operator call of one training iteration is timed alone on the device
(:mod:`trainplay.hardware.measure.opbench`); a block's phase time is the sum over its calls. This
replaces the roofline's ``max(F/APF, M/APM)`` per phase when the device can be measured; the
communication and overlap model of :mod:`.analysis` is unchanged.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import torch

from trainplay.hardware.measure.opbench import (
    Evictor,
    SignatureCollector,
    effective_cache_bytes,
    time_signature,
)
from trainplay.workload.profiler import blocks_of_events
from trainplay.workload.tracer import record_iteration
from trainplay.workload.zoo import ModelSource

__all__ = ["BlockTimes", "measure_block_times"]


@dataclass(frozen=True)
class BlockTimes:
    """Per block: (forward seconds, backward seconds), in block order."""

    names: tuple[str, ...]
    fwd_s: tuple[float, ...]
    bwd_s: tuple[float, ...]
    ops: int
    """Operator calls in the iteration (views excluded)."""
    distinct_ops: int
    measure_s: float
    """How long timing the operators took."""

    def as_dict(self) -> dict[str, tuple[float, float]]:
        return {n: (f, b) for n, f, b in zip(self.names, self.fwd_s, self.bwd_s, strict=True)}


def measure_block_times(
    source: ModelSource,
    batch_size: int,
    input_shape: tuple[int, ...],
    dtype: str = "fp32",
    device: str = "cpu",
    *,
    budget_per_op_s: float = 0.05,
    cache_bytes: int | None = None,
    progress: Callable[[float], None] = lambda _: None,
) -> BlockTimes:
    """Trace the model on ``meta``, then time each distinct operator on ``device`` (on a CPU with
    cold caches, see :mod:`trainplay.hardware.measure.opbench`; ``cache_bytes`` skips measuring
    the effective cache size)."""
    model = source.build(input_shape, "meta", dtype)
    collector = SignatureCollector()
    trace = record_iteration(
        model, source.inputs(batch_size, input_shape, "meta", dtype), collector
    )
    blocks, block_of = blocks_of_events(model, trace)
    calls = Counter((block_of[i], e.phase, e.key) for i, e in enumerate(trace.events) if e.key)
    target = torch.device(device)
    started = time.perf_counter()
    evictor = None
    if target.type == "cpu":
        evictor = Evictor(cache_bytes or effective_cache_bytes())
    seconds: dict[str, float] = {}
    keys = list(collector.signatures)
    for i, key in enumerate(keys):
        seconds[key] = time_signature(
            collector.signatures[key], target, budget_s=budget_per_op_s, evictor=evictor
        )
        progress((i + 1) / len(keys))
    fwd, bwd = [0.0] * len(blocks), [0.0] * len(blocks)
    for (block, phase, key), count in calls.items():
        (fwd if phase == "fwd" else bwd)[block] += count * seconds[key]
    return BlockTimes(
        names=tuple(b.name for b in blocks),
        fwd_s=tuple(fwd),
        bwd_s=tuple(bwd),
        ops=sum(calls.values()),
        distinct_ops=len(keys),
        measure_s=time.perf_counter() - started,
    )
