"""``plan_model``: the one call behind ``trainplay plan``; ``decide_on_change``: what the runtime
calls when a device joins or leaves."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from trainplay.errors import UsageError
from trainplay.hardware.local import resolve_cluster
from trainplay.hardware.spec import ClusterSpec
from trainplay.plan.advice import binding_limit, no_fit_error, ruled_out
from trainplay.plan.baselines import Baseline, baselines
from trainplay.plan.costs import BlockCosts, CostModel, Device, devices_of
from trainplay.plan.layout import Layout, memory_of, work_of
from trainplay.plan.makespan import (
    Decision,
    Schedule,
    decide_join,
    decide_leave,
    estimate_reconfiguration,
)
from trainplay.plan.memory import STATE_FACTOR, usable_bytes, with_training_memory
from trainplay.plan.plan import Plan, PlanStage
from trainplay.plan.search import Found, SearchOptions, search
from trainplay.plan.simulate import Timeline, iteration_s, simulate
from trainplay.plan.windows import PlanFor, plan_over_windows
from trainplay.workload import profile
from trainplay.workload.chain import cached_parameter_layout
from trainplay.workload.stats import DTYPE_BYTES
from trainplay.workload.zoo import resolve_model

__all__ = [
    "PlanResult",
    "Wait",
    "block_costs",
    "decide_on_change",
    "make_plan",
    "plan_model",
    "window_plans",
]


@dataclass(frozen=True, kw_only=True)
class PlanResult:
    """The plan, what it asks of each device, the baselines, the costs behind it."""

    model: str
    cluster: str
    global_batch: int
    optimizer: str
    plan: Plan
    devices: tuple[dict[str, Any], ...]
    baselines: tuple[Baseline, ...]
    costs: dict[str, Any]
    iterations: int | None
    search: dict[str, Any]
    schedule_over_time: Schedule | None = None
    wait: Wait | None = None
    """Set when no plan fits on the devices there at the start: the plan waits for later ones."""
    layout: Layout | None = field(default=None, compare=False)
    timeline: Timeline | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "cluster": self.cluster,
            "global_batch": self.global_batch,
            "optimizer": self.optimizer,
            "iterations": self.iterations,
            "plan": self.plan.to_dict(),
            "devices": list(self.devices),
            "baselines": [b.to_dict() for b in self.baselines],
            "costs": self.costs,
            "search": self.search,
            "schedule_over_time": (
                None if self.schedule_over_time is None else self.schedule_over_time.to_dict()
            ),
            "wait": None if self.wait is None else asdict(self.wait),
        }


def block_costs(
    model: str,
    *,
    dtype: str = "fp32",
    input_shape: tuple[int, ...] | None = None,
    seq_len: int | None = None,
    vocab_size: int | None = None,
) -> BlockCosts:
    """Profile ``model`` on ``meta`` with its training loss at batch 2 and 4 and fit each block's
    operators per sample, with what training holds beyond the profile
    (``plan.memory.with_training_memory``). ``vocab_size`` makes a ``pkg.mod:factory`` model a
    language model."""
    options = {"dtype": dtype, "input_shape": input_shape, "seq_len": seq_len, "loss": True}
    small = profile(model, batch_size=2, vocab_size=vocab_size, **options)
    large = profile(model, batch_size=4, vocab_size=vocab_size, **options)
    source = resolve_model(model, vocab_size=vocab_size, seq_len=seq_len)
    per_sample = math.prod(small.input_shape)
    per_sample *= 8 if source.vocab_size is not None else DTYPE_BYTES[dtype]  # int64 token ids
    costs = BlockCosts.from_profiles(small, large, input_bytes_per_sample=per_sample)
    largest = cached_parameter_layout(source, small.input_shape, dtype, costs.names)
    return with_training_memory(costs, largest)


@dataclass(frozen=True)
class Wait:
    """Why the plan does not start at time 0, and what it waits for."""

    start_s: float
    """When the plan starts: the first window start at which a plan fits."""
    arriving: tuple[str, ...]
    """Devices that arrive by then and were not there at the start, sorted."""
    arriving_usable_bytes: int
    """Their memory, less the workspace each keeps (``memory.usable_bytes``)."""
    cause: str
    """Why nothing fits on the devices there at the start (``advice.binding_limit``'s words)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arriving", tuple(self.arriving))  # a JSON list comes back


def _live(devices: list[Device], t: float) -> list[Device]:
    """The devices whose window holds time ``t`` (from inclusive, until exclusive)."""
    return [d for d in devices if d.window[0] <= t and (d.window[1] is None or d.window[1] > t)]


def _first_fit(
    cm: CostModel,
    devices: list[Device],
    global_batch: int,
    options: SearchOptions,
    costs_for: Callable[[str], BlockCosts] | None,
) -> tuple[Found, list[Device], Wait | None]:
    """The best plan at the first window start at which one fits, the devices there then, and
    the wait before it (None when it fits at the first start). Nothing fits at any time: the
    "does not fit" error for the most memory there at once."""
    tried: list[tuple[float, list[Device]]] = []
    for t in sorted({d.window[0] for d in devices}):
        live = _live(devices, t)
        hopeless = not live or ruled_out(cm, live, global_batch, options)
        found = None if hopeless else search(cm, live, global_batch, options)
        if found is None:
            tried.append((t, live))
            continue
        if not tried:
            return found, live, None
        t0, first = next((u, ds) for u, ds in tried if ds)
        _, cause = binding_limit(cm, first, global_batch, options)
        arriving = tuple(sorted({d.id for d in live} - {d.id for d in first}))
        start = f"at {t0:,.0f} s" if t0 > 0 else "at the start"
        cause = f"on the {len(first)} devices there {start}: {cause}"
        more = sum(usable_bytes(d.mem_bytes) for d in live if d.id in arriving)
        return found, live, Wait(t, arriving, round(more), cause)
    t, most = max(tried, key=lambda x: sum(usable_bytes(d.mem_bytes) for d in x[1]))
    where = None
    if len(most) < len(devices):
        where = f"the {len(most)} devices there together from {t:,.0f} s (the most at any time)"
    raise no_fit_error(cm, most, global_batch, options, costs_for=costs_for, where=where)


def _state_bytes(cm: CostModel) -> float:
    params = sum(cm.blocks.param_bytes)
    return params * (1 + STATE_FACTOR[(cm.optimizer, cm.blocks.dtype)])


def make_plan(cm: CostModel, layout: Layout, block_names: tuple[str, ...]) -> tuple[Plan, Layout]:
    """The plan value of a layout; a stage recomputes in every replica if it does in one."""
    flags = tuple(any(rec[s] for rec in layout.recompute) for s in range(layout.stages))
    layout = replace(layout, recompute=tuple(flags for _ in layout.grid))
    work = work_of(cm, layout)
    if work is None:
        raise AssertionError("a searched layout must fit")
    stages = tuple(
        PlanStage(
            blocks=(layout.bounds[s], layout.bounds[s + 1] - 1),
            devices=tuple(row[s].id for row in layout.grid),
            batch_shares=layout.shares,
            recompute=flags[s],
        )
        for s in range(layout.stages)
    )
    plan = Plan(
        stages=stages,
        microbatches=layout.microbatches,
        schedule=layout.schedule,
        predicted_iteration_s=iteration_s(work),
        block_names=block_names,
    )
    return plan, layout


def _costs(cm: CostModel, layout: Layout, devices: list[Device]) -> dict[str, Any]:
    m = max(layout.micro(r) for r in range(layout.replicas))
    types: dict[str, Device] = {}
    for d in devices:
        types.setdefault(d.type, d)
    blocks = []
    for i, name in enumerate(cm.blocks.names):
        blocks.append(
            {
                "name": name,
                "activation_bytes": cm.activation_bytes(i + 1, m),
                "param_bytes": cm.blocks.param_bytes[i],
                "fwd_s": {t: cm.fwd_s(d, m, i, i + 1) for t, d in types.items()},
                "bwd_s": {t: cm.bwd_s(d, m, i, i + 1) for t, d in types.items()},
            }
        )
    return {
        "microbatch_size": m,
        "note": "per block at the plan's largest micro-batch: the sum of its operators, each at "
        "its class's achieved rate on the device type plus its fixed cost (trainplay.roofline."
        "cost); activation bytes cross a cut after the block",
        "peaks": {
            t: {"apf": d.apf, "apm": d.apm, "mem_bytes": d.mem_bytes} for t, d in types.items()
        },
        "blocks": blocks,
    }


def plan_model(
    model: str,
    cluster: str | ClusterSpec,
    *,
    global_batch: int,
    dataset_size: int | None = None,
    epochs: int = 1,
    optimizer: str = "sgd",
    dtype: str = "fp32",
    input_shape: tuple[int, ...] | None = None,
    seq_len: int | None = None,
    options: SearchOptions | None = None,
    costs: BlockCosts | None = None,
    show_progress: bool = False,
) -> PlanResult:
    """Plan ``model`` on ``cluster`` for a job of ``global_batch`` samples per step."""
    if global_batch < 1:
        raise UsageError(f"--global-batch must be a positive integer, got {global_batch}")
    if dataset_size is not None and dataset_size < 1:
        raise UsageError(f"--dataset-size must be a positive integer, got {dataset_size}")
    if epochs < 1:
        raise UsageError(f"--epochs must be a positive integer, got {epochs}")
    spec = (
        resolve_cluster(cluster, show_progress=show_progress)
        if isinstance(cluster, str)
        else cluster
    )
    options = options or SearchOptions()
    blocks = costs or block_costs(model, dtype=dtype, input_shape=input_shape, seq_len=seq_len)
    cm = CostModel(blocks, spec, optimizer)
    devices = devices_of(spec, dtype)
    if not devices:
        raise UsageError(f"cluster {spec.name!r} has no devices; add some to its nodes")
    if options.microbatches is not None and global_batch % options.microbatches:
        raise UsageError(
            f"--microbatches {options.microbatches} must divide the global batch {global_batch} "
            "(every micro-batch has the same size); pick a divisor"
        )

    def costs_for(other_dtype: str) -> BlockCosts:
        return block_costs(model, dtype=other_dtype, input_shape=input_shape, seq_len=seq_len)

    # costs the caller made (``costs=``) are not re-profiled at another dtype for the advice
    found, at_start, wait = _first_fit(
        cm, devices, global_batch, options, None if costs else costs_for
    )
    plan, layout = make_plan(cm, found.layout, blocks.names)
    iterations = None if dataset_size is None else math.ceil(dataset_size * epochs / global_batch)
    schedule = None
    if iterations is not None:
        schedule = _over_time(cm, devices, iterations, global_batch, options, plan)
        plan = replace(plan, predicted_makespan_s=schedule.makespan_s)
    memory = memory_of(cm, layout)
    rows = tuple(
        {
            "id": d.id,
            "type": d.type,
            "mem_used_bytes": round(memory[d.id].total_bytes) if d.id in memory else 0,
            "mem_capacity_bytes": d.mem_bytes,
            "available": {"from_s": d.window[0], "until_s": d.window[1]},
        }
        for d in devices
    )
    work = work_of(cm, layout)
    return PlanResult(
        model=model,
        cluster=spec.name,
        global_batch=global_batch,
        optimizer=optimizer,
        plan=plan,
        devices=rows,
        baselines=tuple(baselines(cm, at_start, global_batch, options)),
        wait=wait,
        costs=_costs(cm, layout, devices),
        iterations=iterations,
        search=_search_info(found),
        schedule_over_time=schedule,
        layout=layout,
        timeline=simulate(work) if work is not None else None,
    )


def _search_info(found: Found) -> dict[str, Any]:
    return {
        "exact": found.exact,
        "layouts_priced": found.evaluated,
        "seconds": round(found.seconds, 3),
    }


def _over_time(
    cm: CostModel,
    devices: list[Device],
    iterations: int,
    global_batch: int,
    options: SearchOptions,
    plan: Plan,
) -> Schedule:
    """The job as a sequence of plans over the devices' availability windows."""
    iteration_s_for, reconfiguration_s_for = window_plans(cm, devices, global_batch, options)
    return plan_over_windows(
        windows={d.id: d.window for d in devices},
        iterations=iterations,
        iteration_s_for=iteration_s_for,
        reconfiguration_s_for=reconfiguration_s_for,
    )


def window_plans(
    cm: CostModel, devices: list[Device], global_batch: int, options: SearchOptions | None = None
) -> tuple[PlanFor, Callable[[float], float]]:
    """What ``plan_over_windows`` (and ``optimum.optimal_schedule``) are given: the best plan on
    a set of device ids, (iteration time, ids it uses) or None, memoised; and the estimated cost
    of reconfiguring to a plan of a given iteration time (checkpoint and reload of the model's
    training state, restart, warm-up)."""
    by_id = {d.id: d for d in devices}
    order = list(by_id)
    memo: dict[frozenset[str], tuple[float, frozenset[str]] | None] = {}

    def iteration_s_for(ids: frozenset[str]) -> tuple[float, frozenset[str]] | None:
        if ids not in memo:
            found = search(
                cm, [by_id[i] for i in sorted(ids, key=order.index)], global_batch, options
            )
            if found is None:
                memo[ids] = None
            else:
                p, _ = make_plan(cm, found.layout, cm.blocks.names)
                memo[ids] = (p.predicted_iteration_s, frozenset(p.devices))
        return memo[ids]

    state = int(_state_bytes(cm))
    return iteration_s_for, lambda t: estimate_reconfiguration(state, t).total_s


def decide_on_change(
    cm: CostModel,
    current: Plan,
    available: list[Device],
    *,
    now_s: float,
    remaining_iterations: int,
    joined: Device | None = None,
    reconfiguration_s: float | None = None,
    options: SearchOptions | None = None,
) -> tuple[Decision, Plan | None]:
    """A device joined (``joined``) or left (the devices now ``available`` lack one of the plan's):
    the new plan, and whether switching to it pays back before the job ends or the joining
    device's window closes. Pure: the same inputs give the same answer on every rank."""
    global_batch = current.global_batch
    found = search(cm, available, global_batch, options)
    new = None if found is None else make_plan(cm, found.layout, cm.blocks.names)[0]
    new_s = None if new is None else new.predicted_iteration_s
    cost = reconfiguration_s
    if cost is None:
        cost = estimate_reconfiguration(
            int(_state_bytes(cm)), new_s or current.predicted_iteration_s
        ).total_s
    ids = {d.id for d in available}
    if joined is None:
        in_use = not set(current.devices) <= ids
        decision = decide_leave(
            now_s=now_s, remaining_iterations=remaining_iterations,
            current_iteration_s=current.predicted_iteration_s, new_iteration_s=new_s,
            reconfiguration_s=cost, device_in_use=in_use,
        )  # fmt: skip
        return decision, (new if decision.switch else current)
    if new is None or new_s is None:
        raise UsageError("no plan fits the devices present; this cannot happen on a join")
    decision = decide_join(
        now_s=now_s, remaining_iterations=remaining_iterations,
        current_iteration_s=current.predicted_iteration_s, new_iteration_s=new_s,
        reconfiguration_s=cost, window_until_s=joined.window[1],
    )  # fmt: skip
    return decision, (new if decision.switch else current)
