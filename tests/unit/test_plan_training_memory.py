"""What training holds beyond the profile (tied copies, the loss), and the plan's figure per stage."""

from __future__ import annotations

import pytest

from tests.data.tiny_models import tiny_decoder
from trainplay.hardware.cluster import parse_cluster
from trainplay.plan.api import block_costs, make_plan
from trainplay.plan.costs import CostModel, devices_of
from trainplay.plan.layout import memory_of
from trainplay.plan.memory import stage_bytes, with_training_memory
from trainplay.plan.search import SearchOptions, search
from trainplay.workload import profile
from trainplay.workload.decoder import Decoder

TINY = "tests.data.tiny_models:tiny_decoder"


def test_the_tied_copy_and_the_loss_are_added():
    costs = block_costs(TINY, seq_len=16, vocab_size=64)
    plain = profile(TINY, batch_size=2, seq_len=16, vocab_size=64)
    assert isinstance(tiny_decoder(), Decoder)
    # the head holds its norm (2 x 32 fp32) and, when on another stage than the embedding, a copy
    # of the 64 x 32 tied embedding
    assert plain.layers[-1].param_bytes == 2 * 32 * 4
    assert costs.param_bytes[-1] == 2 * 32 * 4 + 64 * 32 * 4
    assert costs.param_bytes[:3] == tuple(x.param_bytes for x in plain.layers[:3])
    # per sample the profile counts the loss's fp32 log-softmax of the 16 x 64 logits, and the
    # last stage also keeps the logits themselves for the backward: 4096 bytes more
    logits = 16 * 64 * 4
    assert costs.per_sample["activation_bytes"][-1] == pytest.approx(logits)
    plain = profile(TINY, batch_size=2, seq_len=16, vocab_size=64, loss=True).layers[-1]
    again = profile(TINY, batch_size=4, seq_len=16, vocab_size=64, loss=True).layers[-1]
    assert costs.per_sample["saved_bytes"][-1] == pytest.approx(
        (again.saved_bytes - plain.saved_bytes) / 2 + logits
    )
    with pytest.raises(ValueError, match="tied_bytes has 3 entries for 4 blocks"):
        with_training_memory(costs, (0, 0, 0), costs.largest_param_bytes)
    # each block's largest parameter: the 64 x 32 embedding (and its copy in the head), the
    # layers' 96 x 32 query-key-value projection
    assert costs.largest_param_bytes == (64 * 32 * 4, 96 * 32 * 4, 96 * 32 * 4, 64 * 32 * 4)


def test_bf16_loss_keeps_bf16_logits_and_fp32_log_softmax():
    costs = block_costs(TINY, dtype="bf16", seq_len=16, vocab_size=64)
    again = with_training_memory(costs, (0,) * 4, costs.largest_param_bytes)
    # per sample: the 16 x 64 logits kept in bf16 (2 bytes), and the log-softmax's fp32 (4 bytes)
    # beyond the bf16 (2 bytes) the profile counted
    added = again.per_sample["saved_bytes"][-1] - costs.per_sample["saved_bytes"][-1]
    assert added == pytest.approx(16 * 64 * (2 + 4 - 2))


CLUSTER = {
    "name": "four",
    "nodes": [
        {
            "name": "n",
            "devices": [
                {
                    "name": "small",
                    "peak_flops": {"fp32": 1e9},
                    "mem_bw_bps": 1e9,
                    "mem_bytes": 2**30,
                    "count": 4,
                }
            ],
            "intra_link": {"bandwidth_bps": 1e9, "latency_s": 1e-4},
        }
    ],
}


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_stage_bytes_is_the_planners_own_figure(schedule):
    costs = block_costs(TINY, seq_len=16, vocab_size=64)
    cluster = parse_cluster(CLUSTER)
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
