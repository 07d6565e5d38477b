"""``analyze``: a model's training iteration on a cluster, block by block, through MD-Roofline.

Assumptions, stated once (they are the overlap model DESIGN.md asks for):

- **Within a block**, compute and memory traffic overlap: each phase (forward, backward) takes
  ``max(F/APF, M/APM)`` — the intra-device roofline.
- **Data parallelism** all-reduces each replica's gradients with a ring (traffic factor
  ``2(n-1)/n`` per rank, as NCCL and gloo do) in DistributedDataParallel's buckets: 1 MiB for the
  first, 25 MiB after, filled in reverse order of the blocks. A bucket's all-reduce starts when its
  last gradient is ready and the previous all-reduce has finished; it costs ``alpha + bytes/APB``.
  On GPUs the all-reduces overlap the rest of the backward pass; on CPUs they do not (gloo reduces
  on the cores that compute), so they follow it. Only the part that sticks out past the backward is
  exposed time.
- **Pipeline parallelism** runs GPipe: the batch is cut into ``mb`` micro-batches; stage ``s``
  spends ``tau_s`` per micro-batch (its blocks' forward and backward, plus sending the activation
  and receiving its gradient at the cut); an iteration takes ``sum(tau) + (mb - 1) * max(tau)``.
  Each replica's pipeline sits on consecutive workers; gradients are all-reduced after the flush.
- **The optimizer** (SGD: read parameter and gradient, write parameter; Adam: also two moments)
  is memory traffic over the parameters at APM.
- The system's peaks are the slowest used worker's in each dimension (MD-Roofline). APB is the
  measured all-reduce bus bandwidth when every worker measured one, else the slowest link the
  collective crosses (intra-node link within a node, the inter-node link across nodes).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from trainplay.errors import UsageError
from trainplay.hardware.spec import ClusterSpec, Peaks, Worker
from trainplay.roofline.layout import DDP_FIRST_BUCKET_BYTES, Parallel, balanced_stages
from trainplay.roofline.model import Point, SystemPeaks, locate
from trainplay.workload.stats import WorkloadProfile

__all__ = ["OPTIMIZERS", "IterationResult", "LayerResult", "RooflineResult", "Straggler", "analyze"]

OPTIMIZERS = {"sgd": (3, 2), "adam": (7, 12)}
"""Optimizer step per parameter: (memory accesses of a parameter-sized tensor, FLOPs)."""


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
    t_memory_s: float
    t_comm_s: float
    predicted_s: float
    """Forward and backward, each at its roofline, plus the block's exposed communication."""
    exposed_comm_s: float
    """The part of ``predicted_s`` that is communication not hidden behind computation."""
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


@dataclass(frozen=True, kw_only=True)
class Straggler:
    """A worker whose peak in one dimension slows the whole job."""

    rank: int
    node: str
    device: str
    dimension: str
    """compute | memory | communication."""
    slowdown: float
    """Predicted iteration time with the system peaks / with this worker like the median one."""
    value: float
    """The worker's peak in that dimension."""
    median: float
    """The median worker's peak in that dimension."""


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
            "stragglers": [asdict(s) for s in self.stragglers],
            "what_if": list(self.what_if),
            "notes": list(self.notes),
            "workers": list(self.workers),
        }


# ----------------------------------------------------------------------------- peaks of the job


@dataclass(frozen=True)
class _Comm:
    dp_bps: float | None
    dp_alpha_s: float
    pp_bps: float | None
    pp_alpha_s: float


def _link_between(cluster: ClusterSpec, a: Worker, b: Worker) -> tuple[float, float] | None:
    if a.node == b.node:
        link = next(n.intra_link for n in cluster.nodes if n.name == a.node)
    else:
        link = cluster.inter_link
    return None if link is None else (link.bandwidth_bps, link.latency_s)


def _comm(cluster: ClusterSpec, grid: list[list[Worker]], peaks: list[list[Peaks]]) -> _Comm:
    """grid[replica][stage] -> communication bandwidths of the data- and pipeline-parallel paths."""
    dp_bps = pp_bps = None
    dp_alpha = pp_alpha = 0.0
    replicas, stages = len(grid), len(grid[0])
    if replicas > 1:
        measured = [p.apb for row in peaks for p in row]
        if all(m is not None for m in measured):
            dp_bps = min(measured)
            dp_alpha = max(p.alpha_s or 0.0 for row in peaks for p in row)
        else:
            links = [
                _link_between(cluster, grid[0][s], grid[r][s])
                for s in range(stages)
                for r in range(1, replicas)
            ]
            links = [link for link in links if link is not None]
            if links:
                dp_bps, dp_alpha = min(b for b, _ in links), max(a for _, a in links)
    if stages > 1:
        hops = []
        for r in range(replicas):
            for s in range(stages - 1):
                a, b = grid[r][s], grid[r][s + 1]
                measured = peaks[r][s].p2p_beta_bps if a.node == b.node else None
                link = _link_between(cluster, a, b)
                if measured:
                    hops.append((measured, peaks[r][s].p2p_alpha_s or 0.0))
                elif link is not None:
                    hops.append(link)
        if hops:
            pp_bps, pp_alpha = min(b for b, _ in hops), max(a for _, a in hops)
    return _Comm(dp_bps, dp_alpha, pp_bps, pp_alpha)


def system_peaks(peaks: list[Peaks], comm_bps: float | None) -> SystemPeaks:
    """The slowest worker's APF and APM, and the communication bandwidth of the job."""
    return SystemPeaks(apf=min(p.apf for p in peaks), apm=min(p.apm for p in peaks), apb=comm_bps)


# ----------------------------------------------------------------------------- the iteration


def _phase_s(flops: float, mem_bytes: float, peaks: SystemPeaks) -> float:
    return max(flops / peaks.apf, mem_bytes / peaks.apm)


@dataclass
class _Timeline:
    compute_s: list[float]
    exposed_s: list[float]
    exposed_total_s: float
    bubble_s: float
    iteration_s: float


def _dp_allreduce(
    bwd_s: list[float],
    grad_bytes: list[float],
    factor: float,
    bps: float,
    alpha_s: float,
    parallel: Parallel,
    overlap: bool,
) -> tuple[float, list[float]]:
    """Exposed all-reduce time after the backward pass, and its share per block (DDP buckets)."""
    n = len(bwd_s)
    ready, t = [0.0] * n, 0.0
    for i in reversed(range(n)):
        t += bwd_s[i]
        ready[i] = t
    backward_end = t
    buckets: list[list[int]] = [[]]
    filled, cap = 0.0, DDP_FIRST_BUCKET_BYTES
    for i in reversed(range(n)):
        if grad_bytes[i] == 0:
            continue
        if filled and filled + grad_bytes[i] > cap:
            buckets.append([])
            filled, cap = 0.0, parallel.bucket_bytes
        buckets[-1].append(i)
        filled += grad_bytes[i]
    end, exposed = 0.0, [0.0] * n
    for bucket in (b for b in buckets if b):
        size = sum(grad_bytes[i] for i in bucket)
        start = max(end, ready[min(bucket)] if overlap else backward_end)
        duration = alpha_s + factor * size / bps
        end = start + duration
        sticking_out = max(0.0, end - max(start, backward_end))
        for i in bucket:
            exposed[i] += sticking_out * grad_bytes[i] / size
    return max(0.0, end - backward_end), exposed


def _timeline(
    profile: WorkloadProfile,
    stage_of: list[int],
    peaks: SystemPeaks,
    comm: _Comm,
    parallel: Parallel,
    overlap: bool,
    dp_factor: float,
    achieved: dict[str, tuple[float, float]] | None = None,
) -> _Timeline:
    layers = profile.layers
    if achieved is not None:
        fwd = [achieved[x.name][0] for x in layers]
        bwd = [achieved[x.name][1] for x in layers]
    else:
        fwd = [_phase_s(x.fwd_flops, x.fwd_bytes, peaks) for x in layers]
        bwd = [_phase_s(x.bwd_flops, x.bwd_bytes, peaks) for x in layers]
    exposed = [0.0] * len(layers)
    stages = max(stage_of) + 1
    if stages == 1:
        dp_exposed = 0.0
        if parallel.dp > 1 and comm.dp_bps:
            grads = [float(x.param_bytes) for x in layers]
            dp_exposed, exposed = _dp_allreduce(
                bwd, grads, dp_factor, comm.dp_bps, comm.dp_alpha_s, parallel, overlap
            )
        compute = [f + b for f, b in zip(fwd, bwd, strict=True)]
        return _Timeline(compute, exposed, dp_exposed, 0.0, sum(compute) + dp_exposed)
    mb = parallel.mb
    members = [[i for i, st in enumerate(stage_of) if st == s] for s in range(stages)]
    tau, p2p_total = [], 0.0
    for s, blocks in enumerate(members):
        p2p = 0.0
        if s < stages - 1 and comm.pp_bps:
            cut = layers[blocks[-1]].activation_bytes / mb
            p2p = 2 * (comm.pp_alpha_s + cut / comm.pp_bps)  # activation out, its gradient back
            exposed[blocks[-1]] += mb * p2p
            p2p_total += mb * p2p
        tau.append(sum(fwd[i] + bwd[i] for i in blocks) / mb + p2p)
    pipeline_s = sum(tau) + (mb - 1) * max(tau)
    bubble = max(0.0, pipeline_s - max(t * mb for t in tau))
    dp_exposed = 0.0
    if parallel.dp > 1 and comm.dp_bps:  # after the pipeline flush, every stage's gradients at once
        for blocks in members:
            size = sum(layers[i].param_bytes for i in blocks)
            duration = comm.dp_alpha_s + dp_factor * size / comm.dp_bps
            dp_exposed = max(dp_exposed, duration)
            for i in blocks:
                exposed[i] += duration * layers[i].param_bytes / size if size else 0.0
    compute = [f + b for f, b in zip(fwd, bwd, strict=True)]
    return _Timeline(compute, exposed, p2p_total + dp_exposed, bubble, pipeline_s + dp_exposed)


# ----------------------------------------------------------------------------- analyze


def _grid(cluster: ClusterSpec, parallel: Parallel) -> list[list[Worker]]:
    workers = cluster.workers()
    if parallel.workers > len(workers):
        raise UsageError(
            f"--parallel dp={parallel.dp},pp={parallel.pp} needs {parallel.workers} workers; cluster "
            f"{cluster.name!r} has {len(workers)}"
        )
    return [[workers[r * parallel.pp + s] for s in range(parallel.pp)] for r in range(parallel.dp)]


def _comm_bytes(
    profile: WorkloadProfile, stage_of: list[int], parallel: Parallel, dp_factor: float
) -> list[float]:
    out = []
    last = len(profile.layers) - 1
    for i, layer in enumerate(profile.layers):
        p = layer.param_bytes * dp_factor if parallel.dp > 1 else 0.0
        if i < last and stage_of[i] != stage_of[i + 1]:
            p += 2 * layer.activation_bytes  # the activation forward, its gradient back
        out.append(p)
    return out


def _predict(profile, stage_of, peaks, comm, parallel, overlap, dp_factor, optimizer) -> float:
    timeline = _timeline(profile, stage_of, peaks, comm, parallel, overlap, dp_factor)
    accesses, _ = OPTIMIZERS[optimizer]
    per_stage_params = [
        sum(x.param_bytes for x, s in zip(profile.layers, stage_of, strict=True) if s == k)
        for k in range(max(stage_of) + 1)
    ]
    return timeline.iteration_s + accesses * max(per_stage_params) / peaks.apm


def analyze(
    profile: WorkloadProfile,
    cluster: ClusterSpec,
    parallel: Parallel | None = None,
    *,
    optimizer: str = "sgd",
    straggler_threshold: float = 1.05,
    achieved: dict[str, tuple[float, float]] | None = None,
) -> RooflineResult:
    """MD-Roofline of one training iteration of ``profile`` (blocks) on ``cluster``.

    ``achieved`` maps block names to (forward, backward) seconds measured from operator-level
    achievable peaks (:mod:`.achieved`); they replace each phase's roofline time, and the
    communication and overlap model stays as it is.
    """
    parallel = parallel or Parallel()
    if profile.granularity != "blocks":
        raise UsageError("analyze needs a profile by blocks (--granularity blocks)")
    if optimizer not in OPTIMIZERS:
        raise UsageError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    grid = _grid(cluster, parallel)
    peaks_grid = [[w.peaks(profile.dtype) for w in row] for row in grid]
    flat_workers = [w for row in grid for w in row]
    flat_peaks = [p for row in peaks_grid for p in row]
    comm = _comm(cluster, grid, peaks_grid)
    if (parallel.dp > 1 and comm.dp_bps is None) or (parallel.pp > 1 and comm.pp_bps is None):
        raise UsageError(
            f"cluster {cluster.name!r} gives no bandwidth between the workers this layout uses: "
            "add intra_link/inter_link or measure with --nproc 2 or more"
        )
    apb = (
        min(b for b in (comm.dp_bps, comm.pp_bps) if b is not None)
        if (comm.dp_bps or comm.pp_bps)
        else None
    )
    sys_peaks = system_peaks(flat_peaks, apb)
    overlap = (
        parallel.overlap
        if parallel.overlap is not None
        else not any(_is_cpu(w) for w in flat_workers)
    )
    dp_factor = 2 * (parallel.dp - 1) / parallel.dp
    block_s = [_phase_s(x.flops, x.bytes, sys_peaks) for x in profile.layers]
    stage_of = (
        balanced_stages(block_s, parallel.pp) if parallel.pp > 1 else [0] * len(profile.layers)
    )
    comm_bytes = _comm_bytes(profile, stage_of, parallel, dp_factor)
    if achieved is not None and {x.name for x in profile.layers} - achieved.keys():
        raise UsageError("achieved block times do not cover every block of the profile")
    timeline = _timeline(profile, stage_of, sys_peaks, comm, parallel, overlap, dp_factor, achieved)
    accesses, opt_flops = OPTIMIZERS[optimizer]
    params_bytes = [
        sum(x.param_bytes for x, s in zip(profile.layers, stage_of, strict=True) if s == k)
        for k in range(parallel.pp)
    ]
    optimizer_s = max(accesses * b / sys_peaks.apm for b in params_bytes)
    iteration_s = timeline.iteration_s + optimizer_s

    layers, shares = [], {"compute": 0.0, "memory": 0.0, "communication": 0.0}
    for i, x in enumerate(profile.layers):
        point = locate(x.flops, x.bytes, comm_bytes[i], sys_peaks)
        predicted = timeline.compute_s[i] + timeline.exposed_s[i]
        shares["compute" if point.t_compute_s >= point.t_memory_s else "memory"] += (
            timeline.compute_s[i]
        )
        layers.append(_layer(x.name, x.kind, stage_of[i], point, predicted, timeline.exposed_s[i]))
    shares["communication"] += timeline.exposed_total_s
    shares["memory"] += optimizer_s
    if parallel.pp > 1:
        shares["bubble"] = timeline.bubble_s
    total = sum(shares.values()) or 1.0
    totals = profile.totals
    flops = totals["fwd_flops"] + totals["bwd_flops"] + opt_flops * totals["params"]
    mem = totals["fwd_bytes"] + totals["bwd_bytes"] + accesses * totals["param_bytes"]
    whole = locate(flops, mem, sum(comm_bytes), sys_peaks)
    iteration = IterationResult(
        predicted_s=iteration_s,
        bound_shares={k: v / total for k, v in shares.items()},
        flops=flops,
        mem_bytes=mem,
        comm_bytes=sum(comm_bytes),
        A=whole.a,
        O=whole.o,
        C=whole.c,
        plane=whole.plane,
        bound=whole.bound,
        t_compute_s=whole.t_compute_s,
        t_memory_s=whole.t_memory_s,
        t_comm_s=whole.t_comm_s,
        exposed_comm_s=timeline.exposed_total_s,
        optimizer_s=optimizer_s,
        bubble_s=timeline.bubble_s,
    )

    def predict_with(p: SystemPeaks) -> float:
        return _predict(profile, stage_of, p, comm, parallel, overlap, dp_factor, optimizer)

    stragglers = _stragglers(
        flat_workers, flat_peaks, sys_peaks, comm, predict_with, iteration_s, straggler_threshold
    )
    origins = sorted({p.origin for p in flat_peaks})
    notes = []
    if "measured" not in origins:
        notes.append(
            "peaks are datasheet numbers, not achievable ones: measure with `trainplay hw measure` "
            "for MD-Roofline's achievable peaks"
        )
    if achieved is not None:
        notes.append("block compute times come from operator-level achievable peaks measured here")
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
    name: str, kind: str, stage: int, point: Point, predicted_s: float, exposed_s: float
) -> LayerResult:
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
        bound=point.bound,
        t_compute_s=point.t_compute_s,
        t_memory_s=point.t_memory_s,
        t_comm_s=point.t_comm_s,
        predicted_s=predicted_s,
        exposed_comm_s=exposed_s,
        achieved_flops=point.flops / predicted_s if predicted_s else 0.0,
        roof_flops=point.roof_flops,
    )


def _is_cpu(worker: Worker) -> bool:
    return worker.device.type == "cpu" or worker.device.name.startswith("cpu")


def _stragglers(
    workers, peaks, sys_peaks, comm, predict_with, iteration_s, threshold
) -> tuple[Straggler, ...]:
    """Each worker whose APF, APM or APB is the system's and lies below the median worker's:
    slowdown = predicted time with the system peaks / predicted time if it matched the median."""
    if len(workers) < 2:
        return ()
    found = []
    dims = {"compute": "apf", "memory": "apm", "communication": "apb"}
    for dimension, attr in dims.items():
        values = [getattr(p, attr) for p in peaks]
        if any(v is None for v in values) or (attr == "apb" and sys_peaks.apb is None):
            continue
        median = statistics.median(values)
        slowest = min(range(len(values)), key=values.__getitem__)
        if values[slowest] >= median:
            continue
        others = [v for i, v in enumerate(values) if i != slowest]
        lifted = {attr: min([*others, median])}
        if attr == "apb":
            lifted["apb"] = min(lifted["apb"] / values[slowest] * sys_peaks.apb, max(values))
        candidate = SystemPeaks(
            **{**{"apf": sys_peaks.apf, "apm": sys_peaks.apm, "apb": sys_peaks.apb}, **lifted}
        )
        slowdown = iteration_s / predict_with(candidate)
        if slowdown > threshold:
            w = workers[slowest]
            found.append(
                Straggler(
                    rank=w.rank,
                    node=w.node,
                    device=w.device.name,
                    dimension=dimension,
                    slowdown=slowdown,
                    value=values[slowest],
                    median=median,
                )
            )
    return tuple(sorted(found, key=lambda s: -s.slowdown))
