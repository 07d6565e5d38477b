"""What taking a step's batch costs a rank: the job's own data set and sample order, timed before
the plan is chosen, so that the planner prices it.

Every rank of a replica takes the replica's share of each step's samples before its schedule runs
(:func:`~trainplay.runtime.worker._train`: the indices from
:meth:`~trainplay.runtime.order.SampleOrder.replica_indices`, then
:meth:`~trainplay.runtime.data.DataSource.batch`), on the training thread, not overlapped with
anything. A step therefore pays ``fixed + per_sample x share`` before its first forward
(:meth:`~trainplay.plan.costs.CostModel.fetch_s`). This is a microbenchmark of the input pipeline
alone (no model runs): read or make :data:`SAMPLES` samples and one sample, :data:`REPEATS` times
each in alternation, after one fetch that opens files and fills caches, and fit the line through
the two medians. ``trainplay analyze`` and ``trainplay plan`` have no data set and price a step
whose inputs are ready, as a training loop with a prefetching ``DataLoader`` sees it.
"""

from __future__ import annotations

import statistics
import time

from trainplay.runtime.data import DataSource
from trainplay.runtime.order import SampleOrder

__all__ = ["REPEATS", "SAMPLES", "measure_fetch"]

SAMPLES = 16
"""Samples of the larger timed fetch (at most the global batch)."""
REPEATS = 5


def measure_fetch(
    data: DataSource, order: SampleOrder, *, repeats: int = REPEATS
) -> tuple[float, float]:
    """``(fixed_s, per_sample_s)`` of taking ``n`` samples of a step on this rank, as the
    training loop takes them (module docstring); neither below zero."""
    large = min(SAMPLES, order.global_batch)

    def once(count: int, step: int) -> float:
        began = time.perf_counter()
        data.batch(order.indices(step, 0, count))
        return time.perf_counter() - began

    once(large, 0)
    ones, many = [], []
    for i in range(repeats):
        ones.append(once(1, i + 1))
        many.append(once(large, i + 1))
    one, big = statistics.median(ones), statistics.median(many)
    if large == 1:
        return 0.0, one
    per_sample = max((big - one) / (large - 1), 0.0)
    return max(one - per_sample, 0.0), per_sample
