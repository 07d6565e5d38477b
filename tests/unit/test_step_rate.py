"""A memory-class call as a training step makes it: its first operand just written, its other
tensors stale and its output allocated where nothing ran lately (a sweep that keeps its last
outputs alive); priced so on a device whose data outgrows the cache between two uses."""

import weakref

import pytest
import torch

from trainplay.hardware.measure import sweeps
from trainplay.hardware.measure.coldcache import Evictor
from trainplay.hardware.measure.quiet import Quiet
from trainplay.hardware.measure.sweeps import SweepResult, _gemm, _norm, _time_case, curves_of
from trainplay.hardware.profile import Curve, PerfProfile
from trainplay.hardware.spec import Peaks
from trainplay.roofline import cost

COLD, HOT, STEP = 1e9, 1e10, 5e9
CACHE = 2**23


def test_a_memory_case_is_timed_as_a_step_and_a_product_is_not():
    evictor, device = Evictor(2**20), torch.device("cpu")
    norm = _time_case(_norm("batch", (4, 16, 8, 8), "bwd"), device, torch.float32, Quiet(), 2,
                      0.002, evictor)  # fmt: skip
    assert norm.step_s is not None and norm.step_s >= norm.hot_s > 0
    gemm = _time_case(_gemm(16, 64, 64, "fwd"), device, torch.float32, Quiet(), 2, 0.002, evictor)
    assert gemm.step_s is None and gemm.stale_s is not None
    hot_only = _time_case(_norm("batch", (4, 16, 8, 8), "bwd"), device, torch.float32, Quiet(), 2,
                          0.002, None)  # fmt: skip
    assert hot_only.step_s is None  # no eviction footprint (a GPU): hot times only


def test_as_many_outputs_are_kept_as_the_footprint_holds():
    one_mib = torch.empty(2**18)
    assert sweeps._kept_outputs(one_mib, 8 * 2**20) == 8
    assert sweeps._kept_outputs((one_mib, one_mib), 8 * 2**20) == 4  # a tuple: all its tensors
    assert sweeps._kept_outputs(torch.empty(1), 2**40) == sweeps.STALE_COPIES
    assert sweeps._kept_outputs(None, 2**20) == sweeps.STALE_COPIES  # no tensor: as small as can be


def test_kept_outputs_stay_alive_between_calls():
    def most_alive(keep: bool) -> int:
        refs: list[weakref.ref] = []
        alive: list[int] = []

        def op(x):
            alive.append(sum(r() is not None for r in refs))  # earlier outputs still held
            out = x + 1
            refs.append(weakref.ref(out))
            return out

        x = torch.ones(2**10)
        sweeps._stale_s(op, (x,), {}, 0, 3 * x.nbytes, torch.device("cpu"), Quiet(), 2, 0.005,
                        keep_outputs=keep)  # fmt: skip
        return max(alive)

    assert most_alive(True) == 3  # each call writes where three calls ago's output was
    assert most_alive(False) <= 1


def test_step_times_become_step_curves():
    norm = SweepResult("norm.fwd", "x", "aten.native_layer_norm", 0.0, 1e6, 2e-3, 1e-3, 0.0, True,
                       step_s=1.5e-3)  # fmt: skip
    curves = curves_of([norm], 0.0, asynchronous=False)
    assert curves["norm.fwd@step"].rate(1e6) == pytest.approx(1e6 / 1.5e-3)
    assert curves["norm.fwd:aten.native_layer_norm@step"].rate(1e6) == pytest.approx(1e6 / 1.5e-3)


def test_a_small_memory_call_on_a_device_that_outgrows_its_cache_is_priced_as_a_step():
    profile = PerfProfile(
        classes={
            "norm.fwd": Curve(sizes=(1.0,), rates=(COLD,)),
            "norm.fwd@hot": Curve(sizes=(1.0,), rates=(HOT,)),
            "norm.fwd@step": Curve(sizes=(1.0,), rates=(STEP,)),
            "elementwise.fwd": Curve(sizes=(1.0,), rates=(COLD,)),
            "elementwise.fwd@hot": Curve(sizes=(1.0,), rates=(HOT,)),
        },
        cache_bytes=CACHE,
    )
    peaks = Peaks(apf=1e11, apm=1e10, profile=profile)

    def seconds(cls, nbytes, stale):
        return cost.call_s(cls, "fwd", 0.0, nbytes, peaks, None, stale).total_s

    small, large = CACHE / 4, CACHE
    assert seconds("norm", small, True) == pytest.approx(small / STEP)
    assert seconds("norm", small, False) == pytest.approx(small / HOT)  # all of it cached
    assert seconds("norm", large, True) == pytest.approx(large / COLD)  # too large: cold
    assert seconds("elementwise", small, True) == pytest.approx(small / HOT)  # no step curve
