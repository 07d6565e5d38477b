"""How long trainplay's commands take to start and finish, against the interpreter and torch.

Each command runs as a fresh process (``subprocess``, output discarded), the commands alternated
round after round so that a slow moment of a shared machine spreads over all of them; the table
gives each command's median, fastest and slowest wall time. The two references set the scale:
``python -c pass`` (the interpreter alone) and ``python -c "import torch"`` (what any command
that touches a model pays). ``--help``, ``models`` and ``hw list`` should cost little more than
the interpreter: they import neither torch nor torchvision nor matplotlib.

Run it on an otherwise idle machine: ``python benchmarks/cli_speed.py [--rounds 7]``.
Writes ``benchmarks/results/cli_speed.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
BIN = Path(sys.executable).parent
TRAINPLAY = str(BIN / "trainplay")

COMMANDS = {
    'python -c "pass"': [sys.executable, "-c", "pass"],
    'python -c "import torch"': [sys.executable, "-c", "import torch"],
    "trainplay --help": [TRAINPLAY, "--help"],
    "trainplay models": [TRAINPLAY, "models"],
    "trainplay hw list": [TRAINPLAY, "hw", "list"],
    "trainplay profile resnet50": [TRAINPLAY, "profile", "resnet50"],
    "trainplay plan gpt2-xl --cluster lab --global-batch 64": [
        TRAINPLAY, "plan", "gpt2-xl", "--cluster", "lab", "--global-batch", "64",
    ],
}  # fmt: skip
TARGETS = {"trainplay --help": 0.5}
"""Seconds a command's median must stay under (issue 15)."""


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="fresh runs of each command")
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for argv in COMMANDS.values():  # one unmeasured run each: the page cache, .pyc files
        _time(argv)
    for _ in range(args.rounds):
        for name, argv in COMMANDS.items():
            times[name].append(_time(argv))
    rows = [
        {
            "command": name,
            "median_s": statistics.median(t),
            "min_s": min(t),
            "max_s": max(t),
            "runs_s": [round(x, 4) for x in t],
            "target_s": TARGETS.get(name),
        }
        for name, t in times.items()
    ]
    import torch  # after the runs: only its version is wanted

    meta = {
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "rounds": args.rounds,
        "date": datetime.date.today().isoformat(),
        "command": "python benchmarks/cli_speed.py"
        + (f" --rounds {args.rounds}" if args.rounds != 7 else ""),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cli_speed.json").write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Command start-up and run time",
        "",
        f"Machine: {meta['machine']}, Python {meta['python']}, torch {meta['torch']}; "
        f"{meta['date']}. Command: `{meta['command']}`. Each command {args.rounds} times as a "
        "fresh process, commands alternated round by round after one unmeasured warm-up run "
        "each; wall time, output discarded.",
        "",
        "| command | median s | fastest s | slowest s | target |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        target = (
            ""
            if r["target_s"] is None
            else f"< {r['target_s']} s: "
            + ("met" if r["median_s"] < r["target_s"] else "**missed**")
        )
        lines.append(
            f"| `{r['command']}` | {r['median_s']:.3f} | {r['min_s']:.3f} | {r['max_s']:.3f} | "
            f"{target} |"
        )
    (RESULTS / "cli_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
