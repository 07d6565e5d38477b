"""What-if lines: the batch size that moves the heaviest blocks past the ridge, and the link
bandwidth at which communication stops being the bound.

Batch: a block's FLOPs and bytes are affine in the batch size (activations scale with it,
parameters do not): F(b) = f0 + f1·b, M(b) = m0 + m1·b, read off two profiles (b and 2b). Its
intensity A(b) = F/M reaches the ridge A_max at b* = (A_max·m0 - f0) / (f1 - A_max·m1), when
the asymptote f1/m1 lies above the ridge; otherwise no batch size gets it there.

Bandwidth: the iteration's communication time P/APB stops being the largest of the three at
APB* = P / max(t_compute, t_memory).
"""

from __future__ import annotations

import math

from trainplay.report.units import format_number
from trainplay.roofline.analysis import RooflineResult
from trainplay.workload.stats import WorkloadProfile

__all__ = ["ridge_batch", "what_if_lines"]


def ridge_batch(
    small: WorkloadProfile, large: WorkloadProfile, name: str, a_max: float
) -> float | None:
    """Batch size at which block ``name`` reaches the intra-device ridge (``None``: never)."""
    b1, b2 = small.batch_size, large.batch_size
    x1 = next(x for x in small.layers if x.name == name)
    x2 = next(x for x in large.layers if x.name == name)
    f1 = (x2.flops - x1.flops) / (b2 - b1)
    m1 = (x2.bytes - x1.bytes) / (b2 - b1)
    f0, m0 = x1.flops - f1 * b1, x1.bytes - m1 * b1
    if f1 <= a_max * m1:
        return None
    return max((a_max * m0 - f0) / (f1 - a_max * m1), 0.0)


def what_if_lines(
    result: RooflineResult, small: WorkloadProfile, large: WorkloadProfile, heaviest: int = 3
) -> list[str]:
    """Sentences for the report: batch sizes for the heaviest memory-bound blocks, and the
    bandwidth at which communication stops bounding the iteration."""
    lines = []
    a_max = result.peaks["a_max"]
    memory_bound = [
        x
        for x in sorted(result.layers, key=lambda x: -x.predicted_s)
        if x.t_memory_s > x.t_compute_s
    ]
    for layer in memory_bound[:heaviest]:
        b = ridge_batch(small, large, layer.name, a_max)
        if b is None:
            lines.append(
                f"{layer.name} stays memory-bound at any batch size (its intensity levels off below the "
                f"ridge, {format_number(a_max)} FLOP/B)."
            )
        else:
            lines.append(
                f"{layer.name} (A = {format_number(layer.A)} FLOP/B) would reach the ridge at a batch of about "
                f"{math.ceil(b):,} (now {result.batch_size:,})."
            )
    it = result.iteration
    if it.comm_bytes and result.peaks["apb"]:
        needed = it.comm_bytes / max(it.t_compute_s, it.t_memory_s)
        if it.bound == "communication":
            lines.append(
                f"communication stops being the bound above {format_number(needed / 1e9)} GB/s of link bandwidth "
                f"(now {format_number(result.peaks['apb'] / 1e9)} GB/s)."
            )
        else:
            lines.append(
                f"communication would become the bound below {format_number(needed / 1e9)} GB/s of link bandwidth "
                f"(now {format_number(result.peaks['apb'] / 1e9)} GB/s)."
            )
    return lines
