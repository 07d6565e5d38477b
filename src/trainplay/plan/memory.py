"""Memory a pipeline stage needs on its device: weights, gradients, optimizer state, activations.

Accounting (per device, for the blocks of its stage):

- **Parameters and gradients**: the parameter bytes in the training dtype, once each.
- **Optimizer state** (``STATE_FACTOR``, in units of the parameter bytes): fp32 training keeps
  SGD's momentum buffer (1x) or Adam's two moments (2x). With bf16/fp16 parameters the optimizer
  also keeps an fp32 master copy and fp32 state, as mixed-precision training does: 4 bytes per
  parameter for the master copy plus 4 (SGD momentum) or 8 (Adam) — 4x or 6x the 2-byte parameter
  (Rajbhandari et al., "ZeRO", SC 2020, section 3.1: mixed-precision Adam holds 12 bytes/parameter
  of optimizer state).
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
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "STATE_FACTOR",
    "WORKSPACE_FRACTION",
    "StageMemory",
    "in_flight",
    "stage_memory",
    "state_bytes",
    "usable_bytes",
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
"""Optimizer state in units of the parameter bytes, by (optimizer, training dtype)."""


@dataclass(frozen=True)
class StageMemory:
    """Bytes one device needs for its stage, by kind."""

    params_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.params_bytes + self.grads_bytes + self.optimizer_bytes + self.activations_bytes


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
) -> StageMemory:
    """Memory of one stage: ``saved_bytes`` and ``input_bytes`` are one micro-batch's saved-for-
    backward bytes and received input; ``held`` micro-batches are in flight."""
    if recompute:
        activations = held * input_bytes + saved_bytes
    else:
        activations = held * (saved_bytes + input_bytes)
    return StageMemory(
        params_bytes=param_bytes,
        grads_bytes=param_bytes,
        optimizer_bytes=STATE_FACTOR[(optimizer, dtype)] * param_bytes,
        activations_bytes=activations,
    )


def state_bytes(param_bytes: float, optimizer: str, dtype: str) -> float:
    """Parameters, gradients and optimizer state of ``param_bytes`` of parameters: what a device
    holds for them before any activation."""
    return (2 + STATE_FACTOR[(optimizer, dtype)]) * param_bytes


def usable_bytes(capacity_bytes: float) -> float:
    """What a stage may use of a device after the workspace margin."""
    return (1 - WORKSPACE_FRACTION) * capacity_bytes
