"""What makes the planner fast must not change what it finds: repeated blocks priced once give the
same times as pricing every block, the single-pipeline floor the search skips by is never above
a priced layout, and a parameter layout read back from the cache equals the counted one."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings

from tests.unit.test_plan_search import blocks_of, cluster_of, problems
from trainplay.plan.costs import AffineOp, CostModel, devices_of
from trainplay.plan.layout import Layout, price_stage, work_of
from trainplay.plan.search import microbatch_candidates, work_floor_s
from trainplay.plan.simulate import iteration_s
from trainplay.roofline import cost
from trainplay.workload.chain import cached_parameter_layout, parameter_layout, structure
from trainplay.workload.zoo import ModelSource, resolve_model


def _layer(flops: float) -> tuple[AffineOp, ...]:
    return (
        AffineOp("gemm", "fwd", "aten.mm", (0.0, flops), (4e6, 1e5), 3),
        AffineOp("elementwise", "fwd", "aten.add", (0.0, 1e3), (0.0, 2e5), 2),
        AffineOp("gemm", "bwd", "aten.mm", (0.0, 2 * flops), (8e6, 2e5), 3),
    )


def test_repeated_blocks_are_priced_once_at_the_same_times():
    blocks = blocks_of([(1e9, 1e6, 1e5, 1e6)] * 6)
    layer, other = _layer(3e9), _layer(5e8)
    ops = (other, layer, layer, other, layer, layer)
    cm = CostModel(replace(blocks, ops=ops), cluster_of([["mid"]]))
    distinct, kinds = cm._kinds
    assert len(distinct) == 2 and kinds == [0, 1, 1, 0, 1, 1]
    device = devices_of(cm.cluster, "fp32")[0]
    for m in (1, 3):
        for k, block in enumerate(ops):
            one = {"fwd": 0.0, "bwd": 0.0}
            for op in block:
                flops, nbytes = op.at(m)
                t = cost.call_s(op.cls, op.phase, flops, nbytes, device.priced(), op.op).total_s
                one[op.phase] += t * op.count
            assert cm.fwd_s(device, m, k, k + 1) == pytest.approx(one["fwd"], rel=1e-12)
            assert cm.bwd_s(device, m, k, k + 1) == pytest.approx(one["bwd"], rel=1e-12)


def test_a_stage_accumulates_gradients_once_per_later_micro_batch():
    """M micro-batches add their gradients into the accumulated ones M - 1 times: spread over
    the backwards, each pays (M - 1) / M of one accumulation; one micro-batch pays none."""
    cm = CostModel(blocks_of([(1e9, 1e6, 1e5, 4e7)] * 4), cluster_of([["mid", "mid"]]))
    device = devices_of(cm.cluster, "fp32")[0]
    one = price_stage(cm, device, 0, 2, 8, stage=0, stages=2, microbatches=1, schedule="gpipe")
    four = price_stage(cm, device, 0, 2, 8, stage=0, stages=2, microbatches=4, schedule="gpipe")
    add = cost.accumulate_s(8e7, 2, device.priced())
    assert add > 0 and one.bwd_s == pytest.approx(cm.bwd_s(device, 8, 0, 2))
    assert four.bwd_s == pytest.approx(one.bwd_s + 0.75 * add)
    assert four.fwd_s == one.fwd_s


@settings(max_examples=25, deadline=None)
@given(problems())
def test_work_floor_never_exceeds_a_priced_pipeline(problem):
    nodes, rows, batch, optimizer, tied = problem
    cm = CostModel(blocks_of(rows, tied), cluster_of(nodes), optimizer)
    devices = devices_of(cm.cluster, "fp32")
    n = cm.blocks.n
    for S in range(1, min(len(devices), n, 3) + 1):
        for row in itertools.permutations(devices, S):
            for mb in microbatch_candidates(batch, 1, 8):
                floor = work_floor_s(cm, row, mb, batch)
                for cuts in itertools.combinations(range(1, n), S - 1):
                    for schedule in ("gpipe", "1f1b"):
                        layout = Layout(
                            (row,), (0, *cuts, n), mb, (batch,), schedule, ((None,) * S,)
                        )
                        work = work_of(cm, layout)
                        if work is not None:
                            assert floor <= iteration_s(work) * (1 + 1e-9)


def test_parameter_layout_reads_back_without_building(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRAINPLAY_PROFILE_CACHE", raising=False)
    source = resolve_model("tests.data.tiny_models:tiny_decoder", vocab_size=64)
    shape = (16,)
    model = source.build(shape, "meta", "fp32")
    names = tuple(b.name for b in structure(model, source.inputs(2, shape, "meta", "fp32")).blocks)
    counted = parameter_layout(source, shape, "fp32", names)
    assert cached_parameter_layout(source, shape, "fp32", names) == counted
    # each block's largest parameter: the embedding and, in the head, its tied projection
    assert counted[0] == counted[-1] == 64 * 32 * 4

    def refuse(*args, **kwargs):
        raise AssertionError("the model was built again")

    monkeypatch.setattr(ModelSource, "build", refuse)
    assert cached_parameter_layout(source, shape, "fp32", names) == counted
    monkeypatch.setenv("TRAINPLAY_PROFILE_CACHE", "0")
    with pytest.raises(AssertionError, match="built again"):
        cached_parameter_layout(source, shape, "fp32", names)
