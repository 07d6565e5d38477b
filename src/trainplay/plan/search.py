"""The TNP plan search: stages, devices, replicas, batch shares, micro-batches, schedule, recompute.

The space (DESIGN.md, "TNP, precisely"): ``R`` replicas of one partition into ``S`` contiguous
stages; each replica on its own ``S`` devices (replicas may differ in device types); uneven batch
shares; ``M`` micro-batches (powers of two, each replica gets at least one sample per
micro-batch); GPipe or 1F1B; recomputation per stage when the stage does not fit without it.
Devices may be left idle when they do not help.

**Exact** when the cluster has at most ``exact_devices`` devices and the arrangements of devices
into grids, counted up to swapping identical devices (same type, peaks and node) and reordering
replicas, number at most ``arrangement_limit``: every arrangement, every ``M``, and for one replica
the Pareto dynamic programme over partitions, for several every partition with its best shares.
Exact means: no plan has a lower GPipe iteration time under the cost model. 1F1B is priced by the
simulator and tried on the best few partitions found for its memory rule (``onef1b_candidates``),
so a 1F1B plan is chosen only when it beats the best GPipe plan, but is not proven optimal.

**Heuristic** beyond that: grids built by rule — the ``R·S`` fastest devices (and, as a variant,
those with the most memory), dealt to replicas in snake order so replicas have similar speed,
stages of a replica grouped by node — and stage boundaries by bisection on the largest stage
time (:func:`trainplay.plan.partition.greedy_bounds`), then the best shares.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

from trainplay.plan.costs import CostModel, Device, running
from trainplay.plan.layout import Layout, tail_s, work_of
from trainplay.plan.partition import best_shares, enumerate_bounds, greedy_bounds, pareto_partitions
from trainplay.plan.simulate import SCHEDULES, iteration_s

__all__ = [
    "Found",
    "SearchOptions",
    "arrangements",
    "lower_bound_s",
    "microbatch_candidates",
    "pipeline_floor_s",
    "search",
    "work_floor_s",
]


@dataclass(frozen=True, kw_only=True)
class SearchOptions:
    schedules: tuple[str, ...] = SCHEDULES
    """Schedules to consider."""
    max_microbatches: int = 64
    """Largest micro-batch count tried."""
    microbatches: int | None = None
    """Use exactly this many micro-batches instead of searching the count."""
    exact_devices: int = 8
    """Search device arrangements exhaustively up to this many devices ..."""
    arrangement_limit: int = 4000
    """... when they number at most this many."""
    partition_limit: int = 2000
    """Several replicas: enumerate partitions up to this many, else bisect."""
    onef1b_candidates: int = 4
    """Partitions (best by the GPipe time) on which 1F1B is simulated."""
    exact_work: float = 3e6
    """Largest estimated work (stage prices) of an exact search of one shape (replicas x stages);
    a shape beyond it is searched by the heuristic."""
    any_fit: bool = False
    """Stop at the first layout that fits (whether a plan exists, not which is best: the
    advice's "what helps" check)."""


@dataclass(frozen=True)
class Found:
    """The best layout, its iteration time, and how the search got there."""

    time_s: float
    layout: Layout
    exact: bool
    evaluated: int
    """Layouts priced."""
    seconds: float = 0.0


def microbatch_candidates(global_batch: int, replicas: int, largest: int) -> list[int]:
    """Powers of two up to ``largest`` that divide the global batch, with at least one sample per
    micro-batch on every replica. Every replica's share is a multiple of the micro-batch count, so
    all micro-batches of a replica have one size (``torch.distributed.pipelining`` infers the
    shapes it sends from the first micro-batch)."""
    out, m = [], 1
    while m <= largest and replicas * m <= global_batch:
        if global_batch % m == 0:
            out.append(m)
        m *= 2
    return out


def _classes(devices: list[Device]) -> list[list[Device]]:
    groups: dict[tuple, list[Device]] = {}
    for d in devices:
        groups.setdefault(d.klass, []).append(d)
    return list(groups.values())


def arrangements(
    devices: list[Device], replicas: int, stages: int, limit: int
) -> list[tuple[tuple[Device, ...], ...]] | None:
    """Every grid of ``replicas`` x ``stages`` distinct devices up to identical devices and replica
    order, or ``None`` when there are more than ``limit``."""
    classes = _classes(devices)
    counts = [len(c) for c in classes]

    def row_seqs(left: list[int], prefix: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if len(prefix) == stages:
            yield prefix
            return
        for k, c in enumerate(left):
            if c:
                left[k] -= 1
                yield from row_seqs(left, (*prefix, k))
                left[k] += 1

    grids: list[tuple[tuple[int, ...], ...]] = []

    def place(left: list[int], done: list[tuple[int, ...]]) -> bool:
        if len(done) == replicas:
            grids.append(tuple(done))
            return len(grids) <= limit
        for seq in row_seqs(left, ()):
            if done and seq < done[-1]:
                continue
            if not place(left, [*done, seq]):  # ``left`` already lacks this row's devices
                return False
        return True

    if not place(counts, []):
        return None
    out = []
    for grid in grids:
        used = [0] * len(classes)
        rows_out = []
        for seq in grid:
            row = []
            for k in seq:
                row.append(classes[k][used[k]])
                used[k] += 1
            rows_out.append(tuple(row))
        out.append(tuple(rows_out))
    return out


def _by_rule(
    devices: list[Device], replicas: int, stages: int
) -> list[tuple[tuple[Device, ...], ...]]:
    """Heuristic grids: the fastest (or the largest) ``R·S`` devices dealt in snake order."""
    node_order = {d.node: k for k, d in reversed(list(enumerate(devices)))}
    grids = []
    for key in (lambda d: (-d.apf, -d.mem_bytes), lambda d: (-d.mem_bytes, -d.apf)):
        chosen = sorted(devices, key=key)[: replicas * stages]
        rows: list[list[Device]] = [[] for _ in range(replicas)]
        for k, d in enumerate(chosen):
            lap, pos = divmod(k, replicas)
            rows[pos if lap % 2 == 0 else replicas - 1 - pos].append(d)
        grid = tuple(
            tuple(sorted(row, key=lambda d: (node_order[d.node], -d.mem_bytes, -d.apf)))
            for row in rows
        )
        if grid not in grids:
            grids.append(grid)
    return grids


def _shapes(n_devices: int, n_blocks: int, exact: bool) -> Iterator[tuple[int, int]]:
    for r in range(1, n_devices + 1):
        top = min(n_devices // r, n_blocks)
        if exact:
            yield from ((r, s) for s in range(1, top + 1))
        else:
            stages = {top}
            s = 1
            while s < top:
                stages.add(s)
                s *= 2
            yield from ((r, s) for s in sorted(stages))


def search(
    cm: CostModel,
    devices: list[Device],
    global_batch: int,
    options: SearchOptions | None = None,
) -> Found | None:
    """The fastest plan of the space for ``devices``; ``None`` when nothing fits."""
    options = options or SearchOptions()
    started = time.perf_counter()
    n = cm.blocks.n
    small = len(devices) <= options.exact_devices
    exact = small
    queue = []
    for r, s in _shapes(len(devices), n, small):
        grids = arrangements(devices, r, s, options.arrangement_limit) if small else None
        mbs = microbatch_candidates(global_batch, r, options.max_microbatches)
        if options.microbatches is not None:
            fixed = options.microbatches
            mbs = [fixed] if r * fixed <= global_batch and global_batch % fixed == 0 else []
        if grids is not None:
            per_grid = n * n * s if r == 1 else math.comb(n - 1, s - 1) * (global_batch + r) * s
            if len(grids) * len(mbs) * per_grid > options.exact_work:
                grids = None
        shape_exact = grids is not None
        exact = exact and shape_exact
        for arranged in grids if grids is not None else _by_rule(devices, r, s):
            grid = running(arranged)  # a device alone on its node priced as it runs alone
            for mb in mbs:
                bound = lower_bound_s(cm, grid, mb, global_batch)
                queue.append((bound, len(queue), grid, mb, shape_exact))
    queue.sort(key=lambda x: (x[0], x[1]))
    best: tuple[float, Layout] | None = None
    evaluated = 0
    for bound, _, grid, mb, shape_exact in queue:
        if best is not None and (bound >= best[0] or options.any_fit):
            break  # every remaining candidate is bounded below by at least the best time
        incumbent = math.inf if best is None else best[0]
        one = len(grid) == 1 and best is not None
        if one and work_floor_s(cm, grid[0], mb, global_batch) * (1 - 1e-9) >= incumbent:
            continue  # no layout of this pipeline can beat the best one
        floor = pipeline_floor_s(cm, grid, mb, global_batch)
        for found in _best_for(cm, grid, mb, global_batch, options, shape_exact, floor, incumbent):
            evaluated += 1
            if best is None or found[0] < best[0] * (1 - 1e-12):
                best = found
    if best is None:
        return None
    return Found(best[0], best[1], exact, evaluated, time.perf_counter() - started)


def lower_bound_s(
    cm: CostModel, grid: tuple[tuple[Device, ...], ...], mb: int, global_batch: int
) -> float:
    """A time no layout on ``grid`` with ``mb`` micro-batches beats (see :func:`pipeline_floor_s`),
    plus, with replicas, the all-reduce of the stage that reduces the most parameters over its
    replicas (at least ``1/S`` of them, less the tied ones, which a stage may reduce with other
    stages instead: ``layout.allreduces_s``) over the fastest of the stage rings."""
    floor = pipeline_floor_s(cm, grid, mb, global_batch)
    stages = len(grid[0])
    if len(grid) > 1:
        tied = sum(t.bytes for t in cm.blocks.ties)
        params = (sum(cm.blocks.param_bytes) - tied) / stages
        floor += min(cm.allreduce_s(tuple(row[s] for row in grid), params) for s in range(stages))
    return floor


def work_floor_s(cm: CostModel, row: tuple[Device, ...], mb: int, global_batch: int) -> float:
    """A time no single pipeline on ``row`` with ``mb`` micro-batches (of the whole batch) beats,
    with either schedule: the busiest stage's device runs every micro-batch's forward and
    backward, at least ``1/S`` of the model's forward and backward, and the first micro-batch
    passes every block forward and back; each block costs at least its price on the row's device
    where it is cheapest (a stage that recomputes only adds): with ``W = Σ_k min_d (f_k(d) +
    b_k(d))`` at the micro-batch ``ceil(B / mb)``, ``max(W, mb · W / S)``. GPipe's time,
    ``Σ_s (f_s + b_s) + (mb - 1)(max f + max b)``, is at least both, and so is 1F1B's, where each
    device does one thing at a time."""
    m = math.ceil(global_batch / mb)
    speeds = {d.speed: d for d in row}
    key = ("work floor", tuple(sorted(speeds, key=repr)), m)
    per_block = cm.memo.get(key)
    if per_block is None:
        n = cm.blocks.n
        per_block = sum(
            min(cm.fwd_s(d, m, k, k + 1) + cm.bwd_s(d, m, k, k + 1) for d in speeds.values())
            for k in range(n)
        )
        cm.memo[key] = per_block
    return max(per_block, mb * per_block / len(row))


def pipeline_floor_s(
    cm: CostModel, grid: tuple[tuple[Device, ...], ...], mb: int, global_batch: int
) -> float:
    """A time no layout on ``grid`` with ``mb`` micro-batches beats, whatever its partition and
    shares (for either schedule), the largest of:

    - compute: a micro-batch passes every block of its replica (at least ``w_r`` seconds per
      sample, the per-sample work of the whole model on the replica's fastest device) and the
      busiest stage runs ``mb`` micro-batches of at least ``1/S`` of it; with the batch split at
      best, ``max(1, mb/S) / mb * B / sum(1/w_r)``;
    - links: a replica whose stages change node ``c`` times cuts at ``c`` distinct places, so one
      of those links carries ``mb`` micro-batches of at least the ``c``-th smallest activation,
      and the slowest carries ``mb`` of at least the smallest.
    """
    stages, replicas = len(grid[0]), len(grid)
    rates = [min(cm.per_sample_s(d) for d in row) for row in grid]
    floor = 0.0
    if all(w > 0 for w in rates):
        floor = max(1.0, mb / stages) / mb * global_batch / sum(1 / w for w in rates)
    smallest_micro = max(1, math.ceil(global_batch / replicas / mb) if replicas == 1 else 1)
    acts = sorted(cm.activation_bytes(i, smallest_micro) for i in range(1, cm.blocks.n))
    for row in grid:
        hops = [(row[k], row[k + 1]) for k in range(stages - 1) if row[k].node != row[k + 1].node]
        if hops and acts:
            kth = acts[min(len(hops), len(acts)) - 1]
            some_hop = min(cm.send_s(a, b, kth) for a, b in hops)  # one hop carries >= kth
            slowest_hop = max(cm.send_s(a, b, acts[0]) for a, b in hops)
            floor = max(floor, mb * some_hop, mb * slowest_hop)
    return floor


def _best_for(
    cm: CostModel,
    grid: tuple[tuple[Device, ...], ...],
    mb: int,
    global_batch: int,
    options: SearchOptions,
    exact: bool,
    bound: float,
    incumbent: float,
) -> Iterator[tuple[float, Layout]]:
    """Candidates for one grid and micro-batch count: the best GPipe layout, then 1F1B's.
    Partitions whose gradient all-reduce and optimizer step alone, added to ``bound`` (the grid's
    pipeline floor), reach ``incumbent`` (the best time found so far) are not priced."""
    n, R, S = cm.blocks.n, len(grid), len(grid[0])
    ranked: list[tuple[float, tuple[int, ...], Layout]] | None = None
    for schedule in options.schedules:
        if R == 1 and exact:
            m = math.ceil(global_batch / mb)
            # the partitions' times leave out the runtime's own work and the batch's fetch (here
            # its loop priced hot, the least it costs whatever the cut: runtime_s)
            fetch = cm.fetch_s(grid[0], global_batch)
            runtime = cm.runtime_s(grid) + fetch
            front = pareto_partitions(cm, grid[0], mb, m, schedule, incumbent - runtime)
            if not front:
                continue
            if schedule == "gpipe":
                t, bounds, rec = front[0]
                t += cm.runtime_s(grid, bounds, m) + fetch
                yield t, Layout(grid, bounds, mb, (global_batch,), schedule, (rec,))
                continue
            for _, bounds, rec in front[: options.onef1b_candidates]:
                layout = Layout(grid, bounds, mb, (global_batch,), schedule, (rec,))
                work = work_of(cm, layout)
                if work is not None:
                    yield iteration_s(work), layout
            continue
        if exact and math.comb(n - 1, S - 1) <= options.partition_limit:
            if ranked is None:  # every partition with its best shares, by the GPipe time
                ranked = _ranked(cm, grid, mb, global_batch, bound, incumbent)
            if schedule == "gpipe":
                if ranked:
                    yield ranked[0][0], ranked[0][2]
                continue
            pool = [b for _, b, _ in ranked[: options.onef1b_candidates]]
        else:
            weights = [sum(d.apf for d in row) for row in grid]
            micro = tuple(max(1, math.ceil(global_batch * w / sum(weights) / mb)) for w in weights)
            bounds = greedy_bounds(cm, grid, mb, micro, schedule)
            pool = [bounds] if bounds is not None else []
        for bounds in pool:
            limit = incumbent - tail_s(cm, grid, bounds)
            got = best_shares(cm, grid, bounds, mb, schedule, global_batch, limit)
            if got is not None:
                yield got


def _ranked(
    cm: CostModel,
    grid: tuple[tuple[Device, ...], ...],
    mb: int,
    global_batch: int,
    bound: float,
    incumbent: float,
) -> list[tuple[float, tuple[int, ...], Layout]]:
    ranked = []
    for bounds in enumerate_bounds(cm.blocks.n, len(grid[0])):
        tail = tail_s(cm, grid, bounds)
        if bound + tail >= incumbent:
            continue
        got = best_shares(cm, grid, bounds, mb, "gpipe", global_batch, incumbent - tail)
        if got is not None:
            ranked.append((got[0], bounds, got[1]))
    ranked.sort(key=lambda x: x[0])
    return ranked
