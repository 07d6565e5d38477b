"""One process training a whole model the way the runtime would: the reference that pipelines,
replicas and elastic runs must match."""

from __future__ import annotations

import torch

from trainplay.runtime.materialise import materialise
from trainplay.runtime.order import SampleOrder
from trainplay.runtime.task import summed_loss
from trainplay.runtime.tokens import open_tokens
from trainplay.workload.zoo import resolve_model


def initial_model(spec: str, sample_shape: tuple[int, ...], seed: int) -> torch.nn.Module:
    """The whole model with the runtime's initial weights for a model that is a chain of its
    blocks (built on meta, initialised by name)."""
    model = resolve_model(spec).build(sample_shape, "meta", "fp32")
    materialise(model, model, seed=seed, device=torch.device("cpu"))
    return model


def train_language_model(
    spec: str,
    *,
    seq_len: int,
    vocab: int,
    batch: int,
    steps: int,
    seed: int,
    lr: float,
    momentum: float = 0.0,
) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Losses per step and the final ``model.<canonical name>`` tensors of SGD on synthetic
    tokens in the job's sample order."""
    model = initial_model(spec, (seq_len,), seed)
    data = open_tokens("synthetic", seq_len=seq_len, vocab_size=vocab, seed=seed)
    order = SampleOrder(dataset_size=data.size, global_batch=batch, seed=seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    losses = []
    for step in range(steps):
        inputs, targets = data.batch(order.indices(step))
        loss = summed_loss(model(inputs), targets) / (batch * seq_len)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, {f"model.{k}": v.detach().clone() for k, v in model.named_parameters()}
