"""MD-Roofline's core: intensities, the plane a layer is judged on, its bound, and its times.

For a layer (or a whole iteration) with ``F`` FLOPs, ``M`` bytes of device-memory traffic and ``P``
bytes communicated, against achievable peaks APF (FLOP/s), APM (bytes/s) and APB (bytes/s)
(Miao et al., "MD-Roofline", IEEE ISCC 2022; DESIGN.md, "MD-Roofline, precisely"):

====================  ===========  =======================  ================  ============
plane                 x axis       roof                     ridge             used when
====================  ===========  =======================  ================  ============
intra-device          A = F/M      min(APF, APM·A)          A_max = APF/APM   always
comm-to-memory        O = P/M      min(APB, APM·O)          O_max = APB/APM   A < A_max
comm-to-FLOPs         C = P/F      min(APB, APF·C)          C_max = APB/APF   A >= A_max
====================  ===========  =======================  ================  ============

Bound: on the memory side (A < A_max) the layer is communication-bound when O > O_max, else
memory-bound; on the compute side it is communication-bound when C > C_max, else compute-bound.
This is the same as naming the largest of t_compute = F/APF, t_memory = M/APM, t_comm = P/APB
(ties go to compute, then memory): ``bound_by_times`` states it that way and the tests hold the two
to each other. With nothing to communicate (``P = 0``) only the intra-device plane applies.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BOUNDS",
    "PLANES",
    "Point",
    "SystemPeaks",
    "bound_by_times",
    "locate",
]

BOUNDS = ("compute", "memory", "communication")
PLANES = ("intra-device", "comm-to-memory", "comm-to-flops")


@dataclass(frozen=True)
class SystemPeaks:
    """The achievable peaks a synchronous job runs at: the slowest worker's in each dimension."""

    apf: float
    """FLOP/s."""
    apm: float
    """Device-memory bytes/s."""
    apb: float | None = None
    """Communication bytes/s of the collective as run; ``None`` with a single worker."""

    def __post_init__(self) -> None:
        for name in ("apf", "apm", "apb"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive, got {value}")

    @property
    def a_max(self) -> float:
        """Ridge of the intra-device plane (FLOP/byte)."""
        return self.apf / self.apm

    @property
    def o_max(self) -> float | None:
        """Ridge of the comm-to-memory plane (communicated byte per memory byte)."""
        return None if self.apb is None else self.apb / self.apm

    @property
    def c_max(self) -> float | None:
        """Ridge of the comm-to-FLOPs plane (communicated byte per FLOP)."""
        return None if self.apb is None else self.apb / self.apf


@dataclass(frozen=True)
class Point:
    """Where one layer (or iteration) sits in MD-Roofline."""

    flops: float
    """F."""
    mem_bytes: float
    """M."""
    comm_bytes: float
    """P."""
    a: float
    """A = F/M, FLOP per memory byte."""
    o: float
    """O = P/M, communicated bytes per memory byte."""
    c: float
    """C = P/F, communicated bytes per FLOP."""
    plane: str
    """The plane the bound is read from."""
    bound: str
    """compute | memory | communication."""
    t_compute_s: float
    t_memory_s: float
    t_comm_s: float

    @property
    def roofline_s(self) -> float:
        """Time if the three dimensions overlap perfectly: the largest of the three."""
        return max(self.t_compute_s, self.t_memory_s, self.t_comm_s)

    @property
    def roof_flops(self) -> float:
        """The intra-device roof at this layer's intensity: min(APF, APM·A), as FLOP/s."""
        return self.flops / max(self.t_compute_s, self.t_memory_s) if self.flops else 0.0


def _ratio(num: float, den: float) -> float:
    return num / den if den else (float("inf") if num else 0.0)


def bound_by_times(t_compute_s: float, t_memory_s: float, t_comm_s: float) -> str:
    """The largest of the three times names the bound (ties: compute, then memory)."""
    if t_comm_s > max(t_compute_s, t_memory_s):
        return "communication"
    return "compute" if t_compute_s >= t_memory_s else "memory"


def locate(flops: float, mem_bytes: float, comm_bytes: float, peaks: SystemPeaks) -> Point:
    """Intensities, plane, bound and times of one layer against ``peaks``, by the planes."""
    if comm_bytes and peaks.apb is None:
        raise ValueError(
            "communication without a communication peak (APB): measure two or more workers"
        )
    a, o, c = _ratio(flops, mem_bytes), _ratio(comm_bytes, mem_bytes), _ratio(comm_bytes, flops)
    compute_side = a >= peaks.a_max
    if not comm_bytes:
        plane = "intra-device"
        bound = "compute" if compute_side else "memory"
    elif compute_side:
        plane = "comm-to-flops"
        bound = "communication" if c > peaks.c_max else "compute"
    else:
        plane = "comm-to-memory"
        bound = "communication" if o > peaks.o_max else "memory"
    return Point(
        flops=flops,
        mem_bytes=mem_bytes,
        comm_bytes=comm_bytes,
        a=a,
        o=o,
        c=c,
        plane=plane,
        bound=bound,
        t_compute_s=flops / peaks.apf,
        t_memory_s=mem_bytes / peaks.apm,
        t_comm_s=comm_bytes / peaks.apb if comm_bytes else 0.0,
    )
