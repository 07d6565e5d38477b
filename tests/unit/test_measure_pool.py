"""Workers alike pool their measurements case by case (hardware/measure/pool.py); workers of
other kinds, and every GPU, keep their own."""

import os

import pytest

from trainplay.hardware.measure.pool import (
    applied,
    kind_of,
    pooled,
    pooled_by_kind,
    timings_of,
)
from trainplay.hardware.measure.sweeps import SweepResult
from trainplay.hardware.profile import Curve


def _case(
    seconds: float,
    hot: float,
    stale: float | None,
    quiet: bool = True,
    warm: float | None = None,
    step: float | None = None,
) -> SweepResult:
    cv = 0.01 * seconds / 2e-3
    return SweepResult(
        "gemm.fwd", "64x512x512", "aten.addmm", 3.4e7, 1.2e6, seconds, hot, cv, quiet, stale,
        warm_s=warm, step_s=step,
    )  # fmt: skip


def _timings(scale: float, *, stale: bool = True, quiet: bool = True, cache: int | None = 8):
    results = [_case(2e-3 * scale, 1e-3 * scale, 1.5e-3 * scale if stale else None, quiet,
                     1.2e-3 * scale),
               _case(4e-3 * scale, 3e-3 * scale, None, step=3.5e-3 * scale)]  # fmt: skip
    optimizers = {"sgd": (Curve(sizes=(1e3, 1e6), rates=(1e9 / scale, 2e9 / scale)), 1e-5 * scale)}
    return timings_of({"call": 5e-6 * scale, "fwd": 7e-6 * scale}, optimizers, results,
                      None if cache is None else cache << 20)  # fmt: skip


def test_three_workers_alike_take_each_cases_median():
    got = pooled([_timings(1.0), _timings(3.0, quiet=False, cache=16), _timings(1.2, cache=4)])
    first, second = got["sweep"]
    assert first[:3] == pytest.approx([2.4e-3, 1.2e-3, 1.8e-3])
    assert first[3] is False  # one worker's disturbed samples mark the pooled case
    assert first[4] == pytest.approx(0.03)  # and the largest spread is the pooled one's
    assert second[2] is None  # a stale time only where every worker timed one
    assert first[5] == pytest.approx(1.44e-3) and second[5] is None  # warm times alike
    assert second[6] == pytest.approx(4.2e-3) and first[6] is None  # and step times
    assert got["overheads"] == pytest.approx({"call": 6e-6, "fwd": 8.4e-6})
    rates, fixed = got["optimizers"]["sgd"]
    assert rates == pytest.approx([1e9 / 1.2, 2e9 / 1.2]) and fixed == pytest.approx(1.2e-5)
    assert got["cache_bytes"] == 8 << 20


def test_a_stale_time_missing_on_one_worker_is_missing_pooled():
    got = pooled([_timings(1.0), _timings(2.0, stale=False)])
    assert got["sweep"][0][2] is None
    assert got["sweep"][0][:2] == pytest.approx([3e-3, 1.5e-3])  # two: their mean


def test_only_workers_of_one_kind_pool():
    timings = [_timings(1.0), _timings(4.0), _timings(2.0)]
    kinds = ["cpu:a", "cpu:quota", "cpu:a"]
    first, ranks = pooled_by_kind(kinds, timings, 0)
    third, ranks_3 = pooled_by_kind(kinds, timings, 2)
    assert ranks == ranks_3 == [0, 2] and first == third
    assert first["sweep"][0][0] == pytest.approx(3e-3)
    slow, alone = pooled_by_kind(kinds, timings, 1)
    assert alone == [1] and slow is timings[1]  # the worker under a quota keeps its own


def test_pooled_figures_take_the_measured_ones_place():
    results = [_case(2e-3, 1e-3, 1.5e-3), _case(4e-3, 3e-3, None)]
    optimizers = {"sgd": (Curve(sizes=(1e3, 1e6), rates=(1e9, 2e9)), 1e-5)}
    overheads = {"call": 5e-6, "fwd": 7e-6, "schedule.step": 1e-4}
    both = pooled([_timings(1.0), _timings(3.0, cache=16)])
    got_over, got_opt, got_results, cache = applied(both, overheads, optimizers, results)
    assert got_over["schedule.step"] == 1e-4  # what was not pooled stays
    assert got_over["call"] == pytest.approx(1e-5)
    curve, fixed = got_opt["sgd"]
    assert curve.sizes == (1e3, 1e6) and curve.rates == pytest.approx((2e9 / 3, 4e9 / 3))
    assert fixed == pytest.approx(2e-5)
    assert [r.seconds for r in got_results] == pytest.approx([4e-3, 8e-3])
    assert got_results[1].step_s == pytest.approx(7e-3) and got_results[0].step_s is None
    assert got_results[0].label == "64x512x512" and got_results[0].stale_s == pytest.approx(3e-3)
    assert got_results[0].warm_s == pytest.approx(2.4e-3) and got_results[1].warm_s is None
    assert cache == 12 << 20


def test_a_cpu_workers_kind_is_its_threads_cpus_and_cgroup_and_every_gpu_its_own():
    here = kind_of("cpu", 1, 0)
    assert here == kind_of("cpu", 1, 1)  # the rank does not make a CPU worker another device
    assert here != kind_of("cpu", 2, 0)
    assert kind_of("cuda", 1, 0) != kind_of("cuda", 1, 1)
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        pytest.skip("one CPU: no other set of CPUs to pin to")
    try:
        os.sched_setaffinity(0, {min(cpus)})  # as `taskset -c N` pins a worker
        pinned = kind_of("cpu", 1, 0)
    finally:
        os.sched_setaffinity(0, cpus)
    assert pinned != here
