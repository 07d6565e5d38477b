"""Terminal output of ``trainplay analyze``: the per-block table and the summary in words."""

from __future__ import annotations

from rich.table import Table

from trainplay.roofline.analysis import RooflineResult

__all__ = ["roofline_table", "summary_lines"]

_COLOURS = {"compute": "green", "memory": "yellow", "communication": "red", "overhead": "white"}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}"


def roofline_table(result: RooflineResult) -> Table:
    p = result.peaks
    apb = "-" if p["apb"] is None else f"{p['apb'] / 1e9:.4g} GB/s"
    table = Table(
        title=(
            f"{result.model} · batch {result.batch_size} · {result.dtype} on {result.cluster} "
            f"({', '.join(f'{k}={v}' for k, v in result.parallel.items() if k in ('dp', 'pp', 'microbatches'))}) · "
            f"APF {p['apf'] / 1e12:.4g} TFLOP/s, APM {p['apm'] / 1e9:.4g} GB/s, APB {apb} ({result.peaks_origin})"
        ),
        header_style="bold",
        show_footer=True,
    )
    it = result.iteration
    columns = [
        ("#", "", "right"),
        ("block", "iteration", "left"),
        ("stage", "", "right"),
        ("A\nFLOP/B", f"{it.A:.3g}", "right"),
        ("O", f"{it.O:.2g}", "right"),
        ("C", f"{it.C:.2g}", "right"),
        ("plane", it.plane, "left"),
        ("bound", it.bound, "left"),
        ("compute\nms", _ms(it.t_compute_s), "right"),
        ("memory\nms", _ms(it.t_memory_s), "right"),
        ("comm\nms", _ms(it.t_comm_s), "right"),
        ("predicted\nms", _ms(it.predicted_s), "right"),
        ("achieved\n% of roof", "", "right"),
    ]
    for header, footer, justify in columns:
        table.add_column(header, footer=footer, justify=justify)  # type: ignore[arg-type]
    for i, layer in enumerate(result.layers):
        colour = _COLOURS[layer.bound]
        share = 100 * layer.achieved_flops / layer.roof_flops if layer.roof_flops else 0.0
        table.add_row(
            str(i),
            layer.name,
            str(layer.stage),
            f"{layer.A:.3g}",
            f"{layer.O:.2g}",
            f"{layer.C:.2g}",
            layer.plane,
            f"[{colour}]{layer.bound}[/{colour}]",
            _ms(layer.t_compute_s),
            _ms(layer.t_memory_s),
            _ms(layer.t_comm_s),
            _ms(layer.predicted_s),
            f"{share:.0f}",
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
    lines = [
        f"predicted iteration: {it.predicted_s * 1e3:.4g} ms — {shares} of it; the iteration as a whole is "
        f"{it.bound}-bound (A = {it.A:.3g} FLOP/B against a ridge of {result.peaks['a_max']:.3g}).",
        f"the {len(top)} heaviest blocks are "
        + ", ".join(f"{x.name} ({x.predicted_s * 1e3:.3g} ms, {x.bound})" for x in top)
        + ".",
    ]
    if result.stragglers:
        for s in result.stragglers:
            lines.append(
                f"straggler: rank {s.rank} ({s.device} on {s.node}) is slow in {s.dimension} "
                f"({s.value:.4g} vs the median {s.median:.4g}); it slows the iteration {s.slowdown:.2f}x."
            )
    else:
        lines.append(
            "no straggler: no worker's peak lies far enough below the median to slow the job by 5%."
        )
    lines += [f"what if: {line}" for line in result.what_if]
    lines += [f"note: {line}" for line in result.notes]
    return lines
