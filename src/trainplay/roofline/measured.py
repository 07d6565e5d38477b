"""Stragglers from the runtime's own timers: ``diagnose_run(run)`` over one worker group's steps.

The runtime times every rank's step (:mod:`trainplay.runtime.timers`: its stage's forward and
backward, the waits on pipeline transfers, the all-reduces, the optimizer) and journals it beside
the cost model's prediction for that rank. This analyzer reads those numbers; it is pure and
stateless, like the trace analyzer (:mod:`trainplay.roofline.diagnose`), whose margin, quantile and
consistency rule it shares. We break the diagnosis into three steps.

1. **Who.** A rank's *busy* time is its own device work: forward + backward + optimizer. Ranks of
   a plan do different work (stages differ, replicas take uneven shares), so each rank's busy time
   is divided by what the cost model predicted for its work: the *ratio* says how much slower than
   priced its device ran. Each rank's ratio is its lower quartile over the steps (outside work only
   adds time). The slow group is the largest set of the slowest ranks that are alike (within the
   margin of each other) and slower than the median of the remaining ranks beyond the margin, and
   in more than half of the steps. A balanced run, or a run whose every rank is equally off its
   prediction (the model is off, not a rank), names none. Without a prediction (a plan file the
   cost model cannot price) raw busy times are compared, as the trace analyzer does.
2. **Which dimension.** The timers see device work as a whole, not by operator class. When the
   slowest rank of the group may use fewer CPUs than it runs threads (a CPU quota or a narrower
   affinity, journaled as ``cpu_floors`` in ``start``) and the other ranks are not limited as
   much, its processor's time is what it lacks: ``compute`` (a quota slows every operator alike,
   as a lower clock does). Otherwise its excess is put where MD-Roofline says the rank's work is
   bound: ``compute`` when its predicted compute-bound operators (and fixed per-call costs, host
   computation) outweigh its memory-bound ones, else ``memory``. The waits are never excess: a
   rank that waits is the victim. A slow link slows the transfers of every rank alike and is not
   told apart here (the predictive diagnosis of ``trainplay analyze`` covers it, from measured
   bandwidths).
3. **How much.** ``slowdown = T / (T - min(E, W))``, as for traces: ``T`` the median step time,
   ``E`` the time the slowest rank of the group would save per step running at the others'
   median ratio, ``W`` the median time per step the other ranks are not busy (what they wait).

It also sets prediction against measurement: per rank and per stage, predicted and measured busy
time, and the predicted step against the measured one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trainplay.report.units import format_duration, format_number
from trainplay.roofline.diagnose import CONSISTENCY, MARGIN, QUANTILE, Straggler, quantile

__all__ = [
    "BUSY_FIELDS",
    "MeasuredDiagnosis",
    "MeasuredRun",
    "RankRow",
    "RankSteps",
    "StageRow",
    "diagnose_run",
]

BUSY_FIELDS = ("fwd_s", "bwd_s", "optimizer_s")
"""The timers that are a rank's own device work."""


@dataclass(frozen=True, kw_only=True)
class RankSteps:
    """One rank of a worker group: where it runs and its timers, step by step."""

    rank: int
    device: str
    node: str | None = None
    stage: int = 0
    replica: int = 0
    share: int = 0
    """Samples of the global batch its replica takes."""
    predicted: dict[str, float] | None = None
    """The cost model's seconds per step for it: ``fwd_s``, ``bwd_s``, ``allreduce_s``,
    ``optimizer_s``, and the forward and backward split by bound, ``compute_s``, ``memory_s``."""
    steps: tuple[dict[str, float], ...] = ()
    """Per step, the timers (``fwd_s``, ``bwd_s``, ``wait_s``, ``allreduce_s``, ``optimizer_s``,
    ``step_s``)."""
    cpu_floor: float = 1.0
    """Its threads over the CPUs its process may use, when that is more than 1 (a CPU quota or an
    affinity narrower than its threads: it runs at most ``1 / cpu_floor`` of full speed)."""

    def busy(self, step: dict[str, float]) -> float:
        return sum(step.get(f, 0.0) for f in BUSY_FIELDS)

    @property
    def predicted_busy_s(self) -> float | None:
        if not self.predicted:
            return None
        return sum(self.predicted.get(f, 0.0) for f in BUSY_FIELDS) or None


@dataclass(frozen=True, kw_only=True)
class MeasuredRun:
    """One worker group of a run: its plan, its steps, every rank's timers."""

    plan_id: str
    first_step: int
    step_s: tuple[float, ...]
    """The lead rank's time of each step (the journal's ``step_s``)."""
    predicted_step_s: float | None
    ranks: tuple[RankSteps, ...]


@dataclass(frozen=True)
class RankRow:
    """One rank: medians over the steps compared (seconds), and the prediction."""

    rank: int
    device: str
    node: str | None
    stage: int
    replica: int
    share: int
    fwd_s: float
    bwd_s: float
    wait_s: float
    allreduce_s: float
    optimizer_s: float
    step_s: float
    busy_s: float
    predicted_busy_s: float | None
    ratio: float | None
    """Measured busy over predicted busy (lower quartile over the steps)."""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class StageRow:
    """One stage: predicted and measured busy time of its ranks (medians over its replicas)."""

    stage: int
    ranks: tuple[int, ...]
    predicted_s: float | None
    measured_s: float

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "ranks": list(self.ranks)}


@dataclass(frozen=True)
class MeasuredDiagnosis:
    """What one worker group's timers say."""

    plan_id: str
    steps: int
    """Steps compared."""
    step_s: float
    """Median measured step time."""
    predicted_step_s: float | None
    ranks: tuple[RankRow, ...]
    stages: tuple[StageRow, ...]
    straggler: Straggler | None
    margin: float = MARGIN
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "steps": self.steps,
            "step_s": self.step_s,
            "predicted_step_s": self.predicted_step_s,
            "ranks": [r.to_dict() for r in self.ranks],
            "stages": [s.to_dict() for s in self.stages],
            "straggler": None if self.straggler is None else self.straggler.to_dict(),
            "margin": self.margin,
            "notes": list(self.notes),
        }


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def _slow_group(ratio: dict[int, float], margin: float) -> list[int] | None:
    """The largest set of the slowest ranks, alike within ``margin``, slower than the median of
    the others beyond ``margin``; ``None`` when there is none."""
    ordered = sorted(ratio, key=lambda r: (-ratio[r], r))
    best = None
    for k in range(1, len(ordered)):
        group, rest = ordered[:k], ordered[k:]
        alike = ratio[group[0]] <= (1 + margin) * ratio[group[-1]]
        if alike and ratio[group[-1]] > (1 + margin) * _median([ratio[r] for r in rest]):
            best = group
    return best


def diagnose_run(run: MeasuredRun, *, margin: float = MARGIN) -> MeasuredDiagnosis:
    """The straggler group of ``run``, if any, and predicted against measured (module docstring).

    The first step is a warm-up and is left out when three or more remain.
    """
    if margin < 0:
        raise ValueError(f"margin must be non-negative, got {margin}")
    notes: list[str] = []
    n = min((len(r.steps) for r in run.ranks), default=0)
    skip = 1 if n >= 3 else 0
    if skip:
        notes.append(f"step {run.first_step} left out as warm-up")
    ranks = [
        RankSteps(**{**vars(r), "steps": tuple(r.steps[skip:n])}) for r in run.ranks if r.steps
    ]
    priced = all(r.predicted_busy_s for r in ranks)
    if not priced:
        notes.append("no prediction for every rank: raw busy times compared")

    def scale(r: RankSteps) -> float:
        return r.predicted_busy_s if priced else 1.0  # type: ignore[return-value]

    per_step = {r.rank: [r.busy(s) / scale(r) for s in r.steps] for r in ranks}
    ratio = {rank: quantile(v, QUANTILE) for rank, v in per_step.items()}
    rows = tuple(
        RankRow(
            rank=r.rank,
            device=r.device,
            node=r.node,
            stage=r.stage,
            replica=r.replica,
            share=r.share,
            **{
                f: _median([s.get(f, 0.0) for s in r.steps])
                for f in ("fwd_s", "bwd_s", "wait_s", "allreduce_s", "optimizer_s", "step_s")
            },
            busy_s=_median([r.busy(s) for s in r.steps]),
            predicted_busy_s=r.predicted_busy_s,
            ratio=ratio[r.rank] if priced else None,
        )
        for r in ranks
    )
    stages = tuple(
        StageRow(
            stage=s,
            ranks=tuple(r.rank for r in rows if r.stage == s),
            predicted_s=(
                _median([r.predicted_busy_s for r in rows if r.stage == s])  # type: ignore[misc]
                if priced
                else None
            ),
            measured_s=_median([r.busy_s for r in rows if r.stage == s]),
        )
        for s in sorted({r.stage for r in rows})
    )
    step_s = _median(run.step_s[skip:] or run.step_s)
    straggler, why = _straggler(ranks, per_step, ratio, margin, step_s, priced)
    return MeasuredDiagnosis(
        plan_id=run.plan_id, steps=n - skip, step_s=step_s,
        predicted_step_s=run.predicted_step_s, ranks=rows, stages=stages,
        straggler=straggler, margin=margin, notes=(why, *notes),
    )  # fmt: skip


def _straggler(
    ranks: list[RankSteps],
    per_step: dict[int, list[float]],
    ratio: dict[int, float],
    margin: float,
    step_s: float,
    priced: bool,
) -> tuple[Straggler | None, str]:
    if len(ranks) < 2:
        return None, "one rank: there is no other rank to compare it with"
    what = "busy time over its prediction" if priced else "busy time"
    group = _slow_group(ratio, margin)
    slowest = max(ratio, key=lambda r: (ratio[r], -r))
    others = group and [r for r in ratio if r not in group]
    rest = others or [r for r in ratio if r != slowest]
    rest_ratio = _median([ratio[r] for r in rest])
    fraction = ratio[slowest] / rest_ratio - 1 if rest_ratio > 0 else 0.0
    steps = len(per_step[slowest])
    slower = {
        g: sum(
            per_step[g][i] > (1 + margin) * _median([per_step[o][i] for o in rest])
            for i in range(steps)
        )
        for g in group or [slowest]
    }

    def shown(value: float) -> str:  # a ratio when priced, else a time
        return f"{format_number(value)}x" if priced else format_duration(value)

    verdict = (
        f"rank {slowest} has the largest {what}: {shown(ratio[slowest])} vs "
        f"{shown(rest_ratio)} for the other ranks ({fraction:+.0%}), beyond the {margin:.0%} margin in "
        f"{slower[slowest]} of {steps} steps"
    )
    if group is None or min(slower.values()) <= CONSISTENCY * steps:
        return None, f"no straggler: {verdict}"
    by_rank = {r.rank: r for r in ranks}
    lead = by_rank[group[0]]
    predicted = lead.predicted or {}
    limited = lead.cpu_floor > (1 + margin) * _median([by_rank[o].cpu_floor for o in rest])
    dimension = (
        "memory"
        if not limited and predicted.get("memory_s", 0.0) > predicted.get("compute_s", 0.0)
        else "compute"
    )
    cause = (
        f"; rank {lead.rank}'s CPU limit lets its threads run {1 / lead.cpu_floor:.0%} of the time"
        if limited
        else ""
    )
    busy = quantile([lead.busy(s) for s in lead.steps], QUANTILE)
    excess = busy * (1 - rest_ratio / ratio[lead.rank])
    waiting = _median(
        [_median([s["step_s"] - by_rank[o].busy(s) for s in by_rank[o].steps]) for o in rest]
    )
    gain = min(excess, max(0.0, waiting))
    alike = f" (with rank{'s' if len(group) > 2 else ''} {', '.join(map(str, group[1:]))})"
    straggler = Straggler(
        rank=lead.rank,
        dimension=dimension,
        slowdown=step_s / (step_s - gain) if step_s > gain else 1.0,
        excess_s=excess,
        excess_fraction=fraction,
        steps_slower=slower[lead.rank],
        steps=steps,
        group=tuple(group),
    )
    return straggler, f"straggler: {verdict}" + (alike if len(group) > 1 else "") + cause
