"""Terminal output of ``trainplay plan``: stages, devices, baselines, and the plan in words."""

from __future__ import annotations

from rich.table import Table

from trainplay.plan.api import PlanResult
from trainplay.plan.makespan import Schedule
from trainplay.report.units import (
    column_scale,
    format_bytes,
    format_duration,
    format_number,
    plural,
    time_scale,
)

__all__ = ["baseline_table", "device_table", "explain_lines", "stage_table", "summary_lines"]


def stage_table(result: PlanResult) -> Table:
    plan = result.plan
    names = plan.block_names
    table = Table(
        title=(
            f"{result.model} on {result.cluster} · global batch {result.global_batch:,} · "
            f"{plural(plan.replicas, 'replica')} x {plural(len(plan.stages), 'stage')} · "
            f"{plural(plan.microbatches, 'micro-batch', 'micro-batches')} · {plan.schedule} · "
            f"plan {plan.plan_id}"
        ),
        header_style="bold",
    )
    for header, justify in (
        ("stage", "right"),
        ("blocks", "left"),
        ("devices (one per replica)", "left"),
        ("batch shares", "left"),
        ("recompute", "left"),
    ):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for k, stage in enumerate(plan.stages):
        lo, hi = stage.blocks
        span = f"{lo}-{hi}" + (f"  {names[lo]} .. {names[hi]}" if names else "")
        table.add_row(
            str(k),
            span,
            ", ".join(stage.devices),
            ", ".join(map(str, stage.batch_shares)),
            "yes" if stage.recompute else "no",
        )
    return table


def device_table(result: PlanResult) -> Table:
    """Memory used and capacity per device, both columns in one unit (the capacities')."""
    table = Table(title="memory per device (10% of each kept as workspace)", header_style="bold")
    scale, prefix = column_scale((d["mem_capacity_bytes"] for d in result.devices), binary=True)
    for header, justify in (
        ("device", "left"),
        ("type", "left"),
        (f"used\n{prefix}B", "right"),
        (f"capacity\n{prefix}B", "right"),
        ("", "right"),
    ):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for d in result.devices:
        used, cap = d["mem_used_bytes"], d["mem_capacity_bytes"]
        table.add_row(
            d["id"], d["type"], format_number(used / scale) if used else "idle",
            format_number(cap / scale), f"{100 * used / cap:.0f}%" if used else "",
        )  # fmt: skip
    return table


def baseline_table(result: PlanResult) -> Table:
    ours = result.plan.predicted_iteration_s
    scale, unit = time_scale(
        [ours, *(b.predicted_iteration_s for b in result.baselines if b.predicted_iteration_s)]
    )

    def _ms(seconds: float) -> str:
        return format_number(seconds / scale)

    table = Table(title="against the baselines (same cost model)", header_style="bold")
    for header, justify in (
        ("plan", "left"),
        (f"iteration {unit}", "right"),
        ("trainplay speed-up", "right"),
        ("how", "left"),
    ):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    table.add_row("[bold]trainplay (TNP)[/bold]", _ms(ours), "1.00x", _search_text(result))
    for b in result.baselines:
        t = b.predicted_iteration_s
        table.add_row(
            b.name,
            "-" if t is None else _ms(t),
            "-" if t is None else f"{t / ours:.2f}x",
            b.reason,
        )
    return table


def _search_text(result: PlanResult) -> str:
    s = result.search
    mode = "exact search" if s["exact"] else "heuristic search"
    return (
        f"{mode}, {plural(s['layouts_priced'], 'layout')} priced in {format_duration(s['seconds'])}"
    )


def summary_lines(result: PlanResult) -> list[str]:
    plan = result.plan
    lines = [f"predicted iteration: {format_duration(plan.predicted_iteration_s)}"]
    best = [b for b in result.baselines if b.predicted_iteration_s is not None]
    if best:
        top = min(best, key=lambda b: b.predicted_iteration_s or 0.0)
        ratio = (top.predicted_iteration_s or 0.0) / plan.predicted_iteration_s
        lines.append(
            f"{ratio:.2f}x faster than the best baseline ({top.name})"
            if ratio >= 1.005
            else f"as fast as the best baseline ({top.name})"
        )
    if result.wait is not None:
        w = result.wait
        lines.append(
            f"no plan fits {w.cause}; the plan waits until {w.start_s:,.0f} s, when "
            f"{', '.join(w.arriving)} {'arrives' if len(w.arriving) == 1 else 'arrive'} with "
            f"{format_bytes(w.arriving_usable_bytes)} more usable memory"
        )
    if result.iterations is not None and plan.predicted_makespan_s is not None:
        lines.append(
            f"job: {plural(result.iterations, 'iteration')}, predicted makespan "
            f"{format_duration(plan.predicted_makespan_s)} ({plan.predicted_makespan_s:,.0f} s)"
        )
        sched = result.schedule_over_time
        if sched is not None and (len(sched.periods) > 1 or result.wait is not None):
            lines.extend(_schedule_lines(sched))
    idle = [d for d in result.devices if not d["mem_used_bytes"]]
    later = [d["id"] for d in idle if d["available"]["from_s"] > 0]
    unused = [d["id"] for d in idle if d["available"]["from_s"] <= 0]
    if unused:
        lines.append(f"left idle (they would not make it faster): {', '.join(unused)}")
    if later:
        lines.append(f"not there at the start (see the plan periods): {', '.join(later)}")
    return lines


def _schedule_lines(sched: Schedule) -> list[str]:
    """The plan periods, then each event at a window boundary with what was decided and why."""
    lines = [f"{plural(len(sched.periods), 'plan period')} over the devices' availability windows:"]
    for p in sched.periods:
        lines.append(
            f"  {p.from_s:,.0f}-{p.until_s:,.0f} s: {plural(p.iterations, 'iteration')} at "
            f"{format_duration(p.iteration_s)} on {plural(len(p.devices), 'device')}"
            + (
                f" (after {format_duration(p.reconfiguration_s)} reconfiguring)"
                if p.reconfiguration_s
                else ""
            )
        )
    lines.append("events at the window boundaries:")
    for e in sched.events:
        said = f"{e.text}: {e.decision.reason}" if e.decision is not None else e.text
        lines.append(f"  {e.at_s:,.0f} s: {said}")
    return lines


def explain_lines(result: PlanResult) -> list[str]:
    """Why this plan: per stage, what each device does per micro-batch, and where time goes."""
    layout, timeline = result.layout, result.timeline
    if layout is None or timeline is None:
        return []
    lines = [
        "cost model: block time max(F/APF, M/APM) on each device's peaks; cuts alpha + bytes/beta on "
        "the link between stages; ring all-reduce per stage after the flush; GPipe priced in closed "
        "form, 1F1B by the event simulator",
        f"search: {_search_text(result)}; each replica's share is a multiple of the micro-batch count",
    ]
    busy: dict[str, float] = {}
    for e in timeline.events:
        busy[e.lane] = busy.get(e.lane, 0.0) + e.end_s - e.start_s
    for r, row in enumerate(layout.grid):
        for s, device in enumerate(row):
            lo, hi = layout.bounds[s], layout.bounds[s + 1] - 1
            share = busy.get(device.id, 0.0) / timeline.iteration_s
            lines.append(
                f"replica {r} stage {s} on {device.id}: blocks {lo}-{hi}, "
                f"micro-batches of {plural(layout.micro(r), 'sample')}, busy {100 * share:.0f}% of "
                "the iteration"
            )
    links = {k: v for k, v in busy.items() if k.startswith("link")}
    if links:
        worst = max(links, key=lambda k: links[k])
        lines.append(
            f"busiest link: {worst}, {100 * links[worst] / timeline.iteration_s:.0f}% of the iteration"
        )
    return lines
