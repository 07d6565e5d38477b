"""A measured ``validate_cpu`` set priced again, without measuring anything: each case's
prediction with its profile as measured (drift factors 1) beside the prediction at the drift
factors the run recorded for it (which reproduces the run's own prediction where the code and
profiles are unchanged).

``python benchmarks/validate_cpu_reprice.py --set held-out-6`` (``--tag T`` for a run tagged so):
reads ``benchmarks/results/validate_cpu_<set>[_T].json`` and this machine's cached profiles,
writes ``benchmarks/results/validate_cpu_<set>[_T]_repriced.{md,json}``. The profiles must be the
ones the run used (``measured_at`` is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import validate_cpu as run  # noqa: E402

from trainplay.hardware import drift  # noqa: E402
from trainplay.hardware.local import DRIFT_ENV, load_cached, local_cluster  # noqa: E402
from trainplay.roofline.analysis import analyze  # noqa: E402
from trainplay.roofline.layout import Parallel  # noqa: E402

ONE = {"compute": 1.0, "memory": 1.0}


def _predicted(row: dict, factors: dict[str, float]) -> float:
    """The case's prediction with the drift factors ``factors`` (priced at them)."""
    drift.drift_of = lambda then, now: dict(factors)  # this process prices nothing else
    model, _, seq_text = row["model"].partition("@")
    seq = int(seq_text) if seq_text else None
    if row["layout"] == "dp":
        prof = run._profile(model, row["batch"], seq)
        cluster = local_cluster(row["procs"], show_progress=False)
        return analyze(prof, cluster, Parallel(dp=row["procs"])).iteration.predicted_s
    return run.two_stage_plan(model, seq, row["batch"], tuple(row["bounds"])).predicted_iteration_s


def _mape(rows: list[dict], key: str) -> float:
    return 100 * statistics.fmean(abs(r[key] - r["measured_s"]) / r["measured_s"] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="held-out-6")
    parser.add_argument("--tag", default="", help="the run's --tag (validate_cpu.py)")
    args = parser.parse_args()
    tag = f"_{args.tag}" if args.tag else ""
    name = f"validate_cpu_{args.set.replace('-', '_')}{tag}"
    rows = json.loads((run.RESULTS / f"{name}.json").read_text())
    os.environ[DRIFT_ENV] = "price"
    out = []
    for r in rows:
        recorded = _predicted(r, r.get("drift") or ONE)
        measured = _predicted(r, ONE)
        out.append({**r, "recorded_s": recorded, "as_measured_s": measured})
        print(
            r["model"], r["batch"], r["procs"], r["layout"], f"{1e3 * measured:.1f} ms", flush=True
        )
    profiles = {n: load_cached(n).measured_at for n in (1, 2)}
    beyond = sum(abs(r["as_measured_s"] - r["measured_s"]) > 0.25 * r["measured_s"] for r in out)
    lines = [
        f"# The {args.set} set priced again: as measured, and at the drift factors recorded",
        "",
        f"`python benchmarks/validate_cpu_reprice.py --set {args.set}"
        + (f" --tag {args.tag}" if args.tag else "")
        + f"` (profiles measured "
        f"{profiles[1]} and {profiles[2]}). Nothing is timed again: the measured column is the "
        "run's.",
        "",
        f"MAPE as run **{_mape(out, 'predicted_s'):.1f}%**; priced again at the recorded factors "
        f"{_mape(out, 'recorded_s'):.1f}%; priced as measured (no drift correction) "
        f"**{_mape(out, 'as_measured_s'):.1f}%**, {beyond} beyond ±25%.",
        "",
        "| model | batch | processes | layout | measured ms | as run ms | as measured ms | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in out:
        error = (r["as_measured_s"] - r["measured_s"]) / r["measured_s"]
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['procs']} | {r['layout']} | "
            f"{1e3 * r['measured_s']:.1f} | {1e3 * r['predicted_s']:.1f} | "
            f"{1e3 * r['as_measured_s']:.1f} | {100 * error:+.1f}% |"
        )
    (run.RESULTS / f"{name}_repriced.md").write_text("\n".join(lines) + "\n")
    (run.RESULTS / f"{name}_repriced.json").write_text(json.dumps(out, indent=2) + "\n")
    print("\n".join(lines[4:5]))


if __name__ == "__main__":
    main()
