"""Running one plan on a fixed set of ranks: placement, process groups, stages, one training step.

- **Placement.** The rank whose device is ``plan.stages[s].devices[r]`` runs stage ``s`` of
  replica ``r``; ranks whose device the plan leaves idle run nothing. Without a map from device
  ids to ranks, rank ``r·S + s`` runs stage ``s`` of replica ``r`` (``S`` stages per replica).
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

from collections.abc import Callable, Mapping
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

__all__ = ["Placement", "PlanRunner", "RankGroups", "default_ranks", "make_groups", "placement"]

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}


@dataclass(frozen=True)
class Placement:
    replica: int
    stage: int
    pipeline_ranks: tuple[int, ...]
    """The ranks of this replica's stages, in stage order."""
    stage_ranks: tuple[int, ...]
    """The ranks running this stage, one per replica."""


def default_ranks(plan: Plan) -> dict[str, int]:
    """Device id -> rank when the devices are not known by rank: replica ``r``, stage ``s`` on
    rank ``r·S + s``."""
    stages = len(plan.stages)
    return {
        device: r * stages + s
        for s, stage in enumerate(plan.stages)
        for r, device in enumerate(stage.devices)
    }


def placement(plan: Plan, rank: int, ranks: Mapping[str, int] | None = None) -> Placement | None:
    """Where ``rank`` sits in ``plan`` (``ranks``: device id -> rank); ``None`` when idle."""
    ranks = default_ranks(plan) if ranks is None else ranks
    missing = [d for d in plan.devices if d not in ranks]
    if missing:
        raise ValueError(f"the plan's devices {missing} have no rank")
    grid = [[ranks[stage.devices[r]] for stage in plan.stages] for r in range(plan.replicas)]
    for r, row in enumerate(grid):
        if rank in row:
            s = row.index(rank)
            return Placement(r, s, tuple(row), tuple(g[s] for g in grid))
    return None


@dataclass(frozen=True)
class RankGroups:
    """The process groups one rank uses: its pipeline, its stage's replicas, and every rank
    that runs a stage (checkpoints). ``None`` where the rank takes no part."""

    pipeline: dist.ProcessGroup | None
    stage: dist.ProcessGroup | None
    active: dist.ProcessGroup | None


def make_groups(plan: Plan, ranks: Mapping[str, int]) -> RankGroups:
    """Create every group of ``plan`` (collective: every rank of the world calls it, in the same
    order, idle ranks included) and return those this rank belongs to."""
    rank = dist.get_rank()
    grid = [[ranks[stage.devices[r]] for stage in plan.stages] for r in range(plan.replicas)]
    mine: dict[str, dist.ProcessGroup | None] = {"pipeline": None, "stage": None}
    for row in grid:
        group = dist.new_group(row)
        if rank in row:
            mine["pipeline"] = group
    for column in zip(*grid, strict=True):
        group = dist.new_group(list(column))
        if rank in column:
            mine["stage"] = group
    active_ranks = sorted(r for row in grid for r in row)
    active = dist.new_group(active_ranks)
    return RankGroups(mine["pipeline"], mine["stage"], active if rank in active_ranks else None)


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
        place: Placement,
        groups: RankGroups,
        example_input: torch.Tensor,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        optimizer: Callable[[list[nn.Parameter]], torch.optim.Optimizer],
        device: torch.device | None = None,
    ):
        self.plan = plan
        self.place = place
        self.device = device or torch.device("cpu")
        S = len(plan.stages)
        self.pipeline_group = groups.pipeline
        self.stage_group = groups.stage
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
            self._sum_gradients()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if not self.last:
            return None
        total = torch.stack([x.detach() for x in losses]).sum().reshape(1)
        if self.plan.replicas > 1:
            dist.all_reduce(total, op=dist.ReduceOp.SUM, group=self.stage_group)
        return float(total)

    def _sum_gradients(self) -> None:
        """Sum this stage's gradients over its replicas in one all-reduce (one flat buffer, as
        DDP's buckets do, instead of a collective per parameter)."""
        params = list(self.module.parameters())
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=self.stage_group)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(flat[offset : offset + n].view_as(p.grad))
            offset += n
