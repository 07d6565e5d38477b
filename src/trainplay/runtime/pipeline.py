"""Running one plan on a fixed set of ranks: placement, process groups, stages, one training step.

- **Placement.** Rank ``r·S + s`` runs stage ``s`` of replica ``r`` (``S`` stages per replica).
- **Groups.** One pipeline group per replica (its ``S`` ranks, for the point-to-point sends of
  ``torch.distributed.pipelining``) and one data-parallel group per stage (that stage's ``R``
  ranks, for the gradient all-reduce). ``new_group`` is collective, so every rank creates every
  group in the same order.
- **Stages.** ``torch.distributed.pipelining.pipeline`` traces the model (``torch.export``) and
  splits it where each stage's first block begins; a stage that recomputes runs its module under
  ``torch.utils.checkpoint``. The schedule is ``ScheduleGPipe`` or ``Schedule1F1B``.
- **Loss and gradients.** Each micro-batch's loss is summed over its samples and divided by the
  global batch, so a replica's gradients are its share of the global mean and a plain sum over the
  replicas (``all_reduce``, SUM) is the gradient of the global batch's mean loss, however uneven
  the shares. The step's loss is the same sum over the last stage's replicas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    SplitPoint,
    pipeline,
)
from torch.utils.checkpoint import checkpoint

from trainplay.plan.plan import Plan

__all__ = ["Placement", "PlanRunner", "placement"]

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}


@dataclass(frozen=True)
class Placement:
    replica: int
    stage: int
    pipeline_ranks: tuple[int, ...]
    """The ranks of this replica's stages, in stage order."""
    stage_ranks: tuple[int, ...]
    """The ranks running this stage, one per replica."""


def placement(plan: Plan, rank: int) -> Placement:
    stages, replicas = len(plan.stages), plan.replicas
    if not 0 <= rank < stages * replicas:
        raise ValueError(f"rank {rank} is outside the plan's {stages * replicas} ranks")
    replica, stage = divmod(rank, stages)
    return Placement(
        replica,
        stage,
        tuple(replica * stages + s for s in range(stages)),
        tuple(r * stages + stage for r in range(replicas)),
    )


class _Recompute(nn.Module):
    """Runs ``inner`` without keeping its activations; rebuilds them in backward."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        return checkpoint(self.inner, *args, use_reentrant=False)


class PlanRunner:
    """One rank's part of ``plan``: its stage module, schedule, groups and optimizer."""

    def __init__(
        self,
        model: nn.Module,
        plan: Plan,
        *,
        example_input: torch.Tensor,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        optimizer: Callable[[list[nn.Parameter]], torch.optim.Optimizer],
        device: torch.device | None = None,
    ):
        self.plan = plan
        self.rank = dist.get_rank()
        self.place = placement(plan, self.rank)
        self.device = device or torch.device("cpu")
        S, R = len(plan.stages), plan.replicas
        pipes = [dist.new_group(list(placement(plan, r * S).pipeline_ranks)) for r in range(R)]
        stages = [dist.new_group(list(placement(plan, s).stage_ranks)) for s in range(S)]
        self.pipeline_group = pipes[self.place.replica]
        self.stage_group = stages[self.place.stage]
        micro = plan.stages[0].batch_shares[self.place.replica] // plan.microbatches
        example = example_input[:micro]
        names = plan.block_names
        spec = {names[st.blocks[0]]: SplitPoint.BEGINNING for st in plan.stages[1:]}
        pipe = pipeline(model, mb_args=(example,), split_spec=spec)
        module = pipe.get_stage_module(self.place.stage).to(self.device)
        self.module = module
        run = _Recompute(module) if plan.stages[self.place.stage].recompute else module
        self.stage = PipelineStage(run, self.place.stage, S, self.device, group=self.pipeline_group)
        self.global_batch = plan.global_batch

        def scaled(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return loss_fn(output, target) / self.global_batch

        # scale_grads=False: the loss is already divided by the global batch; the schedule's own
        # scaling (by the micro-batch count) would count it twice
        self.schedule = SCHEDULES[plan.schedule](
            self.stage, plan.microbatches, loss_fn=scaled, scale_grads=False
        )
        self.optimizer = optimizer(list(module.parameters()))

    @property
    def first(self) -> bool:
        return self.place.stage == 0

    @property
    def last(self) -> bool:
        return self.place.stage == len(self.plan.stages) - 1

    def step(self, inputs: torch.Tensor | None, targets: torch.Tensor | None) -> float | None:
        """One optimizer step on this replica's share: ``inputs`` on the first stage, ``targets``
        on the last. Returns the global batch's mean loss on last-stage ranks, else ``None``.
        ``loss_fn`` must sum over the samples it is given."""
        losses: list[torch.Tensor] = []
        kwargs = {"target": targets, "losses": losses} if self.last else {}
        if self.first:
            self.schedule.step(inputs, **kwargs)
        else:
            self.schedule.step(**kwargs)
        if self.plan.replicas > 1:
            for p in self.module.parameters():
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad, op=dist.ReduceOp.SUM, group=self.stage_group)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if not self.last:
            return None
        total = torch.stack([x.detach() for x in losses]).sum().reshape(1)
        if self.plan.replicas > 1:
            dist.all_reduce(total, op=dist.ReduceOp.SUM, group=self.stage_group)
        return float(total)

    def named_parameters(self) -> dict[str, torch.Tensor]:
        """This stage's parameters by their names in the whole model."""
        out = {}
        for name, p in self.module.named_parameters():
            out[name] = p.detach().clone()
        return out
