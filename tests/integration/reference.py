"""One process training a whole model the way the runtime would: the reference that pipelines,
replicas and elastic runs must match."""

from __future__ import annotations

from pathlib import Path

import torch

from trainplay.plan.plan import Plan, PlanStage
from trainplay.runtime import checkpoint
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


def fixed_plan(
    names: tuple[str, ...],
    bounds: list[tuple[int, int]],
    shares: list[int],
    microbatches: int,
    schedule: str,
    recompute_first: bool = False,
    devices: list[str] | None = None,
) -> Plan:
    """A plan with these stage ``bounds`` and replica ``shares`` on devices ``d0, d1, ...`` (rank
    ``r·S + s`` runs stage ``s`` of replica ``r``), or on ``devices`` (by replica, then stage);
    ``recompute_first``: stage 0 recomputes."""
    replicas, stages = len(shares), len(bounds)
    ids = devices or [f"d{k}" for k in range(replicas * stages)]
    return Plan(
        stages=tuple(
            PlanStage(
                blocks=b,
                devices=tuple(ids[r * stages + s] for r in range(replicas)),
                batch_shares=tuple(shares),
                recompute=recompute_first and s == 0,
            )
            for s, b in enumerate(bounds)
        ),
        microbatches=microbatches,
        schedule=schedule,
        predicted_iteration_s=0.0,
        block_names=names,
    )


def final_state(
    directory: Path, like: dict[str, torch.Tensor], steps: int
) -> dict[str, torch.Tensor]:
    """The tensors ``like`` names, from the checkpoint of step ``steps`` in ``directory``."""
    found = checkpoint.latest(directory)
    assert found is not None
    path, info = found
    assert info.step == steps
    state = {k: torch.empty_like(v) for k, v in like.items()}
    checkpoint.load(path, state)
    return state
