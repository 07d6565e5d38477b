"""Calibration in the loop: measured scales reprice the devices, and a plan change must pay."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from tests.unit.test_runtime_replan import MLP, setting
from trainplay.hardware.profile import PerfProfile
from trainplay.plan.api import block_costs
from trainplay.plan.layout import tail_s
from trainplay.plan.partition import best_shares
from trainplay.plan.search import SearchOptions
from trainplay.runtime.calibration import (
    TOLERANCE,
    calibrated,
    calibrated_all,
    check,
    floored,
    restart_slowdown,
    scale_floor,
    scales_for,
    scales_of,
    speeds,
)
from trainplay.runtime.launcher import LAUNCHED_AT, ROUND_AT
from trainplay.runtime.measured import predicted_ranks
from trainplay.runtime.replan import RunState, choose_plan
from trainplay.runtime.timers import FIELDS
from trainplay.runtime.worker import _startup_s


@pytest.fixture(scope="module")
def costs():
    return block_costs(MLP, input_shape=(12,))


def first_plan(cm, present):
    return choose_plan(
        cm, present, global_batch=24, previous=None, fixed=None, now_s=0.0, remaining_steps=100,
        recovery_s=None, options=SearchOptions(),
    ).plan  # fmt: skip


def price(cm):
    def priced(plan, devices):
        return predicted_ranks(cm, plan, devices, {d: i for i, d in enumerate(plan.devices)})[1]

    return priced


def test_a_scale_multiplies_every_predicted_time_on_the_device(costs):
    cm, present, _ = setting(costs, ["a"])
    (device,) = present
    slow = calibrated(device, 2.5)
    for m in (1, 8):
        assert cm.fwd_s(slow, m, 0, 4) == pytest.approx(2.5 * cm.fwd_s(device, m, 0, 4))
        assert cm.bwd_s(slow, m, 1, 3) == pytest.approx(2.5 * cm.bwd_s(device, m, 1, 3))
    assert cm.optimizer_s(slow, 4096, 4) == pytest.approx(2.5 * cm.optimizer_s(device, 4096, 4))
    assert slow.speed != device.speed  # priced apart from the uncalibrated device
    assert calibrated(device, 1.0) is device


def test_scales_are_busy_over_predicted_busy():
    described = [
        {
            "rank": 0,
            "device": "a",
            "predicted": {"fwd_s": 0.01, "bwd_s": 0.02, "optimizer_s": 0.01},
        },
        {"rank": 1, "device": "b", "predicted": None},
    ]
    # forward, backward, optimizer and taking the batch are the device's own work
    rows = [[[0.02, 0.03, 0.5, 0.5, 0.02, 1.0, 0.01], [1, 1, 1, 1, 1, 1, 1]] for _ in range(3)]
    assert scales_of(described, rows, FIELDS) == {"a": pytest.approx(2.0)}
    # a journal written before the batch was timed
    old = [[row[:6] for row in step] for step in rows]
    assert scales_of(described, old, FIELDS[:6]) == {"a": pytest.approx(1.75)}


def test_a_time_sliced_device_is_scaled_by_its_total_not_its_typical_step():
    # under a CPU quota most steps run at full speed and some stall: the rate the device
    # delivered is the window's total, which the median of per-step ratios (1.0 here) misses
    described = [{"rank": 0, "device": "a", "predicted": {"fwd_s": 0.01, "bwd_s": 0.02}}]
    quick, stalled = [0.01, 0.02, 0, 0, 0, 0.03, 0], [0.04, 0.08, 0, 0, 0, 0.12, 0]
    rows = [[quick], [quick], [stalled], [quick], [stalled]]
    assert scales_of(described, rows, FIELDS) == {"a": pytest.approx((3 + 2 * 4) / 5)}


def test_a_slowed_device_gets_a_smaller_share_when_it_pays(costs):
    cm, present, ids = setting(costs, ["a", "b"])
    plan = first_plan(cm, present)
    assert plan.replicas == 2 and plan.stages[0].batch_shares == (12, 12)
    measured = {ids[0]: 1.0, ids[1]: 3.0}
    found = check(
        cm, present, plan, {}, measured, remaining_steps=100_000, reconfiguration_s=1.0,
        checkpoint_s=0.0, options=SearchOptions(), price=price(cm),
    )  # fmt: skip
    assert found.changed and found.scales == {ids[0]: 1.0, ids[1]: 3.0}
    assert found.plan is not None and found.decision["switch"]
    # uneven shares: the device three times slower takes a third of the other's share
    assert found.plan.replicas == 2
    slow = found.plan.stages[0].devices.index(ids[1])
    shares = found.plan.stages[0].batch_shares
    assert shares[slow] * 3 == shares[1 - slow]
    assert found.decision["new_iteration_s"] < found.decision["current_iteration_s"]
    # the same gain over one remaining step does not pay for a restart that costs more
    late = check(
        cm, present, plan, {}, measured, remaining_steps=1, reconfiguration_s=60.0,
        checkpoint_s=0.0, options=SearchOptions(), price=price(cm),
    )  # fmt: skip
    assert late.changed and late.plan is None and not late.decision["switch"]


def test_a_change_seen_on_the_window_is_priced_on_the_last_steps(costs):
    # half the window before a throttle, half after: seen (1.75 > 1.15), priced at the 2.5 of
    # the steps after it
    cm, present, ids = setting(costs, ["a", "b"])
    plan = first_plan(cm, present)
    found = check(
        cm, present, plan, {}, {ids[0]: 1.0, ids[1]: 1.75}, recent={ids[0]: 1.1, ids[1]: 2.5},
        remaining_steps=100_000, reconfiguration_s=1.0, checkpoint_s=0.0,
        options=SearchOptions(), price=price(cm),
    )  # fmt: skip
    assert found.changed and found.scales == {ids[0]: 1.0, ids[1]: 2.5}


def test_a_restart_is_priced_at_the_devices_speeds_now_not_at_its_start(costs):
    cm, present, ids = setting(costs, ["a", "b"])
    plan = first_plan(cm, present)
    measured = {ids[0]: 1.0, ids[1]: 2.5}

    def decided(measured_at):
        found = check(
            cm, present, plan, {}, measured, remaining_steps=100_000, reconfiguration_s=4.0,
            checkpoint_s=0.0, options=SearchOptions(), price=price(cm), measured_at=measured_at,
        )  # fmt: skip
        return found.decision

    # the group started before b slowed down: its restart now runs 2.5 times slower too
    later = decided(speeds({}, {ids[0]: 1.0, ids[1]: 1.05}))
    assert later["reconfiguration_s"] == pytest.approx(4.0 * 2.5 / 1.05)
    assert later["reconfiguration_slowdown"] == pytest.approx(2.5 / 1.05)
    # b was slow from the start: the start it measured was already at b's speed
    assert decided({ids[0]: 1.0, ids[1]: 2.5})["reconfiguration_s"] == pytest.approx(4.0)
    # nothing known of the start's speeds: the measured start as it is
    assert decided(None)["reconfiguration_s"] == pytest.approx(4.0)


def test_the_restart_slowdown_is_its_slowest_devices():
    assert restart_slowdown({"a": 1.2, "b": 3.0}, {"a": 1.0, "b": 1.5}) == pytest.approx(2.0)
    assert restart_slowdown({"a": 0.5}, {"a": 1.0}) == pytest.approx(0.5)  # it sped up
    assert restart_slowdown({"a": 2.0}, {}) == 1.0
    assert speeds({"a": 2.0}, {"a": 1.5, "b": 0.9}) == {"a": 3.0, "b": 0.9}


def test_within_tolerance_nothing_changes(costs):
    cm, present, ids = setting(costs, ["a", "b"])
    plan = first_plan(cm, present)
    measured = {ids[0]: 1.0 + TOLERANCE / 2, ids[1]: 1.0 - TOLERANCE / 2}
    found = check(
        cm, present, plan, {ids[1]: 2.0}, measured, remaining_steps=100, reconfiguration_s=None,
        checkpoint_s=0.5, options=SearchOptions(), price=price(cm),
    )  # fmt: skip
    assert not found.changed and found.plan is None
    assert found.scales == {ids[0]: 1.0, ids[1]: 2.0}


def test_a_cpu_limit_floors_the_scale():
    assert scale_floor(0.4, 1) == pytest.approx(2.5)  # 40% of a core for one thread
    assert scale_floor(1.0, 2) == pytest.approx(2.0)  # two threads sharing one CPU's time
    assert scale_floor(2.0, 2) == 1.0 and scale_floor(8.0, 2) == 1.0  # room to spare
    assert scale_floor(0.0, 1) == 1.0  # nothing known
    assert floored({"a": 3.0, "b": 1.0}, {"a": 2.5, "b": 2.5, "c": 1.5}) == {
        "a": 3.0, "b": 2.5, "c": 1.5,
    }  # fmt: skip


def test_a_time_sliced_device_under_its_floor_keeps_the_floor(costs):
    """A rank whose share fits inside its quota runs a window at full speed: its measured scale
    dips below the floor, and the plan stays (the dip is not a faster device)."""
    cm, present, ids = setting(costs, ["a", "b"])
    plan = first_plan(cm, present)
    floors = {ids[1]: 2.5}
    now = {ids[0]: 1.0, ids[1]: 2.5}  # spelled out, as a worker group starts them
    dip = check(
        cm, present, plan, now, {ids[0]: 1.0, ids[1]: 0.52}, remaining_steps=100_000,
        reconfiguration_s=1.0, checkpoint_s=0.0, options=SearchOptions(), price=price(cm),
        floors=floors,
    )  # fmt: skip
    assert not dip.changed and dip.plan is None and dip.scales[ids[1]] == pytest.approx(2.5)
    # slower than its quota explains: the measured scale, above the floor, is taken
    slower = check(
        cm, present, plan, now, {ids[0]: 1.0, ids[1]: 1.6}, remaining_steps=100_000,
        reconfiguration_s=1.0, checkpoint_s=0.0, options=SearchOptions(), price=price(cm),
        floors=floors,
    )  # fmt: skip
    assert slower.changed and slower.scales[ids[1]] == pytest.approx(4.0)


def test_a_limit_set_while_running_is_seen_without_the_timers(costs):
    cm, present, ids = setting(costs, ["a", "b"])
    plan = first_plan(cm, present)
    found = check(
        cm, present, plan, {}, {ids[0]: 1.0, ids[1]: 1.05}, remaining_steps=100_000,
        reconfiguration_s=1.0, checkpoint_s=0.0, options=SearchOptions(), price=price(cm),
        floors={ids[1]: 2.5},
    )  # fmt: skip
    assert found.changed and found.scales == {ids[0]: 1.0, ids[1]: 2.5}
    assert found.plan is not None  # uneven shares for the limited device
    slow = found.plan.stages[0].devices.index(ids[1])
    shares = found.plan.stages[0].batch_shares
    assert shares[slow] < shares[1 - slow]


def test_a_floor_is_no_measurement_of_the_devices_type(costs):
    """Two CPUs of one type, one of them limited: the other keeps its own price (a floor left
    alone in the scales would price it at its type's median, the floor)."""
    cm, present, ids = setting(costs, ["a", "b"])
    assert scales_for(present, {ids[1]: 2.5}) == {ids[0]: 2.5, ids[1]: 2.5}  # the type's rule
    assert floored(scales_for(present, {}), {ids[1]: 2.5}) == {ids[0]: 1.0, ids[1]: 2.5}
    plan = first_plan(cm, present)
    found = check(
        cm, present, plan, {}, {}, remaining_steps=100_000, reconfiguration_s=1.0,
        checkpoint_s=0.0, options=SearchOptions(), price=price(cm), floors={ids[1]: 2.5},
    )  # fmt: skip
    assert found.changed and found.scales == {ids[0]: 1.0, ids[1]: 2.5}
    slow = found.plan.stages[0].devices.index(ids[1])
    shares = found.plan.stages[0].batch_shares
    assert shares[slow] < shares[1 - slow]


def test_scales_ride_along_in_run_json(tmp_path):
    RunState(started_at_s=1.0, plan={"x": 1}, scales={"n/cpu:0": 2.5}).write(tmp_path)
    assert RunState.read(tmp_path).scales == {"n/cpu:0": 2.5}
    (tmp_path / "run.json").write_text('{"started_at_s": 1, "plan": {}}')  # written before
    assert RunState.read(tmp_path).scales == {}


def test_a_device_that_joins_takes_the_scale_measured_on_its_type(costs):
    cm, present, ids = setting(costs, ["a", "b", "c"])
    got = calibrated_all(present, {ids[0]: 0.5, ids[1]: 0.7})
    by_id = {d.id: d for d in present}
    for device, scale in zip(got, (0.5, 0.7, 0.6), strict=True):
        base = by_id[device.id]
        assert cm.fwd_s(device, 4, 0, 4) == pytest.approx(scale * cm.fwd_s(base, 4, 0, 4))


def test_a_recalibrated_device_is_not_priced_from_its_old_speeds_memo(costs):
    # the runtime searches its first plan and its calibrated ones with one cost model: the
    # memoised prices of a device must not outlive its old speed (same id, new scale)
    cm, present, ids = setting(costs, ["a", "b"])
    bounds = (0, cm.blocks.n)
    base = best_shares(cm, ((present[0],), (present[1],)), bounds, 1, "gpipe", 24)
    assert base is not None and base[1].shares == (12, 12)
    fast, slow = calibrated_all(present, {ids[0]: 1.0, ids[1]: 3.0})
    found = best_shares(cm, ((fast,), (slow,)), bounds, 1, "gpipe", 24)
    assert found is not None and found[1].shares == (18, 6)
    grid = ((present[0],), (present[1],))
    before = tail_s(cm, grid, bounds)  # the optimizer step: the slowest device's
    assert tail_s(cm, ((fast,), (slow,)), bounds) > before


def test_a_restart_is_priced_from_the_round_not_the_launch(monkeypatch):
    # the first round waited for the other nodes to arrive: a restart does not wait again
    monkeypatch.setenv(LAUNCHED_AT, repr(time.time() - 100))
    monkeypatch.setenv(ROUND_AT, repr(time.time() - 5))
    assert 5 <= _startup_s() < 50
    monkeypatch.delenv(ROUND_AT)
    assert _startup_s() >= 100


def test_each_rank_is_described_with_the_placement_whose_profile_priced_it(costs):
    cm, present, _ = setting(costs, ["a", "b"])
    plan = first_plan(cm, present)
    ranks = {d: i for i, d in enumerate(plan.devices)}
    described, _ = predicted_ranks(cm, plan, present, ranks)
    assert [r["placement"] for r in described] == [None] * len(described)  # a YAML's peaks
    split = [replace(d, peaks=replace(d.priced(), profile=PerfProfile(placement="split")))
             for d in present]  # fmt: skip
    described, _ = predicted_ranks(cm, plan, split, ranks)
    assert [r["placement"] for r in described] == ["split"] * len(described)
