"""Workers that are one kind of device measure it together: their timings pooled case by case.

Two CPU workers of one machine with the same threads, allowed the same CPUs and in the same cgroup
(so under the same CPU quota) are interchangeable: the scheduler runs either on any of those CPUs,
so what one measures and the other does not is the moment, not the device. On the project's
2-vCPU VM their sweeps, timed at the same moments, still differed case by case: the median rate
of worker 1 over worker 0 across every cold-cache sweep point was x1.14 in the profile measured
at 17:43 on 2026-12-04 and x0.83 in the one measured at 20:00 (the ratio flipped, so neither
worker was the slower device), and held-out-17's DDP cases, which run at their slower worker,
were over-predicted by 16.6%. A case's median over the workers of one kind is the better estimate
of that device: every one of them takes the pooled times.

Workers of different kinds keep their own: a worker under a CPU quota or pinned to other CPUs
(``taskset``) is a slower device, and a GPU is a device of its own even where its model is the
same as its neighbour's, so the measurement can show a straggler.
"""

from __future__ import annotations

import os
import socket
import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from trainplay.hardware.measure.sweeps import SweepResult
from trainplay.hardware.profile import Curve

__all__ = ["Timings", "applied", "kind_of", "pooled", "pooled_by_kind", "timings_of"]

Timings = dict
"""What a worker measured that is pooled, as plain data (gathered between ranks): ``overheads``
(seconds by name), ``optimizers`` (name -> ``[rates, fixed seconds]``), ``sweep`` (one
``[seconds, hot_s, stale_s or None, quiet, cv, warm_s or None, step_s or None]`` per case, every
worker's cases in the same order), ``cache_bytes`` (the footprint a CPU streams at cache speed,
``None`` on a GPU)."""


def kind_of(device_type: str, threads: int, rank: int) -> str:
    """What makes two workers one kind of device: for a CPU worker its host, threads, the CPUs it
    may run on and its cgroup (a CPU quota is a cgroup's, :mod:`trainplay.hardware.cpulimit`);
    every GPU is a kind of its own (``rank``)."""
    if device_type != "cpu":
        return f"{device_type}:{socket.gethostname()}:rank {rank}"
    cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    cgroup = Path("/proc/self/cgroup")
    group = cgroup.read_text().strip() if cgroup.exists() else ""
    return f"cpu:{socket.gethostname()}:{threads} threads:cpus {cpus}:{group}"


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if len(present) == len(values) else None


def pooled(everyone: Sequence[Timings]) -> Timings:
    """The case-by-case medians of the timings of several workers of one kind (a stale, warm or
    step time only where every worker timed one; quiet only where every worker's samples were; as
    the spread, the largest of theirs)."""
    first = everyone[0]
    overheads = {
        name: statistics.median(t["overheads"][name] for t in everyone)
        for name in first["overheads"]
    }
    optimizers = {}
    for name, (rates, _fixed) in first["optimizers"].items():
        optimizers[name] = [
            [statistics.median(t["optimizers"][name][0][i] for t in everyone)
             for i in range(len(rates))],
            statistics.median(t["optimizers"][name][1] for t in everyone),
        ]  # fmt: skip
    sweep = []
    for i in range(len(first["sweep"])):
        cases = [t["sweep"][i] for t in everyone]
        sweep.append(
            [
                statistics.median(c[0] for c in cases),
                statistics.median(c[1] for c in cases),
                _median([c[2] for c in cases]),
                all(c[3] for c in cases),
                max(c[4] for c in cases),
                _median([c[5] for c in cases]),
                _median([c[6] for c in cases]),
            ]
        )
    return {
        "overheads": overheads,
        "optimizers": optimizers,
        "sweep": sweep,
        "cache_bytes": _median([t["cache_bytes"] for t in everyone]),
    }


def pooled_by_kind(kinds: Sequence[str], timings: Sequence[Timings], rank: int) -> tuple[
    Timings, list[int]
]:  # fmt: skip
    """``rank``'s timings pooled with those of every rank of its kind, and those ranks."""
    mine = [r for r, k in enumerate(kinds) if k == kinds[rank]]
    if len(mine) == 1:
        return timings[rank], mine
    return pooled([timings[r] for r in mine]), mine


def timings_of(
    overheads: dict[str, float], optimizers: dict[str, tuple[Curve, float]],
    results: Sequence[SweepResult], cache_bytes: int | None,
) -> Timings:  # fmt: skip
    """A worker's measurements as :data:`Timings`."""
    return {
        "overheads": dict(overheads),
        "optimizers": {n: [list(c.rates), fixed] for n, (c, fixed) in optimizers.items()},
        "sweep": [
            [r.seconds, r.hot_s, r.stale_s, r.quiet, r.cv, r.warm_s, r.step_s] for r in results
        ],
        "cache_bytes": cache_bytes,
    }


def applied(
    timings: Timings,
    overheads: dict[str, float],
    optimizers: dict[str, tuple[Curve, float]],
    results: Sequence[SweepResult],
) -> tuple[dict[str, float], dict[str, tuple[Curve, float]], list[SweepResult], int | None]:
    """``overheads``, ``optimizers``, ``results`` and the cache footprint with ``timings``'
    figures in their place."""
    optimizers = {
        name: (replace(curve, rates=tuple(timings["optimizers"][name][0])),
               timings["optimizers"][name][1])
        for name, (curve, _) in optimizers.items()
    }  # fmt: skip
    results = [
        replace(
            r,
            seconds=t[0],
            hot_s=t[1],
            stale_s=t[2],
            quiet=t[3],
            cv=t[4],
            warm_s=t[5],
            step_s=t[6],
        )
        for r, t in zip(results, timings["sweep"], strict=True)
    ]
    cache = timings["cache_bytes"]
    return (
        {**overheads, **timings["overheads"]},
        optimizers,
        results,
        None if cache is None else int(cache),
    )
