"""A whole job over availability windows: when to start, wait, switch plans (TNP's makespan rule).

Built on makespan.py's arithmetic and decisions (``decide_join``, ``decide_leave``) and its rules
of accounting (whole iterations, the iteration in flight lost at a change, the first start free).
Time walks through the window boundaries in order:

- Choosing a plan, at every window start (0 included) and after a forced leave: take the best
  plan on all available devices. If a device it uses leaves (at ``u``) before that plan would
  finish, compare it with the plan on the devices that outlast ``u``: use the short-lived devices
  only if running with them until ``u``, reconfiguring, and finishing without them ends strictly
  earlier than never using them; otherwise drop them and repeat on what is left.
- Before starting, or re-planning because a device in use leaves: wait idle for the next
  devices to join if starting then finishes strictly earlier than starting now and deciding on
  that join by ``decide_join`` (a first start after waiting is still free).
- A join switches only if ``decide_join`` finishes strictly earlier. Decisions look one leave
  ahead: the joining devices' window for switching, the current plan's first leave (then the
  best plan on the devices that outlast it) for staying; leaves that hit both options alike are
  left out.

Two fixed policies, for comparison (``policy=`` of :func:`plan_over_windows`): ``always``
re-plans on all available devices at every join (when the best plan there uses other devices)
and ``never`` keeps its plan until a device it uses leaves; neither looks ahead when choosing.
The offline optimum over the same decisions is :func:`trainplay.plan.optimum.optimal_schedule`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from trainplay.errors import UsageError
from trainplay.plan.makespan import (
    Event,
    Period,
    Schedule,
    _check,
    _compare,
    _count,
    _finish_switched,
    _ids,
    _number,
    _payback,
    _s,
    _whole,
    decide_join,
    decide_leave,
)

__all__ = ["POLICIES", "PlanFor", "plan_over_windows"]

POLICIES = ("makespan", "always", "never")
"""How :func:`plan_over_windows` decides: by the makespan rule, or always or never taking in a
device that joins."""

PlanFor = Callable[[frozenset[str]], tuple[float, frozenset[str]] | None]


@dataclass(frozen=True)
class _Run:
    from_s: float
    setup_s: float
    iteration_s: float
    used: frozenset[str]
    remaining: int  # at the end of the setup

    def done_by(self, t: float) -> int:
        return min(self.remaining, _whole(t - self.from_s - self.setup_s, self.iteration_s))

    def resume_s(self, t: float) -> float:
        return self.from_s + self.setup_s + self.done_by(t) * self.iteration_s

    def close(self, t: float) -> Period:
        done, setup = self.done_by(t), min(self.setup_s, t - self.from_s)
        lost = max(0.0, t - self.from_s - setup - done * self.iteration_s)
        return Period(self.from_s, t, tuple(sorted(self.used)), self.iteration_s, done, setup, lost)


def _verb(ids: str, one: str, more: str) -> str:
    """``ids`` (from ``_ids``) and the verb that agrees with them."""
    return f"{ids} {more if ', ' in ids else one}"


def _plan(iteration_s_for: PlanFor, devices: frozenset[str]) -> tuple[float, frozenset[str]] | None:
    plan = iteration_s_for(devices) if devices else None
    ok = plan is None or (plan[0] > 0 and bool(plan[1]) and plan[1] <= devices)
    _check(ok, f"iteration_s_for({_ids(devices)}) gave {plan!r}: want (s > 0, ids used) or None")
    return plan


def _choose(
    t, devices, remaining, windows, iteration_s_for, setup_for, reconfiguration_s_for, ahead=True
):
    """The plan to run from ``t`` on ``devices`` by the module's choosing rule (``ahead=False``:
    the best plan on all of them), and its events."""
    events: list[Event] = []
    plan = _plan(iteration_s_for, devices)
    while plan is not None and ahead:
        speed_s, used = plan
        until = min((e for d in used if (e := windows[d][1]) is not None), default=None)
        start = t + setup_for(speed_s)
        if until is None or _whole(until - start, speed_s) >= remaining:
            break
        rest = frozenset(d for d in devices if (e := windows[d][1]) is None or e > until)
        fallback = _plan(iteration_s_for, rest)
        if fallback is None:
            break
        back_s, short = fallback[0], _ids(used - rest)
        back_from = t + setup_for(back_s)
        with_s = _finish_switched(
            start, remaining, speed_s, until, reconfiguration_s_for(back_s), back_s
        )
        payback = _payback(t, back_s, back_from, speed_s, start)
        without_s = back_from + remaining * back_s
        decision = _compare(
            f"using {short} until {_s(until)}", f"leaving {short} out", with_s, without_s, payback
        )
        leave = _verb(short, "leaves", "leave")
        events.append(Event(t, f"choosing a plan: {leave} at {_s(until)}", decision))
        if decision.switch:
            break
        devices, plan = rest, fallback
    return plan, events


def _own_leave(used, live, windows, iteration_s_for, other=frozenset()) -> dict[str, float]:
    """``decide_join``'s ``current_until_s`` and ``after_iteration_s`` for a plan on ``used``:
    when its first device leaves, and the best plan then on the devices of ``live`` that
    outlast it. Nothing when none leaves, when nothing fits after, or when a leave hits both
    options alike and is left out: a device of the ``other`` option's plan leaves by then too,
    or the plan after uses a device of the ``other`` plan that leaves later (staying would then
    run on the joining devices to the end while switching pays for their leave: on lab-windows,
    resnet50 stayed on the T4s when the RTX 3090s joined and finished 1.26x after the optimum)."""

    def first_end(ids):
        return min((e for d in ids if (e := windows[d][1]) is not None), default=None)

    until, theirs = first_end(used), first_end(other)
    if until is None or (theirs is not None and theirs <= until):
        return {}
    rest = frozenset(d for d in live if (e := windows[d][1]) is None or e > until)
    after = _plan(iteration_s_for, rest)
    if after is None or first_end(after[1] & other) is not None:
        return {}
    return {"current_until_s": until, "after_iteration_s": after[0]}


def _wait_for_join(t, left, plan, cost_s, windows, iteration_s_for, reconfiguration_s_for, restart):
    """At a start or a forced change at ``t``: waiting idle for the next devices to join and
    starting then on the plan the choosing rule takes there (free if nothing has run yet:
    ``restart`` False), against starting ``plan`` now (after ``cost_s``) and deciding on the join
    when it comes by :func:`decide_join`. Waiting and switching at the join both run the same
    plan from the join on, so the leaves of its devices hit them alike and are left out; staying
    counts its own first leave as at a join. The event when waiting finishes strictly earlier,
    else None."""
    later = [a for a, _ in windows.values() if a > t]
    if not later:
        return None
    at = min(later)
    live = frozenset(d for d, (a, b) in windows.items() if a <= at and (b is None or b > at))
    setup = reconfiguration_s_for if restart else (lambda _: 0.0)
    then, _ = _choose(at, live, left, windows, iteration_s_for, setup, reconfiguration_s_for)
    if then is None:
        return None
    (now_s, used), (then_s, then_used) = plan, then
    wait = at + setup(then_s) + left * then_s
    start = t + cost_s
    done = min(left, _whole(at - start, now_s))
    finish = start + left * now_s
    if done < left and then != plan:
        join = decide_join(
            now_s=at, remaining_iterations=left - done, current_iteration_s=now_s,
            new_iteration_s=then_s, reconfiguration_s=reconfiguration_s_for(then_s),
            window_until_s=None, resume_s=start + done * now_s,
            **_own_leave(used, live, windows, iteration_s_for, then_used),
        )  # fmt: skip
        finish = min(join.finish_if_switch_s, join.finish_if_stay_s)
    joining = _ids(d for d, (a, _) in windows.items() if a == at)
    decision = _compare(
        f"waiting until {_s(at)} for {joining}", f"starting now on {_ids(used)}", wait, finish, None
    )
    if not decision.switch:
        return None
    return Event(
        t,
        f"choosing a plan: {_verb(joining, 'joins', 'join')} at {_s(at)}",
        decision,
    )


def plan_over_windows(
    *,
    windows: Mapping[str, tuple[float, float | None]],
    iterations: int,
    iteration_s_for: PlanFor,
    reconfiguration_s_for: Callable[[float], float],
    policy: str = "makespan",
) -> Schedule:
    """Schedule plan changes over the whole job, given each device's availability window.

    ``windows`` maps a device id to (available from, until or None = to the end), in seconds.
    ``iteration_s_for(ids)`` gives the best plan on those ids, (iteration time, ids it uses), or
    None when nothing fits; ``reconfiguration_s_for(iteration_s)`` the cost of switching to a
    plan. Time walks through the window boundaries in order, following the module's rules
    (``policy``: one of :data:`POLICIES`).
    """
    _count("iterations", iterations)
    _check(policy in POLICIES, f"policy must be one of {POLICIES}, got {policy!r}")
    for device, (start, end) in windows.items():
        _number(f"window start of {device}", start)
        _check(end is None or end > start, f"window of {device} must end after it starts")
    periods: list[Period] = []
    events: list[Event] = []
    run: _Run | None = None
    remaining, idle_since = iterations, 0.0
    times = {a for a, _ in windows.values()} | {b for _, b in windows.values() if b is not None}
    for t in sorted(times) if iterations else ():
        if run is not None and run.done_by(t) == run.remaining:
            break
        joins = [d for d, (a, _) in windows.items() if a == t]
        live = frozenset(d for d, (a, b) in windows.items() if a <= t and (b is None or b > t))
        forced = [d for d, (_, b) in windows.items() if b == t and run and d in run.used]
        if run is not None and not forced and not joins:
            continue  # only unused devices leave: nothing changes
        left = remaining if run is None else run.remaining - run.done_by(t)
        setup = reconfiguration_s_for if periods or run else (lambda _: 0.0)
        plan, chosen = _choose(
            t, live, left, windows, iteration_s_for, setup, reconfiguration_s_for,
            ahead=policy == "makespan",
        )  # fmt: skip
        events += chosen
        what = (
            _verb(_ids(forced), "leaves", "leave")
            if forced
            else _verb(_ids(joins), "joins", "join")
        )
        if run is None and not periods and not events:
            what = f"at the start, {_ids(live)} {'is' if len(live) == 1 else 'are'} there"
        if plan is None:  # nothing fits: a forced leave waits, an idle job keeps waiting
            if forced and run is not None:
                periods.append(run.close(t))
                remaining, idle_since, run = left, t, None
            if forced or (joins and run is None):
                events.append(Event(t, f"{what}; no plan fits: waiting", None))
            continue
        cost_s = setup(plan[0])
        if policy == "makespan" and (run is None or forced):
            restart = bool(periods or run)
            waiting = _wait_for_join(
                t, left, plan, cost_s, windows, iteration_s_for, reconfiguration_s_for, restart
            )
            if waiting is not None:
                events.append(waiting)
                if run is not None:
                    periods.append(run.close(t))
                    remaining, idle_since, run = left, t, None
                continue
        if run is None:
            run = _Run(t, cost_s, plan[0], plan[1], remaining)
            events.append(Event(t, f"start on {_ids(plan[1])}", None))
            continue
        common: dict[str, Any] = dict(
            now_s=t,
            remaining_iterations=left,
            current_iteration_s=run.iteration_s,
            new_iteration_s=plan[0],
            reconfiguration_s=cost_s,
            resume_s=run.resume_s(t),
        )
        if forced:
            decision = decide_leave(**common, device_in_use=True)
        else:
            ends = [e for d in plan[1] - run.used if (e := windows[d][1]) is not None]
            ahead = (
                _own_leave(run.used, live, windows, iteration_s_for, plan[1])
                if policy == "makespan"
                else {}
            )
            decision = decide_join(**common, window_until_s=min(ends, default=None), **ahead)
            if policy != "makespan":
                switch = policy == "always" and plan != (run.iteration_s, run.used)
                verb = "switches" if switch else "stays"
                reason = (
                    f"the {policy}-reconfigure policy {verb} (the makespan rule: {decision.reason})"
                )
                decision = replace(decision, switch=switch, reason=reason)
        events.append(Event(t, f"{what}: best plan uses {_ids(plan[1])}", decision))
        if decision.switch:
            periods.append(run.close(t))
            remaining, run = left, _Run(t, cost_s, plan[0], plan[1], left)
    if run is None and remaining:
        raise UsageError(
            f"training cannot finish: from {_s(idle_since)} on, {remaining} of {iterations} "
            "iterations remain and no plan fits on the devices left; add a device or lengthen "
            "a window"
        )
    if run is None:
        return Schedule((), 0.0, tuple(events))
    finish = run.from_s + run.setup_s + run.remaining * run.iteration_s
    periods.append(run.close(finish))
    return Schedule(tuple(periods), finish, tuple(events))
