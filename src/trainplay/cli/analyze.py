"""``trainplay analyze``: MD-Roofline of a model's training iteration on a cluster."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from trainplay.cli import add_sample_shape, positive_int, write_output
from trainplay.errors import UsageError
from trainplay.userfile import check_writable

__all__ = ["register"]


FORMATS = {".json": "json", ".html": "html", ".htm": "html"}
"""What ``--out`` writes by its extension when ``--format`` is not given."""


def register(commands: argparse._SubParsersAction) -> None:
    from trainplay.runtime.job import OPTIMIZERS
    from trainplay.workload.stats import DTYPES

    a = commands.add_parser(
        "analyze",
        help="MD-Roofline: which of compute, memory or communication bounds each block and the iteration",
        description=(
            "Profile MODEL (on the meta device) and judge each block and the whole training iteration "
            "against the cluster's achievable peaks (APF, APM, APB) on MD-Roofline's three planes: "
            "intensities, bound, times, predicted iteration time, stragglers, what-if lines."
        ),
    )
    a.add_argument("model", help="torchvision classifier, decoder preset, or pkg.module:factory")
    a.add_argument(
        "--cluster",
        required=True,
        help="a cluster YAML file, a preset (lab, 8xA100-80GB, ...: `trainplay hw list`), "
        "or `local` (this machine, measured)",
    )
    a.add_argument(
        "--parallel",
        default="dp=1",
        metavar="dp=N,pp=S[,mb=M]",
        help="data-parallel replicas, pipeline stages, micro-batches (default dp=1)",
    )
    a.add_argument(
        "--batch", type=positive_int, default=1, help="samples per replica per iteration"
    )
    add_sample_shape(a)
    a.add_argument("--dtype", choices=DTYPES, default="fp32")
    a.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd")
    a.add_argument(
        "--format",
        choices=("table", "json", "html"),
        help="default: table, or what --out's extension says (.json, .html)",
    )
    a.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the JSON (FILE.json) or HTML (FILE.html) here; --format html alone writes "
        "trainplay-<model>-report.html",
    )
    a.add_argument(
        "--plots",
        type=Path,
        metavar="DIR",
        help="also write the planes and breakdown as PNG and SVG",
    )
    a.set_defaults(run=_analyze)


def _analyze(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.report.roofline_table import roofline_table, summary_lines
    from trainplay.roofline.api import analyze_model
    from trainplay.roofline.layout import Parallel
    from trainplay.workload import parse_shape

    parallel = Parallel.parse(args.parallel)
    input_shape = parse_shape(args.input_shape) if args.input_shape is not None else None
    args.format = _format(args.format, args.out)
    if args.format == "html" and args.out is None:
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in args.model)
        args.out = Path(f"trainplay-{safe}-report.html")
    if args.out is not None:
        check_writable(args.out, "--out")
    if args.plots is not None:
        check_writable(args.plots, "--plots", folder=True)
    with err.status(f"profiling {args.model} and analysing …"):
        result = analyze_model(
            args.model,
            args.cluster,
            parallel=parallel,
            batch_size=args.batch,
            input_shape=input_shape,
            seq_len=args.seq_len,
            dtype=args.dtype,
            optimizer=args.optimizer,
            show_progress=err.is_terminal,
        )
    if args.format == "json":
        text = json.dumps(result.to_dict(), indent=2)
        if args.out is not None:
            write_output(args.out, text + "\n", err)
        else:
            print(text)
    elif args.format == "html":
        from trainplay.report.html import render_html

        write_output(args.out, render_html(result), err)
    else:
        out.print(roofline_table(result))
        for line in summary_lines(result):
            out.print(line, highlight=False)
    if args.plots is not None:
        from trainplay.report.figures import save_figures

        try:
            written = save_figures(result, args.plots)
        except OSError as exc:
            raise UsageError(f"cannot write --plots {str(args.plots)!r}: {exc.strerror}") from None
        for path in written:
            err.print(f"wrote {path}", highlight=False)
    return 0


def _format(given: str | None, out: Path | None) -> str:
    """``--format``, or the one ``--out``'s extension names; a mismatch is refused (HTML in a
    ``.json`` file would be a surprise)."""
    if out is None:
        return given or "table"
    implied = FORMATS.get(out.suffix.lower())
    if given == "table":
        raise UsageError("--out writes JSON or HTML: add --format json or html, or drop --out")
    if implied is None:
        raise UsageError(
            f"--out {str(out)!r}: name the file .json or .html, the format it is written in"
        )
    if given is not None and given != implied:
        raise UsageError(
            f"--format {given} does not match --out {str(out)!r}: name it "
            f"{out.with_suffix('.' + given).name}, or drop --format (the extension decides)"
        )
    return implied
