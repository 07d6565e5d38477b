"""Makespan over availability traces: the makespan-aware policy against always-reconfigure,
never-reconfigure and the offline optimum.

Each case is a job (model, catalog cluster, global batch, iterations) and an availability trace
(each device's window: devices joining and leaving, short and long windows). Four schedules of it,
all priced by one cost model: the planner's best plan on a set of devices
(``plan.api.window_plans``: ``plan.search`` over MD-Roofline block costs, ``plan/costs.py``) and
the same estimated reconfiguration (``makespan.estimate_reconfiguration``: checkpoint and reload
of the training state at 1 GB/s, 30 s restart, two iterations of warm-up):

- ``makespan-aware``: ``plan_over_windows`` (the makespan rule, what ``trainplay plan`` runs);
- ``always``: re-plan on all devices present at every join or leave;
- ``never``: keep the plan until a device it uses leaves;
- ``optimum``: ``plan.optimum.optimal_schedule``, dynamic programming over the trace (decision
  points = window starts and ends; choices = keep the plan, the best plan on any subset of the
  devices there, or wait), exact over that space (tests/unit/test_plan_optimum.py checks it
  against brute force).

Devices of one class (same node, type and speed: ``Device.klass``) are interchangeable for the
planner, so a set's plan is searched once per count of each class and mapped onto the set's ids.

Traces: hand-made shapes over each cluster's nodes (the later nodes join for long or short
windows, leave, join then leave; on one-node clusters, devices instead) at fractions of the job's
length on all devices (``H``) and of its reconfiguration cost (``R``), the issue's
``lab-windows.yaml`` as written, and seeded random ones (``random-sN``: each group from 0 or from
a uniform time in [0, 0.8H), until the end or for a log-uniform span in [R, 2H]; the first group
always stays from 0 so that the job can finish), the groups being the nodes and, in
``random-dev-sN`` on clusters of several nodes, each device on its own. Predictions of the cost
model, not measurements.

Run: ``flock /tmp/trainplay-cpu.lock python benchmarks/makespan.py``. Writes
``benchmarks/results/makespan.md`` and ``.json``.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path

from trainplay.hardware.local import resolve_cluster
from trainplay.plan.api import block_costs, window_plans
from trainplay.plan.costs import CostModel, Device, devices_of
from trainplay.plan.optimum import optimal_schedule
from trainplay.plan.search import SearchOptions
from trainplay.plan.windows import PlanFor, plan_over_windows

RESULTS = Path(__file__).parent / "results"
GOAL = 1.05
"""Issue 14: makespan-aware within 1.05x of the optimum on every trace."""
SEEDS = range(4)

JOBS = [  # (catalog cluster, model, dtype, global batch, sequence length, optimizer, hours on all)
    ("lab", "resnet50", "fp32", 256, None, "sgd", 4.0),
    ("lab", "gpt2-medium", "fp16", 32, 256, "adam", 2.0),
    ("4xT4", "resnet50", "fp32", 128, None, "sgd", 3.0),
    ("8xV100-16GB", "resnet50", "fp32", 256, None, "sgd", 1.0),
    ("4xRTX3090", "gpt2-medium", "fp16", 32, 256, "adam", 0.5),
    ("lab-windows", "llama-7b", "fp16", 32, 1024, "sgd", None),
]
LAB_WINDOWS_SAMPLES = 48_000
"""llama-7b on lab-windows: 1,500 iterations of 32 sequences (the cluster file's own windows; 2,000
until 2026-12-03, when the T4's sustained rate made them more than the windows hold)."""

Windows = dict[str, tuple[float, float | None]]


def symmetric(plans: PlanFor, devices: list[Device]) -> PlanFor:
    """``plans`` asked once per count of each device class, the answer mapped onto the ids."""
    classes: dict[tuple, list[str]] = {}
    for d in devices:
        classes.setdefault(d.klass, []).append(d.id)
    klass = {d.id: d.klass for d in devices}

    def plan_for(ids: frozenset[str]) -> tuple[float, frozenset[str]] | None:
        chosen = {k: sorted(i for i in ids if klass[i] == k) for k in classes}
        rename = {classes[k][n]: i for k, got in chosen.items() for n, i in enumerate(got)}
        found = plans(frozenset(rename))
        return None if found is None else (found[0], frozenset(rename[i] for i in found[1]))

    return plan_for


def groups_of(devices: list[Device]) -> list[list[str]]:
    """Nodes as the groups that come and go; on a one-node cluster, its devices one by one."""
    nodes: dict[str, list[str]] = {}
    for d in devices:
        nodes.setdefault(d.node, []).append(d.id)
    return list(nodes.values()) if len(nodes) > 1 else [[i] for i in nodes.popitem()[1]]


def shaped(groups: list[list[str]], h: float, r: float) -> dict[str, Windows]:
    """The hand-made traces: the first half of the groups from 0 to the end, the rest as named."""
    keep = max(1, len(groups) // 2)

    def trace(window: tuple[float, float | None]) -> Windows:
        out: Windows = {i: (0.0, None) for g in groups[:keep] for i in g}
        out.update({i: window for g in groups[keep:] for i in g})
        return out

    return {
        "join-long": trace((0.2 * h, None)),
        "join-short": trace((0.2 * h, 0.2 * h + 3 * r)),
        "join-medium": trace((0.2 * h, 0.2 * h + 30 * r)),
        "leave-early": trace((0.0, 0.1 * h)),
        "leave-late": trace((0.0, 0.7 * h)),
        "join-then-leave": trace((0.1 * h, 0.5 * h)),
    }


def random_trace(groups: list[list[str]], h: float, r: float, seed: int) -> Windows:
    rng = random.Random(seed)
    out: Windows = {i: (0.0, None) for i in groups[0]}
    for g in groups[1:]:
        start = 0.0 if rng.random() < 0.4 else rng.uniform(0, 0.8 * h)
        end = (
            None
            if rng.random() < 0.4
            else start + math.exp(rng.uniform(math.log(r), math.log(2 * h)))
        )
        out.update({i: (round(start), None if end is None else round(end)) for i in g})
    return out


def _run(policy: str, windows: Windows, iterations: int, plans: PlanFor, reconf) -> dict:
    t0 = time.perf_counter()
    if policy == "optimum":
        s = optimal_schedule(
            windows=windows, iterations=iterations, iteration_s_for=plans,
            reconfiguration_s_for=reconf,
        )  # fmt: skip
    else:
        s = plan_over_windows(
            windows=windows, iterations=iterations, iteration_s_for=plans,
            reconfiguration_s_for=reconf, policy=policy,
        )  # fmt: skip
    return {
        "makespan_s": s.makespan_s,
        "periods": [
            {
                "from_s": p.from_s,
                "until_s": p.until_s,
                "devices": len(p.devices),
                "iterations": p.iterations,
            }
            for p in s.periods
        ],
        "seconds": time.perf_counter() - t0,
    }


POLICIES = ("makespan", "always", "never", "optimum")


def main() -> None:
    rows = []
    started = time.perf_counter()
    for cluster_name, model, dtype, batch, seq, optimizer, hours in JOBS:
        spec = resolve_cluster(cluster_name)
        cm = CostModel(block_costs(model, dtype=dtype, seq_len=seq), spec, optimizer)
        devices = devices_of(spec, dtype)
        search_plans, reconf = window_plans(cm, devices, batch, SearchOptions())
        plans = symmetric(search_plans, devices)
        if hours is None:  # the cluster file's own windows
            traces = {"as-written": {d.id: d.window for d in devices}}
            iterations = math.ceil(LAB_WINDOWS_SAMPLES / batch)
        else:
            everyone = plans(frozenset(d.id for d in devices))
            assert everyone is not None, f"{model} must fit on all of {cluster_name}"
            iterations = math.ceil(hours * 3600 / everyone[0])
            h, r = iterations * everyone[0], reconf(everyone[0])
            groups = groups_of(devices)
            traces = shaped(groups, h, r)
            traces |= {f"random-s{s}": random_trace(groups, h, r, s) for s in SEEDS}
            if len(groups) < len(devices):  # and device by device
                ones = [[d.id] for d in devices]
                traces |= {f"random-dev-s{s}": random_trace(ones, h, r, s) for s in SEEDS}
        for trace, windows in traces.items():
            runs = {p: _run(p, windows, iterations, plans, reconf) for p in POLICIES}
            best = runs["optimum"]["makespan_s"]
            row = {
                "cluster": cluster_name,
                "model": model,
                "dtype": dtype,
                "optimizer": optimizer,
                "global_batch": batch,
                "iterations": iterations,
                "trace": trace,
                "windows": {i: list(w) for i, w in windows.items()},
                **{f"{p}_s": runs[p]["makespan_s"] for p in POLICIES},
                "ratio_to_optimum": runs["makespan"]["makespan_s"] / best,
                "runs": runs,
            }
            rows.append(row)
            print(
                f"{cluster_name:12s} {model:12s} {trace:16s} "
                + " ".join(f"{p} {runs[p]['makespan_s']:9.0f}" for p in POLICIES)
                + f"  x{row['ratio_to_optimum']:.4f}",
                flush=True,
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "makespan.json").write_text(json.dumps(rows, indent=2) + "\n")
    (RESULTS / "makespan.md").write_text(_markdown(rows, time.perf_counter() - started))


def _better(row: dict) -> bool:
    return row["makespan_s"] < min(row["always_s"], row["never_s"]) * (1 - 1e-9)


def _markdown(rows: list[dict], seconds: float) -> str:
    worst = max(rows, key=lambda r: r["ratio_to_optimum"])
    missed = [r for r in rows if r["ratio_to_optimum"] > GOAL]
    wins = [r for r in rows if _better(r)]
    out = [
        "# Makespan over availability traces (predicted, seconds)",
        "",
        f"Command: `flock /tmp/trainplay-cpu.lock python benchmarks/makespan.py` ({seconds:.0f} s). "
        "One cost model for all four: the planner's best plan on a device set (plan.search over "
        "MD-Roofline block costs, catalog peaks) and the estimated reconfiguration "
        "(makespan.estimate_reconfiguration). Traces and policies: the script's docstring.",
        "",
        f"- makespan-aware / optimum: worst {worst['ratio_to_optimum']:.4f}x "
        f"({worst['cluster']}, {worst['model']}, {worst['trace']}); goal <= {GOAL}x on every "
        f"trace: {'met' if not missed else f'NOT met on {len(missed)} of {len(rows)}'}.",
        f"- makespan-aware strictly better than both always- and never-reconfigure on "
        f"{len(wins)} of {len(rows)} traces.",
        "",
        "| cluster | model | trace | iterations | makespan-aware | always | never | optimum "
        "| aware / optimum |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        mark = " *" if _better(r) else ""
        out.append(
            f"| {r['cluster']} | {r['model']} | {r['trace']} | {r['iterations']:,} | "
            f"{r['makespan_s']:,.0f}{mark} | {r['always_s']:,.0f} | {r['never_s']:,.0f} | "
            f"{r['optimum_s']:,.0f} | {r['ratio_to_optimum']:.4f} |"
        )
    out += ["", "`*`: makespan-aware strictly better than both fixed policies.", ""]
    return "\n".join(out)


if __name__ == "__main__":
    main()
