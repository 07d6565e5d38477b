"""Dense convolutions whose output map is a single position: their own class, in the workload, in
the sweep, and in the profile (with ``conv`` standing in where a profile lacks it)."""

import pytest
import torch

from trainplay.hardware.measure import sweeps
from trainplay.hardware.profile import Curve, PerfProfile
from trainplay.hardware.spec import Peaks
from trainplay.roofline import cost
from trainplay.workload import profile
from trainplay.workload.opclass import FALLBACK, op_class

aten = torch.ops.aten


def _fwd(n, c, h, co, k, stride, pad):
    x, w = torch.empty(n, c, h, h, device="meta"), torch.empty(co, c, k, k, device="meta")
    args = (x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], 1)
    return op_class(aten.convolution.default, args, "gemm")


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((4, 512, 1, 512, 3, 1, 1), "conv_point"),  # 3x3 on a 1x1 map
        ((4, 256, 2, 512, 3, 2, 1), "conv_point"),  # downsampling 2x2 -> 1x1
        ((4, 512, 2, 512, 3, 1, 1), "conv"),  # 2x2 stays 2x2
        ((4, 512, 3, 512, 3, 1, 0), "conv_point"),  # unpadded 3x3 on 3x3
        ((4, 512, 1, 512, 1, 1, 0), "conv_1x1_few"),  # a 1x1 kernel: a matrix product anyway
    ],
)
def test_forward_class_follows_the_output_map(shape, expected):
    assert _fwd(*shape) == expected


def test_resnet18_on_32x32_inputs_has_single_position_convolutions_in_layer4_only():
    p = profile("resnet18", batch_size=2, input_shape=(3, 32, 32))
    point = {
        (layer.name, op.phase) for layer in p.layers for op in layer.ops if op.cls == "conv_point"
    }
    assert {name for name, _ in point} == {"layer4.0", "layer4.1"}
    assert {phase for _, phase in point} == {"fwd", "bwd"}
    at_224 = profile("resnet18", batch_size=2, input_shape=(3, 224, 224))
    assert all(op.cls != "conv_point" for layer in at_224.layers for op in layer.ops)


def test_sweep_cases_carry_the_class_the_workload_gives_their_call():
    convs = [c for c in sweeps.cases() if c.key.startswith("conv")]
    assert any(c.key.startswith("conv_point.") for c in convs)
    for case in convs:
        func, args, _ = case.build(torch.device("meta"), torch.float32)
        assert case.key.split(".")[0] == op_class(func, args, "gemm"), case.label


def _profile(classes):
    return PerfProfile(classes=classes)


def test_a_profile_without_the_class_prices_it_as_conv():
    conv = Curve(sizes=(1.0,), rates=(50e9,))
    point = Curve(sizes=(1.0,), rates=(10e9,))
    old = _profile({"conv.bwd": conv})
    assert old.curve("conv_point", "bwd", "aten.convolution_backward") is conv
    new = _profile({"conv.bwd": conv, "conv_point.bwd": point})
    assert new.curve("conv_point", "bwd", "aten.convolution_backward") is point
    assert new.curve("conv", "bwd") is conv
    assert "conv_point" not in FALLBACK.values()


def test_the_single_position_rate_prices_the_call():
    conv = Curve(sizes=(1.0,), rates=(50e9,))
    point = Curve(sizes=(1.0,), rates=(10e9,))
    peaks = Peaks(
        apf=100e9, apm=20e9, profile=_profile({"conv.bwd": conv, "conv_point.bwd": point})
    )
    slow = cost.call_s("conv_point", "bwd", 1e9, 1e6, peaks).total_s
    fast = cost.call_s("conv", "bwd", 1e9, 1e6, peaks).total_s
    assert slow == pytest.approx(0.1) and fast == pytest.approx(0.02)
