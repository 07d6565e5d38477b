"""``analyze``: a model's training iteration on a cluster, block by block, through MD-Roofline.

Every time here comes from the one cost model (:mod:`trainplay.roofline.cost`: each operator at
its class's achieved rate on its device, plus its fixed cost) and the overlap model of
:mod:`trainplay.roofline.timeline` (DDP buckets overlapping the backward on GPUs and following it
on CPUs, GPipe's fill and drain, replicas in lock step, the optimizer after the all-reduce).

MD-Roofline's planes place each block by its intensities against the system's achievable peaks —
the slowest used worker's APF and APM, and the bandwidth of the communication as run (APB: the
measured all-reduce bus bandwidth when every worker measured one, else the slowest link crossed).
The *bound* a block is given is the one its predicted time shows: the largest of its compute
time, its memory time, its fixed per-operator cost and its exposed communication, so a block
whose communication hides behind computation is never called communication-bound.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from trainplay.errors import UsageError
from trainplay.hardware.spec import ClusterSpec, Peaks, Worker
from trainplay.roofline import cost
from trainplay.roofline.cost import OPTIMIZERS
from trainplay.roofline.layout import Parallel, balanced_stages
from trainplay.roofline.model import Point, SystemPeaks, locate
from trainplay.roofline.predict import Grid, predict, split_ties
from trainplay.roofline.stragglers import Straggler, find_stragglers
from trainplay.workload.stats import WorkloadProfile

__all__ = ["OPTIMIZERS", "IterationResult", "LayerResult", "RooflineResult", "Straggler", "analyze"]


@dataclass(frozen=True, kw_only=True)
class LayerResult:
    """One block of the iteration in MD-Roofline."""

    name: str
    kind: str
    stage: int
    """Pipeline stage the block runs in."""
    flops: float
    """F: forward + backward FLOPs."""
    mem_bytes: float
    """M: forward + backward device-memory bytes."""
    comm_bytes: float
    """P: bytes this block sends (gradient all-reduce traffic, activations at a pipeline cut)."""
    A: float
    O: float  # noqa: E741  (MD-Roofline's name, the JSON contract's key)
    C: float
    plane: str
    bound: str
    t_compute_s: float
    """Predicted time of the block's operators whose larger part is compute."""
    t_memory_s: float
    """Predicted time of the block's operators whose larger part is memory traffic."""
    t_comm_s: float
    """Its communication at APB (hidden or not)."""
    predicted_s: float
    """Forward and backward, operator by operator (:mod:`.cost`), plus the block's exposed
    communication."""
    exposed_comm_s: float
    """The part of ``predicted_s`` that is communication not hidden behind computation."""
    overhead_s: float = 0.0
    """The part of ``predicted_s`` that is the fixed per-operator cost (dispatch, launch) not
    hidden behind kernels."""
    achieved_flops: float
    """F / predicted time."""
    roof_flops: float
    """The intra-device roof at this block's intensity, min(APF, APM·A)."""


@dataclass(frozen=True, kw_only=True)
class IterationResult:
    """The whole iteration: its MD-Roofline point and the predicted time with overlaps."""

    predicted_s: float
    bound_shares: dict[str, float]
    """Share of predicted time that is compute-, memory-, communication-bound (and pipeline bubble)."""
    flops: float
    mem_bytes: float
    comm_bytes: float
    A: float
    O: float  # noqa: E741  (MD-Roofline's name, the JSON contract's key)
    C: float
    plane: str
    bound: str
    t_compute_s: float
    t_memory_s: float
    t_comm_s: float
    exposed_comm_s: float
    """Communication that is not hidden behind computation."""
    optimizer_s: float
    bubble_s: float
    """Pipeline idle time (0 without pipeline parallelism)."""
    overhead_s: float = 0.0
    """Fixed per-operator cost not hidden behind kernels."""


@dataclass(frozen=True, kw_only=True)
class RooflineResult:
    """What ``trainplay analyze`` reports; ``to_dict`` is the JSON contract."""

    model: str
    cluster: str
    parallel: dict[str, Any]
    batch_size: int
    dtype: str
    peaks: dict[str, float | None]
    """System peaks: apf, apm, apb (and the ridges)."""
    peaks_origin: str
    """measured | datasheet | cluster file — where the peaks come from."""
    iteration: IterationResult
    layers: tuple[LayerResult, ...]
    stragglers: tuple[Straggler, ...] = ()
    what_if: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    workers: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    """The workers used: rank, node, device, apf, apm, apb."""
    class_roofs: dict[str, dict[str, float | str]] = field(default_factory=dict)
    """Per operator class its own roof under MD-Roofline's, on the slowest worker's profile: a
    compute class's fastest FLOP/s, a memory class's bytes/s at the largest size measured (the
    streaming rate, beyond the caches): ``{"unit": "FLOP/s" | "B/s", "rate": ...}``; empty
    without a profile."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "cluster": self.cluster,
            "parallel": self.parallel,
            "batch_size": self.batch_size,
            "dtype": self.dtype,
            "peaks": self.peaks,
            "peaks_origin": self.peaks_origin,
            "iteration": asdict(self.iteration),
            "layers": [asdict(layer) for layer in self.layers],
            "stragglers": [
                {**asdict(s), "rank": s.rank, "node": s.node, "device": s.device}
                for s in self.stragglers
            ],
            "what_if": list(self.what_if),
            "notes": list(self.notes),
            "workers": list(self.workers),
            "class_roofs": self.class_roofs,
        }


# ----------------------------------------------------------------------------- peaks of the job


def _grid(cluster: ClusterSpec, parallel: Parallel) -> list[list[Worker]]:
    workers = cluster.workers()
    if parallel.workers > len(workers):
        raise UsageError(
            f"--parallel dp={parallel.dp},pp={parallel.pp} needs {parallel.workers} workers; cluster "
            f"{cluster.name!r} has {len(workers)}"
        )
    return [[workers[r * parallel.pp + s] for s in range(parallel.pp)] for r in range(parallel.dp)]


def _apb(cluster: ClusterSpec, grid: Grid, parallel: Parallel) -> float | None:
    """MD-Roofline's APB for the planes: the measured all-reduce bus bandwidth when every worker
    measured one (data parallelism), else the slowest link the job's communication crosses."""
    from trainplay.roofline.predict import link_between, ring_links, stage_ring

    flat = grid.flat
    bandwidths = []
    if parallel.dp > 1:
        measured = [p.apb for _, p in flat]
        if all(measured):
            bandwidths.append(min(measured))  # type: ignore[type-var]
        else:
            for s in range(parallel.pp):  # each stage's ring, as predict prices it
                links = ring_links(cluster, stage_ring(grid, s))
                bandwidths += [link[0] for link in links if link is not None]
    if parallel.pp > 1:
        for r in range(parallel.dp):
            for s in range(parallel.pp - 1):
                (a, pa), b = (grid.workers[r][s], grid.peaks[r][s]), grid.workers[r][s + 1]
                if a.node == b.node and pa.p2p_beta_bps:
                    bandwidths.append(pa.p2p_beta_bps)
                elif (link := link_between(cluster, a, b)) is not None:
                    bandwidths.append(link[0])
    if (parallel.dp > 1 or parallel.pp > 1) and not bandwidths:
        raise UsageError(
            f"cluster {cluster.name!r} gives no bandwidth between the workers this layout uses: "
            "add intra_link/inter_link or measure with --nproc 2 or more"
        )
    return min(bandwidths) if bandwidths else None


def system_peaks(peaks: list[Peaks], comm_bps: float | None) -> SystemPeaks:
    """The slowest worker's APF and APM, and the communication bandwidth of the job."""
    return SystemPeaks(apf=min(p.apf for p in peaks), apm=min(p.apm for p in peaks), apb=comm_bps)


# ----------------------------------------------------------------------------- analyze


def _comm_bytes(
    profile: WorkloadProfile, stage_of: list[int], parallel: Parallel, dp_factor: float
) -> list[float]:
    out = []
    last = len(profile.layers) - 1
    split = split_ties(profile, stage_of)
    for i, layer in enumerate(profile.layers):
        own = layer.param_bytes - sum(t.bytes for t, _ in split if t.blocks[0] == i)
        grads = cost.master_bytes(own, profile.dtype)  # fp32 master gradients
        p = grads * dp_factor if parallel.dp > 1 else 0.0
        if i < last and stage_of[i] != stage_of[i + 1]:
            p += 2 * layer.activation_bytes  # the activation forward, its gradient back
        out.append(p)
    for t, stages in split:  # its own ring over every replica of its stages (predict: TiedReduce)
        n = parallel.dp * len(stages)
        out[t.blocks[-1]] += cost.master_bytes(t.bytes, profile.dtype) * 2 * (n - 1) / n
    return out


def _stages(profile: WorkloadProfile, grid: Grid, parallel: Parallel) -> list[int]:
    """Blocks split into ``pp`` contiguous stages of balanced time on the slowest worker."""
    if parallel.pp == 1:
        return [0] * len(profile.layers)

    def block_s(peaks: Peaks) -> list[float]:
        return [
            cost.phase_time(x.ops, "fwd", peaks).total_s
            + cost.phase_time(x.ops, "bwd", peaks).total_s
            for x in profile.layers
        ]

    times = max((block_s(p) for _, p in grid.flat), key=sum)
    return balanced_stages(times, parallel.pp)


def _class_roofs(peaks: list[Peaks]) -> dict[str, dict[str, float | str]]:
    """Each operator class's roof on the slowest worker (by APF) that has a profile."""
    from trainplay.workload.opclass import COMPUTE_CLASSES

    profiled = [p for p in peaks if p.profile is not None]
    if not profiled:
        return {}
    slowest = min(profiled, key=lambda p: p.apf)
    roofs: dict[str, dict[str, float | str]] = {}
    for key, curve in slowest.profile.classes.items():  # type: ignore[union-attr]
        cls = key.split(".")[0].split(":")[0]
        if ":" in key or "@" in key or cls.startswith("optimizer") or cls == "view":
            continue
        compute = cls in COMPUTE_CLASSES
        rate = curve.best if compute else curve.rates[-1]
        best = max(float(roofs.get(cls, {}).get("rate", 0.0)), rate)
        roofs[cls] = {"unit": "FLOP/s" if compute else "B/s", "rate": best}
    return roofs


def _bound(compute_s: float, memory_s: float, comm_s: float, overhead_s: float) -> str:
    """The part of a predicted time that is largest (ties: compute, memory, communication)."""
    parts = {
        "compute": compute_s,
        "memory": memory_s,
        "communication": comm_s,
        "overhead": overhead_s,
    }
    return max(parts, key=parts.__getitem__)


def analyze(
    profile: WorkloadProfile,
    cluster: ClusterSpec,
    parallel: Parallel | None = None,
    *,
    optimizer: str = "sgd",
    straggler_threshold: float = 1.05,
    micro: WorkloadProfile | None = None,
) -> RooflineResult:
    """MD-Roofline of one training iteration of ``profile`` (blocks, a replica's batch) on
    ``cluster``.

    ``micro`` is the same model profiled at one micro-batch (``batch / mb``), which a pipeline's
    stages run at; without it a pipeline divides the batch's costs evenly.
    """
    parallel = parallel or Parallel()
    if profile.granularity != "blocks":
        raise UsageError("analyze needs a profile by blocks (--granularity blocks)")
    if optimizer not in OPTIMIZERS:
        raise UsageError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    workers = _grid(cluster, parallel)
    grid = Grid(
        tuple(tuple(row) for row in workers),
        tuple(tuple(w.peaks(profile.dtype) for w in row) for row in workers),
    )
    flat_workers = [w for w, _ in grid.flat]
    flat_peaks = [p for _, p in grid.flat]
    sys_peaks = system_peaks(flat_peaks, _apb(cluster, grid, parallel))
    overlap = (
        parallel.overlap
        if parallel.overlap is not None
        else not any(_is_cpu(w) for w in flat_workers)
    )
    dp_factor = 2 * (parallel.dp - 1) / parallel.dp
    stage_of = _stages(profile, grid, parallel)

    def predict_with(g: Grid):
        return predict(
            profile, cluster, g, stage_of, parallel, overlap=overlap, optimizer=optimizer,
            micro=micro,
        )  # fmt: skip

    timeline = predict_with(grid).timeline
    comm_bytes = _comm_bytes(profile, stage_of, parallel, dp_factor)
    layers = []
    shares = {"compute": 0.0, "memory": 0.0, "communication": 0.0, "overhead": 0.0}
    for i, x in enumerate(profile.layers):
        point = locate(x.flops, x.bytes, comm_bytes[i], sys_peaks)
        block, exposed = timeline.block_s[i], timeline.exposed_s[i]
        shares["compute"] += block.compute_s
        shares["memory"] += block.memory_s
        shares["overhead"] += block.overhead_s
        layers.append(_layer(x.name, x.kind, stage_of[i], point, block, exposed))
    shares["communication"] += timeline.exposed_total_s
    shares["memory"] += timeline.optimizer_s
    if parallel.pp > 1:
        shares["bubble"] = timeline.bubble_s
    total = sum(shares.values()) or 1.0
    totals = profile.totals
    accesses, opt_flops = OPTIMIZERS[optimizer]
    flops = totals["fwd_flops"] + totals["bwd_flops"] + opt_flops * totals["params"]
    master = cost.master_bytes(totals["param_bytes"], profile.dtype)
    mem = totals["fwd_bytes"] + totals["bwd_bytes"] + accesses * master
    whole = locate(flops, mem, sum(comm_bytes), sys_peaks)
    overhead_total = sum(b.overhead_s for b in timeline.block_s)
    iteration = IterationResult(
        predicted_s=timeline.iteration_s,
        bound_shares={k: v / total for k, v in shares.items()},
        flops=flops,
        mem_bytes=mem,
        comm_bytes=sum(comm_bytes),
        A=whole.a,
        O=whole.o,
        C=whole.c,
        plane=whole.plane,
        bound=_bound(
            shares["compute"], shares["memory"], shares["communication"], shares["overhead"]
        ),
        t_compute_s=whole.t_compute_s,
        t_memory_s=whole.t_memory_s,
        t_comm_s=whole.t_comm_s,
        exposed_comm_s=timeline.exposed_total_s,
        optimizer_s=timeline.optimizer_s,
        bubble_s=timeline.bubble_s,
        overhead_s=overhead_total,
    )
    stragglers = find_stragglers(
        profile,
        grid,
        stage_of,
        lambda g: predict_with(g).timeline.iteration_s,
        timeline.iteration_s,
        straggler_threshold,
    )
    origins = sorted({p.origin for p in flat_peaks})
    notes = []
    if "measured" not in origins:
        notes.append(
            "peaks are datasheet numbers, not achievable ones: measure with `trainplay hw measure` "
            "for MD-Roofline's achievable peaks"
        )
    if any(p.profile is None for p in flat_peaks):
        notes.append(
            "some workers have no performance profile: their operators are priced at the roofs "
            "(APF, APM) with no fixed cost per operator"
        )
    notes.append(
        f"gradient all-reduce {'overlaps' if overlap else 'follows'} the backward pass"
        + ("" if parallel.dp > 1 else " (no data parallelism here)")
    )
    return RooflineResult(
        model=profile.model,
        cluster=cluster.name,
        parallel=parallel.to_dict(),
        batch_size=profile.batch_size,
        dtype=profile.dtype,
        peaks={
            "apf": sys_peaks.apf,
            "apm": sys_peaks.apm,
            "apb": sys_peaks.apb,
            "a_max": sys_peaks.a_max,
            "o_max": sys_peaks.o_max,
            "c_max": sys_peaks.c_max,
        },
        peaks_origin=", ".join(origins),
        iteration=iteration,
        layers=tuple(layers),
        stragglers=stragglers,
        notes=tuple(notes),
        class_roofs=_class_roofs(flat_peaks),
        workers=tuple(
            {
                "rank": w.rank,
                "node": w.node,
                "device": w.device.name,
                "apf": p.apf,
                "apm": p.apm,
                "apb": p.apb,
                "origin": p.origin,
            }
            for w, p in zip(flat_workers, flat_peaks, strict=True)
        ),
    )


def _layer(
    name: str, kind: str, stage: int, point: Point, block: cost.PhaseTime, exposed_s: float
) -> LayerResult:
    predicted = block.total_s + exposed_s
    return LayerResult(
        name=name,
        kind=kind,
        stage=stage,
        flops=point.flops,
        mem_bytes=point.mem_bytes,
        comm_bytes=point.comm_bytes,
        A=point.a,
        O=point.o,
        C=point.c,
        plane=point.plane,
        bound=_bound(block.compute_s, block.memory_s, exposed_s, block.overhead_s),
        t_compute_s=block.compute_s,
        t_memory_s=block.memory_s,
        t_comm_s=point.t_comm_s,
        predicted_s=predicted,
        exposed_comm_s=exposed_s,
        overhead_s=block.overhead_s,
        achieved_flops=point.flops / predicted if predicted else 0.0,
        roof_flops=point.roof_flops,
    )


def _is_cpu(worker: Worker) -> bool:
    return worker.device.type == "cpu" or worker.device.name.startswith("cpu")
