"""Statistics for microbenchmarks: sampling until stable, and the alpha-beta line fit."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "CV_TARGET",
    "Fit",
    "Sampled",
    "cv_of",
    "fit_alpha_beta",
    "least_squares",
    "sample_until_stable",
]

CV_TARGET = 0.05
"""Stop sampling once the coefficient of variation of the recent samples is below this."""
WINDOW = 5
"""How many recent samples the stability test looks at."""


@dataclass(frozen=True)
class Sampled:
    """Samples of one figure, taken until stable or out of time."""

    values: tuple[float, ...]
    stable: bool
    """Whether the recent samples' coefficient of variation fell below :data:`CV_TARGET`."""

    @property
    def recent(self) -> tuple[float, ...]:
        return self.values[-WINDOW:]

    @property
    def median(self) -> float:
        return statistics.median(self.recent)

    @property
    def cv(self) -> float:
        """Coefficient of variation (stdev / mean) of the recent samples."""
        return cv_of(self.recent)


def cv_of(values: Sequence[float]) -> float:
    """Coefficient of variation (stdev / mean) of ``values``; 0 for fewer than two or a zero
    mean."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else 0.0


def sample_until_stable(
    sample: Callable[[], float],
    budget_s: float,
    *,
    min_samples: int = 3,
    max_samples: int = 50,
    clock: Callable[[], float] = time.perf_counter,
) -> Sampled:
    """Call ``sample`` until the last :data:`WINDOW` values vary by less than :data:`CV_TARGET`
    (coefficient of variation, at least ``min_samples`` values), or ``budget_s`` is spent; at
    least ``min_samples`` are always taken."""
    start = clock()
    values: list[float] = []
    while len(values) < max_samples:
        values.append(sample())
        enough = len(values) >= min_samples
        if enough and cv_of(values[-WINDOW:]) < CV_TARGET:
            return Sampled(tuple(values), stable=True)
        if enough and clock() - start >= budget_s:
            break
    return Sampled(tuple(values), stable=False)


@dataclass(frozen=True)
class Fit:
    """``t = alpha_s + bytes / beta_bps``, least squares, with its coefficient of determination."""

    alpha_s: float
    beta_bps: float
    r2: float


def least_squares(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through (``xs``, ``ys``), unclamped."""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    return mean_y - slope * mean_x, slope


def fit_alpha_beta(sizes_bytes: Sequence[float], times_s: Sequence[float]) -> Fit:
    """Least-squares line through (bytes, seconds). A negative intercept (noise at small sizes)
    is clamped by refitting through the origin, so alpha is never below zero."""
    if len(sizes_bytes) != len(times_s) or len(sizes_bytes) < 2:
        raise ValueError("an alpha-beta fit needs two or more (size, time) points")
    n = len(sizes_bytes)
    mean_x, mean_y = sum(sizes_bytes) / n, sum(times_s) / n
    sxx = sum((x - mean_x) ** 2 for x in sizes_bytes)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(sizes_bytes, times_s, strict=True))
    slope = sxy / sxx
    alpha = mean_y - slope * mean_x
    if alpha < 0:
        slope = sum(x * y for x, y in zip(sizes_bytes, times_s, strict=True)) / sum(
            x * x for x in sizes_bytes
        )
        alpha = 0.0
    predicted = [alpha + slope * x for x in sizes_bytes]
    ss_res = sum((y - p) ** 2 for y, p in zip(times_s, predicted, strict=True))
    ss_tot = sum((y - mean_y) ** 2 for y in times_s)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return Fit(alpha_s=alpha, beta_bps=1.0 / slope if slope > 0 else float("inf"), r2=r2)
