"""The one cost model: what an operator, a block, a transfer, an all-reduce and an optimizer step
cost on a device. ``analyze``, the planner (search, baselines, simulator), ``train``'s choice of
plan and the makespan rule all price through these functions (DESIGN.md, "One cost model").

**An operator call** of class ``k`` (:mod:`trainplay.workload.opclass`) with ``F`` FLOPs and ``M``
bytes, on a device with peaks APF, APM and performance profile ``P``
(:mod:`trainplay.hardware.profile`):

- compute time ``t_c = F / R_k(F, F/M)`` for a compute class (GEMM, convolution, attention),
  where ``R_k`` is the class's measured rate as a function of the call's FLOPs and intensity (a
  skinny matrix product streams its weight far below the peak a square one of the same FLOPs
  reaches), or ``R_k(F, P)`` by the output map's positions ``P`` for a 1x1 convolution on a narrow
  map (``conv_1x1_narrow``: ATen's per-sample product with ``P`` columns, whose speed follows ``P``
  and not the intensity; a profile without the class reads ``conv_1x1_few``'s by intensity);
  ``F / APF`` for the others;
- memory time ``t_m = M / R_k(M)`` for a memory class (normalisation, elementwise, reduction,
  pooling, copy, grouped convolution; a grouped convolution's rate is ``R_k(M, F/M)``, by its
  FLOP per byte too, which tells its kernel's size and stride); ``M / APM`` for the others;
- kernel time ``max(t_c, t_m)``: within one operator compute and memory traffic overlap (the
  roofline's assumption), each at the rate the device achieves for that class and size; the larger
  names the operator's bound;
- plus the fixed cost of a call ``o`` (dispatch, autograd's bookkeeping, a GPU's launch): on a
  device that runs operators synchronously (a CPU) the call takes ``o + max(t_c, t_m)``; on an
  asynchronous one (a GPU, whose host enqueues while the device computes) ``max(o, max(t_c, t_m))``
  — the host's cost shows only where kernels are shorter than it.

On a CPU a call whose data fits in half the effective cache runs at the class's hot-cache rate
(the operator before it just wrote its input), a larger one at the cold-cache rate
(:class:`~trainplay.hardware.profile.PerfProfile`). A small matrix product or dense convolution
runs at its class's *stale* rate instead (input in the cache, weight and saved input from memory)
when its weight cannot still be cached: when what a device streams between two uses of a weight
exceeds the cache (:func:`stale_weights`), and at its *warm* rate when it can (weight and saved
input cycled through half the cache: read from the cache the cores share, not the core's own,
since every other layer ran between two uses of them). On a device whose data outgrows the cache
between two uses, a small call of a memory class (no weight: normalisations, elementwise,
reductions, pooling, copies, depthwise and grouped convolutions) runs at its class's *step* rate
where the profile has one: its first operand in the cache, its other tensors stale and its output
written where nothing ran lately, as a forward that keeps its activations allocates it
(:attr:`~trainplay.hardware.measure.sweeps.SweepResult.step_s`). Without a profile
(datasheet-only devices) every operator runs at the roofs, ``max(F/APF, M/APM)``, with no fixed
cost: MD-Roofline's plain roofline.

**A block** in one phase is the sum of its operators (they run one after another on one stream).

**A transfer** of ``b`` bytes between two devices (a pipeline cut) costs ``alpha + b / R(b)`` with
the measured point-to-point rate curve when both ends measured one, else the link's ``latency + b
/ bandwidth`` (Hockney's alpha-beta model). ``alpha`` is the fixed cost of a message between
pipeline stages as ``torch.distributed.pipelining``'s schedule sends it, where the sender's
profile measured one (``schedule.message``, :mod:`trainplay.hardware.measure.messages`: on a CPU
it waits for gloo's threads, several times the ping-pong latency), else the ping-pong latency.

**A ring all-reduce** of ``b`` bytes over ``n`` members moves ``2(n-1)/n · b`` per member (Thakur,
Rabenseifner and Gropp, "Optimization of collective communication operations in MPICH", 2005):
``alpha + 2(n-1)/n · b / busbw(b)`` with a measured bus-bandwidth curve (NCCL-tests convention;
gloo and NCCL rings both move that traffic), else ``alpha + 2(n-1)/n · b / APB`` with a measured
bus bandwidth without a curve, else ``2(n-1) · latency + 2(n-1)/n · b / bandwidth`` over the
ring's slowest link (its members in ring order, each to the next). DistributedDataParallel's
copies into and out of its buckets come first (:func:`reducer_s`). :func:`ring_allreduce_s` is
that rule, for a stage's replicas, a tied parameter's ring and the planner's rings alike.

**DistributedDataParallel's own work** per training step, beyond its all-reduces and bucket
copies: a fixed cost plus one per parameter tensor (:func:`ddp_step_s`), measured by ``trainplay
hw measure`` on a CPU worker group (:mod:`trainplay.hardware.measure.ddp`: the Python around each
forward with its broadcast of the buffers, the autograd hook and the reducer's bookkeeping per
parameter, the wait for a bucket's all-reduce whose gloo thread shares the CPU of the rank's
compute). It follows the backward with the all-reduces (exposed). Priced 0 where not measured: a
GPU, whose host runs it behind the kernels.

**Gradient accumulation** over the micro-batches of a pipeline stage: each micro-batch's backward
adds its weight gradients into the ones accumulated so far (``param.grad += g``, autograd's
``AccumulateGrad``), an in-place add per parameter tensor that reads both and writes one (three
parameter-sized passes, at the elementwise class's rate). The first micro-batch's gradient is
stored without an add (``zero_grad(set_to_none=True)``), so ``M`` micro-batches pay it ``M - 1``
times; it runs inside the backward, on the critical path.

**The training runtime's own work** (``trainplay train``; measured by ``trainplay hw measure``
on a CPU, where it is not hidden behind a device's kernels): every plan, one stage included, runs
through ``torch.distributed.pipelining``'s schedule, which adds a fixed cost per step and one per
micro-batch on each stage (:func:`schedule_microbatch_s`, :func:`schedule_step_s`; split evenly
between a micro-batch's forward and backward: an assumption). Around the schedule the step loop
reduces the loss, gathers the timers and writes the journal line; where ``hw measure`` timed that
loop on a stand-in job (one CPU worker: :mod:`trainplay.runtime.loopcost`), the loop's time per
step beyond one micro-batch's schedule cost replaces the schedule's fixed cost per step
(:func:`loop_step_s`). A plan of several ranks also agrees
on each step: one gather of the ranks' timers and one all-reduce of a stop flag, two collectives
of a few bytes over all its ranks (:func:`agreement_s`, at the measured all-reduce latency).

**Mixed precision** (bf16/fp16) trains as ``trainplay train`` runs it (``runtime/precision.py``)
and as ``torch.autocast`` recipes do: over fp32 master weights. A profile counts parameters at the
training dtype, so a gradient, its accumulation, its all-reduce and the optimizer's state are
:func:`master_bytes` of them (twice a half-precision parameter's bytes). A framework that keeps
half-precision parameters and reduces their gradients in half precision (Megatron-LM's ``--fp16``)
says so where it is priced (``CostModel.grad_bytes_per_param_byte``).

**The optimizer step** over a stage's parameters: per parameter tensor a fixed cost, plus the bytes
it streams (SGD with momentum: parameter, gradient and momentum read, parameter and momentum
written; Adam: also two moments) at the optimizer's measured rate, else at APM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trainplay.hardware.profile import Curve, PerfProfile, Surface
from trainplay.hardware.spec import Peaks
from trainplay.workload.opclass import BY_POSITIONS, COMPUTE_CLASSES, FALLBACK
from trainplay.workload.stats import DTYPE_BYTES, OpGroup

__all__ = [
    "AGREEMENT_BYTES",
    "LOOP_KEY",
    "OPTIMIZERS",
    "STALE_LOOP_KEY",
    "PhaseTime",
    "accumulate_s",
    "agreement_s",
    "allreduce_s",
    "call_s",
    "ddp_step_s",
    "link_allreduce_s",
    "loop_step_s",
    "master_bytes",
    "optimizer_s",
    "phase_time",
    "reducer_s",
    "schedule_microbatch_s",
    "schedule_step_s",
    "stale_weights",
    "transfer_s",
]

OPTIMIZERS = {"sgd": (5, 2), "adam": (7, 12)}
"""Optimizer step per parameter element: (accesses of a parameter-sized tensor, FLOPs). SGD is
with momentum (read parameter, gradient and momentum buffer; write buffer and parameter), Adam
reads parameter, gradient and two moments and writes the three it updates."""

STATE_TENSORS = {"sgd": 3, "adam": 4}
"""Parameter-sized tensors an optimizer step streams (SGD with momentum: parameter, gradient,
momentum buffer; Adam: parameter, gradient, two moments)."""


MASTER_ELEMENT_BYTES = 4
"""Bytes of an element of the master weights, their gradients and the optimizer state (fp32)."""


def master_bytes(param_bytes: float, dtype: str) -> float:
    """The fp32 master copy's bytes of ``param_bytes`` of parameters counted at ``dtype`` (the
    module docstring, "Mixed precision")."""
    return param_bytes * MASTER_ELEMENT_BYTES / DTYPE_BYTES[dtype]


def stale_weights(
    param_bytes: float, saved_bytes: float, optimizer: str, profile: PerfProfile | None
) -> bool:
    """Whether a device holding ``param_bytes`` of parameters and ``saved_bytes`` of activations
    saved for the backward finds a weight evicted when it uses it again. Between a weight's
    forward and its backward the device streams the rest of its forward and backward (the other
    weights, the saved activations); between its backward and the next forward, the optimizer
    step over every parameter-sized tensor (:data:`STATE_TENSORS`). A least-recently-used cache
    keeps a datum exactly when fewer distinct bytes than its capacity were touched since its last
    use (the stack distance of Mattson, Gecsei, Slutz and Traiger, "Evaluation techniques for
    storage hierarchies", IBM Systems Journal 9(2), 1970), so the weights are stale when those
    bytes exceed the footprint this CPU streams at cache speed (``cache_bytes``; never on a
    device without one, a GPU)."""
    if profile is None or profile.cache_bytes is None:
        return False
    touched = STATE_TENSORS.get(optimizer, 3) * param_bytes + saved_bytes
    return touched > profile.cache_bytes


@dataclass(frozen=True)
class PhaseTime:
    """A phase (forward or backward) of a block on a device, and where its time goes."""

    total_s: float
    compute_s: float
    """Kernel time of the operators whose larger part is compute."""
    memory_s: float
    """Kernel time of the operators whose larger part is memory traffic."""
    overhead_s: float
    """Fixed per-call cost that is not hidden behind kernels."""

    def __add__(self, other: PhaseTime) -> PhaseTime:
        return PhaseTime(
            self.total_s + other.total_s,
            self.compute_s + other.compute_s,
            self.memory_s + other.memory_s,
            self.overhead_s + other.overhead_s,
        )

    @property
    def bound(self) -> str:
        """compute | memory | overhead: where most of the phase's time goes."""
        parts = {"compute": self.compute_s, "memory": self.memory_s, "overhead": self.overhead_s}
        return max(parts, key=parts.__getitem__)


ZERO = PhaseTime(0.0, 0.0, 0.0, 0.0)


_MEMO: dict[tuple, tuple[object, float, bool]] = {}
"""Kernel times already priced, by the profile's identity and the call: the planner prices the
same operators (a decoder's repeated blocks) on the same devices many thousand times, and a
surface's interpolation is the costly part. The profile object is kept to check identity."""
_MEMO_LIMIT = 500_000


def _kernel(
    cls: str,
    phase: str,
    op: str | None,
    flops: float,
    nbytes: float,
    peaks: Peaks,
    stale: bool,
    positions: int = 0,
) -> tuple[float, bool]:
    """(kernel seconds of one call, whether compute is its larger part)."""
    profile = peaks.profile
    key = (id(profile), peaks.apf, peaks.apm, cls, phase, op, flops, nbytes, stale, positions)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is profile:
        return hit[1], hit[2]
    seconds, on_compute = _kernel_priced(cls, phase, op, flops, nbytes, peaks, stale, positions)
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = (profile, seconds, on_compute)
    return seconds, on_compute


def _kernel_priced(
    cls: str,
    phase: str,
    op: str | None,
    flops: float,
    nbytes: float,
    peaks: Peaks,
    stale: bool,
    positions: int,
) -> tuple[float, bool]:
    profile = peaks.profile
    if cls in BY_POSITIONS and (profile is None or not profile.has_class(cls)):
        # a profile measured before the class: its stand-in, read by FLOP per byte
        cls, positions = FALLBACK[cls], 0
    curve = profile.curve(cls, phase, op, nbytes, stale) if profile is not None else None
    compute = cls in COMPUTE_CLASSES
    if compute and curve is not None and flops:
        t_c = flops / _rate(curve, flops, flops, nbytes, positions)
    else:
        t_c = flops / peaks.apf
    if not compute and curve is not None and nbytes:
        t_m = nbytes / _rate(curve, nbytes, flops, nbytes)
    else:
        t_m = nbytes / peaks.apm
    return max(t_c, t_m), t_c >= t_m


def _rate(
    curve: Curve | Surface, size: float, flops: float, nbytes: float, positions: int = 0
) -> float:
    """A curve's rate at ``size``; a surface's at ``size`` and the call's FLOP per byte (a
    compute class's, or a depthwise convolution's, which tells its kernel and stride), or at its
    output ``positions`` for a class read by them (:data:`~trainplay.workload.opclass.
    BY_POSITIONS`)."""
    if isinstance(curve, Surface):
        if positions:
            return curve.rate(size, positions)
        return curve.rate(size, flops / nbytes if flops and nbytes else None)
    return curve.rate(size)


def call_s(
    cls: str,
    phase: str,
    flops: float,
    nbytes: float,
    peaks: Peaks,
    op: str | None = None,
    stale: bool = False,
    positions: int = 0,
) -> PhaseTime:
    """One call of aten operator ``op`` of class ``cls`` (see the module docstring); the
    operator's own curve is used where the profile has one; ``stale``: on a device whose weights
    are evicted between their uses (:func:`stale_weights`); ``positions``: its output map's, for a
    class read by them (:attr:`~trainplay.workload.stats.OpGroup.positions`)."""
    kernel, on_compute = _kernel(cls, phase, op, flops, nbytes, peaks, stale, positions)
    profile = peaks.profile
    fixed = 0.0
    if profile is not None:
        fixed = profile.overhead("view" if cls == "view" else phase)
    asynchronous = profile is not None and profile.asynchronous
    total = max(fixed, kernel) if asynchronous else fixed + kernel
    shown = total - kernel
    return PhaseTime(total, kernel if on_compute else 0.0, 0.0 if on_compute else kernel, shown)


def phase_time(
    ops: tuple[OpGroup, ...], phase: str, peaks: Peaks, stale: bool = False
) -> PhaseTime:
    """The operators of one phase of a block, one after another (``stale``: see
    :func:`call_s`)."""
    total = ZERO
    for op in ops:
        if op.phase == phase:
            one = call_s(op.cls, phase, op.flops, op.bytes, peaks, op.op, stale, op.positions)
            total = total + PhaseTime(
                one.total_s * op.count,
                one.compute_s * op.count,
                one.memory_s * op.count,
                one.overhead_s * op.count,
            )
    return total


def transfer_s(
    nbytes: float,
    *,
    profile: PerfProfile | None = None,
    link: tuple[float, float] | None = None,
) -> float:
    """One message of ``nbytes`` from one pipeline stage to the next: a measured point-to-point
    curve (``profile.p2p``) when there is one, with the fixed cost of a message through the
    schedule (``schedule.message``) where measured, else the ping-pong latency; else ``link`` =
    (bytes/s, latency s)."""
    if not nbytes:
        return 0.0
    if profile is not None and profile.p2p is not None:
        fixed = profile.overhead_s.get("schedule.message", profile.p2p_alpha_s)
        return fixed + profile.p2p.time_s(nbytes)
    if link is None:
        raise ValueError("a transfer needs a measured point-to-point curve or a link")
    bps, latency = link
    return latency + nbytes / bps


def allreduce_s(nbytes: float, members: int, profile: PerfProfile) -> float:
    """Ring all-reduce of ``nbytes`` over ``members`` with ``profile``'s measured bus-bandwidth
    curve (zero for one member)."""
    if members < 2 or not nbytes:
        return 0.0
    if profile.allreduce is None:
        raise ValueError("this profile measured no all-reduce")
    bus = 2 * (members - 1) / members * nbytes
    return profile.allreduce_alpha_s + bus / profile.allreduce.rate(nbytes)


def reducer_s(nbytes: float, peaks: Peaks) -> float:
    """DistributedDataParallel's own work on one bucket of ``nbytes`` on the device, besides the
    all-reduce: with ``gradient_as_bucket_view=False`` (the default; the DDP documentation names
    "the copy overhead between gradients and allreduce communication buckets" it avoids) each
    gradient is copied into its bucket, divided by the world size on the way (``mul_out`` in
    ``torch/csrc/distributed/c10d/reducer.cpp``), and the averaged bucket is copied back into the
    gradients: two passes that read and write the bucket, priced as copies."""
    if not nbytes:
        return 0.0
    return 2 * call_s("copy", "fwd", 0.0, 2 * nbytes, peaks).total_s


def ring_allreduce_s(
    nbytes: float, members: Sequence[Peaks], links: Callable[[], Sequence[tuple[float, float]]]
) -> float:
    """One all-reduce of ``nbytes`` of gradients over ``members`` (the peaks of each, in ring
    order; zero for one member), DDP's bucket copies included: with every member's measured curve
    (the slowest member's price), else with every member's measured bus bandwidth, else over the
    slowest of ``links()`` (bytes/s, latency s of each member to the next; asked only then)."""
    n = len(members)
    if n < 2 or not nbytes:
        return 0.0
    reducer = max(reducer_s(nbytes, p) for p in members)
    profiles = [p.profile for p in members]
    if all(pr is not None and pr.allreduce is not None for pr in profiles):
        return reducer + max(allreduce_s(nbytes, n, pr) for pr in profiles)  # type: ignore[arg-type]
    if all(p.apb for p in members):  # measured bus bandwidth without a curve
        bps = min(p.apb for p in members if p.apb)
        alpha = max(p.alpha_s or 0.0 for p in members)
        return reducer + alpha + 2 * (n - 1) / n * nbytes / bps
    ring = links()
    bps, latency = min(b for b, _ in ring), max(a for _, a in ring)
    return reducer + link_allreduce_s(nbytes, n, bps, latency)


def link_allreduce_s(nbytes: float, members: int, bps: float, latency_s: float) -> float:
    """Ring all-reduce of ``nbytes`` over ``members`` whose slowest link is (``bps``,
    ``latency_s``): ``2(n-1)`` steps, each a latency, moving ``2(n-1)/n · b`` in all."""
    if members < 2 or not nbytes:
        return 0.0
    return 2 * (members - 1) * latency_s + 2 * (members - 1) / members * nbytes / bps


def accumulate_s(param_bytes: float, param_tensors: int, peaks: Peaks) -> float:
    """Adding one micro-batch's gradients of ``param_tensors`` tensors (``param_bytes`` of fp32
    master gradients in all: :func:`master_bytes`) into the accumulated ones (see the module
    docstring)."""
    if not param_bytes:
        return 0.0
    tensors = max(param_tensors, 1)
    per_tensor = param_bytes / tensors
    one = call_s(
        "elementwise", "bwd", per_tensor / MASTER_ELEMENT_BYTES, 3 * per_tensor, peaks, "aten.add_"
    )
    return tensors * one.total_s


def optimizer_s(param_bytes: float, param_tensors: int, peaks: Peaks, optimizer: str) -> float:
    """One optimizer step over ``param_tensors`` tensors of ``param_bytes`` (of fp32 master
    weights: :func:`master_bytes`) in all."""
    accesses, _ = OPTIMIZERS[optimizer]
    if not param_bytes:
        return 0.0
    profile = peaks.profile
    curve = profile.curve("optimizer", optimizer) if profile is not None else None
    if curve is None:
        return accesses * param_bytes / peaks.apm
    tensors = max(param_tensors, 1)
    per_tensor = param_bytes / tensors
    fixed = profile.overhead(f"optimizer.{optimizer}") if profile is not None else 0.0
    return tensors * (fixed + curve.time_s(per_tensor))


def ddp_step_s(param_tensors: int, peaks: Peaks) -> float:
    """DistributedDataParallel's own seconds per training step on this device for a replica of
    ``param_tensors`` parameter tensors (see the module docstring; 0 where not measured)."""
    profile = peaks.profile
    if profile is None:
        return 0.0
    return profile.overhead("ddp.step") + param_tensors * profile.overhead("ddp.tensor")


def schedule_step_s(peaks: Peaks) -> float:
    """The pipeline schedule's fixed cost per training step on this device (0 where not
    measured: a GPU, whose host runs it behind the kernels)."""
    profile = peaks.profile
    return 0.0 if profile is None else profile.overhead("schedule.step")


def schedule_microbatch_s(peaks: Peaks) -> float:
    """The pipeline schedule's fixed cost per micro-batch of a stage on this device."""
    profile = peaks.profile
    return 0.0 if profile is None else profile.overhead("schedule.microbatch")


LOOP_KEY = "runtime.step"
"""The profile's fixed cost of ``trainplay train``'s own step loop beyond its stage's
micro-batches, timed on a stand-in job (:mod:`trainplay.runtime.loopcost`)."""

STALE_LOOP_KEY = "runtime.step@stale"
"""The same loop timed with the caches evicted around it (``loopcost.cold_model``): what it costs
beside a stage that streams more than the cache (:func:`stale_weights`)."""


def loop_step_s(peaks: Peaks, stale: bool = False) -> float:
    """The training runtime's own fixed cost per step on this device beyond its stage's
    micro-batches: its step loop timed on a stand-in job (:data:`LOOP_KEY`; with ``stale``, a
    stage that evicts the loop's code and data from the cache between its parts, the one timed
    cold, :data:`STALE_LOOP_KEY`, where measured) where ``trainplay hw measure`` timed one, else
    the bare schedule's fixed cost per step (:func:`schedule_step_s`)."""
    profile = peaks.profile
    if profile is None:
        return 0.0
    fixed = profile.overhead_s
    if stale and STALE_LOOP_KEY in fixed:
        return fixed[STALE_LOOP_KEY]
    return fixed[LOOP_KEY] if LOOP_KEY in fixed else schedule_step_s(peaks)


AGREEMENT_BYTES = 64
"""Bytes of the runtime's per-step collectives: a row of step timers (eight float64) gathered, a
stop flag all-reduced."""


def agreement_s(members: int, profile: PerfProfile | None) -> float:
    """The runtime's two per-step collectives over ``members`` ranks (zero for one rank, or where
    no all-reduce was measured)."""
    if members < 2 or profile is None or profile.allreduce is None:
        return 0.0
    return 2 * allreduce_s(AGREEMENT_BYTES, members, profile)
