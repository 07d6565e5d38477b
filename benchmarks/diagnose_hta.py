"""``trainplay diagnose`` on a node that is really throttled, beside Holistic Trace Analysis on the
same ``--profile-steps`` traces (issue 14, acceptance 3).

The two one-process nodes of :mod:`benchmarks.hetero_measured` (``fast`` pinned to core 0,
``slow`` to core 1, each pricing its device as this machine's cached two-worker measurement,
``local:2``), training the same CNN with two data-parallel replicas of even shares
(``trainplay train --plan``, ``--no-calibration`` so that the plan and its per-rank predictions
stay those of equal devices), ``--steps 40 --profile-steps 20:30``:

- ``balanced``: no quota;
- ``slow node throttled``: the ``slow`` node inside a cgroup v1 CPU quota of 40% of a core from
  its start (:func:`benchmarks.hetero_measured.cgroup`).

On each: ``trainplay diagnose JOURNAL``, ``trainplay diagnose TRACES``, and HTA's
``TraceAnalysis`` on the same trace folder (its profiler steps, temporal breakdown and potential
stragglers), each shown as it answers, errors included. The verdict line of each of ours is
checked against what the case should find (the throttled node's rank and ``compute``; on the
balanced run, nobody). Needs root for the cgroup and the ``hta`` extra (``pip install -e
.[hta]``).

Run alone on an idle machine: ``python benchmarks/diagnose_hta.py``. Writes
``benchmarks/results/diagnose_hta.{json,md}``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.hetero_measured import (  # noqa: E402
    QUOTA_US,
    WORKLOADS,
    cgroup,
    cluster_file,
    job,
    set_quota,
    train_command,
)
from tests.integration.elastic import free_port  # noqa: E402

from trainplay.runtime.journal import read_journal  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
STEPS, PROFILE = 50, "20:45"
WORKLOAD = WORKLOADS["cnn"]


def even_plan(cluster: Path, path: Path) -> dict[str, Any]:
    """Two data-parallel replicas with even shares on the ``fast`` and ``slow`` nodes, priced
    as equal devices (what plain DDP would run)."""
    from trainplay.hardware.local import resolve_cluster
    from trainplay.plan.api import block_costs, make_plan
    from trainplay.plan.baselines import fixed_layout
    from trainplay.plan.costs import CostModel, devices_of
    from trainplay.runtime.nodes import present_cluster, this_node

    spec = resolve_cluster(str(cluster), show_progress=False)
    entries = [(n, 0, this_node(spec, name=n, nproc=1)) for n in ("fast", "slow")]
    present, _ = present_cluster(entries)
    costs = block_costs(WORKLOAD["model"], input_shape=(3, 32, 32))
    cm = CostModel(costs, present, "sgd")
    d0, d1 = devices_of(present, "fp32")
    half = WORKLOAD["batch"] // 2
    got = fixed_layout(cm, ((d0,), (d1,)), (0, costs.n), (half, half), "gpipe", [1])
    assert not isinstance(got, str), got
    plan = make_plan(cm, got[1], costs.names)[0].to_dict()
    path.write_text(json.dumps(plan))
    return plan


def train(workdir: Path, name: str, cluster: Path, plan: Path, group: Path) -> Path:
    """One ``trainplay train`` job on the two nodes; returns its journal."""
    run = workdir / name
    run.mkdir()
    port = free_port()
    command = train_command(
        WORKLOAD, run, cluster, STEPS, port,
        "--plan", str(plan), "--no-calibration", "--profile-steps", PROFILE,
    )  # fmt: skip
    with job(run, group) as j:
        j.start("fast", command)
        j.wait_port(port)
        j.start("slow", command)
        j.wait(600)
    return run / "journal.jsonl"


def ours(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "trainplay", "diagnose", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "150"},
    )  # fmt: skip
    return done.stdout.rstrip() or done.stderr.rstrip()


def verdict(text: str) -> str:
    """The line of a diagnosis that names the straggler, or says there is none."""
    return next(
        (line.strip() for line in text.splitlines() if line.startswith(("straggler", "no strag"))),
        "(no verdict line)",
    )


def slow_ranks(journal: Path) -> list[int]:
    """The ranks the journal places on the ``slow`` node."""
    start = next(e for e in read_journal(journal) if e["event"] == "start")
    return [r["rank"] for r in start["ranks"] if str(r.get("device", "")).startswith("slow/")]


def hta(folder: Path) -> dict[str, str]:
    from hta.trace_analysis import TraceAnalysis

    out: dict[str, str] = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        analysis = TraceAnalysis(trace_dir=str(folder))
    questions = {
        "get_profiler_steps()": analysis.get_profiler_steps,
        "get_temporal_breakdown(visualize=False)": lambda: analysis.get_temporal_breakdown(
            visualize=False
        ),
        "get_potential_stragglers()": analysis.get_potential_stragglers,
    }
    for name, ask in questions.items():
        buffer = io.StringIO()
        try:
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                answer = ask()
            out[name] = str(answer)
        except Exception as exc:  # HTA's own failure is the finding
            out[name] = f"{type(exc).__name__}: {exc}"
    return out


def expected(name: str, slow: list[int]) -> str:
    if name == "balanced":
        return "no straggler"
    return f"straggler: rank(s) {', '.join(map(str, slow))}, compute"


def met(name: str, line: str, slow: list[int]) -> bool:
    """Whether a verdict line is what the case should find."""
    if name == "balanced":
        return line.startswith("no straggler")
    found = re.match(r"straggler: ranks? ([\d, ]+?), (\w+)-bound", line)
    if found is None:
        return False
    named = {int(r) for r in found.group(1).split(",")}
    return named == set(slow) and found.group(2) == "compute"


def main() -> None:
    result: dict = {
        "setup": {"steps": STEPS, "profile_steps": PROFILE, "workload": WORKLOAD},
        "cases": {},
    }
    lines = [
        "# `trainplay diagnose` on a throttled node, beside Holistic Trace Analysis",
        "",
        "`python benchmarks/diagnose_hta.py`: two one-process nodes here, `fast` pinned to core "
        "0 and `slow` to core 1 (both priced as this machine's two-worker profile, `local:2`), "
        f"`trainplay train` of the CNN of `benchmarks/hetero_measured.py` (global batch "
        f"{WORKLOAD['batch']}) with two data-parallel replicas of even shares (`--plan`, "
        f"`--no-calibration`), `--steps {STEPS} --profile-steps {PROFILE}`: balanced, and with "
        f"the `slow` node inside a cgroup v1 CPU quota of {QUOTA_US // 1000} ms per 100 ms from "
        "its start. Then `trainplay diagnose` on the journal and on the traces, and HTA's "
        "`TraceAnalysis` on the same traces.",
        "",
        "| case | expected | `diagnose JOURNAL` | met | `diagnose TRACES` | met |",
        "|---|---|---|---|---|---|",
    ]
    body: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, cgroup() as group:
        workdir = Path(tmp)
        cluster = cluster_file(workdir)
        plan = workdir / "even.json"
        even_plan(cluster, plan)
        for name, quota in (("balanced", -1), ("slow node throttled", QUOTA_US)):
            set_quota(group, quota)
            journal = train(workdir, name.replace(" ", "-"), cluster, plan, group)
            traces = journal.with_name(journal.name + ".traces")
            slow = slow_ranks(journal)
            case = {"journal": ours(journal), "traces": ours(traces), "hta": hta(traces)}
            case["slow_node_ranks"] = slow
            case["verdicts"] = {k: verdict(case[k]) for k in ("journal", "traces")}
            case["met"] = {k: met(name, v, slow) for k, v in case["verdicts"].items()}
            result["cases"][name] = case
            v, m = case["verdicts"], case["met"]
            lines.append(
                f"| {name} | {expected(name, slow)} | {v['journal']} | "
                f"{'yes' if m['journal'] else 'NO'} | {v['traces']} | "
                f"{'yes' if m['traces'] else 'NO'} |"
            )
            body += ["", f"## {name}", "", "`trainplay diagnose JOURNAL`:", "", "```"]
            body += [case["journal"], "```", "", "`trainplay diagnose TRACES`:", "", "```"]
            body += [case["traces"], "```", "", "HTA on the same traces:", ""]
            for question, answer in case["hta"].items():
                body += [f"- `{question}`:", "", "  ```", *("  " + a for a in answer.splitlines())]
                body += ["  ```"]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "diagnose_hta.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "diagnose_hta.md").write_text("\n".join(lines + body) + "\n")
    print("\n".join(lines + body))


if __name__ == "__main__":
    main()
