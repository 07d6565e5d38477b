"""Mixed precision for ``trainplay train --dtype bf16|fp16``: autocast over fp32 master weights.

- **Weights stay fp32.** Parameters, gradients and optimizer state are fp32; the whole training
  step (every micro-batch's forward and backward) runs under one ``torch.autocast`` region, so
  matrix multiplies read a half-precision copy of each weight, made once per step (autocast's cast
  cache), and the loss (cross-entropy) runs in fp32. ``plan/memory.py`` counts exactly this.
- **fp16 scales the loss** (Micikevicius et al., "Mixed Precision Training", ICLR 2018): the
  loss is multiplied by ``scale`` before the backward, gradients are unscaled before the step,
  and a step whose gradients hold an inf or NaN is skipped and halves the scale; 2000 clean steps
  in a row double it (``torch.amp.GradScaler``'s defaults: 2**16, 0.5, 2, 2000).
- **One decision for the whole job.** Each stage sees only its own gradients, so each rank's
  "found an inf" flag is all-reduced (MAX) over every rank that trains before anyone steps:
  every stage of every replica skips the same steps and keeps the same scale, as one process
  would. The scale and its growth counter are checkpointed (``amp.scale``, ``amp.growth``).
- bf16 has fp32's exponent range and needs no scaling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.distributed as dist
from torch import nn

from trainplay.runtime.job import DTYPES
from trainplay.workload.zoo import DTYPES_TORCH

__all__ = ["AMP_PREFIX", "Precision"]

AMP_PREFIX = "amp."
INITIAL_SCALE = 2.0**16
BACKOFF = 0.5
GROWTH = 2.0
GROWTH_INTERVAL = 2000


class Precision:
    """The precision of one rank's training step (see the module docstring)."""

    def __init__(self, dtype: str, device: torch.device):
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.dtype = dtype
        self.device = device
        self.scales = dtype == "fp16"
        self._scale = torch.tensor([INITIAL_SCALE if self.scales else 1.0], dtype=torch.float32)
        self._growth = torch.zeros(1, dtype=torch.int64)

    @property
    def scale(self) -> float:
        """What the loss is multiplied by before the backward (1 unless fp16)."""
        return float(self._scale)

    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        """The region one training step runs in."""
        if self.dtype == "fp32":
            yield
            return
        with torch.autocast(self.device.type, dtype=DTYPES_TORCH[self.dtype]):
            yield

    def step(
        self,
        optimizer: torch.optim.Optimizer,
        params: list[nn.Parameter],
        group: dist.ProcessGroup | None,
    ) -> bool:
        """Unscale the gradients, agree with every rank of ``group`` whether any is not finite,
        and step ``optimizer`` unless one is; update the scale. Returns whether it stepped."""
        if not self.scales:
            optimizer.step()
            return True
        grads = [p.grad for p in params if p.grad is not None]
        found = torch.zeros(1, dtype=torch.float32, device=self.device)
        inverse = torch.tensor([1.0 / self.scale], dtype=torch.float32, device=self.device)
        if grads:
            torch._amp_foreach_non_finite_check_and_unscale_(grads, found, inverse)
        if group is not None and dist.is_initialized():
            dist.all_reduce(found, op=dist.ReduceOp.MAX, group=group)
        clean = float(found) == 0.0
        if clean:
            optimizer.step()
            self._growth += 1
            if int(self._growth) >= GROWTH_INTERVAL:
                self._scale *= GROWTH
                self._growth.zero_()
        else:
            self._scale *= BACKOFF
            self._growth.zero_()
        return clean

    def state(self) -> dict[str, torch.Tensor]:
        """The scaler's state for a checkpoint (empty unless fp16); loading fills it in place."""
        if not self.scales:
            return {}
        return {AMP_PREFIX + "scale": self._scale, AMP_PREFIX + "growth": self._growth}
