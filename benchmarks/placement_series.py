"""How long this machine's CPUs stay in one placement, and which past readings tell the placement
a run will be priced in (``trainplay.hardware.placement``).

A series of ``--probes`` probes (:func:`~trainplay.hardware.placement.placement_now`, 12 ms each)
``--apart`` seconds apart, nothing else running. Each reading is then taken as the moment a run is
priced, and the placement most of the probes 5 to 15 s later read as the one the run is in (a
``trainplay train`` run starts seconds after it is priced and lasts seconds or more). Each rule
tells it from the readings up to that moment: the last seven (what ``placement_mostly`` read
alone before it kept readings), and those of the last 30 s, minute, and
:data:`~trainplay.hardware.placement.RECENT_S`. A microbenchmark of the machine: no training step
is timed.

Writes ``benchmarks/results/placement_series.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trainplay.hardware.placement import RECENT_S, most_common, placement_now  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
AHEAD_S = (5.0, 15.0)
"""The run a rule prices: the probes this many seconds after it."""


def spells(labels: list[str]) -> dict[str, list[int]]:
    """Lengths of the runs of equal readings, per placement, in order."""
    out: dict[str, list[int]] = {}
    start = 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            out.setdefault(labels[start], []).append(i - start)
            start = i
    return out


def agreement(series: list[tuple[float, str]], rule) -> tuple[int, int, int]:
    """(agreed, judged, times the rule told split) over every moment with a full run after it."""
    agreed = judged = told_split = 0
    for i, (t, _) in enumerate(series):
        run = [p for s, p in series if t + AHEAD_S[0] <= s <= t + AHEAD_S[1]]
        if series[-1][0] < t + AHEAD_S[1] or not run:
            break
        told = rule(series[: i + 1], t)
        judged += 1
        agreed += told == most_common(run)
        told_split += told == "split"
    return agreed, judged, told_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=500)
    parser.add_argument("--apart", type=float, default=0.5, help="seconds between probes")
    args = parser.parse_args()
    if placement_now() is None:
        sys.exit("placement_series: this machine has fewer than two usable CPUs: no placement")
    began = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    series: list[tuple[float, str]] = []
    for _ in range(args.probes):
        series.append((time.perf_counter() - t0, placement_now()))
        time.sleep(args.apart)
    labels = [p for _, p in series]
    rules = {
        "the last 7 probes": lambda past, t: most_common(p for _, p in past[-7:]),
        **{
            f"the last {w:.0f} s": (
                lambda past, t, w=w: most_common(p for s, p in past if s >= t - w)
            )
            for w in (30.0, 60.0, RECENT_S)
        },
    }
    told = {name: agreement(series, rule) for name, rule in rules.items()}
    lengths = spells(labels)
    split = labels.count("split") / len(labels)
    lines = [
        "# How long the CPUs stay in one placement, and which readings tell a run's",
        "",
        f"`python benchmarks/placement_series.py --probes {args.probes} --apart {args.apart}` "
        f"(began {began}, {series[-1][0]:.0f} s). {len(labels)} probes: **{100 * split:.0f}% "
        "split**. Spells (runs of equal readings), in probes: "
        + "; ".join(
            f"{p}: {len(n)} spells, longest {max(n)}, median {sorted(n)[len(n) // 2]}"
            for p, n in sorted(lengths.items())
        )
        + ".",
        "",
        f"Each reading taken as the moment a run is priced, the run the probes {AHEAD_S[0]:.0f} "
        f"to {AHEAD_S[1]:.0f} s after it; the placement most of them read against the one each "
        "rule tells from the readings up to that moment (the last seven probes span "
        f"{6 * args.apart:.1f} s here; `placement_mostly` takes its seven 0.25 s apart):",
        "",
        "| rule | agreed | moments | told split |",
        "|---|---|---|---|",
        *(f"| {name} | {a} | {n} | {s} |" for name, (a, n, s) in told.items()),
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "placement_series.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "placement_series.json").write_text(
        json.dumps(
            {"began": began, "apart_s": args.apart, "series": series, "rules": told}, indent=1
        )
        + "\n"
    )
    print("\n".join(lines[2:]))


if __name__ == "__main__":
    main()
