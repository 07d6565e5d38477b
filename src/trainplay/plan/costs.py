"""The planner's view of the one cost model: blocks as affine functions of the micro-batch, and
memoised prices of block ranges, cuts, all-reduces and optimizer steps on the cluster's devices.

Nothing is priced here: every time comes from :mod:`trainplay.roofline.cost`, the same functions
``analyze`` uses (DESIGN.md, "One cost model"):

- **Blocks.** The workload is profiled at two batch sizes (with its training loss). Every
  operator call of a block, and every per-block size (activation and saved bytes), is affine in
  the number of samples, ``fixed + per_sample·m`` (weights are the fixed part, activations the
  per-sample part), so a block's phase on a device for a micro-batch of ``m`` is the sum of its
  operators at ``m`` samples, each priced by :func:`~trainplay.roofline.cost.call_s` with the
  device's peaks and performance profile; at the stale-weight rate where the stage's
  parameters' optimizer state and one micro-batch's saved activations outgrow the device's cache
  (:meth:`CostModel.stale`, :func:`~trainplay.roofline.cost.stale_weights`).
- **Cuts** cost :func:`~trainplay.roofline.cost.transfer_s` each way: the measured
  point-to-point curve within a node when both devices measured one, else the link between them.
- **Data parallelism**: :func:`~trainplay.roofline.cost.ring_allreduce_s` over a stage's
  replicas: measured curves when every replica measured one, else measured bus bandwidths, else
  the ring's slowest link.
- **Tied parameters** (:class:`~trainplay.workload.stats.Tie`: GPT-2's embedding is also its output
  projection): the profile counts one in the first block that uses it; a stage holding a later
  user without that block holds a copy, with its gradient, optimizer state and step
  (:meth:`CostModel.range_sum`). Where its users lie in several stages, its gradient is summed over
  every rank holding a copy instead of over one stage's replicas, as ``trainplay train`` does
  (``runtime/pipeline.py``; Megatron-LM's embedding group): a ring all-reduce of its own, after
  each of those stages' all-reduce (:func:`~trainplay.plan.layout.allreduces_s`).
- **The optimizer**: :func:`~trainplay.roofline.cost.optimizer_s` over the stage's parameters.
- **The runtime**: the pipeline schedule's fixed costs per micro-batch (in each stage's forward and
  backward) and per step, and the ranks' per-step agreement, after the optimizer step
  (:meth:`CostModel.runtime_s`). ``analyze`` prices the user's own training loop and leaves them
  out.
- **Taking the batch**: where ``trainplay train`` measured its data set
  (:mod:`trainplay.runtime.fetch`), a replica's first stage (its inputs) and last stage (its
  targets) take the replica's share before their schedule starts; a middle stage takes nothing. The
  replica's pipeline is priced as starting that much later, the slower of the two
  (:meth:`CostModel.fetch_s`, ``PipelineWork.fetch_s``): exact for the first stage, an upper bound
  for the last, whose fetch also overlaps the stages before it. Without a measurement
  (``analyze``, ``plan``), inputs are ready.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from trainplay.errors import UsageError
from trainplay.hardware.spec import ClusterSpec, Peaks
from trainplay.plan.simulate import sample_stages
from trainplay.roofline import cost
from trainplay.roofline.cost import OPTIMIZERS
from trainplay.workload.opclass import COMPUTE_CLASSES, at_samples
from trainplay.workload.stats import LayerStats, Tie, WorkloadProfile

__all__ = [
    "AFFINE_KEYS",
    "AffineOp",
    "BlockCosts",
    "CostModel",
    "Device",
    "devices_of",
    "running",
]

AFFINE_KEYS = (
    "fwd_flops",
    "bwd_flops",
    "fwd_bytes",
    "bwd_bytes",
    "activation_bytes",
    "saved_bytes",
)
"""Per-block quantities that grow with the number of samples."""


@dataclass(frozen=True)
class AffineOp:
    """Identical operator calls of a block, their FLOPs and bytes affine in the samples."""

    cls: str
    phase: str
    op: str
    flops: tuple[float, float]
    """(fixed, per sample) FLOPs of one call."""
    bytes: tuple[float, float]
    """(fixed, per sample) bytes of one call."""
    count: int
    positions: int = 0
    """The output map's positions (:attr:`~trainplay.workload.stats.OpGroup.positions`): the
    same at any number of samples."""

    def at(self, m: int) -> tuple[float, float]:
        return self.flops[0] + self.flops[1] * m, self.bytes[0] + self.bytes[1] * m

    def to_list(self) -> list:
        row = [self.cls, self.phase, self.op, *self.flops, *self.bytes, self.count]
        return [*row, self.positions] if self.positions else row

    @classmethod
    def from_list(cls, row: list) -> AffineOp:
        k, phase, op, f0, f1, b0, b1, count, *where = row
        return cls(k, phase, op, (f0, f1), (b0, b1), int(count), int(where[0]) if where else 0)


def _affine(va: float, vb: float, a: int, db: int) -> tuple[float, float]:
    slope = max(0.0, (vb - va) / db)
    return max(0.0, va - slope * a), slope


def _affine_ops(small: LayerStats, large: LayerStats, a: int, db: int) -> tuple[AffineOp, ...]:
    """Pair a block's operator groups at two batch sizes: position by position when both list
    the same operators (the usual case: the same code ran), else by (class, phase, operator)
    with the calls of each summed (a batch size made two differently sized calls look alike)."""
    same = len(small.ops) == len(large.ops) and all(
        (x.cls, x.phase, x.op, x.count, x.positions) == (y.cls, y.phase, y.op, y.count, y.positions)
        for x, y in zip(small.ops, large.ops, strict=True)
    )
    if same:
        pairs = [
            ((x.cls, x.phase, x.op, x.positions), x.count, (x.flops, x.bytes), (y.flops, y.bytes))
            for x, y in zip(small.ops, large.ops, strict=True)
        ]
    else:
        merged: dict[tuple[str, str, str, int], list] = {}
        for which, stats in ((0, small), (1, large)):
            for g in stats.ops:
                key = (g.cls, g.phase, g.op, g.positions)
                entry = merged.setdefault(key, [0, [0.0, 0.0], [0.0, 0.0]])
                entry[0] = max(entry[0], g.count)
                entry[1 + which][0] += g.flops * g.count
                entry[1 + which][1] += g.bytes * g.count
        pairs = [
            (k, n, (fa / n, ba / n), (fb / n, bb / n))
            for k, (n, (fa, ba), (fb, bb)) in merged.items()
        ]
    return tuple(
        AffineOp(k, phase, op, _affine(sa[0], sb[0], a, db), _affine(sa[1], sb[1], a, db), n, where)
        for (k, phase, op, where), n, sa, sb in pairs
    )


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
    ops: tuple[tuple[AffineOp, ...], ...] = ()
    """Per block, its operator calls affine in the samples (what the cost model prices)."""
    param_tensors: tuple[int, ...] = ()
    """Parameter tensors each block owns (the optimizer's fixed cost is per tensor)."""
    largest_param_bytes: tuple[int, ...] = ()
    """Per block, its largest parameter (training dtype): a micro-batch's fresh gradient of it
    exists beside the accumulated one (``plan/memory.py``); empty when not known."""
    ties: tuple[Tie, ...] = ()
    """Parameters several blocks use, counted in ``param_bytes`` once, in the first of them."""

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
            ops=tuple(
                _affine_ops(a, b, small.batch_size, db)
                for a, b in zip(small.layers, large.layers, strict=True)
            ),
            param_tensors=tuple(x.param_tensors for x in small.layers),
            ties=small.ties,
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
            "ops": [[op.to_list() for op in block] for block in self.ops],
            "param_tensors": list(self.param_tensors),
            "largest_param_bytes": list(self.largest_param_bytes),
            "ties": [t.to_dict() for t in self.ties],
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
            ops=tuple(
                tuple(AffineOp.from_list(row) for row in block) for block in data.get("ops", ())
            ),
            param_tensors=tuple(data.get("param_tensors", ())),
            largest_param_bytes=tuple(data.get("largest_param_bytes", ())),
            ties=tuple(Tie.from_dict(t) for t in data.get("ties", ())),
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
    peaks: Peaks | None = field(default=None, compare=False, repr=False)
    """The peaks and performance profile the cost model prices this device's work with
    (``None``: a device given only by APF and APM)."""
    alone: Device | None = field(default=None, compare=False, repr=False)
    """The same device priced as it runs while the other devices of its node idle (a CPU worker
    whose siblings share its cores: :attr:`~trainplay.hardware.spec.Peaks.alone`); ``None`` where
    not measured. :meth:`CostModel.running` puts it in a grid that uses no other device of the
    node."""
    solo: bool = False
    """Whether this is such an ``alone`` variant."""

    @cached_property
    def speed(self) -> tuple:
        """What a price on this device depends on: devices with the same speed cost alike."""
        profile = self.peaks.profile if self.peaks is not None else None
        return (self.apf, self.apm, None if profile is None else profile.source, self.solo)

    @cached_property
    def stage_key(self) -> tuple:
        """What a stage's price on this device depends on: its speed and its memory."""
        return (self.speed, self.mem_bytes)

    @cached_property
    def klass(self) -> tuple:
        """Devices with the same class are interchangeable for the planner."""
        return (self.node, self.type, *self.speed, self.mem_bytes, self.apb, self.p2p_bps)

    def priced(self) -> Peaks:
        """The peaks its work is priced at."""
        if self.peaks is not None:
            return self.peaks
        return Peaks(apf=self.apf, apm=self.apm, apb=self.apb, alpha_s=self.alpha_s, origin="given")


def devices_of(cluster: ClusterSpec, dtype: str) -> list[Device]:
    """Every worker of ``cluster`` with its peaks at ``dtype`` (measured where measured)."""
    out = []
    seen: dict[tuple[str, str], int] = {}
    for w in cluster.workers():
        p = w.peaks(dtype)
        window = w.device.available
        k = seen.get((w.node, w.device.name), 0)  # two entries of one type on a node: keep counting
        seen[(w.node, w.device.name)] = k + 1
        device = Device(
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
            peaks=p,
        )
        if p.alone is not None:
            device = replace(device, alone=replace(
                device, apf=p.alone.apf, apm=p.alone.apm, peaks=p.alone, solo=True))  # fmt: skip
        out.append(device)
    return out


def running(grid: tuple[tuple[Device, ...], ...]) -> tuple[tuple[Device, ...], ...]:
    """``grid`` with each device that is the only one of its node in use priced as it runs alone
    (:attr:`Device.alone`, where measured); the others as measured with every worker busy. A
    node's devices in between (some busy, some idle) keep the busy figures: an upper bound.
    Idempotent."""
    used: dict[str, int] = {}
    for row in grid:
        for d in row:
            used[d.node] = used.get(d.node, 0) + 1
    if all(d.alone is None for row in grid for d in row):
        return grid
    return tuple(
        tuple(d.alone if d.alone is not None and used[d.node] == 1 else d for d in row)
        for row in grid
    )


@dataclass(eq=False)
class CostModel:
    """Prices ranges of blocks on devices, cuts on links, all-reduces on rings (memoised)."""

    blocks: BlockCosts
    cluster: ClusterSpec
    optimizer: str = "sgd"
    grad_bytes_per_param_byte: float | None = None
    """Bytes all-reduced per byte of parameters (counted at the blocks' dtype). ``None``: the
    gradients of the fp32 master weights, as ``trainplay train`` runs bf16/fp16
    (:func:`~trainplay.roofline.cost.master_bytes`: 1 for fp32, 2 for bf16/fp16); 1 for a framework
    that reduces half-precision gradients in half precision (Megatron-LM's ``--fp16``)."""
    data_fetch: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Device id -> ``(fixed_s, per_sample_s)`` of taking a step's samples on that device's rank
    (:func:`trainplay.runtime.fetch.measure_fetch`); a device not named takes none."""
    _links: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    _allreduce: dict[tuple, float] = field(default_factory=dict, init=False, repr=False)
    """All-reduce times already priced, by the ring's device ids and the bytes: the search asks
    for the same few rings tens of thousands of times."""

    def __post_init__(self) -> None:
        if self.grad_bytes_per_param_byte is None:
            self.grad_bytes_per_param_byte = cost.master_bytes(1.0, self.blocks.dtype)
        if self.optimizer not in OPTIMIZERS:
            raise UsageError(
                f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}"
            )
        self._links = {n.name: _pair(n.intra_link) for n in self.cluster.nodes}
        self._inter = _pair(self.cluster.inter_link)
        self._prefixes: dict[tuple, tuple[list[float], list[float]]] = {}
        self._cum = _cumulative(self.blocks)
        self._per_sample: dict[tuple, float] = {}
        self._optimizer: dict[tuple, float] = {}
        """Optimizer steps by (device speed, parameter bytes, tensors), and gradient
        accumulations by ("accumulate", the same)."""
        self.memo: dict[tuple, Any] = {}
        """Stage prices by (peaks, memory, blocks, micro-batch, micro-batches held, recompute)."""
        self.tails: dict[tuple, float] = {}
        """A stage's slowest optimizer step by (its devices' speeds, blocks)."""

    # ------------------------------------------------------------------ blocks

    def _prefix_uncached(
        self, device: Device, m: int, stale: bool
    ) -> tuple[list[float], list[float]]:
        peaks = device.priced()
        distinct, kinds = self._kinds
        # each distinct block once
        phases = [_block_s(block, m, peaks, stale) for block in distinct]
        fwd, bwd = [0.0], [0.0]
        for k in kinds:
            f, b = phases[k]
            fwd.append(fwd[-1] + f)
            bwd.append(bwd[-1] + b)
        return fwd, bwd

    @cached_property
    def _kinds(self) -> tuple[list[tuple[AffineOp, ...]], list[int]]:
        """The distinct blocks (same operator calls, same FLOPs and bytes: a decoder's repeated
        layers) and, per block, the index of its distinct block: a structural key, so that a
        block repeated 48 times is priced once per device and micro-batch."""
        distinct: dict[tuple[AffineOp, ...], int] = {}
        kinds = [
            distinct.setdefault(block, len(distinct))
            for block in self.blocks.ops or self._roofline_ops()
        ]
        return list(distinct), kinds

    def _roofline_ops(self) -> tuple[tuple[AffineOp, ...], ...]:
        """Blocks given only by their totals (no operator list): one call per phase of a class no
        curve covers, so priced at the roofs, ``max(F/APF, M/APM)``."""
        out = []
        for i in range(self.blocks.n):
            fixed, per = self.blocks.fixed, self.blocks.per_sample
            out.append(
                tuple(
                    AffineOp(
                        "block",
                        phase,
                        "(block total)",
                        (fixed[f"{phase}_flops"][i], per[f"{phase}_flops"][i]),
                        (fixed[f"{phase}_bytes"][i], per[f"{phase}_bytes"][i]),
                        1,
                    )
                    for phase in ("fwd", "bwd")
                )
            )
        return tuple(out)

    def _prefix(self, device: Device, m: int, stale: bool) -> tuple[list[float], list[float]]:
        key = (device.speed, m, stale)
        if key not in self._prefixes:
            self._prefixes[key] = self._prefix_uncached(device, m, stale)
        return self._prefixes[key]

    def stale(self, device: Device, m: int, first: int, end: int) -> bool:
        """Whether blocks ``[first, end)`` on ``device`` find their weights evicted at each use
        (:func:`~trainplay.roofline.cost.stale_weights`: their parameters' optimizer state and
        one micro-batch of ``m`` samples' saved activations against the device's cache). A device
        without a cache size (every GPU) answers before any sum: the search asks this of every
        stage it prices."""
        profile = device.priced().profile
        if profile is None or profile.cache_bytes is None:
            return False
        return cost.stale_weights(
            cost.master_bytes(self.range_sum("param_bytes", m, first, end), self.blocks.dtype),
            self.range_sum("saved_bytes", m, first, end),
            self.optimizer,
            profile,
        )

    def per_sample_s(self, device: Device) -> float:
        """A lower bound on the forward and backward seconds each sample adds on ``device``: each
        block's per-sample FLOPs and bytes at the fastest rate any of the device's curves (or
        roofs) reaches, ``max(a+b, c+d) >= max(b, d)``; fixed costs only add to it."""
        key = device.speed
        if key not in self._per_sample:
            flops_rate, bytes_rate = _fastest(device.priced())
            ps = self.blocks.per_sample
            self._per_sample[key] = sum(
                max(ps[f][i] / flops_rate, ps[b][i] / bytes_rate)
                for f, b in (("fwd_flops", "fwd_bytes"), ("bwd_flops", "bwd_bytes"))
                for i in range(self.blocks.n)
            )
        return self._per_sample[key]

    def fwd_s(self, device: Device, m: int, first: int, end: int) -> float:
        """Forward of blocks ``[first, end)`` for ``m`` samples on ``device``."""
        fwd, _ = self._prefix(device, m, self.stale(device, m, first, end))
        return fwd[end] - fwd[first]

    def bwd_s(self, device: Device, m: int, first: int, end: int) -> float:
        _, bwd = self._prefix(device, m, self.stale(device, m, first, end))
        return bwd[end] - bwd[first]

    def split_s(self, device: Device, m: int, first: int, end: int) -> cost.PhaseTime:
        """Forward and backward of blocks ``[first, end)`` for ``m`` samples on ``device``, split
        as MD-Roofline bounds each operator (compute, memory, fixed per-call cost): where the
        time of :meth:`fwd_s` + :meth:`bwd_s` goes. Not memoised; the planner never asks it."""
        peaks = device.priced()
        stale = self.stale(device, m, first, end)
        total = cost.ZERO
        for block in (self.blocks.ops or self._roofline_ops())[first:end]:
            for op in block:
                one = _call_s(op, m, peaks, stale)
                n = op.count
                total = total + cost.PhaseTime(
                    one.total_s * n, one.compute_s * n, one.memory_s * n, one.overhead_s * n
                )
        return total

    def range_sum(self, key: str, m: int, first: int, end: int) -> float:
        """``key`` (an affine key, ``param_bytes`` or ``param_tensors``) summed over blocks
        ``[first, end)``; the parameters count the copies of tied ones a stage of those blocks
        holds (a later user of a parameter counted in an earlier block)."""
        cum = self._cum
        if key in ("param_bytes", "param_tensors"):
            got = cum[key][end] - cum[key][first]
            for tie in self.blocks.ties:
                if tie.copied_in(first, end):
                    got += tie.bytes if key == "param_bytes" else 1
            return got
        fixed, per = cum[key + ":fixed"], cum[key + ":per"]
        return fixed[end] - fixed[first] + m * (per[end] - per[first])

    def holds_tie(self, first: int, end: int) -> bool:
        """Whether blocks ``[first, end)`` use a tied parameter."""
        return any(first <= k < end for tie in self.blocks.ties for k in tie.blocks)

    def own_param_bytes(self, first: int, end: int) -> float:
        """The parameter bytes a stage of blocks ``[first, end)`` reduces over its own replicas:
        all it holds but the tied parameters other stages hold too (their own all-reduce)."""
        got = self.range_sum("param_bytes", 1, first, end)
        for tie in self.blocks.ties:
            if tie.split_at(first, end):
                got -= tie.bytes
        return got

    def activation_bytes(self, cut: int, m: int) -> float:
        """Bytes crossing a cut placed after block ``cut - 1`` for ``m`` samples."""
        i = cut - 1
        return (
            self.blocks.fixed["activation_bytes"][i]
            + m * (self.blocks.per_sample["activation_bytes"][i])
        )

    # ------------------------------------------------------------------ links

    def link(self, a: Device, b: Device) -> tuple[float, float]:
        """(bytes/s, latency s) of the link from ``a`` to ``b`` (the node's, or the cluster's
        between nodes)."""
        link = self._links.get(a.node) if a.node == b.node else self._inter
        if link is None:
            where = f"node {a.node!r} has no intra_link" if a.node == b.node else "no inter_link"
            raise UsageError(f"cluster {self.cluster.name!r}: {where}; add one to the cluster file")
        return link

    def send_s(self, a: Device, b: Device, nbytes: float) -> float:
        """One message of ``nbytes`` from ``a`` to ``b``."""
        if not nbytes:
            return 0.0
        pa, pb = a.priced().profile, b.priced().profile
        curves = pa is not None and pa.p2p is not None and pb is not None and pb.p2p is not None
        if a.node == b.node and curves:
            return cost.transfer_s(nbytes, profile=pa)
        if a.node == b.node and a.p2p_bps and b.p2p_bps:  # measured fits without curves
            bps = min(a.p2p_bps, b.p2p_bps)
            latency = max(a.p2p_alpha_s or 0.0, b.p2p_alpha_s or 0.0)
            return cost.transfer_s(nbytes, link=(bps, latency))
        return cost.transfer_s(nbytes, link=self.link(a, b))

    def allreduce_s(self, ring: tuple[Device, ...], param_bytes: float) -> float:
        """Ring all-reduce over ``ring`` of the gradients of ``param_bytes`` of parameters (zero
        for one member)."""
        r = len(ring)
        nbytes = param_bytes * self.grad_bytes_per_param_byte
        if r < 2 or not nbytes:
            return 0.0
        key = (tuple(d.id for d in ring), nbytes)
        if key not in self._allreduce:
            self._allreduce[key] = self._ring_s(ring, nbytes)
        return self._allreduce[key]

    def _ring_s(self, ring: tuple[Device, ...], nbytes: float) -> float:
        r = len(ring)
        return cost.ring_allreduce_s(
            nbytes,
            [d.priced() for d in ring],
            lambda: [self.link(ring[i], ring[(i + 1) % r]) for i in range(r)],
        )

    def runtime_s(
        self,
        grid: tuple[tuple[Device, ...], ...],
        bounds: tuple[int, ...] | None = None,
        m: int = 1,
    ) -> float:
        """The training runtime's own work per step on ``grid`` (its loop's or the schedule's
        fixed cost per step, and with several ranks their two agreement collectives): the slowest
        device's (:func:`~trainplay.roofline.cost.loop_step_s`,
        :func:`~trainplay.roofline.cost.agreement_s`). With the stages' ``bounds``, a device whose
        stage streams more than its cache at micro-batches of ``m`` samples (:meth:`stale`) pays
        the loop timed cold; without them every loop is priced hot, which is never more: the
        search prunes with it before it knows the cut."""
        devices = [d for row in grid for d in row]
        stale = [
            bounds is not None and self.stale(d, m, bounds[s], bounds[s + 1])
            for row in grid
            for s, d in enumerate(row)
        ]
        key = ("runtime", tuple((d.id, d.speed) for d in devices), tuple(stale))
        got = self._optimizer.get(key)
        if got is None:
            n = len(devices)
            got = max(
                _loop_s(d, cold) + cost.agreement_s(n, d.priced().profile)
                for d, cold in zip(devices, stale, strict=True)
            )
            self._optimizer[key] = got
        return got

    def fetch_s(self, row: tuple[Device, ...], samples: int) -> float:
        """Seconds before a replica on ``row`` can start its schedule: its first and its last
        stage take the replica's ``samples`` of the step (:attr:`data_fetch`), the slower last."""
        fetch = self.data_fetch
        if not fetch or not row:
            return 0.0
        ends = {row[s].id for s in sample_stages(len(row))} & fetch.keys()
        return max((fetch[d][0] + fetch[d][1] * samples for d in ends), default=0.0)

    def accumulate_s(self, device: Device, param_bytes: float, param_tensors: int = 1) -> float:
        """Adding one micro-batch's gradients into the accumulated ones on ``device``."""
        key = ("accumulate", device.speed, param_bytes, param_tensors)
        got = self._optimizer.get(key)
        if got is None:
            master = cost.master_bytes(param_bytes, self.blocks.dtype)
            got = cost.accumulate_s(master, param_tensors, device.priced())
            self._optimizer[key] = got
        return got

    def optimizer_s(self, device: Device, param_bytes: float, param_tensors: int = 1) -> float:
        key = (device.speed, param_bytes, param_tensors)
        got = self._optimizer.get(key)
        if got is None:
            master = cost.master_bytes(param_bytes, self.blocks.dtype)
            got = cost.optimizer_s(master, param_tensors, device.priced(), self.optimizer)
            self._optimizer[key] = got
        return got


def _loop_s(device: Device, stale: bool) -> float:
    """The training loop's fixed cost per step on ``device``
    (:func:`~trainplay.roofline.cost.loop_step_s`). ``hw measure`` times the loop on one worker:
    a worker measured with its siblings busy, whose profile has no loop timed, is priced at the
    loop of the same worker measured alone, where there is one (the loop is one Python thread's
    work; with its siblings busy it is no faster, so this is the least it costs), rather than at
    the bare schedule's fixed cost, which would make a plan of busy workers look cheaper than one
    of a worker alone by the loop it leaves out."""
    own = device.priced()
    alone = device.alone.priced() if device.alone is not None else None
    if not _timed(own) and alone is not None and _timed(alone):
        return cost.loop_step_s(alone, stale)
    return cost.loop_step_s(own, stale)


def _timed(peaks: Peaks) -> bool:
    """Whether ``hw measure`` timed the training loop on this device's profile."""
    return peaks.profile is not None and cost.LOOP_KEY in peaks.profile.overhead_s


def _call_s(op: AffineOp, m: int, peaks: Peaks, stale: bool) -> cost.PhaseTime:
    """One of ``op``'s calls on ``m`` samples, in the class a call of that many samples has
    (:func:`~trainplay.workload.opclass.at_samples`: the blocks are counted at 2 and 4)."""
    flops, nbytes = op.at(m)
    cls = at_samples(op.cls, m)
    return cost.call_s(cls, op.phase, flops, nbytes, peaks, op.op, stale, op.positions)


def _block_s(block: tuple[AffineOp, ...], m: int, peaks: Peaks, stale: bool) -> tuple[float, float]:
    """(forward, backward) seconds of one block's operators for ``m`` samples on ``peaks``
    (``stale``: its weights evicted between uses, :func:`~trainplay.roofline.cost.call_s`)."""
    f = b = 0.0
    for op in block:
        t = _call_s(op, m, peaks, stale).total_s * op.count
        if op.phase == "fwd":
            f += t
        else:
            b += t
    return f, b


def _fastest(peaks: Peaks) -> tuple[float, float]:
    """The fastest FLOP/s and bytes/s any operator can reach on ``peaks``."""
    flops, nbytes = peaks.apf, peaks.apm
    if peaks.profile is not None:
        for key, curve in peaks.profile.classes.items():
            if key.split(".")[0] in COMPUTE_CLASSES:
                flops = max(flops, curve.best)
            elif not key.startswith("optimizer"):
                nbytes = max(nbytes, curve.best)
    return flops, nbytes


def _cumulative(blocks: BlockCosts) -> dict[str, list[float]]:
    """Prefix sums of every affine part and of the parameter bytes, for O(1) range sums."""
    series: dict[str, tuple[float, ...] | tuple[int, ...]] = {
        "param_bytes": blocks.param_bytes,
        "param_tensors": blocks.param_tensors or (1,) * blocks.n,
    }
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
