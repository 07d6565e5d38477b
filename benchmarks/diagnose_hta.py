"""``trainplay diagnose`` beside Holistic Trace Analysis on the traces of ``--profile-steps``.

Two ``trainplay train`` runs of 2 gloo workers on this machine (the tests' ``spun_mlp``: rank
``$TRAINPLAY_TEST_SLOW_RANK`` does extra GEMMs in every forward): a balanced one and one with
rank 1 slowed, ``--steps 40 --profile-steps 20:30``. On each: ``trainplay diagnose JOURNAL``,
``trainplay diagnose TRACES``, and HTA's ``TraceAnalysis`` on the same trace folder (its
temporal breakdown, its potential stragglers, its profiler steps), each shown as it answers,
errors included. Needs the ``hta`` extra (``pip install -e .[hta]``).

Writes benchmarks/results/diagnose_hta.{json,md}.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CLUSTER = ROOT / "tests" / "data" / "clusters" / "slow-quad.yaml"
STEPS, PROFILE = 40, "20:30"


def train(workdir: Path, name: str, slow_rank: int | None) -> Path:
    journal = workdir / f"{name}.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRAINPLAY_TEST_SLOW_RANK", None)
    if slow_rank is not None:
        env["TRAINPLAY_TEST_SLOW_RANK"] = str(slow_rank)
    command = [
        sys.executable, "-m", "trainplay", "train", "tests.data.tiny_models:spun_mlp",
        "--input-shape", "12", "--data", "tests.data.datasets:quick", "--global-batch", "32",
        "--steps", str(STEPS), "--nproc-per-node", "2", "--cluster", str(CLUSTER),
        "--journal", str(journal), "--profile-steps", PROFILE, "--no-progress",
    ]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, env=env, capture_output=True, timeout=600)
    return journal


def ours(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "trainplay", "diagnose", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "150"},
    )  # fmt: skip
    return done.stdout.rstrip()


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


def main() -> None:
    result: dict = {"setup": {"steps": STEPS, "profile_steps": PROFILE, "workers": 2}}
    lines = [
        "# `trainplay diagnose` beside Holistic Trace Analysis",
        "",
        "`python benchmarks/diagnose_hta.py`: `trainplay train` of the tests' `spun_mlp` on 2 gloo "
        f"workers here, `--steps {STEPS} --profile-steps {PROFILE}`, balanced and with rank 1 "
        "slowed by extra GEMMs in its forward; then `trainplay diagnose` on the journal and on "
        "the traces, and HTA 0.5's `TraceAnalysis` on the same traces.",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, slow in (("balanced", None), ("rank 1 slowed", 1)):
            journal = train(Path(tmp), name.replace(" ", "-"), slow)
            traces = journal.with_name(journal.name + ".traces")
            case = {"journal": ours(journal), "traces": ours(traces), "hta": hta(traces)}
            result[name] = case
            lines += ["", f"## {name}", "", "`trainplay diagnose JOURNAL`:", "", "```"]
            lines += [case["journal"], "```", "", "`trainplay diagnose TRACES`:", "", "```"]
            lines += [case["traces"], "```", "", "HTA on the same traces:", ""]
            for question, answer in case["hta"].items():
                lines += [f"- `{question}`:", "", "  ```", *("  " + a for a in answer.splitlines())]
                lines += ["  ```"]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "diagnose_hta.json").write_text(json.dumps(result, indent=2))
    (RESULTS / "diagnose_hta.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
