"""``trainplay diagnose TRACE_DIR | JOURNAL``: per-rank times and the straggler, from profiler
traces or from a ``trainplay train`` journal's own timers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from trainplay.errors import UsageError

if TYPE_CHECKING:
    from trainplay.roofline.diagnose import Diagnosis, Straggler
    from trainplay.roofline.measured import MeasuredDiagnosis

__all__ = ["blocks_table", "measured_table", "ranks_table", "register", "stages_table", "verdict"]


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
        help="per-rank times and the straggler, from profiler traces or a training journal",
        description=(
            "From TRACE_DIR, one PyTorch profiler (Kineto) trace per rank: each rank's step time, "
            "time in operators by class, time in collectives, and time per annotated block. From "
            "JOURNAL, the file of `trainplay train --journal`: each rank's forward, backward, "
            "transfer waits, all-reduce and optimizer times beside the plan's prediction, per "
            "worker group. Then name the straggler, if any: the rank (or group of alike ranks) "
            "busier than the others beyond the margin, its dimension (compute, memory, "
            "communication) and the slowdown it causes."
        ),
    )
    d.add_argument(
        "trace_dir",
        metavar="TRACE_DIR|JOURNAL",
        help="folder with one *.json or *.json.gz trace per rank, or a training journal",
    )
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


def verdict(diagnosis: Diagnosis | MeasuredDiagnosis) -> str:
    """One line: the straggler, its dimension and slowdown, or that there is none."""
    s: Straggler | None = diagnosis.straggler
    if s is None:
        return f"no straggler (margin {diagnosis.margin:.0%})"
    who = f"rank {s.rank}" if len(s.group) == 1 else f"ranks {', '.join(map(str, s.group))}"
    return (
        f"straggler: {who}, {s.dimension}-bound excess of {_ms(s.excess_s)} ms per step "
        f"({s.excess_fraction:+.0%}); it slows every step by {s.slowdown:.2f}x"
    )


def measured_table(d: MeasuredDiagnosis) -> Table:
    """One row per rank of a worker group: its timers (medians, ms) and its prediction."""
    table = Table(
        title=f"Plan {d.plan_id}: per rank, median of {d.steps} steps (ms)", header_style="bold"
    )
    names = ("rank", "device", "stage", "share", "fwd", "bwd", "wait", "all-reduce", "optimizer")
    for name in (*names, "step", "busy", "predicted busy", "busy / predicted"):
        table.add_column(name, justify="left" if name == "device" else "right")
    slow = set(d.straggler.group) if d.straggler else set()
    for r in d.ranks:
        table.add_row(
            f"{r.rank}{' *' if r.rank in slow else ''}", r.device, str(r.stage), str(r.share),
            *(_ms(x) for x in (r.fwd_s, r.bwd_s, r.wait_s, r.allreduce_s, r.optimizer_s)),
            _ms(r.step_s), _ms(r.busy_s),
            "-" if r.predicted_busy_s is None else _ms(r.predicted_busy_s),
            "-" if r.ratio is None else f"{r.ratio:.2f}",
        )  # fmt: skip
    return table


def stages_table(d: MeasuredDiagnosis) -> Table:
    """Predicted against measured busy time per stage, and the step."""
    table = Table(title="Predicted against measured (ms)", header_style="bold")
    for name in ("", "ranks", "predicted", "measured", "measured / predicted"):
        table.add_column(name, justify="right")

    def row(name: str, ranks: str, predicted: float | None, measured: float) -> None:
        ratio = "-" if not predicted else f"{measured / predicted:.2f}"
        shown = "-" if predicted is None else _ms(predicted)
        table.add_row(name, ranks, shown, _ms(measured), ratio)

    for s in d.stages:
        row(f"stage {s.stage} busy", ", ".join(map(str, s.ranks)), s.predicted_s, s.measured_s)
    row("step", "all", d.predicted_step_s, d.step_s)
    return table


def _journal(args: argparse.Namespace, out: Console) -> int:
    import json
    from pathlib import Path

    from trainplay.roofline.measured import diagnose_run
    from trainplay.runtime.journal import measured_runs, read_journal

    path = Path(args.trace_dir)
    try:
        events = read_journal(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read journal {str(path)!r}: {exc}") from None
    if not events:
        raise UsageError(
            f"{str(path)!r} is neither a trace folder nor a journal (no JSON lines); give the "
            "folder of per-rank traces or the file of `trainplay train --journal`"
        )
    runs = measured_runs(events)
    if not runs:
        raise UsageError(
            f"journal {str(path)!r} has no timed steps (written before trainplay timed them, or "
            "stopped before the first step); train again with --journal"
        )
    results = [diagnose_run(run, margin=args.margin) for run in runs]
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in results], indent=2))
        return 0
    for i, result in enumerate(results):
        if len(results) > 1:
            first = runs[i].first_step
            out.print(
                f"worker group {i + 1} of {len(results)}: steps {first}-{first + len(runs[i].step_s) - 1}",
                style="bold",
                markup=False,
            )
        out.print(measured_table(result))
        out.print(stages_table(result))
        out.print(verdict(result), style="bold", markup=False)
        for note in result.notes:
            out.print(f"  {note}", markup=False)
    return 0


def _diagnose(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pathlib import Path

    from trainplay.roofline.diagnose import diagnose

    if not args.trace_dir:
        raise UsageError("give the folder holding one trace per rank, or a training journal")
    if Path(args.trace_dir).is_file():
        return _journal(args, out)
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
