"""The offline optimum (plan/optimum.py) against brute force over every choice sequence, and the
policies of plan/windows.py never below it."""

from __future__ import annotations

import math
import random

import pytest

from trainplay.errors import UsageError
from trainplay.plan.optimum import all_subsets, optimal_schedule
from trainplay.plan.windows import POLICIES, plan_over_windows


def synthetic(speed: dict[str, float], mem: dict[str, float], need: float, comm_s: float):
    """The best plan on a set of devices, as the planner gives it: the fastest of its subsets
    whose memory holds ``need``, each running 100 units of work shared by speed plus ``comm_s``
    per extra device (so more devices are not always faster, and some stay idle)."""

    def time_on(ids: frozenset[str]) -> float:
        return 100.0 / sum(speed[d] for d in ids) + comm_s * (len(ids) - 1)

    def plan(ids: frozenset[str]):
        fits = [s for s in all_subsets(ids) if sum(mem[d] for d in s) >= need]
        best = min(fits, key=lambda s: (time_on(s), sorted(s)), default=None)
        return None if best is None else (time_on(best), best)

    return plan


def brute_force(windows, iterations, plan_for, reconf_for) -> float:
    """The least makespan over every sequence of choices at the window boundaries (keep the plan
    running, switch to the plan of any subset of the devices there, wait), simulated forward."""
    times = sorted({a for a, _ in windows.values()} | {b for _, b in windows.values() if b})

    def until(used):
        return min((b for d in used if (b := windows[d][1]) is not None), default=math.inf)

    def done(run, t):  # whole iterations the run has ended by t
        first_s, speed_s, _, left = run
        return min(left, max(0, math.floor((t - first_s) / speed_s + 1e-9)))

    def go(k, left, run, started) -> float:
        if run is not None:
            first_s, speed_s, used, run_left = run
            end = first_s + run_left * speed_s
            if k == len(times) or end <= times[k]:
                return end if until(used) + 1e-9 >= end else math.inf
        if k == len(times):
            return math.inf
        t = times[k]
        if run is not None:
            left = run[3] - done(run, t)
        live = [d for d, (a, b) in windows.items() if a <= t and (b is None or b > t)]
        best = go(k + 1, left, None, started)  # wait
        if run is not None and until(run[2]) > t:
            best = min(best, go(k + 1, left, run, started))  # keep
        for n in range(1, len(live) + 1):
            for mask in range(2 ** len(live)):
                ids = frozenset(d for i, d in enumerate(live) if mask >> i & 1)
                if len(ids) != n or (plan := plan_for(ids)) is None:
                    continue
                setup = reconf_for(plan[0]) if started else 0.0
                new = (t + setup, plan[0], plan[1], left)
                best = min(best, go(k + 1, left, new, True))
        return best

    return go(0, iterations, None, False)


def random_case(rng: random.Random):
    ids = ["a", "b", "c"]
    windows = {}
    for d in ids:
        start = rng.choice([0, 0, 10, 40, 90])
        end = rng.choice([None, None, start + rng.choice([20, 60, 150])])
        windows[d] = (float(start), None if end is None else float(end))
    if all(a > 0 for a, _ in windows.values()):
        windows["a"] = (0.0, windows["a"][1] if (windows["a"][1] or 1) > 0 else None)
    speed = {d: rng.choice([1.0, 2.0, 5.0, 10.0]) for d in ids}
    mem = {d: rng.choice([1.0, 2.0]) for d in ids}
    plan = synthetic(speed, mem, need=rng.choice([1.0, 2.0]), comm_s=rng.choice([0.0, 2.0]))
    reconf = rng.choice([0.0, 5.0, 30.0])
    return windows, rng.choice([3, 8, 20]), plan, lambda s: reconf + s


CASES = [random_case(random.Random(seed)) for seed in range(40)]


def _finishes(case) -> bool:
    try:
        optimal_schedule(
            windows=case[0], iterations=case[1], iteration_s_for=case[2],
            reconfiguration_s_for=case[3],
        )  # fmt: skip
    except UsageError:
        return False
    return True


def test_random_cases_mostly_finish():
    # the cases below mean something only if most of them have a schedule
    assert sum(map(_finishes, CASES)) >= 25


@pytest.mark.parametrize("seed", range(len(CASES)))
def test_dynamic_programming_equals_brute_force(seed):
    windows, iterations, plan, reconf = CASES[seed]
    brute = brute_force(windows, iterations, plan, reconf)
    if brute == math.inf:
        with pytest.raises(UsageError, match="training cannot finish"):
            optimal_schedule(
                windows=windows, iterations=iterations, iteration_s_for=plan,
                reconfiguration_s_for=reconf,
            )  # fmt: skip
        return
    best = optimal_schedule(
        windows=windows, iterations=iterations, iteration_s_for=plan, reconfiguration_s_for=reconf
    )
    assert best.makespan_s == pytest.approx(brute, rel=1e-9)
    assert sum(p.iterations for p in best.periods) == iterations
    assert best.periods[-1].until_s == best.makespan_s
    for before, after in zip(best.periods, best.periods[1:], strict=False):
        assert before.until_s <= after.from_s
    for p in best.periods:  # every period runs on devices that are there all along
        for d in p.devices:
            a, b = windows[d]
            assert a <= p.from_s and (b is None or p.until_s <= b)


@pytest.mark.parametrize("policy", POLICIES)
def test_no_policy_beats_the_optimum(policy):
    compared = 0
    for windows, iterations, plan, reconf in CASES:
        try:
            ours = plan_over_windows(
                windows=windows, iterations=iterations, iteration_s_for=plan,
                reconfiguration_s_for=reconf, policy=policy,
            )  # fmt: skip
        except UsageError:
            continue
        best = optimal_schedule(
            windows=windows, iterations=iterations, iteration_s_for=plan,
            reconfiguration_s_for=reconf,
        )  # fmt: skip
        assert best.makespan_s <= ours.makespan_s * (1 + 1e-9)
        compared += 1
    assert compared >= 20


def test_waiting_for_a_fast_device_beats_starting_without_it():
    # a slow device from 0 s (100 s an iteration), one 10x faster from 50 s (both: 9.09 s), a
    # 30 s reconfiguration: the slow one alone ends no iteration by 50 s, so the optimum waits
    plan = synthetic({"slow": 1.0, "fast": 10.0}, {"slow": 1, "fast": 1}, need=1, comm_s=0)
    windows = {"slow": (0.0, None), "fast": (50.0, None)}
    best = optimal_schedule(
        windows=windows, iterations=10, iteration_s_for=plan, reconfiguration_s_for=lambda s: 30
    )
    # start free at 50 s on both (the first start costs nothing): 50 + 10 x 100/11
    assert best.makespan_s == pytest.approx(50 + 10 * 100 / 11)
    assert [p.from_s for p in best.periods] == [50.0]
    ours = plan_over_windows(
        windows=windows, iterations=10, iteration_s_for=plan, reconfiguration_s_for=lambda s: 30
    )
    # the makespan rule waits too (starting at once on the slow device, it would switch at 50 s
    # having done no whole iteration: 50 + 30 + 10 x 9.09 s, 30 s later)
    assert ours.makespan_s == pytest.approx(best.makespan_s)
    assert [p.from_s for p in ours.periods] == [50.0]
    wait = ours.events[0]
    assert wait.at_s == 0 and wait.text == "choosing a plan: fast joins at 50 s"
    assert wait.decision.switch and wait.decision.finish_if_stay_s == pytest.approx(
        best.makespan_s + 30
    )


def test_no_schedule_finishes_raises():
    plan = synthetic({"a": 1.0}, {"a": 1}, need=1, comm_s=0)
    with pytest.raises(UsageError, match="no schedule does all 5 iterations"):
        optimal_schedule(
            windows={"a": (0.0, 300.0)}, iterations=5, iteration_s_for=plan,
            reconfiguration_s_for=lambda s: 0,
        )  # fmt: skip


def test_a_start_on_a_device_that_soon_leaves_waits_for_the_joiners():
    # a (50 s an iteration) is there until 60 s; b (50 s) and c (100 s) join at 40 s (b + c:
    # 33.3 s); reconfiguring costs one iteration of the new plan. Starting on a does one
    # iteration before it leaves; the choosing rule at 40 s would leave a out (it leaves too
    # soon), so waiting means a free start at 40 s on b + c: 40 + 3 x 33.3 = 140 s, the optimum
    plan = synthetic({"a": 2.0, "b": 2.0, "c": 1.0}, dict.fromkeys("abc", 1.0), need=1, comm_s=0)
    windows = {"a": (0.0, 60.0), "b": (40.0, None), "c": (40.0, None)}
    same = dict(
        windows=windows, iterations=3, iteration_s_for=plan, reconfiguration_s_for=lambda s: s
    )
    best = optimal_schedule(**same)
    ours = plan_over_windows(**same)
    assert best.makespan_s == pytest.approx(140) == ours.makespan_s
    assert [(p.from_s, p.devices) for p in ours.periods] == [(40.0, ("b", "c"))]
    assert ours.events[0].text == "choosing a plan: b, c join at 40 s"
