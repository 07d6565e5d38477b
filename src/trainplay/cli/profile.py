"""``trainplay profile`` and ``trainplay models``."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from trainplay.cli import positive_int, write_output
from trainplay.errors import UsageError
from trainplay.userfile import check_writable

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    from trainplay.workload.names import DEVICES
    from trainplay.workload.stats import DTYPES, GRANULARITIES

    p = commands.add_parser(
        "profile",
        help="count FLOPs, bytes, parameters and activations of one training iteration, per block",
        description=(
            "Count one training iteration (forward and backward) of MODEL at the aten-operator level: "
            "FLOPs, bytes to and from device memory, parameters, activations crossing each pipeline cut, "
            "bytes saved for backward. Runs on the meta device by default: no weights, no memory."
        ),
    )
    p.add_argument(
        "model",
        help="torchvision classifier (resnet50), preset (gpt2-small, llama-7b), or pkg.module:factory",
    )
    p.add_argument(
        "--batch", type=positive_int, default=1, help="samples per iteration (default 1)"
    )
    shape = p.add_mutually_exclusive_group()
    shape.add_argument(
        "--input-shape",
        metavar="C,H,W",
        help="shape of one sample (default: the model's reference size)",
    )
    shape.add_argument(
        "--seq-len",
        type=positive_int,
        help="tokens per sample for decoder presets (default: context length)",
    )
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default="fp32",
        help="training dtype of parameters and activations",
    )
    p.add_argument(
        "--device",
        choices=DEVICES,
        default="meta",
        help="where to count: meta (default, no memory), cpu, cuda",
    )
    p.add_argument(
        "--granularity",
        choices=GRANULARITIES,
        default="blocks",
        help="rows: pipeline blocks (default), modules, or aten ops",
    )
    p.add_argument(
        "--depth",
        type=positive_int,
        default=None,
        help="module depth for --granularity modules (default 1)",
    )
    p.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        default="table",
        help="what to print (default table)",
    )
    p.add_argument(
        "--out", type=Path, metavar="FILE", help="also write the profile to FILE (.json or .csv)"
    )
    p.add_argument(
        "--top",
        type=positive_int,
        metavar="N",
        help="table: show only the N rows with the most FLOPs",
    )
    p.set_defaults(run=_profile)

    m = commands.add_parser("models", help="list the model names trainplay knows")
    m.set_defaults(run=_models)


def _profile(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.report import profile_table
    from trainplay.workload import parse_shape, profile

    if args.out is not None and args.out.suffix not in (".json", ".csv"):
        raise UsageError(f"--out must end in .json or .csv, got {str(args.out)!r}")
    if args.depth is not None and args.granularity != "modules":
        raise UsageError("--depth applies to --granularity modules; add it or drop --depth")
    if args.out is not None:
        check_writable(args.out, "--out")
    input_shape = parse_shape(args.input_shape) if args.input_shape is not None else None
    with err.status(f"profiling {args.model} on {args.device} …"):
        result = profile(
            args.model,
            batch_size=args.batch,
            input_shape=input_shape,
            seq_len=args.seq_len,
            dtype=args.dtype,
            device=args.device,
            granularity=args.granularity,
            depth=args.depth or 1,
        )
    if args.format == "json":
        print(result.to_json())
    elif args.format == "csv":
        print(result.to_csv(), end="")
    else:
        out.print(profile_table(result, top=args.top))
    if args.out is not None:
        text = result.to_json() + "\n" if args.out.suffix == ".json" else result.to_csv()
        write_output(args.out, text, err)
    return 0


def _models(_args: argparse.Namespace, out: Console, _err: Console) -> int:
    from trainplay.workload.names import DECODER_PRESETS, TORCHVISION_CLASSIFIERS

    out.print("[bold]decoder presets[/bold]: " + ", ".join(DECODER_PRESETS))
    out.print("[bold]torchvision classifiers[/bold]: " + ", ".join(TORCHVISION_CLASSIFIERS))
    out.print(
        "[bold]your own model[/bold]: package.module:factory (a function returning an nn.Module)"
    )
    return 0
