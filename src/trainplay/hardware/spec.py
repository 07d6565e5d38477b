"""The hardware level's values: devices, links, nodes, clusters, and measured peaks.

All are frozen dataclasses with ``to_dict``/``from_dict`` (``from_dict`` is the one place input is
validated: a :class:`SpecError` names the field, and the YAML reader adds file and line). Units are
in the names: FLOP/s, bytes, bytes per second (``_bps``), seconds (``_s``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from trainplay.errors import UsageError
from trainplay.hardware.errors import SpecError
from trainplay.hardware.profile import PerfProfile
from trainplay.report.units import format_number

__all__ = [
    "DTYPES",
    "ClusterSpec",
    "DeviceSpec",
    "LinkSpec",
    "NodeSpec",
    "Peaks",
    "SpecError",
    "Window",
    "Worker",
]

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
"""Datatypes a peak FLOP/s can be given for (``tf32``: fp32 GEMMs on tensor cores)."""


# ----------------------------------------------------------------------------- validation helpers


def _mapping(value: Any, path: tuple, allowed: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(
            path, f"expected a mapping with keys {', '.join(allowed)}, got {_show(value)}"
        )
    for key in value:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; allowed: {', '.join(allowed)}"
            raise SpecError((*path, key), f"unknown field{hint}")
    return value


def _show(value: Any) -> str:
    return repr(value) if not isinstance(value, Mapping | list) else type(value).__name__


def positive(value: Any, path: tuple, *, integer: bool = False, allow_zero: bool = False) -> float:
    """A number > 0 (>= 0 with ``allow_zero``); numeric strings such as ``320e9`` are accepted,
    since YAML 1.1 reads an exponent without a dot or sign as a string."""
    if isinstance(value, bool):
        raise SpecError(path, f"must be a number, got {value!r}")
    if isinstance(value, str):
        try:
            value = float(value.replace("_", ""))
        except ValueError:
            raise SpecError(path, f"must be a number, got {value!r}") from None
    if not isinstance(value, int | float) or value != value:
        raise SpecError(path, f"must be a number, got {_show(value)}")
    if not math.isfinite(value):
        raise SpecError(path, f"must be a finite number, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise SpecError(path, f"must be {bound}, got {format_number(value)}")
    if integer:
        if float(value) != int(value):
            raise SpecError(path, f"must be a whole number, got {format_number(value)}")
        return int(value)
    return float(value)


def _optional(value: Any, path: tuple, check: Callable[[Any, tuple], Any]) -> Any:
    return None if value is None else check(value, path)


def _text(value: Any, path: tuple) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(path, f"must be a non-empty string, got {_show(value)}")
    return value


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None and v != {} and v != []}


# ----------------------------------------------------------------------------- values


@dataclass(frozen=True, kw_only=True)
class Window:
    """When a device can be used, in seconds from the start of the job."""

    from_s: float = 0.0
    """First second the device is available."""
    until_s: float | None = None
    """Second it leaves; ``None``: it stays."""

    def __post_init__(self) -> None:
        if self.until_s is not None and self.until_s <= self.from_s:
            raise SpecError(
                (),
                f"until_s ({format_number(self.until_s)}) must be after from_s "
                f"({format_number(self.from_s)})",
            )

    @classmethod
    def from_dict(cls, data: Any, path: tuple = ()) -> Window:
        data = _mapping(data, path, ("from_s", "until_s"))
        from_s = positive(data.get("from_s", 0), (*path, "from_s"), allow_zero=True)
        until_s = _optional(data.get("until_s"), (*path, "until_s"), positive)
        if until_s is not None and until_s <= from_s:
            raise SpecError(
                (*path, "until_s"),
                f"must be after from_s ({format_number(from_s)}), got {format_number(until_s)}",
            )
        return cls(from_s=from_s, until_s=until_s)

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"from_s": self.from_s, "until_s": self.until_s})


_PEAK_FIELDS = (
    "apf",
    "apf_by_dtype",
    "dtype",
    "apm",
    "apm_copy",
    "apm_triad",
    "apb",
    "alpha_s",
    "beta_bps",
    "r2",
    "p2p_bps",
    "p2p_alpha_s",
    "p2p_beta_bps",
    "p2p_r2",
    "spread",
    "origin",
    "profile",
    "alone",
)


@dataclass(frozen=True, kw_only=True)
class Peaks:
    """Achievable peaks of one worker (MD-Roofline's APF, APM, APB), measured or from a datasheet."""

    apf: float
    """Achievable FLOP/s of dense GEMM in ``dtype``."""
    apm: float
    """Achievable device-memory bandwidth, bytes read + written per second."""
    dtype: str = "fp32"
    """The datatype ``apf`` is for."""
    apf_by_dtype: dict[str, float] = field(default_factory=dict)
    """APF for every datatype measured or listed."""
    apm_copy: float | None = None
    """Bandwidth of a large copy (read + write)."""
    apm_triad: float | None = None
    """Bandwidth of a large triad ``a = b + s*c`` (two reads, one write)."""
    apb: float | None = None
    """All-reduce bus bandwidth (NCCL-tests convention: algorithm bandwidth x 2(n-1)/n); ``None``
    with one worker."""
    alpha_s: float | None = None
    """Latency of the all-reduce alpha-beta fit: ``t = alpha + bus_bytes / beta``."""
    beta_bps: float | None = None
    """Bandwidth of that fit."""
    r2: float | None = None
    """Coefficient of determination of that fit."""
    p2p_bps: float | None = None
    """Best point-to-point bandwidth to the partner rank, one way."""
    p2p_alpha_s: float | None = None
    """Latency of the point-to-point fit ``t = alpha + bytes / beta``."""
    p2p_beta_bps: float | None = None
    """Bandwidth of that fit."""
    p2p_r2: float | None = None
    """Coefficient of determination of that fit."""
    spread: dict[str, float] = field(default_factory=dict)
    """Coefficient of variation of the samples behind each figure."""
    origin: str = "measured"
    """``measured``, ``datasheet`` (a catalog entry) or ``cluster file`` (numbers given there)."""
    profile: PerfProfile | None = None
    """The performance profile: per operator class the achieved rate by size, fixed costs per
    operator, collectives by message size (:mod:`trainplay.hardware.profile`); ``None`` when only
    the peaks are known (then every operator is priced at the roofs)."""
    alone: Peaks | None = None
    """The same worker measured while the other workers of its machine are idle (a CPU's workers
    share its cores, caches and memory bus: one worker alone runs faster than each of several busy
    ones); ``None`` where not measured, or where workers do not share (one GPU each)."""

    def scaled(
        self, compute: float, memory: float | None = None, *, overheads: bool = True, note: str = ""
    ) -> Peaks:
        """These peaks on a device ``compute`` times as fast in arithmetic and ``memory`` times as
        fast in memory traffic (default: ``compute``): APF by the one, APM and its copy and triad
        figures by the other, the profile as :meth:`PerfProfile.scaled` (``overheads``, ``note``).
        The peaks measured alone, if any, scale alike."""
        memory = compute if memory is None else memory
        if compute == 1.0 and memory == 1.0:
            return self
        return replace(
            self,
            apf=self.apf * compute,
            apm=self.apm * memory,
            apf_by_dtype={k: v * compute for k, v in self.apf_by_dtype.items()},
            apm_copy=None if self.apm_copy is None else self.apm_copy * memory,
            apm_triad=None if self.apm_triad is None else self.apm_triad * memory,
            profile=None
            if self.profile is None
            else self.profile.scaled(compute, memory, overheads=overheads, note=note),
            alone=None
            if self.alone is None
            else self.alone.scaled(compute, memory, overheads=overheads, note=note),
        )

    @classmethod
    def from_dict(cls, data: Any, path: tuple = ()) -> Peaks:
        data = _mapping(data, path, _PEAK_FIELDS)
        for required in ("apf", "apm"):
            if required not in data:
                raise SpecError((*path, required), "is required for measured peaks")
        values: dict[str, Any] = {}
        for name in (
            "apf",
            "apm",
            "apm_copy",
            "apm_triad",
            "apb",
            "beta_bps",
            "p2p_bps",
            "p2p_beta_bps",
            "alpha_s",
            "p2p_alpha_s",
        ):
            # a fitted latency can be 0: the fit clamps a negative intercept (see fit_alpha_beta)
            if data.get(name) is not None:
                values[name] = positive(
                    data[name], (*path, name), allow_zero=name.endswith("alpha_s")
                )
        for name in ("r2", "p2p_r2"):
            if data.get(name) is not None:
                values[name] = float(data[name])
        dtype = data.get("dtype", "fp32")
        if dtype not in DTYPES:
            raise SpecError((*path, "dtype"), f"must be one of {', '.join(DTYPES)}, got {dtype!r}")
        by_dtype = _mapping(data.get("apf_by_dtype", {}), (*path, "apf_by_dtype"), DTYPES)
        spread = data.get("spread", {})
        if not isinstance(spread, Mapping):
            raise SpecError(
                (*path, "spread"), "must be a mapping of figure -> coefficient of variation"
            )
        profile = data.get("profile")
        alone = data.get("alone")
        return cls(
            dtype=dtype,
            apf_by_dtype={k: positive(v, (*path, "apf_by_dtype", k)) for k, v in by_dtype.items()},
            spread={str(k): float(v) for k, v in spread.items()},
            origin=str(data.get("origin", "measured")),
            profile=None if profile is None else PerfProfile.from_dict(profile, (*path, "profile")),
            alone=None if alone is None else cls.from_dict(alone, (*path, "alone")),
            **values,
        )

    def to_dict(self) -> dict[str, Any]:
        data = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("profile", "alone")
        }
        if self.profile is not None:
            data["profile"] = self.profile.to_dict()
        if self.alone is not None:
            data["alone"] = self.alone.to_dict()
        return _drop_none(data)

    def for_dtype(self, dtype: str, apf: float, origin: str | None = None) -> Peaks:
        """These peaks for GEMMs in ``dtype`` at ``apf`` FLOP/s (the profile's compute classes
        scaled by the same ratio)."""
        profile = None
        if self.profile is not None:
            profile = self.profile.for_dtype(dtype, apf / self.apf)
        alone = None
        if self.alone is not None:
            alone = self.alone.for_dtype(dtype, apf * self.alone.apf / self.apf, origin)
        return replace(
            self, apf=apf, dtype=dtype, profile=profile, origin=origin or self.origin, alone=alone
        )


@dataclass(frozen=True, kw_only=True)
class DeviceSpec:
    """One kind of device on a node, ``count`` of them, as the catalog or the user describes it."""

    name: str
    """Display name (the catalog type, or the user's name for explicit numbers)."""
    peak_flops: dict[str, float]
    """Dense peak FLOP/s per datatype (datasheet; measured peaks go in ``measured``)."""
    mem_bw_bps: float
    """Peak device-memory bandwidth, bytes per second."""
    mem_bytes: int
    """Device memory."""
    count: int = 1
    """How many such devices the node has: one worker each."""
    type: str | None = None
    """Catalog entry this was built from, if any."""
    available: Window | None = None
    """When the devices can be used (all ``count`` of them); ``None``: always."""
    measured: tuple[Peaks, ...] = ()
    """Measured peaks: none, one for every device, or one per device (``count`` of them)."""
    source: str = "cluster file"
    """Where the numbers come from."""

    def __post_init__(self) -> None:
        if self.measured and len(self.measured) not in (1, self.count):
            raise SpecError(
                ("measured",), f"give 1 or {self.count} (count) entries, got {len(self.measured)}"
            )

    def peaks(self, index: int, dtype: str = "fp32") -> Peaks:
        """Peaks of device ``index`` of this entry for GEMMs in ``dtype``: measured where measured,
        the datasheet's (or the cluster file's) otherwise."""
        listed = self.peak_flops.get(dtype)
        if self.measured:
            measured = self.measured[index if len(self.measured) > 1 else 0]
            if dtype == measured.dtype:
                return measured
            if dtype in measured.apf_by_dtype:
                return measured.for_dtype(dtype, measured.apf_by_dtype[dtype])
            if listed is not None:  # memory and links measured, this dtype's FLOP/s not
                return measured.for_dtype(dtype, listed, f"measured, {dtype} APF listed")
        if listed is None:
            raise UsageError(
                f"{self.name} lists no {dtype} peak (it has {', '.join(self.peak_flops)})"
            )
        flops = listed
        profile = None
        if self.type is not None:  # a catalog device: its published microbenchmark profile
            from trainplay.hardware.published_profiles import catalog_profile

            profile = catalog_profile(self.type, dtype)
        return Peaks(
            apf=flops,
            apm=self.mem_bw_bps,
            dtype=dtype,
            apf_by_dtype=dict(self.peak_flops),
            origin="datasheet" if self.type else "cluster file",
            profile=profile,
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any]
        if self.type is not None:
            data = {"type": self.type, "count": self.count}
            if self.name != self.type:
                data = {"name": self.name, **data}
        else:
            data = {
                "name": self.name,
                "peak_flops": dict(self.peak_flops),
                "mem_bw_bps": self.mem_bw_bps,
                "mem_bytes": self.mem_bytes,
                "count": self.count,
            }
            if self.source != "cluster file":
                data["source"] = self.source
        if self.available is not None:
            data["available"] = self.available.to_dict()
        if self.measured:
            data["measured"] = [p.to_dict() for p in self.measured]
        return data


@dataclass(frozen=True, kw_only=True)
class LinkSpec:
    """A link between devices: bandwidth one way and latency (the alpha-beta model's beta, alpha)."""

    name: str
    """Catalog name, or a description (``custom`` when none is given)."""
    bandwidth_bps: float
    """Bytes per second in one direction."""
    latency_s: float
    """Seconds for a minimal message."""
    type: str | None = None
    """Catalog entry this was built from, if any."""
    source: str = "cluster file"
    """Where the numbers come from."""

    def to_dict(self) -> Any:
        if self.type is not None:
            return self.type
        data: dict[str, Any] = {"bandwidth_bps": self.bandwidth_bps, "latency_s": self.latency_s}
        if self.name != "custom":
            data = {"name": self.name, **data}
        if self.source != "cluster file":
            data["source"] = self.source
        return data


@dataclass(frozen=True, kw_only=True)
class NodeSpec:
    """A machine: its devices and the link between them."""

    name: str
    devices: tuple[DeviceSpec, ...]
    intra_link: LinkSpec | None = None
    """How the node's devices talk to each other; needed when it has more than one."""

    @property
    def device_count(self) -> int:
        return sum(d.count for d in self.devices)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "devices": [d.to_dict() for d in self.devices]}
        if self.intra_link is not None:
            data["intra_link"] = self.intra_link.to_dict()
        return data


@dataclass(frozen=True)
class Worker:
    """One device of a cluster, the unit that runs one process."""

    rank: int
    node: str
    device: DeviceSpec
    index: int
    """Which of its entry's ``count`` devices this is."""

    def peaks(self, dtype: str = "fp32") -> Peaks:
        return self.device.peaks(self.index, dtype)


@dataclass(frozen=True, kw_only=True)
class ClusterSpec:
    """Nodes, their devices, and the links within and between nodes."""

    name: str
    nodes: tuple[NodeSpec, ...]
    inter_link: LinkSpec | None = None
    """How nodes talk to each other; needed when there is more than one node."""

    def workers(self) -> list[Worker]:
        """Every device in node order, numbered as ranks would be."""
        out: list[Worker] = []
        for node in self.nodes:
            for device in node.devices:
                for index in range(device.count):
                    out.append(Worker(len(out), node.name, device, index))
        return out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "nodes": [n.to_dict() for n in self.nodes]}
        if self.inter_link is not None:
            data["inter_link"] = self.inter_link.to_dict()
        return data
