"""``trainplay train``'s choice of plan on this machine: its predicted step time against the
measured one, and whether the plan it prefers also measures fastest.

For each model, with 1 and 2 processes: ``trainplay train --cluster local`` plans by itself; its
journal's ``start`` event carries ``predicted_step_s``, and the median of its steps after
``WARMUP`` is the measured time. With 2 processes the plans it ranked below its choice are run
too (``--plan``, priced by the same cost model on the same devices): one process with the other
idle, two data-parallel replicas, two pipeline stages (GPipe, 2 and 4 micro-batches). The plan
trainplay prefers should measure no slower than any it ranked below.

Every plan runs twice, back to back: with the host allocator setting ``trainplay train`` gives
its workers by default (freed memory kept, :mod:`trainplay.runtime.allocator`), which the
prediction is compared with, and with glibc's allocator as shipped (``TRAINPLAY_MALLOC=system``),
whose measured time is shown beside it.

Run alone on an idle machine: ``python benchmarks/train_plan_choice.py``. Writes
``benchmarks/results/train_plan_choice.{md,json}``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainplay.hardware.local import local_cluster  # noqa: E402
from trainplay.plan.api import block_costs, make_plan  # noqa: E402
from trainplay.plan.baselines import fixed_layout  # noqa: E402
from trainplay.plan.costs import CostModel, devices_of  # noqa: E402
from trainplay.plan.partition import greedy_bounds  # noqa: E402
from trainplay.runtime.journal import read_journal  # noqa: E402
from trainplay.runtime.nodes import present_cluster, this_node  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
STEPS, WARMUP = 30, 5
MODELS = {  # name -> (model, data, extra flags, global batch)
    "mlp": ("benchmarks.train_models:mlp", "benchmarks.train_models:data", [], 64),
    "resnet18@32": ("resnet18", "synthetic", ["--input-shape", "3,32,32", "--classes", "10"], 32),
}


ARMS = {"retained": {}, "system": {"TRAINPLAY_MALLOC": "system"}}
"""Allocator settings each plan runs with: trainplay's default first, then glibc as shipped."""


def _train_arms(workdir: Path, model: str, data: str, extra: list[str], batch: int, *flags: str):
    """The start event of the default arm and the measured median step per arm."""
    measured, starts = {}, {}
    for arm, env in ARMS.items():
        starts[arm], measured[arm] = _train(workdir, model, data, extra, batch, *flags, env=env)
    return starts["retained"], measured


def _train(
    workdir: Path, model: str, data: str, extra: list[str], batch: int, *flags: str,
    env: dict[str, str],
):  # fmt: skip
    journal = workdir / f"journal-{time.monotonic_ns()}.jsonl"
    command = [
        sys.executable, "-m", "trainplay", "train", model, "--data", data, *extra,
        "--global-batch", str(batch), "--steps", str(STEPS), "--journal", str(journal),
        "--no-progress", "--cluster", "local", *flags,
    ]  # fmt: skip
    subprocess.run(
        command, check=True, cwd=ROOT, env={**ENV, **env}, capture_output=True, timeout=1200
    )
    events = read_journal(journal)
    start = next(e for e in events if e["event"] == "start")
    steps = [e["step_s"] for e in events if e["event"] == "step"][WARMUP:]
    return start, statistics.median(steps)


def _alternatives(model: str, extra: list[str], batch: int) -> list[tuple[str, dict]]:
    """The two-process plans, priced on the devices the runtime sees with two processes."""
    shape = tuple(int(x) for x in extra[1].split(",")) if extra else None
    if shape is None:
        from benchmarks.train_models import WIDTH

        shape = (WIDTH,)
    node = this_node(local_cluster(2, show_progress=False), name="bench", nproc=2)
    cluster, _ = present_cluster([("bench", 0, node), ("bench", 1, node)])
    costs = block_costs(model, input_shape=shape)
    cm = CostModel(costs, cluster, "sgd")
    d0, d1 = devices_of(cluster, "fp32")
    n = costs.n
    out = []
    one = fixed_layout(cm, ((d0,),), (0, n), (batch,), "gpipe", [1])
    out.append(("1 process (other idle)", one))
    two = fixed_layout(cm, ((d0,), (d1,)), (0, n), (batch // 2, batch // 2), "gpipe", [1])
    out.append(("2 replicas, even shares", two))
    for mb in (2, 4):
        bounds = greedy_bounds(cm, ((d0, d1),), mb, (batch // mb,), "gpipe")
        out.append((f"2 stages, GPipe, {mb} micro-batches", fixed_layout(
            cm, ((d0, d1),), bounds, (batch,), "gpipe", [mb])))  # fmt: skip
    plans = []
    for name, got in out:
        if isinstance(got, str):
            continue
        plan, _ = make_plan(cm, got[1], costs.names)
        plans.append((name, plan.to_dict()))
    return plans


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for name, (model, data, extra, batch) in MODELS.items():
            for nproc in (1, 2):
                start, measured = _train_arms(
                    workdir, model, data, extra, batch, "--nproc-per-node", str(nproc)
                )
                rows.append(
                    {
                        "model": name, "processes": nproc, "plan": "trainplay's choice",
                        "plan_id": start["plan_id"], "stages": start["stages"],
                        "replicas": start["replicas"], "microbatches": start["microbatches"],
                        "predicted_s": start["predicted_step_s"], "measured_s": measured["retained"],
                        "system_malloc_s": measured["system"], "chosen": True,
                    }
                )  # fmt: skip
                print(rows[-1], flush=True)
            for label, plan in _alternatives(model, extra, batch):
                path = workdir / f"plan-{time.monotonic_ns()}.json"
                path.write_text(json.dumps(plan))
                start, measured = _train_arms(
                    workdir, model, data, extra, batch, "--nproc-per-node", "2", "--plan", str(path)
                )
                rows.append(
                    {
                        "model": name, "processes": 2, "plan": label, "plan_id": start["plan_id"],
                        "stages": start["stages"], "replicas": start["replicas"],
                        "microbatches": start["microbatches"],
                        "predicted_s": plan["predicted_iteration_s"], "measured_s": measured["retained"],
                        "system_malloc_s": measured["system"], "chosen": False,
                    }
                )  # fmt: skip
                print(rows[-1], flush=True)
    for r in rows:
        r["error"] = (r["predicted_s"] - r["measured_s"]) / r["measured_s"]
    inversions = []
    for model in MODELS:
        two = [r for r in rows if r["model"] == model and r["processes"] == 2]
        chosen = next(r for r in two if r["chosen"])
        for r in two:
            ranked_below = (
                r["predicted_s"] > chosen["predicted_s"] and r["plan_id"] != chosen["plan_id"]
            )
            if ranked_below and r["measured_s"] < chosen["measured_s"]:
                inversions.append((model, r["plan"], r["measured_s"], chosen["measured_s"]))
    chosen_rows = [r for r in rows if r["chosen"]]
    lines = [
        "# trainplay train's plan choice: predicted against measured step time",
        "",
        f"`python benchmarks/train_plan_choice.py` on this machine ({STEPS} steps, median after "
        f"{WARMUP} warm-up steps; `--cluster local`: this machine's profile for that many processes). "
        "Measured: with the workers' default allocator setting (freed memory kept); beside it, "
        "the same plan run next with glibc's allocator as shipped (`TRAINPLAY_MALLOC=system`).",
        "",
        "Plans trainplay chose: predicted against measured median step time, "
        + "; ".join(
            f"{r['model']} x{r['processes']}: {1e3 * r['predicted_s']:.2f} vs "
            f"{1e3 * r['measured_s']:.2f} ms ({100 * r['error']:+.1f}%)"
            for r in chosen_rows
        )
        + ".",
        "",
        (
            "Plans it ranked below its choice that measured faster: none."
            if not inversions
            else "Plans it ranked below its choice that measured faster: "
            + "; ".join(
                f"{m}: {p} ({1e3 * a:.2f} vs {1e3 * b:.2f} ms)" for m, p, a, b in inversions
            )
        ),
        "",
        "| model | processes | plan | stages x replicas, M | predicted ms | measured ms | error "
        "| measured ms, glibc as shipped |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = " (chosen)" if r["chosen"] else ""
        lines.append(
            f"| {r['model']} | {r['processes']} | {r['plan']}{mark} | {r['stages']} x "
            f"{r['replicas']}, {r['microbatches']} | {1e3 * r['predicted_s']:.2f} | "
            f"{1e3 * r['measured_s']:.2f} | {100 * r['error']:+.1f}% | "
            f"{1e3 * r['system_malloc_s']:.2f} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "train_plan_choice.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "train_plan_choice.json").write_text(
        json.dumps({"rows": rows, "inversions": inversions}, indent=2) + "\n"
    )
    print("\n".join(lines[:8]))


if __name__ == "__main__":
    main()
