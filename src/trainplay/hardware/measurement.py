"""The result of ``trainplay hw measure``: every worker's measured peaks, and the cluster it implies."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from typing import Any

from trainplay.hardware import catalog
from trainplay.hardware.spec import ClusterSpec, DeviceSpec, LinkSpec, NodeSpec, Peaks, SpecError

__all__ = ["Measurement", "WorkerPeaks", "device_of"]


_WORKER_FIELDS = (
    "rank",
    "host",
    "device",
    "device_type",
    "threads",
    "apf_gemm_size",
    "apm_tensor_bytes",
    "mem_bytes",
)


@dataclass(frozen=True, kw_only=True)
class WorkerPeaks:
    """One worker (one process, one device) and the peaks it measured."""

    rank: int
    host: str
    device: str
    """What ran it: a GPU's name, or the CPU model and thread count."""
    device_type: str
    """``cpu`` or ``cuda``."""
    threads: int
    apf_gemm_size: int
    """Matrix size at which APF was reached."""
    apm_tensor_bytes: int
    """Size of each tensor the stream kernels used."""
    mem_bytes: int
    """Device memory this worker has (a CPU worker: its share of the RAM)."""
    peaks: Peaks
    """APF, APM, APB and the alpha-beta fits, in FLOP/s, bytes/s and seconds."""

    def to_dict(self) -> dict[str, Any]:
        """Flat, as the JSON contract has it: the worker's fields and every peak field
        (``null`` where not measured, such as ``apb`` with one worker)."""
        peaks = {
            f.name: getattr(self.peaks, f.name)
            for f in fields(Peaks)
            if f.name not in ("origin", "profile", "alone")
        }
        if self.peaks.profile is not None:
            peaks["profile"] = self.peaks.profile.to_dict()
        return {**{name: getattr(self, name) for name in _WORKER_FIELDS}, **peaks}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerPeaks:
        worker = {k: data[k] for k in _WORKER_FIELDS}
        peaks = Peaks.from_dict(
            {k: v for k, v in data.items() if k not in _WORKER_FIELDS and v is not None}
        )
        return cls(**worker, peaks=peaks)


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """All workers of one ``trainplay hw measure`` run."""

    workers: tuple[WorkerPeaks, ...]
    backend: str
    quick: bool
    seconds: float
    """Wall time of the measurement, launch included."""
    torch_version: str
    measured_at: str
    """ISO 8601 time the measurement finished."""
    reference: dict[str, float] | None = None
    """The machine's reference rates right after it (:mod:`trainplay.hardware.drift`)."""
    pooled_from: tuple[str, ...] = ()
    """When each measurement pooled into this one finished, oldest first
    (:mod:`trainplay.hardware.moments`); empty for one measurement."""

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "workers"}
        if self.reference is None:
            del data["reference"]
        if self.pooled_from:
            data["pooled_from"] = list(self.pooled_from)
        else:
            del data["pooled_from"]
        data["workers"] = [w.to_dict() for w in self.workers]
        data["world_size"] = len(self.workers)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        try:
            return cls(
                workers=tuple(WorkerPeaks.from_dict(w) for w in data["workers"]),
                backend=data["backend"],
                quick=data["quick"],
                seconds=data["seconds"],
                torch_version=data["torch_version"],
                measured_at=data["measured_at"],
                reference=data.get("reference"),
                pooled_from=tuple(str(t) for t in data.get("pooled_from", ())),
            )
        except (KeyError, TypeError) as exc:
            raise SpecError((), f"not a trainplay measurement ({exc})") from None

    def with_overhead(self, key: str, seconds: float) -> Measurement:
        """This measurement with every worker's profile carrying the fixed cost ``key`` (one
        timed after the sweep, as ``hw measure`` times the training loop); a worker without a
        profile is left as it is."""

        def fixed(w: WorkerPeaks) -> WorkerPeaks:
            profile = w.peaks.profile
            if profile is None:
                return w
            overheads = {**profile.overhead_s, key: seconds}
            return replace(
                w, peaks=replace(w.peaks, profile=replace(profile, overhead_s=overheads))
            )

        return replace(self, workers=tuple(fixed(w) for w in self.workers))

    def to_cluster(self, name: str = "local", alone: Measurement | None = None) -> ClusterSpec:
        """The cluster these workers form, with each device's measured peaks beside it.

        ``alone``: one worker of the same host measured while the others idle; each CPU worker of
        that host carries its figures as :attr:`~trainplay.hardware.spec.Peaks.alone`.

        A GPU whose name matches a catalog entry keeps its datasheet numbers; any other device
        (a CPU) gets its measured APF and APM as its peaks: built from measurement, not guessed.
        Links within a node come from the point-to-point fit, between nodes from the all-reduce fit.
        """
        hosts = list(dict.fromkeys(w.host for w in self.workers))
        nodes = []
        for host in hosts:
            mine = [w for w in self.workers if w.host == host]
            solo = [w.peaks for w in (alone.workers if alone else ()) if w.host == host]
            devices = tuple(device_of(w, solo[0] if solo else None) for w in mine)
            intra = None
            if len(mine) > 1:
                fitted = [w.peaks for w in mine if w.peaks.p2p_beta_bps]
                intra = LinkSpec(
                    name=f"measured {self.backend} point-to-point",
                    bandwidth_bps=min(p.p2p_beta_bps for p in fitted),
                    latency_s=max(max(p.p2p_alpha_s or 0.0 for p in fitted), 1e-9),
                    source=f"trainplay hw measure, {self.measured_at}",
                )
            nodes.append(NodeSpec(name=host, devices=devices, intra_link=intra))
        inter = None
        if len(hosts) > 1:
            slowest = min((w.peaks for w in self.workers), key=lambda p: p.beta_bps or float("inf"))
            inter = LinkSpec(
                name=f"measured {self.backend} all-reduce",
                bandwidth_bps=slowest.beta_bps,
                latency_s=max(slowest.alpha_s or 0.0, 1e-9),
                source=f"trainplay hw measure, {self.measured_at}",
            )
        return ClusterSpec(name=name, nodes=tuple(nodes), inter_link=inter)


def device_of(worker: WorkerPeaks, alone: Peaks | None = None) -> DeviceSpec:
    """The device a worker measured, with its peaks beside it (see :meth:`Measurement.to_cluster`);
    a CPU worker with ``alone``, its figures while its siblings idle."""
    peaks = worker.peaks
    if alone is not None and worker.device_type == "cpu":
        peaks = replace(peaks, alone=alone)
    if worker.device_type == "cuda":
        try:
            base = catalog.device(worker.device.replace("NVIDIA ", "").split()[0])
            return DeviceSpec(
                name=base.name,
                type=base.type,
                peak_flops=base.peak_flops,
                mem_bw_bps=base.mem_bw_bps,
                mem_bytes=base.mem_bytes,
                measured=(peaks,),
                source=base.source,
            )
        except SpecError:
            pass
    return DeviceSpec(
        name=f"{worker.device_type}-rank{worker.rank}",
        peak_flops=dict(peaks.apf_by_dtype),
        mem_bw_bps=peaks.apm,
        mem_bytes=worker.mem_bytes,
        measured=(peaks,),
        source=f"measured: {worker.device}",
    )
