"""One operator case's passes over a sweep: their median as one result, and whether they agree.

A CPU sweep times its whole list :data:`~.worker.CPU_PASSES` times, a sweep apart, and a case keeps
its median over them (:func:`over_passes`). Three passes are not always enough on a shared
virtual machine: in two measurements of this host's two-worker profile three hours apart
(2026-12-06 22:23 and -07 01:54) the convolutions' backward sweep point 8x640x2 came out at 13.9
and then 28.1 GFLOP/s, and the class's largest spread was 65% and then 90%. So after the first
passes every case whose passes disagree (:func:`unsettled`: fewer than half of them within
:data:`SETTLED` of their median) is timed again, those only, up to :data:`MORE_PASSES` more
times, until they agree (:func:`~.sweeps.run_sweep`); how many were timed again and how many
never settled is reported with the profile, not hidden.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from trainplay.hardware.measure.stats import cv_of
from trainplay.hardware.placement import one_of

if TYPE_CHECKING:
    from trainplay.hardware.measure.sweeps import SweepResult

__all__ = ["MORE_PASSES", "SETTLED", "over_passes", "relative_mad", "unsettled"]

SETTLED = 0.10
"""The largest median absolute deviation of a case's times over its passes, as a share of their
median (any of the times a profile keeps: cold, hot, stale, warm, as a step makes it), at which
they count as agreeing: then at least half of the passes lie within 10% of the median the profile
keeps, and one wild pass among them does not count against it, as it does not move the median.
One round of this host's training steps lay 7.0-7.5% from its case's median on its two noisiest
nights (``benchmarks/results/round_spread.md``): a case whose passes spread further than that
noise is one the median of three cannot be trusted on."""
MORE_PASSES = 2
"""At most this many passes after the first ones, each over the cases still :func:`unsettled`."""


def _times(r: SweepResult) -> tuple[float | None, ...]:
    return (r.seconds, r.hot_s, r.stale_s, r.warm_s, r.step_s)


def relative_mad(values: Sequence[float]) -> float:
    """The median absolute deviation of ``values`` from their median, over that median (0 for
    fewer than two values or a zero median)."""
    if len(values) < 2:
        return 0.0
    middle = statistics.median(values)
    if not middle:
        return 0.0
    return statistics.median(abs(v - middle) for v in values) / middle


def unsettled(results: Sequence[SweepResult], limit: float = SETTLED) -> bool:
    """Whether one case's passes disagree: any of its times deviates over them from its median
    by a median absolute deviation above ``limit`` of it (:func:`relative_mad`, over the passes
    that timed it; one pass always agrees)."""
    for values in zip(*(_times(r) for r in results), strict=True):
        timed = [v for v in values if v is not None]
        if relative_mad(timed) > limit:
            return True
    return False


def over_passes(results: Sequence[SweepResult]) -> SweepResult:
    """One case's passes as one result: median times, its :attr:`~.sweeps.SweepResult.passes`
    their number, :attr:`~.sweeps.SweepResult.settled` whether they agree, and as its spread the
    larger of the within-pass spread and the passes' own (their hot times' coefficient of
    variation)."""
    if len(results) == 1:
        return results[0]
    hot = [r.hot_s for r in results]
    between = cv_of(hot)
    first = results[0]
    stale = [r.stale_s for r in results if r.stale_s is not None]
    warm = [r.warm_s for r in results if r.warm_s is not None]
    step = [r.step_s for r in results if r.step_s is not None]
    return replace(
        first,
        seconds=statistics.median(r.seconds for r in results),
        hot_s=statistics.median(hot),
        stale_s=statistics.median(stale) if stale else None,
        warm_s=statistics.median(warm) if warm else None,
        step_s=statistics.median(step) if step else None,
        cv=max(between, max(r.cv for r in results)),
        quiet=all(r.quiet for r in results),
        placement=one_of(r.placement for r in results),
        passes=len(results),
        settled=not unsettled(results),
    )
