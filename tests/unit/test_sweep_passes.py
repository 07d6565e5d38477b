"""The operator sweep's passes (hardware/measure/sweeps.py): a case's result is its median over
passes timed a whole sweep apart, and its spread includes theirs."""

import pytest

from trainplay.hardware.measure import sweeps
from trainplay.hardware.measure.sweeps import Case, SweepResult, run_sweep


def _result(seconds: float, hot: float, cv: float, quiet: bool = True) -> SweepResult:
    return SweepResult("norm.fwd", "x", "aten.native_layer_norm", 0.0, 1e6, seconds, hot, cv, quiet)


def test_a_case_over_passes_is_their_median_and_the_larger_spread():
    got = sweeps._over_passes(
        [_result(3e-3, 2e-3, 0.01), _result(1e-3, 1e-3, 0.02), _result(2e-3, 1.5e-3, 0.0, False)]
    )
    assert got.seconds == pytest.approx(2e-3) and got.hot_s == pytest.approx(1.5e-3)
    # the hot times 1, 1.5 and 2 ms spread by stdev 0.5 / mean 1.5: more than any pass's own
    assert got.cv == pytest.approx(0.5 / 1.5)
    assert got.quiet is False  # one disturbed pass marks the case
    steady = sweeps._over_passes([_result(1e-3, 1e-3, 0.2), _result(1e-3, 1e-3, 0.1)])
    assert steady.cv == pytest.approx(0.2)  # passes that agree keep the within-pass spread
    only = _result(1e-3, 1e-3, 0.05)
    assert sweeps._over_passes([only]) is only


def test_a_products_stale_and_warm_times_over_passes_are_their_medians():
    def product(hot: float, stale: float, warm: float | None) -> SweepResult:
        return SweepResult(
            "gemm.fwd", "x", "aten.addmm", 1e8, 1e6, 2 * hot, hot, 0.0, True, stale, warm_s=warm
        )

    got = sweeps._over_passes([product(1e-3, 3e-3, 2e-3), product(2e-3, 5e-3, 4e-3),
                               product(3e-3, 4e-3, None)])  # fmt: skip
    assert got.stale_s == pytest.approx(4e-3)
    assert got.warm_s == pytest.approx(3e-3)  # over the passes that timed one


def test_every_pass_times_every_case_in_order(monkeypatch):
    timed: list[str] = []

    def fake_time_case(case, device, dtype, quiet, samples, sample_s, evictor, warm_bytes):
        timed.append(case.label)
        return _result(1e-3 * len(timed), 1e-3 * len(timed), 0.0)

    monkeypatch.setattr(sweeps, "_time_case", fake_time_case)
    case_list = [Case("norm.fwd", label, lambda d, t: None) for label in ("a", "b")]
    progress: list[float] = []
    got = run_sweep(sweeps.torch.device("cpu"), "fp32", case_list, passes=3,
                    progress=progress.append)  # fmt: skip
    assert timed == ["a", "b", "a", "b", "a", "b"]  # whole passes, one after another
    assert [r.seconds for r in got] == pytest.approx([3e-3, 4e-3])  # a: 1, 3, 5; b: 2, 4, 6 ms
    assert progress[-1] == pytest.approx(1.0) and progress == sorted(progress)


def test_one_real_case_over_two_passes():
    case = sweeps._elementwise("relu", 4096, "fwd")
    (got,) = run_sweep(sweeps.torch.device("cpu"), "fp32", [case], passes=2, sample_s=0.001)
    assert got.op == "aten.relu_" and got.bytes == 2 * 4 * 4096 and got.seconds > 0
