"""One way to price a device at another speed (:meth:`Peaks.scaled`): drift of the machine,
calibration from the runtime's timers, and a CPU split between more processes all use it."""

from dataclasses import replace

import pytest

from trainplay.hardware.profile import Curve, PerfProfile
from trainplay.hardware.spec import Peaks


def _peaks() -> Peaks:
    profile = PerfProfile(
        classes={
            "gemm.fwd": Curve(sizes=(1e6, 1e9), rates=(1e10, 4e10)),
            "norm.fwd": Curve(sizes=(1e6, 1e9), rates=(5e9, 8e9)),
        },
        overhead_s={"fwd": 10e-6, "optimizer.sgd": 40e-6},
        allreduce=Curve(sizes=(64.0, 1e8), rates=(1e8, 1e9)),
        allreduce_alpha_s=5e-4,
        source="measured",
    )
    alone = Peaks(apf=8e10, apm=2e10, profile=profile)
    return Peaks(
        apf=5e10, apm=1e10, apf_by_dtype={"fp32": 5e10}, apm_copy=9e9, apm_triad=1.1e10,
        profile=profile, alone=alone,
    )  # fmt: skip


def test_compute_and_memory_scale_apart():
    peaks = _peaks()
    got = peaks.scaled(0.5, 0.8, note="slower")
    assert (got.apf, got.apm) == (pytest.approx(2.5e10), pytest.approx(0.8e10))
    assert got.apf_by_dtype["fp32"] == pytest.approx(2.5e10)
    assert (got.apm_copy, got.apm_triad) == (pytest.approx(7.2e9), pytest.approx(8.8e9))
    assert got.profile.classes["gemm.fwd"].rate(1e9) == pytest.approx(2e10)
    assert got.profile.classes["norm.fwd"].rate(1e9) == pytest.approx(6.4e9)
    assert got.profile.overhead("fwd") == pytest.approx(20e-6)  # the core dispatches slower
    assert got.profile.overhead("optimizer.sgd") == pytest.approx(50e-6)
    assert got.profile.allreduce == peaks.profile.allreduce  # the network did not change
    assert got.profile.source == "measured; slower"
    assert got.alone.apf == pytest.approx(4e10) and got.alone.apm == pytest.approx(1.6e10)


def test_one_factor_scales_both_and_fixed_costs_may_stay():
    peaks = _peaks()
    got = peaks.scaled(0.5, overheads=False)
    assert got.apm == pytest.approx(0.5e10)
    assert got.profile.classes["norm.fwd"].rate(1e6) == pytest.approx(2.5e9)
    assert got.profile.overhead_s == peaks.profile.overhead_s
    assert got.profile.source == "measured"


def test_unchanged_speed_is_the_same_value():
    peaks = _peaks()
    assert peaks.scaled(1.0) is peaks
    assert peaks.scaled(1.0, 1.0, note="x") is peaks
    bare = replace(peaks, profile=None, alone=None)
    assert bare.scaled(2.0).apf == pytest.approx(1e11) and bare.scaled(2.0).profile is None


def test_a_dtype_scales_only_the_compute_classes():
    profile = _peaks().profile
    bf16 = profile.for_dtype("bf16", 4.0)
    assert bf16.dtype == "bf16"
    assert bf16.classes["gemm.fwd"].rate(1e6) == pytest.approx(4e10)
    assert bf16.classes["norm.fwd"] == profile.classes["norm.fwd"]
    assert bf16.overhead_s == profile.overhead_s
