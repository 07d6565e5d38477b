"""A candidate plan during the search (:class:`Layout`) and what it costs: time and memory.

A layout is ``R`` replicas of one pipeline partition: the same stage boundaries on every replica,
each replica on its own devices, each with its share of the global batch, all with the same
number of micro-batches. Shares found by the search are multiples of ``M``, so a replica's
micro-batches have one size; a layout given from outside is priced at its largest micro-batch,
``ceil(share / M)``.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from trainplay.plan.costs import CostModel, Device, running
from trainplay.plan.memory import StageMemory, in_flight, stage_memory, usable_bytes
from trainplay.plan.simulate import IterationWork, PipelineWork
from trainplay.roofline import cost

__all__ = [
    "Layout",
    "StagePrice",
    "allreduces_s",
    "memory_of",
    "pipeline_work",
    "price_stage",
    "runtime_of",
    "tail_s",
    "work_of",
]


@dataclass(frozen=True)
class Layout:
    grid: tuple[tuple[Device, ...], ...]
    """Devices by replica, then stage."""
    bounds: tuple[int, ...]
    """Stage boundaries: stage ``s`` runs blocks ``[bounds[s], bounds[s+1])``."""
    microbatches: int
    shares: tuple[int, ...]
    """Samples of the global batch per replica."""
    schedule: str
    recompute: tuple[tuple[bool, ...], ...]
    """Per replica, per stage: whether the stage recomputes its activations."""

    @property
    def stages(self) -> int:
        return len(self.bounds) - 1

    @property
    def replicas(self) -> int:
        return len(self.grid)

    def micro(self, r: int) -> int:
        return math.ceil(self.shares[r] / self.microbatches)


@dataclass(frozen=True)
class StagePrice:
    fwd_s: float
    bwd_s: float
    """Backward, plus the forward again when recomputing."""
    optimizer_s: float
    recompute: bool
    memory: StageMemory


def price_stage(
    cm: CostModel,
    device: Device,
    first: int,
    end: int,
    m: int,
    *,
    stage: int,
    stages: int,
    microbatches: int,
    schedule: str,
    recompute: bool | None = None,
) -> StagePrice | None:
    """Blocks ``[first, end)`` on ``device`` for micro-batches of ``m``; ``None`` when they do
    not fit. ``recompute=None`` recomputes only when the stage does not fit without it."""
    held = in_flight(schedule, microbatches, stages, stage)
    key = (device.stage_key, first, end, m, held, microbatches, recompute)
    memo = cm.memo
    try:
        return memo[key]
    except KeyError:
        got = memo[key] = _price(cm, device, first, end, m, held, microbatches, recompute)
        return got


def _price(
    cm: CostModel,
    device: Device,
    first: int,
    end: int,
    m: int,
    held: int,
    microbatches: int,
    recompute: bool | None,
) -> StagePrice | None:
    saved = cm.range_sum("saved_bytes", m, first, end)
    received = cm.activation_bytes(first, m) if first > 0 else cm.blocks.input_bytes_per_sample * m
    params = cm.range_sum("param_bytes", m, first, end)
    tensors = int(cm.range_sum("param_tensors", m, first, end))
    capacity = usable_bytes(device.mem_bytes)
    # the pipeline schedule's fixed cost per micro-batch, half in its forward, half in its backward
    schedule = cost.schedule_microbatch_s(device.priced()) / 2
    fwd = cm.fwd_s(device, m, first, end) + schedule
    # each micro-batch after the first adds its gradients into the accumulated ones
    # (roofline.cost.accumulate_s): spread over the micro-batches' backwards
    accumulate = cm.accumulate_s(device, params, tensors) * (microbatches - 1) / microbatches
    bwd = cm.bwd_s(device, m, first, end) + accumulate + schedule
    opt = cm.optimizer_s(device, params, tensors)
    for choice in (False, True) if recompute is None else (recompute,):
        mem = stage_memory(
            param_bytes=params,
            saved_bytes=saved,
            input_bytes=received,
            held=held,
            recompute=choice,
            optimizer=cm.optimizer,
            dtype=cm.blocks.dtype,
            largest_param_bytes=max(cm.blocks.largest_param_bytes[first:end], default=0),
        )
        if mem.total_bytes <= capacity:
            return StagePrice(fwd, bwd + (fwd if choice else 0.0), opt, choice, mem)
    return None


def pipeline_work(
    cm: CostModel,
    row: tuple[Device, ...],
    bounds: tuple[int, ...],
    m: int,
    *,
    microbatches: int,
    schedule: str,
    recompute: tuple[bool | None, ...] | None = None,
    samples: int | None = None,
) -> tuple[PipelineWork, tuple[StagePrice, ...]] | None:
    """One replica's stages on ``row`` for micro-batches of ``m``, priced for the simulator, with
    each stage's price; ``None`` when a stage does not fit. ``recompute`` per stage (``None``:
    only where needed); ``samples``: the replica's share of the batch, which its first and last
    stage fetch (``None``: ``m`` per micro-batch)."""
    S = len(row)
    prices = []
    for s in range(S):
        price = price_stage(
            cm, row[s], bounds[s], bounds[s + 1], m, stage=s, stages=S,
            microbatches=microbatches, schedule=schedule,
            recompute=None if recompute is None else recompute[s],
        )  # fmt: skip
        if price is None:
            return None
        prices.append(price)
    sends = tuple(
        cm.send_s(row[s], row[s + 1], cm.activation_bytes(bounds[s + 1], m)) for s in range(S - 1)
    )
    work = PipelineWork(
        tuple(d.id for d in row),
        tuple(p.fwd_s for p in prices),
        tuple(p.bwd_s for p in prices),
        sends,
        cm.fetch_s(row, m * microbatches if samples is None else samples),
    )
    return work, tuple(prices)


def allreduces_s(
    cm: CostModel, grid: tuple[tuple[Device, ...], ...], bounds: tuple[int, ...]
) -> tuple[float, ...]:
    """Per stage, when its gradient all-reduces end, counted from the flush: first the
    parameters only it holds over its replicas (zero with one replica), then, in the runtime's
    order (by canonical name), each tied parameter whose users lie in several stages over every
    replica of those stages; such an all-reduce starts when each of its stages has finished the
    ones before it (``runtime/pipeline.py``: ``sum_gradients`` over the stage, then over each tie
    group)."""
    S = len(bounds) - 1
    columns = [tuple(row[s] for row in grid) for s in range(S)]
    done = [
        cm.allreduce_s(columns[s], cm.own_param_bytes(bounds[s], bounds[s + 1])) for s in range(S)
    ]
    for tie in cm.blocks.ties:
        stages = sorted({bisect.bisect_right(bounds, k) - 1 for k in tie.blocks})
        if len(stages) < 2:
            continue
        ring = tuple(d for s in stages for d in columns[s])
        end = max(done[s] for s in stages) + cm.allreduce_s(ring, tie.bytes)
        for s in stages:
            done[s] = end
    return tuple(done)


def tail_s(cm: CostModel, grid: tuple[tuple[Device, ...], ...], bounds: tuple[int, ...]) -> float:
    """After the flush: the stage that ends last after its all-reduces (:func:`allreduces_s`)
    and its slowest optimizer step, then the runtime's own work per step (the batch shares change
    neither)."""
    done = allreduces_s(cm, grid, bounds)
    steps = (
        _step_s(cm, tuple(row[s] for row in grid), bounds[s], bounds[s + 1])
        for s in range(len(bounds) - 1)
    )
    return max(d + step for d, step in zip(done, steps, strict=True)) + cm.runtime_s(grid, bounds)


def _step_s(cm: CostModel, column: tuple[Device, ...], first: int, end: int) -> float:
    """The slowest optimizer step of blocks ``[first, end)`` on the devices of ``column`` (one per
    replica); memoised by the devices' speeds and the blocks."""
    key = (tuple(d.speed for d in column), first, end)
    got = cm.tails.get(key)
    if got is None:
        params = cm.range_sum("param_bytes", 1, first, end)
        tensors = int(cm.range_sum("param_tensors", 1, first, end))
        got = cm.tails[key] = max(cm.optimizer_s(d, params, tensors) for d in column)
    return got


def runtime_of(cm: CostModel, layout: Layout) -> float:
    """The runtime's own work per step (:meth:`~trainplay.plan.costs.CostModel.runtime_s`) on
    ``layout``'s devices as priced (:func:`running`), its stages at their largest micro-batch."""
    grid = running(layout.grid)
    micro = max(layout.micro(r) for r in range(len(grid)))
    return cm.runtime_s(grid, layout.bounds, micro)


def work_of(cm: CostModel, layout: Layout) -> IterationWork | None:
    """The layout priced for the simulator, or ``None`` when some stage does not fit. A device
    that is the only one of its node in use is priced as it runs alone (:func:`running`)."""
    pipelines, optimizer = [], []
    grid = running(layout.grid)
    runtime = runtime_of(cm, layout)  # after every device's optimizer step (tail_s)
    for r, row in enumerate(grid):
        got = pipeline_work(
            cm, row, layout.bounds, layout.micro(r), microbatches=layout.microbatches,
            schedule=layout.schedule, recompute=layout.recompute[r], samples=layout.shares[r],
        )  # fmt: skip
        if got is None:
            return None
        pipelines.append(got[0])
        optimizer.append(tuple(p.optimizer_s + runtime for p in got[1]))
    return IterationWork(
        tuple(pipelines),
        layout.microbatches,
        layout.schedule,
        allreduces_s(cm, grid, layout.bounds),
        tuple(optimizer),
    )


def memory_of(cm: CostModel, layout: Layout) -> dict[str, StageMemory]:
    """Memory each used device needs under ``layout``, by device id."""
    out = {}
    S, b = layout.stages, layout.bounds
    for r, row in enumerate(layout.grid):
        for s in range(S):
            price = price_stage(
                cm, row[s], b[s], b[s + 1], layout.micro(r), stage=s, stages=S,
                microbatches=layout.microbatches, schedule=layout.schedule,
                recompute=layout.recompute[r][s],
            )  # fmt: skip
            if price is None:
                raise ValueError(f"stage {s} of replica {r} does not fit on {row[s].id}")
            out[row[s].id] = price.memory
    return out
