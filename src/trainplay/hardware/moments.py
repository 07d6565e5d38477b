"""One process layout measured at several moments, pooled: the machine's usual speed, not the
speed of one moment.

A sweep already takes each case's median over passes a sweep apart (about twenty minutes on the
project's 2-vCPU VM, :mod:`trainplay.hardware.measure.passes`). A shared VM's speed also moves
over hours. Two profiles of this host's one-process layout (``1x2@shared``), measured the same
way three hours apart on 2026-12-07 (06:14-06:37 and 09:18-09:39), compared point by point:
over their 1,625 common sweep points the later one ran a median 7% faster; by class, the compute
classes' medians 3-18% faster, the cold-cache memory classes' 18-49%, and its fixed costs per
call 3-28% shorter. Priced on either one alone, the same measured
training steps came out 3.5 to 6 MAPE points apart (README, held-out-30 to -32 priced again).

So ``trainplay hw measure`` keeps a layout's last :data:`MOMENTS` measurements and ``local`` prices
with them pooled (:func:`pooled`): each sweep point the median of its **times** over the
measurements that timed it (a point of the sweep only some of them had keeps theirs), each fixed
cost and latency its median, each peak rate the rate of its median time, and the cache footprint
(``cache_bytes``, a knee of a bandwidth sweep over footprints a factor of two apart) the median of
the measured ones, the lower of the middle two on a tie, so it stays a footprint one of them found.
Until 2026-12-07 the latest measurement's footprint stood alone: the two-worker layout's knees of
09:51, 12:26 and 19:24 that day were 8, 8 and 16 MiB and it was priced at 16, the one worker
alone's 16, 16 and 8 and priced at 8; the footprint decides whether a stage's weights are priced
stale (:func:`trainplay.roofline.cost.stale_weights`). It is calibration from
the same microbenchmarks, repeated: nothing in it comes from a workload. How far the measurements
lay apart is said with the profile (:func:`moved`), not hidden; ``--fresh`` starts a layout's pool
over (after a change to the machine that its fingerprint does not see).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from trainplay.hardware.measurement import Measurement
from trainplay.hardware.profile import Curve, PerfProfile, Surface
from trainplay.hardware.spec import Peaks

__all__ = ["MOMENTS", "described", "moved", "poolable", "pooled"]

MOMENTS = 3
"""A layout's measurements pooled: the last three, so the median of a point's times is one that
some measurement timed and one wild moment does not move it."""

_RATES = ("apf", "apm", "apm_copy", "apm_triad", "apb", "beta_bps", "p2p_bps", "p2p_beta_bps")
_LATENCIES = ("alpha_s", "p2p_alpha_s")


def _rate(rates: Sequence[float]) -> float:
    """The rate of the median time: ``1 / median(1 / rate)``."""
    return 1.0 / statistics.median(1.0 / r for r in rates)


def _points(curve: Curve | Surface) -> dict[tuple, float]:
    """A curve's points by (size, intensity, how many alike before it) -> rate."""
    intensities = getattr(curve, "intensities", (None,) * len(curve.sizes))
    seen: dict[tuple, int] = defaultdict(int)
    out = {}
    for size, intensity, rate in zip(curve.sizes, intensities, curve.rates, strict=True):
        at = (size, intensity)
        out[(*at, seen[at])] = rate
        seen[at] += 1
    return out


def _by_point(curves: Sequence[Curve | Surface]) -> dict[tuple, list[float]]:
    """Each point of any of ``curves`` -> its rates over the curves that have it."""
    by_point: dict[tuple, list[float]] = defaultdict(list)
    for curve in curves:
        for point, rate in _points(curve).items():
            by_point[point].append(rate)
    return by_point


def _pooled_curve(curves: Sequence[Curve | Surface]) -> Curve | Surface:
    """Each point the rate of its median time over the curves that have it."""
    by_point = _by_point(curves)
    order = sorted(by_point, key=lambda p: (p[0], p[1] or 0.0, p[2]))
    spreads = [c.spread for c in curves if c.spread is not None]
    spread = max(spreads) if spreads else None
    rates = tuple(_rate(by_point[p]) for p in order)
    if isinstance(curves[-1], Surface):
        return Surface(
            sizes=tuple(p[0] for p in order),
            intensities=tuple(p[1] for p in order),
            rates=rates,
            spread=spread,
        )
    return Curve(sizes=tuple(p[0] for p in order), rates=rates, spread=spread)


def _pooled_profile(profiles: Sequence[PerfProfile], note: str) -> PerfProfile:
    latest = profiles[-1]
    keys = dict.fromkeys(k for p in profiles for k in p.classes)
    classes = {k: _pooled_curve([p.classes[k] for p in profiles if k in p.classes]) for k in keys}
    fixed = dict.fromkeys(k for p in profiles for k in p.overhead_s)
    overhead_s = {
        k: statistics.median(p.overhead_s[k] for p in profiles if k in p.overhead_s) for k in fixed
    }
    links = {}
    for name in ("allreduce", "p2p"):
        measured = [p for p in profiles if getattr(p, name) is not None]
        if measured:
            links[name] = _pooled_curve([getattr(p, name) for p in measured])
            links[f"{name}_alpha_s"] = statistics.median(
                getattr(p, f"{name}_alpha_s") for p in measured
            )
    footprints = [p.cache_bytes for p in profiles if p.cache_bytes is not None]
    return replace(
        latest,
        classes=classes,
        overhead_s=overhead_s,
        source=f"{latest.source}; {note}",
        cache_bytes=statistics.median_low(footprints) if footprints else None,
        **links,
    )


def _pooled_peaks(peaks: Sequence[Peaks], note: str) -> Peaks:
    latest = peaks[-1]
    values: dict = {}
    for name in (*_RATES, *_LATENCIES):
        known = [getattr(p, name) for p in peaks if getattr(p, name) is not None]
        if known:
            values[name] = _rate(known) if name in _RATES else statistics.median(known)
    dtypes = dict.fromkeys(k for p in peaks for k in p.apf_by_dtype)
    values["apf_by_dtype"] = {
        k: _rate([p.apf_by_dtype[k] for p in peaks if k in p.apf_by_dtype]) for k in dtypes
    }
    spreads = dict.fromkeys(k for p in peaks for k in p.spread)
    values["spread"] = {k: max(p.spread[k] for p in peaks if k in p.spread) for k in spreads}
    profiles = [p.profile for p in peaks if p.profile is not None]
    if profiles:
        values["profile"] = _pooled_profile(profiles, note)
    return replace(latest, **values)


def poolable(earlier: Measurement, later: Measurement) -> bool:
    """Whether two measurements of one cached layout measured alike: the same backend, sweep
    (short or full), workers, threads each and placement of the CPUs."""
    a, b = earlier.workers, later.workers

    def placement(m: Measurement) -> str | None:
        profile = m.workers[0].peaks.profile
        return None if profile is None else profile.placement

    return (
        earlier.backend == later.backend
        and earlier.quick == later.quick
        and len(a) == len(b)
        and all(x.threads == y.threads and x.host == y.host for x, y in zip(a, b, strict=True))
        and placement(earlier) == placement(later)
    )


def moved(measurements: Sequence[Measurement]) -> tuple[float, float]:
    """How far the measurements' sweep points lay from their pooled times: per point of rank 0
    timed by more than one of them, the farthest ``|t / median(t) - 1|``; the median and the
    largest of that over the points (0, 0 with fewer than two)."""
    profiles = [m.workers[0].peaks.profile for m in measurements]
    profiles = [p for p in profiles if p is not None]
    apart: list[float] = []
    for key in dict.fromkeys(k for p in profiles for k in p.classes):
        for rates in _by_point([p.classes[key] for p in profiles if key in p.classes]).values():
            times = [1.0 / r for r in rates]
            if len(times) > 1:
                middle = statistics.median(times)
                apart.append(max(abs(t / middle - 1) for t in times))
    return (statistics.median(apart), max(apart)) if apart else (0.0, 0.0)


def described(measurements: Sequence[Measurement]) -> str:
    """What pooling ``measurements`` (oldest first) does, and how far apart they lay."""
    if len(measurements) == 1:
        return f"one measurement ({measurements[0].measured_at}), not pooled"
    typical, largest = moved(measurements)
    times = ", ".join(m.measured_at for m in measurements)
    return (
        f"pooled over {len(measurements)} measurements ({times}): each sweep point the median "
        f"of their times; the farthest of them lay a median {typical:.1%} from it over the points, "
        f"{largest:.0%} at the most"
    )


def pooled(measurements: Sequence[Measurement]) -> Measurement:
    """``measurements`` of one layout (oldest first, :func:`poolable`) as one: the latest's
    description, each figure pooled over all of them; one measurement is returned as it is."""
    if len(measurements) == 1:
        return measurements[0]
    latest = measurements[-1]
    if not all(poolable(m, latest) for m in measurements):
        raise ValueError("pooled measurements must be of one layout, measured alike")
    times = [m.measured_at for m in measurements]
    note = described(measurements)
    workers = tuple(
        replace(w, peaks=_pooled_peaks([m.workers[i].peaks for m in measurements], note))
        for i, w in enumerate(latest.workers)
    )
    references = [m.reference for m in measurements if m.reference]
    reference = None
    if references:
        known = {k: [r[k] for r in references if r.get(k)] for k in references[-1]}
        reference = {k: _rate(v) for k, v in known.items() if v}
    return replace(latest, workers=workers, reference=reference, pooled_from=tuple(times))
