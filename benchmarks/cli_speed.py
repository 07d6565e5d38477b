"""How long trainplay's commands take to start and finish, against the interpreter and torch.

Each command runs as a fresh process (``subprocess``, output discarded), the commands alternated
round after round so that a slow moment of a shared machine spreads over all of them; the table
gives each command's median, fastest and slowest wall time. The two references set the scale:
``python -c pass`` (the interpreter alone), ``python -c "import torch"`` (what any command
that touches a model pays) and ``python -c "import torch, torchvision"`` (the yardstick of issue
11's target for ``plan``: within 1.5x of it). ``--help``, ``models`` and ``hw list`` should cost little more than
the interpreter: they import neither torch nor torchvision nor matplotlib. ``profile`` and
``plan`` run twice over: as a user's repeated command does, reading the profiles trainplay keeps
on disk (the warm-up run stores them), and with that cache off (``TRAINPLAY_PROFILE_CACHE=0``).

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

NO_CACHE = {"TRAINPLAY_PROFILE_CACHE": "0"}
TORCHVISION = 'python -c "import torch, torchvision"'
PLAN = [TRAINPLAY, "plan", "gpt2-xl", "--cluster", "lab", "--global-batch", "64"]
COMMANDS: dict[str, tuple[list[str], dict[str, str]]] = {
    'python -c "pass"': ([sys.executable, "-c", "pass"], {}),
    'python -c "import torch"': ([sys.executable, "-c", "import torch"], {}),
    TORCHVISION: ([sys.executable, "-c", "import torch, torchvision"], {}),
    "trainplay --help": ([TRAINPLAY, "--help"], {}),
    "trainplay models": ([TRAINPLAY, "models"], {}),
    "trainplay hw list": ([TRAINPLAY, "hw", "list"], {}),
    "trainplay profile resnet50": ([TRAINPLAY, "profile", "resnet50"], {}),
    "trainplay profile resnet50 (no profile cache)": ([TRAINPLAY, "profile", "resnet50"], NO_CACHE),
    "trainplay plan gpt2-xl --cluster lab --global-batch 64": (PLAN, {}),
    "trainplay plan gpt2-xl --cluster lab --global-batch 64 (no profile cache)": (PLAN, NO_CACHE),
}  # fmt: skip
TARGETS = {"trainplay --help": 0.5}
"""Seconds a command's median must stay under (issue 15)."""
RELATIVE = {"trainplay plan gpt2-xl --cluster lab --global-batch 64": (TORCHVISION, 1.5)}
"""A command's median must stay under this multiple of another's, from the same run (issue 11:
the plan of gpt2-xl within 1.5x of importing torch and torchvision)."""


def _time(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=600,
        env={**os.environ, **env},
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="fresh runs of each command")
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for argv, env in COMMANDS.values():  # one unmeasured run each: page cache, .pyc, profiles
        _time(argv, env)
    for _ in range(args.rounds):
        for name, (argv, env) in COMMANDS.items():
            times[name].append(_time(argv, env))
    medians = {name: statistics.median(t) for name, t in times.items()}
    rows = [
        {
            "command": name,
            "median_s": medians[name],
            "min_s": min(t),
            "max_s": max(t),
            "runs_s": [round(x, 4) for x in t],
            "target_s": (
                round(RELATIVE[name][1] * medians[RELATIVE[name][0]], 4)
                if name in RELATIVE
                else TARGETS.get(name)
            ),
            "target_of": (
                f"{RELATIVE[name][1]} x `{RELATIVE[name][0]}`" if name in RELATIVE else None
            ),
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
        "each (which also stores the profiles trainplay caches on disk); wall time, output "
        'discarded. "no profile cache": `TRAINPLAY_PROFILE_CACHE=0`, every profile counted '
        "again.",
        "",
        "| command | median s | fastest s | slowest s | target |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        target = (
            ""
            if r["target_s"] is None
            else f"< {r['target_s']:.3g} s"
            + (f" ({r['target_of']})" if r["target_of"] else "")
            + (": met" if r["median_s"] < r["target_s"] else ": **missed**")
        )
        lines.append(
            f"| `{r['command']}` | {r['median_s']:.3f} | {r['min_s']:.3f} | {r['max_s']:.3f} | "
            f"{target} |"
        )
    (RESULTS / "cli_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
