"""bf16/fp16 are priced as trainplay trains them: autocast over fp32 master weights, so gradients,
their all-reduce and accumulation and the optimizer's state are fp32 (roofline/cost.py, "Mixed
precision"), in ``analyze`` and in the planner's cost model alike."""

import pytest

from trainplay.hardware.cluster import parse_cluster
from trainplay.plan.api import block_costs
from trainplay.plan.costs import CostModel, devices_of
from trainplay.roofline import cost
from trainplay.roofline.analysis import analyze
from trainplay.roofline.layout import Parallel
from trainplay.workload import profile

CLUSTER = {  # a device with no profile: the same roofs in both dtypes, so only bytes differ
    "name": "two",
    "nodes": [
        {
            "name": "n",
            "devices": [
                {
                    "name": "acc",
                    "peak_flops": {"fp32": 1e13, "bf16": 1e13},
                    "mem_bw_bps": 1e12,
                    "mem_bytes": 8e10,
                    "count": 2,
                }
            ],
            "intra_link": {"bandwidth_bps": 1e10, "latency_s": 1e-5},
        }
    ],
}


def test_master_bytes_are_fp32_whatever_the_training_dtype():
    assert cost.master_bytes(4e6, "fp32") == 4e6
    assert cost.master_bytes(2e6, "bf16") == cost.master_bytes(2e6, "fp16") == 4e6


@pytest.fixture(scope="module")
def models():
    return {dtype: block_costs("resnet18", dtype=dtype) for dtype in ("fp32", "bf16")}


def test_the_planner_reduces_and_steps_fp32_master_gradients(models):
    spec = parse_cluster(CLUSTER)
    half, full = (CostModel(models[d], spec, "adam") for d in ("bf16", "fp32"))
    assert half.grad_bytes_per_param_byte == 2.0 and full.grad_bytes_per_param_byte == 1.0
    # a framework that reduces half-precision gradients says so
    assert (
        CostModel(
            models["bf16"], spec, "adam", grad_bytes_per_param_byte=1.0
        ).grad_bytes_per_param_byte
        == 1.0
    )
    n = models["bf16"].n
    half_params = half.range_sum("param_bytes", 1, 0, n)
    full_params = full.range_sum("param_bytes", 1, 0, n)
    assert half_params == pytest.approx(full_params / 2)
    ring = tuple(devices_of(spec, "bf16"))
    full_ring = tuple(devices_of(spec, "fp32"))
    # the same fp32 gradients cross the same link: the all-reduce costs alike
    assert half.allreduce_s(ring, half_params) == pytest.approx(
        full.allreduce_s(full_ring, full_params), rel=1e-9
    )
    assert half.optimizer_s(ring[0], half_params, 10) == pytest.approx(
        full.optimizer_s(full_ring[0], full_params, 10), rel=1e-9
    )
    assert half.accumulate_s(ring[0], half_params, 10) == pytest.approx(
        full.accumulate_s(full_ring[0], full_params, 10), rel=1e-9
    )


def test_analyze_reduces_fp32_master_gradients():
    spec = parse_cluster(CLUSTER)
    got = {
        dtype: analyze(profile("resnet18", batch_size=8, dtype=dtype), spec, Parallel(dp=2))
        for dtype in ("fp32", "bf16")
    }
    assert got["bf16"].iteration.comm_bytes == pytest.approx(got["fp32"].iteration.comm_bytes)
    assert got["bf16"].iteration.optimizer_s == pytest.approx(got["fp32"].iteration.optimizer_s)
