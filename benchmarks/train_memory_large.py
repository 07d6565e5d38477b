"""gpt2-large (774M parameters) on 4 processes of this machine: each rank's measured peak memory
against the planner's figure for its stage, and against one process training the whole model.

Both runs are ``trainplay train gpt2-large --data synthetic --seq-len 64 --global-batch 4
--optimizer adam --steps 3 --cluster local`` (the planner chooses the plan; ``local`` gives each of
``K`` processes 1/K of this machine's memory), with ``--nproc-per-node 4`` and then 1. fp32 Adam
keeps 16 bytes per parameter: 12.4 GB for the whole model, plus a second copy of the tied
50257 x 1280 embedding on the last stage when it is split. Short windows and batch keep the
activations small, so the figures are the training state's.

This machine has 24 GiB and no swap, shared with other work: before each run the script checks
that the memory available exceeds the planned need by 30% plus 1 GiB, and while it runs a watchdog
kills the run's process group if ``MemAvailable`` falls under 1 GiB.

Writes benchmarks/results/train_memory_large.{json,md}.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from trainplay.runtime.journal import read_journal

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ARGS = ["gpt2-large", "--data", "synthetic", "--seq-len", "64", "--global-batch", "4",
        "--optimizer", "adam", "--lr", "1e-4", "--steps", "3", "--cluster", "local",
        "--no-progress"]  # fmt: skip
GIB = 2**30
FLOOR_BYTES = GIB
"""The watchdog kills a run when the machine's available memory falls under this."""
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def planned_bytes(nproc: int) -> float:
    """The plan's total for ``nproc`` processes (``trainplay plan`` on the same cluster)."""
    from trainplay.hardware.local import local_cluster
    from trainplay.plan.api import plan_model
    from trainplay.runtime.nodes import present_cluster, this_node

    node = this_node(local_cluster(measure_if_missing=False), name="bench", nproc=nproc)
    cluster, _ = present_cluster([("bench", k, node) for k in range(nproc)])
    result = plan_model("gpt2-large", cluster, global_batch=4, optimizer="adam", seq_len=64)
    return sum(d["mem_used_bytes"] for d in result.devices)


def run(nproc: int, workdir: Path) -> dict:
    need = planned_bytes(nproc) * 1.3 + GIB
    if available_bytes() < need:
        raise SystemExit(
            f"{nproc} process(es) need about {need / GIB:.1f} GiB, {available_bytes() / GIB:.1f} "
            "GiB are available; run this when the machine is idle"
        )
    journal = workdir / f"journal-{nproc}.jsonl"
    command = [sys.executable, "-m", "trainplay", "train", *ARGS, "--nproc-per-node", str(nproc),
               "--journal", str(journal)]  # fmt: skip
    began = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, env=ENV, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    lowest = [available_bytes()]
    killed = threading.Event()

    def watch() -> None:
        while proc.poll() is None:
            lowest[0] = min(lowest[0], available_bytes())
            if lowest[0] < FLOOR_BYTES:
                killed.set()
                os.killpg(proc.pid, signal.SIGKILL)  # the workers die with their agent
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    output, _ = proc.communicate(timeout=3600)
    watcher.join()
    if killed.is_set() or proc.returncode != 0:
        raise SystemExit(
            f"{nproc} process(es): {'killed, memory ran low' if killed.is_set() else 'failed'}\n"
            f"{output[-3000:]}"
        )
    events = read_journal(journal)
    start = next(e for e in events if e["event"] == "start")
    return {
        "nproc": nproc,
        "plan_id": start["plan_id"],
        "stages": start["stages"],
        "replicas": start["replicas"],
        "schedule": start["schedule"],
        "microbatches": start["microbatches"],
        "memory": sorted((e for e in events if e["event"] == "memory"), key=lambda e: e["rank"]),
        "lowest_available_bytes": lowest[0],
        "seconds": time.monotonic() - began,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs = [run(4, Path(tmp)), run(1, Path(tmp))]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "train_memory_large.json").write_text(json.dumps(runs, indent=2))
    whole = runs[1]["memory"][0]
    lines = [
        "# gpt2-large on 4 processes: memory per rank against the plan",
        "",
        "`python benchmarks/train_memory_large.py` on this machine (24 GiB, 2 cores): "
        f"`trainplay train {' '.join(ARGS)} --nproc-per-node 4`, then 1. Peak: the rank's "
        "resident-set peak from just before its stage is materialised (`/proc/self/status` VmHWM, "
        "reset through `/proc/self/clear_refs`); plan: the planner's figure for its stage "
        "(parameters, gradients, Adam moments, one micro-batch's gradient of the largest "
        "parameter, activations in flight); capacity: `local` gives each of K processes 1/K of the "
        "machine's memory.",
        "",
        "| processes | rank | plan | peak (GiB) | plan (GiB) | peak / plan | capacity (GiB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        layout = f"{r['stages']} x {r['replicas']}, {r['schedule']}, M={r['microbatches']}"
        for e in r["memory"]:
            lines.append(
                f"| {r['nproc']} | {e['rank']} | {layout} | {e['peak_bytes'] / GIB:.2f} | "
                f"{e['plan_bytes'] / GIB:.2f} | {e['peak_bytes'] / e['plan_bytes']:.2f} | "
                f"{e['capacity_bytes'] / GIB:.1f} |"
            )
    split = runs[0]["memory"]
    largest = max(e["peak_bytes"] for e in split)
    lines += [
        "",
        f"Largest rank of the 4: {largest / GIB:.2f} GiB, {largest / whole['peak_bytes']:.0%} of "
        f"the {whole['peak_bytes'] / GIB:.2f} GiB one process needs for the whole model; the 4 "
        f"ranks together {sum(e['peak_bytes'] for e in split) / GIB:.2f} GiB (the last stage "
        "holds a second copy of the tied embedding with its gradient and Adam moments). Lowest "
        f"memory available on the machine during the runs: "
        f"{min(r['lowest_available_bytes'] for r in runs) / GIB:.1f} GiB.",
    ]
    (RESULTS / "train_memory_large.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
