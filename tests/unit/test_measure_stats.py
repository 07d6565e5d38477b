"""Sampling until stable, the alpha-beta fit, and the single-process kernels on this CPU."""

import itertools

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from trainplay.hardware.measure.kernels import measure_apf, measure_apm
from trainplay.hardware.measure.stats import CV_TARGET, fit_alpha_beta, sample_until_stable


@given(
    alpha=st.floats(min_value=1e-7, max_value=1e-2),
    beta=st.floats(min_value=1e6, max_value=1e12),
)
def test_fit_recovers_an_exact_line(alpha, beta):
    sizes = [2.0**k for k in range(12, 27, 2)]
    fit = fit_alpha_beta(sizes, [alpha + s / beta for s in sizes])
    assert fit.alpha_s == pytest.approx(alpha, rel=1e-6, abs=1e-12)
    assert fit.beta_bps == pytest.approx(beta, rel=1e-6)
    assert fit.r2 == pytest.approx(1.0)


def test_fit_clamps_a_negative_intercept_and_reports_a_poor_line():
    sizes = [1e3, 1e4, 1e5, 1e6]
    fit = fit_alpha_beta(sizes, [0.0, 0.0, 1e-4, 1e-3])  # a line through them crosses below zero
    assert fit.alpha_s == 0.0 and fit.beta_bps > 0
    noisy = fit_alpha_beta(sizes, [5e-3, 1e-3, 4e-3, 2e-3])
    assert noisy.r2 < 0.5
    with pytest.raises(ValueError, match="two or more"):
        fit_alpha_beta([1.0], [1.0])


def test_sampling_stops_when_stable():
    values = iter([10.0, 50.0, 11.0, 10.0, 10.1, 10.0, 9.9, 10.0])
    result = sample_until_stable(lambda: next(values), budget_s=60)
    assert result.stable and result.cv < CV_TARGET
    assert len(result.values) == 7  # the last five of 7 values are 11, 10, 10.1, 10, 9.9
    assert result.median == 10.0


def test_sampling_stops_at_the_budget_and_says_unstable():
    ticks = itertools.count()
    values = itertools.cycle([1.0, 3.0])
    result = sample_until_stable(lambda: next(values), budget_s=5, clock=lambda: float(next(ticks)))
    assert not result.stable and result.cv > CV_TARGET
    assert len(result.values) == 7  # the clock passes the 5 s budget at the 7th sample


def test_gemm_and_stream_kernels_on_this_cpu():
    cpu = torch.device("cpu")
    apf = measure_apf(cpu, "fp32", [64, 128], budget_s=0.5)
    assert apf.best_size in (64, 128) and apf.flops == max(apf.by_size.values()) > 1e8
    apm = measure_apm(cpu, 8 * 2**20, budget_s=0.5)
    assert apm.bps == max(apm.copy_bps, apm.triad_bps) > 1e8
    assert apm.tensor_bytes == 8 * 2**20
