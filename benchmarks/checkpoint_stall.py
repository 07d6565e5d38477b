"""The checkpoint stall in training: ``trainplay train`` with synchronous and asynchronous saves.

``trainplay train gpt2-small`` (one process, 4 windows of 64 synthetic tokens a step, SGD with
momentum: 950 MB a checkpoint) checkpoints every 2 of 8 steps, synchronously (the default) and
with ``--checkpoint-async`` (``torch.distributed.checkpoint.async_save``), the two modes
alternated. Reported per mode, medians over its runs: the journal's ``stall_s`` per checkpoint
(what training waited), ``seconds`` (a checkpoint's start to its end), the step time of the steps
right after a checkpoint and of the others (an asynchronous write runs beside the next steps, on
the same cores), and the command's wall time. Since 2026-12-06 the journal's ``step_s`` runs
from one step's end to the next, so a step right after a checkpoint includes its stall; results
written before then (``checkpoint_stall.md`` of 2026-12-01) timed the step without it.

Writes benchmarks/results/checkpoint_stall.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainplay.runtime.journal import read_journal  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
COLUMNS = {
    "stall_s": "stall",
    "write_s": "write",
    "step_after_checkpoint_s": "step after a checkpoint",
    "other_step_s": "other steps",
    "wall_s": "wall",
}


def run(asynchronous: bool, steps: int, every: int) -> dict:
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp_text:  # on the disk checkpoints go to
        tmp = Path(tmp_text)
        command = [
            sys.executable, "-m", "trainplay", "train", "gpt2-small", "--seq-len", "64",
            "--global-batch", "4", "--steps", str(steps), "--checkpoint-dir", str(tmp / "ckpt"),
            "--checkpoint-every", str(every), "--journal", str(tmp / "journal.jsonl"),
            "--no-progress", *(["--checkpoint-async"] if asynchronous else []),
        ]  # fmt: skip
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)
        wall_s = time.perf_counter() - began
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        events = read_journal(tmp / "journal.jsonl")
    saves = [e for e in events if e["event"] == "checkpoint"]
    steps_run = [e for e in events if e["event"] == "step" and e["step"] > 0]  # 0: warm-up
    after = {e["step"] for e in saves}  # step k runs right after the checkpoint of k steps
    med = statistics.median
    return {
        "mode": "async" if asynchronous else "sync",
        "stall_s": med(e["stall_s"] for e in saves),
        "write_s": med(e["seconds"] for e in saves),
        "step_after_checkpoint_s": med(e["step_s"] for e in steps_run if e["step"] in after),
        "other_step_s": med(e["step_s"] for e in steps_run if e["step"] not in after),
        "wall_s": wall_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per mode, alternated")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--every", type=int, default=2, help="--checkpoint-every")
    args = parser.parse_args()
    rows = []
    for _ in range(args.repeats):
        for asynchronous in (False, True):
            rows.append(run(asynchronous, args.steps, args.every))
            print(json.dumps(rows[-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "checkpoint_stall.json").write_text(json.dumps({"runs": rows}, indent=1))
    lines = [
        "# The checkpoint stall in `trainplay train`: synchronous and `--checkpoint-async`",
        "",
        f"`python benchmarks/checkpoint_stall.py --repeats {args.repeats} --steps {args.steps} "
        f"--every {args.every}` on this machine (2 shared cores): gpt2-small, one process, 4 "
        "windows of 64 tokens a step, 950 MB a checkpoint. Median seconds of each mode's runs "
        "(alternated). *stall*: the journal's `stall_s` (all of the write when synchronous, the "
        "copy to memory when asynchronous); *write*: a checkpoint's start to its end; *step "
        "after a checkpoint* / *other steps*: `step_s` (step 0 left out); *wall*: the command's.",
        "",
        "| mode | " + " | ".join(COLUMNS.values()) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    for mode in ("sync", "async"):
        mine = [r for r in rows if r["mode"] == mode]
        cells = [statistics.median(r[k] for r in mine) for k in COLUMNS]
        lines.append(f"| {mode} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    (RESULTS / "checkpoint_stall.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
