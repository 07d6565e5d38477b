"""The training runtime's own work in the one cost model: the pipeline schedule's fixed costs per
step and per micro-batch (measured by ``hw measure`` on a CPU), and the ranks' per-step agreement;
and what tells two machines' measurements apart."""

import json
import math
from dataclasses import replace

import pytest
import torch
import torch.distributed as dist

from trainplay.hardware import local
from trainplay.hardware.machine import VECTOR_FLAGS, cpu_features
from trainplay.hardware.measure.overheads import measure_schedule
from trainplay.hardware.profile import Curve, PerfProfile
from trainplay.plan.costs import CostModel, devices_of
from trainplay.plan.layout import Layout, work_of
from trainplay.plan.search import SearchOptions, _best_for, search
from trainplay.plan.simulate import iteration_s
from trainplay.roofline import cost

from .test_alone import _blocks
from .test_measurement_cluster import _measurement, _worker

STEP_S, MICRO_S = 2e-3, 1e-3


def _cluster(tmp_path, monkeypatch, schedule: bool):
    """Two workers of this machine whose profiles measured an all-reduce, and (``schedule``) the
    schedule's fixed costs."""
    overheads = {"schedule.step": STEP_S, "schedule.microbatch": MICRO_S} if schedule else {}
    return local_pair(tmp_path, monkeypatch, overheads)


def local_pair(tmp_path, monkeypatch, overheads: dict[str, float], **measured):
    """Two workers of this machine, cached as ``local`` under ``tmp_path``, whose profiles
    measured an all-reduce, the fixed costs ``overheads`` and what ``measured`` adds (fields of
    :class:`PerfProfile`)."""
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    profile = PerfProfile(
        classes={},
        overhead_s=overheads,
        allreduce=Curve(sizes=(64.0, 1e8), rates=(1e9, 1e9)),
        allreduce_alpha_s=5e-4,
        workers=2,
        **measured,
    )
    host = local.fingerprint()["host"]
    workers = [_worker(r, host, profile=profile.to_dict()) for r in (0, 1)]
    local.save_cached(_measurement(*workers))
    return local.local_cluster(2, measure_if_missing=False)


def test_one_rank_pays_the_schedule_per_step_and_per_microbatch(tmp_path, monkeypatch):
    times = {}
    for schedule in (False, True):
        cluster = _cluster(tmp_path / str(schedule), monkeypatch, schedule)
        cm = CostModel(_blocks(), cluster, "sgd")
        d0, _ = devices_of(cluster, "fp32")
        for m in (1, 4):
            layout = Layout(((d0,),), (0, 4), m, (8,), "gpipe", ((False,),))
            times[schedule, m] = iteration_s(work_of(cm, layout))
    assert times[True, 1] - times[False, 1] == pytest.approx(STEP_S + MICRO_S)
    assert times[True, 4] - times[False, 4] == pytest.approx(STEP_S + 4 * MICRO_S)


def test_several_ranks_agree_on_each_step(tmp_path, monkeypatch):
    cluster = _cluster(tmp_path, monkeypatch, schedule=True)
    d0, d1 = devices_of(cluster, "fp32")
    cm = CostModel(_blocks(), cluster, "sgd")
    agreement = cost.agreement_s(2, d0.priced().profile)
    assert agreement == pytest.approx(2 * (5e-4 + cost.AGREEMENT_BYTES / 1e9))
    assert cm.runtime_s(((d0,),)) == pytest.approx(STEP_S)
    assert cm.runtime_s(((d0, d1),)) == pytest.approx(STEP_S + agreement)
    assert cost.agreement_s(2, None) == 0.0


def test_the_search_prices_what_work_of_prices(tmp_path, monkeypatch):
    """The search's time of its plan, with the runtime's costs, is the simulator's time of it."""
    cluster = _cluster(tmp_path, monkeypatch, schedule=True)
    cm = CostModel(_blocks(8), cluster, "sgd")
    found = search(cm, devices_of(cluster, "fp32"), 16)
    assert found.time_s == pytest.approx(iteration_s(work_of(cm, found.layout)), rel=1e-12)


@pytest.mark.parametrize("stages", [1, 2])
def test_one_replica_candidates_carry_the_runtime_costs(tmp_path, monkeypatch, stages):
    """A single pipeline's candidates (priced by the partition search, not the simulator) carry
    the runtime's per-step work too: without it a 2-stage plan ranked below one process alone
    although the plan it became was priced above it."""
    cluster = _cluster(tmp_path, monkeypatch, schedule=True)
    cm = CostModel(_blocks(8), cluster, "sgd")
    grid = (tuple(devices_of(cluster, "fp32")[:stages]),)
    assert cm.runtime_s(grid) > 0
    for mb in (1, 2, 4):
        got = list(_best_for(cm, grid, mb, 16, SearchOptions(), True, 0.0, math.inf))
        assert got
        for t, layout in got:
            assert t == pytest.approx(iteration_s(work_of(cm, layout)), rel=1e-12)


def test_the_schedule_costs_are_measured_on_this_cpu():
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        got = measure_schedule(torch.device("cpu"), dist.group.WORLD)
    finally:
        dist.destroy_process_group()
    assert set(got) == {"schedule.step", "schedule.microbatch"}
    # a micro-batch through the schedule costs more than the same operators run eagerly (about
    # 0.17 ms here), and neither cost is anywhere near a millisecond per operator
    assert 0 < got["schedule.microbatch"] < 0.05 and 0 <= got["schedule.step"] < 0.05


def test_a_measurement_of_a_cpu_with_other_vector_extensions_is_not_used(tmp_path, monkeypatch):
    assert set(cpu_features()) <= set(VECTOR_FLAGS)
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    local.save_cached(_measurement(_worker(0, local.fingerprint()["host"])))
    assert local.load_cached() is not None
    path = tmp_path / "local-peaks.json"
    data = json.loads(path.read_text())
    data["fingerprint"]["cpu_features"] = ["avx2"] if "avx512f" in cpu_features() else ["avx512f"]
    path.write_text(json.dumps(data))
    assert local.load_cached() is None


def test_a_device_without_a_profile_pays_no_runtime_cost(tmp_path, monkeypatch):
    cluster = _cluster(tmp_path, monkeypatch, schedule=True)
    d0, _ = devices_of(cluster, "fp32")
    bare = replace(d0, peaks=None)
    assert cost.schedule_step_s(bare.priced()) == 0.0
    assert cost.schedule_microbatch_s(bare.priced()) == 0.0
