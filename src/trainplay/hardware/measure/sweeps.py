"""The sweeps behind a performance profile: each operator class timed over a range of sizes.

Every case is one aten operator call on synthetic tensors of shapes training uses (convolutions of
CNN stems, bottlenecks and depthwise blocks; the matrix products of linear layers and attention;
normalisations, activations, reductions, pooling, copies over 4 KiB to 256 MiB), forward and
backward apart. A case's FLOPs and bytes come from :func:`trainplay.workload.opcost.op_cost`, the
same rule the workload is counted by, so a curve's rate is in the units the cost model divides.
None of this is a model's own operator list: the cost model is calibrated from these synthetic
microbenchmarks only, never from the models it predicts.

On a GPU each case is timed as back-to-back calls. On a CPU each is timed as a training step runs
it, with its inputs evicted from the caches before the call (:mod:`.coldcache`), never faster
than back to back; every sample is checked for other processes' load (:mod:`.quiet`). On a CPU
the whole list runs three times (:data:`~.worker.CPU_PASSES`) and each case keeps its median over
the passes, since the machine's speed drifts between one case and the next; a case whose passes
disagree is timed again, up to twice more, until they agree (:mod:`.passes`). The rate of a case is
its size over its time net of the bare call's fixed cost; a class's curve is the median rate of
its cases within each factor-of-two bin of size.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch

from trainplay.hardware.measure.coldcache import Evictor
from trainplay.hardware.measure.passes import over_passes, unsettled
from trainplay.hardware.measure.quiet import Quiet, quiet_sample
from trainplay.hardware.measure.stats import cv_of
from trainplay.hardware.placement import one_of
from trainplay.hardware.profile import Curve, Surface
from trainplay.workload.opclass import (
    BY_POSITIONS,
    COMPUTE_CLASSES,
    DEPTHWISE_CLASSES,
    FALLBACK,
    TRANSCENDENTAL,
    op_class,
    positions,
)
from trainplay.workload.opcost import OpCost, op_cost

__all__ = [
    "BY_SHAPE",
    "NARROW_1X1S",
    "SQUEEZES",
    "WIDE_MAPS",
    "Case",
    "SweepResult",
    "cases",
    "curves_of",
    "run_sweep",
]

BY_SHAPE = DEPTHWISE_CLASSES
"""Memory classes priced by bytes and FLOP per byte (a surface), not by bytes alone: depthwise
convolutions' backward on this CPU moved 1.4-7 GB/s with 3x3 kernels and 0.16-0.8 GB/s with 5x5
at like sizes (4x240x28x28: 0.95 ms at stride 2 with 3x3, 55 ms at stride 1 with 5x5; timed
once each, 2026-12-02)."""

aten = torch.ops.aten
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Case:
    """One timed operator call."""

    key: str
    """``class.phase`` of the curve it belongs to."""
    label: str
    build: Callable[[torch.device, torch.dtype], tuple[Any, tuple, dict]]
    """Returns (aten overload, args, kwargs) with tensors on the device."""
    fresh: int | None = None
    """For an operator with a weight (matrix products, dense convolutions): the argument the
    operator before it in a training step has just written (the input in the forward, the
    output's gradient in the backward). On a CPU such a case is also timed *stale*
    (:func:`_stale_s`)."""

    def counted(self) -> OpCost:
        """FLOPs and bytes of one fp32 call, counted on ``meta`` as :func:`_time_case` counts
        them (nothing allocated): where a point of this case lies on its class's surface."""
        func, args, kwargs = self.build(torch.device("meta"), torch.float32)
        return op_cost(func, args, kwargs, func(*args, **kwargs))


@dataclass(frozen=True)
class SweepResult:
    key: str
    label: str
    op: str
    """The aten operator timed, e.g. ``aten.native_batch_norm``."""
    flops: float
    bytes: float
    """FLOPs and bytes of one call (:func:`trainplay.workload.opcost.op_cost`)."""
    seconds: float
    """Seconds of one call as a training step sees it: the cold-cache time on a CPU (never
    below the hot one), back to back on a GPU."""
    hot_s: float
    """Median seconds of one call back to back (hot caches)."""
    cv: float
    quiet: bool
    """Whether every sample ran without other processes' load."""
    stale_s: float | None = None
    """Seconds of one call with its fresh operand in the caches and the rest evicted
    (:attr:`Case.fresh`; never below the hot time); ``None`` where not timed."""
    positions: int = 0
    """The output map's positions, for a class whose surface is read by them
    (:data:`~trainplay.workload.opclass.BY_POSITIONS`); 0 for the others."""
    warm_s: float | None = None
    """Seconds of one call with its fresh operand in the caches and the rest cycled through half
    the footprint this CPU streams at cache speed (:func:`_stale_s` over that footprint): a
    weight read from the shared cache, not from the core's own, as a training step whose
    weights fit the cache reads it (never below the hot time); ``None`` where not timed, and
    where the other operands alone take more than half of that footprint."""
    step_s: float | None = None
    """Seconds of one call of a memory class (no weight: normalisations, elementwise, reductions,
    pooling, copies, depthwise and grouped convolutions) as a training step makes it: its first
    operand just written (in the caches), the other tensors stale and its output written into
    memory last used more than a cache ago (:func:`_stale_s` with ``keep_outputs``; never below
    the hot time); ``None`` where not timed."""
    placement: str | None = None
    """Where the CPUs sat while it was timed (:mod:`trainplay.hardware.placement`): the same
    before and after it, else ``mixed``; ``None`` where not probed."""
    passes: int = 1
    """How many passes of the sweep timed it (:func:`~.passes.over_passes`)."""
    settled: bool = True
    """Whether its passes agreed in the end (:func:`~.passes.unsettled`)."""

    @property
    def size(self) -> float:
        """FLOPs for a compute class, bytes for a memory class: what its curve is indexed by."""
        return self.flops if self.key.split(".")[0] in COMPUTE_CLASSES else self.bytes


_RANDOM: dict[tuple[str, torch.dtype], torch.Tensor] = {}


def _t(shape, device, dtype):
    """A tensor of ``shape`` with normally distributed values (some kernels' speed depends on the
    data: max-pooling, thresholds): copied out of one random buffer per device and dtype, which
    is much faster than drawing a large tensor anew."""
    numel = math.prod(shape)
    key = (str(device), dtype)
    base = _RANDOM.get(key)
    if base is None or base.numel() < numel:
        base = torch.randn(max(numel, 2**20), device=device, dtype=dtype)
        _RANDOM[key] = base
    return base[:numel].view(shape).clone()


def _like(t: torch.Tensor) -> torch.Tensor:
    return _t(tuple(t.shape), t.device, t.dtype)


def _conv(n, cin, h, cout, k, stride, groups, phase):
    """A convolution's case; ``h`` is the map's side, or its (height, width)."""
    pad = k // 2
    sides = tuple(h) if isinstance(h, tuple) else (h, h)

    def build(device, dtype):
        x = _t((n, cin, *sides), device, dtype)
        w = _t((cout, cin // groups, k, k), device, dtype)
        conv_args = ([stride, stride], [pad, pad], [1, 1], False, [0, 0], groups)
        if phase == "fwd":
            return aten.convolution.default, (x, w, None, *conv_args), {}
        out = aten.convolution.default(x, w, None, *conv_args)
        g = _like(out)
        mask = [True, True, False]
        return aten.convolution_backward.default, (g, x, w, None, *conv_args, mask), {}

    func, args, _ = build(torch.device("meta"), torch.float32)
    cls = op_class(func, args, "gemm")  # the class the workload gives the same call
    shape = f"{sides[0]}^2" if sides[0] == sides[1] else f"{sides[0]}x{sides[1]}"
    label = f"conv {n}x{cin}x{shape} -> {cout} k{k} s{stride} g{groups}"
    # the input (forward) or the output's gradient (backward) is argument 0 either way
    return Case(f"{cls}.{phase}", label, build, fresh=0 if groups == 1 else None)


def _gemm(t, k, n, phase, weight_grad=False):
    def build(device, dtype):
        x, w, b = _t((t, k), device, dtype), _t((n, k), device, dtype), _t((n,), device, dtype)
        if phase == "fwd":
            return aten.addmm.default, (b, x, w.t()), {}
        g = _t((t, n), device, dtype)
        if weight_grad:  # linear's backward: the weight gradient, and the input gradient
            return aten.mm.default, (g.t(), x), {}
        return aten.mm.default, (g, w), {}

    what = "weight gradient of " if weight_grad else ""
    # fresh: the input of addmm(bias, input, weight.t()), the gradient of mm(grad, weight) and of
    # mm(grad.t(), saved input)
    fresh = 1 if phase == "fwd" else 0
    return Case(f"gemm.{phase}", f"{what}linear {t}x{k} -> {n}", build, fresh=fresh)


def _attention(b, heads, seq, dim, phase):
    def build(device, dtype):
        q, k, v = (_t((b, heads, seq, dim), device, dtype) for _ in range(3))
        if device.type == "cuda":
            fwd = aten._scaled_dot_product_efficient_attention.default
            if phase == "fwd":
                return fwd, (q, k, v, None, True), {"is_causal": True}
            out, lse, seed, offset = fwd(q, k, v, None, True, is_causal=True)
            g = _like(out)
            return (
                aten._scaled_dot_product_efficient_attention_backward.default,
                (g, q, k, v, None, out, lse, seed, offset, 0.0, [True, True, True, False]),
                {"is_causal": True},
            )
        fwd = aten._scaled_dot_product_flash_attention_for_cpu.default
        if phase == "fwd":
            return fwd, (q, k, v, 0.0, True), {}
        out, lse = fwd(q, k, v, 0.0, True)
        g = _like(out)
        bwd = aten._scaled_dot_product_flash_attention_for_cpu_backward.default
        return bwd, (g, q, k, v, out, lse, 0.0, True), {}

    return Case(f"attention.{phase}", f"attention {b}x{heads}x{seq}x{dim}", build)


def _norm(kind, shape, phase):
    def build(device, dtype):
        x = _t(shape, device, dtype)
        if kind == "batch":
            c = shape[1]
            w, b = _t((c,), device, dtype), _t((c,), device, dtype)
            rm, rv = (
                torch.zeros(c, device=device, dtype=dtype),
                torch.ones(c, device=device, dtype=dtype),
            )
            if phase == "fwd":
                return aten.native_batch_norm.default, (x, w, b, rm, rv, True, 0.1, 1e-5), {}
            _, mean, invstd = aten.native_batch_norm.default(x, w, b, rm, rv, True, 0.1, 1e-5)
            g = _like(x)
            return (
                aten.native_batch_norm_backward.default,
                (g, x, w, rm, rv, mean, invstd, True, 1e-5, [True, True, True]),
                {},
            )
        d = shape[-1]
        w, b = _t((d,), device, dtype), _t((d,), device, dtype)
        if phase == "fwd":
            return aten.native_layer_norm.default, (x, [d], w, b, 1e-5), {}
        _, mean, rstd = aten.native_layer_norm.default(x, [d], w, b, 1e-5)
        g = _like(x)
        return (
            aten.native_layer_norm_backward.default,
            (g, x, [d], mean, rstd, w, b, [True, True, True]),
            {},
        )

    func, args, _ = build(torch.device("meta"), torch.float32)
    cls = op_class(func, args, "norm")  # the class the workload gives the same call
    return Case(f"{cls}.{phase}", f"{kind} norm {'x'.join(map(str, shape))}", build)


def _elementwise(op, numel, phase):
    def build(device, dtype):
        x = _t((numel,), device, dtype)
        if op == "relu":
            return (
                (aten.relu_.default, (x,), {})
                if phase == "fwd"
                else (aten.threshold_backward.default, (_like(x), x.relu(), 0), {})
            )
        if op == "add":
            return (
                (aten.add_.Tensor, (x, _like(x)), {})
                if phase == "fwd"
                else (aten.add.Tensor, (x, _like(x)), {})
            )
        if op == "silu":
            return (
                (aten.silu_.default, (x,), {})
                if phase == "fwd"
                else (aten.silu_backward.default, (_like(x), x), {})
            )
        if op in ("sigmoid", "tanh"):  # their backward is arithmetic: the class prices it
            return getattr(aten, op).default, (x,), {}
        if phase == "fwd":  # gelu
            return aten.gelu.default, (x,), {}
        return aten.gelu_backward.default, (_like(x), x), {}

    return Case(f"elementwise.{phase}", f"{op} {numel}", build)


def _reduction(op, rows, cols, phase):
    def build(device, dtype):
        x = _t((rows, cols), device, dtype)
        if op == "softmax":
            if phase == "fwd":
                return aten._log_softmax.default, (x, 1, False), {}
            out = aten._log_softmax.default(x, 1, False)
            return (
                aten._log_softmax_backward_data.default,
                (_like(x), out, 1, x.dtype),
                {},
            )
        if phase == "fwd":
            return aten.sum.dim_IntList, (x, [1]), {}
        return aten.mean.dim, (x, [0]), {}

    return Case(f"reduction.{phase}", f"{op} {rows}x{cols}", build)


def _pool(kind, n, c, h, phase):
    def build(device, dtype):
        x = _t((n, c, h, h), device, dtype)
        if kind == "max":
            args = ([3, 3], [2, 2], [1, 1], [1, 1], False)
            if phase == "fwd":
                return aten.max_pool2d_with_indices.default, (x, *args), {}
            out, idx = aten.max_pool2d_with_indices.default(x, *args)
            g = _like(out)
            return aten.max_pool2d_with_indices_backward.default, (g, x, *args, idx), {}
        if phase == "fwd":
            return aten.avg_pool2d.default, (x, [2, 2], [2, 2]), {}
        out = aten.avg_pool2d.default(x, [2, 2], [2, 2])
        g = _like(out)
        return (
            aten.avg_pool2d_backward.default,
            (g, x, [2, 2], [2, 2], [0, 0], False, True, None),
            {},
        )

    return Case(f"pool.{phase}", f"{kind} pool {n}x{c}x{h}^2", build)


def _copy(op, numel, phase):
    def build(device, dtype):
        x = _t((numel,), device, dtype)
        if op == "cat":
            half = _t((numel // 2,), device, dtype)
            return aten.cat.default, ([half, half],), {}
        if op == "embedding":
            dim = 256
            table = _t((4096, dim), device, dtype)
            ids = torch.zeros(max(1, numel // dim), dtype=torch.long, device=device)
            if phase == "fwd":
                return aten.embedding.default, (table, ids), {}
            g = _t((ids.numel(), dim), device, dtype)
            return aten.embedding_dense_backward.default, (g, ids, 4096, -1, False), {}
        return aten.copy_.default, (torch.empty_like(x), x), {}

    return Case(f"copy.{phase}", f"{op} {numel}", build)


def _powers(lo: int, hi: int, step: int = 2) -> Iterator[int]:
    k = lo
    while k <= hi:
        yield k
        k *= step


WIDE_MAPS = (  # (batch, channels in, side, channels out, kernel, stride)
    (48, 512, 1, 512, 3, 1), (16, 640, 1, 640, 3, 1), (64, 448, 1, 448, 3, 1),
    (48, 320, 2, 320, 3, 1), (24, 448, 2, 448, 3, 1),
)  # fmt: skip
"""One- and two-position maps where many samples meet a wide weight (the points before them had
one or the other): on an AVX2 CPU the backward of a 3x3 convolution on one position, 512
channels and 32-64 samples, ran at 13-15 GFLOP/s where the surface read 21-24 between those
points. Last in the sweep's convolutions, so that ``--quick``'s every third one of the earlier
ones stays as it was."""


NARROW_1X1S = (  # (batch, channels in, (height, width), channels out): 1x1, stride 1
    (4, 1024, (2, 2), 2048), (4, 2048, (2, 2), 1024), (4, 1024, (3, 3), 512),
    (4, 512, (3, 3), 1024), (2, 1024, (3, 3), 1024), (8, 256, (3, 3), 1024),
    (1, 2048, (2, 2), 512), (12, 512, (2, 2), 512), (4, 256, (1, 2), 256),
    (8, 640, (2, 3), 640), (2, 2048, (1, 3), 1024), (8, 128, (3, 3), 512),
    (4, 96, (2, 2), 576), (8, 960, (3, 3), 160), (4, 1280, (2, 5), 320), (2, 512, (1, 7), 2048),
)  # fmt: skip
"""1x1 convolutions of class ``conv_1x1_narrow`` (:data:`~trainplay.workload.opclass.NARROW_1X1`):
2 to 10 output positions, 1 to 12 samples, weights of 50 thousand to 2 million elements (the deep
stages of ResNeXt, ResNet and MobileNet fed small images). Before them the sweep's 1x1
convolutions on few samples had maps of 4 positions or of 16 and more, and at the same FLOPs and
intensity those ran 11 times apart."""


SQUEEZES = (  # (batch, channels in, side, channels out): 1x1, stride 1
    (16, 16, 1, 8), (16, 96, 1, 24), (32, 240, 1, 64), (16, 576, 1, 144), (64, 64, 1, 16),
    (16, 16, 24, 64), (16, 24, 14, 96), (32, 40, 7, 240), (16, 240, 7, 40), (16, 48, 14, 144),
    (4, 16, 1, 8), (8, 120, 1, 32), (4, 24, 28, 72), (8, 40, 14, 120),
)  # fmt: skip
"""1x1 convolutions with few channels or on a 1x1 map: a squeeze-and-excitation block's two
(MobileNetV3, EfficientNet, RegNet-Y: 4 thousand to 3 million FLOPs) and a mobile network's
expansions and projections of 16 to 48 channels. Before them the smallest ``conv_1x1`` point had
2 MFLOP, so a squeeze on 16 samples priced at about 4 µs where it took about 50 alone (two
threads, 2026-12-07); and a 16x16x25x25 -> 72 expansion read 97 GFLOP/s between points of 96
and more channels where it ran at 51 alone. Last in the sweep's convolutions (see
:data:`WIDE_MAPS`)."""


NARROW_GEMMS = (  # (rows, features in, features out)
    (16, 128, 384), (64, 128, 384), (128, 128, 384), (16, 192, 768), (64, 192, 768),
    (128, 192, 768), (16, 512, 192), (64, 512, 192), (128, 512, 192),
)  # fmt: skip
"""Products of 16 to 128 rows against the weights of a narrow transformer (128 to 512 features,
weights of 190 to 590 KB): a short sequence's projections. Before them the points nearest such a
call had a 64x64 weight and 1,024 rows (the same FLOPs and FLOP per byte, a weight that costs
nothing to fetch again) or a 1 MiB weight, and with its weight streamed from memory, as a step
whose parameters outgrow the cache runs it, a 48x160 -> 480 product took 131 µs where the
surface read 86 (one thread, 2026-12-07; 80 µs with the weight cached). Last among the products,
so that ``--quick``'s every other one of the earlier ones stays as it was."""


SHORT_ATTENTIONS = (  # (batch, heads, sequence, head dim)
    (4, 4, 8, 32), (1, 8, 12, 32), (8, 6, 16, 32), (2, 8, 16, 64), (4, 12, 24, 64),
    (16, 4, 32, 48), (8, 8, 32, 32),
)  # fmt: skip
"""Causal attention at sequences of 8 to 32 (a decoder trained on short sequences, a pipeline's
micro-batch of one). The CPU's flash-attention kernel pays a fixed cost per batch and head that
the sweep's sequences of 64 and more hide: on one thread a 4x5x12x32 call took 42 µs forward and
105 backward where the surface read about 9 and 15 (2026-12-07)."""


NARROW_NORMS = (  # (batch, channels, height, width): maps of 2 to 7 positions
    (2, 256, 2, 2), (8, 64, 1, 7), (8, 512, 2, 2), (32, 256, 2, 3), (64, 512, 2, 2),
    (16, 1024, 2, 3), (128, 512, 2, 2), (24, 2048, 1, 5),
)  # fmt: skip
"""Batch normalisations of class ``norm_narrow`` (:data:`~trainplay.workload.opclass.NARROW_MAP`),
22 KB to 3 MB of traffic: a deep stage of a CNN fed small images (resnet18 on 44x44 images has 2x2
maps in its last stage). The batch norm points before them had 16 channels and maps of 16
positions or more."""


def cases(quick: bool = False) -> list[Case]:
    """Every case of the sweep (a subset of sizes when ``quick``)."""
    out: list[Case] = []
    convs = [  # (batch, channels in, side, channels out, kernel, stride)
        (1, 3, 224, 64, 7, 2), (4, 3, 224, 32, 3, 2), (2, 64, 56, 64, 3, 1),
        (8, 64, 56, 64, 3, 1), (4, 128, 28, 128, 3, 1), (16, 128, 28, 128, 3, 1),
        (4, 256, 14, 256, 3, 1), (16, 256, 14, 256, 3, 1), (4, 512, 7, 512, 3, 1),
        (1, 32, 112, 32, 3, 1), (8, 16, 32, 16, 3, 1), (4, 48, 56, 48, 3, 1),
        (4, 64, 56, 256, 1, 1), (4, 256, 56, 64, 1, 1), (4, 512, 28, 128, 1, 1),
        (4, 1024, 14, 256, 1, 1), (4, 2048, 7, 512, 1, 1), (4, 96, 56, 24, 1, 1),
        (4, 32, 28, 192, 1, 1), (16, 256, 14, 1024, 1, 1), (1, 64, 28, 128, 3, 2),
        (2, 128, 28, 512, 1, 1), (8, 512, 7, 2048, 1, 1), (1, 24, 56, 144, 1, 1), (4, 160, 7, 960, 1, 1),
        (4, 128, 14, 256, 3, 2), (2, 96, 27, 256, 5, 1), (1, 40, 14, 40, 3, 1),
        # small feature maps (an ImageNet network on 32x32 inputs, a deep stage): the weights
        # dominate the bytes, and on an AVX2 CPU the backward of a 3x3 convolution on a 1x1 map
        # ran at 6 GFLOP/s where the surface of the larger maps said 27
        (8, 640, 2, 640, 3, 1), (16, 320, 2, 320, 3, 1), (24, 160, 4, 160, 3, 1),
        (4, 768, 3, 768, 3, 1), (16, 256, 4, 512, 3, 2),
        # maps of one position (class conv_point): batch 2 to 64, 128 to 768 channels, and a
        # downsampling one from 2x2
        (16, 384, 1, 384, 3, 1), (64, 192, 1, 192, 3, 1), (2, 768, 1, 768, 3, 1),
        (64, 256, 1, 256, 3, 1), (8, 384, 2, 768, 3, 2), (4, 640, 1, 640, 3, 1),
        (48, 128, 1, 128, 3, 1),
        # small calls, 0.02-17 MFLOP (a CNN on small images, a micro-batch of a pipeline): on an
        # AVX2 host a convolution took about 95 us forward and 160 us backward however small
        # (two threads), where an elementwise operator's fixed cost was 5 us; without these
        # the surfaces' smallest cases were 5-20 MFLOP
        (8, 32, 4, 32, 3, 1), (2, 16, 8, 16, 3, 1), (8, 64, 2, 64, 3, 1), (8, 128, 1, 32, 3, 1),
        (8, 32, 1, 32, 3, 1), (8, 128, 1, 32, 1, 1), (8, 32, 4, 128, 1, 1),
        (8, 960, 1, 240, 1, 1), (8, 2048, 1, 512, 1, 1), (16, 256, 2, 64, 1, 1),
        # 1x1 convolutions on small maps below batch 16 (class conv_1x1_few): with one thread
        # PyTorch runs them as its own per-sample GEMM (aten._slow_conv2d_*), not oneDNN (its
        # backend choice for float CPU convolutions), and each sample streams the whole weight:
        # a resnet50 step on 32x32 images, batch 8, one thread, spent 167 ms there
        (8, 1024, 2, 256, 1, 1), (8, 256, 4, 1024, 1, 1), (8, 512, 2, 128, 1, 1),
        (8, 128, 4, 512, 1, 1), (8, 64, 8, 256, 1, 1), (2, 1024, 4, 256, 1, 1),
        (4, 512, 2, 2048, 1, 1), (12, 256, 8, 64, 1, 1),
        # 1x1 convolutions that oneDNN runs on any thread count (class conv_1x1): 16 samples or
        # more, or strided (ResNet's downsampling shortcuts, down to 4x4 maps)
        (16, 64, 56, 256, 1, 1), (16, 512, 7, 2048, 1, 1), (16, 1024, 4, 256, 1, 1),
        (32, 2048, 1, 512, 1, 1), (16, 96, 28, 24, 1, 1), (24, 256, 8, 64, 1, 1),
        (4, 256, 56, 512, 1, 2), (8, 1024, 14, 2048, 1, 2), (4, 1024, 4, 2048, 1, 2),
        (8, 512, 8, 1024, 1, 2),
        *WIDE_MAPS,
        *((n, c, h, co, 1, 1) for n, c, h, co in SQUEEZES),
    ]  # fmt: skip
    depthwise = [  # (batch, channels, side, kernel, stride)
        (4, 32, 112, 3, 1), (4, 96, 56, 3, 1), (4, 144, 56, 3, 1), (4, 192, 28, 3, 1),
        (4, 384, 14, 3, 1), (4, 576, 14, 3, 1), (4, 960, 7, 3, 1), (4, 240, 28, 5, 1),
        (4, 672, 14, 5, 1), (16, 144, 56, 3, 1), (1, 64, 56, 3, 1), (1, 768, 7, 7, 1),
        # downsampling ones, and wider kernels at other sizes: on a CPU the backward's speed
        # depends on the kernel and the stride far more than on the bytes (:data:`BY_SHAPE`)
        (4, 64, 96, 3, 2), (2, 128, 48, 3, 2), (4, 128, 48, 5, 2), (2, 320, 20, 5, 2),
        (2, 128, 40, 5, 1), (4, 384, 10, 5, 1), (2, 256, 14, 7, 1),
        # small calls (see the dense ones above)
        (8, 64, 4, 3, 1), (8, 240, 2, 5, 1), (8, 64, 16, 3, 1), (8, 672, 2, 5, 1),
        # downsampling ones of the mobile networks' stages, 3x3 and 5x5, down to 8x8 maps: each
        # kernel and stride is a class of its own (conv_dw_s2, conv_dw_k5s2), and each needs
        # points at the sizes a small image or micro-batch gives
        (4, 144, 56, 3, 2), (8, 192, 28, 3, 2), (4, 576, 14, 3, 2), (16, 32, 16, 3, 2),
        (4, 144, 56, 5, 2), (8, 672, 14, 5, 2), (8, 240, 8, 5, 2), (16, 96, 16, 5, 2),
        # 5x5 and 7x7 at stride 1 on mid-sized maps (conv_dw_k5)
        (4, 384, 8, 7, 1), (2, 96, 28, 7, 1),
    ]  # fmt: skip
    grouped = [  # (batch, channels, side, kernel, stride, channels per group): ResNeXt- and
        # RegNet-style grouped 3x3 convolutions, 4 to 128 channels a group; with wide groups
        # each group is a dense convolution, far more FLOPs per byte than a depthwise one
        (4, 128, 28, 3, 1, 4), (4, 256, 14, 3, 1, 8), (2, 512, 14, 3, 1, 16),
        (2, 512, 7, 3, 1, 32), (2, 256, 28, 3, 2, 64), (1, 768, 14, 3, 1, 96),
        (1, 1024, 7, 3, 1, 128),
    ]  # fmt: skip
    # rows: 64 too, since 2026-12-06. Without them the points nearest a product of 64 rows
    # against a 512 x 512 weight (33.6 MFLOP, 26 FLOP per byte) were products of 4096 rows against
    # a 64 x 64 one (34 MFLOP, 16 FLOP per byte), whose weight costs nothing to fetch again: with
    # the weights evicted between uses they ran at 62 GFLOP/s where a product of 64 rows against a
    # 256 x 1024 weight ran at 49 (two threads, AVX2), and the surface read about 59 between them.
    # Last, so that the quick sweep keeps the points it had and adds two of 64 rows
    gemms = [
        (t, k, n)
        for t in ((16, 128, 1024) if quick else (16, 128, 1024, 4096)) + (64,)
        for k, n in ((64, 64), (256, 1024), (768, 768), (1024, 4096), (2048, 1000))
    ]
    heads = [  # classifier heads at small batches, and a language model's output layer
        (1, 9216, 4096), (4, 25088, 4096), (8, 4096, 4096), (32, 4096, 1000), (4, 1280, 1000),
        (256, 768, 32000),
    ]  # fmt: skip
    attentions = [
        (1, 12, 64, 64),
        (2, 12, 128, 64),
        (4, 8, 256, 64),
        (1, 16, 512, 64),
        (8, 4, 64, 32),
    ]
    numels = list(_powers(2**10, 2**24, 16 if quick else 4))
    if quick:  # a third of the convolutions, GEMMs of up to 1024 rows (4 GFLOP) and weights of
        # up to 32 MiB: a profile with every class, for tests, in a fraction of the time (here a
        # 34 GFLOP product took 7 s, a 392 MiB weight's cold and stale timings 5 s)
        convs, depthwise, gemms = convs[::3], depthwise[::3], gemms[::2]
        grouped, heads = grouped[::3], [h for h in heads if h[1] * h[2] * 4 <= 2**25]
    narrow = NARROW_NORMS[::2] if quick else NARROW_NORMS
    narrow_1x1 = NARROW_1X1S[::2] if quick else NARROW_1X1S
    gemms += heads
    gemms += NARROW_GEMMS[::3] if quick else NARROW_GEMMS
    attentions += SHORT_ATTENTIONS[::3] if quick else SHORT_ATTENTIONS
    for phase in ("fwd", "bwd"):
        out += [_conv(n, c, h, co, k, s, 1, phase) for n, c, h, co, k, s in convs]
        out += [_conv(n, c, h, c, k, s, c, phase) for n, c, h, k, s in depthwise]
        out += [_conv(n, c, h, c, k, s, c // g, phase) for n, c, h, k, s, g in grouped]
        out += [_conv(n, c, sides, co, 1, 1, 1, phase) for n, c, sides, co in narrow_1x1]
        out += [_gemm(t, k, n, phase) for t, k, n in gemms]
        if phase == "bwd":
            out += [_gemm(t, k, n, phase, weight_grad=True) for t, k, n in gemms]
        out += [_attention(*a, phase) for a in attentions]
        for numel in numels:
            side = max(2, int(math.sqrt(numel / 64)))
            out.append(_norm("batch", (4, 16, side, side), phase))
            out.append(_norm("layer", (max(1, numel // 768), 768), phase))
            out += [_elementwise(op, numel, phase) for op in ("relu", "add", "gelu", "silu")]
            if phase == "fwd":
                out += [_elementwise(op, numel, phase) for op in ("sigmoid", "tanh")]
            out.append(_reduction("softmax", max(1, numel // 1024), 1024, phase))
            out.append(_reduction("sum", max(1, numel // 256), 256, phase))
            out.append(_pool("max", 4, 16, max(4, side), phase))
            out.append(_pool("avg", 4, 16, max(4, side), phase))
            out += [_copy(op, numel, phase) for op in ("copy", "cat", "embedding")]
        out += [_norm("batch", shape, phase) for shape in narrow]
    return out


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _per_call_s(call: Callable[[], object], device: torch.device, target_s: float) -> float:
    call()
    _sync(device)
    start = time.perf_counter()
    call()
    _sync(device)
    once = max(time.perf_counter() - start, 1e-7)
    reps = max(1, min(20_000, round(target_s / once)))
    start = time.perf_counter()
    for _ in range(reps):
        call()
    _sync(device)
    return (time.perf_counter() - start) / reps


def _samples(
    call: Callable[[], object], device: torch.device, quiet: Quiet, samples: int, sample_s: float
) -> tuple[list[float], bool]:
    """``samples`` timings of ``call`` (seconds per call, each over about ``sample_s``) and
    whether each ran without other processes' load."""
    calm, times = True, []
    for _ in range(samples):
        t, was_quiet = quiet_sample(lambda: _per_call_s(call, device, sample_s), quiet, min_s=0.0)
        times.append(t)
        calm = calm and was_quiet
    return times, calm


def _time_case(
    case: Case,
    device: torch.device,
    dtype: torch.dtype,
    quiet: Quiet,
    samples: int,
    sample_s: float,
    evictor: Evictor | None,
    warm_bytes: int | None = None,
) -> SweepResult:
    func, args, kwargs = case.build(device, dtype)
    out = func(*args, **kwargs)
    cost = op_cost(func, args, kwargs, out)
    del out

    def call() -> object:
        return func(*args, **kwargs)

    times, calm = _samples(call, device, quiet, samples, sample_s)
    hot = statistics.median(times)
    seconds, stale, warm, step = hot, None, None, None
    if evictor is not None:
        cold, was_quiet = quiet_sample(lambda: evictor.time(call), quiet, min_s=0.0)
        seconds, calm = max(hot, cold), calm and was_quiet
        if case.fresh is not None:
            stale, was_quiet = _stale_s(
                func, args, kwargs, case.fresh, evictor.buffer.nbytes, device, quiet, samples,
                sample_s,
            )  # fmt: skip
            stale, calm = max(hot, stale), calm and was_quiet
            warm, was_quiet = _warm_s(
                func, args, kwargs, case.fresh, warm_bytes, device, quiet, samples, sample_s
            )
            warm, calm = None if warm is None else max(hot, warm), calm and was_quiet
        elif case.key.split(".")[0] not in COMPUTE_CLASSES:
            step, was_quiet = _stale_s(
                func, args, kwargs, 0, evictor.buffer.nbytes, device, quiet, samples, sample_s,
                keep_outputs=True,
            )  # fmt: skip
            step, calm = max(hot, step), calm and was_quiet
    cv = cv_of(times)
    op = str(func.overloadpacket)
    where = positions(func, args) if case.key.split(".")[0] in BY_POSITIONS else 0
    return SweepResult(
        case.key, case.label, op, float(cost.flops), float(cost.bytes), seconds, hot, cv, calm,
        stale, where, warm, step,
    )  # fmt: skip


STALE_COPIES = 256
"""At most this many copies of a case's other operands are cycled (:func:`_stale_s`)."""


def _others(args: tuple, fresh: int) -> list[int]:
    """The positions of a call's tensors other than its fresh one: what a stale or warm timing
    cycles copies of (weight, bias, saved input)."""
    return [i for i, a in enumerate(args) if i != fresh and isinstance(a, torch.Tensor)]


def _stale_s(
    func: Any,
    args: tuple,
    kwargs: dict,
    fresh: int,
    footprint_bytes: int,
    device: torch.device,
    quiet: Quiet,
    samples: int,
    sample_s: float,
    keep_outputs: bool = False,
) -> tuple[float, bool]:
    """Seconds of one call as a training step whose parameters outgrow the cache runs it: calls
    back to back (threads awake, prefetchers streaming, as between a step's layers), each on
    the same fresh operand (``args[fresh]``, just written by the layer before) and on the next
    of several copies of the other tensors (weight, bias, saved input), enough copies that
    ``footprint_bytes`` (twice the footprint at which the CPU streams from memory) lie between
    two uses of one (up to :data:`STALE_COPIES`). The median of ``samples`` samples, and whether
    each ran without other processes' load. (Timing one call just after an eviction, as
    :class:`~.coldcache.Evictor` does, priced a 64x512x512 product at twice its time inside a
    training step here: the eviction leaves costs of its own that a step's calls do not pay.)

    With ``keep_outputs`` the outputs of the last calls are kept alive, as many as
    ``footprint_bytes`` holds (up to :data:`STALE_COPIES`), so each call's output is allocated
    in memory last written that many calls ago, as a training step's outputs are: its forward
    keeps every activation it saves, so a new output lands where nothing ran lately. Here (two
    threads, the CPUs sharing a cache, 2026-12-05) that took a batch-norm backward on 8x144x22x22
    from 99 µs hot to 176, a ReLU's backward on 557 k floats from 40 to 89 µs, and a 3x3
    depthwise convolution's backward on 8x48x44x44 from 485 to 992 µs; with the saved input
    stale as well, 257, 130 and 713 µs."""
    others = _others(args, fresh)
    stale_bytes = sum(args[i].nbytes for i in others) or 1
    copies = max(2, min(STALE_COPIES, math.ceil(footprint_bytes / stale_bytes)))
    sets = [
        tuple(a.clone() if i in others else a for i, a in enumerate(args)) for _ in range(copies)
    ]
    turn = [0]
    kept = deque(
        maxlen=_kept_outputs(func(*args, **kwargs), footprint_bytes) if keep_outputs else 0
    )

    def call() -> object:
        turn[0] = (turn[0] + 1) % copies
        out = func(*sets[turn[0]], **kwargs)
        kept.append(out)
        return out

    times, calm = _samples(call, device, quiet, samples, sample_s)
    return statistics.median(times), calm


def _kept_outputs(out: object, footprint_bytes: int) -> int:
    """How many of a call's outputs ``footprint_bytes`` holds (1 to :data:`STALE_COPIES`)."""
    outs = out if isinstance(out, tuple | list) else (out,)
    nbytes = sum(o.nbytes for o in outs if isinstance(o, torch.Tensor)) or 1
    return max(1, min(STALE_COPIES, math.ceil(footprint_bytes / nbytes)))


def _warm_s(
    func: Any,
    args: tuple,
    kwargs: dict,
    fresh: int,
    warm_bytes: int | None,
    device: torch.device,
    quiet: Quiet,
    samples: int,
    sample_s: float,
) -> tuple[float | None, bool]:
    """:func:`_stale_s` with the other operands cycled through ``warm_bytes`` (half the footprint
    this CPU streams at cache speed): ``(None, True)`` without it, or where two copies of the
    other operands do not fit in it. Here (two threads) a 64x512x512 product ran at 158 GFLOP/s
    back to back, 135 cycling eight weights of 1 MiB, 101 after an eviction; in the training
    step of an eight-layer MLP of such products, at about 125."""
    others = sum(args[i].nbytes for i in _others(args, fresh))
    if warm_bytes is None or 2 * others > warm_bytes:
        return None, True
    return _stale_s(func, args, kwargs, fresh, warm_bytes, device, quiet, samples, sample_s)


PLACEMENT_WAIT_S = 900.0
"""Seconds a sweep spends in all waiting for the CPUs' placement and on cases timed again for it
(:func:`run_sweep`)."""
PLACEMENT_POLL_S = 0.25
"""Seconds between two probes while a sweep waits for the CPUs' placement."""


def run_sweep(
    device: torch.device,
    dtype: str,
    case_list: list[Case],
    *,
    samples: int = 3,
    sample_s: float = 0.01,
    passes: int = 1,
    more_passes: int = 0,
    agree: Callable[[list[bool]], list[bool]] = lambda flags: flags,
    evict_bytes: int | None = None,
    warm_bytes: int | None = None,
    progress: Callable[[float], None] = lambda _: None,
    between: Callable[[], None] = lambda: None,
    placement: Callable[[], str | None] | None = None,
    target: str | None = None,
    wait_s: float = PLACEMENT_WAIT_S,
) -> list[SweepResult]:
    """Time every case: ``samples`` hot samples of about ``sample_s`` each, medians, and with
    ``evict_bytes`` (the footprint at which a CPU streams from memory,
    :attr:`~.coldcache.CacheKnees.memory_bytes`) the median cold-cache call too, and the stale
    one of a case with a weight; with ``warm_bytes`` (half the footprint streamed at cache speed)
    its warm one (:func:`_warm_s`); ``between()`` runs before each case (several workers keep in
    step with a barrier there).

    With ``passes`` > 1 the whole list is timed that many times, one pass after another, and a
    case's result is its median over the passes (:func:`~.passes.over_passes`). A shared virtual
    machine's speed drifts over seconds to minutes (a 1 GFLOP ``addmm`` here ran at 127-174
    GFLOP/s in 2-second windows over one minute), and a case's samples, taken within tens of
    milliseconds, all see the same moment: one pass timed the forward products at about 100
    GFLOP/s and the backward ones at 150. Passes a sweep apart see different moments. Then, up to
    ``more_passes`` times, the cases whose passes still disagree (:func:`~.passes.unsettled`) are
    timed once more, in order, and the rest are left alone; ``agree`` turns this worker's flags
    (one per case) into the ones every worker acts on (several workers take the union, so that
    they time the same cases and meet at the same barriers).

    With ``placement`` (:func:`~trainplay.hardware.placement.placement_now`, where it can tell)
    every case is timed in ``target``, or without one in the placement the CPUs were in when the
    sweep began: probed before and after each case, a case that ended in another is timed again,
    and with ``target`` asked for, a case first waits (idle, probing every
    :data:`PLACEMENT_POLL_S`) until they are in it, as long as the waiting and the tries thrown
    away so far took less than ``wait_s`` seconds in all; after that a case keeps the placement it
    was timed in (its :attr:`SweepResult.placement`). Waiting idle costs less of that budget than
    timing a case and throwing it away where the CPUs sit in the other placement most of the
    time; without a placement asked for, a sweep (a first ``--cluster local``'s quick one among
    them) does not wait for one that may not come back for minutes."""
    quiet = Quiet()
    evictor = Evictor(evict_bytes) if evict_bytes else None
    timed: list[list[SweepResult]] = [[] for _ in case_list]
    waits = placement is not None and target is not None
    if placement is None:
        target = None
    elif target is None:
        target = placement()
    waited_s = 0.0

    def time_once(case: Case) -> SweepResult:
        nonlocal waited_s
        between()
        while True:
            began = time.monotonic()
            before = placement() if target is not None else None
            if waits and before != target and waited_s < wait_s:
                time.sleep(PLACEMENT_POLL_S)
                waited_s += time.monotonic() - began
                continue
            result = _time_case(
                case, device, DTYPES[dtype], quiet, samples, sample_s, evictor, warm_bytes
            )
            if target is None:
                return result
            result = replace(result, placement=one_of((before, placement())))
            if result.placement == target or waited_s >= wait_s:
                return result
            waited_s += time.monotonic() - began

    # progress: the first passes to FIRST_SHARE of the bar (all of it without more passes)
    first_share = FIRST_SHARE if more_passes and passes > 1 else 1.0
    for p in range(passes):
        for i, case in enumerate(case_list):
            timed[i].append(time_once(case))
            progress(first_share * (p * len(case_list) + i + 1) / (len(case_list) * passes))
    for extra in range(more_passes if passes > 1 else 0):
        again = [i for i, flag in enumerate(agree([unsettled(t) for t in timed])) if flag]
        for n, i in enumerate(again):
            timed[i].append(time_once(case_list[i]))
            progress(first_share + (1 - first_share) * (extra + (n + 1) / len(again)) / more_passes)
        if not again:
            break
    progress(1.0)
    return [over_passes(results) for results in timed]


FIRST_SHARE = 0.8
"""The share of a sweep's progress bar its first passes take when more may follow."""


def curves_of(
    results: list[SweepResult], call_s: float, *, asynchronous: bool, by_positions: bool = True
) -> dict[str, Curve | Surface]:
    """Per ``class.phase`` and per ``class.phase:aten-op`` (a class mixes operators of different
    speeds: batch and layer normalisation, copies and concatenations; the cost model takes an
    operator's own curve where one was measured, its class's otherwise): for a memory class the
    median rate in each factor-of-two bin of bytes; for a compute class a :class:`Surface` of
    every case's rate by FLOPs and intensity. Where the sweep timed cold caches, ``...@hot``
    holds the same from the hot-cache times, ``...@stale`` from the stale times of the cases
    that have them (:attr:`Case.fresh`), ``...@warm`` from their warm times and ``...@step``
    from a memory class's times as a training step makes them (:attr:`SweepResult.step_s`). On a
    synchronous device the bare call's cost ``call_s`` is taken off each time first (never more
    than half of it). Depthwise and grouped convolutions (:data:`BY_SHAPE`) are a memory class
    whose rate depends on the kernel and the stride, not only on the bytes: they get a surface of
    bytes/s by bytes and FLOP per byte (the FLOPs per byte of a depthwise convolution grow with
    the kernel's area and fall with the stride). Without ``by_positions`` (a device that does not
    run those calls on ATen's per-sample path: a CPU worker of several threads, whose oneDNN took
    as long for 8x1024x2x2 -> 256 as for 2x1024x4x4 -> 256 forward here, 0.17 ms each, or a GPU)
    a class read by positions is folded into its stand-in
    (:data:`~trainplay.workload.opclass.FALLBACK`), read by intensity, and the profile has no
    curve of its own for it."""
    if not by_positions:
        results = [_folded(r) for r in results]
    out: dict[str, Curve | Surface] = {}
    cold = any(r.seconds != r.hot_s for r in results)
    variants = (
        ("", lambda r: r.seconds),
        ("@hot", lambda r: r.hot_s),
        ("@stale", lambda r: r.stale_s),
        ("@warm", lambda r: r.warm_s),
        ("@step", lambda r: r.step_s),
    )
    for suffix, pick in variants:
        if suffix and not cold:
            continue
        groups: dict[str, list[tuple[SweepResult, float]]] = {}
        for r in results:
            seconds = pick(r)
            if r.size <= 0 or seconds is None:
                continue
            net = seconds if asynchronous else max(seconds - call_s, 0.5 * seconds)
            # an operator that evaluates an exponential per element has a curve of its own only:
            # the class's stays the arithmetic operators' (opclass.TRANSCENDENTAL)
            own = (f"{r.key}:{r.op}",)
            for key in own if r.op in TRANSCENDENTAL else (r.key, *own):
                groups.setdefault(key, []).append((r, net))
        for key, points in groups.items():
            cls = key.split(".")[0]
            if cls in BY_POSITIONS:
                out[key + suffix] = _surface(points, by_positions=True)
            elif cls in COMPUTE_CLASSES:
                out[key + suffix] = _surface(points)
            elif cls in BY_SHAPE:
                out[key + suffix] = _surface(points, per_byte=True)
            else:
                out[key + suffix] = _binned(points)
    return out


def _folded(r: SweepResult) -> SweepResult:
    """``r`` under its class's stand-in when its class is read by positions, else ``r``."""
    cls, _, phase = r.key.partition(".")
    return replace(r, key=f"{FALLBACK[cls]}.{phase}", positions=0) if cls in BY_POSITIONS else r


def _surface(
    points: list[tuple[SweepResult, float]], per_byte: bool = False, by_positions: bool = False
) -> Surface:
    """FLOP/s by FLOPs and intensity; ``per_byte``: bytes/s by bytes and intensity;
    ``by_positions``: FLOP/s by FLOPs and the output map's positions."""
    unique: dict[tuple[float, float], list[float]] = {}
    for r, net in points:
        if by_positions:
            intensity = float(r.positions)
        else:
            intensity = r.flops / r.bytes if r.bytes else r.flops
        size = r.bytes if per_byte else r.flops
        unique.setdefault((size, intensity), []).append(size / net)
    keys = sorted(unique)
    return Surface(
        sizes=tuple(k[0] for k in keys),
        intensities=tuple(k[1] for k in keys),
        rates=tuple(statistics.median(unique[k]) for k in keys),
        spread=max(r.cv for r, _ in points),
    )


def _binned(points: list[tuple[SweepResult, float]]) -> Curve:
    bins: dict[int, list[tuple[float, float, float]]] = {}
    for r, net in points:
        bins.setdefault(math.floor(math.log2(r.size)), []).append((r.size, r.size / net, r.cv))
    order = sorted(bins)
    return Curve(
        sizes=tuple(statistics.median(p[0] for p in bins[b]) for b in order),
        rates=tuple(statistics.median(p[1] for p in bins[b]) for b in order),
        spread=max(p[2] for b in order for p in bins[b]),
    )
