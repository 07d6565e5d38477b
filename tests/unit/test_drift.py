"""A profile is priced at the machine's speed now: the reference microbenchmark timed after the
measurement, timed again at each use of ``local``."""

import json
from dataclasses import replace

import pytest

from trainplay.hardware import drift, local
from trainplay.hardware.measurement import Measurement
from trainplay.hardware.profile import Curve, PerfProfile

from .test_measurement_cluster import _measurement, _worker

THEN = {"compute": 40e9, "memory": 10e9}


def _profile() -> PerfProfile:
    return PerfProfile(
        classes={
            "gemm.fwd": Curve(sizes=(1e6, 1e9), rates=(1e10, 4e10)),
            "norm.fwd": Curve(sizes=(1e6, 1e9), rates=(5e9, 8e9)),
        },
        overhead_s={"fwd": 10e-6, "optimizer.sgd": 40e-6},
    )


def test_the_reference_is_timed_on_this_cpu():
    rates = drift.reference_rates(samples=2)
    assert set(rates) == {"compute", "memory"}
    assert rates["compute"] > 1e8 and rates["memory"] > 1e7


def test_small_changes_are_noise_and_large_ones_a_ratio():
    assert drift.drift_of(THEN, {"compute": 41e9, "memory": 9.6e9}) == {
        "compute": 1.0,
        "memory": 1.0,
    }
    assert drift.drift_of(THEN, {"compute": 20e9, "memory": 12e9}) == {
        "compute": 0.5,
        "memory": pytest.approx(1.2),
    }
    assert drift.drift_of({}, THEN) == {"compute": 1.0, "memory": 1.0}


def test_a_drifted_machine_prices_compute_and_memory_at_their_ratios():
    peaks = _worker(0, profile=_profile().to_dict()).peaks
    slow = drift.drifted(peaks, {"compute": 0.5, "memory": 0.8})
    assert slow.apf == peaks.apf * 0.5 and slow.apm == peaks.apm * 0.8
    assert slow.profile.classes["gemm.fwd"].rate(1e6) == pytest.approx(0.5e10)
    assert slow.profile.classes["norm.fwd"].rate(1e6) == pytest.approx(4e9)
    assert slow.profile.overhead("fwd") == pytest.approx(20e-6)  # the core runs slower
    assert slow.profile.overhead("optimizer.sgd") == pytest.approx(50e-6)
    assert drift.drifted(peaks, {"compute": 1.0, "memory": 1.0}) is peaks


def test_local_tells_a_drift_and_prices_it_when_asked(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    host = local.fingerprint()["host"]
    m = _measurement(_worker(0, host, profile=_profile().to_dict()))
    measured = Measurement.from_dict({**json.loads(m.to_json()), "reference": THEN})
    assert Measurement.from_dict(json.loads(measured.to_json())) == measured
    local.save_cached(measured)
    timed = []

    def now() -> dict[str, float]:
        timed.append(1)
        return {"compute": 20e9, "memory": 10e9}

    monkeypatch.setattr(drift, "reference_now", now)
    monkeypatch.setattr(local, "_TOLD", set())
    # by default a drift is told, and the machine priced as measured
    (worker,) = local.local_cluster(1, measure_if_missing=False, show_progress=True).workers()
    assert worker.peaks().apf == 1e11
    told = capsys.readouterr().err
    assert "compute 50% slower than when `local` was measured" in told
    assert "priced as measured" in told
    # told once: a later use neither says it again nor times the reference for nothing
    (worker,) = local.local_cluster(1, measure_if_missing=False, show_progress=True).workers()
    assert worker.peaks().apf == 1e11 and timed == [1] and not capsys.readouterr().err
    # TRAINPLAY_DRIFT=price prices it at its speed now
    monkeypatch.setenv(local.DRIFT_ENV, "price")
    (worker,) = local.local_cluster(1, measure_if_missing=False).workers()
    assert worker.peaks().apf == pytest.approx(0.5e11)
    # a pooled profile is named by the moments pooled: its reference is their median's
    monkeypatch.delenv(local.DRIFT_ENV)
    monkeypatch.setattr(local, "_TOLD", set())
    pooled = replace(measured, pooled_from=("2026-12-07T06:34", "2026-12-07T12:01"))
    local.save_cached(pooled)
    local.local_cluster(1, measure_if_missing=False, show_progress=True)
    told = capsys.readouterr().err
    assert "(pooled over 2 measurements, 2026-12-07T06:34 to 2026-12-07T12:01)" in told
    # a measurement without a reference (an older one) is priced as measured
    local.save_cached(m)
    (worker,) = local.local_cluster(1, measure_if_missing=False).workers()
    assert worker.peaks().apf == 1e11
