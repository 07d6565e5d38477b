"""One training iteration in time: blocks, the data-parallel all-reduce, the pipeline, the optimizer.

What overlaps with what, stated once (the overlap model DESIGN.md asks for):

- **Within a phase of a block** operators run one after another; each is priced by
  :mod:`trainplay.roofline.cost` (its kernel at its class's achieved rate, plus its fixed cost).
- **Data parallelism** all-reduces gradients in DistributedDataParallel's buckets (1 MiB first,
  then 25 MiB, filled in reverse order of the blocks). A bucket's all-reduce starts when its last
  gradient is ready and the previous all-reduce is done, and costs
  :func:`~trainplay.roofline.cost.ring_allreduce_s` over its stage's replicas for its bytes
  (the reducer's copies into and out of the bucket included). With ``overlap`` (GPUs: NCCL runs on
  its own stream) the all-reduces run during the rest of the backward pass; without (CPUs: gloo
  reduces on the cores that compute) they follow it. Only what sticks out past the backward is
  exposed time. DistributedDataParallel's own work per step (``ddp_s``,
  :func:`~trainplay.roofline.cost.ddp_step_s`) follows with them, exposed too, shared among the
  blocks as their gradients' bytes are.
- **Pipeline parallelism** runs GPipe: stage ``s`` takes ``tau_s`` per micro-batch (its blocks'
  forward and backward at the micro-batch size, plus sending the activation and receiving its
  gradient at its cut); the iteration takes ``sum(tau) + (mb - 1) * max(tau)`` (the flow-shop
  form the planner's simulator also satisfies). Gradients are all-reduced after the flush, every
  stage at once; the slowest stage's all-reduce is exposed. A tied parameter whose users lie in
  several stages (GPT-2's embedding and head) has its gradient summed over every replica of those
  stages, after their own all-reduces (:class:`TiedReduce`; as the planner prices it,
  ``plan.layout.allreduces_s``).
- **Replicas run in lock step**: each stage is as slow as its slowest replica.
- **The optimizer step** follows the all-reduce, every stage at once; the slowest stage's counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trainplay.roofline.cost import PhaseTime
from trainplay.roofline.layout import DDP_FIRST_BUCKET_BYTES

__all__ = ["BlockWork", "TiedReduce", "Timeline", "iteration_timeline"]


@dataclass(frozen=True)
class BlockWork:
    """One block as the timeline needs it: its two phases on the device that runs it (for the
    whole batch of a replica, or for one micro-batch in a pipeline), and its sizes."""

    fwd: PhaseTime
    bwd: PhaseTime
    grad_bytes: float
    """Bytes of its gradients (what data parallelism all-reduces)."""
    cut_s: float = 0.0
    """Per micro-batch: sending the activation after this block and receiving its gradient, when
    a stage boundary follows it (0 otherwise)."""


@dataclass(frozen=True)
class TiedReduce:
    """The all-reduce of a tied parameter's gradient over the stages holding its users."""

    stages: tuple[int, ...]
    seconds: float
    block: int
    """The block its exposed time is shown on (its last user, which holds the copy)."""


@dataclass(frozen=True)
class Timeline:
    block_s: tuple[PhaseTime, ...]
    """Per block, forward plus backward over the whole iteration (all micro-batches)."""
    exposed_s: tuple[float, ...]
    """Per block, communication of its own that is not hidden."""
    exposed_total_s: float
    bubble_s: float
    optimizer_s: float
    iteration_s: float


def _buckets(grad_bytes: list[float], bucket_bytes: float) -> list[list[int]]:
    """DDP's buckets, filled from the last block backwards: 1 MiB first, then ``bucket_bytes``."""
    buckets: list[list[int]] = [[]]
    filled, cap = 0.0, DDP_FIRST_BUCKET_BYTES
    for i in reversed(range(len(grad_bytes))):
        if grad_bytes[i] == 0:
            continue
        if filled and filled + grad_bytes[i] > cap:
            buckets.append([])
            filled, cap = 0.0, bucket_bytes
        buckets[-1].append(i)
        filled += grad_bytes[i]
    return [b for b in buckets if b]


def _dp_exposed(
    blocks: list[BlockWork],
    allreduce: Callable[[int, float], float],
    bucket_bytes: float,
    overlap: bool,
) -> tuple[float, list[float]]:
    """Exposed all-reduce time after the backward pass, and its share per block."""
    n = len(blocks)
    ready, t = [0.0] * n, 0.0
    for i in reversed(range(n)):
        t += blocks[i].bwd.total_s
        ready[i] = t
    backward_end = t
    grads = [b.grad_bytes for b in blocks]
    end, exposed = 0.0, [0.0] * n
    for bucket in _buckets(grads, bucket_bytes):
        size = sum(grads[i] for i in bucket)
        start = max(end, ready[min(bucket)] if overlap else backward_end)
        end = start + allreduce(0, size)
        sticking_out = max(0.0, end - max(start, backward_end))
        for i in bucket:
            exposed[i] += sticking_out * grads[i] / size
    return max(0.0, end - backward_end), exposed


def iteration_timeline(
    blocks: list[BlockWork],
    stage_of: list[int],
    *,
    microbatches: int,
    allreduce: Callable[[int, float], float] | None,
    bucket_bytes: float,
    overlap: bool,
    optimizer_s: float,
    tied: tuple[TiedReduce, ...] = (),
    ddp_s: float = 0.0,
) -> Timeline:
    """The iteration of ``blocks`` (per micro-batch when there are several stages) cut into the
    stages of ``stage_of``; ``allreduce(stage, bytes)`` prices one data-parallel all-reduce of
    that stage's replicas (``None`` without data parallelism); ``tied``: the tied parameters'
    all-reduces across stages; ``ddp_s``: DistributedDataParallel's own work per step (one stage
    with data parallelism)."""
    stages = max(stage_of) + 1
    n = len(blocks)
    if stages == 1:
        exposed_total, exposed = 0.0, [0.0] * n
        if allreduce is not None:
            exposed_total, exposed = _dp_exposed(blocks, allreduce, bucket_bytes, overlap)
            grads = sum(b.grad_bytes for b in blocks)
            if ddp_s and grads:
                exposed_total += ddp_s
                exposed = [
                    e + ddp_s * b.grad_bytes / grads for e, b in zip(exposed, blocks, strict=True)
                ]
        per_block = tuple(b.fwd + b.bwd for b in blocks)
        compute = sum(p.total_s for p in per_block)
        return Timeline(
            per_block,
            tuple(exposed),
            exposed_total,
            0.0,
            optimizer_s,
            compute + exposed_total + optimizer_s,
        )
    mb = microbatches
    members = [[i for i, s in enumerate(stage_of) if s == k] for k in range(stages)]
    exposed = [0.0] * n
    tau, p2p_total = [], 0.0
    for blocks_of_stage in members:
        last = blocks_of_stage[-1]
        cut = blocks[last].cut_s
        exposed[last] += mb * cut
        p2p_total += mb * cut
        tau.append(
            sum(blocks[i].fwd.total_s + blocks[i].bwd.total_s for i in blocks_of_stage) + cut
        )
    pipeline_s = sum(tau) + (mb - 1) * max(tau)
    bubble = max(0.0, pipeline_s - max(t * mb for t in tau))
    done = [0.0] * stages
    if allreduce is not None:
        for k, blocks_of_stage in enumerate(members):
            size = sum(blocks[i].grad_bytes for i in blocks_of_stage)
            done[k] = allreduce(k, size) if size else 0.0
            for i in blocks_of_stage:
                exposed[i] += done[k] * blocks[i].grad_bytes / size if size else 0.0
    own = max(done)
    for tie in tied:  # after each of its stages' own all-reduce, in the runtime's order
        end = max(done[k] for k in tie.stages) + tie.seconds
        for k in tie.stages:
            done[k] = end
    dp_exposed = max(done)
    if tied:
        exposed[tied[-1].block] += dp_exposed - own
    per_block = tuple(_times(b.fwd + b.bwd, mb) for b in blocks)
    return Timeline(
        per_block,
        tuple(exposed),
        p2p_total + dp_exposed,
        bubble,
        optimizer_s,
        pipeline_s + dp_exposed + optimizer_s,
    )


def _times(p: PhaseTime, k: int) -> PhaseTime:
    return PhaseTime(p.total_s * k, p.compute_s * k, p.memory_s * k, p.overhead_s * k)
