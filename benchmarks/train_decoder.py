"""gpt2-small on text that ships with Python: the loss falls, and ``trainplay train`` keeps the pace
of a hand-written ``torch.distributed.pipelining`` script with the same split.

The data is ``text:`` of Python's own ``email`` package (its ``.py`` sources under the standard
library, 387 KB, read as bytes: vocabulary 256 of gpt2-small's 50257); windows of 128 tokens.
Both runs use one plan: 2 stages (embedding and layers 0-8 | layers 9-11 and the head, which holds
the tied copy of the embedding and the 50257-way projection, about as much compute as three
layers), GPipe, 4 micro-batches of 1 window, Adam (fused) at lr 6e-4, 2 processes of this machine
(gloo, one thread each).

1. Pace: ``trainplay train --plan`` against ``benchmarks/handwritten_decoder_pipeline.py`` under
   plain torchrun, alternately, ``--repeats`` times each, ``PACE_STEPS`` steps each. Tokens/s =
   tokens of the steps after ``WARMUP`` / their wall time (trainplay: the journal's step times,
   written by rank 0 when the last stage's loss arrives; hand-written: rank 0 after a barrier
   that ends each step). Goal: trainplay within 5%.
2. Curve: one ``trainplay train`` run of ``--steps`` steps; its journal's losses, plotted.

Writes benchmarks/results/train_decoder.{json,md} and train_decoder_loss.png.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from pace import pace_table  # benchmarks/pace.py: scripts here run as `python benchmarks/X.py`
from trainplay.plan.api import block_costs
from trainplay.plan.plan import Plan, PlanStage
from trainplay.runtime.journal import read_journal, trajectory

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MODEL, SEQ, BATCH, MICRO, LR, SPLIT = "gpt2-small", 128, 4, 4, 6e-4, 9
PACE_STEPS, WARMUP = 12, 2
TEXT = f"text:{sysconfig.get_paths()['stdlib']}/email"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def two_stage_plan() -> Plan:
    names = block_costs(MODEL, seq_len=SEQ).names
    cut = names.index(f"layers.{SPLIT}")
    return Plan(
        stages=(
            PlanStage(blocks=(0, cut - 1), devices=("d0",), batch_shares=(BATCH,)),
            PlanStage(blocks=(cut, len(names) - 1), devices=("d1",), batch_shares=(BATCH,)),
        ),
        microbatches=MICRO,
        schedule="gpipe",
        predicted_iteration_s=0.0,
        block_names=names,
    )


def tokens_per_s(ends: list[float]) -> float:
    return (len(ends) - WARMUP) * BATCH * SEQ / (ends[-1] - ends[WARMUP - 1])


def run_trainplay(workdir: Path, steps: int) -> list[dict]:
    journal = workdir / f"journal-{time.monotonic_ns()}.jsonl"
    command = [
        sys.executable, "-m", "trainplay", "train", MODEL, "--seq-len", str(SEQ), "--data", TEXT,
        "--global-batch", str(BATCH), "--steps", str(steps), "--optimizer", "adam",
        "--lr", str(LR), "--plan", str(workdir / "plan.json"), "--nproc-per-node", "2",
        "--journal", str(journal), "--no-progress",
    ]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, env=ENV, capture_output=True, timeout=3600)
    return read_journal(journal)


def run_handwritten(workdir: Path) -> list[float]:
    out = workdir / f"hand-{time.monotonic_ns()}.json"
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone",
        str(ROOT / "benchmarks" / "handwritten_decoder_pipeline.py"), "--split", str(SPLIT),
        "--data", TEXT, "--seq-len", str(SEQ), "--global-batch", str(BATCH),
        "--microbatches", str(MICRO), "--steps", str(PACE_STEPS), "--lr", str(LR),
        "--out", str(out),
    ]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, env=ENV, capture_output=True, timeout=1800)
    return json.loads(out.read_text())


def plot(losses: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=120)
    ax.plot(range(len(losses)), losses, lw=1.0, color="#1f77b4")
    ax.set_xlabel("step (4 windows of 128 bytes)")
    ax.set_ylabel("loss (cross-entropy, nats/token)")
    ax.set_title(
        "trainplay train gpt2-small on Python's email package, 2 stages on 2 CPU processes"
    )
    ax.title.set_fontsize(9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300, help="steps of the loss curve")
    args = parser.parse_args()
    plan = two_stage_plan()
    rows: dict[str, list[float]] = {"trainplay": [], "handwritten": []}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "plan.json").write_text(json.dumps(plan.to_dict()))
        for k in range(args.repeats):
            steps = [e for e in run_trainplay(workdir, PACE_STEPS) if e["event"] == "step"]
            rows["trainplay"].append(tokens_per_s([e["time_s"] for e in steps]))
            rows["handwritten"].append(tokens_per_s(run_handwritten(workdir)))
            print(f"repeat {k}: {rows['trainplay'][-1]:.1f} vs {rows['handwritten'][-1]:.1f} tok/s")
        began = time.monotonic()
        events = run_trainplay(workdir, args.steps)
        curve_s = time.monotonic() - began
    curve = trajectory(events)
    losses = [e["loss"] for e in curve]
    memory = [e for e in events if e["event"] == "memory"]
    tp, hand = statistics.median(rows["trainplay"]), statistics.median(rows["handwritten"])
    result = {
        "setup": {"model": MODEL, "data": TEXT, "seq_len": SEQ, "global_batch": BATCH,
                  "microbatches": MICRO, "lr": LR, "split_before": f"layers.{SPLIT}",
                  "pace_steps": PACE_STEPS, "warmup": WARMUP, "repeats": args.repeats,
                  "curve_steps": args.steps},
        "tokens_per_s": rows,
        "median": {"trainplay": tp, "handwritten": hand},
        "slowdown": hand / tp - 1,
        "losses": losses,
        "curve_seconds": curve_s,
        "memory": memory,
    }  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "train_decoder.json").write_text(json.dumps(result, indent=2))
    plot(losses, RESULTS / "train_decoder_loss.png")
    tail = statistics.mean(losses[-20:])
    lines = [
        "# trainplay train: gpt2-small on Python's own text",
        "",
        f"`python benchmarks/train_decoder.py --repeats {args.repeats} --steps {args.steps}` on "
        f"this machine: `{MODEL}`, `--seq-len {SEQ}`, `--data text:<stdlib>/email` (bytes), "
        f"global batch {BATCH} windows, 2 stages split before `layers.{SPLIT}`, GPipe, {MICRO} "
        f"micro-batches, Adam (fused) lr {LR}, 2 processes (gloo, one thread each).",
        "",
        f"## Pace ({PACE_STEPS} steps per run, tokens/s after {WARMUP} warm-up steps, alternated)",
        "",
        *pace_table(rows, "tokens/s", 1),
        "",
        f"trainplay takes {100 * (hand / tp - 1):+.1f}% time per token relative to the "
        "hand-written script (goal: at most +5%).",
        "",
        f"## Loss ({args.steps} steps, {curve_s / 60:.1f} min)",
        "",
        f"Loss {losses[0]:.2f} at step 0 (ln 50257 = 10.82), {losses[len(losses) // 2]:.2f} at "
        f"step {len(losses) // 2}, mean of the last 20 steps {tail:.2f} "
        "(![curve](train_decoder_loss.png)).",
        "",
        "| rank | peak (MiB) | plan (MiB) | peak / plan |",
        "|---|---|---|---|",
    ]
    for e in sorted(memory, key=lambda e: e["rank"]):
        lines.append(
            f"| {e['rank']} | {e['peak_bytes'] / 2**20:.0f} | {e['plan_bytes'] / 2**20:.0f} | "
            f"{e['peak_bytes'] / e['plan_bytes']:.2f} |"
        )
    (RESULTS / "train_decoder.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
