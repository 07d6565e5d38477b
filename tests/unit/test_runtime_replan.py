"""Which plan a restarted worker group runs: kept, re-planned on a leave, a join weighed."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainplay.hardware.cluster import load_cluster
from trainplay.plan.api import block_costs
from trainplay.plan.costs import CostModel, devices_of
from trainplay.plan.search import SearchOptions
from trainplay.runtime.nodes import NodeDevices, present_cluster, this_node
from trainplay.runtime.replan import RunState, choose_plan

SLOW = Path(__file__).parents[1] / "data" / "clusters" / "slow-cpu.yaml"
MLP = "tests.data.tiny_models:deep_mlp"


@pytest.fixture(scope="module")
def costs():
    return block_costs(MLP, input_shape=(12,))


def setting(costs, names: list[str]):
    node = this_node(load_cluster(SLOW), name=None, nproc=1)
    entries = [(n, 0, NodeDevices(**{**node.__dict__, "name": n})) for n in names]
    cluster, ids = present_cluster(entries)
    return CostModel(costs, cluster, "sgd"), devices_of(cluster, "fp32"), ids


def choose(cm, present, previous, remaining, recovery_s=None, previous_present=None):
    return choose_plan(
        cm, present, global_batch=24, previous=previous, fixed=None, now_s=10.0,
        remaining_steps=remaining, recovery_s=recovery_s, options=SearchOptions(),
        previous_present=previous_present,
    )  # fmt: skip


def test_fresh_then_same_devices_keep_the_plan(costs):
    cm, present, ids = setting(costs, ["a", "b", "c"])
    first = choose(cm, present, None, 100)
    assert first.reason == "fresh" and set(first.plan.devices) == set(ids)
    again = choose(cm, present, first.plan, 50)
    assert again.reason == "same" and again.plan == first.plan


def test_a_leave_re_plans_on_what_remains(costs):
    cm3, present3, _ = setting(costs, ["a", "b", "c"])
    before = choose(cm3, present3, None, 100).plan
    cm2, present2, ids2 = setting(costs, ["a", "b"])
    after = choose(cm2, present2, before, 80)
    assert after.reason == "leave" and after.decision["switch"]
    assert set(after.plan.devices) <= set(ids2) and after.plan != before


def test_a_join_is_taken_only_when_it_pays_back(costs):
    cm2, present2, _ = setting(costs, ["a", "b"])
    before = choose(cm2, present2, None, 100).plan
    cm3, present3, _ = setting(costs, ["a", "b", "c"])
    gain_s = (
        before.predicted_iteration_s - choose(cm3, present3, None, 1).plan.predicted_iteration_s
    )
    assert gain_s > 0
    # the reconfiguration costs 20 s: worth it for many remaining steps, not for a few
    few = int(10 / gain_s)
    many = int(60 / gain_s) + 1
    declined = choose(cm3, present3, before, few, recovery_s=20.0)
    assert declined.reason == "join" and not declined.decision["switch"]
    assert declined.plan == before
    taken = choose(cm3, present3, before, many, recovery_s=20.0)
    assert taken.decision["switch"] and len(taken.plan.devices) == 3


def test_a_plan_chosen_with_a_device_idle_is_kept_when_the_same_devices_return(costs):
    # a plan on two devices, chosen (a declined join, a calibration re-plan) with three present:
    # the next start with those three is no change, not a join to weigh again
    cm2, present2, _ = setting(costs, ["a", "b"])
    before = choose(cm2, present2, None, 100).plan
    cm3, present3, ids3 = setting(costs, ["a", "b", "c"])
    kept = choose(cm3, present3, before, 10**6, recovery_s=20.0, previous_present=ids3)
    assert kept.reason == "same" and kept.plan == before
    # a fourth device that was not there when the plan was chosen is a join again
    cm4, present4, _ = setting(costs, ["a", "b", "c", "d"])
    joined = choose(cm4, present4, before, 10**6, recovery_s=20.0, previous_present=ids3)
    assert joined.reason == "join"


def test_run_state_round_trips(tmp_path):
    state = RunState(started_at_s=5.0, plan={"x": 1}, recovery_s=2.5, present=["n/cpu:0"])
    state.write(tmp_path)
    assert RunState.read(tmp_path) == state
    assert RunState.read(tmp_path / "missing") is None
