"""What training holds beyond the profile (tied copies, the loss), and the plan's figure per stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.data.tiny_models import tiny_decoder
from trainplay.hardware import load_cluster
from trainplay.plan.api import block_costs, make_plan
from trainplay.plan.costs import BlockCosts, CostModel, devices_of
from trainplay.plan.layout import Layout, allreduces_s, memory_of, work_of
from trainplay.plan.memory import stage_bytes, with_training_memory
from trainplay.plan.search import SearchOptions, search
from trainplay.workload import profile
from trainplay.workload.decoder import Decoder
from trainplay.workload.stats import Tie

TINY = "tests.data.tiny_models:tiny_decoder"


def test_the_tied_copy_and_the_loss_are_added():
    costs = block_costs(TINY, seq_len=16, vocab_size=64)
    plain = profile(TINY, batch_size=2, seq_len=16, vocab_size=64)
    assert isinstance(tiny_decoder(), Decoder)
    # the profile counts the 64 x 32 tied embedding once, in the embedding; the head holds its norm
    # (2 x 32 fp32) and, on another stage than the embedding, a copy of the embedding
    assert costs.param_bytes == tuple(x.param_bytes for x in plain.layers)
    assert costs.ties == (Tie("embed.tokens.weight", 64 * 32 * 4, (0, 3)),)
    assert plain.ties == costs.ties  # the profiler records it
    cm = CostModel(costs, load_cluster(CLUSTER), "adam")
    total = sum(x.param_bytes for x in plain.layers)
    assert cm.range_sum("param_bytes", 1, 0, 4) == total  # one stage: one embedding
    assert cm.range_sum("param_bytes", 1, 3, 4) == 2 * 32 * 4 + 64 * 32 * 4  # the head's copy
    assert cm.range_sum("param_tensors", 1, 3, 4) == plain.layers[-1].param_tensors + 1
    assert cm.range_sum("param_bytes", 1, 0, 3) == total - 2 * 32 * 4
    # what a stage reduces over its own replicas: the tied embedding only when it holds every user
    assert cm.own_param_bytes(0, 4) == total
    assert cm.own_param_bytes(0, 3) == total - 2 * 32 * 4 - 64 * 32 * 4
    assert cm.own_param_bytes(3, 4) == 2 * 32 * 4
    # per sample the profile counts the loss's fp32 log-softmax of the 16 x 64 logits, and the
    # last stage also keeps the logits themselves for the backward: 4096 bytes more
    logits = 16 * 64 * 4
    assert costs.per_sample["activation_bytes"][-1] == pytest.approx(logits)
    plain = profile(TINY, batch_size=2, seq_len=16, vocab_size=64, loss=True).layers[-1]
    again = profile(TINY, batch_size=4, seq_len=16, vocab_size=64, loss=True).layers[-1]
    assert costs.per_sample["saved_bytes"][-1] == pytest.approx(
        (again.saved_bytes - plain.saved_bytes) / 2 + logits
    )
    with pytest.raises(ValueError, match="largest_param_bytes has 3 entries for 4 blocks"):
        with_training_memory(costs, (0, 0, 0))
    # each block's largest parameter: the 64 x 32 embedding (and its copy in the head), the
    # layers' 96 x 32 query-key-value projection
    assert costs.largest_param_bytes == (64 * 32 * 4, 96 * 32 * 4, 96 * 32 * 4, 64 * 32 * 4)
    assert BlockCosts.from_dict(json.loads(json.dumps(costs.to_dict()))) == costs


def test_the_tied_gradient_is_summed_over_the_stages_that_hold_it():
    # as trainplay train's runner does: each stage's own parameters over its replicas, then the
    # tied embedding over every rank of the two stages, once both are done
    cluster = load_cluster(CLUSTER)
    cm = CostModel(block_costs(TINY, seq_len=16, vocab_size=64), cluster, "adam")
    a, b, c, d = devices_of(cluster, "fp32")
    tied = 64 * 32 * 4
    one = allreduces_s(cm, ((a, b),), (0, 2, 4))
    assert one == (cm.allreduce_s((a, b), tied),) * 2 and one[0] > 0
    two = allreduces_s(cm, ((a, b), (c, d)), (0, 2, 4))
    first = cm.allreduce_s((a, c), cm.own_param_bytes(0, 2))
    second = cm.allreduce_s((b, d), cm.own_param_bytes(2, 4))
    assert two == (max(first, second) + cm.allreduce_s((a, c, b, d), tied),) * 2
    # on one stage the embedding is reduced with the rest, once
    assert allreduces_s(cm, ((a,), (c,)), (0, 4)) == (
        cm.allreduce_s((a, c), cm.range_sum("param_bytes", 1, 0, 4)),
    )
    assert allreduces_s(cm, ((a,),), (0, 4)) == (0.0,)
    # the iteration ends after them (and each stage's optimizer step)
    layout = Layout(((a, b),), (0, 2, 4), 1, (4,), "gpipe", ((False, False),))
    work = work_of(cm, layout)
    assert work is not None and work.allreduce_s == one


def test_bf16_loss_keeps_bf16_logits_and_fp32_log_softmax():
    costs = block_costs(TINY, dtype="bf16", seq_len=16, vocab_size=64)
    again = with_training_memory(costs, costs.largest_param_bytes)
    # per sample: the 16 x 64 logits kept in bf16 (2 bytes), and the log-softmax's fp32 (4 bytes)
    # beyond the bf16 (2 bytes) the profile counted
    added = again.per_sample["saved_bytes"][-1] - costs.per_sample["saved_bytes"][-1]
    assert added == pytest.approx(16 * 64 * (2 + 4 - 2))


CLUSTER = Path(__file__).parent.parent / "data" / "clusters" / "four-small.yaml"


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_stage_bytes_is_the_planners_own_figure(schedule):
    costs = block_costs(TINY, seq_len=16, vocab_size=64)
    cluster = load_cluster(CLUSTER)
    cm = CostModel(costs, cluster, "adam")
    devices = devices_of(cluster, "fp32")
    found = search(cm, devices, 8, SearchOptions(schedules=(schedule,), microbatches=2))
    plan, layout = make_plan(cm, found.layout, costs.names)
    memory = memory_of(cm, layout)
    for s, stage in enumerate(plan.stages):
        for r, device in enumerate(stage.devices):
            assert stage_bytes(cm, plan, s, r).total_bytes == pytest.approx(
                memory[device].total_bytes, rel=1e-12
            )
