"""``benchmarks/round_spread.py``: the round-to-round noise of a validation run's cases."""

import pytest
from benchmarks.round_spread import spread


def row(model: str, runs: list[float], error: float) -> dict:
    return {
        "model": model,
        "batch": 4,
        "procs": 1,
        "layout": "dp",
        "error": error,
        "runs": [{"measured_s": r} for r in runs],
    }


def test_figures_of_two_cases():
    got = spread([row("a", [0.8, 1.0, 1.2], 0.10), row("b", [2.0, 2.0, 2.2], -0.20)])
    assert got is not None
    assert got["cases"] == 2 and got["rounds"] == 3
    assert got["mape"] == pytest.approx(15.0)
    # a: |0.8-1|, 0, |1.2-1| ; b: 0, 0, 0.1 -> mean of six runs
    assert got["run_off_median"] == pytest.approx(100 * (0.2 + 0.2 + 0.1) / 6)
    assert got["median_range"] == pytest.approx(100 * (0.4 + 0.1) / 2)
    assert got["widest_range"] == pytest.approx(40.0)
    assert got["widest_case"] == "a b4 x1 dp"


def test_a_run_of_one_round_has_no_spread():
    assert spread([{"model": "a", "batch": 1, "procs": 1, "layout": "dp", "error": 0.1}]) is None
    assert spread([row("a", [1.0], 0.1)]) is None
