"""``trainplay <command>``: parse, call the library, print. Nothing else lives here.

One module per command group (``profile``, ``hw``), each adding its parsers and thin runners.
User mistakes end as one line on stderr, ``trainplay: error: ...``, and exit status 2.
"""

from __future__ import annotations

import argparse
import copy
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
    "MAX_INT",
    "Parser",
    "add_sample_shape",
    "endpoint",
    "main",
    "positive_int",
    "process_count",
    "write_output",
]

EXIT_USAGE = 2

MAX_INT = 2**63 - 1
"""The largest count any flag takes: what a 64-bit integer (a tensor's size, a seed) holds."""


class _HelpWithDefaults(argparse.HelpFormatter):
    """Each option's help ends with its default, unless the text already states it (as
    ``ArgumentDefaultsHelpFormatter`` does, but also for options without help text, and not for
    defaults that mean "not given")."""

    @staticmethod
    def _states_default(action: argparse.Action) -> bool:
        default, text = action.default, action.help or ""
        if not action.option_strings or default is None or default is False:
            return True
        shown = {str(default), f"{default:g}" if isinstance(default, float) else str(default)}
        return (
            default == argparse.SUPPRESS
            or "default" in text
            or any(f"({v})" in text for v in shown)
        )

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if self._states_default(action):
            return action.help
        return f"{action.help} (default: %(default)s)"

    def _format_action(self, action: argparse.Action) -> str:
        if not action.help and not self._states_default(action):
            action = copy.copy(action)
            action.help = "default: %(default)s"
        return super()._format_action(action)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line and exit status 2, and whose help shows
    every option's default."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        kwargs.setdefault("formatter_class", _HelpWithDefaults)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    if value > MAX_INT:
        raise argparse.ArgumentTypeError(f"expected a positive integer below 2^63, got {text}")
    return value


def process_count(text: str) -> int:
    """Processes to start on this node: a positive integer, at most 8 per CPU (and at least 8
    allowed), so that a typo does not fork thousands of interpreters."""
    value = positive_int(text)
    limit = max(8, 8 * len(os.sched_getaffinity(0)))
    if value > limit:
        raise argparse.ArgumentTypeError(
            f"{value} processes on this node is more than 8 per CPU ({limit}); give at most {limit}"
        )
    return value


def endpoint(text: str) -> str:
    """``HOST:PORT`` with a port from 1 to 65535 (the format torchrun's ``--rdzv-endpoint`` takes)."""
    host, _, port = text.rpartition(":")
    if not host or not port:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT such as node0:29400, got {text!r}")
    if not (port.isascii() and port.isdigit()):
        raise argparse.ArgumentTypeError(f"the port of {text!r} is not a number; use HOST:PORT")
    if not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"port {int(port)} of {text!r} is out of range: ports go from 1 to 65535"
        )
    return text


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
    err.print(f"wrote {path}", highlight=False)


def _build_parser() -> Parser:
    from trainplay.cli import analyze, diagnose, hw, plan, profile, rendezvous, train, validate

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
    rendezvous.register(commands)
    _name_commands(parser)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Each command's parser records its ``prog``, so an unknown flag is reported by the
    command it was given to (``trainplay plan: error: ...``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(command_prog=sub.prog)
                _name_commands(sub)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``trainplay`` console script; returns the exit status."""
    parser = _build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
    except SystemExit as exc:  # --help, --version, or a command line argparse refused
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if extra:
        prog = getattr(args, "command_prog", parser.prog)
        sys.stderr.write(
            f"{prog}: error: unrecognized arguments: {' '.join(extra)} (see {prog} --help)\n"
        )
        return EXIT_USAGE
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
