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
from typing import Any

import torch
from torch import nn

from trainplay.errors import ModelError, UsageError
from trainplay.workload.blocks import Block, split_blocks
from trainplay.workload.chain import tied_parameters
from trainplay.workload.stats import (
    GRANULARITIES,
    NUMERIC_KEYS,
    LayerStats,
    OpGroup,
    WorkloadProfile,
)
from trainplay.workload.tracer import OpEvent, Trace, record_iteration

__all__ = ["blocks_of_events", "profile_model"]

_MODEL_ROW = "(model)"
"""Row name for operators in the model's own ``forward`` code, outside any child module."""


@dataclass
class _Row:
    name: str
    kind: str
    sums: dict[str, int] = field(default_factory=lambda: dict.fromkeys(NUMERIC_KEYS, 0))
    last_forward: int = -1
    ops: dict[tuple[str, str, str, int, int, int], int] = field(default_factory=dict)
    """(class, phase, op, FLOPs, bytes, positions) -> calls, in order of first call."""

    def stats(self) -> LayerStats:
        groups = tuple(
            OpGroup(cls=c, phase=p, op=o, flops=f, bytes=b, count=n, positions=w)
            for (c, p, o, f, b, w), n in self.ops.items()
        )
        return LayerStats(name=self.name, kind=self.kind, ops=groups, **self.sums)


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
    loss: Callable[[Any], torch.Tensor] | None = None,
) -> WorkloadProfile:
    """Count forward and backward of ``model(*inputs)`` and return it as rows of ``granularity``.

    ``depth`` applies to ``modules`` granularity: ``layer1.0.conv1`` at depth 2 is ``layer1.0``.
    ``loss(output) -> scalar``, when given, is counted too, in the last block (the stage that
    computes it in a pipeline), and the backward starts from it.
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
        trace = record_iteration(model, inputs, loss=loss)
    except (RuntimeError, ValueError, TypeError, IndexError, AssertionError) as exc:
        where = getattr(exc, "trainplay_module", None)
        layer = f" at layer {where[0] or _MODEL_ROW!r} ({where[1]})" if where else ""
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(
            f"{name} rejected input of shape {tuple(input_shape)}{layer}: {message}"
        ) from None
    blocks = split_blocks(model, trace.entries)
    cutter = _Cutter(model, granularity, depth, blocks, trace)
    rows: dict[tuple, _Row] = {}
    if granularity == "blocks":  # every block is a row, even one that runs no operator
        rows = {(i,): _Row(b.name, b.kind) for i, b in enumerate(blocks)}
    event_rows: list[_Row] = []
    for index, event in enumerate(trace.events):
        key, row_name, kind = cutter.row(event)
        row = rows.get(key)
        if row is None:
            row = rows[key] = _Row(row_name, kind)
        _add(row, event, index)
        event_rows.append(row)
    ordered = list(rows.values())
    notes = _add_parameters(model, trace, event_rows, ordered)
    for clock, module, nbytes in trace.saved:
        event_rows[cutter.saving_event(clock, module)].sums["saved_bytes"] += nbytes
    if granularity == "blocks":
        for row, end in zip(ordered, cutter.block_ends(), strict=True):
            row.last_forward = end
    for row in ordered:
        if 0 <= row.last_forward < trace.n_forward:
            row.sums["activation_bytes"] = trace.live_after[row.last_forward]
    if trace.fused_attention:
        notes.append("attention is counted as the fused (flash) kernel, as CPUs and GPUs run it")
    default_ops = sorted({e.op for e in trace.events if e.cost.category == "default"})
    if default_ops:
        notes.append(
            "counted by the default rule (1 FLOP per output element): " + ", ".join(default_ops)
        )
    if loss is not None:
        notes.append("the training loss is counted in the last block")
    layers = tuple(r.stats() for r in ordered)
    return WorkloadProfile(
        model=name,
        batch_size=batch_size,
        dtype=dtype,
        input_shape=tuple(input_shape),
        layers=layers,
        granularity=granularity,
        device=_device_of(model, inputs),
        notes=tuple(notes),
        ties=tied_parameters(model, blocks) if granularity == "blocks" else (),
    )


class _Cutter:
    """Which row an operator, or a tensor saved for backward, belongs to at a granularity."""

    def __init__(
        self, model: nn.Module, granularity: str, depth: int, blocks: list[Block], trace: Trace
    ):
        self.granularity, self.depth, self.blocks = granularity, depth, blocks
        self.starts = [b.start for b in blocks]
        self.classes = {path: type(m).__name__ for path, m in model.named_modules()}
        self.model_class = type(model).__name__
        forward = trace.events[: trace.n_forward]
        self.forward_times = [e.time for e in forward]
        self.by_module: dict[str, list[tuple[int, int]]] = {}
        for index, event in enumerate(forward):
            self.by_module.setdefault(event.module, []).append((event.time, index))

    def _block(self, clock: float) -> int:
        return max(bisect.bisect_right(self.starts, clock) - 1, 0)

    def row(self, event: OpEvent) -> tuple[tuple, str, str]:
        """(key, name, kind) of the row ``event`` belongs to."""
        if self.granularity == "blocks":
            index = self._block(event.time)
            return (index,), self.blocks[index].name, self.blocks[index].kind
        if self.granularity == "modules":
            path = ".".join(event.module.split(".")[: self.depth]) if event.module else ""
            return (path,), path or _MODEL_ROW, self.classes.get(path, self.model_class)
        return (event.module, event.op), f"{event.module or _MODEL_ROW}:{event.op}", event.op

    def saving_event(self, clock: float, module: str) -> int:
        """The forward event whose row a tensor saved at ``clock`` inside ``module`` goes to.

        The nearest forward operator of the same module, earlier preferred (an operator saving
        its outputs), else later (a module's first operator saving its inputs); for blocks, the
        clock alone decides, so the choice stays within the block the save happened in.
        """
        candidates = self.by_module.get(module) or [
            (t, i) for i, t in enumerate(self.forward_times)
        ]
        if self.granularity == "blocks":
            block = self._block(clock)
            candidates = [c for c in candidates if self._block(c[0]) == block] or [
                (t, i) for i, t in enumerate(self.forward_times) if self._block(t) == block
            ]
        position = bisect.bisect_right(candidates, (clock, len(self.forward_times)))
        return candidates[position - 1][1] if position > 0 else candidates[0][1]

    def block_ends(self) -> list[int]:
        """Index of the last forward operator of each block: the cut after it (blocks are
        contiguous in forward order, so that cut is just before the next block begins)."""
        ends = [bisect.bisect_left(self.forward_times, start) - 1 for start in self.starts[1:]]
        return [*ends, len(self.forward_times) - 1]


def blocks_of_events(model: nn.Module, trace: Trace) -> tuple[list[Block], list[int]]:
    """The model's blocks, and for each event of ``trace`` the index of the block it belongs to."""
    blocks = split_blocks(model, trace.entries)
    cutter = _Cutter(model, "blocks", 1, blocks, trace)
    return blocks, [cutter.row(event)[0][0] for event in trace.events]


def _add(row: _Row, event: OpEvent, index: int) -> None:
    sums, cost = row.sums, event.cost
    key = (event.cls, event.phase, event.op, cost.flops, cost.bytes, event.positions)
    row.ops[key] = row.ops.get(key, 0) + 1
    if event.phase == "fwd":
        sums["fwd_flops"] += cost.flops
        sums["fwd_gemm_flops"] += cost.gemm_flops
        sums["fwd_bytes"] += cost.bytes
        row.last_forward = max(row.last_forward, index)
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
        row.sums["param_tensors"] += 1
        row.sums["param_bytes"] += p.numel() * p.element_size()
    if unused:
        return [
            f"{unused} parameters are never used by the forward; they are counted in the first row"
        ]
    return []


def _device_of(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> str:
    for t in (*model.parameters(), *inputs):
        return t.device.type
    return "cpu"
