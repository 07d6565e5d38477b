"""Running one plan on a fixed set of ranks: placement, process groups, stages, one training step.

- **Placement.** The rank whose device is ``plan.stages[s].devices[r]`` runs stage ``s`` of
  replica ``r``; ranks whose device the plan leaves idle run nothing. Without a map from device
  ids to ranks, rank ``r·S + s`` runs stage ``s`` of replica ``r`` (``S`` stages per replica).
- **Groups.** One pipeline group per replica (its ``S`` ranks, for the point-to-point sends of
  ``torch.distributed.pipelining``) and one data-parallel group per stage (that stage's ``R``
  ranks, for the gradient all-reduce). ``new_group`` is collective, so every rank creates every
  group in the same order.
- **Stages.** :mod:`trainplay.runtime.stage` builds the rank's module; ``PipelineStage`` wraps it
  (shapes inferred from the first micro-batch), a stage that recomputes runs under
  ``torch.utils.checkpoint``, and the schedule is ``ScheduleGPipe`` or ``Schedule1F1B``. The
  schedule keeps no merged outputs (``return_outputs=False``).
- **Loss and gradients.** Each micro-batch's loss is summed over its samples and positions (one per
  sample for a classifier, every token for a language model) and divided by the global batch's
  count of them, so a replica's gradients are its share of the global mean and a plain sum over
  the replicas (``all_reduce``, SUM) is the gradient of the global batch's mean loss, however
  uneven the shares. The step's loss is the same sum over the last stage's replicas. Gradients are
  all-reduced in buckets of at most :data:`BUCKET_BYTES` (DDP's default size), so the extra memory
  is one bucket, not a copy of the stage.
- **Tied parameters** across stages (:class:`~trainplay.runtime.stage.Stage` ``.tied``): their
  gradients are summed over every rank that holds a copy (all replicas of those stages, one group
  per set of stages) instead of over the stage's replicas, so the copies take the same step.
- **Timers.** :meth:`PlanRunner.step` times the schedule's step, the all-reduces and the optimizer
  (:class:`~trainplay.runtime.timers.StepTimers`, which also hooks the stage's forward and
  backward); the caller begins and ends each step.
- **Precision.** The schedule's step runs inside :class:`~trainplay.runtime.precision.Precision`'s
  autocast region; with fp16 the loss is scaled and the step skipped on every rank together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
from torch.utils.checkpoint import checkpoint

from trainplay.plan.plan import Plan
from trainplay.plan.simulate import sample_stages
from trainplay.runtime.precision import Precision
from trainplay.runtime.stage import Stage
from trainplay.runtime.timers import StepTimers

__all__ = [
    "BUCKET_BYTES",
    "Placement",
    "PlanRunner",
    "RankGroups",
    "default_ranks",
    "make_groups",
    "placement",
    "runnable_schedule",
    "sum_gradients",
]

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}


def runnable_schedule(plan: Plan) -> str:
    """The schedule ``plan`` runs with: its own, except 1F1B with fewer micro-batches than stages,
    which torch's ``Schedule1F1B`` refuses and which runs as GPipe (with ``M < S`` micro-batches
    1F1B's warm-up already runs every forward before the first backward on stages ``s <= S - M``;
    the order of the gradients, so the step, is the same)."""
    if plan.schedule == "1f1b" and plan.microbatches < len(plan.stages):
        return "gpipe"
    return plan.schedule


BUCKET_BYTES = 25 * 2**20
"""Largest gradient bucket of one all-reduce (DDP's ``bucket_cap_mb`` default, 25 MiB)."""


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
    """The process groups one rank uses: its pipeline, its stage's replicas, every rank that runs
    a stage (checkpoints, the fp16 step decision), and for each set of stages that share a tied
    parameter, every rank of those stages. ``None`` where the rank takes no part."""

    pipeline: dist.ProcessGroup | None
    stage: dist.ProcessGroup | None
    active: dist.ProcessGroup | None
    ties: dict[tuple[int, ...], dist.ProcessGroup] = field(default_factory=dict)


def make_groups(
    plan: Plan, ranks: Mapping[str, int], tie_stages: tuple[tuple[int, ...], ...] = ()
) -> RankGroups:
    """Create every group of ``plan`` (collective: every rank of the world calls it, in the same
    order, idle ranks included) and return those this rank belongs to. ``tie_stages``: the sets
    of stages that share a tied parameter."""
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
    ties = {}
    for stages in sorted(set(tie_stages)):
        members = sorted(row[s] for row in grid for s in stages)
        group = dist.new_group(members)
        if rank in members:
            ties[stages] = group
    return RankGroups(
        mine["pipeline"], mine["stage"], active if rank in active_ranks else None, ties
    )


class _Recompute(nn.Module):
    """Runs ``inner`` without keeping its activations; rebuilds them in backward."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        return checkpoint(self.inner, *args, use_reentrant=False)


def sum_gradients(params: list[nn.Parameter], group: dist.ProcessGroup | None) -> None:
    """Sum the gradients of ``params`` over ``group``, in place, in buckets of at most
    :data:`BUCKET_BYTES` (one flat all-reduce per bucket, as DDP's buckets do)."""
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    bucket: list[nn.Parameter] = []
    size = 0
    for p in [*params, None]:
        nbytes = 0 if p is None else p.numel() * p.element_size()
        if bucket and (p is None or size + nbytes > BUCKET_BYTES):
            if len(bucket) == 1:
                dist.all_reduce(bucket[0].grad, op=dist.ReduceOp.SUM, group=group)
            else:
                flat = torch.cat([q.grad.reshape(-1) for q in bucket])
                dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=group)
                offset = 0
                for q in bucket:
                    q.grad.copy_(flat[offset : offset + q.numel()].view_as(q.grad))
                    offset += q.numel()
            bucket, size = [], 0
        if p is not None:
            bucket.append(p)
            size += nbytes


class PlanRunner:
    """One rank's part of ``plan``: its stage, schedule, groups, optimizer and precision."""

    def __init__(
        self,
        stage: Stage,
        plan: Plan,
        *,
        place: Placement,
        groups: RankGroups,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        positions: int,
        optimizer: Callable[[list[nn.Parameter]], torch.optim.Optimizer],
        precision: Precision,
        device: torch.device | None = None,
    ):
        self.plan = plan
        self.place = place
        self.device = device or torch.device("cpu")
        self.groups = groups
        self.precision = precision
        self.module = stage.module
        run = _Recompute(self.module) if plan.stages[place.stage].recompute else self.module
        S = len(plan.stages)
        self.stage = PipelineStage(run, place.stage, S, self.device, group=groups.pipeline)
        self.timers = StepTimers(run, self.device)
        """Where each step's time goes (:mod:`trainplay.runtime.timers`); :meth:`step` times
        its phases, the caller begins and ends each step."""
        # new_group numbers its members in global-rank order, and a stage talks to the group rank
        # of its neighbours' stage index unless told otherwise: tell it where each stage is (a plan
        # may put stage 0 on rank 2). The single-stage schedules keep the stage's default mapping,
        # ``stage % group size``, which holds only when stages run in rank order.
        members = sorted(place.pipeline_ranks)
        self.stage.stage_index_to_group_rank = {
            s: members.index(r) for s, r in enumerate(place.pipeline_ranks)
        }
        denominator = plan.global_batch * positions

        def scaled(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return loss_fn(output, target) * (self.precision.scale / denominator)

        # scale_grads=False: the loss is already divided by the global batch; the schedule's own
        # scaling (by the micro-batch count) would count it twice
        self.schedule = SCHEDULES[runnable_schedule(plan)](
            self.stage, plan.microbatches, loss_fn=scaled, scale_grads=False
        )
        named = stage.named_parameters()
        self.params = list(named.values())
        self.tied = [
            (groups.ties[stages], [named[name]]) for name, stages in sorted(stage.tied.items())
        ]
        tied = {id(p) for _, ps in self.tied for p in ps}
        self.untied = [p for p in self.params if id(p) not in tied]
        self.optimizer = optimizer(self.params)

    @property
    def takes_samples(self) -> bool:
        """Whether this stage takes the step's samples (:func:`~trainplay.plan.simulate.
        sample_stages`): the first its inputs, the last its targets."""
        return self.place.stage in sample_stages(len(self.plan.stages))

    @property
    def first(self) -> bool:
        return self.place.stage == 0

    @property
    def last(self) -> bool:
        return self.place.stage == len(self.plan.stages) - 1

    def step(self, inputs: torch.Tensor | None, targets: torch.Tensor | None) -> float | None:
        """One optimizer step on this replica's share: ``inputs`` on the first stage, ``targets``
        on the last. Returns the global batch's mean loss on last-stage ranks, else ``None``.
        ``loss_fn`` must sum over the samples and positions it is given."""
        losses: list[torch.Tensor] = []
        kwargs = {"target": targets, "losses": losses} if self.last else {}
        scale = self.precision.scale
        timers = self.timers
        with timers.phase("schedule"), self.precision.autocast():
            if self.first:
                self.schedule.step(inputs, return_outputs=False, **kwargs)
            else:
                self.schedule.step(return_outputs=False, **kwargs)
        with timers.phase("allreduce_s"):
            if self.plan.replicas > 1:
                sum_gradients(self.untied, self.groups.stage)
            for group, params in self.tied:
                sum_gradients(params, group)
        with timers.phase("optimizer_s"):
            self.precision.step(self.optimizer, self.params, self.groups.active)
            self.optimizer.zero_grad(set_to_none=True)
        if not self.last:
            return None
        total = torch.stack([x.detach().float() for x in losses]).sum().reshape(1) / scale
        if self.plan.replicas > 1:
            dist.all_reduce(total, op=dist.ReduceOp.SUM, group=self.groups.stage)
        return float(total)
