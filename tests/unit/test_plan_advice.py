""" "does not fit": the binding limit is named, and only changes that make a plan exist are offered."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.unit.test_plan_search import GIB, blocks_of, cluster_of
from trainplay.hardware.cluster import parse_cluster
from trainplay.plan.advice import binding_limit, helpful_changes, no_fit_error, ruled_out
from trainplay.plan.costs import CostModel, devices_of
from trainplay.plan.search import SearchOptions, search

OPTIONS = SearchOptions()


def setup(rows, nodes, optimizer="sgd", cluster=None):
    spec = cluster or cluster_of(nodes)
    cm = CostModel(blocks_of(rows), spec, optimizer)
    return cm, devices_of(spec, "fp32")


def block(params_gib: float, act_mib: float = 1.0):
    """(flops, bytes, activation bytes per sample, parameter bytes)."""
    return (1e9, 1e7, act_mib * 2**20, params_gib * GIB)


def test_state_larger_than_every_device_together():
    cm, devices = setup([block(1.0)] * 4, [["old", "old"]])
    kind, why = binding_limit(cm, devices, 8, OPTIONS)
    assert kind == "state" and "alone need 12 GiB" in why and "1.8 GiB all 2 devices" in why
    err = str(no_fit_error(cm, devices, 8, OPTIONS))
    assert "--optimizer" not in err and "--dtype" not in err and "--global-batch 4" not in err
    assert "at least 10.2 GiB more usable memory" in err


def test_sgd_is_offered_only_when_it_makes_a_plan():
    cm, devices = setup([block(0.5)] * 4, [["new", "new"]], optimizer="adam")  # 8 vs 7.2 GiB
    assert search(cm, devices, 8, OPTIONS) is None
    assert binding_limit(cm, devices, 8, OPTIONS)[0] == "state"
    assert helpful_changes(cm, devices, 8, OPTIONS) == ["--optimizer sgd"]
    sgd = CostModel(cm.blocks, cm.cluster, "sgd")
    assert search(sgd, devices, 8, OPTIONS) is not None
    err = str(no_fit_error(sgd, devices, 10**6, OPTIONS))  # already sgd: never offered
    assert "--optimizer sgd" not in err


def test_a_block_larger_than_the_largest_device():
    cm, devices = setup([block(0.1), block(1.5), block(0.1)], [["new", "mid"]])
    kind, why = binding_limit(cm, devices, 8, OPTIONS)
    assert kind == "block" and why.startswith("block b1 alone needs 4.5 GiB")
    assert "a device large enough for that block" in str(no_fit_error(cm, devices, 8, OPTIONS))


def test_the_batch_activations_and_a_batch_that_fits():
    cm, devices = setup([block(0.01, act_mib=50)] * 4, [["new", "new"]])
    batch = 2**20
    assert search(cm, devices, batch, OPTIONS) is None
    kind, why = binding_limit(cm, devices, batch, OPTIONS)
    assert kind == "batch" and "1,048,576 samples in at most 64 micro-batches" in why
    changes = helpful_changes(cm, devices, batch, OPTIONS)
    assert len(changes) == 1 and changes[0].startswith("--global-batch ")
    smaller = int(changes[0].split()[-1])
    assert smaller < batch and search(cm, devices, smaller, OPTIONS) is not None


def test_per_device_memory_after_the_split():
    # three blocks of 2.3 GiB of state on two devices of 3.6 GiB usable: 6.9 of 7.2 GiB in total,
    # but one device must hold two blocks
    cm, devices = setup([block(2.3 / 3)] * 3, [["new", "new"]])
    kind, why = binding_limit(cm, devices, 2, OPTIONS)
    assert kind == "split" and "per-device memory after the leanest split" in why
    assert "4.6 GiB of state for blocks b0..b1" in why and "128% of its 3.6 GiB usable" in why


CASES = {  # name -> (blocks, nodes, global batch, the binding limit)
    "state": ([block(1.0)] * 4, [["old", "old"]], 8, "state"),
    "block": ([block(0.1), block(1.5), block(0.1)], [["new", "mid"]], 8, "block"),
    "batch": ([block(0.01, act_mib=50)] * 4, [["new", "new"]], 2**20, "batch"),
    "split": ([block(2.3 / 3)] * 3, [["new", "new"]], 2, "split"),
    "fits": ([block(0.01, act_mib=50)] * 4, [["new", "new"]], 64, None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_ruled_out_only_where_a_lower_bound_fails(case):
    """The check that spares a search is sound: it says no plan exists only when limit 1, 2 or 3
    fails, and the search then finds none either; the split limit (4) is left to the search."""
    rows, nodes, batch, kind = CASES[case]
    cm, devices = setup(rows, nodes)
    out = ruled_out(cm, devices, batch, OPTIONS)
    assert out == (kind in ("state", "block", "batch"))
    found = search(cm, devices, batch, OPTIONS)
    assert (found is None) == (kind is not None)
    if kind is not None:
        assert binding_limit(cm, devices, batch, OPTIONS)[0] == kind


def test_half_precision_is_offered_only_where_every_device_has_it():
    rows = [block(0.01, act_mib=120)] * 4
    fp32_only = cluster_of([["new", "new"]])
    cm, devices = setup(rows, None, cluster=fp32_only)
    batch = 1024  # fp32 needs more than the two cards hold, fp16 less (found by the search)
    assert search(cm, devices, batch, OPTIONS) is None

    def costs_for(dtype):
        half = blocks_of([(f, b, a / 2, p / 2) for f, b, a, p in rows])
        return replace(half, dtype=dtype)

    # the invented cards list no bf16/fp16 peak: a half-precision plan cannot be priced there
    assert not any("--dtype" in c for c in helpful_changes(cm, devices, batch, OPTIONS, costs_for))
    data = {
        "name": "halves",
        "nodes": [
            {
                "name": "n0",
                "devices": [
                    {
                        "name": "new",
                        "peak_flops": {"fp32": 60e12, "fp16": 120e12},
                        "mem_bw_bps": 2e12,
                        "mem_bytes": 4 * GIB,
                        "count": 2,
                    }
                ],
                "intra_link": {"bandwidth_bps": 50e9, "latency_s": 5e-6},
            }
        ],
    }
    cm, devices = setup(rows, None, cluster=parse_cluster(data))
    assert search(cm, devices, batch, OPTIONS) is None
    changes = helpful_changes(cm, devices, batch, OPTIONS, costs_for, batch_helps=False)
    assert changes == ["--dtype fp16"]


@pytest.mark.parametrize("later", [0, 2])
def test_the_message_says_which_devices(later):
    cm, devices = setup([block(1.0)] * 4, [["old", "old"]])
    err = str(no_fit_error(cm, devices, 8, OPTIONS, later=later))
    where = "the 2 devices there at the start" if later else "random"
    assert err.startswith(f"synthetic does not fit on {where} at --global-batch 8: ")
