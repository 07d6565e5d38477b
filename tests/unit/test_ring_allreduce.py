"""One all-reduce rule for ``analyze`` and the planner: each stage's data-parallel ring is its own
replicas, each to the next (``roofline.cost.ring_allreduce_s``), whichever path prices it."""

from __future__ import annotations

import pytest

from trainplay.hardware.cluster import parse_cluster
from trainplay.hardware.spec import Peaks
from trainplay.plan.api import block_costs
from trainplay.plan.costs import CostModel, devices_of
from trainplay.plan.layout import allreduces_s
from trainplay.roofline import cost
from trainplay.roofline.analysis import _grid as worker_rows
from trainplay.roofline.analysis import analyze
from trainplay.roofline.layout import Parallel
from trainplay.roofline.predict import Grid, _cut_s, _ring_s, stage_ring
from trainplay.workload import profile

TINY = "tests.data.tiny_models:tiny_decoder"
SMALL = {"name": "small", "peak_flops": {"fp32": 1e9}, "mem_bw_bps": 1e9, "mem_bytes": 2**30}
FAST, SLOW = (1e9, 1e-5), (1e7, 1e-3)
# ranks 0-2 on node a, rank 3 on node b; dp=2 x pp=2 puts replica 0 on ranks 0, 1 and replica 1
# on ranks 2, 3: stage 0's ring (0, 2) stays on node a, stage 1's (1, 3) crosses to node b
UNEVEN = {
    "name": "uneven",
    "nodes": [
        {"name": "a", "devices": [{**SMALL, "count": 3}],
         "intra_link": {"bandwidth_bps": FAST[0], "latency_s": FAST[1]}},
        {"name": "b", "devices": [{**SMALL, "count": 1}],
         "intra_link": {"bandwidth_bps": FAST[0], "latency_s": FAST[1]}},
    ],
    "inter_link": {"bandwidth_bps": SLOW[0], "latency_s": SLOW[1]},
}  # fmt: skip


def _grid(cluster, dp: int, pp: int) -> Grid:
    rows = worker_rows(cluster, Parallel(dp=dp, pp=pp))  # analyze's layout of ranks
    return Grid(
        tuple(tuple(rows[r]) for r in range(dp)),
        tuple(tuple(w.peaks() for w in rows[r]) for r in range(dp)),
    )


def test_each_stage_is_priced_on_its_own_ring_as_the_planner_prices_it():
    cluster = parse_cluster(UNEVEN)
    cm = CostModel(block_costs(TINY, seq_len=16, vocab_size=64), cluster, "sgd")
    a0, a1, a2, b0 = devices_of(cluster, "fp32")
    grid = _grid(cluster, 2, 2)
    nbytes = 1e6
    inside = _ring_s(cluster, stage_ring(grid, 0), nbytes)
    across = _ring_s(cluster, stage_ring(grid, 1), nbytes)
    assert inside == pytest.approx(cm.allreduce_s((a0, a2), nbytes), rel=1e-12)
    assert across == pytest.approx(cm.allreduce_s((a1, b0), nbytes), rel=1e-12)
    reducer = cost.reducer_s(nbytes, a0.priced())
    assert inside == pytest.approx(reducer + cost.link_allreduce_s(nbytes, 2, *FAST), rel=1e-12)
    assert across == pytest.approx(reducer + cost.link_allreduce_s(nbytes, 2, *SLOW), rel=1e-12)


def test_analyze_exposes_the_planners_all_reduce_and_the_slower_replicas_cut():
    cluster = parse_cluster(UNEVEN)
    tiny = profile(TINY, batch_size=4, seq_len=16, vocab_size=64, loss=True)
    cm = CostModel(block_costs(TINY, seq_len=16, vocab_size=64), cluster, "sgd")
    a0, a1, a2, b0 = devices_of(cluster, "fp32")
    pipelined = analyze(tiny, cluster, Parallel(dp=2, pp=2, microbatches=1))
    alone = analyze(tiny, cluster, Parallel(dp=1, pp=2, microbatches=1))  # replica 0 only
    stages = [x.stage for x in pipelined.layers]
    assert stages == [x.stage for x in alone.layers]
    bounds = (0, stages.index(1), len(stages))
    # replicas run in lock step: replica 1's cut crosses nodes (ranks 2 -> 3), replica 0's does
    # not (0 -> 1), and the pipeline waits for the slower; then the planner's all-reduces
    grid = _grid(cluster, 2, 2)
    nbytes = tiny.layers[bounds[1] - 1].activation_bytes
    slow_cut = _cut_s(cluster, (grid.workers[1][0], grid.peaks[1][0]),
                      (grid.workers[1][1], grid.peaks[1][1]), nbytes)  # fmt: skip
    fast_cut = _cut_s(cluster, (grid.workers[0][0], grid.peaks[0][0]),
                      (grid.workers[0][1], grid.peaks[0][1]), nbytes)  # fmt: skip
    assert slow_cut > 10 * fast_cut
    added = pipelined.iteration.exposed_comm_s - alone.iteration.exposed_comm_s
    # (the tied embedding's ring is there in both: over replica 0's stages, then over all four)
    planner = max(allreduces_s(cm, ((a0, a1), (a2, b0)), bounds))
    planner_alone = max(allreduces_s(cm, ((a0, a1),), bounds))
    assert planner > 10 * planner_alone > 0
    assert added == pytest.approx(planner - planner_alone + slow_cut - fast_cut, rel=1e-9)


def test_a_measured_bus_bandwidth_prices_the_ring_without_links():
    peaks = Peaks(apf=1e9, apm=1e9, apb=2e8, alpha_s=1e-4, origin="given")

    def no_links():
        raise AssertionError("links are asked only when a member lacks a measurement")

    got = cost.ring_allreduce_s(1e6, [peaks, peaks, peaks], no_links)
    reducer = cost.reducer_s(1e6, peaks)
    assert got == pytest.approx(reducer + 1e-4 + 2 * 2 / 3 * 1e6 / 2e8, rel=1e-12)
    assert cost.ring_allreduce_s(1e6, [peaks], no_links) == 0.0
