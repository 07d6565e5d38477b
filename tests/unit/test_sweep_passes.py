"""The operator sweep's passes (hardware/measure/sweeps.py, passes.py): a case's result is its
median over passes timed a whole sweep apart, its spread includes theirs, and the cases whose
passes disagree are timed again until they agree or the passes run out."""

import json
import textwrap
from dataclasses import replace

import pytest

from tests.integration.elastic import gloo_ranks
from trainplay.hardware.measure import sweeps
from trainplay.hardware.measure.passes import over_passes, unsettled
from trainplay.hardware.measure.sweeps import Case, SweepResult, run_sweep
from trainplay.hardware.measure.worker import _passes_note


def _result(seconds: float, hot: float, cv: float, quiet: bool = True) -> SweepResult:
    return SweepResult("norm.fwd", "x", "aten.native_layer_norm", 0.0, 1e6, seconds, hot, cv, quiet)


def test_a_case_over_passes_is_their_median_and_the_larger_spread():
    got = over_passes(
        [_result(3e-3, 2e-3, 0.01), _result(1e-3, 1e-3, 0.02), _result(2e-3, 1.5e-3, 0.0, False)]
    )
    assert got.seconds == pytest.approx(2e-3) and got.hot_s == pytest.approx(1.5e-3)
    # the hot times 1, 1.5 and 2 ms spread by stdev 0.5 / mean 1.5: more than any pass's own
    assert got.cv == pytest.approx(0.5 / 1.5)
    assert got.quiet is False  # one disturbed pass marks the case
    assert got.passes == 3 and got.settled is False  # cold 1-3 ms: far apart
    steady = over_passes([_result(1e-3, 1e-3, 0.2), _result(1e-3, 1e-3, 0.1)])
    assert steady.cv == pytest.approx(0.2)  # passes that agree keep the within-pass spread
    only = _result(1e-3, 1e-3, 0.05)
    assert over_passes([only]) is only


def test_a_products_stale_and_warm_times_over_passes_are_their_medians():
    def product(hot: float, stale: float, warm: float | None) -> SweepResult:
        return SweepResult(
            "gemm.fwd", "x", "aten.addmm", 1e8, 1e6, 2 * hot, hot, 0.0, True, stale, warm_s=warm
        )

    got = over_passes([product(1e-3, 3e-3, 2e-3), product(2e-3, 5e-3, 4e-3),
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


def test_passes_agree_when_every_time_varies_less_than_the_limit():
    close = [_result(1e-3, 1e-3, 0.0), _result(1.05e-3, 1e-3, 0.0), _result(0.95e-3, 1e-3, 0.0)]
    assert not unsettled(close)  # cold times 5% from their median, in the middle
    assert unsettled(close, limit=0.04)
    wild = [_result(1e-3, 1e-3, 0.0), _result(1.02e-3, 1e-3, 0.0), _result(3e-3, 1e-3, 0.0)]
    assert not unsettled(wild)  # two passes agree; the third does not move the median
    spread = [_result(1e-3, 1e-3, 0.0), _result(1.15e-3, 1e-3, 0.0), _result(1.3e-3, 1e-3, 0.0)]
    assert unsettled(spread)  # only the median itself lies within 10% of it
    hot_apart = [_result(1e-3, 1e-3, 0.0), _result(1e-3, 2e-3, 0.0)]
    assert unsettled(hot_apart)  # the hot times disagree though the cold ones agree
    assert not unsettled([_result(1e-3, 1e-3, 0.0)])  # one pass always agrees

    def product(stale: float | None) -> SweepResult:
        return SweepResult("gemm.fwd", "x", "aten.addmm", 1e8, 1e6, 1e-3, 1e-3, 0.0, True, stale)

    # a time one pass left out is judged over the passes that have it
    assert not unsettled([product(2e-3), product(None), product(2e-3)])
    assert unsettled([product(2e-3), product(None), product(4e-3)])


def _fake_sweep(monkeypatch, seconds_by_label: dict[str, list[float]]) -> list[str]:
    """``_time_case`` returning each label's next time in turn; the labels timed, in order."""
    timed: list[str] = []
    left = {label: list(times) for label, times in seconds_by_label.items()}

    def fake_time_case(case, device, dtype, quiet, samples, sample_s, evictor, warm_bytes):
        timed.append(case.label)
        t = left[case.label].pop(0)
        return _result(t, t, 0.0)

    monkeypatch.setattr(sweeps, "_time_case", fake_time_case)
    return timed


def test_only_the_cases_whose_passes_disagree_are_timed_again(monkeypatch):
    timed = _fake_sweep(
        monkeypatch,
        {
            "steady": [1e-3, 1e-3, 1e-3],
            "settles": [1e-3, 1.3e-3, 1.6e-3, 1.3e-3, 1.3e-3],  # three of five at the median
            "wild": [1e-3, 2e-3, 4e-3, 1.5e-3, 3e-3],  # never agrees
        },
    )
    case_list = [
        Case("norm.fwd", label, lambda d, t: None) for label in ("steady", "settles", "wild")
    ]
    progress: list[float] = []
    got = run_sweep(sweeps.torch.device("cpu"), "fp32", case_list, passes=3, more_passes=2,
                    progress=progress.append)  # fmt: skip
    assert timed == ["steady", "settles", "wild"] * 3 + ["settles", "wild"] * 2
    steady, settles, wild = got
    assert (steady.passes, settles.passes, wild.passes) == (3, 5, 5)
    assert steady.settled and settles.settled and not wild.settled
    assert settles.seconds == pytest.approx(1.3e-3)
    assert progress == sorted(progress) and progress[-1] == pytest.approx(1.0)


def test_more_passes_stop_as_soon_as_every_case_agrees(monkeypatch):
    # a: 1, 1.15, 1.3 ms (13% from their median), then with 1.15 a second pass at the median
    timed = _fake_sweep(monkeypatch, {"a": [1e-3, 1.15e-3, 1.3e-3, 1.15e-3], "b": [1e-3] * 3})
    case_list = [Case("norm.fwd", label, lambda d, t: None) for label in ("a", "b")]
    got = run_sweep(sweeps.torch.device("cpu"), "fp32", case_list, passes=3, more_passes=2)
    assert timed == ["a", "b"] * 3 + ["a"]
    assert [r.passes for r in got] == [4, 3] and all(r.settled for r in got)


def test_every_worker_times_the_cases_any_of_them_flags(monkeypatch):
    timed = _fake_sweep(monkeypatch, {"a": [1e-3] * 4, "b": [1e-3] * 4})
    case_list = [Case("norm.fwd", label, lambda d, t: None) for label in ("a", "b")]
    asked: list[list[bool]] = []

    def another_worker_flags_b(flags: list[bool]) -> list[bool]:
        asked.append(flags)
        return [flags[0], True] if len(asked) == 1 else flags

    got = run_sweep(sweeps.torch.device("cpu"), "fp32", case_list, passes=3, more_passes=2,
                    agree=another_worker_flags_b)  # fmt: skip
    assert asked[0] == [False, False]  # this worker's own passes agree
    assert timed == ["a", "b"] * 3 + ["b"] and [r.passes for r in got] == [3, 4]


def test_no_more_passes_after_a_single_one(monkeypatch):
    timed = _fake_sweep(monkeypatch, {"a": [1e-3]})
    run_sweep(sweeps.torch.device("cpu"), "fp32", [Case("norm.fwd", "a", lambda d, t: None)],
              passes=1, more_passes=2)  # fmt: skip
    assert timed == ["a"]  # one pass (--quick, a GPU) has nothing to disagree with


AGREE = textwrap.dedent(
    """
    import json, os
    import torch.distributed as dist
    from trainplay.hardware.measure.worker import _any_rank

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    try:
        print(json.dumps(_any_rank([rank == 0, False, rank == 1])))
    finally:
        dist.destroy_process_group()
    """
)


def test_two_ranks_time_again_what_either_flags():
    for rank, (code, out, err) in enumerate(gloo_ranks(AGREE)):
        assert code == 0, f"rank {rank}, exit {code}: {out!r} {err}"
        assert json.loads(out) == [True, False, True]


def test_the_profile_says_how_many_cases_were_timed_again():
    results = [
        replace(_result(1e-3, 1e-3, 0.0), passes=3),
        replace(_result(1e-3, 1e-3, 0.0), passes=5),
        replace(_result(1e-3, 1e-3, 0.0), passes=5, settled=False),
    ]
    assert _passes_note(results, 3) == (
        "2 timed again (up to 5 passes in all) as their passes lay more than 10% from their "
        "median (1 still did after them), "
    )
    assert _passes_note(results[:1], 3) == ""  # every case agreed at once: nothing to say
