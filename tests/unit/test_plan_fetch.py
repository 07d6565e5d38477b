"""Taking the batch: measured on the job's own data set (``runtime.fetch``), priced before each
replica's pipeline (``CostModel.fetch_s``) by every path that prices a plan."""

from __future__ import annotations

import pytest
import torch

from tests.unit.test_plan_search import blocks_of, cluster_of
from trainplay.plan.costs import CostModel, devices_of
from trainplay.plan.layout import Layout, work_of
from trainplay.plan.search import SearchOptions, search
from trainplay.plan.simulate import iteration_s, sample_stages, simulate
from trainplay.runtime.data import open_data
from trainplay.runtime.fetch import SAMPLES, measure_fetch
from trainplay.runtime.order import SampleOrder

ROWS = [(5e9, 1e6, 1e5, 1e5)] * 4
GPIPE = SearchOptions(schedules=("gpipe",))


def _models(kinds: list[str], fetch: dict[int, tuple[float, float]]):
    """The same blocks and cluster priced without and with ``fetch`` (device index -> cost)."""
    bare = CostModel(blocks_of(ROWS), cluster_of([kinds]), "sgd")
    devices = devices_of(bare.cluster, "fp32")
    priced = CostModel(
        bare.blocks, bare.cluster, "sgd", data_fetch={devices[i].id: f for i, f in fetch.items()}
    )
    return bare, priced, devices


def test_one_device_pays_fixed_plus_per_sample_once():
    bare, priced, devices = _models(["mid"], {0: (0.003, 0.0005)})
    without = search(bare, devices, 32, GPIPE)
    found = search(priced, devices, 32, GPIPE)
    assert without is not None and found is not None
    assert found.time_s == pytest.approx(without.time_s + 0.003 + 0.0005 * 32)
    # the simulator prices the same layout alike, with the fetch first on the device's lane
    work = work_of(priced, found.layout)
    assert work is not None and iteration_s(work) == pytest.approx(found.time_s)
    timeline = simulate(work)
    data = [e for e in timeline.events if e.name == "data"]
    assert [(e.start_s, e.end_s) for e in data] == [(0.0, pytest.approx(0.019))]
    assert min(e.start_s for e in timeline.events if e.name != "data") == pytest.approx(0.019)


def test_each_replica_fetches_its_own_share_and_the_slowest_rank_sets_it():
    bare, priced, devices = _models(["mid", "mid"], {0: (0.001, 0.001), 1: (0.0, 0.0002)})
    a, b = devices
    layout = Layout(((a,), (b,)), (0, 4), 1, (48, 16), "gpipe", ((False,), (False,)))
    base = work_of(bare, layout)
    work = work_of(priced, layout)
    assert base is not None and work is not None
    assert [p.fetch_s for p in work.replicas] == [pytest.approx(0.049), pytest.approx(0.0032)]
    assert priced.fetch_s((a, b), 10) == pytest.approx(0.011)  # one replica over both: slowest
    assert bare.fetch_s((a, b), 10) == 0.0  # nothing measured: inputs are ready


def test_only_the_first_and_last_stage_take_samples():
    # a middle stage reads nothing (trainplay train hands it activations): its slow reader costs
    # nothing, and the simulator draws the fetch on the two ends' lanes only
    _, priced, devices = _models(["mid"] * 3, {0: (0.001, 0.0), 1: (0.5, 0.5), 2: (0.002, 0.0)})
    a, b, c = devices
    assert priced.fetch_s((a, b, c), 10) == pytest.approx(0.002)
    assert priced.fetch_s((b,), 10) == pytest.approx(5.5)  # alone, it is both ends
    layout = Layout(((a, b, c),), (0, 1, 2, 4), 8, (16,), "gpipe", ((False, False, False),))
    work = work_of(priced, layout)
    assert work is not None and work.replicas[0].fetch_s == pytest.approx(0.002)
    data = [e for e in simulate(work).events if e.name == "data"]
    assert sorted(e.stage for e in data) == [0, 2]
    # the one rule the runtime fetches by and every price follows
    assert [sample_stages(n) for n in (1, 2, 3, 4)] == [(0,), (0, 1), (0, 2), (0, 3)]


def test_a_slow_reader_gets_fewer_samples():
    # Two like devices; one takes 2 ms more per sample to read its data: the search gives it less
    # of the batch than the other, where without the fetch the two split it evenly.
    bare, priced, devices = _models(["mid", "mid"], {0: (0.0, 0.002), 1: (0.0, 0.0)})
    even = search(bare, devices, 64, GPIPE)
    found = search(priced, devices, 64, GPIPE)
    assert even is not None and even.layout.replicas == 2 and set(even.layout.shares) == {32}
    assert found is not None
    shares = dict(zip((row[0].id for row in found.layout.grid), found.layout.shares, strict=True))
    assert shares.get(devices[0].id, 0) < shares[devices[1].id]


def test_measured_fetch_recovers_a_known_cost():
    # tests.data.datasets:paced sleeps 2 ms a sample; stacking adds a little, fixed work a little
    data = open_data("tests.data.datasets:paced")
    fixed, per_sample = measure_fetch(data, SampleOrder(dataset_size=data.size, global_batch=64))
    assert 0.002 <= per_sample < 0.003
    assert 0.0 <= fixed < 0.002
    # a global batch of one sample: all of it is per sample
    one = measure_fetch(data, SampleOrder(dataset_size=data.size, global_batch=1), repeats=3)
    assert one[0] == 0.0 and 0.002 <= one[1] < 0.004
    assert SAMPLES > 1


def test_the_epoch_permutation_is_drawn_once_and_never_written():
    order = SampleOrder(dataset_size=1000, global_batch=100, seed=3)
    first = order.indices(0)
    first[:] = -1  # a caller writing to what it got does not change the next step's samples
    again = order.indices(0)
    assert sorted(again.tolist()) == sorted(order.indices(0).tolist())
    assert (again >= 0).all()
    generator = torch.Generator().manual_seed(3)
    assert torch.equal(again, torch.randperm(1000, generator=generator)[:100])
