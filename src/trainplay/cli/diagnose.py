"""``trainplay diagnose TRACE_DIR``: per-rank times and the straggler, from profiler traces."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from trainplay.errors import UsageError

if TYPE_CHECKING:
    from trainplay.roofline.diagnose import Diagnosis

__all__ = ["blocks_table", "ranks_table", "register", "verdict"]


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 0.1, got {text!r}") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 10, got {text}")
    return value


def register(commands: argparse._SubParsersAction) -> None:
    from trainplay.roofline.diagnose import MARGIN

    d = commands.add_parser(
        "diagnose",
        help="per-rank step, block and collective times, and the straggler, from profiler traces",
        description=(
            "Read one PyTorch profiler (Kineto) trace per rank from TRACE_DIR and report each "
            "rank's step time, time in operators by class, time in collectives, and time per "
            "annotated block; then name the straggler, if any: the rank busier than the median "
            "of the others beyond the margin, its dimension (compute, memory, communication) and "
            "the slowdown it causes."
        ),
    )
    d.add_argument("trace_dir", help="folder with one *.json or *.json.gz trace per rank")
    d.add_argument("--format", choices=("table", "json"), default="table")
    d.add_argument(
        "--margin",
        type=_fraction,
        default=MARGIN,
        help=f"how much busier than the others a straggler is, as a fraction (default {MARGIN})",
    )
    d.set_defaults(run=_diagnose)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f}"


def ranks_table(diagnosis: Diagnosis) -> Table:
    """One row per rank: medians over the steps, in milliseconds."""
    steps = {r.steps for r in diagnosis.ranks}
    table = Table(
        title=f"Per rank, median of {'/'.join(map(str, sorted(steps)))} steps (ms)",
        header_style="bold",
    )
    for name in ("rank", "step", "busy", "compute", "memory", "collectives", "of which waiting"):
        table.add_column(name, justify="right")
    straggler = diagnosis.straggler.rank if diagnosis.straggler else None
    for r in diagnosis.ranks:
        table.add_row(
            f"{r.rank}{' *' if r.rank == straggler else ''}",
            _ms(r.step_s),
            _ms(r.busy_s),
            _ms(r.compute_s),
            _ms(r.memory_s),
            _ms(r.collective_s),
            _ms(r.collective_wait_s),
        )
    return table


def blocks_table(diagnosis: Diagnosis) -> Table | None:
    """One row per annotated block, one column per rank: forward + backward (ms)."""
    names = list(dict.fromkeys(name for r in diagnosis.ranks for name in r.blocks))
    if not names:
        return None
    table = Table(title="Per block, fwd + bwd (ms)", header_style="bold")
    table.add_column("block")
    for r in diagnosis.ranks:
        table.add_column(f"rank {r.rank}", justify="right")
    for name in names:
        table.add_row(name, *(_ms(r.blocks.get(name, 0.0)) for r in diagnosis.ranks))
    return table


def verdict(diagnosis: Diagnosis) -> str:
    """One line: the straggler, its dimension and slowdown, or that there is none."""
    s = diagnosis.straggler
    if s is None:
        return f"no straggler (margin {diagnosis.margin:.0%})"
    return (
        f"straggler: rank {s.rank}, {s.dimension}-bound excess of {_ms(s.excess_s)} ms per step "
        f"({s.excess_fraction:+.0%}); it slows every step by {s.slowdown:.2f}x"
    )


def _diagnose(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.roofline.diagnose import diagnose

    if not args.trace_dir:
        raise UsageError("give the folder holding one trace per rank")
    with err.status(f"reading traces in {args.trace_dir} …"):
        result = diagnose(args.trace_dir, margin=args.margin)
    if args.format == "json":
        print(result.to_json())
        return 0
    out.print(ranks_table(result))
    if (blocks := blocks_table(result)) is not None:
        out.print(blocks)
    out.print(verdict(result), style="bold", markup=False)
    for note in result.notes:
        out.print(f"  {note}", markup=False)
    return 0
