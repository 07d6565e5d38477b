"""Stragglers from per-worker peaks: the slow group that holds the job back, and what it costs.

A synchronous job runs at its slowest workers. We break straggler identification into two steps:

1. **Who is slow.** Each worker's own time for its share of the iteration is priced with its own
   peaks and profile (:mod:`trainplay.roofline.cost`), relative to the fastest worker doing the
   same work (the replicas of its stage). The *slow group* is every worker within
   :data:`TIER` of the slowest one: several alike slow workers form one group (6 V100 and 2 T4
   name both T4; 4 T4, 2 V100 and 2 RTX 3090 name the four T4). If every worker is in it, the job
   has no straggler — it is simply that slow. Communication is judged the same way on the workers'
   measured all-reduce bandwidth, when they measured one.
2. **What it costs.** The slowdown is the predicted iteration time divided by the prediction with
   the group *matched to the rest*: its peaks in that dimension replaced by those of the slowest
   worker outside it (raising the group any further would only make that worker the straggler).
   The group is named when the slowdown exceeds the threshold (5% by default).

The dimension is where the group's extra time goes: its compute time (kernels that are
compute-bound, and the fixed per-operator cost, which is host computation), its memory time, or
its communication.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace

from trainplay.hardware.spec import Peaks
from trainplay.roofline import cost
from trainplay.roofline.predict import Grid
from trainplay.workload.stats import WorkloadProfile

__all__ = ["TIER", "Straggler", "find_stragglers"]

TIER = 0.05
"""Workers within 5% of the slowest one's time are one slow group."""


@dataclass(frozen=True, kw_only=True)
class Straggler:
    """A group of alike workers whose peak in one dimension slows the whole job."""

    ranks: tuple[int, ...]
    """The workers of the group."""
    nodes: tuple[str, ...]
    devices: tuple[str, ...]
    """Device of each worker of the group."""
    dimension: str
    """compute | memory | communication."""
    slowdown: float
    """Predicted iteration time / predicted with the group matched to the rest."""
    value: float
    """The group's peak in that dimension (APF, APM or APB; its slowest member's)."""
    median: float
    """The median peak in that dimension of the workers outside the group."""

    @property
    def rank(self) -> int:
        return self.ranks[0]

    @property
    def node(self) -> str:
        return self.nodes[0]

    @property
    def device(self) -> str:
        return self.devices[0]


_ATTR = {"compute": "apf", "memory": "apm", "communication": "apb"}


def _own_time(profile: WorkloadProfile, blocks: list[int], peaks: Peaks) -> cost.PhaseTime:
    total = cost.ZERO
    for i in blocks:
        ops = profile.layers[i].ops
        total = total + cost.phase_time(ops, "fwd", peaks) + cost.phase_time(ops, "bwd", peaks)
    return total


def _slow_group(times: dict[int, float]) -> tuple[list[int], int] | None:
    """(ranks of the slow group, the slowest rank outside it) for per-rank ``times`` (larger is
    slower), or ``None`` when every rank is in it."""
    slowest = max(times.values())
    group = [r for r, t in times.items() if t >= slowest / (1 + TIER)]
    rest = [r for r in times if r not in group]
    if not rest:
        return None
    return sorted(group), max(rest, key=times.__getitem__)


def _matched(slow: Peaks, like: Peaks, dimension: str) -> Peaks:
    """``slow`` with ``like``'s figures in ``dimension`` (a compute or memory match takes the
    whole per-operator profile; communication takes the collective curves)."""
    if dimension == "communication":
        profile = slow.profile
        if profile is not None and like.profile is not None:
            profile = replace(
                profile,
                allreduce=like.profile.allreduce,
                allreduce_alpha_s=like.profile.allreduce_alpha_s,
                p2p=like.profile.p2p,
                p2p_alpha_s=like.profile.p2p_alpha_s,
            )
        return replace(slow, apb=like.apb, alpha_s=like.alpha_s, profile=profile)
    profile = like.profile
    if profile is not None and slow.profile is not None:
        profile = replace(
            like.profile,
            allreduce=slow.profile.allreduce,
            allreduce_alpha_s=slow.profile.allreduce_alpha_s,
            p2p=slow.profile.p2p,
            p2p_alpha_s=slow.profile.p2p_alpha_s,
        )
    return replace(slow, apf=like.apf, apm=like.apm, profile=profile)


def find_stragglers(
    profile: WorkloadProfile,
    grid: Grid,
    stage_of: list[int],
    predict_with: Callable[[Grid], float],
    iteration_s: float,
    threshold: float = 1.05,
) -> tuple[Straggler, ...]:
    """The slow groups in compute/memory and in communication (see the module docstring)."""
    flat = grid.flat
    if len(flat) < 2:
        return ()
    stage_of_rank: dict[int, int] = {}
    for row in grid.workers:
        for s, w in enumerate(row):
            stage_of_rank[w.rank] = s
    peaks = {w.rank: p for w, p in flat}
    workers = {w.rank: w for w, _ in flat}
    own = {
        w.rank: _own_time(
            profile, [i for i, k in enumerate(stage_of) if k == stage_of_rank[w.rank]], p
        )
        for w, p in flat
    }
    fastest_in_stage: dict[int, float] = {}
    for rank, t in own.items():
        s = stage_of_rank[rank]
        fastest_in_stage[s] = min(fastest_in_stage.get(s, t.total_s), t.total_s)
    found = []
    relative = {
        r: t.total_s / fastest_in_stage[stage_of_rank[r]] for r, t in own.items() if t.total_s
    }
    got = _slow_group(relative) if len(relative) == len(own) else None
    if got is not None:
        group, like = got
        extra = {
            "compute": statistics.fmean(own[r].compute_s + own[r].overhead_s for r in group)
            - own[like].compute_s
            - own[like].overhead_s,
            "memory": statistics.fmean(own[r].memory_s for r in group) - own[like].memory_s,
        }
        dimension = max(extra, key=extra.__getitem__)
        found.append((group, like, dimension))
    bandwidths = {r: p.apb for r, p in peaks.items()}
    if all(b for b in bandwidths.values()):
        got = _slow_group({r: 1.0 / b for r, b in bandwidths.items()})  # type: ignore[operator]
        if got is not None:
            found.append((got[0], got[1], "communication"))
    out = []
    for group, like, dimension in found:
        changed = {r: _matched(peaks[r], peaks[like], dimension) for r in group}
        slowdown = iteration_s / predict_with(grid.with_peaks(changed))
        if slowdown <= threshold:
            continue
        attr = _ATTR[dimension]
        others = [getattr(peaks[r], attr) for r in peaks if r not in group]
        out.append(
            Straggler(
                ranks=tuple(group),
                nodes=tuple(workers[r].node for r in group),
                devices=tuple(workers[r].device.name for r in group),
                dimension=dimension,
                slowdown=slowdown,
                value=min(getattr(peaks[r], attr) for r in group),
                median=statistics.median(others),
            )
        )
    return tuple(sorted(out, key=lambda s: -s.slowdown))
