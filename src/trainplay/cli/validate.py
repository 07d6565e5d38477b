"""``trainplay validate``: MD-Roofline's predictions against real training on this machine."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from trainplay.cli import positive_int, process_count
from trainplay.report.units import format_number, plural, time_scale

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    v = commands.add_parser(
        "validate",
        help="run real training iterations here and compare them with MD-Roofline's prediction",
        description=(
            "Train MODEL for a few real iterations on this machine's CPU (one process, or data parallel "
            "over gloo with --nproc K), time them and each block (profiler trace), and compare with "
            "MD-Roofline's prediction from this machine's performance profile measured with as many "
            "processes (the cost model analyze, plan and train use)."
        ),
    )
    v.add_argument("model", help="torchvision classifier, decoder preset, or pkg.module:factory")
    v.add_argument(
        "--batch", type=positive_int, required=True, help="samples per process per iteration"
    )
    v.add_argument(
        "--nproc", type=process_count, default=1, help="data-parallel processes (default 1)"
    )
    v.add_argument(
        "--input-shape", metavar="C,H,W", help="shape of one sample (default: reference size)"
    )
    v.add_argument("--seq-len", type=positive_int, help="tokens per sample for decoder presets")
    v.add_argument(
        "--iters", type=positive_int, default=5, help="timed iterations after warm-up (default 5)"
    )
    v.add_argument("--format", choices=("table", "json"), default="table")
    v.set_defaults(run=_validate)


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _validate(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.roofline.validate import validate
    from trainplay.workload import parse_shape

    shape = parse_shape(args.input_shape) if args.input_shape else None
    result = validate(
        args.model,
        args.batch,
        nproc=args.nproc,
        input_shape=shape,
        seq_len=args.seq_len,
        iters=args.iters,
        show_progress=err.is_terminal,
    )
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    table = Table(
        title=f"{result.model} · batch {result.batch_size} per process · "
        f"{plural(result.nproc, 'process', 'processes')} × {plural(result.threads, 'thread')}",
        header_style="bold",
    )
    scale, unit = time_scale(
        [
            *(t for b in result.blocks for t in (b.measured_s, b.predicted_s) if t),
            result.measured_s,
            result.predicted_s,
        ]
    )

    def time(seconds: float | None) -> str:
        return "-" if seconds is None else format_number(seconds / scale)

    for header in ("block", f"measured {unit}", f"predicted {unit}", "error", "bound"):
        table.add_column(header, justify="left" if header in ("block", "bound") else "right")
    for b in result.blocks:
        error = "-" if not b.measured_s else _pct((b.predicted_s - b.measured_s) / b.measured_s)
        table.add_row(b.name, time(b.measured_s), time(b.predicted_s), error, b.bound)
    table.add_section()
    table.add_row(
        "iteration",
        time(result.measured_s),
        time(result.predicted_s),
        _pct(result.error),
        "",
    )
    out.print(table)
    out.print(
        "blocks: forward + backward in profiled iterations (profiler overhead included); iteration: "
        "median wall time of the timed iterations, optimizer step and all-reduce included.",
        highlight=False,
    )
    told = [p for p in result.placements if p is not None]
    if told:
        counts = ", ".join(f"{p} {told.count(p)}" for p in sorted(set(told)))
        which = (
            f"measured over the {result.placement} ones, priced with the profile measured so"
            if result.placement
            else "measured over all of them, priced with the one profile"
        )
        out.print(
            f"the CPUs' placement around each timed iteration (trainplay.hardware.placement): "
            f"{counts}; {which}.",
            highlight=False,
        )
    return 0
