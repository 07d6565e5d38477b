"""One rank of a fixed plan on synthetic data: ``python -m trainplay.runtime.worker`` under torchrun.

What exists so far of the TNP runtime: a plan that does not change (no joins, leaves,
checkpoints or journal yet) trained on ``synthetic`` data, deterministic from the seed, in the
job's sample order (:mod:`trainplay.runtime.order`). Each rank writes its stage's final parameters
and, on last-stage ranks, the step losses to ``--out``/``rank<r>.pt`` (tensors only).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from trainplay.plan.plan import Plan
from trainplay.runtime.order import SampleOrder
from trainplay.runtime.pipeline import PlanRunner
from trainplay.workload.zoo import resolve_model

__all__ = ["synthetic_data"]


def synthetic_data(
    size: int, shape: tuple[int, ...], classes: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``size`` samples of ``shape`` with labels in ``[0, classes)``, the same for every seed."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(size, *shape, generator=generator)
    labels = torch.randint(0, classes, (size,), generator=generator)
    return inputs, labels


def _loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(output, target, reduction="sum")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m trainplay.runtime.worker")
    parser.add_argument("--model", required=True)
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--input-shape", required=True)
    parser.add_argument("--classes", type=int, required=True)
    parser.add_argument("--dataset-size", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    plan = Plan.from_dict(json.loads(args.plan.read_text()))
    shape = tuple(int(x) for x in args.input_shape.split(","))
    torch.manual_seed(args.seed)
    model = resolve_model(args.model).build(shape, "cpu", "fp32")
    inputs, labels = synthetic_data(args.dataset_size, shape, args.classes, args.seed)
    order = SampleOrder(
        dataset_size=args.dataset_size, global_batch=plan.global_batch, seed=args.seed
    )
    runner = PlanRunner(
        model,
        plan,
        example_input=inputs,
        loss_fn=_loss,
        optimizer=lambda params: torch.optim.SGD(params, lr=args.lr),
    )
    shares = plan.stages[0].batch_shares
    losses = []
    for step in range(args.steps):
        picked = order.replica_indices(step, shares, runner.place.replica)
        loss = runner.step(
            inputs[picked] if runner.first else None, labels[picked] if runner.last else None
        )
        if loss is not None:
            losses.append(loss)
    args.out.mkdir(parents=True, exist_ok=True)
    rank = int(os.environ["RANK"])
    torch.save(
        {"params": runner.named_parameters(), "losses": torch.tensor(losses, dtype=torch.float64)},
        args.out / f"rank{rank}.pt",
    )
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
