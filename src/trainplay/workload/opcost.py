"""FLOPs and bytes of one aten operator call, the unit everything else in ``workload`` sums.

The rules, written down once (they are what ``trainplay profile`` means by FLOPs and bytes):

- **GEMM** (convolution, mm/addmm/bmm/baddbmm, fused attention, and their backward ops): FLOPs from
  the formulas PyTorch's ``FlopCounterMode`` uses (``torch.utils.flop_counter.flop_registry``);
  a multiply-add is 2 FLOPs, the bias add of ``addmm`` is not counted (the published convention).
  The CPU flash-attention kernels, which the registry lacks, use the registry's SDPA formulas;
  a convolution's backward costs its forward's multiply-adds once per gradient it computes.
- **Pointwise** (ops PyTorch tags ``pointwise``: add, mul, relu, gelu, where, ...): 1 FLOP per output
  element, whatever the arithmetic (a transcendental counts 1, as in most roofline work).
- **Reduction** (sum, mean, max, ...): 1 FLOP per input element; var/std 3, norms 2.
- **Normalisation**: per element of the input, batch/layer/group/RMS norm forward 7 FLOPs in
  training (mean 1, centre 1, square 1, variance sum 1, scale 1, affine 2) and 4 with fixed
  statistics; their backward 10 (gamma and beta gradients 3, input gradient 7).
- **Softmax**: 5 per element forward (max, subtract, exp, sum, divide), 4 backward (log-softmax 3).
- **Pooling**: window pools ``output elements x window size``; adaptive pools 1 per input element;
  max-pool backward 1 per output element, average-pool backward ``output elements x window``.
- **Dropout**: 2 per element forward (mask draw and scale), 1 backward.
- **Data movement** (copy, cat, index, embedding lookup, padding, ...): 0 FLOPs, bytes only;
  scatter-adds (embedding backward, ``index_add``) 1 FLOP per element added.
- **Fills** (zeros, ones, random fills): 0 FLOPs, the written bytes.
- **Views and allocations** (view, transpose, expand, detach, empty, ...): no FLOPs and no bytes;
  they move no data.
- Anything else: 1 FLOP per output element, and the operator is reported as ``default`` so the
  profile says which operators were counted by this fallback (nothing is silently zero).

Bytes of an operator = bytes of its tensor inputs read + bytes of its tensor outputs written, each
tensor counted once per call at its distinct elements (a broadcast input of stride 0 is read once;
an in-place operator reads and writes its target). This assumes every operand streams through
device memory exactly once: no cache reuse between operators, no spills inside one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import flop_counter
from torch.utils._pytree import tree_leaves

__all__ = ["OpCost", "op_cost", "tensor_bytes"]

aten = torch.ops.aten


def _conv_backward_flops(
    grad_out,
    x,
    w,
    _bias,
    _stride,
    _padding,
    _dilation,
    transposed,
    _output_padding,
    _groups,
    output_mask,
    **_kw,
) -> int:
    """Each gradient of a convolution (input, weight) costs the multiply-adds of its forward.

    Replaces ``FlopCounterMode``'s formula, which in torch 2.14 counts the weight gradient of a
    grouped convolution ``groups`` times over (see pytorch/pytorch#183405).
    """
    forward = flop_counter.conv_flop_count(
        list(x.shape), list(w.shape), list(grad_out.shape), transposed=transposed
    )
    return forward * (int(output_mask[0]) + int(output_mask[1]))


_GEMM_OWN = {  # take precedence over the registry
    aten.convolution_backward: _conv_backward_flops,
    aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *a, **kw: (
        flop_counter.sdpa_flop_count(q.shape, k.shape, v.shape)
    ),
    aten._scaled_dot_product_flash_attention_for_cpu_backward: lambda g, q, k, v, *a, **kw: (
        flop_counter.sdpa_backward_flop_count(g.shape, q.shape, k.shape, v.shape)
    ),
}

_NO_TRAFFIC = frozenset(
    """
    empty empty_like empty_strided new_empty new_empty_strided empty_permuted resize_ set_
    _unsafe_view lift_fresh sym_size sym_stride sym_numel
    """.split()
)
_FILL = frozenset(
    """
    zeros zeros_like ones ones_like full full_like fill_ zero_ fill scalar_tensor arange
    new_zeros new_ones new_full rand randn rand_like randn_like randint randint_like
    randperm normal_ uniform_ bernoulli_ random_ eye linspace lift_fresh_copy bernoulli
    """.split()
)
_WRITE_ONLY_SELF = frozenset(
    """
    fill_ zero_ normal_ uniform_ bernoulli_ random_ copy_ resize_
    """.split()
)
_COPY = frozenset(
    """
    copy_ clone _to_copy cat stack index_select gather scatter index index_put index_put_
    _index_put_impl_ embedding constant_pad_nd slice_backward select_backward slice_scatter
    select_scatter diagonal_backward as_strided_scatter repeat tril triu flip roll
    _unsafe_index narrow_copy expand_copy permute_copy view_copy t_copy _local_scalar_dense
    contiguous pixel_shuffle pixel_unshuffle channel_shuffle native_channel_shuffle im2col
    col2im reflection_pad2d replication_pad2d _unsafe_index_put masked_scatter
    split_with_sizes_copy unbind_copy alias_copy detach_copy unfold_copy
    """.split()
)
_SCATTER_ADD = frozenset(
    """
    embedding_dense_backward index_add index_add_ scatter_add scatter_add_
    index_put_with_accumulate
    """.split()
)
_REDUCTION = {
    "sum": 1,
    "mean": 1,
    "amax": 1,
    "amin": 1,
    "max": 1,
    "min": 1,
    "prod": 1,
    "argmax": 1,
    "argmin": 1,
    "any": 1,
    "all": 1,
    "logsumexp": 1,
    "cumsum": 1,
    "cumprod": 1,
    "aminmax": 1,
    "var": 3,
    "std": 3,
    "var_mean": 3,
    "std_mean": 3,
    "norm": 2,
    "linalg_vector_norm": 2,
}
_NORM = {
    "native_batch_norm": 7,
    "_native_batch_norm_legit": 7,
    "_native_batch_norm_legit_functional": 7,
    "_batch_norm_with_update": 7,
    "_batch_norm_with_update_functional": 7,
    "native_layer_norm": 7,
    "native_group_norm": 7,
    "_fused_rms_norm": 7,
    "_native_batch_norm_legit_no_training": 4,
    "_batch_norm_no_update": 4,
    "native_batch_norm_backward": 10,
    "batch_norm_backward": 10,
    "native_layer_norm_backward": 10,
    "native_group_norm_backward": 10,
    "_fused_rms_norm_backward": 10,
}
_SOFTMAX = {
    "_softmax": 5,
    "_log_softmax": 5,
    "_safe_softmax": 5,
    "_softmax_backward_data": 4,
    "_log_softmax_backward_data": 3,
}
_DROPOUT = {"native_dropout": 2, "native_dropout_backward": 1}
_WINDOW_POOL = frozenset(
    """
    max_pool2d_with_indices max_pool3d_with_indices avg_pool2d avg_pool3d max_pool1d
    max_pool2d avg_pool1d
    """.split()
)
_WINDOW_POOL_BWD = {
    "max_pool2d_with_indices_backward": False,
    "max_pool3d_with_indices_backward": False,
    "avg_pool2d_backward": True,
    "avg_pool3d_backward": True,
}
_ADAPTIVE_POOL = frozenset(
    """
    _adaptive_avg_pool2d _adaptive_avg_pool3d adaptive_max_pool2d adaptive_max_pool3d
    _adaptive_avg_pool2d_backward _adaptive_avg_pool3d_backward adaptive_max_pool2d_backward
    adaptive_max_pool3d_backward
    """.split()
)


@dataclass(frozen=True, slots=True)
class OpCost:
    """FLOPs and memory traffic of one operator call."""

    category: str
    """gemm | pointwise | reduction | norm | softmax | pool | dropout | copy | fill | view | default"""
    flops: int
    gemm_flops: int
    bytes_read: int
    bytes_written: int

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes of the distinct elements of ``t``: a dimension of stride 0 (broadcast) counts once."""
    if t.layout != torch.strided:
        return t.numel() * t.element_size()
    elements = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if size == 0:
            return 0
        if stride != 0:
            elements *= size
    return elements * t.element_size()


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [x for x in tree_leaves(tree) if isinstance(x, torch.Tensor)]


def _unique_bytes(tensors: list[torch.Tensor]) -> int:
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            total += tensor_bytes(t)
    return total


def _numel(tree: Any) -> int:
    return sum(t.numel() for t in _tensors(tree))


def _window(kernel: Any) -> int:
    return math.prod(kernel) if isinstance(kernel, list | tuple) else int(kernel)


def _flops(
    name: str, func: Any, args: tuple, kwargs: dict[str, Any], out: Any
) -> tuple[str, int, int]:
    """Category, FLOPs and GEMM FLOPs of ``func(*args) -> out`` under the module's rules."""
    packet = func.overloadpacket
    if packet in _GEMM_OWN:
        flops = int(_GEMM_OWN[packet](*args, **kwargs))
        return "gemm", flops, flops
    if packet in flop_counter.flop_registry:
        flops = int(flop_counter.flop_registry[packet](*args, **kwargs, out_val=out))
        return "gemm", flops, flops
    if name in _NORM:
        return "norm", _NORM[name] * args[0].numel(), 0
    if name in _SOFTMAX:
        return "softmax", _SOFTMAX[name] * _numel(out), 0
    if name in _DROPOUT:
        return "dropout", _DROPOUT[name] * args[0].numel(), 0
    if name in _WINDOW_POOL:
        return "pool", _numel(out) * _window(args[1]), 0
    if name in _WINDOW_POOL_BWD:
        per_output = _window(args[2]) if _WINDOW_POOL_BWD[name] else 1
        return "pool", args[0].numel() * per_output, 0
    if name in _ADAPTIVE_POOL:
        return "pool", max(args[0].numel(), _numel(out)), 0
    if name in _SCATTER_ADD:
        src = args[0] if name == "embedding_dense_backward" else _tensors(args)[-1]
        return "copy", src.numel(), 0
    if name in _FILL:
        return "fill", 0, 0
    if name in _COPY:
        return "copy", 0, 0
    if name in _REDUCTION or torch.Tag.reduction in func.tags:
        return "reduction", _REDUCTION.get(name, 1) * _numel(args[:1]), 0
    if _is_pointwise(name, func):
        return "pointwise", _numel(out), 0
    return "default", _numel(out), 0


_ACTIVATIONS = frozenset(
    """
    hardswish mish silu gelu elu leaky_relu softplus threshold prelu relu6 celu selu rrelu
    glu
    """.split()
)


def _is_pointwise(name: str, func: Any) -> bool:
    """Tagged ``pointwise``, or the in-place / backward form of an op that is (PyTorch tags only
    some overloads: ``hardtanh_backward`` and ``hardswish_`` carry no tag)."""
    if torch.Tag.pointwise in func.tags:
        return True
    base = name.removesuffix("_backward").removesuffix("_")
    if base in _ACTIVATIONS:
        return True
    packet = getattr(aten, base, None)
    if packet is None or base == name:
        return False
    return any(torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads())


def op_cost(func: Any, args: tuple, kwargs: dict[str, Any], out: Any) -> OpCost:
    """Cost of one call ``func(*args, **kwargs) -> out`` of an aten ``OpOverload``."""
    name = func.overloadpacket.__name__
    if func.is_view or torch.Tag.inplace_view in func.tags or name in _NO_TRAFFIC:
        return OpCost("view", 0, 0, 0, 0)
    category, flops, gemm_flops = _flops(name, func, args, kwargs, out)
    read_args = args[1:] if name in _WRITE_ONLY_SELF else args
    read = _unique_bytes(
        _tensors(read_args) + _tensors({k: v for k, v in kwargs.items() if k != "out"})
    )
    written = _unique_bytes(_tensors(out))
    return OpCost(category, flops, gemm_flops, read, written)
