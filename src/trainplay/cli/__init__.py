"""``trainplay <command>``: parse, call the library, print. Nothing else lives here.

One module per command group (``profile``, ``hw``), each adding its parsers and thin runners.
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

__all__ = [
    "EXIT_USAGE",
    "Parser",
    "add_sample_shape",
    "main",
    "positive_int",
    "write_output",
]

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_sample_shape(parser: argparse.ArgumentParser) -> None:
    """``--input-shape C,H,W`` or ``--seq-len N``: the shape of one sample, for commands that
    profile a model at its reference size otherwise."""
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--input-shape", metavar="C,H,W", help="shape of one sample")
    shape.add_argument("--seq-len", type=positive_int, help="tokens per sample for decoder presets")


def write_output(path: Path, text: str, err: Console) -> None:
    """Write a command's ``--out`` file (creating its folder) and say so on stderr."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise UsageError(f"cannot write {str(path)!r}: {exc.strerror}") from None
    err.print(f"wrote {path}")


def _build_parser() -> Parser:
    from trainplay.cli import analyze, diagnose, hw, plan, profile, train, validate

    parser = Parser(
        prog="trainplay",
        description="Why your distributed training is slow, and training big models on the devices you have.",
    )
    parser.add_argument("--version", action="version", version=f"trainplay {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    profile.register(commands)
    hw.register(commands)
    analyze.register(commands)
    validate.register(commands)
    diagnose.register(commands)
    plan.register(commands)
    train.register(commands)
    return parser


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
