"""Stragglers from observation: ``diagnose(trace_dir)`` over one profiler trace per rank.

The facade reads every rank's trace (:mod:`trainplay.roofline.kineto`), summarises each rank by
its medians over the steps, and hands the per-step numbers to a straggler detector: a pure
function the caller may swap (``diagnose(dir, detector=my_detector)``), as in Holistic Trace
Analysis. The default, :func:`busy_time_detector`, works in three steps.

1. **Who.** In synchronous data parallelism every rank's step lasts as long as the slowest
   rank's: the others wait for it in collectives. Step time cannot tell ranks apart, but the
   time each rank is *busy* (running operators, not waiting) can. A rank's busy time is taken
   as the lower quartile over its steps: work from outside the job (other processes on the
   machine) only ever adds time to a step, so the lower quartile estimates what the rank's own
   work costs, while a slowdown present in most steps raises it too. The busiest rank is the
   straggler when (a) its busy time exceeds the median of the other ranks' by more than
   ``margin`` (default 25%) and (b) in more than half of the steps it is busier than the
   others' median of that step by the margin. A balanced run, or noise in a few steps, names
   nobody.
2. **Which dimension.** MD-Roofline names the dimension whose achievable peak lies below the
   other workers'; here each operator class stands for one: GEMMs and convolutions for
   ``compute``, the other operators for ``memory``, collective launches for ``communication``.
   When most of the straggler's excess time is in collective launches, the dimension is
   ``communication``. A rank that could use fewer CPUs than it runs threads, beyond the margin
   more than the others (a CPU quota; the trace's ``trainplay`` metadata says so), lacks
   processor time: ``compute``. (Under a quota the pauses land inside whatever operators run
   then — here mostly the memory-bound ones, around allocations — so where they land says
   nothing of the device's peaks.) Otherwise the classes' *rates* are compared, not their
   excess seconds: each class's time over the other ranks' median time of that class says how
   far below its peers that peak lies. A device slower in every class alike (a lower clock)
   runs its GEMMs as much slower as the rest: its processor falls short, ``compute``, even when
   most of its excess seconds are in memory-bound operators because most of its work is.
   ``memory`` is named when the other operators slowed more than its GEMMs beyond the margin
   (its memory system, not its processor, falls short), or when it runs no GEMMs. Waiting is
   never excess: a rank that waits is the victim, not the cause. A slow link slows every rank's
   collectives alike and is not told apart here; MD-Roofline's predictive diagnosis, from
   measured peaks, covers it.
3. **How much.** ``slowdown = T / (T - min(E, W))``: ``T`` is the median step time, ``E`` the
   straggler's excess busy time, ``W`` the median time per step the other ranks are not busy.
   Were the straggler as busy as the median rank, every step would be ``E`` shorter, but no
   shorter than the others' own work allows, hence the cap ``W``. This is MD-Roofline's
   straggler slowdown (iteration time with the system as it is over iteration time were that
   worker like the median worker), observed rather than predicted.

Assumptions: one trace per rank of the same job, profiled over the same steps (``ProfilerStep#N``
with the same ``N`` on every rank); synchronous training, where every step ends in collectives all
ranks join; CPU operators measure the work (on GPUs a rank's kernels run asynchronously, which this
reading of the host thread does not see). The first profiled step is a warm-up and is left out
when three or more remain.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trainplay.errors import UsageError
from trainplay.roofline.kineto import RankTrace, StepTimes, read_trace

__all__ = [
    "CONSISTENCY",
    "DIMENSIONS",
    "MARGIN",
    "QUANTILE",
    "Detector",
    "Diagnosis",
    "RankSummary",
    "Straggler",
    "busy_time_detector",
    "cpu_limited",
    "diagnose",
    "quantile",
    "summarise",
    "trace_files",
]

MARGIN = 0.25
"""Default margin: a straggler is more than 25% busier than the median of the other ranks. Ranks
that share a machine with other work were seen 11-17% apart in balanced runs here; smaller
imbalances stay visible in the per-rank numbers without a rank being named."""
CONSISTENCY = 0.5
"""A straggler is busier than the others beyond the margin in more than this share of steps."""
QUANTILE = 0.25
"""Busy times are compared at this quantile of a rank's steps: the lower quartile."""
DIMENSIONS = ("compute", "memory", "communication")
"""MD-Roofline's three dimensions; a straggler's dimension is one of them."""
TRACE_SUFFIXES = (".json", ".json.gz")


@dataclass(frozen=True)
class RankSummary:
    """One rank, each time the median over the steps compared (seconds)."""

    rank: int
    """The rank."""
    path: str
    """Its trace file."""
    steps: int
    """Steps the medians are taken over."""
    step_s: float
    """Step time."""
    busy_s: float
    """Time in operators: compute + memory + collective launches (not waiting)."""
    compute_s: float
    """Time in GEMMs (convolution, matmul, attention) and their backward."""
    memory_s: float
    """Time in the other operators (pointwise, normalisation, pooling, copies, optimizer)."""
    collective_s: float
    """Time in collectives: launching them and waiting for them to finish."""
    collective_wait_s: float
    """Of which waiting: no operator running while a collective is in flight."""
    blocks: dict[str, float] = field(default_factory=dict)
    """Forward + backward time of each annotated block, in forward order."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "path": self.path,
            "steps": self.steps,
            "step_s": self.step_s,
            "busy_s": self.busy_s,
            "compute_s": self.compute_s,
            "memory_s": self.memory_s,
            "collective_s": self.collective_s,
            "collective_wait_s": self.collective_wait_s,
            "blocks": dict(self.blocks),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RankSummary:
        return cls(**{**data, "blocks": dict(data.get("blocks", {}))})


@dataclass(frozen=True)
class Straggler:
    """The rank that slows the job, in which dimension, and by how much."""

    rank: int
    """The straggler."""
    dimension: str
    """Where its excess time goes: ``compute``, ``memory`` or ``communication``."""
    slowdown: float
    """Observed step time over the step time were it as busy as the median rank (>= 1)."""
    excess_s: float
    """Its busy time less the median of the other ranks' (lower quartiles over the steps, s)."""
    excess_fraction: float
    """``excess_s`` relative to the other ranks' median busy time."""
    steps_slower: int
    """Steps in which it was busier than the others' median by more than the margin."""
    steps: int
    """Steps compared."""
    group: tuple[int, ...] = ()
    """Every rank of the slow group (alike slow workers), ``rank`` first; ``(rank,)`` alone
    unless several ranks are alike slow."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "group", tuple(self.group) or (self.rank,))
        if self.group[0] != self.rank:
            raise ValueError(f"group must start with rank {self.rank}, got {self.group}")
        if self.dimension not in DIMENSIONS:
            raise ValueError(f"dimension must be one of {DIMENSIONS}, got {self.dimension!r}")
        if self.slowdown < 1:
            raise ValueError(f"slowdown must be at least 1, got {self.slowdown}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "dimension": self.dimension,
            "slowdown": self.slowdown,
            "excess_s": self.excess_s,
            "excess_fraction": self.excess_fraction,
            "steps_slower": self.steps_slower,
            "steps": self.steps,
            "group": list(self.group),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Straggler:
        return cls(**{**data, "group": tuple(data.get("group", ()))})


Detector = Callable[[Sequence[RankTrace], float], tuple[Straggler | None, str]]
"""``(traces, margin) -> (straggler or None, one line saying why)``; traces hold the steps to
compare, the same step numbers on every rank."""


@dataclass(frozen=True)
class Diagnosis:
    """What the traces of one job say: every rank's times, the straggler if any, and why."""

    ranks: tuple[RankSummary, ...]
    """One summary per rank, by rank."""
    straggler: Straggler | None
    """The straggler, or ``None`` when no rank is busier than the others beyond the margin."""
    margin: float = MARGIN
    """The margin the detector was given."""
    notes: tuple[str, ...] = ()
    """How the verdict was reached and what was left out."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranks", tuple(self.ranks))
        object.__setattr__(self, "notes", tuple(self.notes))

    def to_dict(self) -> dict[str, Any]:
        return {
            "ranks": [r.to_dict() for r in self.ranks],
            "straggler": None if self.straggler is None else self.straggler.to_dict(),
            "margin": self.margin,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnosis:
        straggler = data.get("straggler")
        return cls(
            ranks=tuple(RankSummary.from_dict(r) for r in data["ranks"]),
            straggler=None if straggler is None else Straggler.from_dict(straggler),
            margin=data.get("margin", MARGIN),
            notes=tuple(data.get("notes", ())),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def summarise(trace: RankTrace) -> RankSummary:
    """A rank's medians over the steps of ``trace``."""
    steps = trace.steps

    def med(pick: Callable[[StepTimes], float]) -> float:
        return _median([pick(s) for s in steps])

    names = list(dict.fromkeys(name for s in steps for name in s.blocks_s))
    return RankSummary(
        rank=trace.rank,
        path=trace.path,
        steps=len(steps),
        step_s=med(lambda s: s.step_s),
        busy_s=med(lambda s: s.busy_s),
        compute_s=med(lambda s: s.compute_s),
        memory_s=med(lambda s: s.memory_s),
        collective_s=med(lambda s: s.collective_s),
        collective_wait_s=med(lambda s: s.collective_wait_s),
        blocks={name: med(lambda s, n=name: s.blocks_s.get(n, 0.0)) for name in names},
    )


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values``, interpolating linearly between order statistics."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def busy_time_detector(
    traces: Sequence[RankTrace], margin: float = MARGIN
) -> tuple[Straggler | None, str]:
    """The busiest rank, if it is busier than the median of the others beyond ``margin``.

    Each rank's busy time is its lower quartile over the steps (:data:`QUANTILE`); the straggler
    must also be busier than the others' median by ``margin`` in more than :data:`CONSISTENCY`
    of the steps. The module docstring states the method and its assumptions.
    """
    if len(traces) < 2:
        return None, "one rank: there is no other rank to compare it with"
    by_rank = {t.rank: t for t in traces}

    def typical(rank: int, pick: Callable[[StepTimes], float]) -> float:
        return quantile([pick(s) for s in by_rank[rank].steps], QUANTILE)

    busy = {r: typical(r, lambda s: s.busy_s) for r in by_rank}
    rank = max(busy, key=lambda r: (busy[r], -r))
    others = [r for r in by_rank if r != rank]
    others_busy = _median([busy[r] for r in others])
    if others_busy <= 0:
        return None, "the other ranks record no operator time; nothing to compare"
    excess = busy[rank] - others_busy
    fraction = excess / others_busy
    per_step = {r: {s.step: s for s in t.steps} for r, t in by_rank.items()}
    numbers = sorted(per_step[rank])
    slower = sum(
        per_step[rank][n].busy_s > (1 + margin) * _median([per_step[o][n].busy_s for o in others])
        for n in numbers
    )
    verdict = (
        f"rank {rank} is the busiest: {busy[rank] * 1e3:.1f} ms per step (lower quartile) vs "
        f"{others_busy * 1e3:.1f} ms for the other ranks ({fraction:+.0%}), beyond the "
        f"{margin:.0%} margin in {slower} of {len(numbers)} steps"
    )
    if fraction <= margin or slower <= CONSISTENCY * len(numbers):
        return None, f"no straggler: {verdict}"

    by_class = {
        d: (typical(rank, pick), _median([typical(o, pick) for o in others]))
        for d, pick in (
            ("compute", lambda s: s.compute_s),
            ("memory", lambda s: s.memory_s),
            ("communication", lambda s: s.collective_call_s),
        )
    }
    floor = by_rank[rank].cpu_floor
    limited = cpu_limited(floor, [by_rank[o].cpu_floor for o in others], margin)
    dimension = "compute" if limited else _dimension(by_class, margin)
    if limited:
        verdict += f"; its CPU limit lets its threads run {1 / floor:.0%} of the time"
    step = _median([_median([s.step_s for s in t.steps]) for t in traces])
    not_busy = _median([_median([s.step_s - s.busy_s for s in by_rank[o].steps]) for o in others])
    gain = min(excess, max(0.0, not_busy))
    straggler = Straggler(
        rank=rank,
        dimension=dimension,
        slowdown=step / (step - gain) if step > gain else 1.0,
        excess_s=excess,
        excess_fraction=fraction,
        steps_slower=slower,
        steps=len(numbers),
    )
    return straggler, f"straggler: {verdict}"


def cpu_limited(floor: float, others: Sequence[float], margin: float) -> bool:
    """Whether a rank whose threads over its usable CPUs is ``floor`` is CPU-limited beyond
    ``margin`` more than the median of the ``others``' floors: then processor time is what it
    lacks (a quota pauses it wherever it is, and the operators a pause lands in say nothing of
    the device's peaks)."""
    return floor > (1 + margin) * _median(others or [1.0])


def _dimension(by_class: dict[str, tuple[float, float]], margin: float) -> str:
    """The straggler's dimension from its time and the other ranks' median time per class
    (``compute``, ``memory``, ``communication``; step 2 of the module docstring)."""
    excess = {d: mine - theirs for d, (mine, theirs) in by_class.items()}
    if excess["communication"] > max(excess["compute"], excess["memory"]):
        return "communication"
    (compute, peers_compute), (memory, peers_memory) = by_class["compute"], by_class["memory"]
    if compute <= 0 or peers_compute <= 0:
        return "memory"
    if memory <= 0 or peers_memory <= 0:
        return "compute"
    slower = memory / peers_memory > (1 + margin) * (compute / peers_compute)
    return "memory" if slower else "compute"


def trace_files(trace_dir: Path) -> list[Path]:
    """The trace files (``*.json``, ``*.json.gz``) directly in ``trace_dir``, sorted by name."""
    if not trace_dir.exists():
        raise UsageError(f"trace directory {str(trace_dir)!r} does not exist")
    if not trace_dir.is_dir():
        raise UsageError(
            f"{str(trace_dir)!r} is not a directory: give the folder holding one trace per rank"
        )
    files = sorted(
        p for p in trace_dir.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)
    )
    if not files:
        raise UsageError(
            f"{str(trace_dir)!r} holds no trace files (*.json, *.json.gz): write one per rank "
            "with torch.profiler (tensorboard_trace_handler or export_chrome_trace)"
        )
    return files


def _common_steps(traces: list[RankTrace]) -> tuple[list[RankTrace], list[str]]:
    """The steps every rank profiled, less the first (warm-up) when three or more remain."""
    common = set.intersection(*({s.step for s in t.steps} for t in traces))
    notes = []
    if not common:
        raise UsageError(
            "the traces share no step number (ProfilerStep#N): profile the same steps on every rank"
        )
    if any(s.step not in common for t in traces for s in t.steps):
        notes.append("steps not profiled on every rank are left out")
    numbers = sorted(common)
    if len(numbers) >= 3:
        notes.append(f"step {numbers[0]} left out as warm-up")
        numbers = numbers[1:]
    keep = set(numbers)
    trimmed = [replace(t, steps=tuple(s for s in t.steps if s.step in keep)) for t in traces]
    return trimmed, notes


def _against_prediction(traces: list[RankTrace]) -> list[RankTrace]:
    """Ranks that do different work (pipeline stages, uneven shares) are compared relative to
    the work trainplay predicted for each: every rank's busy times scaled by the median prediction
    over its own. Traces without a prediction on every rank are returned as they are."""
    predicted = [t.predicted_busy_s for t in traces]
    if not all(predicted) or len(set(predicted)) == 1:
        return traces
    median = _median(predicted)  # type: ignore[arg-type]

    def scaled(s: StepTimes, k: float) -> StepTimes:
        return replace(
            s, compute_s=s.compute_s * k, memory_s=s.memory_s * k,
            collective_call_s=s.collective_call_s * k,
        )  # fmt: skip

    return [
        replace(t, steps=tuple(scaled(s, median / t.predicted_busy_s) for s in t.steps))  # type: ignore[operator]
        for t in traces
    ]


def diagnose(
    trace_dir: Path | str,
    *,
    detector: Detector = busy_time_detector,
    margin: float = MARGIN,
) -> Diagnosis:
    """Read one trace per rank in ``trace_dir`` and find the straggler, if there is one.

    Raises :class:`UsageError` for a missing or empty directory, a file that is not a PyTorch
    profiler trace, a trace without steps, or two traces of the same rank.
    """
    if margin < 0:
        raise UsageError(f"margin must be non-negative, got {margin}")
    traces: dict[int, RankTrace] = {}
    for path in trace_files(Path(trace_dir)):
        trace = read_trace(path)
        if trace.rank in traces:
            raise UsageError(
                f"two traces of rank {trace.rank} in {str(trace_dir)!r}: "
                f"{Path(traces[trace.rank].path).name} and {path.name}; keep one per rank"
            )
        traces[trace.rank] = trace
    ordered, notes = _common_steps([traces[r] for r in sorted(traces)])
    sizes = {t.world_size for t in ordered if t.world_size is not None}
    if sizes and max(sizes) != len(ordered):
        notes.append(f"traces of {len(ordered)} of the job's {max(sizes)} ranks")
    judged = _against_prediction(ordered)
    if judged is not ordered:
        notes.append("busy times judged against each rank's predicted work (trainplay metadata)")
    straggler, why = detector(judged, margin)
    return Diagnosis(
        ranks=tuple(summarise(t) for t in ordered),
        straggler=straggler,
        margin=margin,
        notes=(why, *notes),
    )
