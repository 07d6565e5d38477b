"""``trainplay plan``: a makespan-aware TNP plan of a model over a heterogeneous cluster."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rich.console import Console

from trainplay.cli import add_sample_shape, positive_int, write_output
from trainplay.errors import UsageError
from trainplay.userfile import check_writable

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    from trainplay.runtime.job import OPTIMIZERS
    from trainplay.workload.stats import DTYPES

    p = commands.add_parser(
        "plan",
        help="TNP: partition a model over heterogeneous devices (pipeline + data parallel)",
        description=(
            "Search stages (contiguous block ranges), the devices of each stage, data-parallel "
            "replicas with uneven batch shares, micro-batches, schedule and recomputation for the "
            "shortest predicted iteration under MD-Roofline's cost model, within every device's "
            "memory; compare with baselines; with --dataset-size, the job's makespan over the "
            "devices' availability windows."
        ),
    )
    p.add_argument("model", help="torchvision classifier, decoder preset, or pkg.module:factory")
    p.add_argument(
        "--cluster",
        required=True,
        help="a cluster YAML file, a preset (lab, 8xA100-80GB, ...: `trainplay hw list`), "
        "or `local`",
    )
    p.add_argument("--global-batch", type=positive_int, required=True, help="samples per step")
    p.add_argument(
        "--dataset-size",
        type=positive_int,
        help="samples in the data set: plans the whole job (makespan over availability windows)",
    )
    p.add_argument(
        "--epochs", type=positive_int, help="passes over --dataset-size (default 1; needs it)"
    )
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd")
    p.add_argument("--dtype", choices=DTYPES, default="fp32")
    add_sample_shape(p)
    p.add_argument(
        "--microbatches",
        type=positive_int,
        help="fix the micro-batch count instead of searching it",
    )
    p.add_argument(
        "--exact",
        action="store_true",
        help="search every arrangement of up to 8 devices exhaustively, whatever it costs "
        "(minutes for decoders on 8 devices); by default a shape too costly to enumerate is "
        "searched by the heuristic",
    )
    p.add_argument("--format", choices=("table", "json"), help="default: table, or json with --out")
    p.add_argument("--out", type=Path, metavar="FILE.json", help="write the JSON here")
    p.add_argument("--explain", action="store_true", help="say why: per stage and device")
    p.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="write the simulated iteration as Chrome/Perfetto trace JSON",
    )
    p.set_defaults(run=_plan)


def _plan(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.plan.api import plan_model
    from trainplay.plan.search import SearchOptions
    from trainplay.plan.simulate import to_chrome_trace
    from trainplay.report.plan_table import (
        baseline_table,
        device_table,
        explain_lines,
        stage_table,
        summary_lines,
    )
    from trainplay.workload import parse_shape

    if args.epochs is not None and args.dataset_size is None:
        raise UsageError(
            "--epochs needs --dataset-size N: the job is ceil(N x epochs / global batch) "
            "iterations; add --dataset-size, or drop --epochs to plan one iteration"
        )
    if args.out is not None:
        if args.format == "table":
            raise UsageError("--out writes JSON: drop --format table, or drop --out")
        if args.out.suffix.lower() != ".json":
            raise UsageError(f"--out writes JSON: name the file .json, got {str(args.out)!r}")
        check_writable(args.out, "--out")
    if args.trace is not None:
        check_writable(args.trace, "--trace")
    args.format = args.format or ("json" if args.out is not None else "table")
    input_shape = parse_shape(args.input_shape) if args.input_shape is not None else None
    with err.status(f"profiling {args.model} and searching plans …"):
        result = plan_model(
            args.model,
            args.cluster,
            global_batch=args.global_batch,
            dataset_size=args.dataset_size,
            epochs=args.epochs or 1,
            optimizer=args.optimizer,
            dtype=args.dtype,
            input_shape=input_shape,
            seq_len=args.seq_len,
            options=SearchOptions(
                microbatches=args.microbatches,
                exact_work=math.inf if args.exact else SearchOptions.exact_work,
                arrangement_limit=10**9 if args.exact else SearchOptions.arrangement_limit,
            ),
            show_progress=err.is_terminal,
        )
    if args.format == "json":
        text = json.dumps(result.to_dict(), indent=2)
        if args.out is not None:
            write_output(args.out, text + "\n", err)
        else:
            print(text)
    else:
        out.print(stage_table(result))
        out.print(device_table(result))
        out.print(baseline_table(result))
        for line in summary_lines(result):
            out.print(line, highlight=False)
    if args.explain:
        for line in explain_lines(result):
            err.print(line, highlight=False)
    if args.trace is not None and result.timeline is not None:
        trace = to_chrome_trace(result.timeline, title=f"{args.model} plan {result.plan.plan_id}")
        write_output(args.trace, json.dumps(trace) + "\n", err)
    return 0
