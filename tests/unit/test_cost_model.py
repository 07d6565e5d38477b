"""The one cost model (roofline/cost.py) and the performance profile it reads (hardware/profile.py)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainplay.hardware.measure.sweeps import SweepResult, curves_of
from trainplay.hardware.profile import Curve, PerfProfile, Surface
from trainplay.hardware.spec import Peaks, SpecError
from trainplay.roofline import cost
from trainplay.workload.stats import OpGroup

CONV = Curve(sizes=(1e6, 1e8, 1e10), rates=(20e9, 100e9, 200e9))
NORM = Curve(sizes=(1e4, 1e7), rates=(2e9, 10e9))


def _peaks(**profile) -> Peaks:
    base = {
        "classes": {"conv.fwd": CONV, "norm": NORM},
        "overhead_s": {"fwd": 4e-6, "bwd": 5e-6, "view": 1e-6},
    }
    return Peaks(apf=250e9, apm=20e9, profile=PerfProfile(**{**base, **profile}))


def test_curve_interpolates_in_log_log_and_holds_its_ends():
    assert CONV.rate(1e6) == 20e9 and CONV.rate(1e3) == 20e9 and CONV.rate(1e12) == 200e9
    assert CONV.rate(1e7) == pytest.approx(math.sqrt(20e9 * 100e9))  # halfway in log size
    assert CONV.time_s(1e8) == pytest.approx(1e8 / 100e9)
    assert Curve.from_dict(CONV.to_dict()) == CONV
    with pytest.raises(SpecError, match="strictly increasing"):
        Curve(sizes=(2.0, 1.0), rates=(1.0, 1.0))
    with pytest.raises(SpecError, match="positive"):
        Curve(sizes=(1.0,), rates=(0.0,))


@given(st.floats(min_value=1e3, max_value=1e12))
def test_curve_stays_between_its_neighbouring_points(size):
    rate = CONV.rate(size)
    assert min(CONV.rates) * (1 - 1e-12) <= rate <= max(CONV.rates) * (1 + 1e-12)


def test_a_call_is_its_fixed_cost_plus_the_larger_of_compute_and_memory():
    peaks = _peaks()
    conv = cost.call_s("conv", "fwd", 1e8, 4e6, peaks)
    assert conv.total_s == pytest.approx(4e-6 + max(1e8 / 100e9, 4e6 / 20e9))
    assert conv.compute_s > 0 and conv.memory_s == 0 and conv.overhead_s == pytest.approx(4e-6)
    # a memory class uses its curve for bytes and the roof for FLOPs
    norm = cost.call_s("norm", "bwd", 1e5, 1e7, peaks)
    assert norm.total_s == pytest.approx(5e-6 + 1e7 / 10e9) and norm.memory_s > 0
    # a view moves nothing and costs its own fixed cost
    assert cost.call_s("view", "fwd", 0, 0, peaks).total_s == pytest.approx(1e-6)
    # a class with no curve runs at the roofs
    gemm = cost.call_s("gemm", "fwd", 1e9, 1e6, peaks)
    assert gemm.total_s == pytest.approx(4e-6 + 1e9 / 250e9)


def test_an_asynchronous_device_hides_the_fixed_cost_behind_long_kernels():
    peaks = _peaks(asynchronous=True)
    long = cost.call_s("conv", "fwd", 1e10, 0, peaks)
    assert long.total_s == pytest.approx(1e10 / 200e9) and long.overhead_s == 0
    short = cost.call_s("conv", "fwd", 1e3, 0, peaks)
    assert short.total_s == pytest.approx(4e-6) and short.overhead_s > 0


def test_without_a_profile_every_operator_runs_at_the_roofs():
    peaks = Peaks(apf=1e12, apm=1e11)
    assert cost.call_s("conv", "fwd", 1e9, 1e9, peaks).total_s == pytest.approx(1e-2)
    ops = (OpGroup(cls="conv", phase="fwd", op="aten.convolution", flops=1e9, bytes=1, count=3),)
    assert cost.phase_time(ops, "fwd", peaks).total_s == pytest.approx(3e-3)
    assert cost.phase_time(ops, "bwd", peaks).total_s == 0


def test_an_operators_own_curve_wins_over_its_class():
    own = Curve(sizes=(1e6,), rates=(1e9,))
    peaks = _peaks(classes={"norm": NORM, "norm.fwd:aten.native_batch_norm": own})
    slow = cost.call_s("norm", "fwd", 0, 1e6, peaks, "aten.native_batch_norm")
    other = cost.call_s("norm", "fwd", 0, 1e6, peaks, "aten.native_layer_norm")
    assert slow.total_s == pytest.approx(4e-6 + 1e-3)
    assert other.total_s == pytest.approx(4e-6 + 1e6 / NORM.rate(1e6))


def test_transfers_and_all_reduces():
    link = (1e9, 1e-4)
    assert cost.transfer_s(1e6, link=link) == pytest.approx(1e-4 + 1e-3)
    assert cost.transfer_s(0, link=link) == 0
    p2p = PerfProfile(p2p=Curve(sizes=(1e3, 1e7), rates=(1e8, 2e9)), p2p_alpha_s=5e-5)
    assert cost.transfer_s(1e7, profile=p2p) == pytest.approx(5e-5 + 1e7 / 2e9)
    ring = PerfProfile(allreduce=Curve(sizes=(1e6,), rates=(1e9,)), allreduce_alpha_s=1e-4)
    assert cost.allreduce_s(4e6, 4, ring) == pytest.approx(1e-4 + 1.5 * 4e6 / 1e9)
    assert cost.allreduce_s(4e6, 1, ring) == 0
    assert cost.link_allreduce_s(4e6, 4, 1e9, 1e-5) == pytest.approx(6e-5 + 1.5 * 4e6 / 1e9)


def test_the_optimizer_pays_per_tensor_and_per_byte():
    plain = Peaks(apf=1e12, apm=1e10)
    assert cost.optimizer_s(1e8, 10, plain, "sgd") == pytest.approx(5 * 1e8 / 1e10)
    assert cost.optimizer_s(1e8, 10, plain, "adam") == pytest.approx(7 * 1e8 / 1e10)
    measured = _peaks(
        classes={"optimizer.sgd": Curve(sizes=(1e3, 1e7), rates=(1e8, 4e9))},
        overhead_s={"optimizer.sgd": 1e-5},
    )
    assert cost.optimizer_s(1e8, 10, measured, "sgd") == pytest.approx(10 * (1e-5 + 1e7 / 4e9))


def test_gradient_accumulation_reads_two_and_writes_one_pass_per_tensor():
    plain = Peaks(apf=1e12, apm=1e10)
    assert cost.accumulate_s(0, 3, plain) == 0.0
    assert cost.accumulate_s(1.2e8, 10, plain) == pytest.approx(3 * 1.2e8 / 1e10)
    measured = _peaks(classes={"elementwise.bwd": Curve(sizes=(1e4, 1e8), rates=(1e9, 5e9))})
    per_tensor = 3 * 1.2e7  # bytes one in-place add streams
    expected = 10 * (5e-6 + per_tensor / Curve(sizes=(1e4, 1e8), rates=(1e9, 5e9)).rate(per_tensor))
    assert cost.accumulate_s(1.2e8, 10, measured) == pytest.approx(expected)


def test_profile_round_trips_and_scales_to_another_dtype():
    profile = _peaks().profile
    assert PerfProfile.from_dict(profile.to_dict()) == profile
    bf16 = profile.for_dtype("bf16", 4.0)
    assert bf16.classes["conv.fwd"].rates == tuple(4 * r for r in CONV.rates)
    assert bf16.classes["norm"] == NORM  # a memory class is a rate in bytes
    with pytest.raises(SpecError, match="unknown field"):
        PerfProfile.from_dict({"bogus": 1})


def test_peaks_carry_the_profile_through_json():
    peaks = _peaks()
    again = Peaks.from_dict(peaks.to_dict())
    assert again.profile == peaks.profile


def test_sweep_points_become_curves_net_of_the_call_cost():
    def point(key, op, size, seconds, cv, hot=None):
        return SweepResult(key, "x", op, 0.0, size, seconds, hot or seconds, cv, True)

    results = [
        point("norm.fwd", "aten.native_batch_norm", 1.1e6, 1e-3 + 2e-6, 0.01),
        point("norm.fwd", "aten.native_layer_norm", 1.5e6, 2e-4 + 2e-6, 0.02),
        point("norm.fwd", "aten.native_batch_norm", 1e8, 1e-2 + 2e-6, 0.03),
    ]
    curves = curves_of(results, 2e-6, asynchronous=False)
    # one bin per factor of two (here [2^20, 2^21) bytes) holds the median of its points
    assert curves["norm.fwd"].sizes == pytest.approx((1.3e6, 1e8))
    assert curves["norm.fwd"].rates[0] == pytest.approx((1.1e9 + 7.5e9) / 2)
    assert curves["norm.fwd:aten.native_batch_norm"].rates == pytest.approx((1.1e9, 1e10))
    assert curves["norm.fwd"].spread == pytest.approx(0.03)
    assert "norm.fwd@hot" not in curves  # timed back to back only: no cold/hot pair
    # never more than half of a time is taken off as the call's cost
    tiny = curves_of([point("copy.fwd", "aten.copy_", 100, 3e-6, 0.0)], 2e-6, asynchronous=False)
    assert tiny["copy.fwd"].rates == pytest.approx((100 / 1.5e-6,))


def test_depthwise_convolutions_are_priced_by_bytes_and_flop_per_byte():
    """Two depthwise backward calls of like bytes, a 3x3 and a 5x5 kernel (FLOP per byte 2.25
    and 6.25): the sweep's surface keeps them apart, where a curve by bytes mixed them."""

    def dw(nbytes, flops, seconds):
        return SweepResult(
            "conv_dw.bwd", "x", "aten.convolution_backward", flops, nbytes, seconds, seconds, 0.0,
            True,
        )  # fmt: skip

    curves = curves_of(
        [dw(9e6, 2.25 * 9e6, 1e-3), dw(9.5e6, 6.25 * 9.5e6, 55e-3), dw(4e7, 2.25 * 4e7, 5e-3)],
        0.0, asynchronous=True,
    )  # fmt: skip
    surface = curves["conv_dw.bwd"]
    assert isinstance(surface, Surface)
    assert surface.sizes == (9e6, 9.5e6, 4e7)  # indexed by bytes, rates in bytes/s
    assert surface.rate(9e6, 2.25) == pytest.approx(9e9)
    peaks = Peaks(apf=250e9, apm=20e9, profile=PerfProfile(classes=curves))
    k3 = cost.call_s("conv_dw", "bwd", 2.25 * 9.2e6, 9.2e6, peaks, "aten.convolution_backward")
    k5 = cost.call_s("conv_dw", "bwd", 6.25 * 9.2e6, 9.2e6, peaks, "aten.convolution_backward")
    assert k5.total_s > 10 * k3.total_s  # each near the measured call of its own kernel
    assert k3.memory_s == k3.total_s and k5.compute_s == 0.0  # still a memory class


def test_compute_classes_become_surfaces_by_size_and_intensity():
    """A skinny product and a square one of the same FLOPs keep their own rates."""

    def gemm(flops, nbytes, seconds, hot):
        return SweepResult("gemm.fwd", "x", "aten.addmm", flops, nbytes, seconds, hot, 0.0, True)

    curves = curves_of(
        [gemm(1e9, 1.2e8, 1e-1, 9e-2), gemm(1e9, 1.2e7, 1e-2, 5e-3)], 0.0, asynchronous=False
    )
    skinny, square = curves["gemm.fwd"], curves["gemm.fwd@hot"]
    assert isinstance(skinny, Surface)
    assert skinny.rate(1e9, 1e9 / 1.2e8) == pytest.approx(1e10)
    assert skinny.rate(1e9, 1e9 / 1.2e7) == pytest.approx(1e11)
    assert square.rate(1e9, 1e9 / 1.2e7) == pytest.approx(2e11)  # the hot-cache time
    between = skinny.rate(1e9, 30.0)
    assert 1e10 < between < 1e11


def test_small_calls_run_at_the_hot_cache_rate():
    cold, hot = Curve(sizes=(1.0,), rates=(1e9,)), Curve(sizes=(1.0,), rates=(1e10,))
    profile = PerfProfile(classes={"norm.fwd": cold, "norm.fwd@hot": hot}, cache_bytes=2**25)
    peaks = Peaks(apf=1e11, apm=1e10, profile=profile)
    assert cost.call_s("norm", "fwd", 0, 2**20, peaks).total_s == pytest.approx(2**20 / 1e10)
    assert cost.call_s("norm", "fwd", 0, 2**26, peaks).total_s == pytest.approx(2**26 / 1e9)


def test_ddp_reducer_copies_each_bucket_in_and_back_out():
    plain = Peaks(apf=1e12, apm=1e10)
    assert cost.reducer_s(0.0, plain) == 0.0
    assert cost.reducer_s(25e6, plain) == pytest.approx(4 * 25e6 / 1e10)  # two passes, r + w
    copies = _peaks(classes={"copy": Curve(sizes=(1e3, 1e9), rates=(2e9, 5e9))})
    one_pass = cost.call_s("copy", "fwd", 0.0, 50e6, copies)
    assert cost.reducer_s(25e6, copies) == pytest.approx(2 * one_pass.total_s)
    # the copy curve's rate (below 5 GB/s at 50 MB), not the 20 GB/s APM, plus the fixed cost
    assert cost.reducer_s(25e6, copies) > 2 * (50e6 / 5e9 + 4e-6)
