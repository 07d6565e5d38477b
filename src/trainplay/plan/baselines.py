"""The plans a team would otherwise run, priced by the same cost model as the TNP plan.

- ``gpipe-equal-blocks``: one pipeline over every device in cluster order, the same number of
  blocks per stage, GPipe with recomputation where a stage would not fit (Huang et al., GPipe,
  NeurIPS 2019, which recomputes by default).
- ``equal-params``: the same, with stages holding equal parameter bytes (what partitioning by
  parameter count, e.g. ``torchgpipe``'s ``balance_by_size``, gives).
- ``data-parallel``: DistributedDataParallel on every device, the batch split evenly, gradient
  accumulation (micro-batches) only if a replica does not fit otherwise.
- ``pipedream-homogeneous``: PipeDream's planner (Narayanan et al., SOSP 2019) assumes identical
  devices: trainplay's own search run as if every device were the cluster's median device, with
  even batch shares, then placed on the real devices and priced for them.

Each baseline gets the micro-batch count (of the powers of two) that suits it best.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from trainplay.plan.costs import CostModel, Device
from trainplay.plan.layout import Layout, price_stage, work_of
from trainplay.plan.memory import state_bytes, usable_bytes
from trainplay.plan.search import SearchOptions, microbatch_candidates, search
from trainplay.plan.simulate import iteration_s

__all__ = ["Baseline", "baselines", "fixed_layout"]

GIB = 2**30


@dataclass(frozen=True)
class Baseline:
    name: str
    predicted_iteration_s: float | None
    """``None`` when the baseline does not fit; ``reason`` says why."""
    reason: str
    layout: Layout | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "predicted_iteration_s": self.predicted_iteration_s,
            "reason": self.reason,
        }


def fixed_layout(
    cm: CostModel,
    grid: tuple[tuple[Device, ...], ...],
    bounds: tuple[int, ...],
    shares: tuple[int, ...],
    schedule: str,
    microbatches: list[int],
) -> tuple[float, Layout] | str:
    """The fastest of ``microbatches`` for a fixed partition and split (recomputing where a stage
    needs it), or why none fits."""
    best: tuple[float, Layout] | None = None
    why = "no micro-batch count divides the batch"
    for mb in microbatches:
        if min(shares) < mb:
            continue
        layout = Layout(grid, bounds, mb, shares, schedule, ())
        recompute, problem = [], None
        for r, row in enumerate(grid):
            flags = []
            for s, device in enumerate(row):
                p = price_stage(
                    cm, device, bounds[s], bounds[s + 1], layout.micro(r), stage=s,
                    stages=len(row), microbatches=mb, schedule=schedule,
                )  # fmt: skip
                if p is None:
                    problem = problem or _too_big(cm, layout, r, s)
                    break
                flags.append(p.recompute)
            recompute.append(tuple(flags))
        if problem:
            why = problem
            continue
        layout = replace(layout, recompute=tuple(recompute))
        work = work_of(cm, layout)
        if work is not None:
            t = iteration_s(work)
            if best is None or t < best[0]:
                best = (t, layout)
    return best if best is not None else why


def _too_big(cm: CostModel, layout: Layout, r: int, s: int) -> str:
    device = layout.grid[r][s]
    p = price_stage(
        cm, device, layout.bounds[s], layout.bounds[s + 1], layout.micro(r), stage=s,
        stages=layout.stages, microbatches=layout.microbatches, schedule=layout.schedule,
        recompute=True,
    )  # fmt: skip
    need = p.memory.total_bytes if p else None
    if need is None:
        lo, hi = layout.bounds[s], layout.bounds[s + 1]
        params = cm.range_sum("param_bytes", 1, lo, hi)
        need = state_bytes(params, cm.optimizer, cm.blocks.dtype)
    return (
        f"does not fit: stage {s} (blocks {layout.bounds[s]}-{layout.bounds[s + 1] - 1}) needs at "
        f"least {need / GIB:.1f} GiB on {device.id}, which has {usable_bytes(device.mem_bytes) / GIB:.1f} "
        "GiB usable"
    )


def _even(total: int, parts: int) -> tuple[int, ...]:
    q, rest = divmod(total, parts)
    return tuple(q + (1 if k < rest else 0) for k in range(parts))


def _equal_counts(n: int, stages: int) -> tuple[int, ...]:
    sizes = _even(n, stages)
    bounds = [0]
    for size in sizes:
        bounds.append(bounds[-1] + size)
    return tuple(bounds)


def _equal_params(cm: CostModel, stages: int) -> tuple[int, ...]:
    n, params = cm.blocks.n, cm.blocks.param_bytes
    total = sum(params)
    bounds, acc = [0], 0.0
    for i in range(n):
        acc += params[i]
        left_stages = stages - len(bounds)
        if (
            left_stages > 0 and acc >= total * len(bounds) / stages and n - (i + 1) >= left_stages
        ) or (left_stages > 0 and n - (i + 1) == left_stages):
            bounds.append(i + 1)
    bounds.append(n)
    return tuple(bounds)


def _result(name: str, got: tuple[float, Layout] | str, how: str) -> Baseline:
    if isinstance(got, str):
        return Baseline(name, None, got)
    return Baseline(name, got[0], how, got[1])


def baselines(
    cm: CostModel, devices: list[Device], global_batch: int, options: SearchOptions
) -> list[Baseline]:
    """Every baseline of the module docstring on ``devices``."""
    n, N = cm.blocks.n, len(devices)
    S = min(N, n)
    row = (tuple(devices[:S]),)
    mbs = microbatch_candidates(global_batch, 1, options.max_microbatches)
    out = [
        _result(
            "gpipe-equal-blocks",
            fixed_layout(cm, row, _equal_counts(n, S), (global_batch,), "gpipe", mbs),
            f"one pipeline of {S} stages with equal block counts",
        ),
        _result(
            "equal-params",
            fixed_layout(cm, row, _equal_params(cm, S), (global_batch,), "gpipe", mbs),
            f"one pipeline of {S} stages with equal parameter bytes",
        ),
    ]
    if global_batch >= N:
        grid = tuple((d,) for d in devices)
        got = fixed_layout(
            cm, grid, (0, n), _even(global_batch, N), "gpipe",
            microbatch_candidates(global_batch, N, options.max_microbatches),
        )  # fmt: skip
        out.append(_result("data-parallel", got, f"{N} replicas, even shares"))
    else:
        out.append(
            Baseline(
                "data-parallel", None, f"a global batch of {global_batch} cannot feed {N} replicas"
            )
        )
    out.append(_pipedream(cm, devices, global_batch, options))
    return out


def _pipedream(
    cm: CostModel, devices: list[Device], global_batch: int, options: SearchOptions
) -> Baseline:
    name = "pipedream-homogeneous"
    median = sorted(devices, key=lambda d: d.apf)[len(devices) // 2]
    alike = [
        replace(
            d, type=median.type, apf=median.apf, apm=median.apm, mem_bytes=median.mem_bytes,
            apb=median.apb, p2p_bps=median.p2p_bps, peaks=median.peaks,
        )
        for d in devices
    ]  # fmt: skip
    homogeneous = CostModel(cm.blocks, cm.cluster, cm.optimizer)
    found = search(homogeneous, alike, global_batch, replace(options, schedules=("1f1b",)))
    if found is None:
        return Baseline(name, None, f"does not fit even on {len(devices)} x {median.type}")
    by_id = {d.id: d for d in devices}
    layout = found.layout
    grid = tuple(tuple(by_id[d.id] for d in row) for row in layout.grid)
    shares = tuple(
        int(x) for x in _even(global_batch, layout.replicas)
    )  # PipeDream splits the batch evenly
    got = fixed_layout(cm, grid, layout.bounds, shares, "1f1b", [layout.microbatches])
    how = (
        f"planned as if all were {median.type} (median APF): {layout.replicas} x {layout.stages} "
        f"stages, {layout.microbatches} micro-batches, 1F1B, even shares"
    )
    return _result(name, got, how)
