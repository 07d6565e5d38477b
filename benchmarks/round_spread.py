"""How much a case's measured step time moves between the rounds of one validation run: the noise
a set's MAPE is measured through, from the committed results only (nothing is timed).

``validate_cpu.py --rounds R`` measures every case of a set ``R`` times, case after case in the
declared order each round, and judges the cost model on each case's median over its rounds. This
script reads every committed ``benchmarks/results/validate_cpu_*.json`` whose cases carry their
rounds' runs and reports, per set:

- **run off its median**: the mean over every run of ``|run / median of its case's runs - 1|``.
  It is the MAPE that a model pricing every case at exactly its median would score on one round
  alone, so a single round's MAPE below it says nothing about the model;
- **range**: ``(slowest run - fastest run) / median`` of each case, the median over the cases
  and the largest (with its case);
- **beside the set's own MAPE** (of the medians, as the run reported it).

The medians over ``R`` rounds move less than one run does, but with three rounds a case whose runs
span 40% can still put its median a tenth away from where a quieter night would. Repriced results
(``*_repriced*``) carry the same runs as the run they price again and are left out.
``python benchmarks/round_spread.py`` writes ``benchmarks/results/round_spread.{md,json}``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def spread(rows: list[dict]) -> dict | None:
    """The round-to-round figures of one result file's rows (None without rounds)."""
    off: list[float] = []
    ranges: list[tuple[float, str]] = []
    rounds = 0
    for row in rows:
        runs = [run["measured_s"] for run in row.get("runs", ())]
        if len(runs) < 2:
            continue
        rounds = max(rounds, len(runs))
        median = statistics.median(runs)
        off += [abs(run / median - 1) for run in runs]
        case = f"{row['model']} b{row['batch']} x{row['procs']} {row['layout']}"
        ranges.append(((max(runs) - min(runs)) / median, case))
    if not ranges:
        return None
    widest = max(ranges)
    return {
        "cases": len(rows),
        "rounds": rounds,
        "mape": 100 * statistics.mean(abs(row["error"]) for row in rows),
        "run_off_median": 100 * statistics.mean(off),
        "median_range": 100 * statistics.median(r for r, _ in ranges),
        "widest_range": 100 * widest[0],
        "widest_case": widest[1],
    }


def main() -> None:
    table = {}
    for path in sorted(RESULTS.glob("validate_cpu_*.json")):
        if "_repriced" in path.stem:
            continue
        rows = json.loads(path.read_text())
        if isinstance(rows, list) and rows and (got := spread(rows)) is not None:
            table[path.stem.removeprefix("validate_cpu_")] = got
    lines = [
        "# Between rounds: how much a case's measured step time moves within one validation run",
        "",
        "`python benchmarks/round_spread.py` (from the committed `validate_cpu_*.json`; nothing "
        "timed). *Run off its median*: the mean of |run / its case's median - 1| over every run, "
        "the MAPE a model that priced each case at exactly its median would score on one round. "
        "*Range*: (slowest - fastest run) / median per case.",
        "",
        "| set | cases | rounds | MAPE of the medians | run off its median | median range | "
        "widest range | widest case |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in table.items():
        lines.append(
            f"| {name} | {s['cases']} | {s['rounds']} | {s['mape']:.1f}% | "
            f"{s['run_off_median']:.1f}% | {s['median_range']:.1f}% | {s['widest_range']:.0f}% | "
            f"{s['widest_case']} |"
        )
    (RESULTS / "round_spread.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "round_spread.json").write_text(json.dumps(table, indent=2) + "\n")
    print("\n".join(lines[6:]))


if __name__ == "__main__":
    main()
