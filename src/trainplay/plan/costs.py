"""What a block costs on a device, what a cut costs on a link, what an all-reduce costs on a ring.

The planner prices everything from MD-Roofline (DESIGN.md, "MD-Roofline, precisely") with each
device's own achievable peaks:

- **Blocks.** The workload is profiled at two batch sizes; every per-block quantity (FLOPs, bytes,
  activation and saved bytes) is taken as affine in the number of samples, ``fixed + per_sample·m``
  (parameter reads are the fixed part, activations the per-sample part). A block's forward on a
  device with peaks APF, APM takes ``max(F(m)/APF, M(m)/APM)`` — the intra-device roofline; so does
  its backward.
- **Cuts.** Sending a micro-batch's activation from one stage's device to the next costs
  ``alpha + bytes/beta`` on the link between them (the intra-node link, or the measured
  point-to-point bandwidth when both devices measured one, or the inter-node link); its gradient
  comes back over the same link in the other direction (links are full duplex).
- **Data parallelism.** A stage's gradients are all-reduced over its replicas with a ring:
  ``2(R-1)·alpha + 2(R-1)/R · bytes / beta``, beta the slowest link of the ring (Thakur,
  Rabenseifner and Gropp, "Optimization of collective communication operations in MPICH", 2005);
  when every replica measured an all-reduce bus bandwidth (APB) that is used as beta.
- **The optimizer step** streams parameters, gradients and state once: memory-bound at APM
  (``OPTIMIZERS`` in :mod:`trainplay.roofline.analysis`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from trainplay.errors import UsageError
from trainplay.hardware.spec import ClusterSpec
from trainplay.roofline.analysis import OPTIMIZERS
from trainplay.workload.stats import WorkloadProfile

__all__ = ["AFFINE_KEYS", "BlockCosts", "CostModel", "Device", "devices_of"]

AFFINE_KEYS = (
    "fwd_flops",
    "bwd_flops",
    "fwd_bytes",
    "bwd_bytes",
    "activation_bytes",
    "saved_bytes",
)
"""Per-block quantities that grow with the number of samples."""


@dataclass(frozen=True, kw_only=True)
class BlockCosts:
    """The model's blocks as affine functions of the micro-batch size: ``fixed + per_sample·m``."""

    model: str
    dtype: str
    names: tuple[str, ...]
    """Block names in execution order (the pipeline-cuttable units)."""
    fixed: dict[str, tuple[float, ...]]
    """Per key of :data:`AFFINE_KEYS`: the part that does not depend on the samples."""
    per_sample: dict[str, tuple[float, ...]]
    """Per key of :data:`AFFINE_KEYS`: the part each sample adds."""
    param_bytes: tuple[int, ...]
    """Parameter bytes each block owns (training dtype)."""
    input_bytes_per_sample: float = 0.0
    """Bytes of one sample of the model's input (what the first stage holds per sample)."""
    largest_param_bytes: tuple[int, ...] = ()
    """Per block, its largest parameter (training dtype): a micro-batch's fresh gradient of it
    exists beside the accumulated one (``plan/memory.py``); empty when not known."""

    @property
    def n(self) -> int:
        return len(self.names)

    @classmethod
    def from_profiles(
        cls, small: WorkloadProfile, large: WorkloadProfile, input_bytes_per_sample: float = 0.0
    ) -> BlockCosts:
        """Fit each block's quantities through two profiles of the same model at two batch sizes."""
        if small.granularity != "blocks" or large.granularity != "blocks":
            raise UsageError("the planner needs block-granularity profiles")
        names = tuple(x.name for x in small.layers)
        if names != tuple(x.name for x in large.layers) or small.batch_size >= large.batch_size:
            raise UsageError("fit needs two profiles of one model at increasing batch sizes")
        db = large.batch_size - small.batch_size
        fixed: dict[str, tuple[float, ...]] = {}
        per_sample: dict[str, tuple[float, ...]] = {}
        for key in AFFINE_KEYS:
            slopes, bases = [], []
            for a, b in zip(small.layers, large.layers, strict=True):
                va, vb = getattr(a, key), getattr(b, key)
                slope = max(0.0, (vb - va) / db)
                slopes.append(slope)
                bases.append(max(0.0, va - slope * small.batch_size))
            fixed[key], per_sample[key] = tuple(bases), tuple(slopes)
        return cls(
            model=small.model,
            dtype=small.dtype,
            names=names,
            fixed=fixed,
            per_sample=per_sample,
            param_bytes=tuple(x.param_bytes for x in small.layers),
            input_bytes_per_sample=input_bytes_per_sample,
        )

    def at(self, key: str, m: int) -> list[float]:
        """Per block, ``key`` for a micro-batch of ``m`` samples."""
        return [f + s * m for f, s in zip(self.fixed[key], self.per_sample[key], strict=True)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "dtype": self.dtype,
            "names": list(self.names),
            "fixed": {k: list(v) for k, v in self.fixed.items()},
            "per_sample": {k: list(v) for k, v in self.per_sample.items()},
            "param_bytes": list(self.param_bytes),
            "input_bytes_per_sample": self.input_bytes_per_sample,
            "largest_param_bytes": list(self.largest_param_bytes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BlockCosts:
        return cls(
            model=data["model"],
            dtype=data["dtype"],
            names=tuple(data["names"]),
            fixed={k: tuple(v) for k, v in data["fixed"].items()},
            per_sample={k: tuple(v) for k, v in data["per_sample"].items()},
            param_bytes=tuple(data["param_bytes"]),
            input_bytes_per_sample=data.get("input_bytes_per_sample", 0.0),
            largest_param_bytes=tuple(data.get("largest_param_bytes", ())),
        )


@dataclass(frozen=True, kw_only=True)
class Device:
    """One device of the cluster as the planner sees it."""

    id: str
    """``node/name:k``, the k-th device of that name on the node; unique in the cluster."""
    type: str
    """Catalog type or the cluster file's name for the device."""
    node: str
    apf: float
    """Achievable FLOP/s at the training dtype."""
    apm: float
    """Achievable device-memory bytes/s."""
    mem_bytes: int
    """Memory capacity."""
    apb: float | None = None
    """Measured all-reduce bus bandwidth, if measured."""
    alpha_s: float | None = None
    """Measured all-reduce latency, if measured."""
    p2p_bps: float | None = None
    """Measured point-to-point bandwidth within its node, if measured."""
    p2p_alpha_s: float | None = None
    window: tuple[float, float | None] = (0.0, None)
    """Availability: from_s, until_s (None: until the job ends)."""

    @property
    def klass(self) -> tuple:
        """Devices with the same class are interchangeable for the planner."""
        return (self.node, self.type, self.apf, self.apm, self.mem_bytes, self.apb, self.p2p_bps)


def devices_of(cluster: ClusterSpec, dtype: str) -> list[Device]:
    """Every worker of ``cluster`` with its peaks at ``dtype`` (measured where measured)."""
    out = []
    seen: dict[tuple[str, str], int] = {}
    for w in cluster.workers():
        p = w.peaks(dtype)
        window = w.device.available
        k = seen.get((w.node, w.device.name), 0)  # two entries of one type on a node: keep counting
        seen[(w.node, w.device.name)] = k + 1
        out.append(
            Device(
                id=f"{w.node}/{w.device.name}:{k}",
                type=w.device.name,
                node=w.node,
                apf=p.apf,
                apm=p.apm,
                mem_bytes=w.device.mem_bytes,
                apb=p.apb,
                alpha_s=p.alpha_s,
                p2p_bps=p.p2p_beta_bps,
                p2p_alpha_s=p.p2p_alpha_s,
                window=(0.0, None) if window is None else (window.from_s, window.until_s),
            )
        )
    return out


@dataclass(eq=False)
class CostModel:
    """Prices ranges of blocks on devices, cuts on links, all-reduces on rings (memoised)."""

    blocks: BlockCosts
    cluster: ClusterSpec
    optimizer: str = "sgd"
    _links: dict[str, tuple[float, float] | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise UsageError(
                f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}"
            )
        self._links = {n.name: _pair(n.intra_link) for n in self.cluster.nodes}
        self._inter = _pair(self.cluster.inter_link)
        self._prefix = cache(self._prefix_uncached)
        self._cum = _cumulative(self.blocks)
        self._per_sample: dict[tuple[float, float], float] = {}
        self.memo: dict[tuple, Any] = {}
        """Stage prices by (peaks, memory, blocks, micro-batch, micro-batches held, recompute)."""

    # ------------------------------------------------------------------ blocks

    def _prefix_uncached(self, apf: float, apm: float, m: int) -> tuple[list[float], list[float]]:
        ff, fb = self.blocks.at("fwd_flops", m), self.blocks.at("fwd_bytes", m)
        bf, bb = self.blocks.at("bwd_flops", m), self.blocks.at("bwd_bytes", m)
        fwd, bwd = [0.0], [0.0]
        for i in range(self.blocks.n):
            fwd.append(fwd[-1] + max(ff[i] / apf, fb[i] / apm))
            bwd.append(bwd[-1] + max(bf[i] / apf, bb[i] / apm))
        return fwd, bwd

    def per_sample_s(self, device: Device) -> float:
        """A lower bound on the forward and backward seconds each sample adds on ``device``: the
        per-sample parts of every block at the device's roofline (``max(a+b, c+d) >= max(b, d)``)."""
        key = (device.apf, device.apm)
        if key not in self._per_sample:
            ps = self.blocks.per_sample
            self._per_sample[key] = sum(
                max(ps[f][i] / device.apf, ps[b][i] / device.apm)
                for f, b in (("fwd_flops", "fwd_bytes"), ("bwd_flops", "bwd_bytes"))
                for i in range(self.blocks.n)
            )
        return self._per_sample[key]

    def fwd_s(self, device: Device, m: int, first: int, end: int) -> float:
        """Forward of blocks ``[first, end)`` for ``m`` samples on ``device``."""
        fwd, _ = self._prefix(device.apf, device.apm, m)
        return fwd[end] - fwd[first]

    def bwd_s(self, device: Device, m: int, first: int, end: int) -> float:
        _, bwd = self._prefix(device.apf, device.apm, m)
        return bwd[end] - bwd[first]

    def range_sum(self, key: str, m: int, first: int, end: int) -> float:
        """``key`` (an affine key or ``param_bytes``) summed over blocks ``[first, end)``."""
        cum = self._cum
        if key == "param_bytes":
            return cum["param_bytes"][end] - cum["param_bytes"][first]
        fixed, per = cum[key + ":fixed"], cum[key + ":per"]
        return fixed[end] - fixed[first] + m * (per[end] - per[first])

    def activation_bytes(self, cut: int, m: int) -> float:
        """Bytes crossing a cut placed after block ``cut - 1`` for ``m`` samples."""
        i = cut - 1
        return (
            self.blocks.fixed["activation_bytes"][i]
            + m * (self.blocks.per_sample["activation_bytes"][i])
        )

    # ------------------------------------------------------------------ links

    def link(self, a: Device, b: Device) -> tuple[float, float]:
        """(bytes/s, latency s) of the path from ``a`` to ``b``."""
        if a.node == b.node:
            if a.p2p_bps and b.p2p_bps:
                return min(a.p2p_bps, b.p2p_bps), max(a.p2p_alpha_s or 0.0, b.p2p_alpha_s or 0.0)
            link = self._links.get(a.node)
        else:
            link = self._inter
        if link is None:
            where = f"node {a.node!r} has no intra_link" if a.node == b.node else "no inter_link"
            raise UsageError(f"cluster {self.cluster.name!r}: {where}; add one to the cluster file")
        return link

    def send_s(self, a: Device, b: Device, nbytes: float) -> float:
        bps, alpha = self.link(a, b)
        return alpha + nbytes / bps if nbytes else 0.0

    def allreduce_s(self, ring: tuple[Device, ...], nbytes: float) -> float:
        """Ring all-reduce of ``nbytes`` over ``ring`` (zero for one member)."""
        r = len(ring)
        if r < 2 or not nbytes:
            return 0.0
        if all(d.apb for d in ring):
            bps = min(d.apb for d in ring if d.apb)
            alpha = max(d.alpha_s or 0.0 for d in ring)
            return alpha + 2 * (r - 1) / r * nbytes / bps
        links = [self.link(ring[i], ring[(i + 1) % r]) for i in range(r)]
        bps, alpha = min(b for b, _ in links), max(a for _, a in links)
        return 2 * (r - 1) * alpha + 2 * (r - 1) / r * nbytes / bps

    def optimizer_s(self, device: Device, param_bytes: float) -> float:
        accesses, _ = OPTIMIZERS[self.optimizer]
        return accesses * param_bytes / device.apm


def _cumulative(blocks: BlockCosts) -> dict[str, list[float]]:
    """Prefix sums of every affine part and of the parameter bytes, for O(1) range sums."""
    series: dict[str, tuple[float, ...] | tuple[int, ...]] = {"param_bytes": blocks.param_bytes}
    for key in AFFINE_KEYS:
        series[f"{key}:fixed"], series[f"{key}:per"] = blocks.fixed[key], blocks.per_sample[key]
    out: dict[str, list[float]] = {}
    for name, values in series.items():
        acc = [0.0]
        for v in values:
            acc.append(acc[-1] + v)
        out[name] = acc
    return out


def _pair(link) -> tuple[float, float] | None:
    return None if link is None else (link.bandwidth_bps, link.latency_s)
