"""The sweep's 1x1 convolutions with few channels or on a 1x1 map (``sweeps.SQUEEZES``): a
squeeze-and-excitation block's two and a mobile network's narrow expansions, timed under the
classes the workload gives the same calls, both phases; the ``conv_1x1`` surface reaches down to
them, so a squeeze is no longer read below the sweep's smallest point."""

from trainplay.hardware.measure import sweeps
from trainplay.workload import profile
from trainplay.workload.opclass import FEW_SAMPLES


def _label(n, c, h, co):
    return f"conv {n}x{c}x{h}^2 -> {co} k1 s1 g1"


def _squeeze(case: sweeps.Case) -> bool:
    return any(case.label == _label(*s) for s in sweeps.SQUEEZES)


def test_each_squeeze_is_timed_forward_and_backward_under_its_class():
    by_label: dict[str, set[str]] = {}
    for case in sweeps.cases():
        by_label.setdefault(case.label, set()).add(case.key)
    for n, c, h, co in sweeps.SQUEEZES:
        cls = "conv_1x1" if n >= FEW_SAMPLES else "conv_1x1_few"
        assert by_label[_label(n, c, h, co)] == {f"{cls}.fwd", f"{cls}.bwd"}


def test_the_squeezes_reach_below_the_earlier_smallest_point_of_conv_1x1():
    forward = [case for case in sweeps.cases() if case.key == "conv_1x1.fwd"]
    new = [case.counted().flops for case in forward if _squeeze(case)]
    earlier = [case.counted().flops for case in forward if not _squeeze(case)]
    assert min(new) < min(earlier) / 100


def test_mobilenet_v3_small_squeezes_are_calls_of_the_swept_class():
    # its SE blocks at batch 16: 1x1 convolutions on 1x1 maps of 4 to 700 thousand FLOPs, class
    # conv_1x1 (16 samples: oneDNN), all below the 2 MFLOP of the class's earlier smallest point
    p = profile("mobilenet_v3_small", batch_size=16, input_shape=(3, 64, 64))
    squeezes = [
        op for layer in p.layers for op in layer.ops
        if op.op == "aten.convolution" and op.cls.startswith("conv_1x1") and op.flops < 1_000_000
    ]  # fmt: skip
    assert len({op.flops for op in squeezes}) >= 4
    assert {op.cls for op in squeezes} == {"conv_1x1"}
    swept = [
        case.counted().flops
        for case in sweeps.cases()
        if case.key == "conv_1x1.fwd" and _squeeze(case)
    ]
    assert min(swept) <= min(op.flops for op in squeezes)
