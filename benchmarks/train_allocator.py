"""What the workers' allocator setting does to ``trainplay train``'s steps on this machine.

``trainplay train`` gives its workers glibc tunables that keep freed host memory
(:mod:`trainplay.hardware.allocator`); ``TRAINPLAY_MALLOC=system`` leaves glibc as shipped. Here
the same plans run under both, alternated (``kept`` first in even rounds, ``system`` first in
odd ones), ``--repeats`` times each: resnet18 at 32x32 pixels (global batch 32) on one process,
two data-parallel replicas and two GPipe stages of 4 micro-batches, and gpt2-style decoder of
``benchmarks/hetero_measured.py`` on two replicas. Per run: the median step after the warm-up
steps of its journal, and the minor page faults of its processes per step (``getrusage`` of the
children, over the whole run, start-up included); per arm: the median over the repeats.

    python benchmarks/train_allocator.py --repeats 3

Writes ``benchmarks/results/train_allocator.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.train_plan_choice import MODELS, _alternatives  # noqa: E402

from trainplay.runtime.journal import read_journal  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
STEPS, WARMUP = 40, 5
ARMS = {"kept": {"TRAINPLAY_MALLOC": "retained"}, "system": {"TRAINPLAY_MALLOC": "system"}}


def cases(workdir: Path) -> list[tuple[str, list[str]]]:
    """(label, ``trainplay train`` arguments) of each case."""
    model, data, extra, batch = MODELS["resnet18@32"]
    base = [model, "--data", data, *extra, "--global-batch", str(batch)]
    plans = dict(_alternatives(model, extra, batch))
    out = [("resnet18@32, 1 process", [*base, "--nproc-per-node", "1"])]
    for label, key in (
        ("resnet18@32, 2 replicas", "2 replicas, even shares"),
        ("resnet18@32, 2 stages x 4 micro-batches", "2 stages, GPipe, 4 micro-batches"),
    ):
        path = workdir / f"{key.replace(' ', '_').replace(',', '')}.json"
        path.write_text(json.dumps(plans[key]))
        out.append((label, [*base, "--nproc-per-node", "2", "--plan", str(path)]))
    decoder = ["benchmarks.hetero_measured:decoder", "--seq-len", "32", "--global-batch", "64"]
    out.append(("decoder, 2 processes", [*decoder, "--nproc-per-node", "2"]))
    return out


def run(workdir: Path, args: list[str], env: dict[str, str]) -> dict[str, float]:
    journal = workdir / f"journal-{time.monotonic_ns()}.jsonl"
    command = [
        sys.executable, "-m", "trainplay", "train", *args, "--steps", str(STEPS),
        "--journal", str(journal), "--no-progress", "--cluster", "local",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    subprocess.run(
        command, check=True, cwd=ROOT, capture_output=True, timeout=1200,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )  # fmt: skip
    faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before
    steps = [e["step_s"] for e in read_journal(journal) if e["event"] == "step"][WARMUP:]
    return {"step_s": statistics.median(steps), "faults_per_step": faults / STEPS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for label, train_args in cases(workdir):
            got: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
            for k in range(args.repeats):
                for arm in list(ARMS) if k % 2 == 0 else list(ARMS)[::-1]:
                    got[arm].append(run(workdir, train_args, ARMS[arm]))
            row = {"case": label, "runs": got}
            for arm in ARMS:
                row[f"{arm}_s"] = statistics.median(r["step_s"] for r in got[arm])
                row[f"{arm}_faults"] = statistics.median(r["faults_per_step"] for r in got[arm])
            rows.append(row)
            print(label, {k: v for k, v in row.items() if k != "runs"}, flush=True)
    lines = [
        "# What the workers' allocator setting does to `trainplay train`",
        "",
        f"`python benchmarks/train_allocator.py --repeats {args.repeats}` on this machine: each "
        f"case trained {STEPS} steps under trainplay's default (freed memory kept) and under "
        "`TRAINPLAY_MALLOC=system` (glibc as shipped), alternated; median step after "
        f"{WARMUP} warm-up steps, medians over the repeats. Faults: minor page faults of all "
        "the run's processes per step, start-up included.",
        "",
        "| case | kept: step ms | system: step ms | system / kept | kept: faults per step "
        "| system: faults per step | step ms of each run (kept; system) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        each = "; ".join(
            " / ".join(f"{1e3 * x['step_s']:.1f}" for x in r["runs"][arm]) for arm in ARMS
        )
        lines.append(
            f"| {r['case']} | {1e3 * r['kept_s']:.1f} | {1e3 * r['system_s']:.1f} | "
            f"{r['system_s'] / r['kept_s']:.2f}x | {r['kept_faults']:,.0f} | "
            f"{r['system_faults']:,.0f} | {each} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "train_allocator.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "train_allocator.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
