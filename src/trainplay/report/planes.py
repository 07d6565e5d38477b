"""MD-Roofline's three planes as a figure, one point per block, from a ``RooflineResult``.

What a point means, stated once (the captions say it again):

- **intra-device plane**: every block, at ``(A, F / t)`` with ``t`` its predicted time (its
  operators at their classes' achieved rates, plus the block's exposed communication): the
  result's ``achieved_flops``. The dotted lines are the operator classes' own roofs (a compute
  class's best FLOP/s, a memory class's streaming bytes/s times ``A``): a block sits between
  MD-Roofline's roof and the roofs of the classes it is made of.
- **communication planes**: each block that communicates (``P > 0``), on the plane it is judged on
  (its ``plane``), at ``(O, P / t_roof)`` or ``(C, P / t_roof)`` with
  ``t_roof = max(t_compute, t_memory, t_comm)``, its time with the three dimensions overlapped. Its
  predicted time is no measure of its communication: data parallelism reduces a block's gradients
  in a bucket while earlier blocks still compute, so ``P / predicted`` can exceed the link. These
  points lie on the roof; which side of the ridge they lie on names the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from trainplay.report.figures import (
    BOUND_COLOURS,
    BOUND_MARKERS,
    figure_title,
    format_rate,
    inline_svg,
    svg_text,
    time_share,
)
from trainplay.report.units import SI
from trainplay.roofline.analysis import RooflineResult

__all__ = ["planes_figure", "planes_svg"]

LABELLED = 5
"""How many of the heaviest blocks each plane names."""


def _area(share: float) -> float:
    """Marker area (points²) for a share of the iteration."""
    return 24.0 + 2200.0 * share


def _tick(unit: str) -> FuncFormatter:
    def fmt(value: float, _pos: int) -> str:
        if value <= 0:
            return ""
        for scale, prefix in SI:
            if value >= scale:
                return f"{value / scale:g}{prefix}{unit}"
        return f"{value:g}{unit}"

    return FuncFormatter(fmt)


# ----------------------------------------------------------------------------- one plane


@dataclass(frozen=True)
class _Plane:
    key: str
    title: str
    x_name: str
    x_label: str
    y_label: str
    y_unit: str
    ridge_unit: str
    left_bound: str
    """The bound left of the ridge, under the sloped roof."""
    right_bound: str


_PLANES = (
    _Plane(
        "intra-device",
        "intra-device",
        "A",
        "A = F / M   (FLOP per memory byte)",
        "achieved FLOP/s   (F / predicted time)",
        "",
        "FLOP/B",
        "memory",
        "compute",
    ),
    _Plane(
        "comm-to-memory",
        "communication to memory",
        "O",
        "O = P / M   (communicated byte per memory byte)",
        "comm. bytes/s   (P / roofline time)",
        "B/s",
        "B/B",
        "memory",
        "communication",
    ),
    _Plane(
        "comm-to-flops",
        "communication to FLOPs",
        "C",
        "C = P / F   (communicated byte per FLOP)",
        "comm. bytes/s   (P / roofline time)",
        "B/s",
        "B/FLOP",
        "compute",
        "communication",
    ),
)


@dataclass(frozen=True)
class _Roof:
    slope: float
    """The peak that multiplies the x ratio under the sloped part."""
    flat: float
    ridge: float
    formula: str
    values: str


@dataclass(frozen=True)
class _Dot:
    x: float
    y: float
    share: float
    bound: str
    name: str


def _roof_of(plane: _Plane, result: RooflineResult) -> _Roof | None:
    """The roof of a plane and its description; None for the communication planes without APB."""
    p = result.peaks
    apf, apm = format_rate(p["apf"], "FLOP/s"), format_rate(p["apm"], "B/s")
    if plane.key == "intra-device":
        ridge = f"A_max = APF/APM = {_plain(p['a_max'])} FLOP/B"
        return _Roof(
            p["apm"],
            p["apf"],
            p["a_max"],
            f"roof min(APF, APM·A) · {ridge}",
            f"APF {apf} · APM {apm}",
        )
    if p["apb"] is None:
        return None
    apb = format_rate(p["apb"], "B/s")
    if plane.key == "comm-to-memory":
        ridge = f"O_max = APB/APM = {_plain(p['o_max'])}"
        return _Roof(
            p["apm"],
            p["apb"],
            p["o_max"],
            f"roof min(APB, APM·O) · {ridge}",
            f"APB {apb} · APM {apm}",
        )
    ridge = f"C_max = APB/APF = {_plain(p['c_max'])} B/FLOP"
    return _Roof(
        p["apf"], p["apb"], p["c_max"], f"roof min(APB, APF·C) · {ridge}", f"APB {apb} · APF {apf}"
    )


def _plain(value: float) -> str:
    return f"{value:.3g}"


def _roof_s(flops: float, mem_bytes: float, t_comm_s: float, result: RooflineResult) -> float:
    """The time at MD-Roofline's roofs, ``max(F/APF, M/APM, P/APB)``: where a point sits on a
    communication plane (its achieved communication rate if only the roofs bound it)."""
    p = result.peaks
    return max(flops / p["apf"], mem_bytes / p["apm"], t_comm_s)


def _dots(plane: _Plane, result: RooflineResult) -> tuple[list[_Dot], int]:
    """The blocks this plane shows, and how many of them cannot be drawn on log axes."""
    dots, undrawable = [], 0
    for layer in result.layers:
        if plane.key == "intra-device":
            x, y = layer.A, layer.achieved_flops
        elif layer.plane == plane.key and layer.comm_bytes:
            t_roof = _roof_s(layer.flops, layer.mem_bytes, layer.t_comm_s, result)
            x = layer.O if plane.key == "comm-to-memory" else layer.C
            y = layer.comm_bytes / t_roof if t_roof else 0.0
        else:
            continue
        if not (0 < x < math.inf and 0 < y < math.inf):
            undrawable += 1
            continue
        dots.append(_Dot(x, y, time_share(layer, result), layer.bound, layer.name))
    return dots, undrawable


def _iteration_dot(plane: _Plane, result: RooflineResult) -> tuple[float, float] | None:
    it = result.iteration
    if plane.key == "intra-device":
        x, y = it.A, (it.flops / it.predicted_s if it.predicted_s else 0.0)
    elif it.plane == plane.key:
        t_roof = _roof_s(it.flops, it.mem_bytes, it.t_comm_s, result)
        x = it.O if plane.key == "comm-to-memory" else it.C
        y = it.comm_bytes / t_roof if t_roof else 0.0
    else:
        return None
    return (x, y) if 0 < x < math.inf and 0 < y < math.inf else None


def _class_roofs(ax, result: RooflineResult, grid) -> None:
    """Each operator class's own roof under MD-Roofline's: a compute class at its best FLOP/s
    (flat), a memory class at its streaming bytes/s (sloped, bytes/s x A); thin, dotted, each
    labelled at its own place along the axis so that labels of close roofs do not overlap."""
    apf = result.peaks["apf"]
    roofs = sorted(result.class_roofs.items(), key=lambda kv: -float(kv[1]["rate"]))
    for k, (cls, roof) in enumerate(roofs):
        rate = float(roof["rate"])
        y = np.full_like(grid, rate) if roof["unit"] == "FLOP/s" else rate * grid
        y = np.minimum(y, apf)
        ax.plot(grid, y, color="0.55", lw=0.8, ls=(0, (2, 2)), zorder=1)
        if roof["unit"] == "FLOP/s":  # flat: staggered along the axis
            x_text, y_text = grid[int(len(grid) * (0.04 + 0.11 * (k % 8)))], min(rate, apf)
        else:  # sloped: where it crosses a level of its own below the flat roofs
            y_text = apf / (3 * 1.7 ** (k % 6))
            x_text = y_text / rate
        if grid[0] <= x_text <= grid[-1]:
            ax.text(x_text, y_text * 1.04, cls, fontsize=6, color="0.45", va="bottom", zorder=1)


def _decade_below(value: float) -> float:
    return 10 ** math.floor(math.log10(value))


def _decade_above(value: float) -> float:
    return 10 ** math.ceil(math.log10(value))


def _draw_plane(ax, plane: _Plane, result: RooflineResult, renderer) -> None:
    ax.set_title(plane.title, fontsize=11.5, fontweight="bold", loc="left", pad=32)
    roof = _roof_of(plane, result)
    if roof is None:
        _empty(ax, "no communication\n\none worker: P = 0, so only\nthe intra-device plane applies")
        return
    ax.text(
        0,
        1.015,
        f"{roof.formula}\n{roof.values}",
        transform=ax.transAxes,
        fontsize=8.5,
        color="0.25",
        va="bottom",
        parse_math=False,
    )
    dots, undrawable = _dots(plane, result)
    whole = _iteration_dot(plane, result)
    xs = [roof.ridge] + [d.x for d in dots] + ([whole[0]] if whole else [])
    x_lo, x_hi = _decade_below(min(xs) / 6), _decade_above(max(xs) * 6)
    ys = [d.y for d in dots] + ([whole[1]] if whole else [])
    y_lo = max(min([*ys, roof.flat / 20]) / 3, roof.flat / 1e6)
    y_hi = roof.flat * 10
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.axvspan(x_lo, roof.ridge, color=BOUND_COLOURS[plane.left_bound], alpha=0.08, lw=0)
    ax.axvspan(roof.ridge, x_hi, color=BOUND_COLOURS[plane.right_bound], alpha=0.08, lw=0)
    grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 400)
    ax.plot(grid, np.minimum(roof.flat, roof.slope * grid), color="0.1", lw=2.0, zorder=2)
    if plane.key == "intra-device":
        _class_roofs(ax, result, grid)
    ax.axvline(roof.ridge, color="0.25", lw=1.0, ls=(0, (4, 3)), zorder=2)
    fixed = []
    for side, x_text, ha in (
        (plane.left_bound, x_lo * 1.3, "left"),
        (plane.right_bound, x_hi / 1.3, "right"),
    ):
        fixed.append(
            ax.text(
                x_text,
                y_hi / 1.35,
                f"{side}-bound",
                fontsize=8.5,
                color=BOUND_COLOURS[side],
                fontweight="bold",
                ha=ha,
                va="top",
            )
        )
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(_tick(plane.y_unit))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(plane.x_label, fontsize=9.5)
    ax.set_ylabel(plane.y_label, fontsize=9.5)
    ax.tick_params(labelsize=8.5)
    ax.grid(True, which="major", color="0.85", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    for bound in BOUND_COLOURS:
        mine = [d for d in dots if d.bound == bound]
        if mine:
            ax.scatter(
                [d.x for d in mine],
                [d.y for d in mine],
                s=[_area(d.share) for d in mine],
                c=BOUND_COLOURS[bound],
                marker=BOUND_MARKERS[bound],
                edgecolors="0.15",
                linewidths=0.6,
                alpha=0.85,
                zorder=4,
            )
    if whole:
        ax.scatter(
            *whole, s=220, marker="*", c="white", edgecolors="0.05", linewidths=1.2, zorder=5
        )
    if not dots:
        side = "A ≥ A_max" if plane.key == "comm-to-memory" else "A < A_max"
        _empty(ax, f"no block is judged on this plane\n(every block that communicates has {side})")
    elif undrawable:
        fixed.append(
            ax.text(
                0.02,
                0.02,
                f"{undrawable} block(s) off the log axes (a zero or infinite ratio)",
                transform=ax.transAxes,
                fontsize=7,
                color="0.3",
            )
        )
    boxes = [_rect(t.get_window_extent(renderer)) for t in fixed]
    points = _point_boxes(ax, dots, whole)
    ridge_spots = (
        (roof.ridge * 1.08, roof.flat * 1.5, "left", "bottom"),
        (roof.ridge / 1.08, roof.flat * 1.5, "right", "bottom"),
        (roof.ridge * 1.08, y_lo * 1.3, "left", "bottom"),
        (roof.ridge / 1.08, y_lo * 1.3, "right", "bottom"),
    )
    for x, y, ha, va in ridge_spots:
        text = ax.text(
            x, y, f"{plane.x_name}_max", fontsize=8.5, color="0.2", ha=ha, va=va, parse_math=False
        )
        rect = _rect(text.get_window_extent(renderer))
        if not any(_overlap(rect, other) for other in boxes + points):
            break
        text.remove()
    else:
        text = ax.text(
            *ridge_spots[0][:2],
            f"{plane.x_name}_max",
            fontsize=8.5,
            color="0.2",
            va="bottom",
            parse_math=False,
        )
        rect = _rect(text.get_window_extent(renderer))
    _label_heaviest(ax, dots, whole, [*boxes, rect], points, renderer)


def _rect(box) -> tuple[float, float, float, float]:
    return (box.x0, box.y0, box.x1, box.y1)


def _empty(ax, message: str) -> None:
    ax.text(
        0.5,
        0.5,
        message,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=10,
        color="0.3",
        bbox={"boxstyle": "round,pad=0.6", "fc": "white", "ec": "0.7"},
        zorder=6,
    )
    if not ax.has_data():
        ax.set_xticks([])
        ax.set_yticks([])


_OFFSETS = (
    (10, 10),
    (10, -12),
    (-10, 10),
    (-10, -12),
    (14, 24),
    (14, -26),
    (-14, 24),
    (-14, -26),
    (18, 38),
    (18, -40),
    (-18, 38),
    (-18, -40),
    (26, 0),
    (-26, 0),
)
"""Where a block's name may go, in points from its marker, in the order tried."""


def _point_boxes(ax, dots: list[_Dot], whole) -> list[tuple[float, float, float, float]]:
    """Display-space boxes around every marker."""
    scale = ax.figure.dpi / 72.0
    boxes = []
    for d in dots:
        cx, cy = ax.transData.transform((d.x, d.y))
        r = math.sqrt(_area(d.share)) / 2 * scale
        boxes.append((cx - r, cy - r, cx + r, cy + r))
    if whole:
        cx, cy = ax.transData.transform(whole)
        boxes.append((cx - 8 * scale, cy - 8 * scale, cx + 8 * scale, cy + 8 * scale))
    return boxes


def _groups(dots: list[_Dot]) -> list[tuple[float, float, str]]:
    """Blocks on (nearly) the same spot named once, ``layers.0 and 11 alike``; the heaviest
    groups first, at most ``LABELLED``."""
    groups: list[list[_Dot]] = []
    for d in dots:
        for group in groups:
            head = group[0]
            if abs(math.log10(d.x / head.x)) < 0.01 and abs(math.log10(d.y / head.y)) < 0.01:
                group.append(d)
                break
        else:
            groups.append([d])
    groups.sort(key=lambda g: -sum(d.share for d in g))
    named = []
    for group in groups[:LABELLED]:
        name = group[0].name if len(group) == 1 else f"{group[0].name} and {len(group) - 1} alike"
        named.append((group[0].x, group[0].y, name))
    return named


def _label_heaviest(ax, dots: list[_Dot], whole, fixed: list, points: list, renderer) -> None:
    """Name the heaviest blocks (and the iteration), each at the first offset whose label stays
    in the axes and clear of the other labels, the fixed texts and the points; failing that, at
    the offset that satisfies most of these, in that order of importance."""
    named = _groups(dots)
    if whole:
        named.insert(0, (*whole, "whole iteration"))
    frame = _rect(ax.get_window_extent(renderer))
    taken = list(fixed)
    for x, y, name in named:
        best = None
        for dx, dy in _OFFSETS:
            ann = ax.annotate(
                name,
                (x, y),
                xytext=(dx, dy),
                textcoords="offset points",
                ha="left" if dx >= 0 else "right",
                va="center",
                fontsize=8.5,
                parse_math=False,
                zorder=7,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
                arrowprops={
                    "arrowstyle": "-",
                    "lw": 0.6,
                    "color": "0.35",
                    "shrinkA": 0,
                    "shrinkB": 3,
                },
            )
            ann.update_positions(renderer)
            rect = _rect(Text.get_window_extent(ann, renderer).expanded(1.08, 1.3))
            inside = (
                frame[0] <= rect[0]
                and rect[2] <= frame[2]
                and frame[1] <= rect[1]
                and rect[3] <= frame[3]
            )
            score = (
                inside,
                not any(_overlap(rect, other) for other in taken),
                not any(_overlap(rect, other) for other in points),
            )
            if best is None or score > best[0]:
                if best is not None:
                    best[1].remove()
                best = (score, ann, rect)
            else:
                ann.remove()
            if all(score):
                break
        if best is not None:
            taken.append(best[2])


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def planes_figure(result: RooflineResult, *, footnote: bool = True) -> Figure:
    """The three MD-Roofline planes side by side, one point per block, with a shared legend;
    ``footnote`` adds a line saying what the points are (captions in HTML say it instead)."""
    height = 5.6 if footnote else 5.3
    fig = Figure(figsize=(14, height), dpi=100)
    canvas = FigureCanvasAgg(fig)
    bottom = (1.4 if footnote else 1.15) / height
    fig.subplots_adjust(left=0.065, right=0.99, top=1 - 1.15 / height, bottom=bottom, wspace=0.27)
    axes = fig.subplots(1, 3)
    fig.suptitle(figure_title(result, "MD-Roofline planes"), fontsize=12, x=0.06, ha="left")
    renderer = canvas.get_renderer()
    for ax, plane in zip(axes, _PLANES, strict=True):
        _draw_plane(ax, plane, result, renderer)
    handles = [
        Line2D(
            [],
            [],
            ls="",
            marker=BOUND_MARKERS[b],
            ms=9,
            mfc=BOUND_COLOURS[b],
            mec="0.15",
            label=f"{b}-bound",
        )
        for b in BOUND_COLOURS
    ]
    handles.append(
        Line2D([], [], ls="", marker="*", ms=14, mfc="white", mec="0.05", label="whole iteration")
    )
    for share in (0.01, 0.1):
        handles.append(
            Line2D(
                [],
                [],
                ls="",
                marker="o",
                ms=math.sqrt(_area(share)),
                mfc="0.8",
                mec="0.4",
                label=f"{share:.0%} of iteration time",
            )
        )
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=6,
        frameon=False,
        fontsize=9,
        bbox_to_anchor=(0.5, (0.3 if footnote else 0.0) / height),
    )
    if footnote:
        fig.text(
            0.5,
            0.012,
            "One point per block, coloured by its bound, area ∝ its share of the predicted "
            "iteration time. Intra-device: y = F / predicted block time (below the roof: exposed "
            "communication).\nCommunication planes: the blocks that communicate, each on the plane "
            "it is judged on; y = P / max(t_compute, t_memory, t_comm), so they sit on the roof.",
            ha="center",
            fontsize=8,
            color="0.3",
            parse_math=False,
        )
    return fig


def planes_svg(result: RooflineResult) -> str:
    """The planes as SVG text for embedding in HTML (no footnote: the caption says it)."""
    figure = planes_figure(result, footnote=False)
    return inline_svg(svg_text(figure, "planes"), "MD-Roofline planes, one point per block")
