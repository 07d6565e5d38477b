"""Grouped and depthwise convolutions are classed by kernel and stride (``conv_dw``,
``conv_dw_s2``, ``conv_dw_k5``, ``conv_dw_k5s2``): in the workload, the sweep, and the profile,
where ``conv_dw`` stands in for a class it lacks."""

import collections

import pytest
import torch

from trainplay.hardware.measure import sweeps
from trainplay.hardware.profile import PerfProfile, Surface
from trainplay.hardware.spec import Peaks
from trainplay.roofline import cost
from trainplay.workload import profile
from trainplay.workload.opclass import DEPTHWISE_CLASSES, FALLBACK, MEMORY_CLASSES, op_class

aten = torch.ops.aten


def _classes(n, c, h, k, stride, per_group=1):
    """(forward class, backward class) of a grouped convolution on meta tensors."""
    x = torch.empty(n, c, h, h, device="meta")
    w = torch.empty(c, per_group, k, k, device="meta")
    conv = ([stride] * 2, [k // 2] * 2, [1, 1], False, [0, 0], c // per_group)
    fwd = op_class(aten.convolution.default, (x, w, None, *conv), "gemm")
    side = (h + 2 * (k // 2) - k) // stride + 1
    grad = torch.empty(n, c, side, side, device="meta")
    bwd = op_class(
        aten.convolution_backward.default, (grad, x, w, [c], *conv, [True, True, False]), "gemm"
    )
    return fwd, bwd


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((4, 144, 56, 3, 1), "conv_dw"),
        ((4, 144, 56, 3, 2), "conv_dw_s2"),
        ((4, 240, 28, 5, 1), "conv_dw_k5"),
        ((1, 768, 7, 7, 1), "conv_dw_k5"),  # ConvNeXt's 7x7: wider than 5 counts as 5
        ((4, 672, 14, 5, 2), "conv_dw_k5s2"),
        ((4, 256, 14, 3, 1, 8), "conv_dw"),  # grouped, 8 channels a group (ResNeXt, RegNet)
        ((2, 256, 28, 3, 2, 64), "conv_dw_s2"),
    ],
)
def test_kernel_and_stride_name_the_class_forward_and_backward(shape, expected):
    assert _classes(*shape) == (expected, expected)


def test_the_new_classes_are_memory_classes_that_fall_back_to_conv_dw():
    assert set(DEPTHWISE_CLASSES) <= set(MEMORY_CLASSES)
    for cls in DEPTHWISE_CLASSES[1:]:
        assert FALLBACK[cls] == "conv_dw"


def test_efficientnet_has_every_kernel_and_stride():
    prof = profile("efficientnet_b0", batch_size=2, input_shape=(3, 64, 64), loss=True)
    found = {op.cls for layer in prof.layers for op in layer.ops}
    assert set(DEPTHWISE_CLASSES) - {"conv_dw_k5"} <= found  # 3x3 s1, 3x3 s2, 5x5 s2
    assert "conv_dw_k5" in found  # 5x5 at stride 1 (stages 3, 5 and 6)


def test_the_sweep_times_each_class_in_both_phases():
    for quick in (False, True):
        counts = collections.Counter(c.key for c in sweeps.cases(quick))
        for cls in DEPTHWISE_CLASSES:
            for phase in ("fwd", "bwd"):
                assert counts[f"{cls}.{phase}"] >= (1 if quick else 6), (quick, cls, phase)
    assert set(sweeps.BY_SHAPE) == set(DEPTHWISE_CLASSES)


def _peaks(classes: dict) -> Peaks:
    return Peaks(apf=1e11, apm=2e10, profile=PerfProfile(classes=classes))


def test_a_profile_without_the_class_prices_it_as_conv_dw_and_one_with_it_by_its_own():
    slow = Surface(sizes=(1e6, 1e8), intensities=(2.0, 3.0), rates=(2e8, 4e8))
    fast = Surface(sizes=(1e6, 1e8), intensities=(2.0, 3.0), rates=(4e9, 8e9))
    old = _peaks({"conv_dw.bwd": fast})
    new = _peaks({"conv_dw.bwd": fast, "conv_dw_k5s2.bwd": slow})
    flops, nbytes = 2.5 * 1e7, 1e7
    as_conv_dw = cost.call_s("conv_dw", "bwd", flops, nbytes, old, "aten.convolution_backward")
    fallen = cost.call_s("conv_dw_k5s2", "bwd", flops, nbytes, old, "aten.convolution_backward")
    own = cost.call_s("conv_dw_k5s2", "bwd", flops, nbytes, new, "aten.convolution_backward")
    assert fallen == as_conv_dw
    assert own.total_s > 10 * fallen.total_s and own.memory_s == own.total_s
