"""The runtime's measurements on their way to the journal: every rank's step times, beside the
plan's prediction for that rank.

- At the start of a worker group every rank of the plan is described once (``start`` event,
  ``ranks``): its device, node, stage, replica, batch share, and what the cost model predicts for
  its step — forward, backward, all-reduce and optimizer seconds, and how its forward and
  backward split by MD-Roofline bound (compute, memory, fixed per-call cost) — priced as the
  planner prices the plan (:func:`trainplay.plan.layout.work_of`), and the CPUs' placement whose
  profile priced it (:mod:`trainplay.hardware.placement`; ``None`` where the profile has none).
- Each step, every training rank's :data:`~trainplay.runtime.timers.FIELDS` (and the loss, on
  the last stage) travel to the lead rank in one ``gather`` of a few numbers (it replaces the
  loss's send, so a step has no more collectives than before), and the lead rank journals them in
  the ``step`` event as ``timers_s``: one row per rank, in the order of ``start.ranks``.
- At the end of a worker group (or at a planned stop) the lead rank journals a ``timing`` summary:
  per rank the median of each timer over the group's steps.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import torch
import torch.distributed as dist

from trainplay.plan.costs import CostModel, Device, running
from trainplay.plan.layout import Layout, runtime_of, work_of
from trainplay.plan.plan import Plan
from trainplay.plan.simulate import iteration_s, sample_stages
from trainplay.roofline import cost
from trainplay.runtime.pipeline import runnable_schedule
from trainplay.runtime.timers import FIELDS

__all__ = ["gather_times", "predicted_ranks", "summary"]

DIGITS = 6
"""Timers are journaled to the microsecond."""


def _layout(plan: Plan, devices: dict[str, Device]) -> Layout:
    shares = plan.stages[0].batch_shares
    return Layout(
        grid=tuple(
            tuple(devices[st.devices[r]] for st in plan.stages) for r in range(plan.replicas)
        ),
        bounds=(*(st.blocks[0] for st in plan.stages), plan.stages[-1].blocks[1] + 1),
        microbatches=plan.microbatches,
        shares=tuple(shares),
        schedule=runnable_schedule(plan),
        recompute=tuple(tuple(st.recompute for st in plan.stages) for _ in shares),
    )


def predicted_ranks(
    cm: CostModel, plan: Plan, present: list[Device], ranks: dict[str, int]
) -> tuple[list[dict[str, Any]], float | None]:
    """Each rank of ``plan`` (``ranks``: device id -> rank) with the cost model's prediction of
    its step, by rank; and the predicted step time. A plan that does not fit the devices as priced
    (a ``--plan`` file) has no prediction (``None``)."""
    devices = {d.id: d for d in present}
    layout = _layout(plan, devices) if set(plan.devices) <= set(devices) else None
    work = work_of(cm, layout) if layout is not None else None
    grid = running(layout.grid) if layout is not None else ()  # as priced: alone on its node?
    runtime = runtime_of(cm, layout) if layout is not None else 0.0
    out = []
    for s, stage in enumerate(plan.stages):
        for r, device_id in enumerate(stage.devices):
            entry: dict[str, Any] = {
                "rank": ranks[device_id],
                "device": device_id,
                "node": devices[device_id].node if device_id in devices else None,
                "stage": s,
                "replica": r,
                "share": stage.batch_shares[r],
                "predicted": None,
                # the CPUs' placement whose profile priced it (hardware.placement), if measured so
                "placement": _placement(devices.get(device_id)),
            }
            if work is not None and layout is not None:
                M = plan.microbatches
                pipe = work.replicas[r]
                device = grid[r][s]
                split = cm.split_s(device, layout.micro(r), layout.bounds[s], layout.bounds[s + 1])
                # the timers see the stage's own work: not the schedule's, nor the agreement
                schedule = cost.schedule_microbatch_s(device.priced()) / 2
                entry["predicted"] = {
                    "fwd_s": (pipe.fwd_s[s] - schedule) * M,
                    "bwd_s": (pipe.bwd_s[s] - schedule) * M,
                    "allreduce_s": work.allreduce_s[s],
                    "optimizer_s": work.optimizer_s[r][s] - runtime,
                    "data_s": (
                        cm.fetch_s((device,), stage.batch_shares[r])
                        if s in sample_stages(len(plan.stages))
                        else 0.0
                    ),
                    "compute_s": (split.compute_s + split.overhead_s) * M,
                    "memory_s": split.memory_s * M,
                }
            out.append(entry)
    out.sort(key=lambda e: e["rank"])
    return out, (None if work is None else iteration_s(work))


def _placement(device: Device | None) -> str | None:
    profile = None if device is None else device.priced().profile
    return None if profile is None else profile.placement


def gather_times(
    times: dict[str, float],
    loss: float | None,
    *,
    group: dist.ProcessGroup | None,
    leader: int,
    ranks: list[int],
) -> tuple[float | None, list[list[float]] | None]:
    """Send this rank's step ``times`` (and ``loss``, if it has one) to ``leader``.

    Every rank of ``group`` (the plan's ranks, ``ranks`` in journal order) calls it; the leader
    gets back the loss and one row of :data:`FIELDS` per rank of ``ranks``, the others
    ``(loss, None)``.
    """
    row = torch.tensor(
        [math.nan if loss is None else loss, *(times[f] for f in FIELDS)], dtype=torch.float64
    )
    size = dist.get_world_size(group)
    if size == 1:
        rows = [row]
    else:
        rows = [torch.empty_like(row) for _ in range(size)] if dist.get_rank() == leader else None
        dist.gather(row, rows, dst=leader, group=group)
    if rows is None:
        return loss, None
    members = sorted(ranks)
    by_rank = {members[i]: rows[i].tolist() for i in range(len(members))}
    losses = [v[0] for v in by_rank.values() if not math.isnan(v[0])]
    return (losses[0] if losses else loss), [
        [round(x, DIGITS) for x in by_rank[r][1:]] for r in ranks
    ]


def summary(ranks: list[int], rows: list[list[list[float]]]) -> list[dict[str, Any]]:
    """Per rank the median of each timer over the steps ``rows`` (step, rank, field)."""
    out = []
    for i, rank in enumerate(ranks):
        entry: dict[str, Any] = {"rank": rank, "steps": len(rows)}
        for k, name in enumerate(FIELDS):
            values = [step[i][k] for step in rows]
            entry[name] = round(statistics.median(values), DIGITS) if values else None
        out.append(entry)
    return out
