"""``trainplay <command>``: parse, call the library, print. Nothing else lives here.

User mistakes end as one line on stderr, ``trainplay: error: ...``, and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from trainplay import __version__
from trainplay.errors import TrainplayError, UsageError

__all__ = ["main"]

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _build_parser() -> _Parser:
    from trainplay.workload import DEVICES, DTYPES, GRANULARITIES

    parser = _Parser(
        prog="trainplay",
        description="Why your distributed training is slow, and training big models on the devices you have.",
    )
    parser.add_argument("--version", action="version", version=f"trainplay {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

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
        "--batch", type=_positive_int, default=1, help="samples per iteration (default 1)"
    )
    shape = p.add_mutually_exclusive_group()
    shape.add_argument(
        "--input-shape",
        metavar="C,H,W",
        help="shape of one sample (default: the model's reference size)",
    )
    shape.add_argument(
        "--seq-len",
        type=_positive_int,
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
        type=_positive_int,
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
        type=_positive_int,
        metavar="N",
        help="table: show only the N rows with the most FLOPs",
    )
    p.set_defaults(run=_profile)

    m = commands.add_parser("models", help="list the model names trainplay knows")
    m.set_defaults(run=_models)
    return parser


def _profile(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.report import profile_table
    from trainplay.workload import parse_shape, profile

    if args.out is not None and args.out.suffix not in (".json", ".csv"):
        raise UsageError(f"--out must end in .json or .csv, got {str(args.out)!r}")
    if args.depth is not None and args.granularity != "modules":
        raise UsageError("--depth applies to --granularity modules; add it or drop --depth")
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
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(
                result.to_json() + "\n" if args.out.suffix == ".json" else result.to_csv()
            )
        except OSError as exc:
            raise UsageError(f"cannot write {str(args.out)!r}: {exc.strerror}") from None
        err.print(f"wrote {args.out}")
    return 0


def _models(_args: argparse.Namespace, out: Console, _err: Console) -> int:
    from trainplay.workload import PRESETS
    from trainplay.workload.zoo import torchvision_models

    out.print("[bold]decoder presets[/bold]: " + ", ".join(PRESETS))
    out.print("[bold]torchvision classifiers[/bold]: " + ", ".join(torchvision_models()))
    out.print(
        "[bold]your own model[/bold]: package.module:factory (a function returning an nn.Module)"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``trainplay`` console script; returns the exit status."""
    args = _build_parser().parse_args(argv)
    # Piped output keeps a table readable instead of rich's 80-column default.
    wide = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
    out, err = Console(width=wide), Console(stderr=True)
    try:
        return args.run(args, out, err)
    except TrainplayError as exc:
        sys.stderr.write(f"trainplay: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("trainplay: interrupted\n")
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
