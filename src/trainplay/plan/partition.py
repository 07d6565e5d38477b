"""Cutting the blocks into stages for a given arrangement of devices.

Three ways, from exact to fast:

- :func:`pareto_partitions` — one replica: dynamic programming over contiguous partitions. The
  GPipe iteration time ``sum(f+b) + (M-1)·(max f + max b) + max opt`` (stages and links; see
  :mod:`trainplay.plan.simulate`) is not a sum over stages, so each DP state keeps the Pareto set of
  (sum, max f, max b, max opt) over the ways to reach it; the best full partition is then exact.
  A model with tied parameters (:class:`~trainplay.workload.stats.Tie`) adds, after the flush, the
  tie's all-reduce on the stages holding its users: the state also keeps the largest optimizer
  step of those stages, and each full partition is priced with its exact tail. That is exact when
  a tie's all-reduce runs over the same devices in every partition (a tie of the first and the
  last block, as GPT-2's embedding and head: always the first and the last stage).
- :func:`enumerate_bounds` — several replicas: every partition, each with its best batch shares.
- :func:`greedy_bounds` — beyond the exact limits: binary search on the largest stage time with a
  greedy fill (stages in order, each as long as it stays under the cap and fits in memory).

:func:`best_shares` splits the global batch over replicas of unequal speed: the smallest time
``T`` for which the replicas can take the whole batch with every replica at most ``T`` (each
replica's time only grows with its share, so this min-max split is optimal).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator

from trainplay.plan.costs import CostModel, Device
from trainplay.plan.layout import (
    Layout,
    StagePrice,
    pipeline_work,
    price_stage,
    tail_s,
)
from trainplay.plan.simulate import flush_s, gpipe_pipeline_s

__all__ = ["best_shares", "enumerate_bounds", "greedy_bounds", "pareto_partitions"]


class _Node:
    """A partial partition: its GPipe sums and maxima so far, and how it was reached."""

    __slots__ = ("first", "max_b", "max_f", "max_opt", "max_tied", "parent", "recompute", "total")

    def __init__(
        self,
        total: float,
        max_f: float,
        max_b: float,
        max_opt: float,
        parent: _Node | None,
        first: int,
        recompute: bool,
        max_tied: float = 0.0,
    ) -> None:
        self.total, self.max_f, self.max_b, self.max_opt = total, max_f, max_b, max_opt
        self.parent, self.first, self.recompute = parent, first, recompute
        self.max_tied = max_tied
        """The largest optimizer step of a stage holding a tied parameter's user."""

    def objective(self, microbatches: int) -> float:
        return self.total + (microbatches - 1) * (self.max_f + self.max_b) + self.max_opt


def _floor(total: float, max_f: float, max_b: float, max_opt: float, m: int, gpipe: bool) -> float:
    """What any completion of a partial partition with these sums takes at least: the GPipe time
    so far (it only grows), or for 1F1B one micro-batch's path and ``m`` passes of the busiest
    resource so far."""
    if gpipe:
        return total + (m - 1) * (max_f + max_b) + max_opt
    return max(total, m * max(max_f, max_b)) + max_opt


def _prune(nodes: list[_Node]) -> list[_Node]:
    nodes.sort(key=lambda x: (x.total, x.max_f, x.max_b, x.max_opt))
    kept: list[_Node] = []
    for c in nodes:
        if not any(
            k.max_f <= c.max_f
            and k.max_b <= c.max_b
            and k.max_opt <= c.max_opt
            and k.max_tied <= c.max_tied
            for k in kept
        ):
            kept.append(c)
    return kept


def pareto_partitions(
    cm: CostModel,
    row: tuple[Device, ...],
    microbatches: int,
    m: int,
    schedule: str,
    incumbent: float = math.inf,
) -> list[tuple[float, tuple[int, ...], tuple[bool, ...]]]:
    """Every Pareto-optimal partition of the blocks over the stages ``row`` (one replica), as
    (GPipe iteration time, bounds, recompute per stage), best first. Partial partitions that
    cannot beat ``incumbent`` (see :func:`_floor`) are dropped on the way."""
    n, S = cm.blocks.n, len(row)
    if n < S:
        return []
    price: dict[tuple[int, int, int], StagePrice | None] = {}

    def stage(s: int, i: int, j: int) -> StagePrice | None:
        key = (s, i, j)
        if key not in price:
            price[key] = price_stage(
                cm, row[s], i, j, m, stage=s, stages=S, microbatches=microbatches,
                schedule=schedule,
            )  # fmt: skip
        return price[key]

    front: dict[int, list[_Node]] = {}
    for j in range(1, n - S + 2):
        p = stage(0, 0, j)
        if p is not None:
            tied = p.optimizer_s if cm.holds_tie(0, j) else 0.0
            front[j] = [
                _Node(
                    p.fwd_s + p.bwd_s, p.fwd_s, p.bwd_s, p.optimizer_s, None, 0, p.recompute, tied
                )
            ]
    gpipe = schedule == "gpipe"
    for s in range(1, S):
        nxt: dict[int, list[_Node]] = {}
        sends = {i: cm.send_s(row[s - 1], row[s], cm.activation_bytes(i, m)) for i in front}
        rest = _rest_s(cm, row[s + 1 :], m) if gpipe and incumbent < math.inf else None
        for j in range(s + 1, n - (S - 1 - s) + 1):
            cands = []
            for i in range(s, j):
                nodes = front.get(i)
                if nodes is None:
                    continue
                p = stage(s, i, j)
                if p is None:
                    continue
                send = sends[i]
                fwd, bwd, opt = p.fwd_s, p.bwd_s, p.optimizer_s
                holds = cm.holds_tie(i, j)
                busy_f, busy_b = max(fwd, send), max(bwd, send)
                for node in nodes:
                    total = node.total + fwd + bwd + 2 * send
                    max_f, max_b = max(node.max_f, busy_f), max(node.max_b, busy_b)
                    max_opt = max(node.max_opt, opt)
                    if _floor(total, max_f, max_b, max_opt, microbatches, gpipe) >= incumbent:
                        continue
                    if rest is not None:  # the blocks after j still run forward and back
                        ahead = _floor(total + rest[j], max_f, max_b, max_opt, microbatches, True)
                        if ahead * (1 - 1e-9) >= incumbent:
                            continue
                    tied = max(node.max_tied, opt) if holds else node.max_tied
                    cands.append(_Node(total, max_f, max_b, max_opt, node, i, p.recompute, tied))
            if cands:
                nxt[j] = _prune(cands)
        front = nxt
    out = []
    for node in front.get(n, []):
        bounds, recompute = [n], []
        walk: _Node | None = node
        while walk is not None:
            bounds.append(walk.first)
            recompute.append(walk.recompute)
            walk = walk.parent
        cut = tuple(reversed(bounds))
        t = node.objective(microbatches)
        if cm.blocks.ties and S > 1:  # the tail with the ties' all-reduces (module docstring)
            t += tail_s(cm, (row,), cut) - cm.runtime_s((row,), cut) - node.max_opt
        out.append((t, cut, tuple(reversed(recompute))))
    out.sort(key=lambda x: x[0])
    return out


def _rest_s(cm: CostModel, devices: tuple[Device, ...], m: int) -> list[float]:
    """Per block ``j``: blocks ``[j, n)`` forward and back for ``m`` samples, each block on the
    one of ``devices`` where it is cheapest (zero when none is left): what the stages after a
    cut at ``j`` take at least."""
    n = cm.blocks.n
    rest = [0.0] * (n + 1)
    if devices:
        alike = list({d.speed: d for d in devices}.values())
        for k in range(n - 1, -1, -1):
            cheapest = min(cm.fwd_s(d, m, k, k + 1) + cm.bwd_s(d, m, k, k + 1) for d in alike)
            rest[k] = rest[k + 1] + cheapest
    return rest


def enumerate_bounds(n: int, stages: int) -> Iterator[tuple[int, ...]]:
    """Every partition of ``n`` blocks into ``stages`` non-empty contiguous ranges."""
    for cuts in itertools.combinations(range(1, n), stages - 1):
        yield (0, *cuts, n)


def _pipeline_s(
    cm: CostModel,
    row: tuple[Device, ...],
    bounds: tuple[int, ...],
    microbatches: int,
    m: int,
    schedule: str,
) -> tuple[float, tuple[StagePrice, ...]] | None:
    """One replica's flush time (closed form for GPipe, simulated for 1F1B) and stage prices,
    memoised by the replica's devices, the bounds, micro-batches and schedule: a row of devices
    recurs in many grids."""
    # the ids name the links; the speeds tell a device apart from itself recalibrated
    key = ("pipeline", tuple((d.id, d.stage_key) for d in row), bounds, microbatches, m, schedule)
    memo = cm.memo
    if key in memo:
        return memo[key]
    got = pipeline_work(cm, row, bounds, m, microbatches=microbatches, schedule=schedule)
    if got is None:
        memo[key] = None
        return None
    work, prices = got
    if schedule == "gpipe":
        memo[key] = gpipe_pipeline_s(work, microbatches), prices
    else:
        flush = flush_s(work.fwd_s, work.bwd_s, work.send_s, schedule, microbatches)
        memo[key] = work.fetch_s + flush, prices  # the fetch delays every stage alike
    return memo[key]


def best_shares(
    cm: CostModel,
    grid: tuple[tuple[Device, ...], ...],
    bounds: tuple[int, ...],
    microbatches: int,
    schedule: str,
    global_batch: int,
    limit: float = math.inf,
) -> tuple[float, Layout] | None:
    """The batch split over the replicas of ``grid`` that minimises the iteration time, with that
    time; ``None`` when no split fits (every replica needs at least one sample per micro-batch),
    or when no split brings the pipelines under ``limit`` seconds."""
    R, M = len(grid), microbatches
    if global_batch < R * M or global_batch % M:
        return None  # shares are multiples of M: every micro-batch of a replica has one size
    top = math.ceil((global_batch - (R - 1) * M) / M)  # largest micro-batch any replica can get
    memo: dict[tuple[int, int], tuple[float, tuple[StagePrice, ...]] | None] = {}

    def g(r: int, k: int) -> float:
        if (r, k) not in memo:
            memo[(r, k)] = _pipeline_s(cm, grid[r], bounds, M, k, schedule)
        got = memo[(r, k)]
        return math.inf if got is None else got[0]

    if limit < math.inf:  # can the replicas take the batch within ``limit`` at all?
        room = 0
        for r in range(R):
            lo, hi = 0, top
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if g(r, mid) < limit else (lo, mid - 1)
            room += M * lo
        if room < global_batch:
            return None
    # Greedy: grow the micro-batch of the replica whose next size is quickest. Each replica's
    # time only grows with its size, so the largest time picked is the smallest possible maximum.
    caps = [1] * R
    if any(g(r, 1) == math.inf for r in range(R)):
        return None
    heap = [(g(r, 2) if top >= 2 else math.inf, r) for r in range(R)]
    heapq.heapify(heap)
    while M * sum(caps) < global_batch:
        t, r = heapq.heappop(heap)
        if t == math.inf:
            return None
        caps[r] += 1
        heapq.heappush(heap, (g(r, caps[r] + 1) if caps[r] < top else math.inf, r))
    shares = [M * k for k in caps]
    excess = sum(shares) - global_batch
    for r in sorted(range(R), key=lambda r: -g(r, caps[r])):
        cut = min(excess, shares[r] - M)
        shares[r] -= cut
        excess -= cut
    ks = [math.ceil(x / M) for x in shares]
    pipe = max(g(r, ks[r]) for r in range(R))
    prices = [memo[(r, ks[r])] for r in range(R)]
    recompute = tuple(tuple(sp.recompute for sp in p[1]) for p in prices if p is not None)
    tail = tail_s(cm, grid, bounds)
    layout = Layout(grid, bounds, M, tuple(shares), schedule, recompute)
    return pipe + tail, layout


def greedy_bounds(
    cm: CostModel,
    grid: tuple[tuple[Device, ...], ...],
    microbatches: int,
    micro: tuple[int, ...],
    schedule: str,
) -> tuple[int, ...] | None:
    """Stage boundaries minimising the largest stage time (forward + backward of one micro-batch,
    slowest replica) by bisection on the cap; ``micro`` is each replica's micro-batch size."""
    n, S = cm.blocks.n, len(grid[0])
    if n < S:
        return None

    columns = [  # replicas whose stage device and micro-batch are alike cost alike
        sorted({(row[s].speed, row[s].mem_bytes, micro[r]): (row[s], micro[r])
                for r, row in enumerate(grid)}.values(), key=lambda x: x[1])
        for s in range(S)
    ]  # fmt: skip

    taus: dict[tuple[int, int, int], float] = {}

    def tau(s: int, i: int, j: int) -> float:
        key = (s, i, j)
        if key not in taus:
            taus[key] = _tau(s, i, j)
        return taus[key]

    def _tau(s: int, i: int, j: int) -> float:
        worst = 0.0
        for device, m in columns[s]:
            p = price_stage(
                cm, device, i, j, m, stage=s, stages=S, microbatches=microbatches,
                schedule=schedule,
            )  # fmt: skip
            if p is None:
                return math.inf
            worst = max(worst, p.fwd_s + p.bwd_s)
        return worst

    def fill(cap: float) -> tuple[int, ...] | None:
        bounds, i = [0], 0
        for s in range(S):
            last = n - (S - 1 - s)  # leave a block for every later stage
            if s == S - 1:
                j = n if tau(s, i, n) <= cap and tau(s, i, n) < math.inf else None
            else:
                j = None
                lo, hi = i + 1, last  # largest j with tau(s, i, j) <= cap (tau grows with j)
                while lo <= hi:
                    mid = (lo + hi) // 2
                    t = tau(s, i, mid)
                    if t <= cap and t < math.inf:
                        j, lo = mid, mid + 1
                    else:
                        hi = mid - 1
            if j is None:
                return None
            bounds.append(j)
            i = j
        return tuple(bounds)

    widest = fill(math.inf)  # memory alone
    if widest is None:
        return None
    lo, hi = 0.0, max(tau(s, widest[s], widest[s + 1]) for s in range(S))
    for _ in range(30):  # to 1e-9 of the widest stage time
        mid = (lo + hi) / 2
        if fill(mid) is not None:
            hi = mid
        else:
            lo = mid
    return fill(hi)
