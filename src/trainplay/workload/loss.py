"""The training loss a profile counts: what the last pipeline stage computes after the model.

Counted because it is real work of every iteration, and not small for language models: the
cross-entropy of a decoder reads and writes ``batch x seq x vocabulary`` logits twice.

- Output ``[batch, classes]`` (a classifier): cross-entropy against one class per sample.
- Output ``[batch, seq, vocab]`` (a decoder): next-token cross-entropy at every position.
- Several outputs (torchvision's Inception in training mode returns the auxiliary logits too):
  the loss of each classifier output, summed.
- Anything else: the sum of the outputs (a stand-in whose cost is one reduction).

Targets are zeros: only shapes matter to counting. The loss is summed over samples
(``reduction="sum"``), as the runtime sums it before dividing by the global batch.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_leaves

__all__ = ["training_loss"]


def _one(output: torch.Tensor) -> torch.Tensor:
    if output.dim() == 2 and output.is_floating_point():
        target = torch.zeros(output.shape[0], dtype=torch.long, device=output.device)
        return F.cross_entropy(output, target, reduction="sum")
    if output.dim() == 3 and output.is_floating_point():
        target = torch.zeros(output.shape[:2], dtype=torch.long, device=output.device)
        return F.cross_entropy(output.flatten(0, 1), target.flatten(), reduction="sum")
    return output.sum()


def training_loss(output: Any) -> torch.Tensor:
    """The loss of a model output, as the module docstring describes."""
    tensors = [t for t in tree_leaves(output) if isinstance(t, torch.Tensor) and t.requires_grad]
    losses = [_one(t) for t in tensors]
    total = losses[0]
    for extra in losses[1:]:
        total = total + extra
    return total
