"""Calibration in the loop: the measured stage times correct the cost model of the devices present,
and the makespan rule decides whether a plan for the corrected devices pays for a restart.

- **What is learned.** Each rank's busy time (forward + backward + optimizer + taking its batch,
  from its timers) over its predicted busy time gives the effective *scale* of its device: how much
  slower (> 1) or faster (< 1) than priced it runs this job's work. The cost model has no term for
  reading or making the samples; the step loop does it on the rank, in proportion to its samples as
  its compute is, so the scale carries it (in this machine's benchmark the steps' time outside the
  other timers, where taking the batch is, was 14-42 ms of 93-162 ms). The timers see a stage's
  device work as a whole, so one scale applies to every operator class of the device (compute and
  memory curves, and the fixed per-call costs) — :func:`calibrated` divides its rates and
  multiplies its fixed costs by the scale, which multiplies every predicted time on it by exactly
  the scale. Communication (all-reduce, transfers) keeps its measured curves.
- **When it is learned.** Every :data:`CHECK_EVERY` steps the lead rank takes each rank's busy time
  summed over the last :data:`WINDOW` steps priced at the current scales, over its predicted busy
  time as often (the first :data:`WARMUP` steps of a worker group left out; fewer than
  :data:`MIN_STEPS` steps: no judgement yet); a device whose ratio lies within :data:`TOLERANCE` of
  its current scale changes nothing, so noise of a few steps does not move the prices. A device
  beyond it is priced from the last :data:`CHECK_EVERY` steps alone: a change in speed is seen on
  the whole window (its noise halved) but priced on the steps after it (a window half before and
  half after a throttle would price half of it, and a restart is too dear to correct a plan twice).
  A sum, not a median of per-step ratios: a device that is shared in time slices (a CPU quota
  enforced per 100 ms period, a co-tenant) runs some steps at full speed and stalls in others, so
  per-step ratios are bimodal and their median lands on either mode from one look to the next,
  while the window's total is the rate the device delivered (seen in
  ``benchmarks/hetero_measured.py``: the medians of a 40%-quota rank swung between 1.8 and 5).
- **What it decides.** The planner searches a plan for the calibrated devices (uneven batch shares
  for uneven speeds included); the current plan is priced on them too; the makespan rule
  (:func:`trainplay.plan.makespan.decide_join`, no window) switches only if the job then finishes
  earlier, counting the reconfiguration at what this job measured: its last recovery time (in
  ``run.json``), else its worker group's start (rendezvous round closed to first step done) times
  the slowest device's slowdown since that start (the speeds of the group's first look; a node
  throttled later restarts slower too), plus writing and reading back a checkpoint at the time its
  checkpoints took.
- **What is known without measuring.** A CPU rank that may use fewer CPUs than it runs threads
  (a cgroup bandwidth limit, or an affinity narrower than its threads:
  :func:`trainplay.hardware.cpulimit.cpu_limit`) cannot sustain its profile's speed, which was
  measured at full speed (a microbenchmark's sample is shorter than the limit's period).
  :func:`scale_floor` is the least scale it can have, ``threads / CPUs``; the ranks read their
  limits when the group starts and at every look, and a device's scale is never below its floor
  (:func:`floored`). A time-sliced rank whose share fits inside its quota runs some windows at
  full speed: its measured scale then dips (1.29 under a 40% quota in
  ``benchmarks/hetero_measured.py``, whose floor is 2.5), and without the floor the planner gave
  it more work, which the quota then stalled, and re-planned back.
- **Where it is kept.** The scales live in the checkpoint directory's ``run.json`` with the run
  (:class:`~trainplay.runtime.replan.RunState`, written with each checkpoint), so every later
  worker group of the job prices the devices as measured; a device that joins later is priced at
  the scale measured on devices of its type. A re-plan is a planned restart: checkpoint, the new
  plan written to ``run.json``, exit :data:`~trainplay.runtime.launcher.EXIT_REPLAN`; the agent
  restarts the group (not counted as a failure), which resumes on it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any

from trainplay.plan.api import make_plan
from trainplay.plan.costs import CostModel, Device
from trainplay.plan.makespan import decide_join, estimate_reconfiguration
from trainplay.plan.plan import Plan
from trainplay.plan.search import SearchOptions, search
from trainplay.roofline.measured import BUSY_FIELDS

CALIBRATED_FIELDS = (*BUSY_FIELDS, "data_s")
"""The timers a device's scale is measured on: its own work, the batch it takes included."""

__all__ = [
    "CALIBRATED_FIELDS",
    "CHECK_EVERY",
    "MIN_STEPS",
    "TOLERANCE",
    "WARMUP",
    "WINDOW",
    "Check",
    "calibrated",
    "calibrated_all",
    "check",
    "floored",
    "restart_slowdown",
    "scale_floor",
    "scales_for",
    "scales_of",
    "speeds",
]

CHECK_EVERY = 10
"""Steps between two looks at the timers."""
WINDOW = 20
"""Steps a look sums over: the last ones since the scales last changed. A device that slows down
by a factor s after step K moves the sum of a look that has n of its 20 steps after K by
n (s - 1) / 20: past :data:`TOLERANCE` at the first look after K for s >= 1.3, and the look after
it prices the rest."""
WARMUP = 2
"""Steps at the start of a worker group that calibration leaves out: their timers include one-time
costs (first-touch allocations, the optimizer's state, kernel selection). A sum is not robust to
them as a median was: in ``benchmarks/hetero_measured.py`` the first step's busy time was 2.6x the
next nine steps' mean on the unthrottled node, and raised its first scale from 1.57 to 1.83."""
MIN_STEPS = CHECK_EVERY - WARMUP
"""Steps a look needs at the current prices before it judges them."""
TOLERANCE = 0.15
"""A device whose measured scale is within 15% of the one in use keeps it."""


def calibrated(device: Device, scale: float) -> Device:
    """``device`` running ``scale`` times slower than priced (every class, every fixed cost)."""
    if scale == 1.0:
        return device
    peaks = device.priced().scaled(1 / scale, note=f"x{scale:.4g} measured")
    alone = None if device.alone is None else calibrated(device.alone, scale)
    return replace(device, apf=device.apf / scale, apm=device.apm / scale, peaks=peaks, alone=alone)


def scale_floor(cpus: float, threads: int) -> float:
    """The least scale of a CPU device running ``threads`` threads that may use only ``cpus`` CPUs
    at once: its threads share ``cpus`` CPUs' worth of time, ``cpus / threads`` of the full speed
    its profile was measured at, sustained (module docstring)."""
    return max(1.0, threads / cpus) if cpus > 0 else 1.0


def floored(scales: dict[str, float], floors: dict[str, float]) -> dict[str, float]:
    """``scales`` with every device of ``floors`` at least at its floor. Spell out the scales of
    the other devices first (:func:`scales_for`): a floor is not a measurement, and a device left
    out would be priced at its type's median of the floors."""
    out = dict(scales)
    for device, floor in floors.items():
        if floor > out.get(device, 1.0):
            out[device] = floor
    return out


def scales_for(devices: list[Device], scales: dict[str, float]) -> dict[str, float]:
    """Device id -> its scale: as measured; one not measured (a node that joined) at the median
    scale of the measured devices of its type, if there are any, else 1."""
    by_type: dict[str, list[float]] = {}
    for d in devices:
        if d.id in scales:
            by_type.setdefault(d.type, []).append(scales[d.id])
    return {
        d.id: scales.get(d.id, statistics.median(by_type[d.type]) if d.type in by_type else 1.0)
        for d in devices
    }


def calibrated_all(devices: list[Device], scales: dict[str, float]) -> list[Device]:
    """Every device at its scale (:func:`scales_for`)."""
    of = scales_for(devices, scales)
    return [calibrated(d, of[d.id]) for d in devices]


def scales_of(
    described: list[dict[str, Any]], rows: list[list[list[float]]], fields: tuple[str, ...]
) -> dict[str, float]:
    """Device id -> busy time summed over ``rows`` (step, rank, field) over the predicted busy
    time of as many steps, for the ranks of ``described`` (the journal's ``start.ranks``) that
    have a prediction."""
    index = [fields.index(f) for f in CALIBRATED_FIELDS if f in fields]
    out = {}
    for i, rank in enumerate(described):
        predicted = rank.get("predicted") or {}
        expected = sum(predicted.get(f, 0.0) for f in BUSY_FIELDS)
        if expected > 0 and rows:
            busy = sum(step[i][k] for step in rows for k in index)
            out[rank["device"]] = busy / (expected * len(rows))
    return out


@dataclass(frozen=True)
class Check:
    """What one look at the timers found and decided."""

    scales: dict[str, float]
    """Device id -> the scale to use from now on."""
    changed: bool
    """Whether some device's scale moved beyond :data:`TOLERANCE`."""
    plan: Plan | None = None
    """The plan to switch to (``None``: keep the current one)."""
    decision: dict[str, Any] | None = None
    """The makespan figures of the decision, when one was made."""


def check(
    cm: CostModel,
    base: list[Device],
    current: Plan,
    current_scales: dict[str, float],
    measured: dict[str, float],
    *,
    recent: dict[str, float] | None = None,
    remaining_steps: int,
    reconfiguration_s: float | None,
    checkpoint_s: float,
    options: SearchOptions,
    price: Any,
    measured_at: dict[str, float] | None = None,
    floors: dict[str, float] | None = None,
) -> Check:
    """Update the scales with ``measured`` (ratios against the current scales' predictions over the
    window; a device beyond the tolerance takes its ratio in ``recent``, over the last steps,
    when given) and decide whether a plan for the calibrated devices pays (module docstring).
    ``base``: the devices as the cluster prices them; ``price(plan, devices)``: a plan's
    predicted step time on ``devices`` (``None`` if it does not fit). ``reconfiguration_s``: the
    recovery time this job measured, else ``None``: then the planner's estimate of a restart and
    warm-up plus writing and reading back the checkpoint at the ``checkpoint_s`` this job
    measured. ``measured_at``: the devices' speeds (:func:`speeds`) when ``reconfiguration_s``
    was measured; the restart is priced at the devices' speeds now (:func:`restart_slowdown`).
    ``floors``: the least scale of each device with a CPU limit (:func:`scale_floor`); no scale
    goes below it."""
    scales = dict(current_scales)
    for device, ratio in measured.items():
        scales.setdefault(device, 1.0)  # measured: not to be priced like others of its type
        if abs(ratio - 1) > TOLERANCE:
            scales[device] *= (recent or {}).get(device, ratio)
    if floors:  # every device's scale spelled out first: a floor is no measurement of its type
        scales = floored(scales_for(base, scales), floors)
        current_scales = scales_for(base, current_scales)
    changed = any(scales[d] != current_scales.get(d, 1.0) for d in scales)
    if not changed or remaining_steps <= 0:
        return Check(scales, changed)
    devices = calibrated_all(base, scales)
    found = search(cm, devices, current.global_batch, options)
    if found is None:
        return Check(scales, changed)
    new = make_plan(cm, found.layout, cm.blocks.names)[0]
    now_s = price(current, devices)
    if new.plan_id == current.plan_id or now_s is None:
        return Check(scales, changed)
    cost, slowdown = reconfiguration_s, 1.0
    if cost is None:
        cost = estimate_reconfiguration(0, new.predicted_iteration_s).total_s + 2 * checkpoint_s
    elif measured_at:
        slowdown = restart_slowdown(scales, measured_at)
        cost *= slowdown
    decision = decide_join(
        now_s=0.0, remaining_iterations=remaining_steps, current_iteration_s=now_s,
        new_iteration_s=new.predicted_iteration_s, reconfiguration_s=cost, window_until_s=None,
    )  # fmt: skip
    record = {
        **decision.to_dict(),
        "current_iteration_s": now_s,
        "new_iteration_s": new.predicted_iteration_s,
        "reconfiguration_s": cost,
        "reconfiguration_slowdown": slowdown,
    }
    return Check(scales, changed, new if decision.switch else None, record)


def speeds(current_scales: dict[str, float], measured: dict[str, float]) -> dict[str, float]:
    """The devices' scales as ``measured`` found them (``measured``: ratios against the
    ``current_scales``' predictions)."""
    return {d: current_scales.get(d, 1.0) * ratio for d, ratio in measured.items()}


def restart_slowdown(scales: dict[str, float], measured_at: dict[str, float]) -> float:
    """How much longer a restart takes now than when it was measured: its slowest device's
    slowdown since. A restart is work on every node (processes, imports, the model built, the
    checkpoint read back) and the group starts when its last node has: a node throttled after the
    start was measured restarts as much slower as it trains (in ``benchmarks/hetero_measured.py``
    worker groups that started in 3.7-4.9 s before a 40% quota restarted in 10.1-10.5 s after
    it)."""
    ratios = [scales.get(d, 1.0) / at for d, at in measured_at.items() if at > 0]
    return max(ratios, default=1.0)
