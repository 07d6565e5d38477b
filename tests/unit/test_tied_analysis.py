"""A tied parameter (GPT-2's embedding is its output projection) split over pipeline stages:
``analyze`` prices its copy and its all-reduce as the planner does (one cost model)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from trainplay.hardware import load_cluster
from trainplay.plan.api import block_costs
from trainplay.plan.costs import CostModel, devices_of
from trainplay.plan.layout import allreduces_s
from trainplay.roofline import cost
from trainplay.roofline.analysis import analyze
from trainplay.roofline.layout import Parallel
from trainplay.workload import profile
from trainplay.workload.stats import Tie, WorkloadProfile

TINY = "tests.data.tiny_models:tiny_decoder"
TIED = 64 * 32 * 4  # the 64 x 32 fp32 embedding
CLUSTER = Path(__file__).parent.parent / "data" / "clusters" / "four-small.yaml"


@pytest.fixture(scope="module")
def tiny() -> WorkloadProfile:
    return profile(TINY, batch_size=4, seq_len=16, vocab_size=64, loss=True)


def test_the_profile_records_the_tie(tiny):
    assert tiny.ties == (Tie("embed.tokens.weight", TIED, (0, 3)),)
    assert WorkloadProfile.from_json(tiny.to_json()).ties == tiny.ties
    # counted once, in the embedding
    assert tiny.layers[0].param_bytes >= TIED > tiny.layers[-1].param_bytes


def test_one_stage_is_priced_as_without_the_tie(tiny):
    cluster = load_cluster(CLUSTER)
    for parallel in (Parallel(), Parallel(dp=2)):
        with_tie = analyze(tiny, cluster, parallel).iteration
        without = analyze(replace(tiny, ties=()), cluster, parallel).iteration
        assert with_tie.predicted_s == without.predicted_s


@pytest.mark.parametrize("dp", [1, 2])
def test_two_stages_reduce_the_tie_as_the_planner_does(tiny, dp):
    cluster = load_cluster(CLUSTER)
    parallel = Parallel(dp=dp, pp=2)
    with_tie = analyze(tiny, cluster, parallel)
    without = analyze(replace(tiny, ties=()), cluster, parallel)
    assert with_tie.layers[0].stage == 0 and with_tie.layers[-1].stage == 1
    cm = CostModel(block_costs(TINY, seq_len=16, vocab_size=64), cluster, "sgd")
    a, b, c, d = devices_of(cluster, "fp32")
    grid = ((a, b),) if dp == 1 else ((a, b), (c, d))
    bounds = (0, *[i for i in range(1, 4) if with_tie.layers[i].stage == 1][:1], 4)
    # the tie's own ring follows the stages' own all-reduces: the exposed communication grows by
    # what it adds to the planner's all-reduces of the same layout
    untied = CostModel(replace(cm.blocks, ties=()), cm.cluster, cm.optimizer)
    added = max(allreduces_s(cm, grid, bounds)) - max(allreduces_s(untied, grid, bounds))
    assert added > 0
    grown = with_tie.iteration.exposed_comm_s - without.iteration.exposed_comm_s
    assert grown == pytest.approx(added, rel=1e-9)
    # shown on the head, which holds the copy (the embedding's own all-reduce shrinks by the tie)
    assert with_tie.layers[-1].exposed_comm_s > without.layers[-1].exposed_comm_s
    per_layer = sum(x.exposed_comm_s for x in with_tie.layers)
    assert per_layer - sum(x.exposed_comm_s for x in without.layers) == pytest.approx(
        added, rel=1e-9
    )


def test_the_ring_is_the_planners_ring(tiny):
    cluster = load_cluster(CLUSTER)
    cm = CostModel(block_costs(TINY, seq_len=16, vocab_size=64), cluster, "sgd")
    a, b, _, _ = devices_of(cluster, "fp32")
    ring = cm.allreduce_s((a, b), TIED)
    intra = cluster.nodes[0].intra_link
    link = cost.link_allreduce_s(
        cost.master_bytes(TIED, "fp32"), 2, intra.bandwidth_bps, intra.latency_s
    )
    assert ring == pytest.approx(link + cost.reducer_s(TIED, a.priced()), rel=1e-12)
