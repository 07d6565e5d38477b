"""Catalog GPUs' profiles from published microbenchmarks: sourced, monotone, used by default."""

import pytest

from trainplay.hardware import catalog
from trainplay.hardware.published_profiles import catalog_profile


def test_deepbench_curves_rise_with_size_and_stay_below_the_datasheet():
    for device, dtype, peak in (("V100-16GB", "fp16", 125e12), ("T4", "fp32", 8.1e12)):
        profile = catalog_profile(device, dtype)
        for key in ("gemm", "conv.fwd", "conv.bwd"):
            rates = profile.classes[key].rates
            assert list(rates) == sorted(rates), key  # monotone in size
        assert max(profile.classes["gemm"].rates) < peak
        assert profile.asynchronous and "DeepBench" in profile.source


def test_devices_without_published_microbenchmarks_have_no_profile():
    assert catalog_profile("L4", "fp16") is None
    assert catalog_profile("RTX3090", "fp16") is None  # a GEMM number, but no bandwidth one
    assert catalog_profile("V100-16GB", "bf16") is None  # Volta has no bf16


def test_a_best_over_sizes_device_borrows_its_architectures_curve_shape():
    t4 = catalog_profile("T4", "fp16").classes["gemm"]
    ti = catalog_profile("RTX2080Ti", "fp16").classes["gemm"]
    assert ti.sizes == t4.sizes
    assert max(ti.rates) == pytest.approx(44.9e12, rel=0.05)  # scaled to bewantbe's n=8000 figure
    ratios = [a / b for a, b in zip(ti.rates, t4.rates, strict=True)]
    assert max(ratios) == pytest.approx(min(ratios))


def test_catalog_peaks_carry_the_published_profile():
    v100 = catalog.device("V100-16GB")
    assert v100.peaks(0, "fp16").profile == catalog_profile("V100-16GB", "fp16")
    assert catalog.device("L4").peaks(0, "fp16").profile is None
