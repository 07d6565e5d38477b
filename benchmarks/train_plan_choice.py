"""``trainplay train``'s choice of plan on this machine: its predicted step time against the
measured one, and whether the plan it prefers also measures fastest.

For each model, with 1 and 2 processes: ``trainplay train --cluster local`` plans by itself; its
journal's ``start`` event carries ``predicted_step_s``, and the median of its steps after
``WARMUP`` is the measured time. With 2 processes the plans it ranked below its choice are run
too (``--plan``, priced by the same cost model on the same devices): one process with the other
idle, two data-parallel replicas, two pipeline stages (GPipe, 2 and 4 micro-batches). The plan
trainplay prefers should measure no slower than any it ranked below. These plans name this node as
the runtime does (its host name), so one of them that is the plan trainplay chose has the choice's
plan id, is marked so, and is not counted as ranked below it.

Every plan runs ``--repeats`` times (3), in rounds (each round runs every plan once, in the same
order), and its measured time is the median of its runs' medians, with their range beside it: this
shared VM's speed drifts over minutes (the same plan has measured 17-30% apart within one run), and
rounds spread the drift over all plans alike. Before each run the machine's drift reference
(:mod:`trainplay.hardware.drift`) is timed against the profile's, so each figure says how fast the
machine ran against when its profile was measured, and the CPUs' placement
(:mod:`trainplay.hardware.placement`) is probed before and after it (``mixed`` where the two
differ). ``trainplay train`` prices a run with the profile of the placement it probes as it
starts, with what taking a batch of its data set cost as it measured it before planning
(:mod:`trainplay.runtime.fetch`), and prices a ``--plan`` file again on the devices present, so a
plan's prediction is the median of its runs' ``predicted_step_s``.

Each run keeps its ranks' timers (the median of each after the warm-up) beside the ``start``
event's price of that phase and the placement whose profile priced it, and the chosen plans' runs
are tabled phase by phase, so a miss can be placed: forward, backward, optimizer, taking the
batch, all-reduce, or the schedule's own work and waiting (``wait``, which no phase prices).

Run alone on an idle machine: ``python benchmarks/train_plan_choice.py``. Writes
``benchmarks/results/train_plan_choice.{md,json}``.
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

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainplay.hardware.drift import reference_rates  # noqa: E402
from trainplay.hardware.local import cached_placements, load_cached, local_cluster  # noqa: E402
from trainplay.hardware.placement import one_of, placement_now  # noqa: E402
from trainplay.plan.api import block_costs, make_plan  # noqa: E402
from trainplay.plan.baselines import fixed_layout  # noqa: E402
from trainplay.plan.costs import CostModel, devices_of  # noqa: E402
from trainplay.plan.partition import greedy_bounds  # noqa: E402
from trainplay.runtime.journal import read_journal  # noqa: E402
from trainplay.runtime.measured import summary  # noqa: E402
from trainplay.runtime.nodes import node_name, present_cluster, this_node  # noqa: E402
from trainplay.runtime.timers import FIELDS  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
STEPS, WARMUP = 30, 5
MODELS = {  # name -> (model, data, extra flags, global batch)
    "mlp": ("benchmarks.train_models:mlp", "benchmarks.train_models:data", [], 64),
    "resnet18@32": ("resnet18", "synthetic", ["--input-shape", "3,32,32", "--classes", "10"], 32),
}


def _drift(nproc: int) -> dict[str, float]:
    """How many times faster than when its ``nproc``-worker profile was measured the machine's
    drift reference runs now (raw ratios, no tolerance)."""
    then = load_cached(nproc).reference
    now = reference_rates()
    return {key: now[key] / then[key] for key in ("compute", "memory")}


def _profiles() -> dict[int, str]:
    """Which cached profile prices each process count: when it was measured, and whether it is
    ``hw measure --quick``'s short one (what a first ``--cluster local`` measures) or the full
    sweep; each run prices its plan with its placement's, so the placements' are listed."""
    out = {}
    for nproc in (1, 2):
        said = []
        for placement in cached_placements(nproc) or [None]:
            m = load_cached(nproc, placement=placement)
            if m is not None:
                kind = "quick" if m.quick else "full sweep"
                said.append(f"{placement or 'any placement'}: {m.measured_at}, {kind}")
        out[nproc] = "; ".join(said) or "none cached"
    return out


def _train(workdir: Path, model: str, data: str, extra: list[str], batch: int, *flags: str):
    journal = workdir / f"journal-{time.monotonic_ns()}.jsonl"
    command = [
        sys.executable, "-m", "trainplay", "train", model, "--data", data, *extra,
        "--global-batch", str(batch), "--steps", str(STEPS), "--journal", str(journal),
        "--no-progress", "--cluster", "local", *flags,
    ]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, env=ENV, capture_output=True, timeout=1200)
    events = read_journal(journal)
    start = next(e for e in events if e["event"] == "start")
    steps = [e for e in events if e["event"] == "step"][WARMUP:]
    return start, statistics.median(e["step_s"] for e in steps), _phases(start, steps)


def _phases(start: dict, steps: list[dict]) -> list[dict]:
    """Per rank: the median of each of its timers over ``steps`` beside what the cost model
    priced that phase at (the ``start`` event's ``ranks``) and the placement whose profile priced
    it, so a miss can be told apart phase by phase."""
    ranks = start["ranks"]
    medians = summary([r["rank"] for r in ranks], [e["timers_s"] for e in steps])
    return [
        {"rank": rank["rank"], "stage": rank["stage"], "placement": rank.get("placement"),
         "measured": {f: got[f] for f in FIELDS}, "predicted": rank["predicted"]}
        for rank, got in zip(ranks, medians, strict=True)
    ]  # fmt: skip


def _alternatives(model: str, extra: list[str], batch: int) -> list[tuple[str, dict]]:
    """The two-process plans, priced on the devices the runtime sees with two processes."""
    shape = tuple(int(x) for x in extra[1].split(",")) if extra else None
    if shape is None:
        from benchmarks.train_models import WIDTH

        shape = (WIDTH,)
    # named as the runtime names this node, so a plan here and the same plan chosen by
    # ``trainplay train`` have one plan id
    name = node_name(None)
    node = this_node(local_cluster(2, show_progress=False), name=name, nproc=2)
    cluster, _ = present_cluster([(name, 0, node), (name, 1, node)])
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


def _runs(workdir: Path) -> list[dict]:
    """One row per plan: trainplay's choice with 1 and 2 processes, then the plans it ranked below
    with 2, each with its ``--repeats`` runs."""
    rows = []
    for name, (model, _data, extra, batch) in MODELS.items():
        for nproc in (1, 2):
            rows.append(
                {"model": name, "processes": nproc, "plan": "trainplay's choice", "chosen": True,
                 "flags": ["--nproc-per-node", str(nproc)], "runs": []}
            )  # fmt: skip
        for label, plan in _alternatives(model, extra, batch):
            path = workdir / f"plan-{time.monotonic_ns()}.json"
            path.write_text(json.dumps(plan))
            rows.append(
                {"model": name, "processes": 2, "plan": label, "chosen": False,
                 "flags": ["--nproc-per-node", "2", "--plan", str(path)], "runs": []}
            )  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of every plan (3)")
    parser.add_argument(
        "--tag", default="", help="write train_plan_choice_TAG.{md,json} (another host, say)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        profiles = _profiles()
        rows = _runs(workdir)
        for round_ in range(args.repeats):
            for r in rows:
                model, data, extra, batch = MODELS[r["model"]]
                drift, before = _drift(r["processes"]), placement_now()
                start, measured, phases = _train(workdir, model, data, extra, batch, *r["flags"])
                r["runs"].append(
                    {
                        "measured_s": measured,
                        "predicted_s": start["predicted_step_s"],
                        "drift": drift,
                        "placement": one_of((before, placement_now())),
                        "plan_id": start["plan_id"],
                        "phases": phases,
                    }
                )
                if round_ == 0:
                    r.update(
                        plan_id=start["plan_id"], stages=start["stages"],
                        replicas=start["replicas"], microbatches=start["microbatches"],
                    )  # fmt: skip
                print(r["model"], r["processes"], r["plan"], round_, r["runs"][-1], flush=True)
    for r in rows:
        del r["flags"]
        times = [run["measured_s"] for run in r["runs"]]
        r["measured_s"] = statistics.median(times)
        # priced as trainplay train priced each run: its placement's profile, its data set's
        # fetch as it measured it (a --plan file is priced again on the devices present)
        r["predicted_s"] = statistics.median(run["predicted_s"] for run in r["runs"])
        r["error"] = (r["predicted_s"] - r["measured_s"]) / r["measured_s"]
        r["same_plan"] = all(run["plan_id"] == r["plan_id"] for run in r["runs"])
    inversions = []
    for model in MODELS:
        two = [r for r in rows if r["model"] == model and r["processes"] == 2]
        chosen = next(r for r in two if r["chosen"])
        chosen_ids = {run["plan_id"] for run in chosen["runs"]}
        for r in two:
            # a plan trainplay chose in any of its runs is not one it ranked below its choice
            r["is_choice"] = not r["chosen"] and r["plan_id"] in chosen_ids
            ranked_below = r["predicted_s"] > chosen["predicted_s"] and not (
                r["chosen"] or r["is_choice"]
            )
            if ranked_below and r["measured_s"] < chosen["measured_s"]:
                inversions.append((model, r["plan"], r["measured_s"], chosen["measured_s"]))
    _write(rows, inversions, args.repeats, args.tag, profiles)


def _ratios(runs: list[dict], key: str) -> str:
    values = [run["drift"][key] for run in runs]
    return f"x{min(values):.2f}-{max(values):.2f}"


PHASES = ("fwd_s", "bwd_s", "optimizer_s", "data_s", "allreduce_s")
"""The timers the ``start`` event prices by name; ``wait_s`` is priced by none (the schedule's
own work and waiting: the step's rest)."""


def _phase_table(rows: list[dict]) -> list[str]:
    """The chosen plans' runs phase by phase: each rank's median timer against its price."""
    lines = [
        "",
        "## The chosen plans' runs, phase by phase",
        "",
        "Each run's rank: the median of its timers after the warm-up (measured) against the "
        "`start` event's price of that phase (predicted), ms; the placement whose profile priced "
        "the run (probed as it started). `wait` is not priced by a phase of its own: the "
        "schedule's work and waiting, and `rest` is the step's predicted time less the priced "
        "phases.",
        "",
        "| model | processes | run | rank | priced on | fwd | bwd | optimizer | data | all-reduce "
        "| wait (measured) | step | rest (predicted) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for i, run in enumerate(r["runs"]):
            for ph in run.get("phases", []):
                got, priced = ph["measured"], ph["predicted"] or {}
                cells = [
                    f"{1e3 * got[k]:.2f} vs {1e3 * priced[k]:.2f}" if k in priced else
                    f"{1e3 * got[k]:.2f}"
                    for k in PHASES
                ]  # fmt: skip
                rest = run["predicted_s"] - sum(priced.get(k, 0.0) for k in PHASES)
                lines.append(
                    f"| {r['model']} | {r['processes']} | {i} | {ph['rank']} | "
                    f"{ph['placement'] or '-'} | {' | '.join(cells)} | {1e3 * got['wait_s']:.2f} | "
                    f"{1e3 * run['measured_s']:.2f} vs {1e3 * run['predicted_s']:.2f} | "
                    f"{1e3 * rest:.2f} |"
                )
    return lines


def _write(
    rows: list[dict], inversions: list, repeats: int, tag: str, profiles: dict[int, str]
) -> None:
    chosen_rows = [r for r in rows if r["chosen"]]
    lines = [
        "# trainplay train's plan choice: predicted against measured step time",
        "",
        f"`python benchmarks/train_plan_choice.py --repeats {repeats}"
        f"{f' --tag {tag}' if tag else ''}` on this machine, "
        f"{torch.backends.cpu.get_cpu_capability()} kernels "
        f"({STEPS} steps a run, median after {WARMUP} warm-up steps; every plan run {repeats} "
        "times in rounds, measured: the median of its runs' medians, their range beside it; "
        "`--cluster local`: this machine's profile for that many processes, priced as measured). "
        "Machine against profile: the drift reference timed before each run over the one "
        "timed when the profile was measured (> 1: faster now), range over the plan's runs; "
        "beside each run, the CPUs' placement probed before and after it. A plan's "
        "prediction: the median of its runs' `predicted_step_s` (each run prices its plan with its "
        "placement's profile and the data fetch it measured).",
        "",
        "Profiles priced with: "
        + "; ".join(f"{n} process{'es' if n > 1 else ''}: {said}" for n, said in profiles.items())
        + ".",
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
        "| model | processes | plan | stages x replicas, M | predicted ms | measured ms "
        "| runs, ms (placement) | error | machine against profile, compute | memory |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = " (chosen)" if r["chosen"] else ""
        mark += " (the plan trainplay chose)" if r.get("is_choice") else ""
        mark += "" if r["same_plan"] else " (the plan changed between runs)"
        times = ", ".join(
            f"{1e3 * run['measured_s']:.2f} ({run['placement']})" for run in r["runs"]
        )
        lines.append(
            f"| {r['model']} | {r['processes']} | {r['plan']}{mark} | {r['stages']} x "
            f"{r['replicas']}, {r['microbatches']} | {1e3 * r['predicted_s']:.2f} | "
            f"{1e3 * r['measured_s']:.2f} | {times} | {100 * r['error']:+.1f}% | "
            f"{_ratios(r['runs'], 'compute')} | {_ratios(r['runs'], 'memory')} |"
        )
    lines += _phase_table(chosen_rows)
    RESULTS.mkdir(exist_ok=True)
    name = f"train_plan_choice_{tag}" if tag else "train_plan_choice"
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{name}.json").write_text(
        json.dumps(
            {"repeats": repeats, "profiles": profiles, "rows": rows, "inversions": inversions},
            indent=2,
        )
        + "\n"
    )
    print("\n".join(lines[:8]))


if __name__ == "__main__":
    main()
