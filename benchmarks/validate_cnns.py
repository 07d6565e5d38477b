"""MD-Roofline against real training on this CPU: the fourteen classic CNNs, two batch sizes,
one and two processes. Reports iteration-time errors of the plain roofline (this machine's
measured APF/APM/APB) and of operator-level achievable peaks, with their MAPE.

Run alone on an idle machine (timings): ``python benchmarks/validate_cnns.py`` (about 40 min).
``--models a,b`` and ``--batches 4,8`` narrow it. Writes ``benchmarks/results/validate_cnns.md``
and ``.json``. Every prediction is made without any measured iteration time of the model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track

from trainplay.roofline.validate import validate
from trainplay.workload.zoo import CLASSIC_CNNS

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(CLASSIC_CNNS))
    parser.add_argument("--batches", default="4,8")
    parser.add_argument("--nprocs", default="1,2")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--name", default="validate_cnns", help="results file stem")
    args = parser.parse_args()
    plan = [
        (m, int(b), int(n))
        for n in args.nprocs.split(",")
        for m in args.models.split(",")
        for b in args.batches.split(",")
    ]
    rows, started = [], time.perf_counter()
    for model, batch, nproc in track(plan, description="validating", transient=True):
        v = validate(model, batch, nproc=nproc, iters=args.iters, show_progress=False)
        rows.append(v.to_dict())
        Console().print(
            f"{model} b{batch} x{nproc}: measured {v.measured_s:.3f} s, operator-level "
            f"{v.operator_s:.3f} ({100 * v.operator_error:+.1f}%), roofline {v.roofline_s:.3f} "
            f"({100 * v.roofline_error:+.1f}%)",
            highlight=False,
        )

    def mape(key: str, subset=None) -> str:
        chosen = [r for r in rows if subset is None or subset(r)]
        return f"{100 * statistics.fmean(abs(r[key]) for r in chosen):.1f}%" if chosen else "n/a"

    lines = [
        "# MD-Roofline against real training on this CPU",
        "",
        f"Command: `python benchmarks/validate_cnns.py --models {args.models} --batches {args.batches} "
        f"--nprocs {args.nprocs}` ({time.perf_counter() - started:.0f} s). Batch is per process; with 2 processes "
        "DistributedDataParallel over gloo, each process with half the cores. Measured: median of "
        f"{args.iters} timed iterations (SGD step and all-reduce included), each as long as its slowest rank.",
        "",
        f"Iteration-time MAPE, operator-level achievable peaks: **{mape('operator_error')}** "
        f"(1 process {mape('operator_error', lambda r: r['nproc'] == 1)}, "
        f"2 processes {mape('operator_error', lambda r: r['nproc'] == 2)}); "
        f"plain roofline with measured APF/APM/APB: {mape('roofline_error')}.",
        "",
        "| model | batch | procs | measured s | operator-level s | error | roofline s | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch_size']} | {r['nproc']} | {r['measured_s']:.3f} | "
            f"{r['operator_s']:.3f} | {100 * r['operator_error']:+.1f}% | {r['roofline_s']:.3f} | "
            f"{100 * r['roofline_error']:+.1f}% |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{args.name}.json").write_text(json.dumps(rows, indent=2) + "\n")
    Console().print("\n".join(lines[4:5]), highlight=False)


if __name__ == "__main__":
    main()
