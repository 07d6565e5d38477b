"""Faults a long job meets, measured: resuming past a damaged checkpoint, and the checkpoint stall.

1. **Resume per damage kind.** One ``trainplay train`` node (the single-node job of
   tests/integration/test_train_damaged.py: deep_mlp on paced data, 24 samples a step, a
   checkpoint every 5 steps) trains 20 steps; then, per kind, a copy of its checkpoints has the
   newest one left intact or damaged (a shard cut to half, ``.metadata`` overwritten with garbage
   of its size, ``manifest.json`` removed) and the job is run on to 30 steps. Reported per run:
   the seconds from the command's start to the end of the first step after the restore, the
   seconds the restore itself logged between the start line and that step, the step restored and
   the steps redone (``done.steps_redone``).
2. **Checkpoint stall.** In one process, the time training waits for a checkpoint of a state of
   N MiB of fp32 tensors: trainplay's synchronous save (DCP's ``save``, then ``trainplay.json``,
   the manifest's SHA-256 of every file, fsyncs and the rename), the manifest's share of it, and
   ``torch.distributed.checkpoint.async_save``'s blocking part (staging a copy in memory) against
   the time until its background write ends (``trainplay train --checkpoint-async`` uses it; its
   stall in training: benchmarks/checkpoint_stall.py).

Writes benchmarks/results/train_faults.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402
from tests.integration.test_train_damaged import (  # noqa: E402
    FIRST,
    THEN,
    garbage_metadata,
    no_manifest,
    train,
    truncate_shard,
)
from torch.distributed.checkpoint.filesystem import FileSystemWriter  # noqa: E402

from trainplay.runtime import checkpoint, manifest  # noqa: E402
from trainplay.runtime.journal import read_journal  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
KINDS = {
    "intact": lambda path: None,
    "truncated shard": truncate_shard,
    "garbage .metadata": garbage_metadata,
    "no manifest": no_manifest,
}


def resume_run(first: Path, kind: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp_text:
        tmp = Path(tmp_text)
        shutil.copytree(first / "ckpt", tmp / "ckpt")
        KINDS[kind](tmp / "ckpt" / f"step-{FIRST:08d}")
        began = time.time()
        done = train(tmp, THEN)
        if done.returncode != 0:
            raise RuntimeError(f"{kind}: exit {done.returncode}\n{done.stderr}")
        events = read_journal(tmp / "journal.jsonl")
        start = next(e for e in events if e["event"] == "start")
        restore = next(e for e in events if e["event"] == "restore")
        first_step = next(e for e in events if e["event"] == "step")
        return {
            "kind": kind,
            "launch_to_first_step_s": round(first_step["time_s"] - began, 3),
            "start_to_first_step_s": round(first_step["time_s"] - start["time_s"], 3),
            "restored_step": restore["step"],
            "skipped": [s["why"] for s in restore["skipped"]],
            "steps_redone": FIRST - restore["step"],  # trained by the first run, then again
        }


def _state(mib: int) -> dict[str, torch.Tensor]:
    tensors, per = {}, 4 * 2**20  # 4 MiB tensors, as a model's larger weights
    generator = torch.Generator().manual_seed(0)
    for k in range(max(1, mib // 4)):
        tensors[f"model.w{k}"] = torch.randn(per // 4, generator=generator)
    return tensors


def _info(step: int) -> checkpoint.CheckpointInfo:
    return checkpoint.CheckpointInfo(
        model="bench", block_names=("0",), step=step, samples_seen=step, global_batch=1, seed=0,
        optimizer="sgd", plan_id="bench", devices=("d0",), world_size=1, written_at_s=time.time(),
    )  # fmt: skip


def stall_run(mib: int, repeats: int) -> dict:
    state = _state(mib)
    sync, seal, async_block, async_total = [], [], [], []
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp_text:  # the disk checkpoints go to
        tmp = Path(tmp_text)
        for k in range(repeats):
            t0 = time.perf_counter()
            path = checkpoint.save(tmp / "sync", state, _info(k + 1))
            sync.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            manifest.seal(path)  # what the manifest alone costs (the same files again)
            seal.append(time.perf_counter() - t0)
            target = tmp / f"async-{k}"
            t0 = time.perf_counter()
            future = dcp.async_save(
                dict(state), storage_writer=FileSystemWriter(target), no_dist=True
            )
            async_block.append(time.perf_counter() - t0)
            future.result()
            async_total.append(time.perf_counter() - t0)
            subprocess.run(["sync"], check=False)
    med = statistics.median
    return {
        "state_mib": mib,
        "sync_save_s": round(med(sync), 4),
        "manifest_s": round(med(seal), 4),
        "async_save_blocking_s": round(med(async_block), 4),
        "async_save_total_s": round(med(async_total), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="reruns per damage kind")
    parser.add_argument("--sizes-mib", default="16,256", help="state sizes for the stall")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    resumes = []
    with tempfile.TemporaryDirectory() as first_text:
        first = Path(first_text)
        done = train(first, FIRST)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        for _ in range(args.runs):
            for kind in KINDS:
                resumes.append(resume_run(first, kind))
                print(resumes[-1], flush=True)
    stalls = [stall_run(int(m), args.repeats) for m in args.sizes_mib.split(",")]
    for row in stalls:
        print(row, flush=True)
    result = {"resume": resumes, "stall": stalls}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "train_faults.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# Faults: resuming past a damaged checkpoint, and the checkpoint stall",
        "",
        f"`python benchmarks/train_faults.py --runs {args.runs} --sizes-mib {args.sizes_mib} "
        f"--repeats {args.repeats}` on this machine (2 shared cores).",
        "",
        f"## Resume to step {THEN} after {FIRST} steps, newest checkpoint (step {FIRST}) damaged",
        "",
        "Median of the runs per kind. *launch -> first step*: from running `trainplay train` to "
        "the end of the first step after the restore (interpreter start, planning, rendezvous, "
        "verification, restore); *start -> first step*: from the workers' start line.",
        "",
        "| newest checkpoint | launch -> first step (s) | start -> first step (s) | restored step "
        "| steps redone | reason given |",
        "|---|---|---|---|---|---|",
    ]
    for kind in KINDS:
        rows = [r for r in resumes if r["kind"] == kind]
        lines.append(
            f"| {kind} | {statistics.median(r['launch_to_first_step_s'] for r in rows):.2f} | "
            f"{statistics.median(r['start_to_first_step_s'] for r in rows):.3f} | "
            f"{rows[0]['restored_step']} | {rows[0]['steps_redone']} | "
            f"{'; '.join(rows[0]['skipped']) or '-'} |"
        )
    lines += [
        "",
        "## Checkpoint stall (one process, this machine's disk)",
        "",
        "Median seconds. *sync save*: trainplay's `checkpoint.save` (DCP save, info file, "
        "manifest, fsyncs, rename), all of which training waits for; *manifest*: the SHA-256 "
        "manifest's part of it; *async_save blocking*: what training would wait for with "
        "`torch.distributed.checkpoint.async_save` (staging a copy in memory); *async total*: "
        "until its background write ends.",
        "",
        "| state MiB | sync save | manifest | async_save blocking | async total |",
        "|---|---|---|---|---|",
    ]
    for row in stalls:
        lines.append(
            f"| {row['state_mib']} | {row['sync_save_s']} | {row['manifest_s']} | "
            f"{row['async_save_blocking_s']} | {row['async_save_total_s']} |"
        )
    (RESULTS / "train_faults.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
