"""Terminal output of ``trainplay analyze``: the per-block table and the summary in words.

Numbers follow :mod:`trainplay.report.units`: fixed notation, and the four time columns share one
unit (s, ms or µs) chosen from the largest time in them. The table is a prediction: it has no
"achieved" column (``trainplay validate`` compares with measured runs).
"""

from __future__ import annotations

from rich.table import Table

from trainplay.report.units import format_duration, format_number, format_rate, time_scale
from trainplay.roofline.analysis import RooflineResult

__all__ = ["peak_text", "roofline_table", "summary_lines"]

_COLOURS = {"compute": "green", "memory": "yellow", "communication": "red", "overhead": "white"}

_UNITS = {"compute": "FLOP/s", "memory": "B/s", "communication": "B/s"}
"""The unit of a straggler's peak by its dimension (APF, APM, APB)."""


def peak_text(result: RooflineResult) -> str:
    """``APF 8.1 TFLOP/s, APM 320 GB/s, APB 1.25 GB/s (datasheet)``."""
    p = result.peaks
    apb = "-" if p["apb"] is None else format_rate(p["apb"], "B/s")
    return (
        f"APF {format_rate(p['apf'], 'FLOP/s')}, APM {format_rate(p['apm'], 'B/s')}, "
        f"APB {apb} ({result.peaks_origin})"
    )


def roofline_table(result: RooflineResult) -> Table:
    layout = ", ".join(
        f"{k}={v}" for k, v in result.parallel.items() if k in ("dp", "pp", "microbatches")
    )
    table = Table(
        title=(
            f"{result.model} · batch {result.batch_size} · {result.dtype} on {result.cluster} "
            f"({layout}) · {peak_text(result)}"
        ),
        header_style="bold",
        show_footer=True,
    )
    it = result.iteration
    scale, unit = time_scale(
        t
        for x in (*result.layers, it)
        for t in (x.t_compute_s, x.t_memory_s, x.t_comm_s, x.predicted_s)
    )

    def time(seconds: float) -> str:
        return format_number(seconds / scale)

    columns = [
        ("#", "", "right"),
        ("block", "iteration", "left"),
        ("stage", "", "right"),
        ("A\nFLOP/B", format_number(it.A), "right"),
        ("O", format_number(it.O, 2), "right"),
        ("C", format_number(it.C, 2), "right"),
        ("plane", it.plane, "left"),
        ("bound", it.bound, "left"),
        (f"compute\n{unit}", time(it.t_compute_s), "right"),
        (f"memory\n{unit}", time(it.t_memory_s), "right"),
        (f"comm\n{unit}", time(it.t_comm_s), "right"),
        (f"predicted\n{unit}", time(it.predicted_s), "right"),
    ]
    for header, footer, justify in columns:
        table.add_column(header, footer=footer, justify=justify)  # type: ignore[arg-type]
    for i, layer in enumerate(result.layers):
        colour = _COLOURS[layer.bound]
        table.add_row(
            str(i),
            layer.name,
            str(layer.stage),
            format_number(layer.A),
            format_number(layer.O, 2),
            format_number(layer.C, 2),
            layer.plane,
            f"[{colour}]{layer.bound}[/{colour}]",
            time(layer.t_compute_s),
            time(layer.t_memory_s),
            time(layer.t_comm_s),
            time(layer.predicted_s),
        )
    return table


def summary_lines(result: RooflineResult, heaviest: int = 5) -> list[str]:
    """The bottleneck summary in words, stragglers, what-if lines and notes."""
    it = result.iteration
    shares = ", ".join(
        f"{100 * v:.0f}% {k}"
        for k, v in sorted(it.bound_shares.items(), key=lambda kv: -kv[1])
        if v
    )
    top = sorted(result.layers, key=lambda x: -x.predicted_s)[:heaviest]
    heavy = "the heaviest block is" if len(top) == 1 else f"the {len(top)} heaviest blocks are"
    lines = [
        f"predicted iteration: {format_duration(it.predicted_s)} — {shares} of it; the iteration "
        f"as a whole is {it.bound}-bound (A = {format_number(it.A)} FLOP/B against a ridge of "
        f"{format_number(result.peaks['a_max'])}).",
        f"{heavy} "
        + ", ".join(f"{x.name} ({format_duration(x.predicted_s)}, {x.bound})" for x in top)
        + ".",
    ]
    if result.stragglers:
        for s in result.stragglers:
            unit = _UNITS.get(s.dimension, "")
            lines.append(
                f"straggler: rank {s.rank} ({s.device} on {s.node}) is slow in {s.dimension} "
                f"({format_rate(s.value, unit)} vs the median {format_rate(s.median, unit)}); it "
                f"slows the iteration {s.slowdown:.2f}x."
            )
    else:
        lines.append(
            "no straggler: no worker's peak lies far enough below the median to slow the job by 5%."
        )
    lines += [f"what if: {line}" for line in result.what_if]
    lines += [f"note: {line}" for line in result.notes]
    return lines
