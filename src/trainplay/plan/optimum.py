"""The offline optimum of a job over known availability windows, by dynamic programming.

The yardstick for :func:`trainplay.plan.windows.plan_over_windows`: the same job, the same plans
(``iteration_s_for``), the same reconfiguration cost and the same accounting (makespan.py's and windows.py's rules:
whole iterations, the iteration in flight lost at a change, the first start free, a start after a
wait paying its reconfiguration), but every choice taken with the whole trace in view.

**Decision space.** Decision points are the window boundaries: every device's window start and
end, in time order. At each one the job may keep the plan it runs (if the devices that plan uses
are still there), switch to the best plan on *any* subset of the devices available then (the
plan ``iteration_s_for(subset)``: its iteration time and the devices it uses), or wait with no
plan. Between decision points nothing changes. A schedule is a sequence of such choices; its
makespan is when its last iteration ends.

**Why dynamic programming is exact here.** Call the job *free* at a decision point ``t`` when no
plan carries on through ``t`` (it just switched, or waits). What happens after a free point
depends only on ``t``, the iterations remaining, and whether the job has started (the first
start costs nothing). Fewer remaining iterations never finish later: any choice sequence that
finishes ``r`` iterations also finishes fewer, no later, and every plan it runs stays valid
(it ends no later, so no device it uses is gone). So for each decision point and started flag
only the least remaining count matters, and

    least(k) = min over an earlier free point j, a plan p started at t_j, kept until t_k
               (p's devices all there until t_k), of least(j) − the whole iterations p ends by t_k

(and waiting: least(k) ≤ least(j)), with the makespan the minimum, over free points and plans
that run to the end with their devices there, of the finish time. Plans are distinct (iteration
time, devices used) pairs, O(points² × plans) transitions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from trainplay.errors import UsageError
from trainplay.plan.makespan import Event, Schedule, _check, _count, _ids, _number, _s, _whole
from trainplay.plan.windows import PlanFor, _plan, _Run

__all__ = ["all_subsets", "optimal_schedule"]

Candidates = Callable[[frozenset[str]], Iterable[frozenset[str]]]
"""The device subsets to consider at a decision point, given the devices available then."""


def all_subsets(live: frozenset[str]) -> Iterable[frozenset[str]]:
    """Every non-empty subset of ``live`` (the decision space of the module docstring)."""
    ids = sorted(live)
    for k in range(1, len(ids) + 1):
        for chosen in itertools.combinations(ids, k):
            yield frozenset(chosen)


@dataclass(frozen=True)
class _Free:
    """The job free at decision point ``k`` with ``remaining`` iterations, and how it got there."""

    remaining: int
    started: bool
    came_from: tuple[int, bool] | None  # the free state before, None at the start
    run: _Run | None  # the plan run from there until this point, None for a wait


def optimal_schedule(
    *,
    windows: Mapping[str, tuple[float, float | None]],
    iterations: int,
    iteration_s_for: PlanFor,
    reconfiguration_s_for: Callable[[float], float],
    candidates: Candidates = all_subsets,
) -> Schedule:
    """The schedule with the least makespan over the decision space of the module docstring.

    Arguments as for :func:`~trainplay.plan.windows.plan_over_windows`; ``candidates`` narrows
    the subsets tried at a decision point (default: all of them). Raises :class:`UsageError`
    when no schedule finishes the job.
    """
    _count("iterations", iterations)
    for device, (start, end) in windows.items():
        _number(f"window start of {device}", start)
        _check(end is None or end > start, f"window of {device} must end after it starts")
    if not iterations:
        return Schedule((), 0.0, ())
    times = sorted(
        {a for a, _ in windows.values()} | {b for _, b in windows.values() if b is not None}
    )
    plans: dict[frozenset[str], tuple[float, frozenset[str]] | None] = {}

    def options(t: float) -> set[tuple[float, frozenset[str]]]:
        live = frozenset(d for d, (a, b) in windows.items() if a <= t and (b is None or b > t))
        found = set()
        for subset in candidates(live):
            if subset not in plans:
                plans[subset] = _plan(iteration_s_for, subset)
            if (plan := plans[subset]) is not None:
                found.add(plan)
        return found

    def lasts(used: frozenset[str]) -> float:  # until when every device of a plan is there
        return min((b for d in used if (b := windows[d][1]) is not None), default=math.inf)

    best: dict[tuple[int, bool], _Free] = {(0, False): _Free(iterations, False, None, None)}
    finish: tuple[float, tuple[int, bool], _Run] | None = None
    for j, t in enumerate(times):
        for started in (False, True):
            state = best.get((j, started))
            if state is None:
                continue
            if j + 1 < len(times):  # wait until the next point
                _improve(
                    best, (j + 1, started), _Free(state.remaining, started, (j, started), None)
                )
            for speed_s, used in sorted(options(t), key=lambda p: (p[0], sorted(p[1]))):
                setup = reconfiguration_s_for(speed_s) if started else 0.0
                run = _Run(t, setup, speed_s, used, state.remaining)
                end = t + setup + state.remaining * speed_s
                whole = _whole(lasts(used) - t - setup, speed_s) if lasts(used) < math.inf else 0
                runs_out = lasts(used) == math.inf or whole >= state.remaining
                if runs_out and (finish is None or end < finish[0]):
                    finish = (end, (j, started), run)
                for k in range(j + 1, len(times)):
                    if times[k] > lasts(used):
                        break
                    left = state.remaining - run.done_by(times[k])
                    if left == 0:
                        break
                    _improve(best, (k, True), _Free(left, True, (j, started), run))
    if finish is None:
        raise UsageError(
            f"training cannot finish: no schedule does all {iterations} iterations within the "
            "windows; add a device or lengthen a window"
        )
    return _rebuild(best, times, *finish)


def _improve(best: dict[tuple[int, bool], _Free], key: tuple[int, bool], state: _Free) -> None:
    if key not in best or state.remaining < best[key].remaining:
        best[key] = state


def _rebuild(best, times, makespan_s: float, key: tuple[int, bool], last: _Run) -> Schedule:
    """The periods and events of the optimal schedule, following the states back."""
    periods = [last.close(makespan_s)]
    events = [Event(times[key[0]], f"run on {_ids(last.used)} to the end", None)]
    state = best[key]
    while state.came_from is not None:
        k = key[0]
        if state.run is not None:
            periods.append(state.run.close(times[k]))
            what = f"run on {_ids(state.run.used)} until {_s(times[k])}"
        else:
            what = f"wait until {_s(times[k])}"
        key = state.came_from
        events.append(Event(times[key[0]], what, None))
        state = best[key]
    return Schedule(tuple(reversed(periods)), makespan_s, tuple(reversed(events)))
