"""A device's performance profile: what it achieves per operator class, by size, and what each
operator and message costs on top.

One APF and one APM describe a device's roofs, not the rate a given operator reaches under them.
The profile extends :class:`~trainplay.hardware.spec.Peaks` with what a cost model needs to price
operators one by one (DESIGN.md, "One cost model"):

- per operator class and phase (``conv.fwd``, ``norm.bwd``, ...; the classes of
  :mod:`trainplay.workload.opclass`), a :class:`Curve`: the achieved rate (FLOP/s for compute
  classes, bytes/s for memory classes) as a function of the call's size, from a sweep;
- a fixed cost per operator call (``overhead_s``): the dispatcher, autograd's bookkeeping, and on a
  GPU the kernel launch; forward and backward apart, views (which move no data) apart;
- the optimizer step: a fixed cost per parameter tensor and a rate curve by the bytes it streams;
- collectives: all-reduce and point-to-point, a latency and a rate curve by message size, and on
  a CPU the fixed cost of a message between pipeline stages as the schedule sends it
  (``overhead_s["schedule.message"]``, :mod:`trainplay.hardware.measure.messages`);
- the process layout it was measured under (workers, threads per worker): on a CPU two workers
  share the cores and the memory bus, so a profile of one layout does not describe another.

Every curve is *net of its fixed cost*: a sweep point that took ``t`` for a call of size ``s`` is
stored as the rate ``s / (t - fixed)``, so ``fixed + s / rate(s)`` gives back what was measured.
Between sweep points the rate is interpolated linearly in log(size)-log(rate); outside them it is
held at the nearest point's rate (no extrapolated growth).

A compute class's rate depends on the call's shape as much as on its size: a matrix product of
4 rows by a 9216 x 4096 weight streams its weight at a few GB/s while a square one of the same
FLOPs runs near the peak. So compute classes are a :class:`Surface`: the rate as a function of the
FLOPs and the arithmetic intensity (FLOP per byte) of the call, interpolated between the sweep's
points. On a CPU each class also has a hot-cache curve (key ``...@hot``, the call timed back to
back): a call whose data fits in half the footprint the CPU still streams at cache speed
(``cache_bytes``) runs at it, since the operator before it just wrote its input; a larger one at
the cold-cache curve. Matrix products and dense convolutions also have a stale curve (``...@stale``:
the input, or the output's gradient, in the cache, the weight and saved input evicted): a small
call runs at it instead of the hot one when the step streams more than the cache holds between
two uses of its weight (:func:`trainplay.roofline.cost.stale_weights`), and at their warm curve
(``...@warm``: the weight cycled through half the cache, so read from the cache the cores share,
not from the core's own) when it does not: between two uses of a weight a training step runs every
other layer, so no small call finds its weight where a call back to back does.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace
from typing import Any

from trainplay.hardware import interpolate
from trainplay.hardware.errors import SpecError

__all__ = ["Curve", "PerfProfile", "Surface", "rate_curve_from_dict"]


@dataclass(frozen=True, kw_only=True)
class Curve:
    """Achieved rate as a function of size: sweep points, interpolated in log-log."""

    sizes: tuple[float, ...]
    """Sizes of the sweep points (FLOPs or bytes of one call, or bytes of a message), increasing."""
    rates: tuple[float, ...]
    """Rate at each size (FLOP/s or bytes/s), net of the fixed cost."""
    spread: float | None = None
    """Largest coefficient of variation of a point over the sweep's repeats, if repeated."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(float(s) for s in self.sizes))
        object.__setattr__(self, "rates", tuple(float(r) for r in self.rates))
        if not self.sizes or len(self.sizes) != len(self.rates):
            raise SpecError((), "a curve needs as many rates as sizes, at least one")
        if any(b <= a for a, b in zip(self.sizes, self.sizes[1:], strict=False)):
            raise SpecError(("sizes",), "must be strictly increasing")
        if any(not s > 0 for s in self.sizes) or any(not r > 0 for r in self.rates):
            raise SpecError((), "sizes and rates must be positive")

    def rate(self, size: float) -> float:
        """The rate at ``size`` (held constant beyond the sweep's ends)."""
        sizes, rates = self.sizes, self.rates
        if size <= sizes[0]:
            return rates[0]
        if size >= sizes[-1]:
            return rates[-1]
        i = bisect.bisect_right(sizes, size)
        x0, x1 = math.log(sizes[i - 1]), math.log(sizes[i])
        y0, y1 = math.log(rates[i - 1]), math.log(rates[i])
        return math.exp(y0 + (y1 - y0) * (math.log(size) - x0) / (x1 - x0))

    def time_s(self, size: float) -> float:
        """Seconds for ``size`` at this curve's rate (the fixed cost not included)."""
        return size / self.rate(size) if size > 0 else 0.0

    def scaled(self, factor: float) -> Curve:
        return replace(self, rates=tuple(r * factor for r in self.rates))

    def monotone(self) -> Curve:
        """The closest curve (least squares in log rate) whose rate never falls as the size
        grows: pool-adjacent-violators. A bigger GEMM or convolution is never slower per FLOP on
        the same device; a sweep's dips come from mixing shapes, not from size."""
        blocks: list[list[float]] = []  # [sum of log rates, count]
        for rate in self.rates:
            blocks.append([math.log(rate), 1.0])
            while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
                total, count = blocks.pop()
                blocks[-1][0] += total
                blocks[-1][1] += count
        rates: list[float] = []
        for total, count in blocks:
            rates.extend([math.exp(total / count)] * int(count))
        return replace(self, rates=tuple(rates))

    @property
    def best(self) -> float:
        return max(self.rates)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"sizes": list(self.sizes), "rates": list(self.rates)}
        if self.spread is not None:
            data["spread"] = self.spread
        return data

    @classmethod
    def from_dict(cls, data: Any, path: tuple = ()) -> Curve:
        if not isinstance(data, dict) or "sizes" not in data or "rates" not in data:
            raise SpecError(path, "a curve is a mapping with sizes and rates (lists of numbers)")
        try:
            return cls(
                sizes=tuple(data["sizes"]),
                rates=tuple(data["rates"]),
                spread=None if data.get("spread") is None else float(data["spread"]),
            )
        except (TypeError, ValueError) as exc:
            raise SpecError(path, f"malformed curve: {exc}") from None
        except SpecError as exc:
            raise SpecError((*path, *exc.path), exc.reason) from None


@dataclass(frozen=True, kw_only=True)
class Surface:
    """Achieved FLOP/s as a function of a call's FLOPs and its arithmetic intensity: the sweep's
    points in log10-log10 space, read by a local plane or by inverse-distance weighting, whichever
    predicts the surface's own points better (:mod:`trainplay.hardware.interpolate`; an exact
    point gives its own rate; without an intensity, weighting by size alone). For a memory class
    priced by shape (depthwise convolutions) the same in bytes: bytes/s by bytes and FLOP per
    byte."""

    sizes: tuple[float, ...]
    """FLOPs of one call (bytes, for a memory class), per point."""
    intensities: tuple[float, ...]
    """FLOP per byte moved, per point; for a class read by its output map's positions
    (:data:`~trainplay.workload.opclass.BY_POSITIONS`), those positions."""
    rates: tuple[float, ...]
    """FLOP/s (bytes/s, for a memory class), net of the fixed cost, per point."""
    spread: float | None = None

    def __post_init__(self) -> None:
        for name in ("sizes", "intensities", "rates"):
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
        n = len(self.sizes)
        if not n or len(self.intensities) != n or len(self.rates) != n:
            raise SpecError((), "a surface needs as many intensities and rates as sizes")
        if any(not v > 0 for v in (*self.sizes, *self.intensities, *self.rates)):
            raise SpecError((), "sizes, intensities and rates must be positive")
        object.__setattr__(
            self,
            "_points",
            [
                (math.log10(a), math.log10(b), math.log(r))
                for a, b, r in zip(self.sizes, self.intensities, self.rates, strict=True)
            ],
        )

    def rate(self, size: float, intensity: float | None = None) -> float:
        if size <= 0:
            return max(self.rates)
        x = math.log10(size)
        y = math.log10(intensity) if intensity and intensity > 0 else None
        points = self._points  # type: ignore[attr-defined]
        if y is not None and self._planar():
            return math.exp(interpolate.plane(points, x, y))
        return math.exp(interpolate.idw(points, x, y))

    def _planar(self) -> bool:
        """Whether this surface is read by its local plane (decided once, from its points)."""
        chosen = self.__dict__.get("_planar_chosen")
        if chosen is None:
            chosen = interpolate.planar_is_better(self._points)  # type: ignore[attr-defined]
            object.__setattr__(self, "_planar_chosen", chosen)
        return chosen

    def time_s(self, size: float, intensity: float | None = None) -> float:
        return size / self.rate(size, intensity) if size > 0 else 0.0

    def scaled(self, factor: float) -> Surface:
        """The same surface at ``factor`` times its rates; a uniform factor leaves the choice of
        reader (:meth:`_planar`) as it was, so a choice already made is kept, not made again."""
        out = replace(self, rates=tuple(r * factor for r in self.rates))
        if "_planar_chosen" in self.__dict__:
            object.__setattr__(out, "_planar_chosen", self.__dict__["_planar_chosen"])
        return out

    @property
    def best(self) -> float:
        return max(self.rates)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "sizes": list(self.sizes),
            "intensities": list(self.intensities),
            "rates": list(self.rates),
        }
        if self.spread is not None:
            data["spread"] = self.spread
        return data


def rate_curve_from_dict(data: Any, path: tuple = ()) -> Curve | Surface:
    """A :class:`Curve`, or a :class:`Surface` when the data has ``intensities``."""
    if isinstance(data, dict) and "intensities" in data:
        try:
            return Surface(
                sizes=tuple(data["sizes"]),
                intensities=tuple(data["intensities"]),
                rates=tuple(data["rates"]),
                spread=None if data.get("spread") is None else float(data["spread"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SpecError(path, f"malformed surface: {exc}") from None
    return Curve.from_dict(data, path)


@dataclass(frozen=True, kw_only=True)
class PerfProfile:
    """Per-class achieved rates by size, fixed costs, collectives, and the layout measured."""

    dtype: str = "fp32"
    """The datatype the compute classes were measured in."""
    classes: dict[str, Curve | Surface] = field(default_factory=dict)
    """``class.phase`` (or ``class`` for both phases), and ``class.phase:aten-op`` for an operator
    measured on its own -> rate curve (a :class:`Surface` for compute classes); ``...@hot`` the
    same timed on hot caches (CPUs)."""
    cache_bytes: int | None = None
    """The largest footprint this CPU streams at its cache speed
    (:attr:`~trainplay.hardware.measure.coldcache.CacheKnees.hot_bytes`); a call whose data fits
    in half of it is priced at the hot-cache curve."""
    overhead_s: dict[str, float] = field(default_factory=dict)
    """Fixed seconds per call: ``fwd`` and ``bwd`` (an operator inside a training step's forward,
    with autograd recording it, and inside the backward), ``view`` (a view or allocation),
    ``call`` (a bare call outside autograd, which the sweeps' times include),
    ``optimizer_tensor`` (the optimizer's per-parameter work beyond the bytes it streams)."""
    asynchronous: bool = False
    """Whether the host's dispatch overlaps the device's execution (a GPU); then an operator takes
    the larger of its fixed cost and its kernel time, else their sum."""
    allreduce: Curve | None = None
    """All-reduce bus bandwidth (NCCL-tests convention) by message bytes, net of its latency."""
    allreduce_alpha_s: float = 0.0
    p2p: Curve | None = None
    """Point-to-point one-way bandwidth by message bytes, net of its latency."""
    p2p_alpha_s: float = 0.0
    workers: int = 1
    """Workers (processes) on the node when this was measured."""
    threads: int = 1
    """Compute threads per worker when this was measured (CPU)."""
    source: str = "measured"
    """How the profile came to be (``trainplay hw measure`` and when, or the published sources of a
    catalog device)."""
    placement: str | None = None
    """Where the CPUs sat while its operators were timed (:mod:`trainplay.hardware.placement`):
    ``shared`` or ``split`` when every case was timed in one, ``mixed`` when not, ``None`` where
    not probed (several workers, one CPU, a GPU, a profile measured before the probe)."""

    def curve(
        self,
        cls: str,
        phase: str,
        op: str | None = None,
        nbytes: float | None = None,
        stale: bool = False,
    ) -> Curve | Surface | None:
        """The curve of aten operator ``op`` of ``cls`` in ``phase`` where one was measured, else
        for an operator that evaluates an exponential or the like per element its in-place
        sibling's (``silu`` and ``silu_``), else the swept stand-in's
        (:data:`~trainplay.workload.opclass.TRANSCENDENTAL`), else the class's
        in that phase, else the class's own (phases sharing one), else the same of the class that
        stands in for one the profile lacks (:data:`~trainplay.workload.opclass.FALLBACK`); for a
        call of ``nbytes`` that fits in half the effective cache the warm one where the class has it
        (its weight read from the shared cache), else the hot-cache one, or with ``stale`` (a
        device whose data outgrows the cache between two uses of it) a memory class's step one
        (its output written where nothing ran lately, its saved input evicted) and a weight's
        stale one where the class has them."""
        from trainplay.workload.opclass import FALLBACK, TRANSCENDENTAL, TRANSCENDENTAL_STAND_IN

        small = (
            self.cache_bytes is not None and nbytes is not None and nbytes <= self.cache_bytes / 2
        )
        cached = (("@step", "@stale", "@hot") if stale else ("@warm", "@hot")) if small else ()
        keys = []
        for name in (cls, FALLBACK.get(cls)) if cls in FALLBACK else (cls,):
            keys += [f"{name}.{phase}:{op}"] if op is not None else []
            if op in TRANSCENDENTAL and phase in TRANSCENDENTAL_STAND_IN:
                # the same kernel in place or not (the sweep times ``silu_``, a decoder calls
                # ``silu``), else the swept one of them
                sibling = op[:-1] if op.endswith("_") else f"{op}_"
                keys += [f"{name}.{phase}:{sibling}"]
                keys += [f"{name}.{phase}:{TRANSCENDENTAL_STAND_IN[phase]}"]
            keys += [f"{name}.{phase}", name]
        for key in keys:
            for suffix in (*cached, ""):
                got = self.classes.get(key + suffix)
                if got is not None:
                    return got
        return None

    def has_class(self, cls: str) -> bool:
        """Whether this profile measured ``cls`` itself (in some phase), not only a stand-in."""
        return any(key == cls or key.startswith(cls + ".") for key in self.classes)

    def overhead(self, key: str) -> float:
        return self.overhead_s.get(key, 0.0)

    def for_dtype(self, dtype: str, compute_factor: float) -> PerfProfile:
        """This profile for GEMMs in ``dtype``: compute classes scaled by ``compute_factor`` (the
        ratio of the two dtypes' APF), memory classes unchanged (they are rates in bytes)."""
        if dtype == self.dtype:
            return self
        return replace(self.scaled(compute_factor, 1.0, overheads=False), dtype=dtype)

    def scaled(
        self, compute: float, memory: float | None = None, *, overheads: bool = True, note: str = ""
    ) -> PerfProfile:
        """This profile on a device ``compute`` times as fast in the compute classes and
        ``memory`` times as fast in the others (default: ``compute``); with ``overheads``, its
        fixed costs per operator shorter by the compute factor and the optimizer's by the memory
        factor (the core runs the dispatch, memory bounds the optimizer's update). Collectives keep
        their curves: the network did not change. ``note`` is added to :attr:`source`."""
        memory = compute if memory is None else memory
        if compute == 1.0 and memory == 1.0:
            return self
        from trainplay.workload.opclass import COMPUTE_CLASSES

        classes = {
            key: curve.scaled(compute if key.split(".")[0] in COMPUTE_CLASSES else memory)
            for key, curve in self.classes.items()
        }
        fixed = self.overhead_s
        if overheads:
            fixed = {
                key: value / (memory if key.startswith("optimizer") else compute)
                for key, value in fixed.items()
            }
        source = f"{self.source}; {note}" if note else self.source
        return replace(self, classes=classes, overhead_s=fixed, source=source)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "dtype": self.dtype,
            "classes": {k: c.to_dict() for k, c in self.classes.items()},
            "overhead_s": dict(self.overhead_s),
            "asynchronous": self.asynchronous,
            "workers": self.workers,
            "threads": self.threads,
            "source": self.source,
        }
        if self.cache_bytes is not None:
            data["cache_bytes"] = self.cache_bytes
        if self.placement is not None:
            data["placement"] = self.placement
        if self.allreduce is not None:
            data["allreduce"] = self.allreduce.to_dict()
            data["allreduce_alpha_s"] = self.allreduce_alpha_s
        if self.p2p is not None:
            data["p2p"] = self.p2p.to_dict()
            data["p2p_alpha_s"] = self.p2p_alpha_s
        return data

    @classmethod
    def from_dict(cls, data: Any, path: tuple = ()) -> PerfProfile:
        allowed = {
            "dtype",
            "classes",
            "overhead_s",
            "asynchronous",
            "allreduce",
            "allreduce_alpha_s",
            "p2p",
            "p2p_alpha_s",
            "workers",
            "threads",
            "source",
            "cache_bytes",
            "placement",
        }
        if not isinstance(data, dict):
            raise SpecError(path, "a performance profile is a mapping")
        unknown = set(data) - allowed
        if unknown:
            raise SpecError(
                (*path, sorted(unknown)[0]), f"unknown field; allowed: {sorted(allowed)}"
            )
        classes = data.get("classes", {})
        overhead = data.get("overhead_s", {})
        if not isinstance(classes, dict) or not isinstance(overhead, dict):
            raise SpecError(path, "classes and overhead_s are mappings")
        try:
            return cls(
                dtype=str(data.get("dtype", "fp32")),
                classes={
                    str(k): rate_curve_from_dict(v, (*path, "classes", k))
                    for k, v in classes.items()
                },
                overhead_s={str(k): float(v) for k, v in overhead.items()},
                asynchronous=bool(data.get("asynchronous", False)),
                allreduce=(
                    None
                    if data.get("allreduce") is None
                    else Curve.from_dict(data["allreduce"], (*path, "allreduce"))
                ),
                allreduce_alpha_s=float(data.get("allreduce_alpha_s", 0.0)),
                p2p=None
                if data.get("p2p") is None
                else Curve.from_dict(data["p2p"], (*path, "p2p")),
                p2p_alpha_s=float(data.get("p2p_alpha_s", 0.0)),
                workers=int(data.get("workers", 1)),
                threads=int(data.get("threads", 1)),
                source=str(data.get("source", "measured")),
                cache_bytes=None if data.get("cache_bytes") is None else int(data["cache_bytes"]),
                placement=None if data.get("placement") is None else str(data["placement"]),
            )
        except (TypeError, ValueError) as exc:
            raise SpecError(path, f"malformed performance profile: {exc}") from None
