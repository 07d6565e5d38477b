"""A training iteration of a profiled model on a grid of workers, priced by the one cost model.

:func:`predict` is what :func:`~trainplay.roofline.analysis.analyze` and the straggler analysis
share: each worker prices its stage's blocks with its own peaks and performance profile
(:mod:`trainplay.roofline.cost`), each stage runs at its slowest replica, and
:mod:`trainplay.roofline.timeline` puts the all-reduce, the pipeline and the optimizer around them.

Communication paths (the same rule the planner uses, :mod:`trainplay.plan.costs`):

- each stage's data-parallel all-reduce is a ring over that stage's replicas, priced by
  :func:`~trainplay.roofline.cost.ring_allreduce_s`: every member's measured all-reduce curve
  when all measured one (the slowest member's price counts), else their measured bus bandwidth,
  else the slowest link between consecutive members (the node's ``intra_link`` within a node, the
  cluster's ``inter_link`` across nodes);
- a pipeline cut uses the sender's measured point-to-point curve when both ends are on one node
  and measured one, else the link between them;
- a tied parameter whose users lie in several stages (``profile.ties``) is held as a copy by each
  later stage (its optimizer step counts it) and reduced over every replica of those stages, not
  with its stage's replicas: a ring of its own after theirs, priced as the data-parallel one is.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainplay.errors import UsageError
from trainplay.hardware.spec import ClusterSpec, Peaks, Worker
from trainplay.roofline import cost
from trainplay.roofline.layout import Parallel
from trainplay.roofline.timeline import BlockWork, TiedReduce, Timeline, iteration_timeline
from trainplay.workload.stats import Tie, WorkloadProfile

__all__ = [
    "Grid",
    "Prediction",
    "link_between",
    "predict",
    "ring_links",
    "split_ties",
    "stage_ring",
]


@dataclass(frozen=True)
class Grid:
    """Workers by replica, then stage, with the peaks each runs at."""

    workers: tuple[tuple[Worker, ...], ...]
    peaks: tuple[tuple[Peaks, ...], ...]

    @property
    def flat(self) -> list[tuple[Worker, Peaks]]:
        return [
            (w, p)
            for row_w, row_p in zip(self.workers, self.peaks, strict=True)
            for w, p in zip(row_w, row_p, strict=True)
        ]

    def with_peaks(self, changed: dict[int, Peaks]) -> Grid:
        """The same workers, ranks in ``changed`` at other peaks (a what-if)."""
        return Grid(
            self.workers,
            tuple(
                tuple(changed.get(w.rank, p) for w, p in zip(rw, rp, strict=True))
                for rw, rp in zip(self.workers, self.peaks, strict=True)
            ),
        )


@dataclass(frozen=True)
class Prediction:
    timeline: Timeline
    critical: tuple[int, ...]
    """Per stage, the replica that is slowest, its cut to the next stage included (the one whose
    block times and cut the timeline uses: replicas run in lock step)."""


def link_between(cluster: ClusterSpec, a: Worker, b: Worker) -> tuple[float, float] | None:
    """(bytes/s one way, latency s) of the path between two workers, or ``None`` if the cluster
    gives none."""
    if a.node == b.node:
        link = next(n.intra_link for n in cluster.nodes if n.name == a.node)
    else:
        link = cluster.inter_link
    return None if link is None else (link.bandwidth_bps, link.latency_s)


def ring_links(
    cluster: ClusterSpec, ring: list[tuple[Worker, Peaks]]
) -> list[tuple[float, float] | None]:
    """Each member's link to the next, round the ring (:func:`link_between`)."""
    pairs = zip(ring, ring[1:] + ring[:1], strict=True)
    return [link_between(cluster, a, b) for (a, _), (b, _) in pairs]


def _ring_s(cluster: ClusterSpec, ring: list[tuple[Worker, Peaks]], nbytes: float) -> float:
    """One all-reduce of ``nbytes`` over ``ring`` (workers in ring order, each with its peaks):
    :func:`~trainplay.roofline.cost.ring_allreduce_s`, each worker's link to the next."""

    def links() -> list[tuple[float, float]]:
        found = ring_links(cluster, ring)
        if any(link is None for link in found):
            raise UsageError(
                f"cluster {cluster.name!r} gives no bandwidth between the workers this layout "
                "uses: add intra_link/inter_link or measure with --nproc 2 or more"
            )
        return found  # type: ignore[return-value]

    return cost.ring_allreduce_s(nbytes, [p for _, p in ring], links)


def stage_ring(grid: Grid, stage: int) -> list[tuple[Worker, Peaks]]:
    """The replicas of ``stage``, in replica order: its data-parallel group."""
    return [
        (row_w[stage], row_p[stage]) for row_w, row_p in zip(grid.workers, grid.peaks, strict=True)
    ]


def _cut_s(
    cluster: ClusterSpec, a: tuple[Worker, Peaks], b: tuple[Worker, Peaks], nbytes: float
) -> float:
    """Sending ``nbytes`` from ``a`` to ``b`` and the same back (activation, its gradient)."""
    (wa, pa), (wb, pb) = a, b
    measured = all(p.profile is not None and p.profile.p2p is not None for p in (pa, pb))
    if wa.node == wb.node and measured:
        return 2 * cost.transfer_s(nbytes, profile=pa.profile)
    link = link_between(cluster, wa, wb)
    if link is None:
        raise UsageError(
            f"cluster {cluster.name!r} gives no bandwidth between the workers this layout uses: "
            "add intra_link/inter_link or measure with --nproc 2 or more"
        )
    return 2 * cost.transfer_s(nbytes, link=link)


def predict(
    profile: WorkloadProfile,
    cluster: ClusterSpec,
    grid: Grid,
    stage_of: list[int],
    parallel: Parallel,
    *,
    overlap: bool,
    optimizer: str,
    micro: WorkloadProfile | None = None,
) -> Prediction:
    """The iteration of ``profile`` (a replica's batch) on ``grid``; ``micro`` is the same model
    profiled at one micro-batch, for pipelines (else the batch's costs are divided evenly)."""
    stages = max(stage_of) + 1
    per_micro = micro if (stages > 1 and micro is not None) else None
    timed = per_micro or profile
    divide = parallel.mb if stages > 1 and per_micro is None else 1
    replicas = len(grid.workers)
    critical, works = [], [None] * len(profile.layers)
    stage_params = [0.0] * stages
    stage_tensors = [0] * stages
    for i, layer in enumerate(profile.layers):  # fp32 master weights (cost: "Mixed precision")
        stage_params[stage_of[i]] += cost.master_bytes(layer.param_bytes, profile.dtype)
        stage_tensors[stage_of[i]] += layer.param_tensors
    bounds = [stage_of.index(k) for k in range(stages)] + [len(stage_of)]
    split = split_ties(profile, stage_of)
    for tie in profile.ties:  # a later stage's copy (module docstring)
        for k in range(stages):
            if tie.copied_in(bounds[k], bounds[k + 1]):
                stage_params[k] += cost.master_bytes(tie.bytes, profile.dtype)
                stage_tensors[k] += 1
    optimizer_s = 0.0
    for s in range(stages):
        blocks = [i for i, k in enumerate(stage_of) if k == s]
        best: tuple[float, int, list, float] | None = None
        saved = sum(timed.layers[i].saved_bytes for i in blocks) / divide
        for r in range(replicas):
            peaks = grid.peaks[r][s]
            stale = cost.stale_weights(stage_params[s], saved, optimizer, peaks.profile)
            phases = []
            for i in blocks:
                layer = timed.layers[i]
                fwd = _scaled(cost.phase_time(layer.ops, "fwd", peaks, stale), divide)
                bwd = _scaled(cost.phase_time(layer.ops, "bwd", peaks, stale), divide)
                if stages > 1 and parallel.mb > 1:  # each later micro-batch adds its gradients
                    master = cost.master_bytes(layer.param_bytes, profile.dtype)
                    add = cost.accumulate_s(master, layer.param_tensors, peaks)
                    spread = add * (parallel.mb - 1) / parallel.mb
                    bwd = bwd + cost.PhaseTime(spread, 0.0, spread, 0.0)
                phases.append((fwd, bwd))
            cut = 0.0  # this replica's cut after the stage: the replicas' links may differ
            if s < stages - 1:
                cut = _cut_s(
                    cluster,
                    (grid.workers[r][s], grid.peaks[r][s]),
                    (grid.workers[r][s + 1], grid.peaks[r][s + 1]),
                    timed.layers[blocks[-1]].activation_bytes / divide,
                )
            total = sum(f.total_s + b.total_s for f, b in phases) + cut
            if best is None or total > best[0]:
                best = (total, r, phases, cut)
            optimizer_s = max(
                optimizer_s, cost.optimizer_s(stage_params[s], stage_tensors[s], peaks, optimizer)
            )
        assert best is not None
        critical.append(best[1])
        for i, (fwd, bwd) in zip(blocks, best[2], strict=True):
            cut = best[3] if i == blocks[-1] else 0.0
            # a split tie is reduced on its own, not with its first user's stage
            own = profile.layers[i].param_bytes - sum(t.bytes for t, _ in split if t.blocks[0] == i)
            works[i] = BlockWork(fwd, bwd, cost.master_bytes(own, profile.dtype), cut)
    allreduce, ddp_s = None, 0.0
    if replicas > 1:
        rings = [stage_ring(grid, s) for s in range(stages)]
        if stages == 1:  # DistributedDataParallel; a pipeline's replicas reduce on their own
            ddp_s = max(cost.ddp_step_s(stage_tensors[0], row[0]) for row in grid.peaks)

        def allreduce(stage: int, nbytes: float) -> float:
            return _ring_s(cluster, rings[stage], nbytes)

    timeline = iteration_timeline(
        works,  # type: ignore[arg-type]
        stage_of,
        microbatches=parallel.mb,
        allreduce=allreduce,
        bucket_bytes=parallel.bucket_bytes,
        overlap=overlap,
        optimizer_s=optimizer_s,
        tied=_tied(cluster, grid, profile.dtype, split),
        ddp_s=ddp_s,
    )
    return Prediction(timeline, tuple(critical))


def split_ties(
    profile: WorkloadProfile, stage_of: list[int]
) -> tuple[tuple[Tie, tuple[int, ...]], ...]:
    """Each tied parameter whose users lie in several stages, with those stages."""
    out = []
    for tie in profile.ties:
        stages = tuple(sorted({stage_of[k] for k in tie.blocks}))
        if len(stages) > 1:
            out.append((tie, stages))
    return tuple(out)


def _tied(
    cluster: ClusterSpec, grid: Grid, dtype: str, split: tuple[tuple[Tie, tuple[int, ...]], ...]
) -> tuple[TiedReduce, ...]:
    """Each split tie (:func:`split_ties`): its gradient's all-reduce over every replica of its
    stages (a ring in stage order), priced as the data-parallel one."""
    out = []
    for tie, stages in split:
        ring = [member for s in stages for member in stage_ring(grid, s)]
        seconds = _ring_s(cluster, ring, cost.master_bytes(tie.bytes, dtype))
        out.append(TiedReduce(stages, seconds, tie.blocks[-1]))
    return tuple(out)


def _scaled(p: cost.PhaseTime, divide: int) -> cost.PhaseTime:
    if divide == 1:
        return p
    return cost.PhaseTime(
        p.total_s / divide, p.compute_s / divide, p.memory_s / divide, p.overhead_s / divide
    )
