"""Batch normalisations over maps of 2 to 7 positions: their own class, in the workload, in the
sweep, and in the profile (with ``norm`` standing in where a profile lacks it)."""

import pytest
import torch

from trainplay.hardware.measure import sweeps
from trainplay.hardware.profile import Curve, PerfProfile
from trainplay.hardware.spec import Peaks
from trainplay.roofline import cost
from trainplay.workload import profile
from trainplay.workload.opclass import FALLBACK, MEMORY_CLASSES, op_class

aten = torch.ops.aten


def _batch_norm(shape, backward=False):
    x = torch.empty(shape, device="meta")
    c = torch.empty(shape[1], device="meta")
    if backward:
        args = (x, x, c, c, c, c, c, True, 1e-5, [True, True, True])
        return op_class(aten.native_batch_norm_backward.default, args, "norm")
    return op_class(aten.native_batch_norm.default, (x, c, c, c, c, True, 0.1, 1e-5), "norm")


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((32, 512, 2, 2), "norm_narrow"),  # 4 positions
        ((16, 256, 1, 7), "norm_narrow"),  # 7
        ((16, 256, 2, 4), "norm"),  # 8: one AVX2 vector of floats
        ((32, 512, 1, 1), "norm"),  # one position: ATen's image-size-1 kernel
        ((16, 64, 23, 23), "norm"),
        ((32, 512), "norm"),  # BatchNorm1d without positions
    ],
)
def test_class_follows_the_positions_of_a_channel_map(shape, expected):
    assert _batch_norm(shape) == expected
    assert _batch_norm(shape, backward=True) == expected


def test_layer_norm_is_never_narrow():
    x, w = torch.empty(8, 4, 2, device="meta"), torch.empty(2, device="meta")
    assert op_class(aten.native_layer_norm.default, (x, [2], w, w, 1e-5), "norm") == "norm"


def test_resnet18_on_44x44_inputs_has_narrow_batch_norms_in_layer4_only():
    p = profile("resnet18", batch_size=2, input_shape=(3, 44, 44))
    narrow = {
        (layer.name, op.phase) for layer in p.layers for op in layer.ops if op.cls == "norm_narrow"
    }
    assert {name for name, _ in narrow} == {"layer4.0", "layer4.1"}  # 2x2 maps; layer3's are 3x3
    assert {phase for _, phase in narrow} == {"fwd", "bwd"}
    at_224 = profile("resnet18", batch_size=2, input_shape=(3, 224, 224))
    assert all(op.cls != "norm_narrow" for layer in at_224.layers for op in layer.ops)


def test_sweep_times_the_class_under_the_key_the_workload_gives_it():
    norms = [c for c in sweeps.cases() if c.key.startswith("norm")]
    narrow = [c for c in norms if c.key.startswith("norm_narrow.")]
    assert len(narrow) == 2 * len(sweeps.NARROW_NORMS)
    assert 0 < sum(c.key.startswith("norm_narrow.") for c in sweeps.cases(quick=True)) < len(narrow)
    for case in norms:
        func, args, _ = case.build(torch.device("meta"), torch.float32)
        assert case.key.split(".")[0] == op_class(func, args, "norm"), case.label


def test_a_profile_without_the_class_prices_it_as_norm():
    norm = Curve(sizes=(1.0,), rates=(20e9,))
    narrow = Curve(sizes=(1.0,), rates=(1e9,))
    op = "aten.native_batch_norm_backward"
    old = PerfProfile(classes={"norm.bwd": norm})
    assert old.curve("norm_narrow", "bwd", op) is norm
    new = PerfProfile(classes={"norm.bwd": norm, "norm_narrow.bwd": narrow})
    assert new.curve("norm_narrow", "bwd", op) is narrow
    assert new.curve("norm", "bwd", op) is norm
    assert FALLBACK["norm_narrow"] == "norm" and "norm_narrow" in MEMORY_CLASSES


def test_the_narrow_rate_prices_the_call_by_its_bytes():
    profile_ = PerfProfile(
        classes={
            "norm.bwd": Curve(sizes=(1.0,), rates=(20e9,)),
            "norm_narrow.bwd": Curve(sizes=(1.0,), rates=(1e9,)),
        }
    )
    peaks = Peaks(apf=100e9, apm=20e9, profile=profile_)
    slow = cost.call_s("norm_narrow", "bwd", 1e6, 1e6, peaks).total_s
    fast = cost.call_s("norm", "bwd", 1e6, 1e6, peaks).total_s
    assert slow == pytest.approx(1e-3) and fast == pytest.approx(5e-5)
