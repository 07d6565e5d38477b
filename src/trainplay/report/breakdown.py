"""The time per block as a figure: compute, memory, fixed per-operator cost, exposed communication.

A block's predicted time is split as the cost model splits it (:mod:`trainplay.roofline.cost`):
the time of its operators whose larger part is compute, of those whose larger part is memory
traffic, the fixed per-operator cost not hidden behind kernels, and the exposed communication the
analysis charged to it. The parts add up to the block's predicted time, as ``bound_shares`` counts
them.
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from trainplay.report.figures import (
    BOUND_COLOURS,
    device_and_exposed_s,
    figure_title,
    inline_svg,
    svg_text,
    time_share,
)
from trainplay.roofline.analysis import RooflineResult

__all__ = ["breakdown_figure", "breakdown_svg"]


def breakdown_figure(result: RooflineResult, *, footnote: bool = True) -> Figure:
    """Per block, in execution order: compute, memory, fixed cost and exposed communication;
    ``footnote`` adds the time outside the blocks and how the parts are derived."""
    layers = result.layers
    n = len(layers)
    width, height = 11.0, (2.1 if footnote else 1.7) + 0.3 * n
    fig = Figure(figsize=(width, height), dpi=100)
    renderer = FigureCanvasAgg(fig).get_renderer()
    ax = fig.add_subplot()
    rows = np.arange(n)
    compute = np.array([x.t_compute_s * 1e3 for x in layers])
    memory = np.array([x.t_memory_s * 1e3 for x in layers])
    fixed = np.array([x.overhead_s * 1e3 for x in layers])
    exposed = np.array([device_and_exposed_s(x)[1] * 1e3 for x in layers])
    bar = {"height": 0.7, "edgecolor": "white", "linewidth": 0.5}
    left = np.zeros(n)
    for values, bound, label in (
        (compute, "compute", "compute (operators whose compute time is the larger)"),
        (memory, "memory", "memory (operators whose memory time is the larger)"),
        (fixed, "overhead", "fixed cost per operator (dispatch, launch)"),
        (exposed, "communication", "exposed communication"),
    ):
        hatch = "///" if bound == "communication" else None
        ax.barh(
            rows, values, left=left, color=BOUND_COLOURS[bound], hatch=hatch, label=label, **bar
        )
        left = left + values
    totals = compute + memory + fixed + exposed
    longest = float(totals.max()) if n else 1.0
    for i, layer in enumerate(layers):
        ax.text(
            totals[i] + longest * 0.01,
            i,
            f"{totals[i]:.3g} ms · {time_share(layer, result):.1%} · {layer.bound}",
            va="center",
            fontsize=8,
            color="0.25",
            parse_math=False,
        )
    pipeline = result.parallel.get("pp", 1) > 1
    names = [f"{x.name}  [stage {x.stage}]" if pipeline else x.name for x in layers]
    ax.set_yticks(rows, names, fontsize=8.5)
    for label in ax.get_yticklabels():
        label.set_parse_math(False)
    for i in range(1, n):
        if layers[i].stage != layers[i - 1].stage:
            ax.axhline(i - 0.5, color="0.4", lw=0.8, ls=(0, (4, 3)))
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(0, longest * 1.28)
    ax.set_xlabel("predicted time per iteration (ms)", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(True, axis="x", color="0.88", lw=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    it = result.iteration
    outside = f"optimizer step {it.optimizer_s * 1e3:.3g} ms"
    if pipeline:
        outside += f", pipeline bubble {it.bubble_s * 1e3:.3g} ms"
    label_px = max((t.get_window_extent(renderer).width for t in ax.get_yticklabels()), default=0)
    left = (label_px / fig.dpi + 0.25) / width
    bottom = (1.05 if footnote else 0.6) / height
    fig.subplots_adjust(left=left, right=0.98, top=1 - 0.95 / height, bottom=bottom)
    fig.text(
        0.01,
        1 - 0.12 / height,
        figure_title(result, "Time per block"),
        fontsize=11,
        va="top",
        parse_math=False,
    )
    fig.legend(
        loc="upper left",
        bbox_to_anchor=(0.005, 1 - 0.42 / height),
        ncol=3,
        frameon=False,
        fontsize=8.5,
    )
    if footnote:
        fig.text(
            0.01,
            0.08 / height,
            f"Outside the blocks: {outside}; predicted iteration {it.predicted_s * 1e3:.4g} ms "
            f"({it.exposed_comm_s * 1e3:.3g} ms of it exposed communication).\nDevice time = "
            "forward and backward at their rooflines, coloured by the larger of compute and memory; "
            "hatched: communication not hidden behind computation.",
            fontsize=8,
            color="0.3",
            va="bottom",
            parse_math=False,
        )
    return fig


def breakdown_svg(result: RooflineResult) -> str:
    """The time breakdown as SVG text for embedding in HTML (no footnote: the caption says it)."""
    figure = breakdown_figure(result, footnote=False)
    return inline_svg(svg_text(figure, "breakdown"), "predicted time per block")
