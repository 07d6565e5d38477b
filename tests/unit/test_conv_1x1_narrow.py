"""1x1 convolutions on fewer than 16 samples and maps of 2 to 11 positions: their own class
(``conv_1x1_narrow``), whose curve is read by FLOPs and the output map's positions; in the
workload (each call keeps its positions, through JSON), the sweep, the profile (``conv_1x1_few``
standing in, by intensity, where a profile lacks it) and the planner's pricing."""

import json

import pytest
import torch

from trainplay.hardware.measure import sweeps
from trainplay.hardware.measure.sweeps import SweepResult, curves_of
from trainplay.hardware.profile import PerfProfile, Surface
from trainplay.hardware.spec import Peaks
from trainplay.plan.costs import AffineOp, _block_s
from trainplay.roofline import cost
from trainplay.workload import profile
from trainplay.workload.opclass import (
    BY_POSITIONS,
    FALLBACK,
    FEW_SAMPLES,
    NARROW_1X1,
    at_samples,
    op_class,
    positions,
)
from trainplay.workload.stats import WorkloadProfile

aten = torch.ops.aten


def _fwd(n, c, hw, co, k=1, stride=1):
    x, w = torch.empty(n, c, *hw, device="meta"), torch.empty(co, c, k, k, device="meta")
    args = (x, w, None, [stride] * 2, [k // 2] * 2, [1, 1], False, [0, 0], 1)
    return op_class(aten.convolution.default, args, "gemm"), positions(
        aten.convolution.default, args
    )


def _bwd(n, c, hw, co):
    x, w = torch.empty(n, c, *hw, device="meta"), torch.empty(co, c, 1, 1, device="meta")
    grad = torch.empty(n, co, *hw, device="meta")
    args = (grad, x, w, [co], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True] * 3)
    func = aten.convolution_backward.default
    return op_class(func, args, "gemm"), positions(func, args)


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((4, 1024, (2, 2), 2048), ("conv_1x1_narrow", 4)),
        ((4, 1024, (3, 3), 512), ("conv_1x1_narrow", 9)),
        ((8, 256, (1, 2), 256), ("conv_1x1_narrow", 2)),
        ((15, 256, (1, 11), 256), ("conv_1x1_narrow", 11)),
        ((4, 1024, (3, 4), 512), ("conv_1x1_few", 12)),  # from 12 positions: ATen's fast region
        ((4, 1024, (1, 1), 512), ("conv_1x1_few", 1)),  # one position: a matrix-vector product
        ((16, 1024, (2, 2), 512), ("conv_1x1", 4)),  # 16 samples: oneDNN
    ],
)
def test_class_and_positions_of_a_forward_and_its_backward(shape, expected):
    assert _fwd(*shape) == expected
    assert _bwd(*shape) == expected


def test_a_wider_kernel_on_a_narrow_map_is_not_this_class():
    assert _fwd(4, 64, (2, 2), 64, k=3)[0] == "conv"
    assert _fwd(4, 64, (2, 2), 64, k=1, stride=2)[0] == "conv_1x1"


def test_resnext50_on_48x48_keeps_each_narrow_calls_positions_through_json():
    p = profile("resnext50_32x4d", batch_size=4, input_shape=(3, 48, 48))
    narrow = [op for layer in p.layers for op in layer.ops if op.cls == "conv_1x1_narrow"]
    # layer3 (3x3 maps) and layer4 (3x3 before its first block's stride, then 2x2)
    assert {op.positions for op in narrow} == {4, 9}
    assert {op.phase for op in narrow} == {"fwd", "bwd"}
    others = [op for layer in p.layers for op in layer.ops if op.cls not in BY_POSITIONS]
    assert others and all(op.positions == 0 for op in others)
    data = p.to_dict()
    entries = [op for layer in data["layers"] for op in layer["ops"]]
    assert all(("positions" in e) == (e["class"] in BY_POSITIONS) for e in entries)
    again = WorkloadProfile.from_dict(json.loads(json.dumps(data)))
    assert again == p


def test_sweep_times_the_class_under_the_key_the_workload_gives_it():
    narrow = [c for c in sweeps.cases() if c.key.startswith("conv_1x1_narrow.")]
    assert len(narrow) >= 2 * len(sweeps.NARROW_1X1S)
    for case in narrow:
        func, args, _ = case.build(torch.device("meta"), torch.float32)
        assert op_class(func, args, "gemm") == "conv_1x1_narrow", case.label
        assert positions(func, args) in NARROW_1X1
    quick = {c.key for c in sweeps.cases(quick=True)}
    assert {"conv_1x1_narrow.fwd", "conv_1x1_narrow.bwd"} <= quick


def _result(flops, nbytes, seconds, where):
    return SweepResult(
        "conv_1x1_narrow.fwd", "x", "aten.convolution", flops, nbytes, seconds, seconds, 0.0,
        True, None, where,
    )  # fmt: skip


def test_the_surface_is_read_by_positions_not_intensity():
    # same FLOPs and bytes (the same intensity), 4 and 16 positions: eleven times apart, as
    # 8x1024x2x2 -> 256 and 2x1024x4x4 -> 256 were here
    results = [_result(1.6e7, 1.2e6, 2.4e-3, 4), _result(1.6e7, 1.2e6, 2.2e-4, 16)]
    surface = curves_of(results, 0.0, asynchronous=False)["conv_1x1_narrow.fwd"]
    assert isinstance(surface, Surface)
    assert sorted(surface.intensities) == [4.0, 16.0]
    peaks = Peaks(apf=1e12, apm=1e12, profile=PerfProfile(classes={"conv_1x1_narrow.fwd": surface}))
    slow = cost.call_s("conv_1x1_narrow", "fwd", 1.6e7, 1.2e6, peaks, positions=4).total_s
    fast = cost.call_s("conv_1x1_narrow", "fwd", 1.6e7, 1.2e6, peaks, positions=16).total_s
    assert slow == pytest.approx(2.4e-3) and fast == pytest.approx(2.2e-4)


def test_a_profile_without_the_class_prices_it_as_conv_1x1_few_by_intensity():
    few = Surface(sizes=(1e7, 1e8), intensities=(10.0, 10.0), rates=(20e9, 20e9))
    onednn = Surface(sizes=(1e7, 1e8), intensities=(10.0, 10.0), rates=(60e9, 60e9))
    assert FALLBACK["conv_1x1_narrow"] == "conv_1x1_few"
    old = Peaks(apf=1e12, apm=1e12, profile=PerfProfile(classes={"conv_1x1_few.fwd": few}))
    t = cost.call_s("conv_1x1_narrow", "fwd", 4e7, 4e6, old, positions=4).total_s
    assert t == pytest.approx(4e7 / 20e9)
    # a catalog device's profile has neither: conv_1x1_few's own stand-in, conv_1x1
    catalog = Peaks(apf=1e12, apm=1e12, profile=PerfProfile(classes={"conv_1x1.fwd": onednn}))
    t = cost.call_s("conv_1x1_narrow", "fwd", 4e7, 4e6, catalog, positions=4).total_s
    assert t == pytest.approx(4e7 / 60e9)


def test_planner_keeps_positions_and_prices_16_samples_on_onednns_curve():
    assert at_samples("conv_1x1_narrow", FEW_SAMPLES - 1) == "conv_1x1_narrow"
    assert at_samples("conv_1x1_narrow", FEW_SAMPLES) == "conv_1x1"
    # the sweep's points at the 8 samples priced below: an exact point reads its own rate
    narrow = Surface(sizes=(8e6, 8e6), intensities=(4.0, 16.0), rates=(5e9, 50e9))
    onednn = Surface(sizes=(1e7, 1e9), intensities=(10.0, 100.0), rates=(80e9, 80e9))
    peaks = Peaks(
        apf=1e12,
        apm=1e12,
        profile=PerfProfile(classes={"conv_1x1_narrow.bwd": narrow, "conv_1x1.bwd": onednn}),
    )
    op = AffineOp(
        "conv_1x1_narrow", "bwd", "aten.convolution_backward", (0.0, 1e6), (0.0, 1e3), 1, 4
    )
    assert AffineOp.from_list(json.loads(json.dumps(op.to_list()))) == op
    assert _block_s((op,), 8, peaks, False)[1] == pytest.approx(8e6 / 5e9)
    assert _block_s((op,), 16, peaks, False)[1] == pytest.approx(16e6 / 80e9)
    plain = AffineOp("conv", "bwd", "aten.convolution_backward", (0.0, 1e6), (0.0, 1e3), 1)
    assert len(plain.to_list()) == 8  # rows without positions keep their old form


def test_a_worker_off_atens_per_sample_path_folds_the_class_into_its_stand_in():
    # several threads run these calls on oneDNN, whose time follows the call's columns (samples
    # times positions), so its points join conv_1x1_few's surface, read by intensity
    results = [_result(1.6e7, 1.2e6, 2.4e-3, 4), _result(1.6e7, 1.2e6, 2.2e-4, 16)]
    curves = curves_of(results, 0.0, asynchronous=False, by_positions=False)
    assert not any(key.startswith("conv_1x1_narrow") for key in curves)
    few = curves["conv_1x1_few.fwd"]
    assert isinstance(few, Surface) and set(few.intensities) == {1.6e7 / 1.2e6}
    assert not PerfProfile(classes=curves).has_class("conv_1x1_narrow")
