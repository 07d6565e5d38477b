"""Rates between a sweep's points: how a :class:`~trainplay.hardware.profile.Surface` reads the
rate of a call the sweep did not time.

A surface's points lie scattered in (log10 size, log10 FLOP per byte), each with the log of its
rate. Two interpolators read between them:

- **inverse-distance weighting** of the nearest :data:`IDW_NEIGHBOURS` points (Shepard, "A
  two-dimensional interpolation function for irregularly-spaced data", ACM National Conference,
  1968): a weighted mean of their rates, so never outside them, but blind to a slope. A matrix
  product of 8 rows against a 768 x 3072 weight (3.9 FLOP per byte) sat nearest to products of
  7.7 to 16 FLOP per byte that ran at 30 to 49 GFLOP/s here, and was priced at 40 where it ran
  at 14 to 22: below about 10 FLOP per byte a product streams its weight, and its rate falls
  with its FLOP per byte (the roofline's memory side), which a mean of neighbours cannot show.
- **a local plane**: weighted least squares over the nearest :data:`PLANE_NEIGHBOURS` points with
  Shepard's weights, read at the call (locally weighted regression of degree 1: Cleveland,
  "Robust locally weighted regression and smoothing scatterplots", JASA 74(368), 1979). It
  follows the slope the neighbours show in size and in FLOP per byte; its value is held within
  the neighbours' rates (no extrapolated growth, as for a :class:`~.profile.Curve`).

Which of the two a surface uses is decided by its own points, so by microbenchmarks only:
leave-one-out, each point predicted from the others (:func:`planar_is_better`). On this machine's
profiles (AVX2, 2026-12-03; one process, two, one beside a busy one) leave-one-out's mean error
was 45% by weighting and 16% by the plane for the forward matrix products, 56% and 23% for their
backward; but 60% and 71% for the depthwise convolutions' backward, whose rates jump with kernel
and stride rather than slope: there weighting is kept.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["IDW_NEIGHBOURS", "PLANE_NEIGHBOURS", "Point", "idw", "planar_is_better", "plane"]

Point = tuple[float, float, float]
"""(log10 size, log10 FLOP per byte, natural log of the rate)."""

IDW_NEIGHBOURS = 4
PLANE_NEIGHBOURS = 8
_EXACT = 1e-12


def _nearest(
    points: Sequence[Point], x: float, y: float | None, k: int
) -> list[tuple[float, Point]]:
    """The ``k`` points nearest (x, y) with their squared distances (by x alone without ``y``;
    equally near ones by their rate)."""
    return sorted(
        (((p[0] - x) ** 2 + (0.0 if y is None else (p[1] - y) ** 2), p) for p in points),
        key=_distance_then_rate,
    )[:k]


def _distance_then_rate(item: tuple[float, Point]) -> tuple[float, float]:
    return item[0], item[1][2]


def idw(points: Sequence[Point], x: float, y: float | None) -> float:
    """The log rate at (x, y) by inverse squared distance over the nearest points (an exact
    point gives its own; without ``y``, by x alone)."""
    near = _nearest(points, x, y, IDW_NEIGHBOURS)
    if near[0][0] < _EXACT:
        return near[0][1][2]
    weights = [1.0 / d for d, _ in near]
    return sum(w * p[2] for w, (_, p) in zip(weights, near, strict=True)) / sum(weights)


def plane(points: Sequence[Point], x: float, y: float) -> float:
    """The log rate at (x, y) on the plane fitted to the nearest points (weights 1/d²), held
    within their rates; inverse-distance weighting where they do not span a plane."""
    near = _nearest(points, x, y, PLANE_NEIGHBOURS)
    if near[0][0] < _EXACT:
        return near[0][1][2]
    # normal equations of sum w (l - a - b dx - c dy)^2 in coordinates centred on the call, so
    # the plane's value there is a
    m = [[0.0] * 4 for _ in range(3)]
    for d, (px, py, lr) in near:
        w, v = 1.0 / d, (1.0, px - x, py - y)
        for i in range(3):
            m[i][3] += w * v[i] * lr
            for j in range(3):
                m[i][j] += w * v[i] * v[j]
    a = _solve_first(m)
    if a is None:
        return idw(points, x, y)
    rates = [p[2] for _, p in near]
    return min(max(a, min(rates)), max(rates))


def _solve_first(m: list[list[float]]) -> float | None:
    """The first unknown of a 3x3 system given as its augmented rows (Gauss-Jordan with partial
    pivoting); ``None`` when it is singular to working precision."""
    scale = max(abs(m[i][i]) for i in range(3)) or 1.0
    for c in range(3):
        pivot = max(range(c, 3), key=lambda r: abs(m[r][c]))
        if abs(m[pivot][c]) < 1e-9 * scale:
            return None
        m[c], m[pivot] = m[pivot], m[c]
        for r in range(3):
            if r != c:
                f = m[r][c] / m[c][c]
                for j in range(c, 4):
                    m[r][j] -= f * m[c][j]
    return m[0][3] / m[0][0]


def planar_is_better(points: Sequence[Point]) -> bool:
    """Whether the local plane predicts each of ``points`` from the others better than
    inverse-distance weighting does (mean relative error of the rate, leave-one-out); with too
    few points to leave one out of a plane's neighbourhood, weighting."""
    if len(points) <= PLANE_NEIGHBOURS:
        return False
    errors: dict[str, list[float]] = {"idw": [], "plane": []}
    for i, (x, y, lr) in enumerate(points):
        rest = [*points[:i], *points[i + 1 :]]
        errors["idw"].append(abs(math.expm1(idw(rest, x, y) - lr)))
        errors["plane"].append(abs(math.expm1(plane(rest, x, y) - lr)))
    return statistics.fmean(errors["plane"]) < statistics.fmean(errors["idw"])
