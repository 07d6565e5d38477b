"""What the MD-Roofline charts share: colours and markers per bound, labels, SVG text, files.

Colours are Okabe and Ito's colour-blind-safe palette ("Color Universal Design", 2008); each bound
also has its own marker shape, so the planes read without colour too. Figures are built on
:class:`matplotlib.figure.Figure` directly, without pyplot: nothing is displayed and no
process-wide backend is switched. PNG goes through Agg, SVG through matplotlib's SVG writer with
text drawn as paths (no fonts needed to view it).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from trainplay.report.units import SI
from trainplay.roofline.analysis import LayerResult, RooflineResult

__all__ = [
    "BOUND_COLOURS",
    "BOUND_MARKERS",
    "device_and_exposed_s",
    "figure_title",
    "format_rate",
    "inline_svg",
    "layout_text",
    "save_figures",
    "svg_text",
    "time_share",
]

BOUND_COLOURS = {
    "compute": "#0072B2",
    "memory": "#E69F00",
    "communication": "#CC79A7",
    "overhead": "#999999",
}
"""Okabe-Ito blue, orange and reddish purple."""
BOUND_MARKERS = {"compute": "o", "memory": "s", "communication": "^", "overhead": "D"}


def format_rate(value: float | None, unit: str) -> str:
    """``1.57e13, "FLOP/s"`` -> ``15.7 TFLOP/s`` (decimal prefixes, as datasheets give rates)."""
    if value is None:
        return "–"
    for scale, prefix in SI:
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def layout_text(result: RooflineResult) -> str:
    """``dp=2 · pp=3 · 3 micro-batches`` (micro-batches only with a pipeline)."""
    p = result.parallel
    text = f"dp={p.get('dp', 1)} · pp={p.get('pp', 1)}"
    if p.get("pp", 1) > 1:
        text += f" · {p.get('microbatches')} micro-batches"
    return text


def figure_title(result: RooflineResult, what: str) -> str:
    return (
        f"{what} — {result.model}, batch {result.batch_size}, {result.dtype}, on {result.cluster} "
        f"({layout_text(result)})"
    )


def device_and_exposed_s(layer: LayerResult) -> tuple[float, float]:
    """A block's device time and its exposed communication (both from the analysis)."""
    return layer.predicted_s - layer.exposed_comm_s, layer.exposed_comm_s


def time_share(layer: LayerResult, result: RooflineResult) -> float:
    total = result.iteration.predicted_s
    return layer.predicted_s / total if total else 0.0


_PROLOG = re.compile(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->|<metadata>.*?</metadata>", re.S)
_NAMESPACES = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')


def svg_text(fig: Figure, salt: str) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def inline_svg(svg: str, label: str) -> str:
    """SVG text fit to sit inside HTML: no prolog, DOCTYPE, comments, metadata or namespace URIs
    (HTML's parser knows SVG and xlink without them), labelled for screen readers."""
    body = _NAMESPACES.sub("", _PROLOG.sub("", svg)).strip()
    return body.replace("<svg", f'<svg role="img" aria-label="{label}"', 1)


def save_figures(result: RooflineResult, directory: str | Path) -> list[Path]:
    """Write ``planes.png``, ``planes.svg``, ``breakdown.png``, ``breakdown.svg``; return the paths."""
    from trainplay.report.breakdown import breakdown_figure
    from trainplay.report.planes import planes_figure

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, build in (("planes", planes_figure), ("breakdown", breakdown_figure)):
        fig = build(result)
        png = directory / f"{stem}.png"
        fig.savefig(png, format="png", dpi=130)
        svg = directory / f"{stem}.svg"
        svg.write_text(svg_text(fig, stem))
        written += [png, svg]
    return written
