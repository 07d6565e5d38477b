"""Operator classes: the unit a device's performance profile is measured and looked up in.

A device does not run every operator at one rate. GEMMs and convolutions reach a fraction of the
device's peak FLOP/s that depends on their size and shape; normalisations, elementwise kernels,
reductions and copies reach a fraction of its memory bandwidth that depends on how much they move;
every operator also pays a fixed cost to be dispatched (and, on a GPU, launched). So the workload
keeps, per block, each operator's class, FLOPs, bytes and count, and the hardware level measures
one curve per class (:mod:`trainplay.hardware.profile`).

The classes, and the size their curve is indexed by:

==============  =====================================================  ======================
class           operators                                              size (per call)
==============  =====================================================  ======================
``gemm``        mm, addmm, bmm, baddbmm, linear's matmuls              FLOPs
``conv``        dense convolutions (one group) with a kernel wider     FLOPs
                than 1x1, forward and backward
``conv_1x1``    dense 1x1 convolutions: a matrix product over the      FLOPs
                channels, which libraries run as one
``conv_1x1_few`` the same with stride 1 on fewer than 16 samples       FLOPs
                (:data:`FEW_SAMPLES`): a CPU may run them another way
``conv_1x1_narrow`` the same on maps of 2 to 11 positions             FLOPs and positions
                (:data:`NARROW_1X1`): one GEMM per sample with that
                few columns
``conv_point``  dense convolutions with a wider kernel whose output     FLOPs
                map is a single position (a deep stage fed small
                images): the weight gradient is updated per sample
``conv_dw``     grouped and depthwise convolutions with a kernel up    bytes (they stream)
                to 3x3 and stride 1
``conv_dw_s2``  the same strided                                       bytes
``conv_dw_k5``  the same with a 5x5 kernel or wider, stride 1          bytes
``conv_dw_k5s2`` the same, 5x5 or wider and strided                    bytes
``attention``   fused scaled-dot-product attention kernels             FLOPs
``norm``        batch, layer, group and RMS normalisation              bytes
``norm_narrow`` batch normalisation over maps of 2 to 7 positions      bytes
                (:data:`NARROW_MAP`): fewer than a CPU vector holds
``elementwise`` pointwise ops, activations, dropout, the default rule  bytes
``reduction``   sums, means, softmax, log-softmax, losses              bytes
``pool``        max and average pooling, adaptive pooling              bytes
``copy``        copies, concatenation, indexing, embedding, fills      bytes
``view``        views and allocations: no data moves                   (only the fixed cost)
==============  =====================================================  ======================

``optimizer`` is a class of its own, priced from the parameters (it is not in the traced
iteration). A grouped convolution is classed by its bytes because with few channels per group it
does a handful of multiply-adds per byte it touches: on CPUs and GPUs alike it runs at memory
speed, far below the dense-convolution rate its FLOPs would suggest.

``conv_point`` is split from ``conv`` because on a CPU its backward streams the whole weight (and
its gradient) about once per sample: a map of one position leaves no spatial work to amortise it
over. Here (oneDNN, AVX2, two threads, freed memory kept) a 3x3 512->512 backward on 1x1 maps took
6.0, 17.7 and 32.9 ms at batch 8, 32 and 64; at batch 32 that is 17 GFLOP/s (counted as a direct
convolution) at 16 FLOP per byte, where a 3x3 640->640 backward on 2x2 maps at batch 8, with the
same FLOP per byte, ran at 34 GFLOP/s: a surface over FLOPs and FLOP per byte cannot tell the two
apart. A profile without the class prices it as ``conv`` (:data:`FALLBACK`).

The grouped convolutions are split by kernel and stride because on a CPU their backward's speed
follows them far more than the bytes and FLOPs a call's size and FLOP per byte tell: a
depthwise 5x5 stride-2 backward and a 3x3 stride-1 one have nearly the same FLOP per byte (the
wider kernel's FLOPs per output are made up by the stride's four times larger input per output),
yet here (AVX2, two threads) a 5x5 stride-2 backward of 4x672x9x9 took 5.9 ms and a 3x3 stride-1
one of 4x144x36x36, moving about as much, 1.7; one surface over all of them priced the first at
0.62 ms and the second at 4.4. A profile without one of these classes prices it as ``conv_dw``.

``norm_narrow`` is split from ``norm`` because a CPU's batch normalisation vectorises over a
channel's positions in one sample (ATen's ``batch_norm_cpu_backward_contiguous_impl`` and its
forward, ``aten/src/ATen/native/cpu/batch_norm_kernel.cpp``: a loop of ``Vectorized<float>`` over
the image, then a partial vector for what is left). A map of fewer positions than one vector holds
(8 floats with AVX2) runs only that remainder. Here (AVX2, one thread) the backward of 16x256
channels moved 0.77-0.84 GB/s on maps of 2 to 7 positions and 6-9 GB/s on maps of 8 to 14, its
forward 1.2-2.5 GB/s against 2.2-3.0: a ``native_batch_norm_backward`` of 32x512x2x2 took 0.96 ms,
one of 8x512x4x4, as many bytes, 0.06 ms, and the profile's ``norm`` curve (maps of 16 positions
and more) read 26 GB/s there. A map of one position takes another of ATen's kernels (its case of
image size 1; 32x512x1x1 backward moved 9.5 GB/s) and stays ``norm``. The threshold is AVX2's
float vector; on an AVX-512 host (16 floats) maps of 8 to 15 positions would belong here too and
are left in ``norm``. A profile without the class prices it as ``norm``.

``conv_1x1_few`` is split from ``conv_1x1`` because PyTorch picks the kernel by the call's shape
and its thread count: a float CPU convolution with a 1x1 kernel, stride 1, no dilation and fewer
than 16 samples runs as ATen's own per-sample GEMM (``aten._slow_conv2d_forward`` and
``_backward``, each sample streaming the whole weight) when one thread runs it, and as oneDNN's
otherwise (``ConvParams::use_mkldnn`` in ``aten/src/ATen/native/Convolution.cpp``, whose comment
says THNN is faster single-threaded). Here (AVX2, one thread, both workers busy) the deep stage of
resnet50 on 64x64 images at micro-batch 4 spent 152 ms of its 255 in that path, where the
profile's one ``conv_1x1`` surface, mostly of oneDNN's calls, priced it at 69. The class is the
workload's part of the rule (kernel, stride, samples); the thread count is the profile's: a
one-thread worker's sweep times these calls on ATen's path, a two-thread one's on oneDNN's. Which
path a call takes at another micro-batch is :func:`at_samples`. A profile without the class
prices it as ``conv_1x1``.

``conv_1x1_narrow`` is split from ``conv_1x1_few`` because ATen's per-sample path runs one matrix
product per sample, weight (out x in channels) by the sample's map (in channels x positions), and
with fewer than 12 positions that product has too few columns for the BLAS kernel to reach its
speed: its rate grows about in proportion to the positions. Here (AVX2, one thread, batch 4) a
1024->1024 forward ran at 3.5, 6.8, 13.7 and 14.0 GFLOP/s on maps of 2, 4, 8 and 10 positions,
then 35, 75 and 50 on 12, 16 and 25; a 256->256 one alike (7.1 at 4 positions, 77 at 16), so it
is not the weight's traffic. FLOPs and FLOP per byte cannot tell these calls apart: a 1024->256
forward of 8 samples on 2x2 maps and one of 2 samples on 4x4 maps have the same FLOPs and nearly
the same bytes, and took 2.5 and 0.23 ms. resnext50_32x4d's last two stages on 48x48 images
(maps of 3x3 and 2x2) spent about 400 ms of a 470 ms one-thread step at batch 4 there. So the
class's curve is read by FLOPs and by the output map's positions (:attr:`~trainplay.workload.
stats.OpGroup.positions`), not by intensity. A profile without the class prices it as
``conv_1x1_few``, by FLOPs and intensity. Only a one-thread CPU worker's profile has the class:
with more threads oneDNN runs these calls, and its time follows the call's columns, samples
times positions, as intensity tells (8x1024x2x2 -> 256 and 2x1024x4x4 -> 256 forward took 0.17
ms each on two threads here), so its sweep points join ``conv_1x1_few``'s surface
(:func:`~trainplay.hardware.measure.sweeps.curves_of`).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "BY_POSITIONS",
    "CLASSES",
    "COMPUTE_CLASSES",
    "DEPTHWISE_CLASSES",
    "FALLBACK",
    "FEW_SAMPLES",
    "MEMORY_CLASSES",
    "NARROW_1X1",
    "NARROW_MAP",
    "OPTIMIZER",
    "TRANSCENDENTAL",
    "TRANSCENDENTAL_STAND_IN",
    "at_samples",
    "is_memory_class",
    "op_class",
]

COMPUTE_CLASSES = (
    "gemm",
    "conv",
    "conv_1x1",
    "conv_1x1_few",
    "conv_1x1_narrow",
    "conv_point",
    "attention",
)
"""Classes whose curve gives FLOP/s as a function of the call's FLOPs."""
BY_POSITIONS = ("conv_1x1_narrow",)
"""Compute classes whose surface is read by FLOPs and the output map's positions (not the call's
FLOP per byte)."""
DEPTHWISE_CLASSES = ("conv_dw", "conv_dw_s2", "conv_dw_k5", "conv_dw_k5s2")
"""Grouped and depthwise convolutions by kernel (up to 3x3, or 5x5 and wider) and stride."""
MEMORY_CLASSES = (
    *DEPTHWISE_CLASSES,
    "norm",
    "norm_narrow",
    "elementwise",
    "reduction",
    "pool",
    "copy",
)
"""Classes whose curve gives bytes/s as a function of the call's bytes."""
OPTIMIZER = "optimizer"
"""The optimizer step's class (bytes/s as a function of the bytes of one parameter's update)."""
CLASSES = (*COMPUTE_CLASSES, *MEMORY_CLASSES, "view")
FALLBACK = {
    "conv_point": "conv",
    "conv_1x1_few": "conv_1x1",
    "conv_1x1_narrow": "conv_1x1_few",
    "norm_narrow": "norm",
    **dict.fromkeys(DEPTHWISE_CLASSES[1:], "conv_dw"),
}
"""The class whose curve prices a class that a profile lacks (one measured before the class
existed, or a catalog device's, whose published convolutions are not split by map size,
samples, kernel or stride)."""

TRANSCENDENTAL = frozenset(
    f"aten.{name}"
    for base in ("silu", "sigmoid", "tanh", "exp", "erf", "mish", "elu", "celu", "selu", "log")
    for name in (base, f"{base}_")
) | {"aten.softplus", "aten.log_sigmoid_forward", "aten.silu_backward", "aten.mish_backward",
     "aten.softplus_backward", "aten.log_sigmoid_backward"}  # fmt: skip
"""Elementwise operators that evaluate an exponential, a logarithm or an error function per
element (SiLU's backward too: it recomputes the sigmoid), which a CPU runs at a fraction of the
rate of arithmetic ones of the same bytes: here (AMD EPYC, AVX-512, two threads, hot caches) on
1.8 million floats ``silu_`` took 370 µs, ``sigmoid`` 394, ``gelu`` 409 and ``silu_backward``
452-551, where ``relu_`` took 44, ``add_`` 85 and ``threshold_backward`` 159; and they differ among
themselves (``gelu_backward`` 720, ``tanh`` 2258). The sweep times ``silu_``, ``silu_backward``,
``sigmoid`` and ``tanh`` (since 2026-12-04) beside ``gelu`` and ``gelu_backward``, and each such
operator is priced on its own curve (or its in-place sibling's), else on the curve of
:data:`TRANSCENDENTAL_STAND_IN` (a profile measured before, or an operator the sweep does not
time), never on its class's, which the sweep's arithmetic operators set (``curves_of`` keeps
these out of it). A backward that is arithmetic only (``sigmoid_backward``, ``tanh_backward``:
the saved output times the gradient) is not among them."""

TRANSCENDENTAL_STAND_IN = {"fwd": "aten.gelu", "bwd": "aten.gelu_backward"}
"""The swept operator whose curve prices a :data:`TRANSCENDENTAL` one of each phase."""

WIDE_KERNEL = 5
"""A grouped convolution whose kernel is this wide or wider on some side is ``conv_dw_k5...``."""

FEW_SAMPLES = 16
"""A 1x1 convolution with stride 1 on fewer samples than this is ``conv_1x1_few`` (PyTorch's
threshold for oneDNN with one thread, ``Convolution.cpp``)."""

NARROW_1X1 = range(2, 12)
"""Output positions per map of a ``conv_1x1_narrow`` call: fewer than the 12 at which ATen's
per-sample product reached the oneDNN-like rates here (a map of one position is a matrix-vector
product, and ran at 28 GFLOP/s)."""

NARROW_MAP = range(2, 8)
"""Positions per channel map of a ``norm_narrow`` batch normalisation: more than one, fewer than
one AVX2 vector of floats holds."""

_CONV = frozenset({"convolution", "convolution_backward", "_convolution"})
_ATTENTION_PREFIX = "_scaled_dot_product"
_BY_CATEGORY = {
    "norm": "norm",
    "pointwise": "elementwise",
    "dropout": "elementwise",
    "default": "elementwise",
    "reduction": "reduction",
    "softmax": "reduction",
    "pool": "pool",
    "copy": "copy",
    "fill": "copy",
    "view": "view",
}


def _arg(name: str, args: tuple, index: int) -> Any:
    """A convolution's argument at its forward position ``index`` (1 weight, 3 stride, 5
    dilation, 8 groups): a backward's sits one later, after the output's gradient; ``None``
    where the call leaves it out."""
    index += 1 if name == "convolution_backward" else 0
    return args[index] if len(args) > index else None


def _not_one(value: Any) -> bool:
    """Whether a stride or dilation list has an entry other than 1."""
    return isinstance(value, (list, tuple)) and any(int(v) != 1 for v in value)


def _groups(name: str, args: tuple) -> int:
    value = _arg(name, args, 8)
    return int(value) if isinstance(value, int) else 1


def _kernel(name: str, args: tuple) -> tuple[int, ...]:
    """The weight's spatial sides."""
    return tuple(int(k) for k in getattr(_arg(name, args, 1), "shape", ())[2:])


def _pointwise_kernel(name: str, args: tuple) -> bool:
    kernel = _kernel(name, args)
    return bool(kernel) and all(k == 1 for k in kernel)


def _depthwise_class(name: str, args: tuple) -> str:
    """A grouped convolution's class by its kernel and stride."""
    kernel = _kernel(name, args)
    wide = bool(kernel) and max(kernel) >= WIDE_KERNEL
    suffix = ("k5" if wide else "") + ("s2" if _not_one(_arg(name, args, 3)) else "")
    return f"conv_dw_{suffix}" if suffix else "conv_dw"


def _few_samples(name: str, args: tuple) -> bool:
    """Whether a 1x1 convolution runs with stride 1, no dilation, on fewer than
    :data:`FEW_SAMPLES` samples."""
    shape = getattr(args[0], "shape", ())
    if not shape or int(shape[0]) >= FEW_SAMPLES:
        return False
    return not (_not_one(_arg(name, args, 3)) or _not_one(_arg(name, args, 5)))


def _output_sides(args: tuple) -> list[int]:
    """A forward convolution's output sides from its input, kernel, stride, padding and dilation
    (empty for a transposed one, which is not priced by these rules)."""
    x, w = (getattr(a, "shape", ()) for a in args[:2])
    if len(x) < 3 or len(w) != len(x) or (len(args) > 6 and args[6]):
        return []
    dims = len(x) - 2

    def triple(index: int, default: int) -> list[int]:  # stride, padding, dilation per side
        value = args[index] if len(args) > index else None
        if not isinstance(value, (list, tuple)) or not value:
            return [default] * dims
        return [int(v) for v in value] * (dims if len(value) == 1 else 1)

    stride, pad, dilation = triple(3, 1), triple(4, 0), triple(5, 1)
    return [
        (int(x[2 + i]) + 2 * pad[i] - dilation[i] * (int(w[2 + i]) - 1) - 1) // stride[i] + 1
        for i in range(dims)
    ]


def _positions(name: str, args: tuple) -> int:
    """Positions of a convolution's output map (a forward's from its input, kernel, stride,
    padding and dilation; a backward's argument 0 is the output's gradient); 0 where unknown."""
    if name == "convolution_backward":
        shape = getattr(args[0], "shape", ())
        return math.prod(int(d) for d in shape[2:]) if len(shape) > 2 else 0
    sides = _output_sides(args)
    return math.prod(sides) if sides else 0


def _single_position(name: str, args: tuple) -> bool:
    """Whether a convolution's output map has one position."""
    return _positions(name, args) == 1


def positions(func: Any, args: tuple) -> int:
    """Positions of the output map of a convolution call; 0 for other calls."""
    name = func.overloadpacket.__name__
    return _positions(name, args) if name in _CONV else 0


def _narrow_map(name: str, args: tuple) -> bool:
    """Whether a batch normalisation's maps have :data:`NARROW_MAP` positions (argument 0 is the
    input, or the output's gradient of the same shape)."""
    shape = getattr(args[0], "shape", ()) if args else ()
    return "batch_norm" in name and len(shape) > 2 and math.prod(shape[2:]) in NARROW_MAP


def op_class(func: Any, args: tuple, category: str) -> str:
    """The class of one aten call whose :class:`~trainplay.workload.opcost.OpCost` has
    ``category``."""
    name = func.overloadpacket.__name__
    if category == "gemm":
        if name in _CONV:
            if _groups(name, args) != 1:
                return _depthwise_class(name, args)
            if _pointwise_kernel(name, args):
                if not _few_samples(name, args):
                    return "conv_1x1"
                narrow = positions(func, args) in NARROW_1X1
                return "conv_1x1_narrow" if narrow else "conv_1x1_few"
            return "conv_point" if _single_position(name, args) else "conv"
        if name.startswith(_ATTENTION_PREFIX):
            return "attention"
        return "gemm"
    if name in ("nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward"):
        return "reduction"
    if category == "norm" and _narrow_map(name, args):
        return "norm_narrow"
    return _BY_CATEGORY.get(category, "elementwise")


def at_samples(cls: str, samples: float) -> str:
    """The class of a call of class ``cls`` when it runs on ``samples`` samples instead of those
    it was counted with (the planner counts blocks at 2 and 4 samples and prices any micro-batch):
    a ``conv_1x1_few`` or ``conv_1x1_narrow`` call on :data:`FEW_SAMPLES` or more is a
    ``conv_1x1`` one."""
    few = cls in ("conv_1x1_few", "conv_1x1_narrow")
    return "conv_1x1" if few and samples >= FEW_SAMPLES else cls


def is_memory_class(cls: str) -> bool:
    """Whether ``cls`` is priced by its bytes (or is a view) rather than by its FLOPs."""
    return cls not in COMPUTE_CLASSES
