"""Recovery time: a node killed with SIGKILL -> the first training step after the restore.

Three one-process nodes on this machine (``--nnodes 2:3``, rendezvous on 127.0.0.1), the setting
of the leave test (tests/integration/test_train_elastic.py): once step 12 is journaled the third
node (agent and worker) is killed; the time from the kill to the end of the first step after the
restore is read from the journal. ``--runs`` runs (median reported), plus the journal's own
``recovery_s`` (from the agent's detection of the failure).

Baseline, same run: plain torchrun with its default rendezvous settings running a plain DDP
loop (benchmarks/plain_ddp.py) on three nodes, one killed the same way; the time from the kill to
the first step of the restarted worker group (``--baseline-runs``; 0 skips it). There the
killed node's worker is killed too: torchrun starts workers in sessions of their own, and a worker
that outlives its agent keeps training as if nothing happened (trainplay's workers die with their
agent).

Writes benchmarks/results/train_recovery.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.elastic import SLOW_CLUSTER, free_port, nodes, wait_for  # noqa: E402

from trainplay.runtime.journal import read_journal  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
KILL_AT_STEP = 12


def trainplay_run(workdir: Path) -> dict:
    port = free_port()
    journal = workdir / "journal.jsonl"
    args = [
        "tests.data.tiny_models:deep_mlp", "--data", "tests.data.datasets:paced",
        "--global-batch", "24", "--steps", "100", "--checkpoint-dir", str(workdir / "ckpt"),
        "--checkpoint-every", "5", "--journal", str(journal), "--cluster", str(SLOW_CLUSTER),
        "--nnodes", "2:3", "--rdzv-endpoint", f"127.0.0.1:{port}", "--run-id", "bench",
        "--no-progress",
    ]  # fmt: skip
    with nodes(workdir, args) as job:
        job.start_host(port)
        job.start()
        job.start()
        seen = wait_for(journal, lambda e: e["event"] == "step" and e["step"] >= KILL_AT_STEP, 180)
        if seen is None or seen["world_size"] != 3:
            raise RuntimeError(f"the job did not reach step {KILL_AT_STEP} on 3 nodes")
        killed_at = time.time()
        job.kill(2)
        codes = [job.wait(k, 300) for k in (0, 1)]
    events = read_journal(journal)
    restore = next(e for e in events if e["event"] == "restore")
    first = next(
        e for e in events if e["event"] == "step" and e["time_s"] > restore["time_s"] - 1
        and e["step"] == restore["step"]
    )  # fmt: skip
    return {
        "kill_to_first_step_s": first["time_s"] - killed_at,
        "journal_recovery_s": restore["recovery_s"],
        "restored_step": restore["step"],
        "killed_after_step": seen["step"],
        "exit_codes": codes,
    }


def baseline_run(workdir: Path) -> dict:
    port = free_port()
    log = workdir / "steps.jsonl"
    args = [
        "--nnodes", "2:3", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "base", "--max-restarts", "3",
        str(ROOT / "benchmarks" / "plain_ddp.py"), "4000", str(log),
    ]  # fmt: skip
    with nodes(workdir, args, program=["-m", "torch.distributed.run"]) as job:
        job.start_host(port)
        job.start()
        job.start()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            lines = log.read_text().splitlines() if log.exists() else []
            if len(lines) > 20 and json.loads(lines[-1])["world"] == 3:
                break
            time.sleep(0.05)
        killed_at = time.time()
        job.kill(2, workers=True)  # plain torchrun's worker would outlive its agent
        deadline = time.monotonic() + 300
        resumed = None
        while time.monotonic() < deadline and resumed is None:
            for line in log.read_text().splitlines():
                entry = json.loads(line)
                if entry["restart"] > 0 and entry["t"] > killed_at:
                    resumed = entry
                    break
            time.sleep(0.1)
    if resumed is None:
        return {"kill_to_first_step_s": None, "note": "did not resume within 300 s"}
    return {"kill_to_first_step_s": resumed["t"] - killed_at, "world": resumed["world"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline-runs", type=int, default=1)
    args = parser.parse_args()
    runs, baseline = [], []
    for k in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(trainplay_run(Path(tmp)))
        print(f"trainplay run {k}: {runs[-1]}", flush=True)
    for k in range(args.baseline_runs):
        with tempfile.TemporaryDirectory() as tmp:
            baseline.append(baseline_run(Path(tmp)))
        print(f"plain torchrun run {k}: {baseline[-1]}", flush=True)
    median = statistics.median(r["kill_to_first_step_s"] for r in runs)
    detected = statistics.median(r["journal_recovery_s"] for r in runs)
    base = [b["kill_to_first_step_s"] for b in baseline if b["kill_to_first_step_s"] is not None]
    result = {"trainplay": runs, "plain_torchrun_defaults": baseline,
              "median_kill_to_first_step_s": median, "median_journal_recovery_s": detected}  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "train_recovery.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# Recovery time after losing a node",
        "",
        f"`python benchmarks/train_recovery.py --runs {args.runs} --baseline-runs "
        f"{args.baseline_runs}` on this machine: three one-process nodes on localhost; after "
        f"step {KILL_AT_STEP} the third node's agent is killed with SIGKILL (trainplay's worker "
        "dies with it; plain torchrun's worker is killed too, or it would train on).",
        "",
        "| run | kill -> first step after restore (s) | journal recovery_s (detection -> step) | restored step |",
        "|---|---|---|---|",
    ]
    for k, r in enumerate(runs):
        lines.append(
            f"| {k} | {r['kill_to_first_step_s']:.2f} | {r['journal_recovery_s']:.2f} | "
            f"{r['restored_step']} |"
        )
    lines += [f"| **median** | **{median:.2f}** | **{detected:.2f}** | |", ""]
    for k, b in enumerate(baseline):
        shown = (
            "did not resume in 300 s"
            if b["kill_to_first_step_s"] is None
            else (f"{b['kill_to_first_step_s']:.1f} s")
        )
        lines.append(f"Plain torchrun, default rendezvous settings, plain DDP, run {k}: {shown}.")
    if base:
        lines.append(f"\nMedian baseline: {statistics.median(base):.1f} s.")
    (RESULTS / "train_recovery.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
