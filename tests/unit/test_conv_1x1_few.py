"""1x1 convolutions with stride 1 on fewer than 16 samples: their own class (``conv_1x1_few``),
because with one thread PyTorch runs them on another path than oneDNN; in the workload, the sweep,
the profile (``conv_1x1`` standing in where a profile lacks it) and the planner's pricing of
other micro-batches."""

import pytest
import torch

from trainplay.hardware.measure import sweeps
from trainplay.hardware.profile import Curve, PerfProfile
from trainplay.hardware.spec import Peaks
from trainplay.plan.costs import AffineOp, _block_s
from trainplay.workload import profile
from trainplay.workload.opclass import FALLBACK, FEW_SAMPLES, at_samples, op_class

aten = torch.ops.aten


def _fwd(n, c, h, co, k, stride, dilation=1):
    x, w = torch.empty(n, c, h, h, device="meta"), torch.empty(co, c, k, k, device="meta")
    args = (x, w, None, [stride] * 2, [0, 0], [dilation] * 2, False, [0, 0], 1)
    return op_class(aten.convolution.default, args, "gemm")


def _bwd(n, c, h, co, stride):
    x, w = torch.empty(n, c, h, h, device="meta"), torch.empty(co, c, 1, 1, device="meta")
    side = (h - 1) // stride + 1
    grad = torch.empty(n, co, side, side, device="meta")
    args = (grad, x, w, [co], [stride] * 2, [0, 0], [1, 1], False, [0, 0], 1, [True] * 3)
    return op_class(aten.convolution_backward.default, args, "gemm")


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((8, 1024, 4, 256, 1, 1), "conv_1x1_few"),
        ((15, 64, 8, 256, 1, 1), "conv_1x1_few"),
        ((16, 64, 8, 256, 1, 1), "conv_1x1"),  # oneDNN from 16 samples on
        ((4, 1024, 4, 2048, 1, 2), "conv_1x1"),  # strided: oneDNN
        ((4, 64, 8, 64, 1, 1, 2), "conv_1x1"),  # dilated: oneDNN
        ((4, 64, 8, 64, 3, 1), "conv"),  # a wider kernel is no matrix product
    ],
)
def test_forward_class_follows_pytorchs_backend_rule(shape, expected):
    assert _fwd(*shape) == expected


def test_backward_reads_its_stride_one_argument_later():
    assert _bwd(4, 1024, 4, 256, 1) == "conv_1x1_few"
    assert _bwd(4, 1024, 4, 2048, 2) == "conv_1x1"
    assert _bwd(32, 1024, 4, 256, 1) == "conv_1x1"


def test_resnet50_at_batch_4_has_both_kinds_and_at_batch_16_only_onednns():
    def classes(batch):
        p = profile("resnet50", batch_size=batch, input_shape=(3, 64, 64))
        return {op.cls for layer in p.layers for op in layer.ops}

    few = classes(4)
    assert {"conv_1x1_few", "conv_1x1"} <= few  # bottlenecks' 1x1s; strided shortcuts
    assert "conv_1x1_few" not in classes(FEW_SAMPLES)


def test_sweep_times_both_kinds_and_carries_the_workloads_class():
    keys = {c.key.split(":")[0] for c in sweeps.cases()}
    assert {"conv_1x1_few.fwd", "conv_1x1_few.bwd", "conv_1x1.fwd", "conv_1x1.bwd"} <= keys
    quick = {c.key.split(".")[0] for c in sweeps.cases(quick=True)}
    assert {"conv_1x1_few", "conv_1x1"} <= quick
    for case in sweeps.cases():
        if case.key.startswith("conv_1x1"):
            func, args, _ = case.build(torch.device("meta"), torch.float32)
            assert case.key.split(".")[0] == op_class(func, args, "gemm"), case.label


def test_a_profile_without_the_class_prices_it_as_conv_1x1():
    onednn, aten_path = Curve(sizes=(1.0,), rates=(50e9,)), Curve(sizes=(1.0,), rates=(10e9,))
    old = PerfProfile(classes={"conv_1x1.bwd": onednn})
    assert old.curve("conv_1x1_few", "bwd", "aten.convolution_backward") is onednn
    new = PerfProfile(classes={"conv_1x1.bwd": onednn, "conv_1x1_few.bwd": aten_path})
    assert new.curve("conv_1x1_few", "bwd", "aten.convolution_backward") is aten_path
    assert FALLBACK["conv_1x1_few"] == "conv_1x1"


def test_planner_prices_a_micro_batch_of_16_or_more_on_onednns_curve():
    assert at_samples("conv_1x1_few", FEW_SAMPLES - 1) == "conv_1x1_few"
    assert at_samples("conv_1x1_few", FEW_SAMPLES) == "conv_1x1"
    assert at_samples("conv", 64) == "conv"
    onednn, aten_path = Curve(sizes=(1.0,), rates=(50e9,)), Curve(sizes=(1.0,), rates=(10e9,))
    peaks = Peaks(
        apf=100e9,
        apm=20e9,
        profile=PerfProfile(classes={"conv_1x1.bwd": onednn, "conv_1x1_few.bwd": aten_path}),
    )
    # counted at 2 and 4 samples as conv_1x1_few; 1e8 FLOPs per sample
    op = AffineOp("conv_1x1_few", "bwd", "aten.convolution_backward", (0.0, 1e8), (0.0, 1e3), 1)
    assert _block_s((op,), 8, peaks, False)[1] == pytest.approx(8e8 / 10e9)
    assert _block_s((op,), 16, peaks, False)[1] == pytest.approx(16e8 / 50e9)
