"""The TNP search against brute force: on small random heterogeneous clusters and models, the
planner's iteration time equals the best of every plan in the space, priced by the same cost model.

The brute force shares no search code with the planner: it lists every grid of distinct devices
(all orders, no symmetry), every contiguous partition, every micro-batch count and every split of
the batch into multiples of it, and prices each with :func:`layout.work_of` and :func:`simulate.iteration_s`.
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainplay.hardware.cluster import parse_cluster
from trainplay.plan.costs import AFFINE_KEYS, BlockCosts, CostModel, devices_of
from trainplay.plan.layout import Layout, work_of
from trainplay.plan.search import SearchOptions, lower_bound_s, microbatch_candidates, search
from trainplay.plan.simulate import iteration_s
from trainplay.workload.stats import Tie

GIB = 2**30


def blocks_of(rows: list[tuple[float, float, float, float]], tied: float = 0.0) -> BlockCosts:
    """Blocks from (flops per sample, bytes per sample, activation bytes per sample, param bytes);
    ``tied`` of the first block's parameter bytes used by the last block too (GPT-2's embedding
    and head)."""
    n = len(rows)
    ties = (Tie("tied", int(tied * rows[0][3]), (0, n - 1)),) if tied and n > 1 else ()
    fixed = {k: tuple(0.0 for _ in rows) for k in AFFINE_KEYS}
    fixed["fwd_bytes"] = tuple(r[3] for r in rows)  # each micro-batch reads the weights
    fixed["bwd_bytes"] = tuple(2 * r[3] for r in rows)
    per = {
        "fwd_flops": tuple(r[0] for r in rows),
        "bwd_flops": tuple(2 * r[0] for r in rows),
        "fwd_bytes": tuple(r[1] for r in rows),
        "bwd_bytes": tuple(2 * r[1] for r in rows),
        "activation_bytes": tuple(r[2] for r in rows),
        "saved_bytes": tuple(1.5 * r[2] for r in rows),
    }
    return BlockCosts(
        model="synthetic",
        dtype="fp32",
        names=tuple(f"b{i}" for i in range(n)),
        fixed=fixed,
        per_sample=per,
        param_bytes=tuple(int(r[3]) for r in rows),
        input_bytes_per_sample=1e5,
        ties=ties,
    )


KINDS = {  # (FLOP/s, bytes/s, memory bytes): an old, a mid and a new card (numbers invented)
    "old": (8e12, 300e9, 1 * GIB),
    "mid": (15e12, 900e9, 2 * GIB),
    "new": (60e12, 2e12, 4 * GIB),
}


def cluster_of(nodes: list[list[str]]):
    spec = {
        "name": "random",
        "nodes": [
            {
                "name": f"n{k}",
                "devices": [
                    {
                        "name": f"{kind}",
                        "peak_flops": {"fp32": KINDS[kind][0]},
                        "mem_bw_bps": KINDS[kind][1],
                        "mem_bytes": KINDS[kind][2],
                        "count": kinds.count(kind),
                    }
                    for kind in sorted(set(kinds))
                ],
                "intra_link": {"bandwidth_bps": 50e9, "latency_s": 5e-6},
            }
            for k, kinds in enumerate(nodes)
        ],
        "inter_link": {"bandwidth_bps": 3e9, "latency_s": 2e-5},
    }
    return parse_cluster(spec)


def compositions(total: int, parts: int, least: int):
    if parts == 1:
        if total >= least:
            yield (total,)
        return
    for first in range(least, total - least * (parts - 1) + 1):
        for rest in compositions(total - first, parts - 1, least):
            yield (first, *rest)


def brute_force(cm: CostModel, devices, global_batch: int, largest_mb: int) -> float:
    n, best = cm.blocks.n, math.inf
    for R in range(1, len(devices) + 1):
        for S in range(1, min(len(devices) // R, n) + 1):
            for picked in itertools.permutations(devices, R * S):
                grid = tuple(tuple(picked[r * S : (r + 1) * S]) for r in range(R))
                for cuts in itertools.combinations(range(1, n), S - 1):
                    bounds = (0, *cuts, n)
                    for mb in microbatch_candidates(global_batch, R, largest_mb):
                        units = compositions(global_batch // mb, R, 1)
                        for shares in (tuple(mb * u for u in c) for c in units):
                            layout = Layout(grid, bounds, mb, shares, "gpipe", ((None,) * S,) * R)
                            work = work_of(cm, layout)
                            if work is not None:
                                best = min(best, iteration_s(work))
    return best


def space(n_devices: int, n_blocks: int, batch: int) -> int:
    total = 0
    for R in range(1, n_devices + 1):
        for S in range(1, min(n_devices // R, n_blocks) + 1):
            total += math.perm(n_devices, R * S) * math.comb(n_blocks - 1, S - 1) * batch**R
    return total


@st.composite
def problems(draw):
    n_devices = draw(st.integers(1, 6))
    n_blocks = draw(st.integers(1, 24))
    batch = draw(st.integers(1, 8))
    while space(n_devices, n_blocks, batch) > 40_000 and n_blocks > 1:
        n_blocks = max(1, n_blocks // 2)
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=n_devices, max_size=n_devices))
    split = draw(st.integers(0, n_devices - 1)) if n_devices > 1 else 0
    nodes = [kinds[: split or n_devices], kinds[split:]] if split else [kinds]
    row = st.tuples(
        st.floats(1e8, 2e10),  # FLOPs per sample
        st.floats(1e6, 2e8),  # bytes per sample
        st.floats(1e5, 5e7),  # activation bytes per sample
        st.floats(1e6, 3e8),  # parameter bytes
    )
    rows = draw(st.lists(row, min_size=n_blocks, max_size=n_blocks))
    optimizer = draw(st.sampled_from(["sgd", "adam"]))
    tied = draw(st.sampled_from([0.0, 0.5, 1.0]))  # a share of the first block's parameters
    return nodes, rows, batch, optimizer, tied


def _work_of_search(cm, devices, batch, options):
    found = search(cm, devices, batch, options)
    if found is not None:
        work = work_of(cm, found.layout)
        assert work is not None
        assert iteration_s(work) == pytest.approx(found.time_s, rel=1e-9)
    return found


EXAMPLES = int(os.environ.get("TRAINPLAY_PLAN_EXAMPLES", "40"))
"""Random problems per run; ``TRAINPLAY_PLAN_EXAMPLES=2000`` for a long check."""


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_search_equals_brute_force_for_gpipe(problem):
    nodes, rows, batch, optimizer, tied = problem
    cm = CostModel(blocks_of(rows, tied), cluster_of(nodes), optimizer)
    devices = devices_of(cm.cluster, "fp32")
    options = SearchOptions(schedules=("gpipe",), max_microbatches=8)
    found = _work_of_search(cm, devices, batch, options)
    expected = brute_force(cm, devices, batch, 8)
    if expected == math.inf:
        assert found is None
        return
    assert found is not None and found.exact
    assert found.time_s == pytest.approx(expected, rel=1e-9)
    with_1f1b = _work_of_search(cm, devices, batch, replace(options, schedules=("gpipe", "1f1b")))
    assert with_1f1b is not None and with_1f1b.time_s <= found.time_s * (1 + 1e-12)


@settings(max_examples=25, deadline=None)
@given(problems())
def test_lower_bound_never_exceeds_a_priced_layout(problem):
    nodes, rows, batch, optimizer, tied = problem
    cm = CostModel(blocks_of(rows, tied), cluster_of(nodes), optimizer)
    devices = devices_of(cm.cluster, "fp32")
    for schedule in ("gpipe", "1f1b"):
        found = search(cm, devices, batch, SearchOptions(schedules=(schedule,), max_microbatches=8))
        if found is None:
            continue
        layout = found.layout
        bound = lower_bound_s(cm, layout.grid, layout.microbatches, batch)
        assert bound <= found.time_s * (1 + 1e-9)


def test_heavy_first_block_goes_to_the_fast_device():
    # Block 0 costs 10x the others; a new card and an old one on one node: the DP must put the
    # heavy block on the new card, whatever order the cluster lists them in.
    rows = [(2e10, 1e6, 1e5, 1e6)] + [(2e9, 1e6, 1e5, 1e6)] * 5
    cm = CostModel(blocks_of(rows), cluster_of([["old", "new"]]), "sgd")
    devices = devices_of(cm.cluster, "fp32")
    found = search(cm, devices, 8, SearchOptions(schedules=("gpipe",)))
    assert found is not None
    layout = found.layout
    first_stage = [row[0] for row in layout.grid]
    assert all(d.type == "new" for d in first_stage) or layout.stages == 1


def test_uneven_shares_follow_speed():
    # Data parallel over a new and an old card (the model fits either): the faster one takes more.
    rows = [(5e9, 1e6, 1e5, 1e5)] * 4
    cm = CostModel(blocks_of(rows), cluster_of([["old", "new"]]), "sgd")
    devices = devices_of(cm.cluster, "fp32")
    found = search(cm, devices, 64, SearchOptions(schedules=("gpipe",)))
    assert found is not None and found.layout.replicas == 2
    shares = dict(zip((row[0].type for row in found.layout.grid), found.layout.shares, strict=True))
    assert shares["new"] > 3 * shares["old"]
