"""Why no plan fits: one line that names the constraint that binds, and only changes that help.

When the search finds no layout within every device's memory, :func:`no_fit_error` checks four
limits in order. Each is a lower bound on what every layout needs, so the first one that fails
is a reason no plan can exist, not just one the search did not find:

1. **state**: parameters, gradients and optimizer state of the whole model (``state_bytes``)
   exceed the usable memory of all devices together.
2. **a block**: blocks are never cut, so the largest block's state plus one sample's
   activations must fit on the largest device.
3. **the batch's activations**: a replica runs at most ``max_microbatches`` micro-batches (or the
   fixed ``--microbatches``), so at least ``B / M`` samples' saved tensors are live at once
   somewhere, even with recomputation; with the state they exceed all devices together.
4. **per-device memory after the leanest split**: one pipeline over every device (the
   arrangement with the least state per device; replicas each hold a full copy), recomputation,
   one micro-batch of ``ceil(B / M)`` samples in flight, devices largest first, block boundaries
   chosen so that the fullest device is as little over as it can be. The fullest device's need
   against its usable memory is the constraint.

Then each change a user could make on the command line — Adam to SGD, fp32 to bf16 or fp16, a
smaller global batch, letting the search choose the micro-batch count — is tried with the same
search, and named only if a plan then exists. Changes already in effect are never suggested.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from trainplay.errors import UsageError
from trainplay.plan.costs import BlockCosts, CostModel, Device, devices_of
from trainplay.plan.memory import WORKSPACE_FRACTION, stage_memory, state_bytes, usable_bytes
from trainplay.plan.search import SearchOptions, search
from trainplay.report.units import format_bytes

__all__ = ["binding_limit", "helpful_changes", "no_fit_error", "ruled_out"]

CostsFor = Callable[[str], BlockCosts]
"""The model's block costs at another training dtype (profiling again)."""


def _need(cm: CostModel, first: int, end: int, m: float) -> tuple[float, float]:
    """(state, activations) of blocks ``[first, end)`` on one device: recomputation, one
    micro-batch of ``m`` samples in flight."""
    mem = stage_memory(
        param_bytes=cm.range_sum("param_bytes", 1, first, end),
        saved_bytes=cm.range_sum("saved_bytes", m, first, end),
        input_bytes=cm.activation_bytes(first, m)
        if first
        else cm.blocks.input_bytes_per_sample * m,
        held=1,
        recompute=True,
        optimizer=cm.optimizer,
        dtype=cm.blocks.dtype,
    )
    return mem.total_bytes - mem.activations_bytes, mem.activations_bytes


def _leanest_split(
    cm: CostModel, devices: list[Device], m: float
) -> tuple[float, Device, int, int, float, float]:
    """One pipeline over ``devices`` (largest first) minimising the fullest device's share of its
    usable memory: (that share, the device, its blocks' first and end, its state, activations)."""
    order = sorted(devices, key=lambda d: -d.mem_bytes)
    n = cm.blocks.n

    def place(ratio: float) -> list[tuple[Device, int, int]] | None:
        stages, first = [], 0
        for device in order:
            if first == n:
                break
            end = first
            while end < n and sum(_need(cm, first, end + 1, m)) <= ratio * usable_bytes(
                device.mem_bytes
            ):
                end += 1
            if end > first:
                stages.append((device, first, end))
                first = end
        return stages if first == n else None

    low, high = 0.0, 1.0
    while place(high) is None:
        high *= 2
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (low, mid) if place(mid) is not None else (mid, high)
    stages = place(high)
    assert stages is not None

    def share(stage: tuple[Device, int, int]) -> float:
        device, first, end = stage
        return sum(_need(cm, first, end, m)) / usable_bytes(device.mem_bytes)

    device, first, end = max(stages, key=share)
    state, acts = _need(cm, first, end, m)
    return share((device, first, end)), device, first, end, state, acts


def binding_limit(
    cm: CostModel, devices: list[Device], global_batch: int, options: SearchOptions
) -> tuple[str, str]:
    """The first limit of the module docstring that fails: (kind, what it says); kind is one of
    ``state``, ``block``, ``batch``, ``split``."""
    found = _bound_fails(cm, devices, global_batch, options)
    if found is not None:
        return found
    n_dev = len(devices)
    total = sum(usable_bytes(d.mem_bytes) for d in devices)
    blocks = cm.blocks
    state = state_bytes(sum(blocks.param_bytes), cm.optimizer, blocks.dtype)
    most = options.microbatches or options.max_microbatches
    micro = math.ceil(global_batch / most)
    share, device, first, end, st, acts = _leanest_split(cm, devices, micro)
    span = (
        blocks.names[first]
        if end - first == 1
        else f"{blocks.names[first]}..{blocks.names[end - 1]}"
    )
    verdict = "" if share > 1 else " (so lean a layout would fit, but none the search tried does)"
    return "split", (
        f"per-device memory after the leanest split: one pipeline over all {n_dev} devices, "
        f"recomputing, micro-batches of {_samples(micro)}, still asks {device.id} for "
        f"{format_bytes(st + acts)} ({format_bytes(st)} of state for blocks {span} and "
        f"{format_bytes(acts)} of activations), {share:.0%} of its "
        f"{format_bytes(usable_bytes(device.mem_bytes))} usable{verdict}; the whole model's state "
        f"is {format_bytes(state)} of the {format_bytes(total)} the devices hold"
    )


def ruled_out(
    cm: CostModel, devices: list[Device], global_batch: int, options: SearchOptions
) -> bool:
    """Whether one of limits 1-3 of the module docstring already fails, so that no search can
    find a plan (a cheap check before a search that could only confirm it)."""
    return _bound_fails(cm, devices, global_batch, options) is not None


def _bound_fails(
    cm: CostModel, devices: list[Device], global_batch: int, options: SearchOptions
) -> tuple[str, str] | None:
    """The first of limits 1-3 that fails, worded as :func:`binding_limit` gives it; None when
    all three hold."""
    n_dev = len(devices)
    usable = [usable_bytes(d.mem_bytes) for d in devices]
    total, largest = sum(usable), max(usable)
    blocks = cm.blocks
    state = state_bytes(sum(blocks.param_bytes), cm.optimizer, blocks.dtype)
    kept = f"{WORKSPACE_FRACTION:.0%} of each kept as workspace"
    if state > total:
        return "state", (
            f"its parameters, gradients and {cm.optimizer} state alone need {format_bytes(state)}, "
            f"more than the {format_bytes(total)} all {n_dev} devices hold together ({kept})"
        )
    per_block = [sum(_need(cm, i, i + 1, 1)) for i in range(blocks.n)]
    big = max(range(blocks.n), key=per_block.__getitem__)
    if per_block[big] > largest:
        return "block", (
            f"block {blocks.names[big]} alone needs {format_bytes(per_block[big])} (its state and "
            f"one sample's activations; a block is never split), more than the largest device's "
            f"{format_bytes(largest)} usable"
        )
    most = options.microbatches or options.max_microbatches
    live = cm.range_sum("saved_bytes", global_batch / most, 0, blocks.n)
    if state + live > total:
        return "batch", (
            f"the activations of the batch: {global_batch:,} samples in at most {most} "
            f"micro-batches keep at least {format_bytes(live)} of activations live (recomputed, "
            f"{_samples(global_batch / most)} at a time), which with {format_bytes(state)} of "
            f"parameters, gradients and {cm.optimizer} state exceeds the {format_bytes(total)} "
            f"all {n_dev} devices hold together"
        )
    return None


def _samples(m: float) -> str:
    whole = math.ceil(m)
    return "1 sample" if whole == 1 else f"{whole:,} samples"


def helpful_changes(
    cm: CostModel,
    devices: list[Device],
    global_batch: int,
    options: SearchOptions,
    costs_for: CostsFor | None = None,
    *,
    batch_helps: bool = True,
) -> list[str]:
    """Command-line changes after which the search finds a plan (each tried, none in effect);
    ``batch_helps=False`` skips smaller global batches (the limit does not depend on it)."""
    ids = [d.id for d in devices]

    def fits(model: CostModel, batch: int = global_batch, opts: SearchOptions = options) -> bool:
        present = [d for d in devices_of(model.cluster, model.blocks.dtype) if d.id in ids]
        if ruled_out(model, present, batch, opts):
            return False
        return search(model, present, batch, replace(opts, any_fit=True)) is not None

    found = []
    if cm.optimizer == "adam" and fits(replace(cm, optimizer="sgd")):
        found.append("--optimizer sgd")
    if cm.blocks.dtype == "fp32" and costs_for is not None:
        for dtype in ("bf16", "fp16"):
            try:
                model = replace(cm, blocks=costs_for(dtype))
                if fits(model):
                    found.append(f"--dtype {dtype}")
                    break
            except UsageError:  # a device without that dtype
                continue
    if options.microbatches is not None and fits(cm, opts=replace(options, microbatches=None)):
        found.append(
            f"no --microbatches (the search then picks the count; {options.microbatches} is fixed now)"
        )
    smaller = _smaller_batch(cm, devices, global_batch, options) if batch_helps else 0
    for batch in (smaller, smaller // 2, smaller // 4):
        if 1 <= batch < global_batch and fits(cm, batch):
            found.append(f"--global-batch {batch}")
            break
    return found


def _smaller_batch(
    cm: CostModel, devices: list[Device], global_batch: int, options: SearchOptions
) -> int:
    """The largest power of two whose activations leave room beside the state (the bound of
    limit 3), at most half the batch."""
    total = sum(usable_bytes(d.mem_bytes) for d in devices)
    room = total - state_bytes(sum(cm.blocks.param_bytes), cm.optimizer, cm.blocks.dtype)
    most = options.microbatches or options.max_microbatches
    per_sample = cm.range_sum("saved_bytes", 1, 0, cm.blocks.n) - cm.range_sum(
        "saved_bytes", 0, 0, cm.blocks.n
    )
    if room <= 0 or per_sample <= 0:
        return 0
    bound = min(global_batch // 2, int(room * most / per_sample))
    return 2 ** int(math.log2(bound)) if bound >= 1 else 0


def no_fit_error(
    cm: CostModel,
    devices: list[Device],
    global_batch: int,
    options: SearchOptions,
    *,
    costs_for: CostsFor | None = None,
    later: int = 0,
    where: str | None = None,
) -> UsageError:
    """The one-line error of a plan that does not fit ``devices`` (those there at the start;
    ``later`` more arrive afterwards; ``where`` says which devices instead, e.g. the most there at
    any one time)."""
    kind, why = binding_limit(cm, devices, global_batch, options)
    most = options.microbatches or options.max_microbatches
    batch_helps = kind == "batch" or (kind == "split" and global_batch > most)
    changes = helpful_changes(
        cm, devices, global_batch, options, costs_for, batch_helps=batch_helps
    )
    if where is None:
        where = f"the {len(devices)} devices there at the start" if later else cm.cluster.name
    more = "more devices or larger ones"
    if kind == "state":
        state = state_bytes(sum(cm.blocks.param_bytes), cm.optimizer, cm.blocks.dtype)
        short = state - sum(usable_bytes(d.mem_bytes) for d in devices)
        more += f" (at least {format_bytes(short)} more usable memory)"
    elif kind == "block":
        more = "a device large enough for that block"
    fixes = [*changes, more]
    return UsageError(
        f"{cm.blocks.model} does not fit on {where} at --global-batch {global_batch}: {why}; "
        f"{'what helps' if changes else 'what would help'}: {', or '.join(fixes)}"
    )
