"""A CPU worker whose siblings idle runs faster than each of several busy ones: ``hw measure --nproc
N`` also measures one worker alone, ``local`` carries it beside each worker's figures, and a plan
that uses one device of a node prices it with them."""

from trainplay.hardware import dump_cluster, load_cluster, local
from trainplay.plan.costs import AFFINE_KEYS, BlockCosts, CostModel, devices_of, running
from trainplay.plan.layout import Layout, work_of
from trainplay.plan.search import search
from trainplay.plan.simulate import iteration_s
from trainplay.runtime.calibration import calibrated

from .test_measurement_cluster import _measurement, _worker

BUSY_FLOPS, ALONE_FLOPS = 1e11, 3e11


def _cached(tmp_path, monkeypatch, *, alone: bool = True):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    host = local.fingerprint()["host"]
    flops = {"apf": BUSY_FLOPS, "apf_by_dtype": {"fp32": BUSY_FLOPS}}
    local.save_cached(_measurement(_worker(0, host, **flops), _worker(1, host, **flops)))
    if alone:  # one worker with a busy worker's thread, the other idle
        fast = {"apf": ALONE_FLOPS, "apf_by_dtype": {"fp32": ALONE_FLOPS}}
        local.save_cached(_measurement(_worker(0, host, **fast)))
    return local.local_cluster(2, measure_if_missing=False)


def _blocks(n: int = 4) -> BlockCosts:
    """``n`` compute-heavy blocks with 1 MB of parameters each."""
    zeros = tuple(0.0 for _ in range(n))
    fixed = dict.fromkeys(AFFINE_KEYS, zeros)
    per = dict.fromkeys(AFFINE_KEYS, zeros) | {
        "fwd_flops": (1e9,) * n,
        "bwd_flops": (2e9,) * n,
        "activation_bytes": (1e3,) * n,
        "saved_bytes": (1e3,) * n,
    }
    return BlockCosts(
        model="synthetic", dtype="fp32", names=tuple(f"b{i}" for i in range(n)), fixed=fixed,
        per_sample=per, param_bytes=(2**20,) * n, input_bytes_per_sample=1e3,
    )  # fmt: skip


def test_the_local_cluster_carries_one_worker_alone(tmp_path, monkeypatch):
    cluster = _cached(tmp_path, monkeypatch)
    peaks = [w.peaks() for w in cluster.workers()]
    assert [p.apf for p in peaks] == [BUSY_FLOPS, BUSY_FLOPS]
    assert [p.alone.apf for p in peaks] == [ALONE_FLOPS, ALONE_FLOPS]
    path = tmp_path / "c.yaml"
    path.write_text(dump_cluster(cluster))
    assert load_cluster(path) == cluster  # it travels in the cluster file
    assert peaks[0].for_dtype("bf16", 5e10).alone.apf == ALONE_FLOPS / 2


def test_a_worker_alone_is_not_the_one_process_layout(tmp_path, monkeypatch):
    """``1x1`` (one thread, the other CPU idle) is never what a one-process job of two threads is
    priced with when ``1x2`` is cached, and is what ``threads=1`` asks for."""
    _cached(tmp_path, monkeypatch)
    host = local.fingerprint()["host"]
    whole = _measurement(_worker(0, host, threads=2, apf=2e11, apf_by_dtype={"fp32": 2e11}))
    local.save_cached(whole)
    assert local.load_cached(1, threads=1).workers[0].peaks.apf == ALONE_FLOPS
    assert local.load_cached(1, threads=2) == whole
    assert local.cached_layouts() == ["1x1", "1x2", "2x1"]


def test_a_device_alone_on_its_node_is_priced_alone(tmp_path, monkeypatch):
    d0, d1 = devices_of(_cached(tmp_path, monkeypatch), "fp32")
    assert running(((d0,),)) == ((d0.alone,),)
    assert running(((d0, d1),)) == ((d0, d1),)  # both busy
    assert running(((d0,), (d1,))) == ((d0,), (d1,))
    assert running(running(((d0,),))) == ((d0.alone,),)
    cm = CostModel(_blocks(), _cached(tmp_path, monkeypatch), "sgd")
    one = Layout(((d0,),), (0, 4), 1, (8,), "gpipe", ((False,),))
    busy = Layout(((d0, d1),), (0, 2, 4), 1, (8,), "gpipe", ((False, False),))
    compute_s = 8 * 3e9 * 4  # FLOPs of the batch
    assert iteration_s(work_of(cm, one)) > compute_s / ALONE_FLOPS
    assert iteration_s(work_of(cm, one)) < compute_s / BUSY_FLOPS / 2  # faster than either busy
    assert iteration_s(work_of(cm, busy)) > compute_s / BUSY_FLOPS / 2


def test_the_search_leaves_a_sibling_idle_when_one_worker_alone_is_faster(tmp_path, monkeypatch):
    for alone, used in ((True, 1), (False, 2)):
        cluster = _cached(tmp_path / str(alone), monkeypatch, alone=alone)
        cm = CostModel(_blocks(), cluster, "sgd")
        found = search(cm, devices_of(cluster, "fp32"), 8)
        devices = {d.id for row in found.layout.grid for d in row}
        assert len(devices) == used
        assert found.time_s == iteration_s(work_of(cm, found.layout))


def test_calibration_scales_the_device_alone_too(tmp_path, monkeypatch):
    d0, _ = devices_of(_cached(tmp_path, monkeypatch), "fp32")
    slow = calibrated(d0, 2.0)
    assert slow.apf == BUSY_FLOPS / 2 and slow.alone.apf == ALONE_FLOPS / 2
    assert slow.alone.solo and not slow.solo
