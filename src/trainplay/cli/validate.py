"""``trainplay validate``: MD-Roofline's predictions against real training on this machine."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from trainplay.cli import positive_int

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
        "--nproc", type=positive_int, default=1, help="data-parallel processes (default 1)"
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
        title=f"{result.model} · batch {result.batch_size} per process · {result.nproc} process(es) × "
        f"{result.threads} thread(s)",
        header_style="bold",
    )
    for header in ("block", "measured ms", "predicted ms", "error", "bound"):
        table.add_column(header, justify="left" if header in ("block", "bound") else "right")
    for b in result.blocks:
        measured = "-" if b.measured_s is None else f"{b.measured_s * 1e3:.1f}"
        error = "-" if not b.measured_s else _pct((b.predicted_s - b.measured_s) / b.measured_s)
        table.add_row(b.name, measured, f"{b.predicted_s * 1e3:.1f}", error, b.bound)
    table.add_section()
    table.add_row(
        "iteration",
        f"{result.measured_s * 1e3:.1f}",
        f"{result.predicted_s * 1e3:.1f}",
        _pct(result.error),
        "",
    )
    out.print(table)
    out.print(
        "blocks: forward + backward in profiled iterations (profiler overhead included); iteration: "
        "median wall time of the timed iterations, optimizer step and all-reduce included.",
        highlight=False,
    )
    return 0
