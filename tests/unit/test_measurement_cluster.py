"""A measurement becomes a cluster with its peaks beside each device; the local cache."""

import json

import pytest

from trainplay.hardware import dump_cluster, load_cluster, local
from trainplay.hardware.measurement import Measurement, WorkerPeaks


def _worker(rank, host="node0", **extra):
    values = dict(
        rank=rank,
        host=host,
        device="Test CPU (1 thread)",
        device_type="cpu",
        threads=1,
        dtype="fp32",
        apf=1e11 * (rank + 1),
        apf_by_dtype={"fp32": 1e11 * (rank + 1)},
        apf_gemm_size=1024,
        apm=2e10,
        apm_copy=1.8e10,
        apm_triad=2e10,
        apm_tensor_bytes=2**28,
        mem_bytes=2**33,
        apb=1e9,
        alpha_s=5e-4,
        beta_bps=9e8,
        r2=0.99,
        p2p_bps=3e9,
        p2p_alpha_s=3e-4,
        p2p_beta_bps=2.8e9,
        p2p_r2=0.98,
        spread={"apf": 0.01, "apm": 0.02, "apb": 0.03},
    )
    values.update(extra)
    return WorkerPeaks.from_dict(values)


def _measurement(*workers):
    return Measurement(
        workers=workers,
        backend="gloo",
        quick=True,
        seconds=9.0,
        torch_version="2.14.1",
        measured_at="2026-11-30T10:00:00+00:00",
    )


def test_measurement_to_cluster_and_yaml_round_trip(tmp_path):
    m = _measurement(_worker(0), _worker(1))
    cluster = m.to_cluster("lab")
    assert [w.peaks().apf for w in cluster.workers()] == [1e11, 2e11]
    assert (
        cluster.nodes[0].intra_link.bandwidth_bps == 2.8e9
        and cluster.nodes[0].intra_link.latency_s == 3e-4
    )
    assert cluster.inter_link is None
    path = tmp_path / "lab.yaml"
    path.write_text(dump_cluster(cluster))
    assert load_cluster(path) == cluster
    assert Measurement.from_dict(json.loads(m.to_json())) == m


def test_two_hosts_get_an_inter_link_from_the_all_reduce_fit():
    cluster = _measurement(
        _worker(0, "a"), _worker(1, "b", beta_bps=5e8, alpha_s=1e-3)
    ).to_cluster()
    assert [n.name for n in cluster.nodes] == ["a", "b"]
    assert cluster.inter_link.bandwidth_bps == 5e8 and cluster.inter_link.latency_s == 1e-3


def test_a_catalog_gpu_keeps_its_datasheet_beside_the_measurement():
    gpu = _worker(
        0,
        device="NVIDIA H200",
        device_type="cuda",
        apf=7e14,
        apf_by_dtype={"bf16": 7e14},
        dtype="bf16",
    )
    (device,) = _measurement(gpu).to_cluster().nodes[0].devices
    assert device.type == "H200" and device.peak_flops["bf16"] == 989.5e12
    assert device.peaks(0, "bf16").apf == 7e14


def test_cache_round_trip_and_fingerprint(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    assert local.load_cached() is None
    with pytest.raises(Exception, match="run `trainplay hw measure"):
        local.cpu_device()
    m = _measurement(_worker(0, host=local.fingerprint()["host"]))
    assert local.save_cached(m) == tmp_path / "local-peaks.json"
    assert local.load_cached() == m
    cpu = local.cpu_device()
    assert cpu.type == "cpu" and cpu.peak_flops == {"fp32": 1e11} and cpu.measured[0].apm == 2e10
    cluster = local.local_cluster(measure_if_missing=False)
    assert cluster.workers()[0].peaks().apf == 1e11
    # a cluster file can now say `type: cpu`
    path = tmp_path / "c.yaml"
    path.write_text("name: c\nnodes:\n  - {name: n, devices: [{type: cpu}]}\n")
    assert local.resolve_cluster(str(path)).workers()[0].peaks().apf == 1e11
    # another machine's cache is not this machine's
    data = json.loads((tmp_path / "local-peaks.json").read_text())
    data["fingerprint"]["cpu"] = "some other CPU"
    (tmp_path / "local-peaks.json").write_text(json.dumps(data))
    assert local.load_cached() is None


def test_multi_host_measurements_are_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    assert local.save_cached(_measurement(_worker(0, "a"), _worker(1, "b"))) is None


def test_a_clamped_zero_latency_is_a_valid_measurement():
    """fit_alpha_beta clamps a negative intercept to 0; reading that result back must accept it."""
    worker = _worker(0, p2p_alpha_s=0.0, alpha_s=0.0)
    assert worker.peaks.p2p_alpha_s == 0.0
    m = _measurement(worker, _worker(1))
    assert Measurement.from_dict(json.loads(m.to_json())) == m
    assert m.to_cluster().nodes[0].intra_link.latency_s > 0


def test_the_cache_keeps_one_measurement_per_process_layout(tmp_path, monkeypatch):
    """A one-process analysis never uses a two-process measurement, and the other way round."""
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    host = local.fingerprint()["host"]
    one = _measurement(_worker(0, host=host, threads=2, apf=2e11, apf_by_dtype={"fp32": 2e11}))
    two = _measurement(_worker(0, host=host), _worker(1, host=host))
    local.save_cached(one)
    assert local.load_cached(2) is None
    local.save_cached(two)
    assert local.load_cached(1) == one and local.load_cached(2) == two
    assert local.cached_layouts() == ["1x2", "2x1"]
    assert [w.peaks().apf for w in local.resolve_cluster("local").workers()] == [2e11]
    assert len(local.resolve_cluster("local", workers=2).workers()) == 2
    assert len(local.resolve_cluster("local:2").workers()) == 2
    with pytest.raises(Exception, match="local:N takes a positive number"):
        local.resolve_cluster("local:zero")
    with pytest.raises(Exception, match="hw measure --nproc 3"):
        local.local_cluster(3, measure_if_missing=False)


def test_a_measurement_carries_its_performance_profile(tmp_path):
    from trainplay.hardware.profile import Curve, PerfProfile

    profile = PerfProfile(
        classes={"conv.fwd": Curve(sizes=(1e6, 1e9), rates=(5e10, 2e11))},
        overhead_s={"fwd": 3e-6},
        workers=2,
        threads=1,
    )
    worker = _worker(0, profile=profile.to_dict())
    assert worker.peaks.profile == profile
    m = _measurement(worker, _worker(1))
    again = Measurement.from_dict(json.loads(m.to_json()))
    assert again.workers[0].peaks.profile == profile
    path = tmp_path / "c.yaml"
    path.write_text(dump_cluster(m.to_cluster("c")))
    assert load_cluster(path).workers()[0].peaks().profile == profile


def test_the_operator_sweeps_are_summed_up_under_the_table():
    from dataclasses import replace

    from trainplay.hardware.profile import PerfProfile
    from trainplay.report.hardware_tables import sweep_notes

    def swept(rank: int, source: str) -> WorkerPeaks:
        w = _worker(rank)
        return replace(w, peaks=replace(w.peaks, profile=PerfProfile(source=source)))

    again = "trainplay hw measure: 601 operator cases, median of 3 pass(es), 418 timed again"
    m = _measurement(swept(0, again), swept(1, again), swept(2, "trainplay hw measure: 601 x"))
    assert sweep_notes(m) == [
        "operator sweep, ranks 0, 1: 601 operator cases, median of 3 pass(es), 418 timed again",
        "operator sweep, rank 2: 601 x",
    ]
    assert sweep_notes(_measurement(_worker(0))) == []  # peaks without a profile: nothing to say
