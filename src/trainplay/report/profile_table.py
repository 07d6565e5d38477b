"""The terminal table of a :class:`~trainplay.workload.WorkloadProfile`."""

from __future__ import annotations

from rich.table import Table

from trainplay.report.units import column_scale, format_number
from trainplay.workload.stats import WorkloadProfile

__all__ = ["profile_table"]

# (field, header, unit, binary prefixes?, group): columns of one group share one unit
_COLUMNS = (
    ("fwd_flops", "fwd", "FLOP", False, "flops"),
    ("bwd_flops", "bwd", "FLOP", False, "flops"),
    ("fwd_bytes", "fwd", "B", True, "traffic"),
    ("bwd_bytes", "bwd", "B", True, "traffic"),
    ("params", "params", "", False, "params"),
    ("activation_bytes", "act. out", "B", True, "sizes"),
    ("saved_bytes", "saved", "B", True, "sizes"),
)


def profile_table(profile: WorkloadProfile, top: int | None = None) -> Table:
    """Rows in execution order, a totals footer, and each row's share of FLOPs and bytes.

    Each numeric column has one unit, chosen by its largest value and shown in its header;
    forward and backward FLOPs share one, as do forward and backward bytes, and the two sizes.
    ``top`` keeps only the rows with the most FLOPs (still in execution order); the totals stay
    those of the whole iteration. ``act. out`` is what crosses a pipeline cut after the row.
    """
    totals = profile.totals
    shape = "×".join(str(s) for s in profile.input_shape)
    table = Table(
        title=(
            f"{profile.model} · batch {profile.batch_size} · {profile.dtype} · input {shape} · "
            f"{len(profile.layers)} {profile.granularity} · counted on {profile.device}"
        ),
        caption="\n".join(profile.notes) or None,
        show_footer=True,
        header_style="bold",
    )
    label = {"blocks": "block", "modules": "module", "ops": "module:op"}[profile.granularity]
    table.add_column("#", justify="right")
    table.add_column(label, footer="total", no_wrap=True)
    table.add_column("kind", overflow="ellipsis", max_width=24, no_wrap=True)
    group_scale = {
        group: column_scale(
            (getattr(layer, k) for k, *_, g in _COLUMNS if g == group for layer in profile.layers),
            binary,
        )
        for _, _, _, binary, group in _COLUMNS
    }
    scales = []
    for key, header, unit, _, group in _COLUMNS:
        scale, prefix = group_scale[group]
        scales.append(scale)
        footer = "" if key == "activation_bytes" else format_number(totals[key] / scale)
        table.add_column(f"{header}\n{prefix}{unit}", footer=footer, justify="right")
    table.add_column("%\nFLOPs", footer="100", justify="right")
    table.add_column("%\nbytes", footer="100", justify="right")
    all_flops = totals["fwd_flops"] + totals["bwd_flops"] or 1
    all_bytes = totals["fwd_bytes"] + totals["bwd_bytes"] or 1
    indices = list(range(len(profile.layers)))
    if top is not None and top < len(indices):
        indices = sorted(sorted(indices, key=lambda i: -profile.layers[i].flops)[:top])
    for i in indices:
        layer = profile.layers[i]
        numbers = [
            format_number(getattr(layer, key) / s)
            for (key, *_), s in zip(_COLUMNS, scales, strict=True)
        ]
        table.add_row(
            str(i),
            layer.name,
            layer.kind,
            *numbers,
            f"{100 * layer.flops / all_flops:.1f}",
            f"{100 * layer.bytes / all_bytes:.1f}",
        )
    if len(indices) < len(profile.layers):
        table.add_row("", f"… {len(profile.layers) - len(indices)} lighter rows", *[""] * 10)
    return table
