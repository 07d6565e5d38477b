"""``trainplay train`` against a hand-written torch.distributed.pipelining script, and the
MD-Roofline prediction of the step time against the measured one.

1. Overhead: the same 2-stage GPipe split (4 micro-batches, global batch 64) of an 8-block MLP,
   same samples, same optimizer, on 2 processes of this machine (gloo): ``trainplay train --plan``
   against ``benchmarks/handwritten_pipeline.py`` under plain torchrun, alternately, ``--repeats``
   times each. Throughput = samples of the steps after ``WARMUP`` / their wall time (trainplay: the
   journal's step times, written by rank 0 after the last stage's loss arrives; hand-written:
   rank 0's time after a barrier that ends each step). Goal: trainplay at most 5% slower.
2. Prediction: ``trainplay train`` planning by itself on ``--cluster local`` (this machine's
   measured peaks) with 1 and 2 processes: the plan's predicted step time against the measured
   median step time.

Writes benchmarks/results/train_overhead.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pace import pace_table  # benchmarks/pace.py: scripts here run as `python benchmarks/X.py`
from trainplay.plan.api import block_costs
from trainplay.plan.plan import Plan, PlanStage
from trainplay.runtime.journal import read_journal

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MODEL, DATA = "benchmarks.train_models:mlp", "benchmarks.train_models:data"
BATCH, MICRO, STEPS, WARMUP = 64, 4, 60, 10
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def two_stage_plan() -> tuple[Plan, str]:
    sys.path.insert(0, str(ROOT))
    from benchmarks.train_models import WIDTH

    names = block_costs(MODEL, input_shape=(WIDTH,)).names
    cut = len(names) // 2
    plan = Plan(
        stages=(
            PlanStage(blocks=(0, cut - 1), devices=("d0",), batch_shares=(BATCH,)),
            PlanStage(blocks=(cut, len(names) - 1), devices=("d1",), batch_shares=(BATCH,)),
        ),
        microbatches=MICRO,
        schedule="gpipe",
        predicted_iteration_s=0.0,
        block_names=names,
    )
    return plan, names[cut]


def throughput(ends: list[float]) -> float:
    return (len(ends) - WARMUP) * BATCH / (ends[-1] - ends[WARMUP - 1])


def run_trainplay(workdir: Path, *extra: str) -> list[dict]:
    journal = workdir / f"journal-{time.monotonic_ns()}.jsonl"
    command = [
        sys.executable, "-m", "trainplay", "train", MODEL, "--data", DATA,
        "--global-batch", str(BATCH), "--steps", str(STEPS), "--journal", str(journal),
        "--no-progress", *extra,
    ]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, env=ENV, capture_output=True, timeout=600)
    return read_journal(journal)


def run_handwritten(workdir: Path, split: str) -> list[float]:
    out = workdir / f"hand-{time.monotonic_ns()}.json"
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--standalone", str(ROOT / "benchmarks" / "handwritten_pipeline.py"),
        "--split", split, "--global-batch", str(BATCH), "--microbatches", str(MICRO),
        "--steps", str(STEPS), "--out", str(out),
    ]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, env=ENV, capture_output=True, timeout=600)
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    plan, split = two_stage_plan()
    rows: dict[str, list[float]] = {"trainplay": [], "handwritten": []}
    predictions = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "plan.json").write_text(json.dumps(plan.to_dict()))
        fixed = ("--plan", str(workdir / "plan.json"), "--nproc-per-node", "2")
        for k in range(args.repeats):
            events = run_trainplay(workdir, *fixed, "--cluster", "local")
            steps = [e for e in events if e["event"] == "step"]
            rows["trainplay"].append(throughput([e["time_s"] for e in steps]))
            rows["handwritten"].append(throughput(run_handwritten(workdir, split)))
            print(
                f"repeat {k}: {rows['trainplay'][-1]:.0f} vs {rows['handwritten'][-1]:.0f} samples/s"
            )
        for nproc in (1, 2):
            events = run_trainplay(workdir, "--cluster", "local", "--nproc-per-node", str(nproc))
            start = next(e for e in events if e["event"] == "start")
            measured = statistics.median(e["step_s"] for e in events if e["event"] == "step")
            predictions.append(
                {
                    "nproc": nproc,
                    "plan_id": start["plan_id"],
                    "stages": start["stages"],
                    "replicas": start["replicas"],
                    "microbatches": start["microbatches"],
                    "predicted_s": start["predicted_iteration_s"],
                    "measured_median_s": measured,
                    "error": start["predicted_iteration_s"] / measured - 1,
                }
            )
    tp, hand = statistics.median(rows["trainplay"]), statistics.median(rows["handwritten"])
    result = {
        "setup": {"model": MODEL, "global_batch": BATCH, "microbatches": MICRO, "steps": STEPS,
                  "warmup": WARMUP, "split_at": split, "repeats": args.repeats},
        "throughput_samples_per_s": rows,
        "median": {"trainplay": tp, "handwritten": hand},
        "slowdown": hand / tp - 1,
        "prediction": predictions,
    }  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "train_overhead.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# trainplay train: overhead and step-time prediction",
        "",
        f"`python benchmarks/train_overhead.py --repeats {args.repeats}` on this machine "
        f"(2-stage GPipe, {MICRO} micro-batches, global batch {BATCH}, {STEPS} steps, "
        f"throughput after {WARMUP} warm-up steps, 2 processes, gloo).",
        "",
        *pace_table(rows, "samples/s", 0),
        "",
        f"Median throughput: trainplay {tp:.0f}, hand-written {hand:.0f} samples/s; trainplay "
        f"takes {100 * (hand / tp - 1):+.1f}% time per sample relative to the hand-written "
        "script (goal: at most +5%).",
        "",
        "## Predicted against measured step time (`--cluster local`, plans trainplay chose)",
        "",
        "| processes | plan | stages x replicas, M | predicted (ms) | measured median (ms) | error |",
        "|---|---|---|---|---|---|",
    ]
    for p in predictions:
        lines.append(
            f"| {p['nproc']} | {p['plan_id']} | {p['stages']} x {p['replicas']}, "
            f"{p['microbatches']} | {1e3 * p['predicted_s']:.2f} | "
            f"{1e3 * p['measured_median_s']:.2f} | {100 * p['error']:+.1f}% |"
        )
    (RESULTS / "train_overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
