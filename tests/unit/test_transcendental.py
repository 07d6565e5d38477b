"""Elementwise operators that evaluate an exponential per element (workload/opclass.py,
``TRANSCENDENTAL``): their own curves, their in-place siblings', the swept stand-in's, never the
arithmetic class curve."""

import pytest
import torch

from trainplay.hardware.measure import sweeps
from trainplay.hardware.measure.sweeps import SweepResult, curves_of
from trainplay.hardware.profile import Curve, PerfProfile
from trainplay.hardware.spec import Peaks
from trainplay.roofline import cost
from trainplay.workload.opclass import TRANSCENDENTAL

ARITHMETIC = Curve(sizes=(1e4, 1e8), rates=(100e9, 100e9))
GELU = Curve(sizes=(1e4, 1e8), rates=(30e9, 30e9))
GELU_BWD = Curve(sizes=(1e4, 1e8), rates=(20e9, 20e9))
SILU = Curve(sizes=(1e4, 1e8), rates=(35e9, 35e9))


def _peaks(classes: dict) -> Peaks:
    profile = PerfProfile(classes=classes, overhead_s={"fwd": 0.0, "bwd": 0.0, "view": 0.0})
    return Peaks(apf=100e9, apm=10e9, profile=profile)


def _seconds(peaks: Peaks, op: str, phase: str = "fwd", nbytes: float = 1e6) -> float:
    return cost.call_s("elementwise", phase, nbytes / 8, nbytes, peaks, op).total_s


def test_an_exponential_is_priced_on_its_own_curve_then_its_sibling_then_the_stand_in():
    classes = {
        "elementwise.fwd": ARITHMETIC,
        "elementwise.fwd:aten.gelu": GELU,
        "elementwise.bwd": ARITHMETIC,
        "elementwise.bwd:aten.gelu_backward": GELU_BWD,
    }
    before = _peaks(classes)  # a profile measured before the sweep timed silu
    assert _seconds(before, "aten.silu") == pytest.approx(1e6 / 30e9)
    assert _seconds(before, "aten.silu_backward", "bwd") == pytest.approx(1e6 / 20e9)
    assert _seconds(before, "aten.relu_") == pytest.approx(1e6 / 100e9)  # arithmetic: the class
    assert _seconds(before, "aten.sigmoid_backward", "bwd") == pytest.approx(1e6 / 100e9)
    swept = _peaks({**classes, "elementwise.fwd:aten.silu_": SILU})
    assert _seconds(swept, "aten.silu_") == pytest.approx(1e6 / 35e9)
    assert _seconds(swept, "aten.silu") == pytest.approx(1e6 / 35e9)  # the in-place sibling's
    assert _seconds(swept, "aten.exp") == pytest.approx(1e6 / 30e9)  # not swept: the stand-in


def test_the_sweep_times_them_and_keeps_them_out_of_the_class_curve():
    labels = {(c.key, c.label.split()[0]) for c in sweeps.cases(quick=True)}
    for key, op in [("elementwise.fwd", "silu"), ("elementwise.bwd", "silu"),
                    ("elementwise.fwd", "sigmoid"), ("elementwise.fwd", "tanh")]:  # fmt: skip
        assert (key, op) in labels
    assert ("elementwise.bwd", "tanh") not in labels  # its backward is arithmetic

    def point(op: str, seconds: float) -> SweepResult:
        return SweepResult("elementwise.fwd", op, op, 1e5, 1e6, seconds, seconds, 0.0, True)

    curves = curves_of(
        [point("aten.relu_", 1e-5), point("aten.silu_", 1e-4)], 0.0, asynchronous=False
    )
    assert curves["elementwise.fwd"].rates == pytest.approx((1e11,))  # relu_ alone
    assert curves["elementwise.fwd:aten.silu_"].rates == pytest.approx((1e10,))


def test_the_swept_cases_run_the_operators_they_name():
    cases = [
        c for c in sweeps.cases(quick=True) if c.label.split()[0] in ("silu", "sigmoid", "tanh")
    ]
    for case in cases:
        func, args, kwargs = case.build(torch.device("cpu"), torch.float32)
        assert f"aten.{func.__name__.split('.')[0]}" in TRANSCENDENTAL
        func(*args, **kwargs)  # runs
