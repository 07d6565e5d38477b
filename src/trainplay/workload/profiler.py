"""``profile_model``: one training iteration of a model, counted and cut into rows.

The counting is :func:`~trainplay.workload.tracer.record_iteration`; this module only groups its
operator events into rows (blocks, modules at a depth, or operators) and builds the
:class:`~trainplay.workload.stats.WorkloadProfile`. Every event lands in exactly one row, so the
rows of any granularity sum to the same whole-iteration totals.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from trainplay.errors import ModelError, UsageError
from trainplay.workload.blocks import Block, split_blocks
from trainplay.workload.stats import GRANULARITIES, NUMERIC_KEYS, LayerStats, WorkloadProfile
from trainplay.workload.tracer import OpEvent, Trace, record_iteration

__all__ = ["profile_model"]

_MODEL_ROW = "(model)"
"""Row name for operators in the model's own ``forward`` code, outside any child module."""


@dataclass
class _Row:
    name: str
    kind: str
    sums: dict[str, int] = field(default_factory=lambda: dict.fromkeys(NUMERIC_KEYS, 0))
    last_forward: int = -1


def profile_model(
    model: nn.Module,
    inputs: tuple[torch.Tensor, ...],
    *,
    name: str,
    batch_size: int,
    input_shape: tuple[int, ...],
    dtype: str,
    granularity: str = "blocks",
    depth: int = 1,
    extra_notes: tuple[str, ...] = (),
) -> WorkloadProfile:
    """Count forward and backward of ``model(*inputs)`` and return it as rows of ``granularity``.

    ``depth`` applies to ``modules`` granularity: ``layer1.0.conv1`` at depth 2 is ``layer1.0``.
    Raises :class:`ModelError` when the model rejects the input, naming the layer that did.
    """
    if granularity not in GRANULARITIES:
        raise UsageError(
            f"granularity must be one of {', '.join(GRANULARITIES)}, got {granularity!r}"
        )
    if depth < 1:
        raise UsageError(f"depth must be at least 1, got {depth}")
    model.train()
    try:
        trace = record_iteration(model, inputs)
    except (RuntimeError, ValueError, TypeError, IndexError, AssertionError) as exc:
        where = getattr(exc, "trainplay_module", None)
        layer = f" at layer {where[0] or _MODEL_ROW!r} ({where[1]})" if where else ""
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(
            f"{name} rejected input of shape {tuple(input_shape)}{layer}: {message}"
        ) from None
    blocks = split_blocks(model, trace.entries)
    row_of = _row_function(model, granularity, depth, blocks)
    rows: dict[tuple, _Row] = {}
    if granularity == "blocks":  # every block is a row, even one that runs no operator
        rows = {(i,): _Row(b.name, b.kind) for i, b in enumerate(blocks)}
    event_rows: list[_Row] = []
    for event in trace.events:
        key, row_name, kind = row_of(event)
        row = rows.get(key)
        if row is None:
            row = rows[key] = _Row(row_name, kind)
        _add(row, event)
        event_rows.append(row)
    ordered = list(rows.values())
    notes = list(extra_notes) + _add_parameters(model, trace, event_rows, ordered)
    _add_memory(trace, event_rows, ordered, blocks if granularity == "blocks" else None)
    default_ops = sorted({e.op for e in trace.events if e.cost.category == "default"})
    if default_ops:
        notes.append(
            "counted by the default rule (1 FLOP per output element): " + ", ".join(default_ops)
        )
    layers = tuple(LayerStats(name=r.name, kind=r.kind, **r.sums) for r in ordered)
    return WorkloadProfile(
        model=name,
        batch_size=batch_size,
        dtype=dtype,
        input_shape=tuple(input_shape),
        layers=layers,
        granularity=granularity,
        device=_device_of(model, inputs),
        notes=tuple(notes),
    )


RowFunction = Callable[[OpEvent], tuple[tuple, str, str]]


def _row_function(
    model: nn.Module, granularity: str, depth: int, blocks: list[Block]
) -> RowFunction:
    if granularity == "blocks":
        starts = [b.start for b in blocks]

        def block_row(event: OpEvent) -> tuple[tuple, str, str]:
            index = max(bisect.bisect_right(starts, event.time) - 1, 0)
            return (index,), blocks[index].name, blocks[index].kind

        return block_row

    classes = {path: type(m).__name__ for path, m in model.named_modules()}
    if granularity == "modules":

        def module_row(event: OpEvent) -> tuple[tuple, str, str]:
            path = ".".join(event.module.split(".")[:depth]) if event.module else ""
            return (path,), path or _MODEL_ROW, classes.get(path, type(model).__name__)

        return module_row

    def op_row(event: OpEvent) -> tuple[tuple, str, str]:
        return (event.module, event.op), f"{event.module or _MODEL_ROW}:{event.op}", event.op

    return op_row


def _add(row: _Row, event: OpEvent) -> None:
    sums, cost = row.sums, event.cost
    if event.phase == "fwd":
        sums["fwd_flops"] += cost.flops
        sums["fwd_gemm_flops"] += cost.gemm_flops
        sums["fwd_bytes"] += cost.bytes
        row.last_forward = max(row.last_forward, event.time)
    else:
        sums["bwd_flops"] += cost.flops
        sums["bwd_gemm_flops"] += cost.gemm_flops
        sums["bwd_bytes"] += cost.bytes


def _add_parameters(
    model: nn.Module, trace: Trace, event_rows: list[_Row], rows: list[_Row]
) -> list[str]:
    """Each parameter goes to the row of the first operator that touched it."""
    unused = 0
    for pname, p in model.named_parameters():
        first = trace.param_first_use.get(pname)
        row = event_rows[first] if first is not None else rows[0]
        unused += 0 if first is not None else p.numel()
        row.sums["params"] += p.numel()
        row.sums["param_bytes"] += p.numel() * p.element_size()
    if unused:
        return [
            f"{unused} parameters are never used by the forward; they are counted in the first row"
        ]
    return []


def _add_memory(
    trace: Trace, event_rows: list[_Row], rows: list[_Row], blocks: list[Block] | None
) -> None:
    """Saved-for-backward bytes by the saving operator's row; activations at each row's cut."""
    for index, nbytes in trace.saved:
        event_rows[index].sums["saved_bytes"] += nbytes
    n = trace.n_forward
    if blocks is not None:
        # Blocks are contiguous in forward order: the cut after block k is just before block k+1.
        ends = [b.start - 1 for b in blocks[1:]] + [n - 1]
        for row, end in zip(rows, ends, strict=False):
            row.last_forward = end
    for row in rows:
        if 0 <= row.last_forward < n:
            row.sums["activation_bytes"] = trace.live_after[row.last_forward]


def _device_of(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> str:
    for t in (*model.parameters(), *inputs):
        return t.device.type
    return "cpu"
