"""``trainplay train``'s own step loop: read from a stand-in job's journal, carried in the profile
as ``runtime.step`` (and timed cold, ``runtime.step@stale``), and priced in place of the bare
schedule's fixed cost per step."""

import json
from dataclasses import replace

import pytest
import torch

from tests.unit.test_measurement_cluster import _measurement, _worker
from tests.unit.test_runtime_replan import MLP, setting
from trainplay.hardware.measurement import Measurement
from trainplay.hardware.profile import PerfProfile
from trainplay.plan.api import block_costs
from trainplay.roofline import cost
from trainplay.runtime import loopcost
from trainplay.runtime.data import open_data
from trainplay.runtime.timers import FIELDS

SCHEDULE = {"schedule.step": 1e-4, "schedule.microbatch": 8e-5}


def _journal(steps: list[tuple[float, dict[str, float]]]) -> list[dict]:
    events = [{"event": "start", "timer_fields": list(FIELDS)}]
    for step_s, timers in steps:
        row = [timers.get(f, 0.0) for f in FIELDS]
        events.append({"event": "step", "step_s": step_s, "timers_s": [row]})
    return events


def test_the_loop_is_each_step_less_its_timed_phases_after_the_warm_up():
    phases = {"fwd_s": 2e-3, "bwd_s": 3e-3, "optimizer_s": 1e-3, "data_s": 5e-4, "wait_s": 4e-4}
    warm = [(0.5, phases)] * loopcost.WARMUP  # the first steps set things up: left out
    timed = [(6.5e-3 + extra, phases) for extra in (7e-4, 8e-4, 9e-4, 8e-4, 8e-4)]
    median, spread = loopcost.loop_s(_journal(warm + timed))
    # wait_s is the schedule's own work: part of the loop, not a phase priced apart
    assert median == pytest.approx(8e-4)
    assert 0 <= spread < 0.5
    with pytest.raises(ValueError, match="no step after the warm-up"):
        loopcost.loop_s(_journal(warm))


def test_the_stand_in_trains_on_the_synthetic_data_it_is_given():
    data = open_data("synthetic", input_shape=(loopcost.WIDTH,), classes=loopcost.CLASSES)
    model = loopcost.model()
    assert data.size >= loopcost.BATCH
    x, y = data.batch(torch.arange(loopcost.BATCH))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_the_cold_stand_in_evicts_around_its_forward_and_backward_and_keeps_no_state():
    data = open_data("synthetic", input_shape=(loopcost.WIDTH,), classes=loopcost.CLASSES)
    model = loopcost.cold_model()
    evictors = [m for m in model if isinstance(m, loopcost._Evict)]
    assert len(evictors) == 2 and evictors[0].buffer is not evictors[1].buffer
    assert all(b.numel() * 4 >= loopcost.EVICT_MIN_BYTES for b in model.buffers())
    # the buffers are neither trained nor checkpointed: the stand-in's state is its two Linears'
    assert len(list(model.parameters())) == 4 and set(model.state_dict()) == {
        f"{i}.{w}" for i in (1, 3) for w in ("weight", "bias")
    }
    x, y = data.batch(torch.arange(loopcost.BATCH))
    first, last = (e.buffer._version for e in evictors)  # each in-place pass bumps it
    loss = torch.nn.functional.cross_entropy(model(x), y)
    assert [e.buffer._version for e in evictors] == [first + 1, last + 1]  # forward: both
    loss.backward()
    # backward: the last one (the first one's input needs no gradient, as a stage's input)
    assert [e.buffer._version for e in evictors] == [first + 1, last + 2]
    assert all(p.grad is not None for p in model.parameters())


def test_the_measured_loop_replaces_the_schedules_fixed_cost_per_step():
    peaks = _worker(0).peaks
    bare = replace(peaks, profile=PerfProfile(overhead_s=dict(SCHEDULE)))
    assert cost.loop_step_s(bare) == 1e-4  # not timed: the bare schedule's
    timed = replace(bare, profile=PerfProfile(overhead_s={**SCHEDULE, cost.LOOP_KEY: 6e-4}))
    assert cost.loop_step_s(timed) == 6e-4
    assert cost.loop_step_s(timed, stale=True) == 6e-4  # not timed cold: the hot one
    cold = replace(timed, profile=PerfProfile(overhead_s={**timed.profile.overhead_s,
                                                          cost.STALE_LOOP_KEY: 1.1e-3}))  # fmt: skip
    assert (cost.loop_step_s(cold), cost.loop_step_s(cold, stale=True)) == (6e-4, 1.1e-3)
    assert cost.loop_step_s(replace(peaks, profile=None)) == 0.0  # a device given by its peaks


def test_a_measurement_carries_the_loop_in_every_workers_profile_through_json():
    profiled = [replace(w, peaks=replace(w.peaks, profile=PerfProfile(overhead_s=dict(SCHEDULE))))
                for w in (_worker(0), _worker(1))]  # fmt: skip
    m = _measurement(*profiled).with_overhead(cost.LOOP_KEY, 6e-4)
    again = Measurement.from_dict(json.loads(m.to_json()))
    assert [w.peaks.profile.overhead_s[cost.LOOP_KEY] for w in again.workers] == [6e-4, 6e-4]
    assert again.workers[0].peaks.profile.overhead_s["schedule.step"] == 1e-4
    bare = _measurement(_worker(0))  # no profile: nothing to carry it
    assert bare.with_overhead(cost.LOOP_KEY, 6e-4) == bare


def test_the_planner_prices_the_measured_loop_once_a_step():
    costs = block_costs(MLP, input_shape=(12,))

    def priced(overheads):
        cm, (device,), _ = setting(costs, ["a"])  # a model of its own: prices are memoised
        peaks = replace(device.priced(), profile=PerfProfile(overhead_s=overheads))
        return cm.runtime_s(((replace(device, peaks=peaks),),))

    assert priced({**SCHEDULE, cost.LOOP_KEY: 6e-4}) - priced(SCHEDULE) == pytest.approx(5e-4)


def test_a_stage_that_outgrows_the_cache_pays_the_loop_timed_cold():
    costs = block_costs(MLP, input_shape=(12,))
    overheads = {**SCHEDULE, cost.LOOP_KEY: 6e-4, cost.STALE_LOOP_KEY: 1.1e-3}

    def priced(cache_bytes, bounds):
        cm, (device,), _ = setting(costs, ["a"])
        profile = PerfProfile(overhead_s=overheads, cache_bytes=cache_bytes)
        grid = ((replace(device, peaks=replace(device.priced(), profile=profile)),),)
        return cm.runtime_s(grid, bounds)

    whole = (0, costs.n)
    assert priced(1, whole) == pytest.approx(1.1e-3)  # the stage streams more than 1 byte
    assert priced(2**40, whole) == pytest.approx(6e-4)  # it fits: hot
    assert priced(None, whole) == pytest.approx(6e-4)  # no cache (a GPU): never stale
    assert priced(1, None) == pytest.approx(6e-4)  # before the cut is known: the least it costs


def test_a_stand_in_job_that_fails_leaves_the_measurement_priced_as_the_schedule(monkeypatch):
    import io
    import sys

    from rich.console import Console

    from trainplay.cli.hw import _with_loop

    monkeypatch.setattr(sys, "executable", "/bin/false")  # the job's command fails at once
    m = _measurement(_worker(0))
    said = io.StringIO()
    assert _with_loop(m, Console(file=said, width=200)) == m
    assert "the loop was not timed" in said.getvalue()


def test_a_stand_in_job_that_keeps_no_step_leaves_the_measurement_as_it_was(monkeypatch):
    import io
    import sys

    from rich.console import Console

    from trainplay.cli.hw import _with_loop

    monkeypatch.setattr(sys, "executable", "/bin/true")  # "runs", and writes no journal
    m = _measurement(_worker(0))
    said = io.StringIO()
    assert _with_loop(m, Console(file=said, width=200)) == m
    assert "the loop was not timed" in said.getvalue()


def test_a_busy_worker_without_a_timed_loop_pays_the_loop_of_the_worker_alone():
    costs = block_costs(MLP, input_shape=(12,))
    cm, (device,), _ = setting(costs, ["a"])

    def with_fixed(overheads):
        return replace(device.priced(), profile=PerfProfile(overhead_s=overheads))

    alone = replace(device, peaks=with_fixed({**SCHEDULE, cost.LOOP_KEY: 6e-4}), solo=True)
    busy = replace(device, peaks=with_fixed(dict(SCHEDULE)), alone=alone)
    # two ranks on the node: both busy, their loop the one timed alone (not the schedule's 1e-4)
    two = ((busy, replace(busy, id="b")),)
    agreement = cost.agreement_s(2, busy.priced().profile)
    assert cm.runtime_s(two) == pytest.approx(6e-4 + agreement)
    timed = replace(busy, id="c", peaks=with_fixed({**SCHEDULE, cost.LOOP_KEY: 9e-4}))
    assert cm.runtime_s(((timed, replace(timed, id="d")),)) == pytest.approx(9e-4 + agreement)
    lone = replace(device, id="e", peaks=with_fixed(dict(SCHEDULE)))  # nothing timed anywhere
    assert cm.runtime_s(((lone,),)) == pytest.approx(1e-4)
