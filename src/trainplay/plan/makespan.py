"""Makespan arithmetic and TNP's switch decisions, independent of how plans are searched.

makespan = Σ over plan periods (reconfiguration + whole iterations × iteration time) + the time a
period loses when its plan changes mid-iteration + any wait with no plan that fits (DESIGN.md,
"TNP, precisely"). A plan is known here only by its iteration time and the devices it uses; the
caller's search supplies both. Rules, stated once:

- Time is wall-clock seconds from the job's start (0); work is counted in whole iterations.
- A plan change at time ``t`` costs its reconfiguration from ``t`` on, and the iteration in
  flight at ``t`` is lost; staying keeps it. A leave is known in advance, so the iterations that
  end before it run and the reconfiguration starts at the leave.
- The first plan starts free (starting costs the same in every schedule); a later start, after a
  wait with no plan that fits, pays its reconfiguration (the state is reloaded).
- A join switches only if :func:`decide_join` finishes strictly earlier; a leave of a device in
  use forces a change (:func:`decide_leave`).

How a whole job is scheduled over availability windows by these decisions, and two fixed policies
to compare with: :mod:`trainplay.plan.windows`; the offline optimum: :mod:`trainplay.plan.optimum`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Self

from trainplay.errors import UsageError
from trainplay.report.units import format_number

__all__ = [
    "ORIGINS",
    "RESTART_S",
    "STORAGE_BPS",
    "WARMUP_ITERATIONS",
    "Decision",
    "Event",
    "Period",
    "Reconfiguration",
    "Schedule",
    "decide_join",
    "decide_leave",
    "estimate_reconfiguration",
]

STORAGE_BPS = 1e9
"""Assumption: checkpoints are written and read at 1 GB/s, between a local NVMe SSD (several GB/s)
and an NFS share over 10 GbE (1.25 GB/s line rate). Replaced by the runtime's measurement."""
RESTART_S = 30.0
"""Assumption: 30 s for torchrun's elastic agent to re-rendezvous (c10d), start the processes,
import torch and build the model. Replaced by the runtime's measurement once it exists."""
WARMUP_ITERATIONS = 2
"""Assumption: the first iterations after a restart (allocator growth, autotuning, lazy
initialisation) cost as much extra time as two ordinary iterations."""
ORIGINS = ("estimated", "measured")
"""Where a :class:`Reconfiguration` comes from."""
_EPS = 1e-9  # slack, in iterations, when counting whole iterations in a span (float rounding)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise UsageError(message)


def _number(name: str, value: float, *, positive: bool = False) -> None:
    ok = math.isfinite(value) and (value > 0 if positive else value >= 0)
    _check(ok, f"{name} must be a finite number {'>' if positive else '>='} 0, got {value!r}")


def _count(name: str, value: int) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    _check(ok, f"{name} must be a whole number >= 0, got {value!r}")


def _s(seconds: float) -> str:
    return f"{seconds:,.0f} s" if abs(seconds) >= 100 else f"{format_number(seconds)} s"


def _ids(ids: Iterable[str]) -> str:
    return ", ".join(sorted(ids)) or "no device"


class _Json:
    """``to_dict``/``from_dict`` for a flat dataclass; the dict round-trips through JSON."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls(**data)


@dataclass(frozen=True)
class Reconfiguration(_Json):
    """Wall time one plan change costs, in its four parts (seconds)."""

    checkpoint_s: float
    """Writing model and optimizer state under the old plan."""
    restart_s: float
    """torchrun re-rendezvous, process start and model build."""
    reload_s: float
    """Reading the state back, resharded to the new plan."""
    warmup_s: float
    """Extra time of the first, slower iterations under the new plan."""
    origin: str = "estimated"
    """``estimated`` by :func:`estimate_reconfiguration`, or ``measured`` by the runtime."""

    def __post_init__(self) -> None:
        for name in ("checkpoint_s", "restart_s", "reload_s", "warmup_s"):
            _number(name, getattr(self, name))
        _check(self.origin in ORIGINS, f"origin must be one of {ORIGINS}, got {self.origin!r}")

    @property
    def total_s(self) -> float:
        """The whole cost: checkpoint + restart + reload + warm-up."""
        return self.checkpoint_s + self.restart_s + self.reload_s + self.warmup_s


def estimate_reconfiguration(
    state_bytes: int,
    iteration_s: float,
    *,
    storage_bps: float = STORAGE_BPS,
    restart_s: float = RESTART_S,
    warmup_iterations: int = WARMUP_ITERATIONS,
) -> Reconfiguration:
    """Estimate a plan change: write and read back ``state_bytes`` (model + optimizer state) at
    ``storage_bps``, restart in ``restart_s``, and warm up for ``warmup_iterations`` iterations of
    the new plan (``iteration_s`` each)."""
    _count("state_bytes", state_bytes)
    _number("iteration_s", iteration_s, positive=True)
    _number("storage_bps", storage_bps, positive=True)
    _number("restart_s", restart_s)
    _count("warmup_iterations", warmup_iterations)
    io_s = state_bytes / storage_bps
    return Reconfiguration(io_s, restart_s, io_s, warmup_iterations * iteration_s)


@dataclass(frozen=True)
class Decision(_Json):
    """Whether to change plan, why, and both finish times it was decided on (seconds)."""

    switch: bool
    """True when the job changes plan."""
    reason: str
    """One sentence with the numbers."""
    finish_if_switch_s: float
    """When the job would finish after the change."""
    finish_if_stay_s: float
    """When it would finish on the current plan (as if nothing left, for a forced change)."""
    payback_s: float | None
    """Wall time after the decision at which the changed job has done as many iterations as the
    unchanged one (iterations counted continuously, window ends ignored); None when the new
    plan is no faster."""


def _whole(span_s: float, iteration_s: float) -> int:
    """Whole iterations of ``iteration_s`` that end within ``span_s`` (0 for a negative span)."""
    return max(0, math.floor(span_s / iteration_s + _EPS))


def _finish_switched(from_s, remaining, new_s, until_s, back_s, stay_s) -> float:
    """Finish when the new plan runs from ``from_s`` until ``until_s`` (None: to the end), then
    ``back_s`` of reconfiguration from ``until_s`` and the rest at ``stay_s``."""
    done = remaining if until_s is None else min(remaining, _whole(until_s - from_s, new_s))
    if done == remaining:
        return from_s + remaining * new_s
    return until_s + back_s + (remaining - done) * stay_s


def _payback(now_s, stay_s, stay_from_s, new_s, new_from_s) -> float | None:
    # Iterations done by now + τ: (τ - a) / new_s switched, (τ - b) / stay_s staying; equal at τ.
    if new_s >= stay_s:
        return None
    a, b = new_from_s - now_s, stay_from_s - now_s
    return max(0.0, (a * stay_s - b * new_s) / (stay_s - new_s))


def _compare(switch_text, stay_text, switch_s, stay_s, payback_s) -> Decision:
    if switch_s == stay_s:
        reason = f"{switch_text} gains nothing: both finish at {_s(stay_s)}"
    else:
        text, best, worst = (
            (switch_text, switch_s, stay_s) if switch_s < stay_s else (stay_text, stay_s, switch_s)
        )
        reason = f"{text} saves {_s(worst - best)}: finish at {_s(best)} instead of {_s(worst)}"
    return Decision(switch_s < stay_s, reason, switch_s, stay_s, payback_s)


def _check_job(now_s, remaining_iterations, current_iteration_s, reconfiguration_s, resume_s):
    _number("now_s", now_s)
    _count("remaining_iterations", remaining_iterations)
    _number("current_iteration_s", current_iteration_s, positive=True)
    _number("reconfiguration_s", reconfiguration_s)
    _check(resume_s is None or resume_s >= 0, f"resume_s must be >= 0 or None, got {resume_s!r}")
    return now_s if resume_s is None else resume_s


def decide_join(
    *,
    now_s: float,
    remaining_iterations: int,
    current_iteration_s: float,
    new_iteration_s: float,
    reconfiguration_s: float,
    window_until_s: float | None,
    resume_s: float | None = None,
    current_until_s: float | None = None,
    after_iteration_s: float | None = None,
) -> Decision:
    """A device joins at ``now_s``: switch only if the job finishes strictly earlier.

    Staying finishes at ``resume_s + remaining × current`` (``resume_s``, default ``now_s``, is
    when the remaining iterations start on the current plan: the start of the iteration in flight,
    or the end of a reconfiguration in progress); if a device of the current plan leaves at
    ``current_until_s`` first, the whole iterations that fit run, then the reconfiguration from
    then and the rest at ``after_iteration_s`` (both None: no such leave). Switching runs from
    ``now_s + reconfiguration``; if the joining device's window ends (``window_until_s``; None =
    never) first, the whole iterations that fit run at ``new_iteration_s``, then the same
    reconfiguration again from the window's end and the rest at ``current_iteration_s``.
    """
    resume = _check_job(
        now_s, remaining_iterations, current_iteration_s, reconfiguration_s, resume_s
    )
    _number("new_iteration_s", new_iteration_s, positive=True)
    _check(
        window_until_s is None or window_until_s > now_s,
        f"window_until_s must be after now_s={now_s!r} or None, got {window_until_s!r}",
    )
    _check(
        (current_until_s is None) == (after_iteration_s is None),
        "current_until_s and after_iteration_s go together",
    )
    start, cur, new = now_s + reconfiguration_s, current_iteration_s, new_iteration_s
    switch = _finish_switched(
        start, remaining_iterations, new, window_until_s, reconfiguration_s, cur
    )
    stay = resume + remaining_iterations * cur
    if current_until_s is not None and after_iteration_s is not None:
        _number("after_iteration_s", after_iteration_s, positive=True)
        stay = _finish_switched(
            resume, remaining_iterations, cur, current_until_s, reconfiguration_s,
            after_iteration_s,
        )  # fmt: skip
    return _compare("switching", "staying", switch, stay, _payback(now_s, cur, resume, new, start))


def decide_leave(
    *,
    now_s: float,
    remaining_iterations: int,
    current_iteration_s: float,
    new_iteration_s: float | None,
    reconfiguration_s: float,
    device_in_use: bool,
    resume_s: float | None = None,
) -> Decision:
    """A device leaves at ``now_s``. If the current plan uses it the job must re-plan: it finishes
    at ``now_s + reconfiguration + remaining × new``; otherwise nothing changes (and
    ``new_iteration_s`` is ignored). ``resume_s`` is as in :func:`decide_join`."""
    resume = _check_job(
        now_s, remaining_iterations, current_iteration_s, reconfiguration_s, resume_s
    )
    stay = resume + remaining_iterations * current_iteration_s
    if not device_in_use:
        reason = f"the device that leaves is not in the current plan: finish stays at {_s(stay)}"
        return Decision(False, reason, stay, stay, None)
    if new_iteration_s is None:
        raise UsageError(
            f"training cannot continue on the remaining devices at {_s(now_s)}: no plan fits on "
            "them; add a device or lengthen a window"
        )
    _number("new_iteration_s", new_iteration_s, positive=True)
    start = now_s + reconfiguration_s
    switch = start + remaining_iterations * new_iteration_s
    reason = (
        f"a device in use leaves, so the plan must change: finish at {_s(switch)} "
        f"instead of {_s(stay)} had it stayed"
    )
    payback = _payback(now_s, current_iteration_s, resume, new_iteration_s, start)
    return Decision(True, reason, switch, stay, payback)


@dataclass(frozen=True)
class Period(_Json):
    """A stretch of the job on one plan: reconfiguration, whole iterations, then any loss."""

    from_s: float
    """When the period starts (its reconfiguration starts)."""
    until_s: float
    """When it ends: the job finishes or the plan changes."""
    devices: tuple[str, ...]
    """Ids of the devices the plan uses, sorted."""
    iteration_s: float
    """The plan's iteration time."""
    iterations: int
    """Whole iterations done in the period."""
    reconfiguration_s: float
    """Spent setting the plan up at the start: 0 for the first period; less than the full cost
    when the plan changed again before it was set up."""
    lost_s: float = 0.0
    """Time on the iteration in flight when the plan changed, lost with it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "devices", tuple(self.devices))  # a JSON list comes back
        _number("from_s", self.from_s)
        _check(self.until_s >= self.from_s, f"until_s {self.until_s!r} is before from_s")
        _number("iteration_s", self.iteration_s, positive=True)
        _count("iterations", self.iterations)
        _number("reconfiguration_s", self.reconfiguration_s)
        _number("lost_s", self.lost_s)


@dataclass(frozen=True)
class Event(_Json):
    """Something that happened at a window boundary, and what was decided."""

    at_s: float
    """When."""
    text: str
    """What happened, e.g. ``b joins: best plan uses a, b``."""
    decision: Decision | None
    """The decision taken, or None when there was no choice (a start, a wait)."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        decision = data["decision"] and Decision.from_dict(data["decision"])
        return cls(data["at_s"], data["text"], decision)


@dataclass(frozen=True)
class Schedule(_Json):
    """Plan periods over the whole job, its makespan, and the events that shaped it."""

    periods: tuple[Period, ...]
    """In time order; a gap between two is a wait with no plan that fits."""
    makespan_s: float
    """When the last iteration ends."""
    events: tuple[Event, ...]
    """In time order."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schedule:
        periods = tuple(Period.from_dict(p) for p in data["periods"])
        return cls(periods, data["makespan_s"], tuple(Event.from_dict(e) for e in data["events"]))
