"""Memory a pipeline stage needs on its device: weights, gradients, optimizer state, activations.

Accounting (per device, for the blocks of its stage):

- **Parameters, gradients, optimizer state**, in units of the parameter bytes at the training
  dtype (what the profile counts). fp32: parameters 1x, gradients 1x, SGD's momentum (1x) or
  Adam's two moments (2x). bf16/fp16 train as the runtime does, with ``torch.autocast`` over fp32
  master weights: the parameters *are* the fp32 master copy, the gradients are fp32, the optimizer
  state is fp32, and autocast keeps one half-precision copy of each weight for the step (its cast
  cache, saved for the backward; one copy however many micro-batches, since one autocast region
  spans the whole step). Per 2-byte parameter: the copy 1x (``params_bytes``), fp32 gradients 2x
  (``grads_bytes``), fp32 master 2x plus SGD momentum 2x or Adam's moments 4x
  (``optimizer_bytes``: 4x or 6x, as ZeRO counts the master copy with the optimizer: Rajbhandari
  et al., "ZeRO", SC 2020, section 3.1). Mixed-precision Adam: 18 bytes per parameter.
- **What training adds to the profile** (:func:`with_training_memory`, applied where the planner
  profiles a model): a parameter shared between blocks (GPT-2's tied embedding) is counted once
  by the profiler, but a stage holding a later user without the first keeps a copy, with its
  gradient and optimizer state (the profile's ``ties``, counted by ``CostModel.range_sum``); and
  the last stage holds, per micro-batch in flight, the model's
  output (the schedule keeps it for the backward) beside what the profile counts of the loss (its
  saved log-softmax at the training dtype: autocast computes it in fp32, twice the bf16 size).
- **Gradient scratch**: with several micro-batches autograd computes each micro-batch's gradient of
  a parameter before adding it to the accumulated one, one parameter at a time, so the stage holds
  one more gradient of its largest parameter (``largest_param_bytes``; a tied embedding is often
  the largest). Optimizer steps need no scratch: the runtime uses fused Adam and in-place SGD.
- **Not counted**: library workspaces and what the allocator keeps after a free. On the CPU,
  glibc's heap keeps freed blocks for reuse (its mmap threshold rises as large blocks are freed,
  so later tensors come from the heap) and MKL/oneDNN keep buffers. Measured on the development
  VM and CI (``tests/integration/test_train_memory.py``, stages of 230-350 MiB), resident peaks
  ran 1.10-1.35x these figures with glibc's defaults, differing run to run, and 1.04-1.07x with
  the mmap threshold fixed at 128 KiB, where the resident peak follows the live tensors. GPUs'
  caching allocator fragments less but keeps its cache.
- **Activations in flight**: a micro-batch's saved-for-backward bytes (plus the activation it
  received across the cut) from its forward until its backward. GPipe runs every forward before
  any backward, so all ``M`` micro-batches are in flight; 1F1B keeps at most ``S - s`` on stage
  ``s`` (Narayanan et al., "PipeDream-2BW"/"Megatron-LM", SC 2021: the first stage holds the most).
- **Activation recomputation** (Chen et al., "Training deep nets with sublinear memory cost",
  2016; GPipe) keeps only each in-flight micro-batch's stage input and rebuilds one micro-batch's
  saved tensors at a time during its backward, for one more forward pass of compute.
- **Workspace margin**: ``WORKSPACE_FRACTION`` of the capacity is kept free for the caching
  allocator's fragmentation, library workspaces (cuBLAS/cuDNN), communication buffers and the
  CUDA context. 10% is an assumption, not a measurement.

:func:`stage_bytes` is this accounting for one stage of a :class:`~trainplay.plan.plan.Plan`: what
the runtime journals as ``plan_bytes`` beside the peak it measured.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from trainplay.workload.stats import DTYPE_BYTES

if TYPE_CHECKING:
    from trainplay.plan.costs import BlockCosts, CostModel
    from trainplay.plan.plan import Plan

__all__ = [
    "GRAD_FACTOR",
    "STATE_FACTOR",
    "WORKSPACE_FRACTION",
    "StageMemory",
    "in_flight",
    "stage_bytes",
    "stage_memory",
    "state_bytes",
    "usable_bytes",
    "with_training_memory",
]

WORKSPACE_FRACTION = 0.10
"""Share of each device's memory kept free (stated assumption, see the module docstring)."""

STATE_FACTOR = {
    ("sgd", "fp32"): 1.0,
    ("adam", "fp32"): 2.0,
    ("sgd", "bf16"): 4.0,
    ("adam", "bf16"): 6.0,
    ("sgd", "fp16"): 4.0,
    ("adam", "fp16"): 6.0,
}
"""Optimizer state in units of the parameter bytes, by (optimizer, training dtype); with bf16/fp16
it includes the fp32 master copy of the parameters."""

GRAD_FACTOR = {"fp32": 1.0, "bf16": 2.0, "fp16": 2.0}
"""Gradients in units of the parameter bytes: fp32 gradients of the fp32 master weights."""

LOSS_BYTES_PER_ELEMENT = 4
"""The cross-entropy's saved log-softmax is fp32 (autocast runs it in fp32); the profile counts it
at the training dtype."""


@dataclass(frozen=True)
class StageMemory:
    """Bytes one device needs for its stage, by kind."""

    params_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    scratch_bytes: float = 0.0
    """One micro-batch's gradient of the stage's largest parameter (module docstring)."""

    @property
    def total_bytes(self) -> float:
        return (
            self.params_bytes
            + self.grads_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.scratch_bytes
        )


def in_flight(schedule: str, microbatches: int, stages: int, stage: int) -> int:
    """Micro-batches whose activations stage ``stage`` holds at the peak of the schedule."""
    if schedule == "gpipe":
        return microbatches
    return min(microbatches, stages - stage)


def stage_memory(
    *,
    param_bytes: float,
    saved_bytes: float,
    input_bytes: float,
    held: int,
    recompute: bool,
    optimizer: str,
    dtype: str,
    largest_param_bytes: float = 0.0,
) -> StageMemory:
    """Memory of one stage: ``saved_bytes`` and ``input_bytes`` are one micro-batch's saved-for-
    backward bytes and received input; ``held`` micro-batches are in flight;
    ``largest_param_bytes`` is the stage's largest parameter (training dtype)."""
    if recompute:
        activations = held * input_bytes + saved_bytes
    else:
        activations = held * (saved_bytes + input_bytes)
    return StageMemory(
        params_bytes=param_bytes,
        grads_bytes=GRAD_FACTOR[dtype] * param_bytes,
        optimizer_bytes=STATE_FACTOR[(optimizer, dtype)] * param_bytes,
        activations_bytes=activations,
        scratch_bytes=GRAD_FACTOR[dtype] * largest_param_bytes,
    )


def state_bytes(param_bytes: float, optimizer: str, dtype: str) -> float:
    """Parameters, gradients and optimizer state of ``param_bytes`` of parameters: what a device
    holds for them before any activation."""
    return (1 + GRAD_FACTOR[dtype] + STATE_FACTOR[(optimizer, dtype)]) * param_bytes


def usable_bytes(capacity_bytes: float) -> float:
    """What a stage may use of a device after the workspace margin."""
    return (1 - WORKSPACE_FRACTION) * capacity_bytes


def with_training_memory(blocks: BlockCosts, largest_param_bytes: tuple[int, ...]) -> BlockCosts:
    """``blocks`` with what training holds beyond the profile (module docstring): what the loss
    holds beyond the profile (which counts it: ``loss=True``) in the last block's per-sample saved
    bytes, and each block's largest parameter (from
    :func:`trainplay.workload.chain.parameter_layout`). The copies of tied parameters come with
    the profile (``BlockCosts.ties``)."""
    if len(largest_param_bytes) != blocks.n:
        raise ValueError(
            f"largest_param_bytes has {len(largest_param_bytes)} entries for {blocks.n} blocks"
        )
    output = blocks.per_sample["activation_bytes"][-1]  # the model's output, per sample
    width = DTYPE_BYTES[blocks.dtype]
    loss = output + output / width * (LOSS_BYTES_PER_ELEMENT - width)
    saved = list(blocks.per_sample["saved_bytes"])
    saved[-1] += loss
    return replace(
        blocks,
        per_sample={**blocks.per_sample, "saved_bytes": tuple(saved)},
        largest_param_bytes=tuple(largest_param_bytes),
    )


def stage_bytes(
    cm: CostModel, plan: Plan, stage: int, replica: int, schedule: str | None = None
) -> StageMemory:
    """Memory the device of ``replica``'s stage ``stage`` needs under ``plan``: the planner's fit
    check (``plan/layout.py``) for the plan's own micro-batch size, schedule (or ``schedule``, the
    one it runs with) and recomputation."""
    placed = plan.stages[stage]
    first, end = placed.blocks[0], placed.blocks[1] + 1
    m = placed.batch_shares[replica] // plan.microbatches
    received = cm.activation_bytes(first, m) if first > 0 else cm.blocks.input_bytes_per_sample * m
    return stage_memory(
        param_bytes=cm.range_sum("param_bytes", m, first, end),
        saved_bytes=cm.range_sum("saved_bytes", m, first, end),
        input_bytes=received,
        held=in_flight(schedule or plan.schedule, plan.microbatches, len(plan.stages), stage),
        recompute=placed.recompute,
        optimizer=cm.optimizer,
        dtype=cm.blocks.dtype,
        largest_param_bytes=max(cm.blocks.largest_param_bytes[first:end], default=0),
    )
